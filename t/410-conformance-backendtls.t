# Replays, locally, the Gateway API conformance tests BackendTLSPolicy,
# BackendTLSPolicyConflictResolution, BackendTLSPolicyInvalidCACertificateRef,
# BackendTLSPolicyInvalidKind, BackendTLSPolicySANValidation and
# BackendTLSPolicyObservedGenerationBump: the suite's own manifests from
# $GATEWAY_API_DIR/conformance/, the certificates the suite makes at
# start (made here by t/lib/make-certs.sh: CA "ca" signs the leaf with SANs
# abc.example.com, spiffe://abc.example.com/test-identity, other.example.com;
# "unrelated-ca" is the mismatch CA), EndpointSlices that point every
# Service at a local TLS backend, gateway2nginx, and the nginx it configures.
use lib 't/lib';
use Test::ConformanceReport;
use Test::GatewayTLS;
use Test::More;

my ($shared, $manifests) = conformance_begin();
my $certs = certs_dir();
my $dir = servroot();
my $out = "$dir/out";

my @tests = qw(backendtlspolicy backendtlspolicy-conflict-resolution
               backendtlspolicy-invalid-ca-certificate-ref backendtlspolicy-invalid-kind
               backendtlspolicy-san backendtlspolicy-observed-generation-bump);

my $all = conformance_manifests($shared, $manifests, @tests);

# What the suite creates at start, and endpoints for every Service of the
# infra namespace: each port by name, on the local TLS backend.
my $backend = backend_port('leaf');
my $extra = conformance_setup() . tls_secret_yaml('tls-validity-checks-certificate', 'leaf');
for my $doc (split /^---\s*$/m, $all) {
    next unless $doc =~ /^kind: Service\s*$/m && $doc =~ /namespace: gateway-conformance-infra/;
    my ($name) = $doc =~ /^  name: (\S+)/m;
    my @ports = $doc =~ /- name: "?([\w-]+)"?\s*\n\s+protocol: TCP/g;
    next unless @ports;
    $extra .= "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n"
            . "  name: $name-local\n  namespace: gateway-conformance-infra\n"
            . "  labels:\n    kubernetes.io/service-name: $name\naddressType: IPv4\nports:\n"
            . join('', map { "- name: $_\n  port: $backend\n" } @ports)
            . "endpoints:\n- addresses: [\"127.0.0.1\"]\n  conditions: {ready: true}\n";
}
spit("$manifests/20-suite-setup.yaml", $extra);

my $offset = server_port() + 20 - 80;  # HTTP 80 -> base+20, HTTPS 443 -> base+383
my $http = 80 + $offset;
my $https = 443 + $offset;

start_backends();
# both Gateways the manifests name, in one configuration
my $status = serve_conformance_gateway($manifests, '', $offset, 80);

sub get {
    my ($path, $host) = @_;
    my ($status, undef, $body) = http_request($http, $path, $host // 'abc.example.com');
    return ($status, $body);
}

sub sni_of { my $b = shift; $b =~ /sni=(\S*)/ ? $1 : '' }

my $gw = 'gateway-conformance-infra/same-namespace';
sub conditions_of {
    my ($policy) = @_;
    return join ' ', @{$status->{"BackendTLSPolicy gateway-conformance-infra/$policy"} || []};
}

# ---- BackendTLSPolicy ------------------------------------------------------
conformance_test 'BackendTLSPolicy', [qw(Gateway HTTPRoute BackendTLSPolicy)], ['backendtlspolicy'], sub {
    my ($code, $body) = get('/backendtlspolicy');
    is($code, 200, 'BackendTLSPolicy: 200 through the policy');
    is(sni_of($body), 'abc.example.com', 'BackendTLSPolicy: the backend saw SNI abc.example.com');
    isnt((get('/backendtlspolicy-host-mismatch'))[0], 200, 'BackendTLSPolicy: hostname mismatch is refused');
    isnt((get('/backendtlspolicy-cert-mismatch'))[0], 200, 'BackendTLSPolicy: CA mismatch is refused');
    is((get('/backendtlspolicy-reconcile-test'))[0], 200, 'BackendTLSPolicy: reconcile-test passes');
    like(conditions_of('normative-test'), qr{\Q$gw\E: Accepted=True/Accepted}, 'BackendTLSPolicy: Accepted');
    like(conditions_of('normative-test'), qr{\Q$gw\E: ResolvedRefs=True/ResolvedRefs}, 'BackendTLSPolicy: ResolvedRefs');

    # re-encrypt behind the HTTPS listener
    my $reencrypt = `curl -sk --max-time 10 --resolve https-listener.org:$https:127.0.0.1 https://https-listener.org:$https/backendtlspolicy`;
    like($reencrypt, qr/^backend=leaf sni=abc\.example\.com path=\/backendtlspolicy$/m,
         'BackendTLSPolicy: re-encrypt behind the HTTPS listener');
    like(conditions_of('normative-test'),
         qr{gateway-conformance-infra/same-namespace-with-https-listener: Accepted=True/Accepted},
         'BackendTLSPolicy: the HTTPS Gateway is an ancestor too');
};

# ---- BackendTLSPolicyConflictResolution ------------------------------------
conformance_test 'BackendTLSPolicyConflictResolution', [qw(Gateway HTTPRoute BackendTLSPolicy)], ['backendtlspolicy-conflict-resolution'], sub {
    my ($code, $body) = get('/backendtlspolicy-conflicted-without-section-name');
    is($code, 200, 'ConflictResolution: whole-Service conflict still serves');
    is(sni_of($body), 'other.example.com', 'ConflictResolution: the winner (-1, first by name) sets SNI');
    ($code, $body) = get('/backendtlspolicy-conflicted-with-section-name');
    is($code, 200, 'ConflictResolution: port conflict still serves');
    is(sni_of($body), 'other.example.com', 'ConflictResolution: the port winner sets SNI');
    ($code, $body) = get('/backendtlspolicy-not-conflicted-with-section-name');
    is(sni_of($body), 'other.example.com', 'ConflictResolution: the port policy governs its port');
    ($code, $body) = get('/backendtlspolicy-not-conflicted-without-section-name');
    is(sni_of($body), 'abc.example.com', 'ConflictResolution: the whole-Service policy governs the other port');
    for my $p (qw(conflicted-without-section-name-1 conflicted-with-section-name-1
                  not-conflicted-with-section-name not-conflicted-without-section-name)) {
        like(conditions_of($p), qr{\Q$gw\E: Accepted=True/Accepted}, "ConflictResolution: $p Accepted");
    }
    for my $p (qw(conflicted-without-section-name-2 conflicted-with-section-name-2)) {
        like(conditions_of($p), qr{\Q$gw\E: Accepted=False/Conflicted}, "ConflictResolution: $p Conflicted");
    }
};

# ---- BackendTLSPolicyInvalidCACertificateRef / InvalidKind -----------------
conformance_test 'BackendTLSPolicyInvalidCACertificateRef', [qw(Gateway HTTPRoute BackendTLSPolicy)], ['backendtlspolicy-invalid-ca-certificate-ref'], sub {
    for my $case (['nonexistent-ca-certificate-ref', '/backendtlspolicy-nonexistent-ca-certificate-ref'],
                  ['malformed-ca-certificate-ref', '/backendtlspolicy-malformed-ca-certificate-ref']) {
        my ($policy, $path) = @$case;
        like((get($path))[0], qr/^50[023]$/, "InvalidCACertificateRef: $policy gives a 5xx");
        like(conditions_of($policy), qr{\Q$gw\E: Accepted=False/NoValidCACertificate},
             "InvalidCACertificateRef: $policy Accepted=False/NoValidCACertificate");
        like(conditions_of($policy), qr{\Q$gw\E: ResolvedRefs=False/InvalidCACertificateRef},
             "InvalidCACertificateRef: $policy ResolvedRefs=False/InvalidCACertificateRef");
    }
};
conformance_test 'BackendTLSPolicyInvalidKind', [qw(Gateway HTTPRoute BackendTLSPolicy)], ['backendtlspolicy-invalid-kind'], sub {
    like((get('/backendtlspolicy-invalid-kind'))[0], qr/^50[023]$/, 'InvalidKind: 5xx');
    like(conditions_of('invalid-kind'), qr{\Q$gw\E: Accepted=False/NoValidCACertificate},
         'InvalidKind: Accepted=False/NoValidCACertificate');
    like(conditions_of('invalid-kind'), qr{\Q$gw\E: ResolvedRefs=False/InvalidKind},
         'InvalidKind: ResolvedRefs=False/InvalidKind');
};

# ---- BackendTLSPolicySANValidation -----------------------------------------
conformance_test 'BackendTLSPolicySANValidation', [qw(Gateway HTTPRoute BackendTLSPolicy BackendTLSPolicySANValidation)], ['backendtlspolicy-san'], sub {
    my %expect = ('/backendtlspolicy-san-dns' => 200, '/backendtlspolicy-san-dns-mismatch' => 0,
                  '/backendtlspolicy-san-uri' => 200, '/backendtlspolicy-san-uri-mismatch' => 0,
                  '/backendtlspolicy-multiple-sans' => 200,
                  '/backendtlspolicy-multiple-mismatch-sans' => 0);
    for my $path (sort keys %expect) {
        my ($code) = get($path);
        if ($expect{$path}) {
            is($code, 200, "SANValidation: $path passes");
        } else {
            isnt($code, 200, "SANValidation: $path is refused");
        }
    }
};

# ---- BackendTLSPolicyObservedGenerationBump (status only) ------------------
conformance_test 'BackendTLSPolicyObservedGenerationBump', [qw(Gateway HTTPRoute BackendTLSPolicy)], ['backendtlspolicy-observed-generation-bump'], sub {
    my $policy = qr/kind: BackendTLSPolicy\nmetadata:\n  name: observed-generation-bump\n  namespace: gateway-conformance-infra\n  generation: (\d+)\n(?:.*\n)*?\s+observedGeneration: (\d+)/;
    my ($gen, $observed) = slurp("$out/status.yaml") =~ $policy;
    is("$gen/$observed", '1/1', 'ObservedGenerationBump: observedGeneration follows generation 1');

    my $file = "$manifests/10-backendtlspolicy-observed-generation-bump.yaml";
    (my $bumped = slurp($file)) =~ s/(name: observed-generation-bump\n  namespace: gateway-conformance-infra\n)/$1  generation: 2\n/;
    spit($file, $bumped);
    serve_conformance_gateway($manifests, '', $offset);
    ($gen, $observed) = slurp("$out/status.yaml") =~ $policy;
    is("$gen/$observed", '2/2', 'ObservedGenerationBump: observedGeneration follows generation 2');
};

stop_conformance_gateway();
stop_backends();
