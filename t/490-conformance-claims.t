# Every feature the GatewayClass claims (status.supportedFeatures, which
# decides the suite's tests) is earned by the replays of t/400 to t/470:
# each claimed feature has a passed test that needs it, and every test the
# suite would run for those claims passed. Reads the results those files
# recorded in this run (make test removes older ones first); skipped, saying
# which, unless all eight ran.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::ConformanceReport qw(unearned_claims);

my $suite = ($ENV{GATEWAY_API_DIR} // '') . '/conformance';

# every replay's results, or the claims cannot be judged
my @replays = qw(400-conformance 410-conformance-backendtls 420-conformance-tlsroute 430-conformance-client-certs
                 440-conformance-tcproute 450-conformance-udproute 460-conformance-listenerset
                 470-conformance-infrastructure);
my @files = map { "$FindBin::Bin/servroot-$_/conformance-results.json" } @replays;
my @missing = map { "t/$replays[$_].t" } grep { !-f $files[$_] } 0 .. $#files;
plan skip_all => "no results of @missing in this run (GATEWAY_API_DIR unset, or not among TESTS): "
                 . 'the claims are judged on all eight replays' if @missing;
my @unearned = unearned_claims($suite, @files);
is(scalar @unearned, 0, 'every claim is earned by the replays (' . scalar(@files) . ' result files)')
    or diag join "\n", @unearned;
done_testing();
