# Service port appProtocol (GEP-1911) through gateway2nginx and nginx:
# kubernetes.io/ws backends get the client's WebSocket Upgrade, and only a
# WebSocket one (an Upgrade to h2c would let a client tunnel past the
# routing); other backends get none, also beside a WebSocket backend in one
# rule; kubernetes.io/h2c is not served over HTTP/1.1 (500, and the route
# says UnsupportedProtocol). Headers the route's filters name are theirs
# alone: a RequestHeaderModifier's Host is the one Host the backend sees.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $ca_ref = "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n";
sub with_protocol {
    my ($name, $backend, $protocol) = @_;
    my $yaml = service_manifests($name, $backend, $ca_ref);
    $yaml =~ s/ports: \[\{name: https, port: 443\}\]/ports: [{name: https, port: 443, appProtocol: $protocol}]/ or die;
    return $yaml;
}

my $port = serve_manifests(gateway_manifests(svc => 'wildcard')
    . with_protocol('ws', 'leaf', 'kubernetes.io/ws') . with_protocol('h2c', 'leaf', 'kubernetes.io/h2c') . <<'YAML');
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: protocols, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /ws}}]
    backendRefs: [{name: ws, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /plain}}]
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /mixed}}]
    backendRefs: [{name: ws, port: 443}, {name: svc, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /host}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: host, value: set.example.com}]}
    backendRefs: [{name: ws, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: prior-knowledge, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [h2c.example.com]
  rules:
  - backendRefs: [{name: h2c, port: 443}]
YAML

sub get { request($port, 'GET', shift, 'Host: app.example.com', @_) }
my @websocket = ('Upgrade: websocket', 'Connection: Upgrade');

my ($status, $hdrs) = get('/ws', @websocket);
is($status, 200, 'ws: served');
is($hdrs->{'x-echo-upgrade'}, 'websocket', 'ws: the WebSocket Upgrade reaches the backend');
is($hdrs->{'x-echo-connection'}, 'upgrade', 'ws: with Connection: upgrade');
($status, $hdrs) = get('/ws', 'Upgrade: WebSocket', 'Connection: Upgrade');
is($hdrs->{'x-echo-upgrade'}, 'websocket', 'ws: the token is case-insensitive');
($status, $hdrs) = get('/ws', 'Upgrade: h2c', 'Connection: Upgrade, HTTP2-Settings', 'HTTP2-Settings: AAMAAABkAAQAAP__');
is($status, 200, 'ws: an Upgrade to h2c is served as a plain request');
is($hdrs->{'x-echo-upgrade'}, undef, 'ws: an Upgrade to h2c does not reach the backend');
is($hdrs->{'x-echo-connection'}, 'close', 'ws: nor its Connection');
($status, $hdrs) = get('/ws');
is($hdrs->{'x-echo-connection'}, 'close', 'ws: a plain request closes as nginx does');

($status, $hdrs) = get('/plain', @websocket);
is($status, 200, 'plain: served');
is($hdrs->{'x-echo-upgrade'}, undef, 'plain: a backend without kubernetes.io/ws gets no Upgrade');

my %seen;
for (1 .. 40) {
    ($status, $hdrs) = get('/mixed', @websocket);
    $seen{($hdrs->{'x-backend'} // 'none') . ' upgrade=' . ($hdrs->{'x-echo-upgrade'} // '')}++;
}
is_deeply([sort keys %seen], ['leaf upgrade=websocket', 'wildcard upgrade='],
          'mixed: the Upgrade reaches the WebSocket backend of a rule, never the other')
    or diag explain \%seen;

($status, $hdrs) = get('/host');
is($status, 200, 'a Host set by RequestHeaderModifier is served (one Host, not two)');
is($hdrs->{'x-echo-host'}, 'set.example.com', 'the backend sees the Host the filter set');

($status) = request($port, 'GET', '/', 'Host: h2c.example.com');
is($status, 500, 'h2c: a backend that speaks only HTTP/2 is not sent HTTP/1.1');
like(join(' ', @{read_status(servroot() . '/out/status.yaml')->{'HTTPRoute ns/prior-knowledge'} || []}),
     qr{ns/gw: ResolvedRefs=False/UnsupportedProtocol},
     'h2c: the route says UnsupportedProtocol');

stop_served();
