# The invalid-input matrix (issue 8): every way a policy or its references
# can be wrong, and every way a backend certificate can be wrong, each behind
# its own path of one generated configuration. Each case must end in a 5xx,
# never a 2xx and never a request the backend sees in plaintext; the error
# log or status.yaml must say why. Input the CRDs themselves would refuse
# (a bad SAN, a bad hostname) is refused by gateway2nginx as a whole, with
# FILE:LINE:COL and the field, and nothing is written.
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

# what the CRDs refuse, gateway2nginx refuses as a whole
for my $bad (["    subjectAltNames: [{type: URI, uri: \"not a uri\"}]\n", qr/spec\.validation\.subjectAltNames\[0\]\.uri: not a URI/],
             ["    subjectAltNames: [{type: Hostname, hostname: \"bad..host\"}]\n", qr/spec\.validation\.subjectAltNames\[0\]\.hostname: not a valid hostname/]) {
    my ($validation, $error) = @$bad;
    spit("$dir/bad.yaml", gateway_manifests() . service_manifests('x', 'leaf', $ca . $validation));
    my $before = slurp("$dir/out/http.conf");
    my ($rc, $out) = run_generator('-f', "$dir/bad.yaml", '-o', "$dir/out");
    is($rc, 1, "a CRD-invalid policy is bad input (exit 1)");
    like($out, qr/\Q$dir\E\/bad\.yaml:\d+:\d+: /, 'the error names FILE:LINE:COL');
    like($out, $error, 'the error names the field');
    is(slurp("$dir/out/http.conf"), $before, 'nothing is written');
}

stop_served();
