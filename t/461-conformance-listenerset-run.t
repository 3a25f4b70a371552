# t/460's ListenerSet replays with each test's Gateways served by
# gateway2nginx run (GTLS_CONFORMANCE_MODE=run, routes through the route
# table, as t/402): run -f watches the manifests, starts nginx, and
# applies each later generation itself. Its results make the report of
# mode run (t/460's, of mode render).
BEGIN { $ENV{GTLS_CONFORMANCE_MODE} = 'run' }
use lib 't/lib';
use Test::Conformance;
use Test::ConformanceReport;
use Test::More;

my $tests = do "./t/conformance/listenerset.pl" or die "t/conformance/listenerset.pl: $@$!";
replay($tests, routes => 'table');
