# What nginx -t cannot see costs only its owner, whatever it is (issue 51):
# a reload the running nginx refuses after nginx -t took the configuration
# leads to a search and blame like nginx -t's refusals, never to a frozen
# configuration. Here the running master has the file descriptors it
# holds and a few more (RLIMIT_NOFILE, as an operator may set it): a route
# change reloads; a tenant's ListenerSet whose route brings 12 new ports
# makes the master's socket() fail on reload ("Too many open files"), which
# nginx -t, a process of its own, never meets. The route is left out with
# nginx's words, a change of another tenant made beside it is served, and
# the next changes apply with no reload refused; what OUTDIR holds starts a
# fresh nginx.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);

plan skip_all => 'prlimit not installed' if system('command -v prlimit >/dev/null') != 0;
plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $metrics_port = server_port() + 17;
my @many = map { server_port() + 30 + $_ } 0 .. 11;   # the ports a ListenerSet brings
my @idle = map { server_port() + 50 + $_ } 0 .. 11;   # and another's

# ListenerSet team/NAME on PORTS, and routes (NAME => parentRef)
sub listener_set {
    my ($name, $ports, %routes) = @_;
    return listener_set_yaml($name, map { "{name: l$_, port: " . ($ports->[$_] - $offset) . ", protocol: HTTP, "
                                          . "hostname: $name.example.com, allowedRoutes: {namespaces: {from: All}}}" }
                                    0 .. $#$ports)
         . join('', map { route($_, $routes{$_}) } sort keys %routes);
}

# HTTPRoute NAME (in team, or NAMESPACE) attached to ListenerSet team/PARENT,
# or else Gateway ns/gw at /NAME (no backend: answered 500)
sub route {
    my ($name, $parent, $namespace) = @_;
    $namespace //= 'team';
    my $ref = $parent ? "{kind: ListenerSet, group: gateway.networking.k8s.io, name: $parent, namespace: team}"
                      : '{name: gw, namespace: ns}';
    my $path = $parent ? '/' : "/$name";
    return <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: $name, namespace: $namespace}
spec:
  parentRefs: [$ref]
  rules: [{matches: [{path: {value: $path}}]}]
YAML
}
# the Gateway, its route ns/web at PATHS and ns/steady at /steady, and more
sub manifests {
    my ($paths, @more) = @_;
    return listener_sets_from_all_namespaces(gateway_manifests(web => 'leaf')) . join('', @more)
         . web_route_yaml('web', @$paths) . web_route_yaml('steady', '/steady');
}

my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
start_backends();
my @idle_set = (listener_set('idle', \@idle), route('mover', undef, 'ns'));
put_file($in, 'all.yaml', manifests(['/a'], @idle_set));
my $log = "$dir/run.log";
my $run = start_run($log, '-f', $in, '-o', $out, '--start-nginx', '--nginx', nginx_binary(), '--upstream-api',
                    "127.0.0.1:$api_port", '--port-offset', $offset, '--listen-address', '127.0.0.1',
                    '--module-dir', module_dir(), '--status-listen', 'off', '--debounce', '100',
                    '--metrics-listen', "127.0.0.1:$metrics_port");
sub reloads { my ($counter, $reason) = @_; my $m = `curl -s http://127.0.0.1:$metrics_port/metrics`;
              return $m =~ /^gateway2nginx_\Q$counter\E_total\{reason="\Q$reason\E"\} (\d+)$/m ? $1 : -1 }
sub get { my ($code) = request($port, 'GET', shift, 'Host: localhost'); return $code }
ok(wait_for(sub { get('/a') eq '200' }, 30), 'nginx started and serves') or diag slurp($log);
is(get('/mover'), '500', 'a tenant\'s route on the Gateway too (no backend: 500)');

# the master: what it holds, and ten descriptors more
my $master = slurp("$out/nginx.pid") =~ s/\s+//gr;
my $fds = () = glob("/proc/$master/fd/*");
is(system('prlimit', "--pid=$master", '--nofile=' . ($fds + 10) . ':' . ($fds + 10)), 0,
   "the master ($master) may open " . ($fds + 10) . " files, $fds of them open");
sub refused_reloads { count_in($log, qr/refused the configuration and serves the previous one/) }

put_file($in, 'all.yaml', manifests(['/a', '/b'], @idle_set));
ok(wait_for(sub { get('/b') eq '200' }, 30), 'a route change reloads within that') or diag slurp($log);
is(refused_reloads(), 0, 'no reload refused');

# ---- a ListenerSet of 12 ports, another tenant's change beside it ------------------------
put_file($in, 'all.yaml', manifests(['/a', '/b', '/c'], @idle_set, listener_set('many', \@many, many => 'many')));
# while the search lasts, OUTDIR's status.yaml is that of the configuration
# tried: what is said of an object is waited for in the log first
sub left_out { my ($route) = @_; count_in($log, qr/HTTPRoute \Q$route\E is rejected: \S+: nginx refused to reload onto the configuration with it: \S+ [^\n]*failed \(24: Too many open files\)/) }
sub rejected { my ($route) = @_; grep { /Accepted=False/ } @{ read_status("$out/status.yaml")->{"HTTPRoute $route"} // [] } }
ok(wait_for(sub { left_out('team/many') }, 60), 'the route bringing the ports is left out, with nginx\'s words')
    or diag slurp($log);
ok(refused_reloads() >= 1, 'a reload was refused');
ok(wait_for(sub { rejected('team/many') }, 10), 'its status says so');
cmp_ok(reloads('reload_failures', 'listeners'), '>=', 1, 'the reload of the change counted as failed, for its reason: listeners');
cmp_ok(reloads('reloads', 'refusal_search'), '>=', 1, 'the search\'s reloads it took, for theirs');
ok(wait_for(sub { get('/c') eq '200' }, 10), 'the other tenant\'s change made beside it is served');
ok((grep { /Accepted=True/ } @{ read_status("$out/status.yaml")->{'HTTPRoute ns/web'} // [] }), 'the other route is accepted');

# ---- nothing is frozen: the next change reloads, and the refused route is not tried again --
my $refused = refused_reloads();
put_file($in, 'all.yaml', manifests(['/a', '/b', '/c', '/d'], @idle_set, listener_set('many', \@many, many => 'many')));
ok(wait_for(sub { get('/d') eq '200' }, 30), 'the next change is served') or diag slurp($log);
is(refused_reloads(), $refused, 'with no reload refused: the route left out is remembered');
unlike(slurp("$out/http.conf"), qr/listen 127\.0\.0\.1:$many[0]\b/, 'OUTDIR listens on none of its ports');

# ---- a route nginx runs moved onto 12 ports: nothing new is at fault ----------------------
put_file($in, 'all.yaml', manifests(['/a', '/b', '/c', '/d', '/e'], listener_set('idle', \@idle), route('mover', 'idle', 'ns'),
                                    listener_set('many', \@many, many => 'many')));
ok(wait_for(sub { left_out('ns/mover') }, 60), 'the route moved is left out, with nginx\'s words') or diag slurp($log);
ok(count_in($log, qr/searching every object changed since the configuration nginx runs/),
   'nginx refused even without the objects new to it: every changed one searched');
ok(wait_for(sub { rejected('ns/mover') }, 10), 'its status says so');
cmp_ok(reloads('reload_failures', 'refusal_search'), '>=', 1, 'a reload the search tried, refused, counted for its reason');
ok(wait_for(sub { get('/e') eq '200' }, 10), 'a change made beside it is served');
is(get('/steady'), '200', 'what did not change is served');
unlike(slurp("$out/http.conf"), qr/listen 127\.0\.0\.1:$idle[0]\b/, 'OUTDIR listens on none of the ports it moved to');

# ---- what OUTDIR holds starts a fresh nginx -----------------------------------------------------
kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM (its nginx with it)');
start_nginx($out, 'nginx.conf', $port);
is(get('/e'), '200', 'a fresh nginx starts on OUTDIR and serves');
stop_nginx($out);
