# The Gateway API conformance suite replayed locally (t/lib/Test/Conformance.pm):
# every test written down in t/conformance/*.pl, with the suite's manifests,
# requests and assertions; ends with a ConformanceReport in the server root
# (make conformance copies it to build/conformance-report.yaml).
use lib 't/lib';
use Test::Conformance;
use Test::More;

my @tests = map { @{ do "./t/conformance/$_" or die "t/conformance/$_: $@$!" } } qw(http.pl grpc.pl);

replay(\@tests);
