# t/420's TLSRoute replays with each Gateway served by gateway2nginx run
# (GTLS_CONFORMANCE_MODE=run): run -f watches the manifests, starts nginx,
# and applies the tests' later generations itself. Its results make the
# report of mode run (t/420's, of mode render).
BEGIN { $ENV{GTLS_CONFORMANCE_MODE} = 'run' }
do './t/420-conformance-tlsroute.t';
die $@ if $@;
