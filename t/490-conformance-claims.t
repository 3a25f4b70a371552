# Every feature the GatewayClass claims (status.supportedFeatures, which
# decides the suite's tests) is earned by the replays of t/400 to t/470,
# in each mode (render, and run: t/402 and the t/4*-run.t files):
# each claimed feature has a passed test that needs it, and every test the
# suite would run for those claims passed. Reads the results those files
# recorded in this run (make test removes older ones first); skipped, saying
# which, unless all of them ran.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::ConformanceReport qw(unearned_claims results_by_mode);

my $suite = ($ENV{GATEWAY_API_DIR} // '') . '/conformance';

# every replay's results, in each mode, or the claims cannot be judged:
# what the GatewayClass claims in a mode is earned by that mode's replays
my %replays = (
    render => [qw(400-conformance 410-conformance-backendtls 420-conformance-tlsroute 430-conformance-client-certs
                  440-conformance-tcproute 450-conformance-udproute 460-conformance-listenerset)],
    run => [qw(402-conformance-run 411-conformance-backendtls-run 421-conformance-tlsroute-run
               431-conformance-client-certs-run 441-conformance-tcproute-run 451-conformance-udproute-run
               461-conformance-listenerset-run 470-conformance-infrastructure)],
);
my %files = map { my $mode = $_; ($mode => [map { "$FindBin::Bin/servroot-$_/conformance-results.json" } @{$replays{$mode}}]) }
            keys %replays;
# a mode is judged on all of its replays (mode run's are not run in other
# Debian releases' chroots: there, mode render alone)
my %missing = map { my $m = $_; ($m => [map { "t/$replays{$m}[$_].t" } grep { !-f $files{$m}[$_] } 0 .. $#{$files{$m}}]) }
              keys %replays;
plan skip_all => 'no mode\'s replays all ran (GATEWAY_API_DIR unset, or not among TESTS): '
                 . join('; ', map { "$_ lacks @{$missing{$_}}" } sort keys %missing)
    unless grep { !@{$missing{$_}} } keys %missing;
for my $mode (sort keys %files) {
    if (@{$missing{$mode}}) {
        note("mode $mode not judged: no results of @{$missing{$mode}} in this run");
        next;
    }
    my @unearned = unearned_claims($suite, @{$files{$mode}});
    is(scalar @unearned, 0, "mode $mode: every claim is earned by its replays (" . @{$files{$mode}} . ' result files)')
        or diag join "\n", @unearned;
    is(join(' ', keys %{ results_by_mode(@{$files{$mode}}) }), $mode, "mode $mode: its replays recorded it");
}
done_testing();
