# gateway2nginx run --routes table (issue 55): the nginx run starts gets
# every hostname's rules through the upstream API; a route changed within
# its hostnames is pushed, that hostname alone, with no reload (the same
# workers, no reload said); a hostname new to a listener, or gone from it,
# is pushed too, with no reload, where its listener's own server takes its
# requests; one that keeps a server{} of its own (a wildcard route's
# server would take it) reloads when it goes, and is removed from the
# table after it, so that the wildcard's server does not go on serving
# its old rules. A route to a Service new to nginx (--spare-backends 1):
# served by a spare of its kind, TLS or plaintext, with no reload, its
# policy's hostname changed there too; with no spare left of its kind, a
# reload, after which every backend has its own upstream{} again.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;
use Time::HiRes qw(time);

plan 'no_plan';
setup();
start_backends();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;

# (the YAML the API tests write: the same objects, in files)
sub route_yaml { my ($name, $host, @paths) = @_; kube_host_route_yaml($name, $host, 'web', @paths) }
my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
put_file($in, 'base.yaml', gateway_manifests(web => 'leaf'));
put_file($in, 'a.yaml', route_yaml('a', 'a.test', '/one'));
put_file($in, 'b.yaml', route_yaml('b', 'b.example', '/b'));
put_file($in, 'w.yaml', route_yaml('w', '*.example', '/w'));

my $log = "$dir/run.log";
sub count_in_log { count_in($log, shift) }
my $run = start_file_run($log, $in, $out, api_port => $api_port, offset => $offset, args => ['--spare-backends', 1]);
sub get {
    my ($host, $path) = @_;
    my ($code, $h, $body) = http_request($port, $path, $host);
    my ($backend) = ($body // '') =~ /backend=(\S+)/;
    return "$code " . ($backend // '-');
}
ok(wait_for(sub { get('a.test', '/one') eq '200 leaf' }, 30), 'the nginx run starts serves the routes through its table')
    or diag slurp($log);
like(slurp("$out/http.conf"), qr/gateway_tls_routes port_80/, 'by the module\'s route table');
ok(wait_for(sub { count_in_log(qr/after nginx started, \d+ upstream\(s\), policy\(ies\) and hostname\(s\) pushed/) }, 10),
   'every hostname was pushed once nginx ran') or diag slurp($log);
is(get('b.example', '/b'), '200 leaf', 'each hostname');
is(get('x.example', '/w'), '200 leaf', 'the wildcard too');
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);

# ---- changes within a hostname: pushed, no reload ------------------------------------
# a client's kept-alive connection, opened before them: a reload would
# close it once idle; pushes leave it be
sub ask_on { my ($socket, $host, $path) = @_; return ask_kept_alive($socket, $socket, $host, $path) }
my $kept = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 10) or die "connect: $!";
is(ask_on($kept, 'b.example', '/b'), '200 leaf', 'a kept-alive connection, asked before the changes');
# asked after each change, so that nginx's keepalive_timeout (75 s) never
# outlasts the gap however slow the machine makes the changes
my ($served, $slowest, $kept_answered) = (0, 0, 0);
for my $i (1 .. 20) {
    my $pushed = count_in_log(qr/routes of 1 hostname\(s\) pushed to nginx, no reload/);
    my $start = time;
    put_file($in, 'a.yaml', route_yaml('a', 'a.test', "/v$i"));
    if (wait_for(sub { get('a.test', "/v$i") eq '200 leaf' && get('a.test', '/v' . ($i - 1)) =~ /^404/ }, 10)) {
        $served++;
        $slowest = time - $start if time - $start > $slowest;
    } else {
        diag "change $i: /v$i " . get('a.test', "/v$i") . ', /v' . ($i - 1) . ' ' . get('a.test', '/v' . ($i - 1));
    }
    wait_for(sub { count_in_log(qr/routes of 1 hostname\(s\) pushed to nginx, no reload/) > $pushed }, 5);
    $kept_answered++ if ask_on($kept, 'b.example', '/b') eq '200 leaf';
}
diag sprintf('the slowest route change served in %.0f ms (debounce 100 ms)', $slowest * 1000);
is($served, 20, 'every route change reached the traffic, its old path gone');
is(count_in_log(qr/routes of 1 hostname\(s\) pushed to nginx, no reload/), 20, 'each pushed, its hostname alone');
is(worker_pids($master), $workers, 'and nginx never reloaded: the same workers');
is($kept_answered, 20, 'the connection kept alive through them answered after each');
close $kept;
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');
is(get('b.example', '/b'), '200 leaf', 'the other hostnames serve as before');

# ---- hostnames new to the listener, and gone: pushed, no reload ------------------------
unlike(slurp("$out/http.conf"), qr/server_name a\.test;/, 'a.test has no server{} of its own: its listener\'s takes it');
is(get('c.test', '/c'), '404 -', 'c.test: no route yet');
put_file($in, 'c.yaml', route_yaml('c', 'c.test', '/c'));
ok(wait_for(sub { get('c.test', '/c') eq '200 leaf' }, 10), 'a route with a hostname new to the listener serves')
    or diag slurp($log);
unlink "$in/c.yaml" or die;
ok(wait_for(sub { get('c.test', '/c') eq '404 -' }, 10), 'and its route gone, it is gone') or diag slurp($log);
# said once nginx took the push, which may come after the first answer
ok(wait_for(sub { count_in_log(qr/routes of 1 hostname\(s\) pushed to nginx, no reload/) >= 22 }, 10), 'each pushed');
is(worker_pids($master), $workers, 'still the same workers');
is(count_in_log(qr/nginx reloaded/), 0, 'no reload');

# ---- a hostname with a server{} of its own, gone: removed from the table ---------------
like(slurp("$out/http.conf"), qr/server_name b\.example;/, 'b.example, which the wildcard\'s server would take, has its own');
unlink "$in/b.yaml" or die;
ok(wait_for(sub { count_in_log(qr/nginx reloaded/) >= 1 }, 30), 'its server gone: a reload') or diag slurp($log);
like(slurp($log), qr/nginx reloaded: workers [\d ]+ -> [\d ]+ \(listeners\)/, 'for the listeners\' servers, it says');
# the new workers may answer before the entry is removed after the reload
ok(wait_for(sub { count_in_log(qr/after the reload, [1-9]\d* upstream\(s\), policy\(ies\) and hostname\(s\) pushed/) }, 10),
   'the removal pushed after the reload') or diag slurp($log);
ok(wait_for(sub { get('b.example', '/w') eq '200 leaf' }, 10), 'b.example is the wildcard\'s now')
    or diag get('b.example', '/w');
is(get('b.example', '/b'), '404 -', 'and its old rules are gone from the table');
is(get('a.test', '/v20'), '200 leaf', 'and the last change of another stays');

# ---- backends new to nginx: held by spares, no reload -------------------------------
my $reloads = count_in_log(qr/nginx reloaded/);
$master = slurp("$out/nginx.pid") =~ s/\s+//r;
$workers = worker_pids($master);
sub route_to {
    my ($name, $host, $service, $port) = @_;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: $name, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  hostnames: [\"$host\"]\n"
         . "  rules: [{backendRefs: [{name: $service, port: $port}]}]\n";
}
my $ca_ref = "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n";
put_file($in, 'api.yaml', service_manifests('api', 'leaf_h2', $ca_ref) . route_to('api', 'api.test', 'api', 443));
ok(wait_for(sub { get('api.test', '/x') eq '200 leaf_h2' }, 10), 'a route to a TLS Service new to nginx serves')
    or diag slurp($log);
like(slurp($log), qr/backend backend_ns_api_443 new to nginx: held by spare gateway2nginx_spare_tls_0/, 'held by a spare');
put_file($in, 'plain.yaml', plaintext_service_manifests('plain', 'http', 80, backend_port('plain'))
                            . route_to('plain', 'plain.test', 'plain', 80));
ok(wait_for(sub { get('plain.test', '/x') eq '200 plain' }, 10), 'and one to a plaintext Service') or diag slurp($log);
is(count_in_log(qr/nginx reloaded/), $reloads, 'with no reload');
is(worker_pids($master), $workers, 'the same workers');

# the spare holds the policy's names: a hostname the backend does not have fails closed, no reload
(my $wrong = service_manifests('api', 'leaf_h2', $ca_ref)) =~ s/hostname: abc\.example\.com/hostname: absent.example.com/ or die;
put_file($in, 'api.yaml', $wrong . route_to('api', 'api.test', 'api', 443));
ok(wait_for(sub { get('api.test', '/x') eq '502 -' }, 10), 'its policy\'s hostname changed: verified by it, 502')
    or diag slurp($log);
put_file($in, 'api.yaml', service_manifests('api', 'leaf_h2', $ca_ref) . route_to('api', 'api.test', 'api', 443));
ok(wait_for(sub { get('api.test', '/x') eq '200 leaf_h2' }, 10), 'and back') or diag slurp($log);
is(count_in_log(qr/nginx reloaded/), $reloads, 'still no reload');
# its endpoints move: pushed to the spare
put_file($in, 'api.yaml', service_manifests('api', 'leaf', $ca_ref) . route_to('api', 'api.test', 'api', 443));
ok(wait_for(sub { get('api.test', '/x') eq '200 leaf' }, 10), 'its endpoints changed: the spare sends to the new one')
    or diag slurp($log);
is(count_in_log(qr/nginx reloaded/), $reloads, 'no reload');
is(worker_pids($master), $workers, 'the same workers throughout');

# no spare left of its kind: a reload, which gives the spares back
put_file($in, 'more.yaml', service_manifests('more', 'leaf', $ca_ref) . route_to('more', 'more.test', 'more', 443));
ok(wait_for(sub { get('more.test', '/x') eq '200 leaf' }, 30), 'a second new TLS Service: served') or diag slurp($log);
# a new worker may serve it before the reload is confirmed and said
ok(wait_for(sub { count_in_log(qr/nginx reloaded/) >= $reloads + 1 }, 10), 'by a reload: no TLS spare was left');
is(count_in_log(qr/nginx reloaded/), $reloads + 1, 'one');
is(count_in_log(qr/nginx reloaded: workers [\d ]+ -> [\d ]+ \(backends\)/), 1, 'for a backend, it says');
like(slurp("$out/http.conf"), qr/upstream backend_ns_api_443 \{/, 'after which every backend has its own upstream{}');
is(get('api.test', '/x'), '200 leaf', 'and serves from it');
is(get('plain.test', '/x'), '200 plain', 'both');

kill 'TERM', $run;
waitpid($run, 0);
