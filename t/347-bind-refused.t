# What nginx -t cannot see costs only its owner (issue 51, finding 3).
# nginx -t does not bind: a listener on a port another process holds
# passed it, and then nginx refused every reload (every tenant's change
# with it) and did not start at all. gateway2nginx run tries what is new
# to the nginx that takes a configuration: a tenant's listener on a held
# port (a ListenerSet's, with its route) is left out as nginx -t refusals
# are, at start and while nginx runs; the others' changes go on; what OUTDIR holds starts a fresh
# nginx. (Each ListenerSet has a route, answered 500: no backend.)
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;
use POSIX qw(WNOHANG);

plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my @held = (server_port() + 13, server_port() + 14);   # ports another process holds

my $holders = [map { IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $_, Listen => 4, ReuseAddr => 1)
                         or die "cannot hold $_: $!" } @held];

sub listener_set {
    my ($name, $listen_port, $hostname) = @_;
    return listener_set_yaml($name, "{name: http, port: $listen_port, protocol: HTTP, hostname: $hostname}") . <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: $name, namespace: team}
spec:
  parentRefs: [{kind: ListenerSet, group: gateway.networking.k8s.io, name: $name}]
  rules: [{matches: [{path: {value: /}}]}]
YAML
}
sub manifests {
    my ($paths, @sets) = @_;
    return listener_sets_from_all_namespaces(gateway_manifests(web => 'leaf')) . join('', @sets)
         . web_route_yaml('web', @$paths);
}

my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
start_backends();
put_file($in, 'all.yaml', manifests(['/a'], listener_set('squat', $held[0] - $offset, 'squat.example.com')));

my $log = "$dir/run.log";
my $run = start_run($log, '-f', $in, '-o', $out, '--start-nginx', '--nginx', nginx_binary(), '--upstream-api',
                    "127.0.0.1:$api_port", '--port-offset', $offset, '--listen-address', '127.0.0.1',
                    '--module-dir', module_dir(), '--status-listen', 'off', '--debounce', '100');
sub get { my ($code) = request($port, 'GET', shift, 'Host: localhost'); return $code }
ok(wait_for(sub { get('/a') eq '200' }, 30), 'at start, with a ListenerSet on a held port: nginx starts and serves')
    or diag slurp($log);
ok(kill(0, $run) && waitpid($run, WNOHANG) == 0, 'gateway2nginx run goes on');
# the route that makes nginx listen there is the object left out (routes
# are blamed before what they refer to)
like(slurp($log), qr/HTTPRoute team\/squat is rejected: \S+: nginx -t refuses the configuration with it: bind\(\) to 127\.0\.0\.1:$held[0] failed \(98: Address already in use\)/,
     'the tenant\'s route on the held port is left out, and the log says why');
my $status = read_status("$out/status.yaml");
ok((grep { /Accepted=False/ } @{ $status->{'HTTPRoute team/squat'} }), 'its status says so')
    or diag explain $status->{'HTTPRoute team/squat'};

# ---- while nginx runs: another, and the others' changes go on ------------------
put_file($in, 'all.yaml', manifests(['/a', '/b'], listener_set('squat', $held[0] - $offset, 'squat.example.com'),
                                     listener_set('late', $held[1] - $offset, 'late.example.com')));
ok(wait_for(sub { get('/b') eq '200' }, 30), 'a route added beside a second ListenerSet on a held port is served')
    or diag slurp($log);
ok(wait_for(sub { count_in($log, qr/HTTPRoute team\/late is rejected: \S+: nginx -t refuses the configuration with it: bind\(\) to 127\.0\.0\.1:$held[1] failed/) }, 10),
   'the route on that ListenerSet is left out too');
unlike(slurp($log), qr/reload.*(?:failed|refused)|\[emerg\]/i, 'no reload failed');
unlike(slurp("$out/http.conf"), qr/listen 127\.0\.0\.1:(?:$held[0]|$held[1])\b/, 'OUTDIR listens on neither held port');

# ---- once the port is free, the next search admits it ---------------------------
close $holders->[1];
put_file($in, 'all.yaml', manifests(['/a', '/b', '/c'], listener_set('squat', $held[0] - $offset, 'squat.example.com'),
                                     listener_set('late2', $held[1] - $offset, 'late.example.com')));
ok(wait_for(sub { get('/c') eq '200' }, 30), 'the next change is served') or diag slurp($log);
ok(wait_for(sub { my ($code) = request($held[1], 'GET', '/a', 'Host: late.example.com'); $code eq '500' }, 10),
   'and a ListenerSet on the port now free is listened on');

# ---- what OUTDIR holds starts a fresh nginx -----------------------------------------
kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM (its nginx with it)');
start_nginx($out, 'nginx.conf', $port);
is(get('/c'), '200', 'a fresh nginx starts on OUTDIR and serves');
stop_nginx($out);
close $_ for @$holders;
