# gateway2nginx run --kubeconfig --routes table --spare-backends 3
# (issue 55): once a spare holds a backend new to nginx, route changes
# are still applied alone (resolving only the routes of the hostnames
# they touch), with no reload, those of other routes and those of the
# route that names the held backend, which the spare keeps serving. A
# route to a plaintext Service new to nginx is applied alone too: its
# backend put in a free plaintext spare's place, whose servers then
# follow the Service's EndpointSlice. So are Service changes (the routes
# naming them resolved again): a new application's Service, made before
# its route or after it, and a Service's appProtocol changed; one a
# BackendTLSPolicy reads goes the whole way, with no reload. And
# ReferenceGrant changes: a route of another namespace served once one
# allows it, refused once it is gone. A BackendTLSPolicy made for a Service
# whose backend nginx runs in plaintext: applied alone, the backend, TLS
# now, in a TLS spare's place; that policy's hostname changed, pushed to
# the spare.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

if (my $why = kubectl_missing()) {
    plan skip_all => $why;
}
plan 'no_plan';
setup();
my $dir = servroot();
my $backend_port = server_port() + 1;
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $kube_port = server_port() + 21;
my $health_port = server_port() + 17;
my $plain_port = server_port() + 23;

start_numbered_backends(2, $backend_port);
start_slow_backend('127.0.0.1', $plain_port, "$dir/accepted");  # plaintext: "fast"
start_kube_api($kube_port, '--bookmark-seconds', '1');
# (routes of every namespace: team's, below)
kube_apply('base', routes_from_all_namespaces(kube_web_yaml()) . "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n");
kube_apply('slice', kube_slice_yaml($backend_port, 1));
kube_apply('a', kube_host_route_yaml('a', 'a.test', 'web', '/a'));
# Service bare: the TLS backend, with no policy yet (its route gets no 200)
kube_apply('bare', kube_tls_service_yaml('bare', 1, $backend_port) =~ s/---\n(?=apiVersion: gateway).*\z//sr);
kube_apply('b', kube_host_route_yaml('b', 'b.test', 'bare', '/b'));

my $log = "$dir/run.log";
my $out = "$dir/out";
my $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', $out, '--start-nginx', '--routes', 'table',
                    '--spare-backends', 3, '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                    '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                    '--debounce', '50', '--health-listen', "127.0.0.1:$health_port");
sub get {
    my ($host, $path) = @_;
    my ($code, $h, $body) = http_request($port, $path, $host);
    return "$code " . (($body // '') =~ /endpoint=(\S+)/ ? $1 : '-');
}
sub reloads { run_metric($health_port, qr/gateway2nginx_reloads_total\{reason="\w+"\}/) }
sub route_updates { run_metric($health_port, qr/gateway2nginx_route_updates_total/) }

ok(wait_for(sub { get('a.test', '/a') eq '200 127.0.0.1' }, 30), 'the route is served through the table')
    or diag slurp($log);
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);
my $reloads = reloads();

# a route to a Service new to nginx: the whole way, its backend held by the spare
kube_apply('other', kube_tls_service_yaml('other', 2, $backend_port));
kube_apply('e', kube_host_route_yaml('e', 'e.test', 'other', '/e'));
ok(wait_for(sub { get('e.test', '/e') eq '200 127.0.0.2' }, 30), 'a route to a Service new to nginx is served')
    or diag slurp($log);
ok(wait_for(sub { count_in($log, qr/backend backend_ns_other_443 new to nginx: held by spare gateway2nginx_spare_tls_0/) }, 5),
   'its backend is held by the spare') or diag slurp($log);
is(reloads(), $reloads, 'no reload');

# with the spare holding it, a change of another route is applied alone
my $updates = route_updates();
kube_apply('a', kube_host_route_yaml('a', 'a.test', 'web', '/a2'));
ok(wait_for(sub { get('a.test', '/a2') eq '200 127.0.0.1' && get('a.test', '/a') =~ /^404/ }, 15),
   'another route\'s rules changed: served') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone') or diag slurp($log);
kube_apply('f', kube_host_route_yaml('f', 'f.test', 'web', '/f'));
ok(wait_for(sub { get('f.test', '/f') eq '200 127.0.0.1' }, 15), 'a route on a new hostname: served') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates + 1 }, 5), 'applied alone') or diag slurp($log);
is(get('e.test', '/e'), '200 127.0.0.2', 'the held backend is served as before');

# a change of the route that names the held backend: alone, its rules naming the spare
$updates = route_updates();
kube_apply('e', kube_host_route_yaml('e', 'e.test', 'other', '/e2'));
ok(wait_for(sub { get('e.test', '/e2') eq '200 127.0.0.2' && get('e.test', '/e') =~ /^404/ }, 15),
   'the route naming the held backend changed: served by the spare') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone') or diag slurp($log);

# a route to a plaintext Service new to nginx: applied alone, in the plaintext spare's place
sub plain { my (undef, undef, $body) = http_request($port, '/p', 'p.test'); return $body // '' }
$updates = route_updates();
kube_apply('plain', plaintext_service_manifests('plain', 'http', 443, $plain_port));
kube_apply('p', kube_host_route_yaml('p', 'p.test', 'plain', '/p'));
ok(wait_for(sub { plain() eq 'fast' }, 15), 'a route to a plaintext Service new to nginx is served') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone') or diag slurp($log);
ok(count_in($log, qr/backend backend_ns_plain_443 new to nginx: held by spare gateway2nginx_spare_plain_0/),
   'its backend is held by the plaintext spare') or diag slurp($log);
# its endpoint moved to a port nothing listens on, and back: pushed to the spare
my $closed = server_port() + 24;
kube_apply('plain-slice', plaintext_service_manifests('plain', 'http', 443, $closed));
ok(wait_for(sub { (http_request($port, '/p', 'p.test'))[0] == 502 }, 15), 'its EndpointSlice changed: the spare follows it')
    or diag slurp($log);
kube_apply('plain-slice', plaintext_service_manifests('plain', 'http', 443, $plain_port));
ok(wait_for(sub { plain() eq 'fast' }, 15), 'and back') or diag slurp($log);
is(get('e.test', '/e2'), '200 127.0.0.2', 'the TLS spare serves as before');

# a new application, its Service first: no route names it, nothing is
# resolved; then its route, its backend in a free spare's place
my $app_port = server_port() + 25;
start_slow_backend('127.0.0.1', $app_port, "$dir/accepted-app");  # "fast" too
$updates = route_updates();
kube_apply('app', plaintext_service_manifests('app', 'http', 443, $app_port));
ok(wait_for(sub { route_updates() > $updates }, 15), 'a Service no route names: applied alone') or diag slurp($log);
kube_apply('q', kube_host_route_yaml('q', 'q.test', 'app', '/q'));
sub body { my (undef, undef, $body) = http_request($port, $_[1], $_[0]); return $body // '' }
ok(wait_for(sub { body('q.test', '/q') eq 'fast' }, 15), 'then its route: served')
    or diag slurp($log);
ok(wait_for(sub { count_in($log, qr/backend backend_ns_app_443 new to nginx: held by spare gateway2nginx_spare_plain_1/) }, 5),
   'its backend held by the next plaintext spare') or diag slurp($log);

# a route of another namespace to web: refused (a 500) until a
# ReferenceGrant allows it, then served, and refused again once the grant
# is gone; each grant change applied alone
kube_apply('cross', kube_host_route_yaml('cross', 'cross.test', 'web', '/c')
                    =~ s/namespace: ns\}/namespace: team}/r =~ s/\{name: gw\}/{name: gw, namespace: ns}/r
                    =~ s/\{name: web, port: 443\}/{name: web, namespace: ns, port: 443}/r);
ok(wait_for(sub { (http_request($port, '/c', 'cross.test'))[0] == 500 }, 15), 'a route of another namespace, no grant: a 500')
    or diag slurp($log);
$updates = route_updates();
kube_apply('grant', "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\n"
                    . "metadata: {name: from-team, namespace: ns}\nspec:\n"
                    . "  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: team}]\n"
                    . "  to: [{group: \"\", kind: Service}]\n");
ok(wait_for(sub { get('cross.test', '/c') eq '200 127.0.0.1' }, 15), 'a ReferenceGrant made: served') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone') or diag slurp($log);
$updates = route_updates();
my ($grc, $gout) = kubectl('delete', 'referencegrant', 'from-team', '-n', 'ns');
is($grc, 0, 'the ReferenceGrant deleted') or diag $gout;
ok(wait_for(sub { (http_request($port, '/c', 'cross.test'))[0] == 500 }, 15), 'refused again') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone') or diag slurp($log);

# its route first (no Service: a 500), then its Service: the route
# resolved again, its backend in a free spare's place
kube_apply('late-route', kube_host_route_yaml('late', 'late.test', 'late', '/n'));
ok(wait_for(sub { (http_request($port, '/n', 'late.test'))[0] == 500 }, 15), 'a route to no Service: a 500')
    or diag slurp($log);
$updates = route_updates();
kube_apply('late', plaintext_service_manifests('late', 'http', 443, $app_port));
ok(wait_for(sub { body('late.test', '/n') eq 'fast' }, 15), 'its Service made: served')
    or diag slurp($log);
ok(wait_for(sub { count_in($log, qr/backend backend_ns_late_443 new to nginx: held by spare gateway2nginx_spare_plain_2/) }, 5),
   'its backend held by a spare') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone') or diag slurp($log);

# a Service's appProtocol changed: the route naming it resolved again
$updates = route_updates();
kube_apply('plain', plaintext_service_manifests('plain', 'http', 443, $plain_port, 'kubernetes.io/ws'));
ok(wait_for(sub { route_updates() > $updates }, 15), 'a Service\'s appProtocol changed: applied alone') or diag slurp($log);
ok(wait_for(sub { plain() eq 'fast' }, 15), 'its route served') or diag slurp($log);

# one a BackendTLSPolicy reads: the whole way, said, with no reload
kube_apply('other', kube_tls_service_yaml('other', 2, $backend_port) =~ s/ports: \[\{name: https, port: 443\}\]/ports: [{name: https, port: 443}, {name: x, port: 8443}]/r);
ok(wait_for(sub { count_in($log, qr{a route change applied the whole way: Service ns/other is read by a BackendTLSPolicy}) }, 15),
   'a Service a policy reads changed: the whole way, said') or diag slurp($log);
is(get('e.test', '/e2'), '200 127.0.0.2', 'its route served as before');

# a BackendTLSPolicy made for bare, whose backend nginx runs in plaintext:
# the backend in its TLS mode held by a TLS spare, with no reload
isnt(get('b.test', '/b'), '200 127.0.0.1', 'bare without a policy: plaintext to a TLS backend, no 200');
$updates = route_updates();
kube_apply('bare-tls', kube_tls_service_yaml('bare', 1, $backend_port) =~ s/\A.*?(?=apiVersion: gateway)//sr);
ok(wait_for(sub { get('b.test', '/b') eq '200 127.0.0.1' }, 15), 'its policy made: served over TLS') or diag slurp($log);
ok(wait_for(sub { count_in($log, qr/backend backend_ns_bare_443 turns TLS on or off: held by spare gateway2nginx_spare_tls_1/) }, 5),
   'held by a TLS spare') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'the policy made: applied alone') or diag slurp($log);

# bare's policy changed while the spare holds its backend: a hostname its
# certificate lacks, then back, each applied alone, pushed to the spare
my $bare_policy = kube_tls_service_yaml('bare', 1, $backend_port) =~ s/\A.*?(?=apiVersion: gateway)//sr;
for my $change (['wrong.example.com', qr/^502 /], ['abc.example.com', qr/^200 127\.0\.0\.1$/]) {
    my ($hostname, $answer) = @$change;
    $updates = route_updates();
    kube_apply('bare-tls', $bare_policy =~ s/hostname: abc\.example\.com/hostname: $hostname/r);
    ok(wait_for(sub { get('b.test', '/b') =~ $answer }, 15), "bare's policy names $hostname: answered $answer")
        or diag slurp($log);
    ok(wait_for(sub { route_updates() > $updates }, 5), "bare's policy names $hostname: applied alone") or diag slurp($log);
}

is(reloads(), $reloads, 'no reload throughout');
is(worker_pids($master), $workers, 'the same workers throughout');

kill "TERM", $run;
waitpid($run, 0);
