# Service port appProtocol (GEP-1911) through gateway2nginx and nginx:
# kubernetes.io/ws backends get the client's WebSocket Upgrade, and only a
# WebSocket one (an Upgrade to h2c would let a client tunnel past the
# routing); other backends get none, also beside a WebSocket backend in one
# rule. kubernetes.io/h2c backends are sent HTTP/2 by prior knowledge (a
# backend that speaks nothing else), over TLS verified by the policy where
# one applies, also beside HTTP/1.1 backends in one rule; h2c clients are
# served on a cleartext listener beside HTTP/1.1 ones.
# Headers the route's filters name are theirs alone: a
# RequestHeaderModifier's Host is the one Host the backend sees. Rendered
# as locations, and through the module's route table.
use lib 't/lib';
use JSON::PP;
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

# an echo that speaks HTTP/2 by prior knowledge only (the suite's h2c port)
my $h2c_port = server_port() + 40;
pipe(my $h2c_ready, my $h2c_stdout) or die "pipe: $!";
my $h2c_pid = fork // die "fork: $!";
if ($h2c_pid == 0) {
    open STDOUT, '>&', $h2c_stdout or die;
    exec '/usr/bin/python3', 't/lib/h2c-echo.py', "$h2c_port=ns/h2c-pod" or die "exec: $!";
}
close $h2c_stdout;
is(scalar <$h2c_ready>, "ready\n", 'the h2c echo listens');
END { kill 'TERM', $h2c_pid if $h2c_pid }

my $ca_ref = "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n";
sub with_protocol {
    my ($name, $backend, $protocol) = @_;
    my $yaml = service_manifests($name, $backend, $ca_ref);
    $yaml =~ s/ports: \[\{name: https, port: 443\}\]/ports: [{name: https, port: 443, appProtocol: $protocol}]/ or die;
    return $yaml;
}

my $manifests = (gateway_manifests(svc => 'wildcard')
    . with_protocol('ws', 'leaf', 'kubernetes.io/ws') . with_protocol('h2tls', 'leaf_h2', 'kubernetes.io/h2c')
    . with_protocol('h2wrongsan', 'wrongsan', 'kubernetes.io/h2c')
    . plaintext_service_manifests('h2c', 'h2c', 81, $h2c_port, 'kubernetes.io/h2c') . <<'YAML');
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
  - backendRefs: [{name: h2c, port: 81}]
  - matches: [{path: {value: /mixed}}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-set, value: both}]}}]
    backendRefs: [{name: h2c, port: 81}, {name: svc, port: 443}]
  - matches: [{path: {value: /tls}}]
    backendRefs: [{name: h2tls, port: 443}]
  - matches: [{path: {value: /wrongsan}}]
    backendRefs: [{name: h2wrongsan, port: 443}]
YAML

my $port;
sub get { request($port, 'GET', shift, 'Host: app.example.com', @_) }
my @websocket = ('Upgrade: websocket', 'Connection: Upgrade');

for my $routes (qw(locations table)) {
    $port = serve_manifests($manifests, routes => $routes);
    note "routes: $routes";

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

    # kubernetes.io/h2c: an HTTP/1.1 client's request reaches the backend as
    # HTTP/2, the client's Host its :authority
    my $body;
    ($status, $hdrs, $body) = request($port, 'GET', '/a?b=1', 'Host: h2c.example.com');
    is($status, 200, 'h2c: served to an HTTP/1.1 client');
    my $echo = eval { decode_json($body) } || {};
    is($echo->{proto}, 'HTTP/2.0', 'h2c: the backend is sent HTTP/2 by prior knowledge');
    is($echo->{host}, 'h2c.example.com', "h2c: with the client's Host as :authority");
    is($echo->{path}, '/a?b=1', 'h2c: and its path and query');
    like(join(' ', @{read_status(servroot() . '/out/status.yaml')->{'HTTPRoute ns/prior-knowledge'} || []}),
         qr{ns/gw: Accepted=True/Accepted ns/gw: ResolvedRefs=True/ResolvedRefs$}, 'h2c: the route is Accepted with its refs resolved');

    # beside an HTTP/1.1 backend in one rule: each by its own protocol, the
    # filter's header to both
    %seen = ();
    for (1 .. 40) {
        ($status, $hdrs, $body) = request($port, 'GET', '/mixed', 'Host: h2c.example.com');
        my $e = eval { decode_json($body) };
        $seen{$e ? "h2c proto=$e->{proto} x-set=" . join(',', @{$e->{headers}{'X-Set'} || []})
                  : "$status " . ($hdrs->{'x-backend'} // 'none') . ' x-set=' . ($hdrs->{'x-echo-set'} // '')}++;
    }
    is_deeply([sort keys %seen], ['200 wildcard x-set=both', 'h2c proto=HTTP/2.0 x-set=both'],
              'h2c beside HTTP/1.1: each backend gets its own protocol')
        or diag explain \%seen;

    # over TLS where a BackendTLSPolicy applies: verified as any backend
    ($status, $hdrs) = request($port, 'GET', '/tls', 'Host: h2c.example.com');
    is($status, 200, 'h2c with a policy: served over TLS');
    is($hdrs->{'x-backend'}, 'leaf_h2', 'h2c with a policy: by the verified backend');
    ($status) = request($port, 'GET', '/wrongsan', 'Host: h2c.example.com');
    is($status, 502, 'h2c with a policy: a backend whose certificate does not match is refused');

    # the client side of h2c: HTTP/2 by prior knowledge on the cleartext
    # listener, beside HTTP/1.1 (nginx tells them apart from 1.25.1, the
    # module's gateway_tls_h2c_preface before)
    my $h2 = `curl -s --max-time 10 --http2-prior-knowledge --connect-to h2c.example.com:$port:127.0.0.1:$port -w '\n%{http_version} %{http_code}' http://h2c.example.com:$port/prior`;
    like($h2, qr{"proto": "HTTP/2\.0".*\n2 200\z}s, 'h2c: a client by prior knowledge is served');
    ($status) = request($port, 'GET', '/prior', 'Host: h2c.example.com');
    is($status, 200, 'h2c: HTTP/1.1 clients of the same listener still served');

    stop_served();
}
