# GEP-4152 end to end: verification modes, trusted certificate hashes and
# trusted certificates, and the operator gate with two Gateways sharing
# the same policies: "strict" (AllowStrictOnly, the default) on port 80 and
# "lab" (AllowInsecureVerification) on port 81.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $certs = certs_dir();
sub slurp { local (@ARGV, $/) = @_; <> }
(my $ca = slurp("$certs/ca.crt")) =~ s/^/    /mg;
(my $selfsigned = slurp("$certs/selfsigned.leaf.crt")) =~ s/^/    /mg;
(my $spki = spki_pin('selfsigned')) =~ s/^sha256-spki://;

sub service { service_manifests(@_) }

my $yaml = <<"YAML";
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: strict, namespace: ns}
spec:
  gatewayClassName: ours
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: lab, namespace: ns}
spec:
  gatewayClassName: ours
  tls: {backend: {validation: {mode: AllowInsecureVerification}}}
  listeners: [{name: http, port: 81, protocol: HTTP}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: ns}
data:
  ca.crt: |
$ca
---
apiVersion: v1
kind: ConfigMap
metadata: {name: selfsigned-leaf, namespace: ns}
data:
  tls.crt: |
$selfsigned
YAML
$yaml .= service('dev', 'selfsigned', "    mode: InsecureSkipVerification\n");
$yaml .= service('pinned', 'selfsigned', "    trustedCertificateHashes: [{type: SPKI, algorithm: SHA256, value: \"$spki\"}]\n");
$yaml .= service('trusted', 'selfsigned', "    mode: Standard\n    trustedCertificates: [{group: \"\", kind: ConfigMap, name: selfsigned-leaf}]\n");
$yaml .= service('pinned-wrong', 'leaf', "    mode: Strict\n    trustedCertificateHashes: [{type: SPKI, algorithm: SHA256, value: \"$spki\"}]\n");
$yaml .= service('old', 'expired', "    mode: InsecureAllowExpired\n    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n");
$yaml .= service('renamed', 'wrongsan', "    mode: InsecureSkipSANVerification\n    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n");
$yaml .= service('old-strict', 'expired', "    mode: Standard\n    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n");
$yaml .= <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: routes, namespace: ns}
spec:
  parentRefs: [{name: strict}, {name: lab}]
  rules:
YAML
for my $svc (qw(dev pinned trusted pinned-wrong old renamed old-strict)) {
    $yaml .= "  - matches: [{path: {type: PathPrefix, value: /$svc}}]\n    backendRefs: [{name: $svc, port: 443}]\n";
}

my $strict = serve_manifests($yaml);
my $lab = $strict + 1;
sub code { (request($_[0], 'GET', $_[1], 'Host: any.example.com'))[0] }

my %expect = (   # path => [strict gateway, lab gateway]
    '/dev'          => [500, 200],  # skip: refused by the gate / allowed
    '/pinned'       => [200, 200],  # an SPKI hash alone trusts a self-signed leaf
    '/trusted'      => [200, 200],  # a trusted certificate alone too
    '/pinned-wrong' => [502, 502],  # the pin does not match
    '/old'          => [500, 200],  # allow_expired: refused by the gate / accepts the expired leaf
    '/renamed'      => [500, 200],  # skip_san: refused by the gate / accepts the wrong SAN
    '/old-strict'   => [502, 502],  # Standard refuses the expired leaf everywhere
);
for my $path (sort keys %expect) {
    my ($s, $l) = @{$expect{$path}};
    like(code($strict, $path), $s == 500 ? qr/^5\d\d$/ : qr/^$s$/, "strict Gateway: $path answers $s");
    is(code($lab, $path), $l, "lab Gateway: $path answers $l");
}

# the generated status endpoint counted exactly what was sent
my (undef, undef, $json) = request(status_port(), 'GET', '/status', 'Host: localhost',
                               bearer(servroot() . '/out/status.token'));
like($json, qr/"name":"ns\/dev-tls","kind":"proxy","mode":"skip","trust":"","sans":\[\],"pins":0,"handshakes":\{"verified":0,"skipped":1,/,
     'status: the skip policy was used once (through the lab Gateway only)');
# two requests, two Gateways, one upstream: the second may resume the
# first's TLS session (same policy), which is no new handshake
like($json, qr/"name":"ns\/pinned-tls",[^}]*"pins":1,"handshakes":\{"verified":[12],/, 'status: the pinned policy verified');
like($json, qr/"name":"ns\/old-strict-tls",[^{]*\{[^{]*\{"chain":0,"expired":2,/, 'status: two failures for expiry');
like($json, qr/"audit":\[.*\{"file":"[^"]+http\.conf","line":\d+,"policy":"ns\/dev-tls","kind":"proxy","mode":"skip"\}/,
     'status: the audit list names the insecure scope with file:line');
my (undef, undef, $prom) = request(status_port(), 'GET', '/status?format=prometheus', 'Host: localhost',
                               bearer(servroot() . '/out/status.token'));
like($prom, qr/^gateway_tls_handshakes_total\{policy="ns\/old-tls",kind="proxy",result="verified",reason=""\} 1$/m,
     'status: Prometheus text');

my $status = read_status(servroot() . '/out/status.yaml');
for my $policy (qw(dev-tls old-tls renamed-tls)) {
    my $conds = join ' ', @{$status->{"BackendTLSPolicy ns/$policy"}};
    like($conds, qr{ns/strict: Accepted=False/InsecureVerificationNotAllowed}, "$policy: refused under the strict Gateway");
    like($conds, qr{ns/lab: Accepted=True/Accepted}, "$policy: accepted under the lab Gateway");
}
like(join(' ', @{$status->{"BackendTLSPolicy ns/pinned-tls"}}), qr{ns/strict: Accepted=True/Accepted},
     'a pinned Standard policy is accepted under the strict Gateway');
my $gateways = slurp(servroot() . '/out/status.yaml');
like($gateways, qr/name: lab\n(?:.*\n)*?\s+- type: InsecureBackendValidationMode\n\s+status: "True"\n\s+reason: ConfigurationChanged/,
     'the lab Gateway says insecure verification is allowed');

my $conf = slurp(servroot() . '/out/http.conf');
like($conf, qr/proxy_ssl_verify_mode skip;/, 'skip is written for the lab Gateway');
my $out = servroot() . '/out';
my $nginx = nginx_binary();
my $audit = `$nginx -t -p $out/ -c nginx.conf 2>&1`;
like($audit, qr/\[warn\] .*insecure backend verification "proxy_ssl_verify_mode skip" for policy "ns\/dev-tls" in \S+http\.conf:\d+/,
     'nginx -t prints the audit line for each insecure policy, with file:line');

stop_served();
