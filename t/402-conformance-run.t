# The conformance replay of t/401 (HTTPRoutes and GRPCRoutes through the
# module's route table) served by gateway2nginx run: each test's Gateways
# by a run of their own watching the manifests (--start-nginx), which
# fills the route tables once nginx starts and applies each later
# generation itself, pushed or reloaded as it decides. Its results go to
# no report (t/400's). Needs GATEWAY_API_DIR, as t/400.
use lib 't/lib';
use Test::Conformance;
use Test::More;

my @tests = map { @{ do "./t/conformance/$_" or die "t/conformance/$_: $@$!" } } qw(http.pl grpc.pl);

replay(\@tests, routes => 'table', run => 1);
