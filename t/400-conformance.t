# The Gateway API conformance suite replayed locally (t/lib/Test/Conformance.pm):
# every test written down in t/conformance/*.pl, with the suite's manifests,
# requests and assertions. Its results, with those of t/410-t/460, make
# the ConformanceReport of mode render (make conformance writes it to
# build/conformance-report-render.yaml; t/402's make run's).
use lib 't/lib';
use Test::Conformance;
use Test::ConformanceReport;
use Test::More;

my @tests = map { @{ do "./t/conformance/$_" or die "t/conformance/$_: $@$!" } } qw(http.pl grpc.pl);

replay(\@tests);

# the suite's tests not replayed yet: skipped, in the profile their features give
for my $test (@{ do "./t/conformance/not-replayed.pl" or die "t/conformance/not-replayed.pl: $@$!" }) {
    record_result(@$test{qw(name features manifests)}, 'skipped', 'not replayed here yet');
}
