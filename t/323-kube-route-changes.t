# gateway2nginx run --kubeconfig --routes table (issue 55): HTTPRoute
# changes written with kubectl are applied alone, by resolving only the
# routes of the hostnames they touch (gateway2nginx_route_updates_total):
# a route's rules changed, a route added on a hostname new to its
# listener, its hostname moved, the route deleted; each pushed to the
# route table with no reload (the same workers, a kept-alive connection
# answered throughout), its status and the listener's attachedRoutes
# written back. A route to a Service no route used before goes the whole
# way (said, with why) and reloads, the reason counted; deleting the last
# route to a Service of no BackendTLSPolicy is applied alone; so is a
# change of a BackendTLSPolicy's hostname (its names pushed, its status
# written).
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use IO::Socket::INET;

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

kube_apply('base', kube_web_yaml());
kube_apply('slice', kube_slice_yaml($backend_port, 1));
kube_apply('a', kube_host_route_yaml('a', 'a.test', 'web', '/a'));
kube_apply('b', kube_host_route_yaml('b', 'b.test', 'web', '/b'));

my $log = "$dir/run.log";
my $out = "$dir/out";
my $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', $out, '--start-nginx', '--routes', 'table',
                    '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                    '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                    '--debounce', '50', '--health-listen', "127.0.0.1:$health_port");
sub count_in_log { count_in($log, shift) }
sub get {
    my ($host, $path) = @_;
    my ($code, $h, $body) = http_request($port, $path, $host);
    return "$code " . (($body // '') =~ /endpoint=(\S+)/ ? $1 : '-');
}
sub metric { run_metric($health_port, shift) }
sub reloads { metric(qr/gateway2nginx_reloads_total\{reason="\w+"\}/) }
sub route_updates { metric(qr/gateway2nginx_route_updates_total/) }
sub jsonpath { my ($rc, $o) = kubectl('get', @_); return $rc == 0 ? $o : "(kubectl: $o)" }
sub attached { jsonpath('gateway', 'gw', '-n', 'ns', '-o', 'jsonpath={.status.listeners[0].attachedRoutes}') }
sub route_status {
    my ($name) = @_;
    jsonpath('httproute', $name, '-n', 'ns', '-o',
             'jsonpath={.metadata.generation} {.status.parents[0].conditions[?(@.type=="Accepted")].status} '
             . '{.status.parents[0].conditions[?(@.type=="Accepted")].observedGeneration}');
}

ok(wait_for(sub { get('a.test', '/a') eq '200 127.0.0.1' }, 30), 'the routes are served through the table')
    or diag slurp($log);
ok(wait_for(sub { attached() eq '2' }, 15), 'the listener counts both routes') or diag attached();
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);
my $reloads = reloads();
my $kept = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 5) or die "connect: $!";
is(ask_kept_alive($kept, $kept, 'b.test', '/b'), '200 -', 'a kept-alive connection is answered');

# each route change: applied alone, pushed, no reload, its status written
my @changes = (
    ['a route\'s rules changed', 'a', kube_host_route_yaml('a', 'a.test', 'web', '/a2'),
     sub { get('a.test', '/a2') eq '200 127.0.0.1' && get('a.test', '/a') =~ /^404/ }, '2'],
    ['a route added on a hostname new to the listener', 'c', kube_host_route_yaml('c', 'c.test', 'web', '/c'),
     sub { get('c.test', '/c') eq '200 127.0.0.1' }, '3'],
    ['its hostname moved', 'c', kube_host_route_yaml('c', 'd.test', 'web', '/c'),
     sub { get('d.test', '/c') eq '200 127.0.0.1' && get('c.test', '/c') =~ /^404/ }, '3'],
);
for my $change (@changes) {
    my ($what, $name, $yaml, $served, $count) = @$change;
    my $updates = route_updates();
    kube_apply($name, $yaml);
    ok(wait_for($served, 15), "$what: served") or diag slurp($log);
    ok(wait_for(sub { route_updates() > $updates }, 5), "$what: applied alone") or diag slurp($log);
    is(reloads(), $reloads, "$what: no reload");
    is(worker_pids($master), $workers, "$what: the same workers");
    my $generation = (split ' ', route_status($name))[0];
    ok(wait_for(sub { route_status($name) eq "$generation True $generation" }, 15), "$what: its status, at its generation")
        or diag route_status($name);
    ok(wait_for(sub { attached() eq $count }, 15), "$what: attachedRoutes $count") or diag attached();
    # asked after each change: nginx's keepalive_timeout (75 s) never
    # outlasts the gap, however slow the machine makes the changes
    is(ask_kept_alive($kept, $kept, 'b.test', '/b'), '200 -', "$what: the connection kept alive answers");
}
like(slurp($log), qr/routes of 1 hostname\(s\) pushed to nginx, no reload/, 'the log says what was pushed');

my $updates = route_updates();
my ($rc, $said) = kubectl('delete', 'httproute', 'c', '-n', 'ns');
is($rc, 0, 'kubectl delete httproute c') or diag $said;
ok(wait_for(sub { get('d.test', '/c') =~ /^404/ }, 15), 'a route deleted: no longer served');
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone');
is(reloads(), $reloads, 'no reload');
ok(wait_for(sub { attached() eq '2' }, 15), 'the listener counts the routes left') or diag attached();
is(ask_kept_alive($kept, $kept, 'a.test', '/a2'), '200 -', 'the connection kept alive since before the changes is answered');
is(worker_pids($master), $workers, 'the same workers throughout');

# a Service no route used, of a BackendTLSPolicy (whose ancestors change):
# the whole way, a reload for the new backend (no spares)
kube_apply('other', kube_tls_service_yaml('other', 2, $backend_port));
kube_apply('e', kube_host_route_yaml('e', 'e.test', 'other', '/e'));
ok(wait_for(sub { get('e.test', '/e') eq '200 127.0.0.2' }, 30), 'a route to a Service new to nginx is served')
    or diag slurp($log);
ok(count_in_log(qr{a route change applied the whole way: it changes which Gateways reach ns/other:https}),
   'applied the whole way, said with why') or diag slurp($log);
ok(wait_for(sub { metric(qr/gateway2nginx_reloads_total\{reason="backends"\}/) >= 1 }, 10), 'a reload counted for the backend')
    or diag `curl -s http://127.0.0.1:$health_port/metrics`;
is(get('a.test', '/a2'), '200 127.0.0.1', 'the other routes are served as before');

# the last route to a Service of no policy deleted: applied alone (no
# policy's ancestors change), its backend kept until a reload
kube_apply('plain', plaintext_service_manifests('plain', 'http', 443, $plain_port)
                    . "---\n" . kube_host_route_yaml('p', 'p.test', 'plain', '/p'));
ok(wait_for(sub { ((http_request($port, '/p', 'p.test'))[2] // '') eq 'fast' }, 30),
   'a route to a plaintext Service is served') or diag slurp($log);
$reloads = reloads();
$workers = worker_pids($master);
$updates = route_updates();
($rc, $said) = kubectl('delete', 'httproute', 'p', '-n', 'ns');
is($rc, 0, 'kubectl delete httproute p') or diag $said;
ok(wait_for(sub { get('p.test', '/p') =~ /^404/ }, 15), 'the last route to the Service deleted: no longer served');
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone') or diag slurp($log);
is(reloads(), $reloads, 'no reload');
is(worker_pids($master), $workers, 'the same workers');
is(get('a.test', '/a2'), '200 127.0.0.1', 'the other routes are served as before');

# web's BackendTLSPolicy changed: a hostname its backend's certificate
# lacks (verification fails), then back: each applied alone, its trust and
# names pushed to the upstream nginx runs, its status written
sub policy_status {
    jsonpath('backendtlspolicy', 'web-tls', '-n', 'ns', '-o',
             'jsonpath={.metadata.generation} {.status.ancestors[0].conditions[?(@.type=="Accepted")].status} '
             . '{.status.ancestors[0].conditions[?(@.type=="Accepted")].observedGeneration}');
}
my $web_policy = kube_web_yaml() =~ s/\A.*(?=apiVersion: gateway.networking.k8s.io\/v1\nkind: BackendTLSPolicy)//sr;
for my $change (['wrong.example.com', qr/^502 /], ['abc.example.com', qr/^200 127\.0\.0\.1$/]) {
    my ($hostname, $answer) = @$change;
    $updates = route_updates();
    kube_apply('web-tls', $web_policy =~ s/hostname: abc\.example\.com/hostname: $hostname/r);
    ok(wait_for(sub { get('a.test', '/a2') =~ $answer }, 15), "web's policy names $hostname: answered $answer")
        or diag slurp($log);
    ok(wait_for(sub { route_updates() > $updates }, 5), "web's policy names $hostname: applied alone") or diag slurp($log);
    is(reloads(), $reloads, "web's policy names $hostname: no reload");
    my $generation = (split ' ', policy_status())[0];
    ok(wait_for(sub { policy_status() eq "$generation True $generation" }, 15),
       "web's policy names $hostname: its status, at its generation") or diag policy_status();
}
is(worker_pids($master), $workers, 'the same workers');

# web's policy to a CA ConfigMap new with it, applied together (as a
# trust bundle and its policy are): a ConfigMap the plan did not read is
# held as a digest until wanted; fetched as the change is met, the whole
# way resolves once, not once more after fetching it
my $ca = do { local (@ARGV, $/) = (certs_dir() . '/ca.crt'); <> } =~ s/^/    /mgr;
my $fetched = count_in_log(qr/newly referred to were fetched/);
my $own_ca = count_in_log(qr/a route change applied the whole way: it refers to ConfigMap ns\/web-ca, which the plan does not read/);
kube_apply('web-ca', "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-ca, namespace: ns}\ndata:\n  ca.crt: |\n$ca\n---\n"
                     . ($web_policy =~ s/name: ca\}/name: web-ca}/r =~ s/hostname: abc\.example\.com/hostname: wrong.example.com/r));
ok(wait_for(sub { get('a.test', '/a2') =~ /^502 / }, 15), "web's policy to ConfigMap web-ca (and a hostname its backend lacks): 502")
    or diag slurp($log);
ok(wait_for(sub { count_in_log(qr/a route change applied the whole way: it refers to ConfigMap ns\/web-ca, which the plan does not read/) > $own_ca }, 5),
   'the whole way, said with why') or diag slurp($log);
is(count_in_log(qr/newly referred to were fetched/), $fetched, 'the ConfigMap fetched before it: resolved once')
    or diag slurp($log);
kube_apply('web-tls', $web_policy =~ s/name: ca\}/name: web-ca}/r);
ok(wait_for(sub { get('a.test', '/a2') eq '200 127.0.0.1' }, 15), 'verified with web-ca: 200') or diag slurp($log);
is(reloads(), $reloads, 'no reload');
is(worker_pids($master), $workers, 'the same workers');

kill "TERM", $run;
waitpid($run, 0);
