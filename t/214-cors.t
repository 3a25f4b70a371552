# The CORS filter (HTTPRoute, Extended) through gateway2nginx and nginx,
# beyond what the conformance replay asks: a preflight is answered by the
# Gateway (200 with the policy, 403 and no CORS header where the Origin is
# not allowed), never reaches the backend; an allowed Origin matches as a
# browser sends it (the scheme's own port written or not, any case) and
# nothing else does (another port, the bare parent of "*.", "null", a
# longer name); the backend's own Access-Control-* headers give way to the
# filter's; a ResponseHeaderModifier may not set them beside it.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $port = serve_manifests(gateway_manifests(svc => 'leaf') . <<'YAML');
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cors, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /listed}}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["https://www.foo.com", "https://*.bar.com", "http://local.test:8080"]
        allowMethods: [GET, PUT]
        allowHeaders: [x-one]
        exposeHeaders: [x-two]
        allowCredentials: true
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /any}}]
    filters:
    - type: CORS
      cors: {allowOrigins: ["*"], exposeHeaders: ["*"]}
    backendRefs: [{name: svc, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: clash, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [clash.example.com]
  rules:
  - filters:
    - type: CORS
      cors: {allowOrigins: ["*"]}
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: Access-Control-Allow-Origin, value: "*"}]}
    backendRefs: [{name: svc, port: 443}]
YAML

sub ask {
    my ($method, $path, $origin, @headers) = @_;
    request($port, $method, $path, 'Host: app.example.com', ($origin ? "Origin: $origin" : ()), @headers);
}
my $preflight = 'Access-Control-Request-Method: PUT';

my ($status, $hdrs) = ask('OPTIONS', '/listed', 'https://www.foo.com', $preflight, 'Access-Control-Request-Headers: x-one');
is($status, 200, 'preflight from an allowed origin: 200');
is($hdrs->{'x-backend'}, undef, 'preflight: answered by the Gateway, not the backend');
is($hdrs->{'access-control-allow-origin'}, 'https://www.foo.com', 'preflight: the origin echoed');
is($hdrs->{'access-control-allow-methods'}, 'GET, PUT', 'preflight: the methods listed');
is($hdrs->{'access-control-allow-headers'}, 'x-one', 'preflight: the headers listed');
is($hdrs->{'access-control-allow-credentials'}, 'true', 'preflight: credentials allowed');
is($hdrs->{'access-control-max-age'}, '5', 'preflight: maxAge defaults to 5 seconds');
is($hdrs->{'vary'}, 'Origin', 'preflight: Vary: Origin');

for my $origin ('https://www.foo.com:443', 'HTTPS://WWW.FOO.COM', 'https://a.b.bar.com', 'http://local.test:8080') {
    ($status, $hdrs) = ask('OPTIONS', '/listed', $origin, $preflight);
    is($hdrs->{'access-control-allow-origin'}, $origin, "allowed as a browser may write it: $origin");
}
for my $origin ('https://www.foo.com:8443', 'http://www.foo.com', 'https://bar.com', 'https://evil.com/.bar.com',
                'https://www.foo.com.evil.com', 'null', 'http://local.test') {
    ($status, $hdrs) = ask('OPTIONS', '/listed', $origin, $preflight);
    is($status, 403, "preflight from $origin: 403");
    is(join(',', grep { /^access-control-/ } sort keys %$hdrs), '', "preflight from $origin: no CORS header");
    is($hdrs->{'x-backend'}, undef, "preflight from $origin: not passed to the backend");
}

($status, $hdrs) = ask('OPTIONS', '/listed', 'https://www.foo.com');
is($hdrs->{'x-backend'}, 'leaf', 'OPTIONS without Access-Control-Request-Method is no preflight: the backend answers');
($status, $hdrs) = ask('OPTIONS', '/listed', undef, $preflight);
is($hdrs->{'x-backend'}, 'leaf', 'nor is one without Origin');

($status, $hdrs) = ask('GET', '/listed', 'https://www.foo.com', 'X-Backend-Allows-Origin: https://backend.example');
is($status, 200, 'request from an allowed origin: served');
is($hdrs->{'access-control-allow-origin'}, 'https://www.foo.com',
   "the filter's Access-Control-Allow-Origin, not the backend's");
is($hdrs->{'access-control-allow-credentials'}, 'true', 'credentials allowed');
is($hdrs->{'access-control-expose-headers'}, 'x-two', 'headers exposed');
is($hdrs->{'access-control-allow-methods'}, undef, 'no preflight header on a request');
($status, $hdrs) = ask('GET', '/listed', 'https://evil.example', 'X-Backend-Allows-Origin: https://evil.example');
is($status, 200, 'request from another origin: served (the browser keeps the answer from the page)');
is(join(',', grep { /^access-control-/ } sort keys %$hdrs), '', 'no CORS header for another origin, not the backend\'s either');

($status, $hdrs) = ask('OPTIONS', '/any', 'https://anyone.example:8443', $preflight, 'Access-Control-Request-Headers: x-a, x-b');
is($hdrs->{'access-control-allow-origin'}, 'https://anyone.example:8443', '"*": any http(s) origin, echoed');
is($hdrs->{'access-control-allow-methods'}, undef, 'no allowMethods: no Access-Control-Allow-Methods');
is($hdrs->{'access-control-allow-credentials'}, undef, 'no credentials unless allowed');
($status, $hdrs) = ask('GET', '/any', 'https://anyone.example');
is($hdrs->{'access-control-expose-headers'}, '*', 'exposeHeaders "*" without credentials');
($status, $hdrs) = ask('OPTIONS', '/any', 'null', $preflight);
is($status, 403, '"*" does not take the opaque origin "null"');

($status) = request($port, 'GET', '/', 'Host: clash.example.com');
is($status, 404, 'a ResponseHeaderModifier setting an Access-Control-* header beside CORS is not served');
like(join(' ', @{read_status(servroot() . '/out/status.yaml')->{'HTTPRoute ns/clash'} || []}),
     qr{ns/gw: Accepted=False/UnsupportedValue}, 'and the route says why');

stop_served();
