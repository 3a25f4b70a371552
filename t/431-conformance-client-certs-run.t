# t/430's client certificate replays with the Gateways served by gateway2nginx run
# (GTLS_CONFORMANCE_MODE=run): run -f watches the manifests, starts nginx,
# and applies the tests' later generations itself. Its results make the
# report of mode run (t/430's, of mode render).
BEGIN { $ENV{GTLS_CONFORMANCE_MODE} = 'run' }
do './t/430-conformance-client-certs.t';
die $@ if $@;
