# t/440's TCPRoute replays with the Gateways served by gateway2nginx run
# (GTLS_CONFORMANCE_MODE=run): run -f watches the manifests, starts nginx,
# and applies the tests' later generations itself. Its results make the
# report of mode run (t/440's, of mode render).
BEGIN { $ENV{GTLS_CONFORMANCE_MODE} = 'run' }
do './t/440-conformance-tcproute.t';
die $@ if $@;
