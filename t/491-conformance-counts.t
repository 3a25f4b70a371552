# The ConformanceReport counts as the suite counts: each test's features,
# manifests and provisional flag read from the suite's Go sources
# (Test::ConformanceSuite), whatever a replay was written with, and the
# suite's rule for the profiles a test falls in (profiles.go's
# getConformanceProfilesForTest, reports.go's isTestExtended). Needs the
# suite's Go sources in GATEWAY_API_DIR (a checkout) or, where it holds the
# manifests alone, in the release's copy beside them (GATEWAY_API_DIR/vX.Y.Z,
# as make conformance GATEWAY_API_VERSION=vX.Y.Z reads it; the newest);
# skipped, saying so, without.
use strict;
use warnings;
use lib 't/lib';
use File::Temp qw(tempdir);
use JSON::PP;
use Test::ConformanceReport qw(write_report written_profiles);
use Test::ConformanceSuite qw(suite_tests suite_profiles);
use Test::More;

my $api = $ENV{GATEWAY_API_DIR} // '';
my ($suite_dir) = $api eq '' ? () : grep { glob("$_/tests/*.go") }
                  map { "$_/conformance" } $api, reverse sort { version_of($a) <=> version_of($b) } glob("$api/v*");
sub version_of { my ($x, $y, $z) = $_[0] =~ /v(\d+)\.(\d+)\.(\d+)$/ or return 0; return $x * 1e6 + $y * 1e3 + $z }
plan skip_all => "GATEWAY_API_DIR ('$api') holds no Go sources of the suite's tests, nor a release's copy that does"
    unless $suite_dir;
note "the suite at $suite_dir";

my $suite = suite_tests($suite_dir);
my $declared = 0;
for my $go (glob("$suite_dir/tests/*.go")) {
    my $text = do { local (@ARGV, $/) = ($go); <> };
    $declared++ while $text =~ /^\s*ShortName:\s*"/mg;
}
is(scalar(keys %$suite), $declared, "every test the Go sources declare is read ($declared)");
ok(!(grep { !@{$_->{features}} } values %$suite), 'each with its features');

# declarations a hand-typed list got wrong before
sub features_of { my $t = $suite->{$_[0]} or return '(not in the suite)'; join ' ', sort @{$t->{features}} }
is(features_of('ListenerSetDefaultNotAllowed'), 'Gateway ListenerSet', 'a ListenerSet test that needs no route kind');
like(features_of('ListenerSetAllowedRoutesSupportedKinds'), qr/\bTLSRoute\b/, 'one that needs TLSRoute');
is(features_of('UDPRouteNotAllowedByListeners'), 'Gateway UDPRoute',
   'the features of UDPRouteNotAllowedByListeners, not those its test body asks of the GatewayClass');
ok($suite->{HTTPRoute303Redirect}{provisional}, 'a provisional test is marked so');
ok(!$suite->{HTTPRouteSimpleSameNamespace}{provisional}, 'one that is not is not');

# the profiles as profiles.go defines them (their extended sets are
# pkg/features's, resolved where a checkout has it)
my $profiles = suite_profiles($suite_dir);
is(join(' ', sort keys %$profiles), 'GATEWAY-GRPC GATEWAY-HTTP GATEWAY-TCP GATEWAY-TLS GATEWAY-UDP', 'the five Gateway profiles');
is(join(' ', sort @{$profiles->{'GATEWAY-HTTP'}{core}}), 'Gateway HTTPRoute ReferenceGrant', "GATEWAY-HTTP's core");
is(join(' ', sort @{$profiles->{'GATEWAY-UDP'}{core}}), 'Gateway ReferenceGrant UDPRoute', "GATEWAY-UDP's core");
like(join(' ', @{$profiles->{'GATEWAY-HTTP'}{sets}}), qr/\bGatewayExtendedFeatures\b.*\bHTTPRouteExtendedFeatures\b/,
     "GATEWAY-HTTP's extended sets named");

# the extended features written down for the suite's release (read where
# a copy of its conformance/ has no pkg/features beside it) are those
# pkg/features declares, where a checkout has it
SKIP: {
    skip "no pkg/features beside $suite_dir: the extended features written down for its release are not checked", 5
        unless grep { $_->{extended} } values %$profiles;
    my $written = written_profiles($suite_dir);
    for my $p (sort keys %$profiles) {
        is(join(' ', sort @{$written->{$p}{extended}}), join(' ', sort @{$profiles->{$p}{extended}}),
           "$p: the extended features written down are pkg/features's");
    }
}

# the report of results written with wrong features counts by the suite's
my $dir = tempdir(CLEANUP => 1);
my @names = ('ListenerSetDefaultNotAllowed', 'UDPRouteNotAllowedByListeners', 'HTTPRouteSimpleSameNamespace');
my %states = (ListenerSetDefaultNotAllowed => 'passed', UDPRouteNotAllowedByListeners => 'passed',
              HTTPRouteSimpleSameNamespace => 'failed');
open my $fh, '>', "$dir/results.json" or die $!;
print $fh encode_json({supportedFeatures => [qw(Gateway HTTPRoute ReferenceGrant GRPCRoute TLSRoute TCPRoute UDPRoute ListenerSet)],
                       results => [map { {name => $_, features => [qw(Gateway HTTPRoute TLSRoute)], manifests => ['x'],
                                          state => $states{$_}, reason => ''} } @names]});
close $fh;
my $report = write_report("$dir/report.yaml", $suite_dir, "$dir/results.json");
my %profile = $report =~ /^- name: (\S+)\n(.*?)(?=^- name: |^succeeded)/msg;
# (the rest of the suite's tests, not recorded, are skipped where their features put them)
for my $p (sort keys %profile) {
    my ($core, $extended) = $profile{$p} =~ /core:\n(.*?)  extended:\n(.*)/s;
    my %core = $core =~ /^      (\w+): (\d+)$/mg;
    my %ext = $extended =~ /^      (\w+): (\d+)$/mg;
    # ListenerSetDefaultNotAllowed (Gateway ListenerSet): extended in all five
    is($ext{Passed}, 1, "$p: ListenerSetDefaultNotAllowed passed, extended");
    # UDPRouteNotAllowedByListeners (Gateway UDPRoute): UDP's core
    is($core{Passed}, $p eq 'GATEWAY-UDP' ? 1 : 0, "$p: UDPRouteNotAllowedByListeners in UDP's core alone");
    # HTTPRouteSimpleSameNamespace (Gateway HTTPRoute): HTTP's core
    is($core{Failed}, $p eq 'GATEWAY-HTTP' ? 1 : 0, "$p: HTTPRouteSimpleSameNamespace in HTTP's core alone");
}
is(scalar(keys %profile), 5, 'five profiles');

# a result of a test the suite does not hold is an error, not counted
open $fh, '>', "$dir/unknown.json" or die $!;
print $fh encode_json({supportedFeatures => ['Gateway'],
                       results => [{name => 'NoSuchTest', features => ['Gateway'], manifests => [], state => 'passed', reason => ''}]});
close $fh;
ok(!eval { write_report("$dir/r2.yaml", $suite_dir, "$dir/unknown.json"); 1 }, 'a result of a test the suite lacks');
like($@, qr/NoSuchTest: a result of a test the suite at .* does not hold/, 'is refused, named');

done_testing;
