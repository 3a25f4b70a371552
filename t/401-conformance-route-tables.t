# The conformance replay of t/400 with every Gateway's HTTPRoutes and
# GRPCRoutes served by the module's route table (gateway2nginx --routes
# table): the route tables filled through the upstream API once nginx
# starts, and after each reload of a test's later generations by
# gateway2nginx itself. Its results go to no report: the report is what
# t/400 serves (rendered locations). Needs GATEWAY_API_DIR, as t/400.
use lib 't/lib';
use Test::Conformance;
use Test::More;

my @tests = map { @{ do "./t/conformance/$_" or die "t/conformance/$_: $@$!" } } qw(http.pl grpc.pl);

replay(\@tests, routes => 'table');
