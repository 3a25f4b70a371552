# The conformance replay of t/401 (HTTPRoutes and GRPCRoutes through the
# module's route table) served by gateway2nginx run: each test's Gateways
# by a run of their own watching the manifests (--start-nginx), which
# fills the route tables once nginx starts and applies each later
# generation itself, pushed or reloaded as it decides: a reload for a
# listener change alone. Its results make the report of mode run (t/400's,
# of mode render). Needs GATEWAY_API_DIR, as t/400.
BEGIN { $ENV{GTLS_CONFORMANCE_MODE} = 'run' }
use lib 't/lib';
use Test::Conformance;
use Test::GatewayTLS;
use Test::More;

my @tests = map { @{ do "./t/conformance/$_" or die "t/conformance/$_: $@$!" } } qw(http.pl grpc.pl);

replay(\@tests, routes => 'table');

my (%reloads, $pushed);
for my $log (glob(servroot() . '/out-*.run.log')) {
    my $text = slurp($log);
    $reloads{$1}++ while $text =~ /nginx reloaded: workers .*\((\w+)\)$/mg;
    $pushed++ while $text =~ /pushed to nginx, no reload$/mg;
}
SKIP: {
    skip 'no replay ran (GATEWAY_API_DIR)', 1 unless glob(servroot() . '/out-*.run.log');
    diag(sprintf('later generations: %d pushed with no reload; reloads: %s', $pushed // 0,
                 join(', ', map { "$reloads{$_} $_" } sort keys %reloads) || 'none'));
    is(join(' ', grep { $_ ne 'listeners' } sort keys %reloads), '',
       'run reloads nginx for a listener change alone');
}
