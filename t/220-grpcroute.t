# GRPCRoute through gateway2nginx and nginx: service/method matches become
# gRPC paths, backends are reached with grpc_pass under the upstream's
# BackendTLSPolicy (grpc_ssl_* directives), and the listener speaks HTTP/2;
# rendered as locations, and through the module's route table.
# Calls carry no message: nginx may reset a stream it answers before
# reading the body, which curl reports as a framing error.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $manifests = gateway_manifests(echo => 'leaf_h2', wrong => 'wildcard', spiffe => 'spiffe') . <<'YAML';
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
  - matches: [{method: {service: pkg.Echo, method: Say}}]
    backendRefs: [{name: echo, port: 443}]
  - matches: [{method: {service: pkg.Other}}]
    backendRefs: [{name: spiffe, port: 443}]
  - matches:
    - method: {service: pkg.Echo, method: Say}
      headers: [{name: x-tenant, value: blue}]
    backendRefs: [{name: missing, port: 443}]
YAML

my $port;
sub grpc_call {
    my ($path, @headers) = @_;
    my $h = join ' ', map { "-H '$_'" } 'content-type: application/grpc', 'te: trailers', @headers;
    my $out = `curl -s --http2-prior-knowledge --max-time 10 -o - -w '\\n%{http_code}' -X POST $h -H 'Host: grpc.example.com' http://127.0.0.1:$port$path`;
    my @lines = split /\n/, $out;
    my $code = pop @lines;
    return ($code, join("\n", @lines));
}

for my $routes (qw(locations table)) {
    $port = serve_manifests($manifests, routes => $routes);
    note "routes: $routes";

    my ($code, $body) = grpc_call('/pkg.Echo/Say');
    is($code, 200, 'GRPCRoute: service and method reach the backend over HTTP/2 and verified TLS');
    like($body, qr{^backend=leaf_h2 sni=abc\.example\.com path=/pkg\.Echo/Say$}m, 'the backend saw the policy hostname as SNI');
    ($code, $body) = grpc_call('/pkg.Echo/Other');
    is($code, 404, 'another method of the service does not match');
    ($code) = grpc_call('/pkg.Other/Anything');
    is($code, 502, 'a service-only match reaches its backend, refused by its policy (SPIFFE-only certificate, hostname check)');
    ($code) = grpc_call('/pkg.Echo/Say', 'x-tenant: blue');
    is($code, 500, 'a header match wins over the plain rule (its backend does not exist: 500)');

    my $conf = do { local (@ARGV, $/) = (servroot() . '/out/http.conf'); <> };
    # (through the table, the one server is the listener's own: the default)
    if (nginx_version() >= 1025001) {  # the http2 directive replaces the listen parameter
        like($conf, qr/listen 127\.0\.0\.1:\d+(?: default_server)?;\n\s*http2 on;/, 'the listener speaks HTTP/2 (the http2 directive)');
        unlike($conf, qr/listen [^;]* http2/, 'no deprecated listen parameter');
    } else {  # beside HTTP/1.x: the module tells them apart (a listen parameter would take HTTP/2 alone)
        like($conf, qr/listen 127\.0\.0\.1:\d+(?: default_server)?;\n\s*gateway_tls_h2c_preface on;/, 'the listener speaks HTTP/2 (gateway_tls_h2c_preface)');
        unlike($conf, qr/listen [^;]* http2/, 'not HTTP/2 alone');
    }
    like($conf, qr/grpc_ssl_verify_mode strict;/, 'the upstream carries grpc_ssl_* directives');
    if ($routes eq 'locations') {
        like($conf, qr/grpc_pass grpcs:\/\/backend_ns_spiffe_443;/, 'grpc_pass over TLS');
        like($conf, qr/default "?grpcs:\/\/backend_ns_echo_443"?;/, 'grpc_pass over TLS behind a header match');
    } else {
        like($conf, qr/grpc_pass grpcs:\/\/gateway_tls_routes;/, 'the table passes gRPC backends over TLS');
        unlike($conf, qr/grpc_pass grpcs:\/\/backend_/, 'and no route is a location');
        like(slurp(servroot() . '/out/route-tables.json'), qr/"backend":"backend_ns_echo_443".*?"scheme":"grpcs"/,
             'the table names the backend and its scheme');
    }

    stop_served();
}
