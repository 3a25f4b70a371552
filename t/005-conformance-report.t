# The ConformanceReport counts as the suite counts (its utils/suite at the
# release): a test needing a feature the GatewayClass does not claim is
# left out, not skipped; a test counts in every profile whose features
# cover all it needs (core, or extended when it needs one beyond the core)
# and in no other; the release and its provisional tests come from the
# suite's directory, and each test's features, manifests and provisional
# flag from its Go sources, not from the results. Synthetic results against
# a synthetic suite directory.
use strict;
use warnings;
use Test::More;
use File::Path qw(make_path remove_tree);
use FindBin;
use lib "$FindBin::Bin/lib";
use JSON::PP;
use Test::ConformanceReport qw(write_report unearned_claims declared);
use Test::GatewayTLS ();

my $dir = "$FindBin::Bin/servroot-005-conformance-report";
remove_tree($dir);

sub spit { my ($f, $t) = @_; open my $fh, '>', $f or die "$f: $!"; print $fh $t; close $fh }

# A Go test of the suite as its sources write one: NAME, its MANIFEST, its
# FEATURES, provisional or not
sub go_test {
    my ($name, $manifest, $features, $provisional) = @_;
    return "var $name = suite.ConformanceTest{\n\tShortName: \"$name\",\n\tManifests: []string{\"tests/$manifest.yaml\"},\n"
         . ($provisional ? "\tProvisional: true,\n" : '')
         . "\tFeatures: []features.FeatureName{\n" . join('', map { "\t\tfeatures.Support$_,\n" } @$features) . "\t},\n"
         . "\tTest: func(t *testing.T, suite *suite.ConformanceTestSuite) {\n\t},\n}\n";
}

# A suite directory of RELEASE: its CRDs' bundle-version, and the Go tests
# of the results below (their features as the suite declares them), one
# provisional, and one no result records
our @declared;
sub suite {
    my $release = shift;
    my $root = "$dir/suite-$release";
    make_path("$root/config/crd/experimental", "$root/conformance/tests");
    spit("$root/config/crd/experimental/gateway.networking.k8s.io_gatewayclasses.yaml",
         "metadata:\n  annotations:\n    gateway.networking.k8s.io/bundle-version: $release\n");
    my $go = '';
    $go .= go_test($_->[0], $_->[2], $_->[1], $_->[0] eq 'Redirect303') for @declared;
    $go .= go_test('NotReplayed', 'httproute-not-replayed', [qw(Gateway HTTPRoute ReferenceGrant)]);
    spit("$root/conformance/tests/tests.go", $go);
    return "$root/conformance";
}

@declared = (
    # name, features, manifest, state
    ['Plain', [qw(Gateway HTTPRoute)], 'plain', 'passed'],
    ['Redirect303', [qw(Gateway HTTPRoute HTTPRoute303RedirectStatusCode)], 'redirect-303', 'passed'],
    ['NeedsUnclaimed', [qw(Gateway HTTPRoute HTTPRouteRetryConnectionError)], 'unclaimed', 'failed'],
    ['DisallowedKind', [qw(Gateway HTTPRoute TLSRoute)], 'disallowed', 'passed'],
    ['GRPCNamed', [qw(Gateway GRPCRoute GRPCRouteNamedRouteRule)], 'grpc-named', 'passed'],
    ['GRPCBackendTLS', [qw(Gateway GRPCRoute BackendTLSPolicy)], 'grpc-tls', 'passed'],
);
make_path($dir);
# (recorded with features of their own: the report counts the suite's)
spit("$dir/results.json", JSON::PP->new->canonical->encode({
    results => [map { {name => $_->[0], features => ['Gateway'], manifests => ['other'], state => $_->[3], reason => ''} } @declared],
    supportedFeatures => [qw(BackendTLSPolicy GRPCRoute GRPCRouteNamedRouteRule Gateway HTTPRoute
                             HTTPRoute303RedirectStatusCode ReferenceGrant TLSRoute)],
}));

# the block of profile P of a report
sub profile { my ($text, $p) = @_; return $text =~ /^- name: \Q$p\E\n(.*?)(?=^- name: |^succeeded)/ms ? $1 : '' }
sub counts {
    my ($block, $level) = @_;
    my ($part) = $block =~ /^  \Q$level\E:\n(.*?)(?=^  \S)/ms;
    my %c = ($part // '') =~ /^      (Failed|Passed|Skipped): (\d+)$/mg;
    return join ' ', map { $c{$_} // '?' } qw(Passed Failed Skipped);
}

my $report = write_report("$dir/v1.6.1.yaml", suite('v1.6.1'), "$dir/results.json");
like($report, qr/^gatewayAPIVersion: v1\.6\.1$/m, 'the release, as the CRDs beside the suite say');
like($report, qr/^  contact:\n  - \S/m, 'a contact, which a submission needs');
like($report, qr/\A# A local replay .*not a run of the\n# suite's Go tests against a cluster/s, 'and it says it is a local replay');
unlike($report, qr/NeedsUnclaimed/, 'a test needing an unclaimed feature is left out, not skipped or failed');
my $http = profile($report, 'GATEWAY-HTTP');
is(counts($http, 'core'), '1 0 1', 'GATEWAY-HTTP core: Plain passed; NotReplayed, which no result records, skipped');
is(counts($http, 'extended'), '1 0 0', 'GATEWAY-HTTP extended: Redirect303 alone');
unlike($report, qr/DisallowedKind/, 'a test needing HTTPRoute and TLSRoute is in no profile');
is(counts(profile($report, 'GATEWAY-TLS'), 'core') . ' / ' . counts(profile($report, 'GATEWAY-TLS'), 'extended'),
   '0 0 0 / 0 0 0', 'nor counted in GATEWAY-TLS');
my $grpc = profile($report, 'GATEWAY-GRPC');
is(counts($grpc, 'extended'), '0 0 0', 'v1.6.1: GRPCRouteNamedRouteRule and BackendTLSPolicy are in no GRPC profile');
like($report, qr/^succeededProvisionalTests:\n- Redirect303\n/m, 'a provisional test that passed is listed');
like($http, qr/^    unsupportedFeatures:\n(?:    - .*\n)*    - HTTPRouteRetryConnectionError\n/m,
     'an unclaimed feature of the profile is listed unsupported');

$report = write_report("$dir/main.yaml", suite('v0.0.0-dev'), "$dir/results.json");
like($report, qr/^gatewayAPIVersion: v0\.0\.0-dev$/m, 'the suite\'s main says v0.0.0-dev');
is(counts(profile($report, 'GATEWAY-GRPC'), 'extended'), '1 0 0',
   'main: BackendTLSPolicy is a GATEWAY-GRPC extended feature, GRPCRouteNamedRouteRule still is not');

# a checkout: the profiles as utils/suite/profiles.go defines them, their
# extended features the sets of pkg/features (one the table written down
# for the release does not know)
{
    my $root = "$dir/checkout";
    make_path("$root/conformance/tests", "$root/conformance/utils/suite", "$root/pkg/features");
    spit("$root/conformance/tests/tests.go",
         go_test('Plain', 'plain', [qw(Gateway HTTPRoute)]) . go_test('Novel', 'novel', [qw(Gateway HTTPRoute HTTPRouteNovel)]));
    spit("$root/conformance/utils/suite/profiles.go", <<'GO');
const (
	GatewayHTTPConformanceProfileName ConformanceProfileName = "GATEWAY-HTTP"
)

var (
	GatewayHTTPConformanceProfile = ConformanceProfile{
		Name: GatewayHTTPConformanceProfileName,
		CoreFeatures: sets.New(
			features.SupportGateway,
			features.SupportHTTPRoute,
		),
		ExtendedFeatures: features.SetsToNamesSet(
			features.HTTPRouteExtendedFeatures,
		),
	}
)
GO
    spit("$root/pkg/features/httproute.go", <<'GO');
var (
	HTTPRouteNovelFeature = Feature{
		Name:    SupportHTTPRouteNovel,
		Channel: FeatureChannelStandard,
	}
)

var HTTPRouteExtendedFeatures = sets.New(
	HTTPRouteNovelFeature,
)
GO
    spit("$dir/checkout.json", JSON::PP->new->canonical->encode({
        results => [{name => 'Plain', features => [], manifests => [], state => 'passed', reason => ''},
                    {name => 'Novel', features => [], manifests => [], state => 'passed', reason => ''}],
        supportedFeatures => [qw(Gateway HTTPRoute HTTPRouteNovel)],
    }));
    my $checkout = write_report("$dir/checkout.yaml", "$root/conformance", "$dir/checkout.json");
    my $http = profile($checkout, 'GATEWAY-HTTP');
    is(counts($http, 'core') . ' / ' . counts($http, 'extended'), '1 0 0 / 1 0 0',
       'a checkout: the extended features of pkg/features\'s sets (Novel extended)');
    is(join(' ', $checkout =~ /^- name: (\S+)$/mg), 'GATEWAY-HTTP', 'and the profiles profiles.go defines');
    like($http, qr/^    supportedFeatures:\n    - HTTPRouteNovel\n/m, 'its supported extended feature listed');
}

# what a replay runs and records: the suite's declaration of a test where
# its directory has Go sources (a test it lacks is not run), else the
# replay's own, where the manifests are there
{
    local $ENV{GATEWAY_API_DIR} = "$dir/suite-v1.6.1";
    my $d = declared('Plain', ['Gateway'], ['other']);
    is(join(' ', @{$d->{features}}) . ' | ' . join(' ', @{$d->{manifests}}), 'Gateway HTTPRoute | plain',
       "a replay runs a test with the suite's features and manifests, not its own");
    is(declared('NotInTheSuite', ['Gateway'], ['plain']), undef, 'a test the Go sources lack is not run');
    $ENV{GATEWAY_API_DIR} = "$dir/manifests-only";
    make_path("$dir/manifests-only/conformance/tests");
    spit("$dir/manifests-only/conformance/tests/plain.yaml", "{}\n");
    is_deeply(declared('Plain', ['Gateway'], ['plain']), {features => ['Gateway'], manifests => ['plain']},
              'without Go sources: the replay\'s own, its manifests there');
    is(declared('Plain', ['Gateway'], ['gone']), undef, 'and not run when they are not');
}

# claims the results do not earn: ReferenceGrant is claimed and no passed
# test needs it; a test of claimed features failed (then, a directory with
# no Go sources: the features the results were recorded with)
is_deeply([unearned_claims("$dir/suite-v1.6.1/conformance", "$dir/results.json")], ["ReferenceGrant is claimed, and no test that needs it passed"],
          'a claimed feature no passed test needs is named');
spit("$dir/failed.json", JSON::PP->new->canonical->encode({
    results => [{name => 'Broken', features => [qw(Gateway HTTPRoute)], manifests => ['plain'], state => 'failed',
                 reason => '1 of 2 assertions failed'},
                {name => 'Unclaimed', features => [qw(Gateway HTTPRoute HTTPRouteRetryConnectionError)],
                 manifests => ['unclaimed'], state => 'failed', reason => ''},
                {name => 'Fine', features => [qw(Gateway)], manifests => ['plain'], state => 'passed', reason => ''}],
    supportedFeatures => [qw(Gateway HTTPRoute)],
}));
is_deeply([unearned_claims("$dir/none", "$dir/failed.json")],
          ['HTTPRoute is claimed, and no test that needs it passed',
           'Broken needs only claimed features (Gateway HTTPRoute) and failed: 1 of 2 assertions failed'],
          'a failed test of claimed features is named; one of an unclaimed feature is not');
# a release whose Go sources name no HTTPRoute feature does not ask for it
# (and its declarations are the tests' features)
make_path("$dir/suite-gateway/conformance/tests");
spit("$dir/suite-gateway/conformance/tests/tests.go",
     go_test('Broken', 'plain', ['Gateway']) . go_test('Unclaimed', 'unclaimed', [qw(Gateway HTTPRouteRetryConnectionError)])
     . go_test('Fine', 'plain', ['Gateway']));
is_deeply([unearned_claims("$dir/suite-gateway/conformance", "$dir/failed.json")],
          ['Broken needs only claimed features (Gateway) and failed: 1 of 2 assertions failed'],
          'a claimed feature the release\'s Go sources never name is not asked of it');
# a result of a test the suite does not hold is refused
ok(!eval { write_report("$dir/x.yaml", "$dir/suite-gateway/conformance", "$dir/results.json"); 1 }
   && $@ =~ /^Plain: a result of a test the suite at .* does not hold/, 'a result of a test the suite lacks is refused')
    or diag $@;

done_testing();
