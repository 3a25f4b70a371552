# Every feature the GatewayClass claims (status.supportedFeatures, which
# decides the suite's tests) is earned by the replays of t/400 to t/430:
# each claimed feature has a passed test that needs it, and every test the
# suite would run for those claims passed. Reads the results those files
# recorded in this run (make test removes older ones first).
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::ConformanceReport qw(unearned_claims);

my $suite = ($ENV{GATEWAY_API_DIR} // '') . '/conformance';

my @files = glob("$FindBin::Bin/servroot-4[0-3]*/conformance-results.json");
plan skip_all => 'no conformance results: t/400 to t/430 did not run here (GATEWAY_API_DIR unset?)' unless @files;
my @unearned = unearned_claims($suite, @files);
is(scalar @unearned, 0, 'every claim is earned by the replays (' . scalar(@files) . ' result files)')
    or diag join "\n", @unearned;
done_testing();
