# The invalid-input matrix (issue 8): every way a policy or its references
# can be wrong, and every way a backend certificate can be wrong, each behind
# its own path of one generated configuration. Each case must end in a 5xx,
# never a 2xx and never a request the backend sees in plaintext; the error
# log or status.yaml must say why. A policy the CRDs themselves would refuse
# (a bad SAN, a bad hostname) is rejected alone, with FILE:LINE:COL and the
# field: its traffic fails closed and everything else is still served.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();
my $dir = servroot();
my $certs = certs_dir();
(my $key = slurp("$certs/leaf.key")) =~ s/^/    /mg;
(my $ca_pem = slurp("$certs/ca.crt")) =~ s/^/    /mg;
my $ca = "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n";

# name => [backend, validation, what status.yaml says of ns/NAME-tls (or ''), what the error log says]
my %cases = (
    'missing-ca'   => ['leaf', "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: nowhere}]\n",
                       'Accepted=False/NoValidCACertificate', 'no live upstreams'],
    'garbage-ca'   => ['leaf', "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: garbage}]\n",
                       'ResolvedRefs=False/InvalidCACertificateRef', 'no live upstreams'],
    'empty-ca'     => ['leaf', "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: empty}]\n",
                       'ResolvedRefs=False/InvalidCACertificateRef', 'no live upstreams'],
    'key-as-ca'    => ['leaf', "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: key}]\n",
                       'ResolvedRefs=False/InvalidCACertificateRef', 'no live upstreams'],
    'wrong-kind'   => ['leaf', "    caCertificateRefs: [{group: \"\", kind: Service, name: ca}]\n",
                       'ResolvedRefs=False/InvalidKind', 'no live upstreams'],
    # the CA exists, but in another namespace: references never leave the policy's
    'wrong-namespace' => ['leaf', "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: elsewhere}]\n",
                       'Accepted=False/NoValidCACertificate', 'no live upstreams'],
    'bad-pin'      => ['leaf', "    trustedCertificateHashes: [{type: SPKI, algorithm: SHA256, value: \"tooshort\"}]\n",
                       'Accepted=False/Invalid', 'no live upstreams'],
    'insecure'     => ['selfsigned', "    mode: InsecureSkipVerification\n",
                       'Accepted=False/InsecureVerificationNotAllowed', 'no live upstreams'],
    'expired'      => ['expired', $ca, 'Accepted=True/Accepted', 'reason "expired"'],
    'notyet'       => ['notyet', $ca, 'Accepted=True/Accepted', 'reason "expired"'],
    'untrusted'    => ['untrusted', $ca, 'Accepted=True/Accepted', 'reason "chain"'],
    'wrongsan'     => ['wrongsan', $ca, 'Accepted=True/Accepted', 'reason "name"'],
    'selfsigned'   => ['selfsigned', $ca, 'Accepted=True/Accepted', 'reason "chain"'],
    'plaintext'    => ['plain', $ca, 'Accepted=True/Accepted', 'SSL_do_handshake() failed'],
    'san-mismatch' => ['leaf', $ca . "    subjectAltNames: [{type: URI, uri: \"spiffe://abc.example.com/someone-else\"}]\n",
                       'Accepted=True/Accepted', 'reason "san"'],
    # refused by the CRD's rules: rejected alone, never served unverified
    'crd-bad-uri'  => ['leaf', $ca . "    subjectAltNames: [{type: URI, uri: \"not a uri\"}]\n",
                       'Accepted=False/Invalid', 'no live upstreams'],
    'crd-bad-host' => ['leaf', $ca . "    subjectAltNames: [{type: Hostname, hostname: \"bad..host\"}]\n",
                       'Accepted=False/Invalid', 'no live upstreams'],
);

my $yaml = gateway_manifests() . <<"YAML";
---
apiVersion: v1
kind: ConfigMap
metadata: {name: garbage, namespace: ns}
data: {ca.crt: "-----BEGIN CERTIFICATE-----\\nbm90IGEgY2VydGlmaWNhdGU=\\n-----END CERTIFICATE-----\\n"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: elsewhere, namespace: other}
data:
  ca.crt: |
$ca_pem
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty, namespace: ns}
data: {ca.crt: ""}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: key, namespace: ns}
data:
  ca.crt: |
$key
YAML
for my $name (sort keys %cases) {
    $yaml .= service_manifests($name, $cases{$name}[0], $cases{$name}[1]);
}
# two policies on one Service: the older one wins, and it cannot be honoured
$yaml .= service_manifests('conflict', 'leaf', "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: nowhere}]\n")
       =~ s/name: conflict-tls, namespace: ns\}/name: conflict-a, namespace: ns, creationTimestamp: "2020-01-01T00:00:00Z"}/r;
$yaml .= "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\n"
       . "metadata: {name: conflict-b, namespace: ns, creationTimestamp: \"2021-01-01T00:00:00Z\"}\nspec:\n"
       . "  targetRefs: [{group: \"\", kind: Service, name: conflict}]\n  validation:\n    hostname: abc.example.com\n$ca";
$yaml .= "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
       . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n";
for my $name (sort(keys %cases), 'conflict') {
    $yaml .= "  - matches: [{path: {type: PathPrefix, value: /$name}}]\n    backendRefs: [{name: $name, port: 443}]\n";
}

my $port = serve_manifests($yaml);
my $status = read_status("$dir/out/status.yaml");
my $log_before = '';

for my $name (sort keys %cases) {
    my ($backend, undef, $condition, $cause) = @{$cases{$name}};
    my ($code) = request($port, 'GET', "/$name/secret", 'Host: shop.example.com');
    like($code, qr/^5\d\d$/, "$name: a 5xx ($code)");
    my $log = slurp("$dir/out/logs/error.log");
    my $new = substr($log, length $log_before);
    $log_before = $log;
    like($new, qr/\Q$cause\E/, "$name: the error log says $cause");
    like(join("\n", @{$status->{"BackendTLSPolicy ns/$name-tls"} || []}), qr/\Q$condition\E/,
         "$name: status.yaml says $condition");
}
{
    my ($code) = request($port, 'GET', '/conflict/secret', 'Host: shop.example.com');
    like($code, qr/^5\d\d$/, "conflict: a 5xx ($code) under the older policy, which cannot be honoured");
    like(join("\n", @{$status->{'BackendTLSPolicy ns/conflict-a'}}), qr/Accepted=False\/NoValidCACertificate/,
         'conflict: the older policy wins and says why it fails');
    like(join("\n", @{$status->{'BackendTLSPolicy ns/conflict-b'}}), qr/Accepted=False\/Conflicted/,
         'conflict: the newer policy is Conflicted');
}

# no backend ever saw a request line of these paths: not in plaintext, not at all
my $backend_log = slurp("$dir/backends/logs/backend.log");
for my $name (sort(keys %cases), 'conflict') {
    unlike($backend_log, qr{/\Q$name\E/secret}, "$name: the backend never saw the request");
}

# what the CRDs refuse costs only its owner: a warning with FILE:LINE:COL
# and the field, the configuration is written, the policy is not accepted
for my $bad (["    subjectAltNames: [{type: URI, uri: \"not a uri\"}]\n", qr/spec\.validation\.subjectAltNames\[0\]\.uri: not a URI/],
             ["    subjectAltNames: [{type: Hostname, hostname: \"bad..host\"}]\n", qr/spec\.validation\.subjectAltNames\[0\]\.hostname: not a valid hostname/]) {
    my ($validation, $error) = @$bad;
    spit("$dir/bad.yaml", gateway_manifests() . service_manifests('x', 'leaf', $ca . $validation)
         . "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: x, port: 443}]\n");
    my ($rc, $out) = run_generator('-f', "$dir/bad.yaml", '-o', "$dir/bad-out");
    is($rc, 0, "a CRD-invalid policy does not stop the configuration (exit 0)");
    like($out, qr/BackendTLSPolicy ns\/x-tls is rejected: \Q$dir\E\/bad\.yaml:\d+:\d+: /, 'the warning names FILE:LINE:COL');
    like($out, $error, 'the warning names the field');
    like(join("\n", @{read_status("$dir/bad-out/status.yaml")->{'BackendTLSPolicy ns/x-tls'} || []}),
         qr/Accepted=False\/Invalid/, 'status.yaml: the policy is not accepted');
    like(slurp("$dir/bad-out/http.conf"), qr/upstream backend_ns_x_443 \{\n    # for [^\n]*\n    # unusable: [^\n]*\n    server 127\.0\.0\.1:1 down;/,
         'its Service is never reached (fail closed)');
}

stop_served();
