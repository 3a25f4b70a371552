package Test::ConformanceReport;

# The conformance tests' results, and the ConformanceReport made of them.
# Each t/ file that replays tests of the Gateway API conformance suite
# (t/410 BackendTLSPolicy, t/420 TLSRoute, t/430 client certificates,
# t/400 the rest) records its results, with the features and manifests of
# each test as its Go source declares them, in its server root
# (conformance-results.json); t/lib/conformance-report.pl reads them all
# and writes one ConformanceReport in the upstream format.

use strict;
use warnings;

use Exporter 'import';
use JSON::PP;
use POSIX qw(strftime);
use Test::More ();

our @EXPORT = qw(conformance_test record_result record_supported_features);
our @EXPORT_OK = qw(write_report);

# Profiles as the suite defines them: the features a test may need to
# belong to the profile, and which of them are core.
# (conformance/utils/suite/profiles.go, pkg/features/*.go).
my @GatewayExtended = qw(GatewayAddressEmpty GatewayBackendClientCertificate
                         GatewayFrontendClientCertificateValidation
                         GatewayFrontendClientCertificateValidationInsecureFallback GatewayHTTPListenerIsolation
                         GatewayHTTPSListenerDetectMisdirectedRequests GatewayInfrastructurePropagation
                         GatewayPort8080 GatewayStaticAddresses);
my %Profiles = (
    'GATEWAY-HTTP' => { core => [qw(Gateway HTTPRoute ReferenceGrant)],
                        extended => [@GatewayExtended, qw(BackendTLSPolicy BackendTLSPolicySANValidation
                            HTTPRoute303RedirectStatusCode HTTPRoute307RedirectStatusCode HTTPRoute308RedirectStatusCode
                            HTTPRouteBackendProtocolH2C HTTPRouteBackendProtocolWebSocket
                            HTTPRouteBackendRequestHeaderModification HTTPRouteBackendTimeout HTTPRouteCORS
                            HTTPRouteDestinationPortMatching HTTPRouteHostRewrite HTTPRouteMethodMatching
                            HTTPRouteNamedRouteRule HTTPRouteParentRefPort HTTPRoutePathRedirect HTTPRoutePathRewrite
                            HTTPRoutePortRedirect HTTPRouteQueryParamMatching HTTPRouteRequestMirror
                            HTTPRouteRequestMultipleMirrors HTTPRouteRequestPercentageMirror HTTPRouteRequestTimeout
                            HTTPRouteResponseHeaderModification HTTPRouteSchemeRedirect),
                            # features of tests newer than v1.4 in the suite's copy here
                            qw(HTTPRouteBackendRequestRedirect HTTPRouteBackendURLRewrite HTTPRouteRetry
                               HTTPRouteRetryBackendTimeout HTTPRouteRetryConnectionError)] },
    'GATEWAY-GRPC' => { core => [qw(Gateway GRPCRoute ReferenceGrant)],
                        extended => [@GatewayExtended, qw(GRPCRouteNamedRouteRule GRPCRouteRequestHeaderModifier)] },
    'GATEWAY-TLS'  => { core => [qw(Gateway TLSRoute ReferenceGrant)],
                        extended => [@GatewayExtended, qw(TLSRouteModeMixed TLSRouteModeTerminate)] },
);

my (@Results, @Supported, $File);

# Records test NAME: FEATURES and MANIFESTS as its Go source declares them,
# STATE passed, failed or skipped, and why.
sub record_result {
    my ($name, $features, $manifests, $state, $why) = @_;
    $File //= Test::GatewayTLS::servroot() . '/conformance-results.json';
    push @Results, {name => $name, features => $features, manifests => $manifests, state => $state,
                    reason => $why // ''};
}

# The GatewayClass's status.supportedFeatures, as a replay read them.
sub record_supported_features { @Supported = @{$_[0]} }

# Runs CODE, the replay of test NAME written as Test::More assertions, and
# records it passed when none of its assertions failed.
sub conformance_test {
    my ($name, $features, $manifests, $code) = @_;
    my $tb = Test::More->builder;
    my $first = $tb->current_test;
    $code->();
    my @summary = ($tb->summary)[$first .. $tb->current_test - 1];
    my $failed = grep { !$_ } @summary;
    record_result($name, $features, $manifests, $failed ? 'failed' : 'passed',
                  $failed ? "$failed of " . @summary . " assertions failed" : '');
}

END {
    if ($File) {
        open my $fh, '>', $File or die "$File: $!";
        print $fh JSON::PP->new->canonical->pretty->encode({results => \@Results, supportedFeatures => \@Supported});
        close $fh;
    }
}

# ---- the report ------------------------------------------------------------

# The profiles a test belongs to (those of the route kinds it needs; all
# three when it needs none), and whether it is core there.
sub _profiles_of {
    my $test = shift;
    my @features = @{$test->{features}};
    my @routes = grep { /^(HTTPRoute|GRPCRoute|TLSRoute)/ } @features;
    my %out;
    for my $p (sort keys %Profiles) {
        my $kind = $Profiles{$p}{core}[1];
        next if @routes && !grep { index($_, $kind) == 0 } @routes;
        my %core = map { $_ => 1 } @{$Profiles{$p}{core}};
        $out{$p} = (grep { !$core{$_} } @features) ? 'extended' : 'core';
    }
    return \%out;
}

# Writes the ConformanceReport of RESULT FILES to OUT; SHARED is the suite's
# conformance directory (its tests/*.yaml: the manifests no result used
# count as tests skipped, by profile, by name: grpcroute-*, tlsroute-*, the
# rest of gateway-*, httproute-*, backendtlspolicy-*). A test needing a
# feature the GatewayClass does not claim is skipped, as the suite skips it.
# Returns the report's text.
sub write_report {
    my ($out, $shared, @files) = @_;
    my (@tests, %supported);
    for my $file (@files) {
        my $data = decode_json(do { local (@ARGV, $/) = ($file); <> });
        push @tests, @{$data->{results}};
        $supported{$_} = 1 for @{$data->{supportedFeatures}};
    }
    die "no results name the GatewayClass's supportedFeatures (t/400 records them)\n" unless %supported;
    my %seen;
    @tests = grep { !$seen{$_->{name}}++ } @tests;
    for my $test (@tests) {
        my @missing = grep { !$supported{$_} } @{$test->{features}};
        @$test{qw(state reason)} = ('skipped', "unsupported features: @missing") if @missing;
    }
    my %used = map { $_ => 1 } map { @{$_->{manifests}} } @tests;
    my %pending;
    for my $file (sort glob("$shared/tests/*.yaml")) {
        my ($stem) = $file =~ m{([^/]+)\.yaml$};
        next if $used{$stem};
        my $p = $stem =~ /^grpcroute-/ ? 'GATEWAY-GRPC' : $stem =~ /^tlsroute-/ ? 'GATEWAY-TLS'
              : $stem =~ /^(?:httproute|gateway|backendtlspolicy)-/ ? 'GATEWAY-HTTP' : next;
        push @{$pending{$p}}, $stem;
    }
    my $text = "apiVersion: gateway.networking.k8s.io/v1\nkind: ConformanceReport\n"
             . "date: \"" . strftime('%Y-%m-%dT%H:%M:%SZ', gmtime) . "\"\n"
             . "gatewayAPIChannel: experimental\ngatewayAPIVersion: v1.4.0\n"
             . "implementation:\n  organization: nginx-gateway-tls\n  project: gateway2nginx\n"
             . "  url: https://github.com/nginx-gateway-tls/nginx-gateway-tls\n  version: 0.1.0\n"
             . "  contact: []\nmode: default\nprofiles:\n";
    for my $p (sort keys %Profiles) {
        my (%stats, @skipped, @failed);
        $stats{$_} = {Passed => 0, Failed => 0, Skipped => 0} for qw(core extended);
        for my $test (@tests) {
            my $level = _profiles_of($test)->{$p} or next;
            $stats{$level}{ucfirst $test->{state}}++;
            push @skipped, $test->{name} if $test->{state} eq 'skipped' && $level eq 'core';
            push @failed, $test->{name} if $test->{state} eq 'failed';
        }
        for my $name (@{$pending{$p} || []}) {
            $stats{core}{Skipped}++;
            push @skipped, "$name (manifests not replayed here yet)";
        }
        my $result = sub {
            my $s = shift;
            return $s->{Failed} ? 'failure' : $s->{Skipped} ? 'partial' : 'success';
        };
        my %ext = map { $_ => 1 } @{$Profiles{$p}{extended}};
        my @ext = grep { $ext{$_} } sort keys %supported;
        my @unsupported = grep { !$supported{$_} } sort @{$Profiles{$p}{extended}};
        my $list = sub { my @l = @_; @l ? "\n" . join('', map { "    - $_\n" } @l) : " []\n" };
        $text .= "- name: $p\n  core:\n    result: " . $result->($stats{core}) . "\n    statistics:\n"
               . join('', map { "      $_: $stats{core}{$_}\n" } qw(Failed Passed Skipped))
               . (@skipped ? "    skippedTests:" . $list->(@skipped) : '')
               . (@failed ? "    failedTests:" . $list->(@failed) : '')
               . "  extended:\n    result: " . $result->($stats{extended}) . "\n    statistics:\n"
               . join('', map { "      $_: $stats{extended}{$_}\n" } qw(Failed Passed Skipped))
               . "    supportedFeatures:" . $list->(@ext)
               . "    unsupportedFeatures:" . $list->(@unsupported)
               . "  summary: core " . $result->($stats{core}) . ", extended " . $result->($stats{extended}) . "\n";
    }
    open my $fh, '>', $out or die "$out: $!";
    print $fh $text;
    close $fh;
    return $text;
}

1;
