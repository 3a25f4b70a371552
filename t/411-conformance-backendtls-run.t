# t/410's BackendTLSPolicy replays with the Gateways served by gateway2nginx run
# (GTLS_CONFORMANCE_MODE=run): run -f watches the manifests, starts nginx,
# and applies the tests' later generations itself. Its results make the
# report of mode run (t/410's, of mode render).
BEGIN { $ENV{GTLS_CONFORMANCE_MODE} = 'run' }
do './t/410-conformance-backendtls.t';
die $@ if $@;
