# Replays, locally, the Gateway API conformance tests for client
# certificates: GEP-91 frontend validation (GatewayFrontendClientCertificate-
# Validation, ...InsecureFallback, GatewayInvalidFrontendClientCertificate-
# Validation, GatewayFrontendInvalidDefaultClientCertificateValidation) and
# GEP-3155 (GatewayTLSBackendClientCertificate,
# GatewayInvalidTLSBackendConfiguration; feature GatewayBackendClientCertificate,
# which older sources of the suite name GatewayTLSBackendClientCertificate),
# with the suite's manifests.
#
# Certificates: the default port's clients are signed by "ca" (client
# "leaf"), the per-port ones by "unrelated-ca" (client "untrusted"); the
# listener certificate is "leaf". infra-backend-v1/v2 are a cleartext
# backend; tls-backend-with-client-cert-validation is "mtls", which reports
# the fingerprint of the client certificate it got.
use lib 't/lib';
use Test::ConformanceReport;
use Test::GatewayTLS;
use Test::More;

my ($shared, $manifests) = conformance_begin();
my $certs = certs_dir();
my $dir = servroot();

my @tests = qw(gateway-with-clientcertificate-validation gateway-with-clientcertificate-validation-insecure-fallback
               gateway-with-invalid-clientcertificate-validation
               gateway-invalid-default-frontend-client-certificate-validation
               gateway-tls-backend-client-certificate gateway-invalid-tls-backend-configuration);
conformance_manifests($shared, $manifests, @tests);

sub ca_configmap {
    my ($name, $cert) = @_;
    (my $pem = slurp("$certs/$cert")) =~ s/^/    /mg;
    return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: $name\n  namespace: gateway-conformance-infra\n"
         . "data:\n  ca.crt: |\n$pem";
}

sub endpoints {
    my ($service, $port_name, $backend) = @_;
    return "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n"
         . "  name: $service-local\n  namespace: gateway-conformance-infra\n"
         . "  labels:\n    kubernetes.io/service-name: $service\naddressType: IPv4\n"
         . "ports:\n- name: \"$port_name\"\n  port: @{[backend_port($backend)]}\n"
         . "endpoints:\n- addresses: [\"127.0.0.1\"]\n  conditions: {ready: true}\n";
}

my $setup = conformance_setup();
$setup .= tls_secret_yaml('tls-validity-checks-certificate', 'leaf');
$setup .= tls_secret_yaml('tls-checks-client-certificate', 'wildcard');
$setup .= ca_configmap('tls-validity-checks-ca-certificate', 'ca.crt');
$setup .= ca_configmap('tls-validity-checks-per-port-ca-certificate', 'unrelated-ca.crt');
$setup .= endpoints('infra-backend-v1', 'first-port', 'plain');
$setup .= endpoints('infra-backend-v2', '', 'plain');
$setup .= endpoints('tls-backend-with-client-cert-validation', 'https', 'mtls');
spit("$manifests/20-suite-setup.yaml", $setup);

# Beyond the suite, GEP-4078: the default validation narrowed to one pinned
# client key (the "leaf" client's) among all the CA signs.
(my $leaf_spki = spki_pin('leaf')) =~ s/^sha256-spki://;
spit("$manifests/30-pinned.yaml", <<"YAML");
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: client-validation-pinned
  namespace: gateway-conformance-infra
spec:
  gatewayClassName: gateway2nginx
  tls:
    frontend:
      default:
        validation:
          caCertificateRefs:
          - {group: "", kind: ConfigMap, name: tls-validity-checks-ca-certificate}
          trustedCertificateHashes:
          - {type: SPKI, algorithm: SHA256, value: "$leaf_spki"}
  listeners:
  - name: https
    port: 443
    protocol: HTTPS
    tls:
      certificateRefs: [{name: tls-validity-checks-certificate}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: client-validation-pinned
  namespace: gateway-conformance-infra
spec:
  parentRefs: [{name: client-validation-pinned}]
  rules: [{backendRefs: [{name: infra-backend-v1, port: 8080}]}]
YAML

my $offset = server_port() + 30 - 443;  # 443 -> base+30, 8443 -> base+8030, 80 -> base-333
start_backends();

sub serve_gateway { serve_conformance_gateway($manifests, $_[0], $offset, $_[1]) }
sub conditions { conformance_conditions(@_) }

# A refused client: the TLS handshake fails (ssl_verify_client_handshake),
# so no HTTP status at all and the backend is never reached.
sub refused {
    my ($code, $body) = @_;
    return $code == 0 && $body !~ /backend=/;
}

# GET / over TLS to the listener PORT with SNI NAME, with the client
# certificate CLIENT (or none) and a Host header HOST (default: NAME);
# returns the HTTP status (0: the TLS handshake failed) and body.
# (status, body, HTTP version): HTTP/2 where the port offers it (every TLS
# port does), as a client would
sub https_get {
    my ($port, $name, $client, $host) = @_;
    my $p = $port + $offset;
    my $cert = $client ? "--cert $certs/$client.crt --key $certs/$client.key" : '';
    my $header = $host ? "-H 'Host: $host'" : '';
    my $out = `curl -sk --http2 --max-time 10 $cert $header --resolve $name:$p:127.0.0.1 -w '\\n%{http_version} %{http_code}' https://$name:$p/ 2>/dev/null`;
    my ($body, $version, $code) = $out =~ /^(.*)\n(\S+) (\d+)$/s;
    return (($code // 0) + 0, $body // "", $version // '');
}

sub listener_like {
    my ($c, $listener, $re, $label) = @_;
    like($c, qr/^listener \Q$listener\E: $re$/m, $label);
}

# ---- GatewayFrontendClientCertificateValidation ----------------------------
conformance_test 'GatewayFrontendClientCertificateValidation', [qw(Gateway HTTPRoute GatewayFrontendClientCertificateValidation)],
                 ['gateway-with-clientcertificate-validation'], sub {
    my $gw = 'client-validation-default';
    my $st = serve_gateway($gw, 443);
    for my $route (qw(client-certificate-validation-https-test client-certificate-validation-https-test-no-hostname)) {
        like(conditions($st, 'HTTPRoute', $route), qr/: Accepted=True\/Accepted$/m, "ClientCertificateValidation: $route Accepted");
    }
    my ($code, $body) = https_get(443, 'example.org', 'leaf');
    is($code, 200, 'ClientCertificateValidation: default port, a client of the default CA passes');
    like($body, qr/^backend=plain host=example\.org/, 'ClientCertificateValidation: ...and reaches infra-backend-v1');
    ok(refused(https_get(443, 'example.org', 'untrusted')),
       'ClientCertificateValidation: default port, the per-port client is refused');
    ok(refused(https_get(443, 'example.org')), 'ClientCertificateValidation: default port, no client certificate is refused');
    is((https_get(8443, 'second-example.org', 'untrusted'))[0], 200,
       'ClientCertificateValidation: per port, the per-port client passes');
    ok(refused(https_get(8443, 'second-example.org', 'leaf')),
       'ClientCertificateValidation: per port, the default client is refused');
    like(slurp("$dir/out-$gw/http.conf"),
         qr/ssl_verify_client on;\n\s+ssl_verify_client_handshake on;\n\s+ssl_client_certificate certs\/ca-\w+\.pem;/,
         'ClientCertificateValidation: rendered as ssl_verify_client on, refused in the handshake, with the CA bundle');
    like(slurp("$dir/out-$gw/logs/error.log"), qr/client certificate rejected: pins "client\@[^"]+", reason "chain"/,
         'ClientCertificateValidation: the refusal is logged');
};

# ---- GatewayFrontendClientCertificateValidationInsecureFallback ------------
conformance_test 'GatewayFrontendClientCertificateValidationInsecureFallback', [qw(Gateway HTTPRoute GatewayFrontendClientCertificateValidation GatewayFrontendClientCertificateValidationInsecureFallback)],
                 ['gateway-with-clientcertificate-validation-insecure-fallback'], sub {
    my $gw = 'client-validation-insecure-fallback';
    my $st = serve_gateway($gw, 443);
    like(conditions($st, 'Gateway', $gw), qr/^: InsecureFrontendValidationMode=True\/ConfigurationChanged$/m,
         'InsecureFallback: the Gateway says InsecureFrontendValidationMode=True/ConfigurationChanged');
    # twinsigned: issued by another CA of the trusted CA's name, a signature
    # failure that nginx's optional_no_ca alone answers with 400
    for my $case ([443, 'example.org', 'leaf'], [443, 'example.org', 'untrusted'], [443, 'example.org', undef],
                  [443, 'example.org', 'twinsigned'],
                  [8443, 'second-example.org', 'untrusted'], [8443, 'second-example.org', 'leaf'],
                  [8443, 'second-example.org', undef]) {
        my ($port, $host, $client) = @$case;
        is((https_get($port, $host, $client))[0], 200,
           "InsecureFallback: port $port with " . ($client // 'no') . " client certificate passes");
    }
};

# ---- GatewayInvalidFrontendClientCertificateValidation ---------------------
conformance_test 'GatewayInvalidFrontendClientCertificateValidation', [qw(Gateway HTTPRoute ReferenceGrant GatewayFrontendClientCertificateValidation)],
                 ['gateway-with-invalid-clientcertificate-validation'], sub {
    my $gw = 'gateway-with-invalid-client-cert-validation';
    my $c = conditions(serve_gateway($gw), 'Gateway', $gw);  # status only: its route names another Gateway
    listener_like($c, 'https', 'ResolvedRefs=True/ResolvedRefs', 'InvalidClientCertificateValidation: https resolves');
    listener_like($c, 'https', 'Accepted=True/Accepted', 'InvalidClientCertificateValidation: https Accepted');
    listener_like($c, 'https', 'Programmed=True/Programmed', 'InvalidClientCertificateValidation: https Programmed');
    for my $case (['https-unresolved', 'InvalidCACertificateRef'], ['https-invalid-kind', 'InvalidCACertificateKind'],
                  ['https-grant-missing', 'RefNotPermitted']) {
        my ($listener, $reason) = @$case;
        listener_like($c, $listener, "ResolvedRefs=False/$reason", "InvalidClientCertificateValidation: $listener $reason");
        listener_like($c, $listener, 'Accepted=False/NoValidCACertificate',
                      "InvalidClientCertificateValidation: $listener Accepted=False/NoValidCACertificate");
        listener_like($c, $listener, 'Programmed=False/\w+', "InvalidClientCertificateValidation: $listener not Programmed");
    }
    unlike(slurp("$dir/out-$gw/http.conf"), qr/listen 127\.0\.0\.1:@{[7443 + $offset]}/,
           'InvalidClientCertificateValidation: an invalid listener is not served');
};

# ---- GatewayFrontendInvalidDefaultClientCertificateValidation --------------
conformance_test 'GatewayFrontendInvalidDefaultClientCertificateValidation', [qw(Gateway HTTPRoute GatewayFrontendClientCertificateValidation)],
                 ['gateway-invalid-default-frontend-client-certificate-validation'], sub {
    my $gw = 'invalid-default-client-validation-config';
    my $c = conditions(serve_gateway($gw, 80), 'Gateway', $gw);
    listener_like($c, 'http', 'Accepted=True/Accepted', 'InvalidDefault: the HTTP listener is untouched');
    listener_like($c, 'http', 'ResolvedRefs=True/ResolvedRefs', 'InvalidDefault: the HTTP listener resolves');
    listener_like($c, 'https', 'ResolvedRefs=False/InvalidCACertificateRef', 'InvalidDefault: https InvalidCACertificateRef');
    listener_like($c, 'https', 'Accepted=False/NoValidCACertificate', 'InvalidDefault: https NoValidCACertificate');
    my ($status) = http_request(80 + $offset, '/', 'example.org');
    is($status, 200, 'InvalidDefault: HTTP traffic passes');
    is((https_get(443, 'example.org', 'leaf'))[0], 0, 'InvalidDefault: HTTPS traffic fails');
};

# ---- GEP-4078 pins on top of the CA (not in the suite) ---------------------
{
    my $gw = 'client-validation-pinned';
    serve_gateway($gw, 443);
    is((https_get(443, 'example.org', 'leaf'))[0], 200, 'Pinned: the pinned client of the CA passes');
    is((https_get(443, 'example.org', 'wildcard'))[0], 0,
       'Pinned: another client of the same CA fails the TLS handshake (its key is not pinned)');
    like(slurp("$dir/out-$gw/logs/error.log"), qr/client certificate rejected: pins "client\@[^"]+", reason "pin"/,
         'Pinned: the refusal is logged');
}

# ---- GatewayTLSBackendClientCertificate ------------------------------------
conformance_test 'GatewayTLSBackendClientCertificate', [qw(Gateway HTTPRoute BackendTLSPolicy GatewayBackendClientCertificate)],
                 ['gateway-tls-backend-client-certificate'], sub {
    my $gw = 'gateway-tls-backend-client-certificate';
    my $st = serve_gateway($gw, 80);
    my ($status, undef, $body) = http_request(80 + $offset, '/', 'abc.example.com');
    is($status, 200, 'TLSBackendClientCertificate: 200 through the BackendTLSPolicy');
    my $fingerprint = lc `openssl x509 -in $certs/wildcard.leaf.crt -noout -fingerprint -sha1`;
    $fingerprint =~ s/.*=//s;
    $fingerprint =~ s/[:\s]//g;
    like($body, qr/^backend=mtls sni=abc\.example\.com client_verify=SUCCESS client_fingerprint=\Q$fingerprint\E$/m,
         'TLSBackendClientCertificate: the backend saw exactly the configured client certificate');
    unlike(conditions($st, 'Gateway', $gw), qr/ResolvedRefs=False/, 'TLSBackendClientCertificate: the Gateway resolves');
};

# ---- GatewayInvalidTLSBackendConfiguration ---------------------------------
conformance_test 'GatewayInvalidTLSBackendConfiguration', [qw(Gateway HTTPRoute BackendTLSPolicy GatewayBackendClientCertificate)],
                 ['gateway-invalid-tls-backend-configuration'], sub {
for my $case (['gateway-client-certificate-nonexistent-secret', 'InvalidClientCertificateRef'],
              ['gateway-client-certificate-unsupported-group', 'InvalidClientCertificateRef'],
              ['gateway-client-certificate-unsupported-kind', 'InvalidClientCertificateRef'],
              ['gateway-client-certificate-malformed-secret', 'InvalidClientCertificateRef'],
              ['gateway-client-certificate-missing-reference-grant', 'RefNotPermitted']) {
    my ($gw, $reason) = @$case;
    my $c = conditions(serve_gateway($gw), 'Gateway', $gw);
    like($c, qr/^: ResolvedRefs=False\/$reason$/m, "InvalidTLSBackendConfiguration: $gw ResolvedRefs=False/$reason");
    like($c, qr/^: Accepted=True\/Accepted$/m, "InvalidTLSBackendConfiguration: $gw stays Accepted");
}
};

# ---- GEP-4078 pins on one listener, beside a listener without validation ---
# The listener without a hostname is the port's default server: a client
# sending no SNI or an unknown one completes the handshake there, no
# certificate asked. Naming the pinned listener's hostname in Host must not
# reach its routes (421), while the pinned client, by SNI, does.
{
    my $gw = 'client-pins-beside-default';
    (my $selfsigned_spki = spki_pin('selfsigned')) =~ s/^sha256-spki://;
    spit("$manifests/40-pins-beside-default.yaml", <<"YAML");
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: $gw, namespace: gateway-conformance-infra}
spec:
  gatewayClassName: gateway2nginx
  listeners:
  - name: pinned
    port: 443
    protocol: HTTPS
    hostname: pinned.example.org
    tls:
      certificateRefs: [{name: tls-validity-checks-certificate}]
      options: {gateway2nginx.io/client-certificate-pins: "SPKI:$selfsigned_spki"}
  - name: open
    port: 443
    protocol: HTTPS
    tls:
      certificateRefs: [{name: tls-validity-checks-certificate}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: $gw, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: $gw}]
  rules: [{backendRefs: [{name: infra-backend-v1, port: 8080}]}]
YAML
    serve_gateway($gw, 443);
    my ($code, $body) = https_get(443, 'pinned.example.org', 'selfsigned');
    is($code, 200, 'pins beside a default listener: the pinned client, by SNI, is served');
    like($body, qr/^backend=plain host=pinned\.example\.org/, '... by the route');
    is(join(' ', (https_get(443, 'other.example.org', undef, 'pinned.example.org'))[0, 2]), '421 2',
       'pins beside a default listener: an unknown SNI with the pinned Host gets 421 over HTTP/2, not the pinned routes');
    is((https_get(443, 'other.example.org'))[0], 200,
       'pins beside a default listener: the open listener serves its own hostnames');
    ok(refused(https_get(443, 'pinned.example.org')),
       'pins beside a default listener: the pinned SNI without a certificate is refused in the handshake');
}

# ---- HTTPRouteHTTPSListener's unknown SNI, beside a pinned listener ---------
# With no listener for every hostname, an unknown SNI still completes a
# handshake (the port's first certificate) and gets 404; naming the pinned
# hostname in Host from there gets 421, never the pinned routes.
{
    my $gw = 'client-pins-alone';
    (my $selfsigned_spki = spki_pin('selfsigned')) =~ s/^sha256-spki://;
    spit("$manifests/41-pins-alone.yaml", <<"YAML");
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: $gw, namespace: gateway-conformance-infra}
spec:
  gatewayClassName: gateway2nginx
  listeners:
  - name: pinned
    port: 443
    protocol: HTTPS
    hostname: pinned.example.org
    tls:
      certificateRefs: [{name: tls-validity-checks-certificate}]
      options: {gateway2nginx.io/client-certificate-pins: "SPKI:$selfsigned_spki"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: $gw, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: $gw}]
  rules: [{backendRefs: [{name: infra-backend-v1, port: 8080}]}]
YAML
    serve_gateway($gw, 443);
    is((https_get(443, 'unknown-example.org'))[0], 404,
       'HTTPS listener: an unknown SNI completes the handshake and gets 404');
    is(join(' ', (https_get(443, 'unknown-example.org', undef, 'pinned.example.org'))[0, 2]), '421 2',
       'HTTPS listener: ...and naming the pinned hostname from there gets 421 over HTTP/2');
    is(join(' ', (https_get(443, 'pinned.example.org', 'selfsigned'))[0, 2]), '200 2',
       'HTTPS listener: the pinned client is served, over HTTP/2');
}

stop_conformance_gateway();
stop_backends();
