package Test::ConformanceReport;

# The conformance tests' results, and the ConformanceReport made of them.
# Each t/ file that replays tests of the Gateway API conformance suite
# (t/410 BackendTLSPolicy, t/420 TLSRoute, t/430 client certificates,
# t/400 the rest; t/4*-run.t the same served by gateway2nginx run)
# records its results, with the features and manifests of each test as its
# Go source declares them, and the mode it served them in
# (conformance_mode: render or run), in its server root
# (conformance-results.json); t/lib/conformance-report.pl reads them all
# and writes a ConformanceReport in the upstream format for each mode.

use strict;
use warnings;

use Exporter 'import';
use JSON::PP;
use POSIX qw(strftime);
use Test::More ();
use Test::ConformanceSuite qw(suite_tests suite_profiles);

our @EXPORT = qw(conformance_test record_result record_supported_features);
our @EXPORT_OK = qw(write_report unearned_claims declared results_by_mode written_profiles);

# Profiles as the suite defines them, by release: core features, and the
# features a test may need beside them and still belong to the profile
# (conformance/utils/suite/profiles.go and pkg/features/*.go at the tag;
# "main": the suite's main of 2026-08-21, whose CRDs say v0.0.0-dev). Used
# where the suite's directory does not have them (_profiles): a copy of
# its conformance/ has profiles.go, not pkg/features.
my @GatewayExtended = qw(GatewayAddressEmpty GatewayBackendClientCertificate
                         GatewayFrontendClientCertificateValidation
                         GatewayFrontendClientCertificateValidationInsecureFallback GatewayHTTPListenerIsolation
                         GatewayHTTPSListenerDetectMisdirectedRequests GatewayInfrastructurePropagation
                         GatewayPort8080 GatewayStaticAddresses ListenerSet);
my @HTTPRouteExtended = qw(HTTPRoute303RedirectStatusCode HTTPRoute307RedirectStatusCode HTTPRoute308RedirectStatusCode
                           HTTPRouteBackendProtocolH2C HTTPRouteBackendProtocolWebSocket
                           HTTPRouteBackendRequestHeaderModification HTTPRouteBackendTimeout HTTPRouteCORS
                           HTTPRouteDestinationPortMatching HTTPRouteHostRewrite HTTPRouteMethodMatching
                           HTTPRouteNamedRouteRule HTTPRouteParentRefPort HTTPRoutePathRedirect HTTPRoutePathRewrite
                           HTTPRoutePortRedirect HTTPRouteQueryParamMatching HTTPRouteRequestMirror
                           HTTPRouteRequestMultipleMirrors HTTPRouteRequestPercentageMirror HTTPRouteRequestTimeout
                           HTTPRouteResponseHeaderModification HTTPRouteRetry HTTPRouteRetryBackendTimeout
                           HTTPRouteRetryConnectionError HTTPRouteSchemeRedirect);
my @BackendTLSPolicy = qw(BackendTLSPolicy BackendTLSPolicySANValidation);
my %ProfilesAt = (
    'v1.6.1' => {
        'GATEWAY-HTTP' => { core => [qw(Gateway HTTPRoute ReferenceGrant)],
                            extended => [@GatewayExtended, @HTTPRouteExtended, @BackendTLSPolicy] },
        'GATEWAY-GRPC' => { core => [qw(Gateway GRPCRoute ReferenceGrant)], extended => [@GatewayExtended] },
        'GATEWAY-TLS'  => { core => [qw(Gateway TLSRoute ReferenceGrant)],
                            extended => [@GatewayExtended, qw(TLSRouteModeMixed TLSRouteModeTerminate)] },
        'GATEWAY-TCP'  => { core => [qw(Gateway TCPRoute ReferenceGrant)], extended => [@GatewayExtended, 'TCPRoute'] },
        'GATEWAY-UDP'  => { core => [qw(Gateway UDPRoute ReferenceGrant)], extended => [@GatewayExtended, 'UDPRoute'] },
    },
    'main' => {
        'GATEWAY-HTTP' => { core => [qw(Gateway HTTPRoute ReferenceGrant)],
                            extended => [@GatewayExtended, @HTTPRouteExtended, @BackendTLSPolicy,
                                         qw(HTTPRouteBackendRequestRedirect HTTPRouteBackendURLRewrite)] },
        'GATEWAY-GRPC' => { core => [qw(Gateway GRPCRoute ReferenceGrant)], extended => [@GatewayExtended, @BackendTLSPolicy] },
        'GATEWAY-TLS'  => { core => [qw(Gateway TLSRoute ReferenceGrant)],
                            extended => [@GatewayExtended, qw(TLSRouteModeMixed TLSRouteModeTerminate), @BackendTLSPolicy] },
        'GATEWAY-TCP'  => { core => [qw(Gateway TCPRoute ReferenceGrant)], extended => [@GatewayExtended, 'TCPRoute'] },
        'GATEWAY-UDP'  => { core => [qw(Gateway UDPRoute ReferenceGrant)], extended => [@GatewayExtended, 'UDPRoute'] },
    },
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

# Test NAME as the suite at conformance_dir() declares it: {features,
# manifests} read from its Go sources, undef when they do not hold it (a
# test newer than the suite's release); where the suite's directory holds
# manifests alone, FEATURES and MANIFESTS as the replay gives them, undef
# when the manifests are not there.
my %Suites;  # by directory, read once
sub declared {
    my ($name, $features, $manifests) = @_;
    my $dir = Test::GatewayTLS::conformance_dir();
    my $suite = $Suites{$dir} //= suite_tests($dir) // 0;
    return $suite ? $suite->{$name} : Test::GatewayTLS::conformance_has(@$manifests)
                                      ? {features => $features, manifests => $manifests} : undef;
}

# Runs CODE, the replay of test NAME written as Test::More assertions, and
# records it passed when none of its assertions failed.
sub conformance_test {
    my ($name, $features, $manifests, $code) = @_;
    # a test newer than the suite's release: not run, not counted
    my $declared = declared($name, $features, $manifests);
    if (!$declared) {
        Test::More::note("$name: not in the suite at " . Test::GatewayTLS::conformance_dir());
        return;
    }
    ($features, $manifests) = @$declared{qw(features manifests)};
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
        print $fh JSON::PP->new->canonical->pretty->encode({results => \@Results, supportedFeatures => \@Supported,
                                                            mode => Test::GatewayTLS::conformance_mode()});
        close $fh;
    }
}

# ---- the report ------------------------------------------------------------

# The profiles a test belongs to, as the suite decides
# (getConformanceProfilesForTest): every one whose core and extended
# features include all the test needs; there it is extended when it needs
# one beyond the core (isTestExtended).
sub _profiles_of {
    my ($test, $profiles) = @_;
    my %out;
    for my $p (sort keys %$profiles) {
        my %core = map { $_ => 1 } @{$profiles->{$p}{core}};
        my %any = (%core, map { $_ => 1 } @{$profiles->{$p}{extended}});
        next if grep { !$any{$_} } @{$test->{features}};
        $out{$p} = (grep { !$core{$_} } @{$test->{features}}) ? 'extended' : 'core';
    }
    return \%out;
}

# The release of the suite at SHARED (its conformance/ directory), as the
# suite reads it: the bundle-version of the CRDs beside it.
sub _release_of {
    my $shared = shift;
    my $crd = "$shared/../config/crd/experimental/gateway.networking.k8s.io_gatewayclasses.yaml";
    open my $fh, '<', $crd or return 'v0.0.0-dev';
    while (<$fh>) { return $1 if m{gateway\.networking\.k8s\.io/bundle-version:\s*(\S+)} }
    return 'v0.0.0-dev';
}

# The profiles written down above for the release of the suite at SHARED
sub written_profiles { return $ProfilesAt{_release_of($_[0])} || $ProfilesAt{main} }

# The Gateway profiles of the suite at SHARED: their core features as its
# utils/suite/profiles.go lists them, their extended ones from the sets of
# pkg/features beside it (a checkout), else as written down above for its
# release (%ProfilesAt); all as written down where profiles.go is not there
sub _profiles {
    my ($shared) = @_;
    my $typed = written_profiles($shared);
    my $suite = suite_profiles($shared) or return $typed;
    my %out;
    for my $p (sort keys %$suite) {
        my $extended = $suite->{$p}{extended} // ($typed->{$p} || die "$p: a profile of the suite whose extended "
                                                  . "features (@{$suite->{$p}{sets}}) are not at hand\n")->{extended};
        $out{$p} = {core => $suite->{$p}{core}, extended => $extended};
    }
    return \%out;
}

# RESULT FILES by the mode their replays served in: {mode => [files]}
sub results_by_mode {
    my %by;
    for my $file (@_) {
        my $data = decode_json(do { local (@ARGV, $/) = ($file); <> });
        push @{$by{$data->{mode} // 'render'}}, $file;
    }
    return \%by;
}

# RESULT FILES' results, each with the features and manifests the suite
# at SHARED declares for it (not those its replay was written with; those
# where SUITE is undef: no Go sources), and the GatewayClass's
# supportedFeatures; dies on a result of a test the suite does not hold
sub _results {
    my ($suite, $shared, @files) = @_;
    my (@tests, %supported, %seen);
    for my $file (@files) {
        my $data = decode_json(do { local (@ARGV, $/) = ($file); <> });
        push @tests, @{$data->{results}};
        $supported{$_} = 1 for @{$data->{supportedFeatures}};
    }
    @tests = grep { !$seen{$_->{name}}++ } @tests;
    for my $test ($suite ? @tests : ()) {
        my $declared = $suite->{$test->{name}} or die "$test->{name}: a result of a test the suite at $shared does not hold\n";
        $test = {%$test, features => $declared->{features}, manifests => $declared->{manifests}};
    }
    return (\@tests, \%supported);
}

# Writes the ConformanceReport of RESULT FILES (of one mode: render, or
# run) to OUT, counted as the suite
# counts (utils/suite/suite.go, reports.go): a test needing a feature the
# GatewayClass does not claim is left out (not supported, not skipped); each
# other one counts in every profile its features put it in, core or
# extended; provisional tests that passed are listed. SHARED is the suite's
# conformance directory: its release (gatewayAPIVersion, the profiles'
# features) and its Go sources (Test::ConformanceSuite): each test's
# features, manifests and provisional flag, and the tests no replay
# recorded, counted as skipped where their features put them. Returns the
# report's text.
sub write_report {
    my ($out, $shared, @files) = @_;
    my $suite = suite_tests($shared)
        or die "$shared/tests holds no Go sources of the suite's tests, whose declarations the report counts by\n";
    my ($results, $supported) = _results($suite, $shared, @files);
    my %supported = %$supported;
    die "no results name the GatewayClass's supportedFeatures (t/400 records them)\n" unless %supported;
    my @modes = keys %{ results_by_mode(@files) };
    die "results of modes @modes: a report is of one\n" unless @modes == 1;
    my $profiles = _profiles($shared);
    my $release = _release_of($shared);
    # the suite's tests no replay recorded: skipped, where their features put them
    my %recorded = map { $_->{name} => 1 } @$results;
    my @tests = (@$results, map { {%$_, state => 'skipped', reason => 'not replayed here yet'} }
                            grep { !$recorded{$_->{name}} } map { $suite->{$_} } sort keys %$suite);
    @tests = grep { my $t = $_; !grep { !$supported{$_} } @{$t->{features}} } @tests;
    my @provisional_passed = sort map { $_->{name} } grep { $suite->{$_->{name}}{provisional} && $_->{state} eq 'passed' } @tests;
    # (what a reader of the file alone must know: YAML comments, outside
    # the upstream schema)
    my %served = (render => 'rendered once by gateway2nginx -f, each later generation rendered and reloaded',
                  run => 'served by gateway2nginx run, which applies each later generation itself');
    my $text = "# A local replay of the Gateway API conformance suite's tests (nginx-gateway-tls t/4*-conformance-*.t:\n"
             . "# the suite's manifests, requests and assertions, replayed against real nginx), not a run of the\n"
             . "# suite's Go tests against a cluster. Counted by the suite's own declarations (its tests' Go sources).\n"
             . "# Mode $modes[0]: the Gateways $served{$modes[0]}.\n"
             . "apiVersion: gateway.networking.k8s.io/v1\nkind: ConformanceReport\n"
             . "date: \"" . strftime('%Y-%m-%dT%H:%M:%SZ', gmtime) . "\"\n"
             . "gatewayAPIChannel: experimental\ngatewayAPIVersion: $release\n"
             . "implementation:\n  organization: nginx-gateway-tls\n  project: gateway2nginx\n"
             . "  url: https://github.com/nginx-gateway-tls/nginx-gateway-tls\n  version: 0.1.0\n"
             . "  contact:\n  - https://github.com/nginx-gateway-tls/nginx-gateway-tls/issues\n"
             . "mode: $modes[0]\nprofiles:\n";
    for my $p (sort keys %$profiles) {
        my (%stats, %skipped, %failed);
        $stats{$_} = {Passed => 0, Failed => 0, Skipped => 0} for qw(core extended);
        for my $test (@tests) {
            my $level = _profiles_of($test, $profiles)->{$p} or next;
            $stats{$level}{ucfirst $test->{state}}++;
            push @{$skipped{$level}}, $test->{name} if $test->{state} eq 'skipped';
            push @{$failed{$level}}, $test->{name} if $test->{state} eq 'failed';
        }
        my $result = sub {
            my $s = shift;
            return $s->{Failed} ? 'failure' : $s->{Skipped} ? 'partial' : 'success';
        };
        my $summary = sub {
            my $s = shift;
            my $r = $result->($s);
            return $r eq 'success' ? 'succeeded'
                 : $r eq 'partial' ? "partially succeeded with $s->{Skipped} test skips"
                 : "failed with $s->{Failed} test failures";
        };
        my %ext = map { $_ => 1 } @{$profiles->{$p}{extended}};
        my @ext = grep { $ext{$_} } sort keys %supported;
        my @unsupported = grep { !$supported{$_} } sort keys %ext;
        my $list = sub { my @l = @_; @l ? "\n" . join('', map { "    - $_\n" } @l) : " []\n" };
        my $status = sub {
            my $level = shift;
            return "    result: " . $result->($stats{$level}) . "\n    statistics:\n"
                 . join('', map { "      $_: $stats{$level}{$_}\n" } qw(Failed Passed Skipped))
                 . ($skipped{$level} ? "    skippedTests:" . $list->(@{$skipped{$level}}) : '')
                 . ($failed{$level} ? "    failedTests:" . $list->(@{$failed{$level}}) : '');
        };
        $text .= "- name: $p\n  core:\n" . $status->('core') . "  extended:\n" . $status->('extended')
               . "    supportedFeatures:" . $list->(@ext)
               . "    unsupportedFeatures:" . $list->(@unsupported)
               . "  summary: Core tests " . $summary->($stats{core}) . ". Extended tests "
               . $summary->($stats{extended}) . ".\n";
    }
    $text .= "succeededProvisionalTests:" . (@provisional_passed ? "\n" . join('', map { "- $_\n" } @provisional_passed) : " []\n");
    open my $fh, '>', $out or die "$out: $!";
    print $fh $text;
    close $fh;
    return $text;
}

# What the GatewayClass claims that the results of RESULT FILES do not
# earn, one line each: a claimed feature no passed test needs, and a test
# whose features are all claimed (one the suite would run) that did not
# pass. Empty when every claim holds. With SHARED (the suite's conformance
# directory) holding Go sources, a claimed feature none of them names is
# one that release does not know, and is not asked of it.
sub unearned_claims {
    my ($shared, @files) = @_;
    my $suite = suite_tests($shared);
    my %known = map { $_ => 1 } map { @{$_->{features}} } values %{$suite || {}};
    my ($results, $supported) = _results($suite, $shared, @files);
    my @tests = @$results;
    my %supported = %$supported;
    my @run = grep { my $t = $_; !grep { !$supported{$_} } @{$t->{features}} } @tests;
    my @out;
    for my $feature (sort keys %supported) {
        next if %known && !$known{$feature};
        push @out, "$feature is claimed, and no test that needs it passed"
            unless grep { my $t = $_; $t->{state} eq 'passed' && grep { $_ eq $feature } @{$t->{features}} } @run;
    }
    push @out, map { "$_->{name} needs only claimed features (@{$_->{features}}) and $_->{state}"
                     . ($_->{reason} ne '' ? ": $_->{reason}" : '') } grep { $_->{state} ne 'passed' } @run;
    return @out;
}

1;
