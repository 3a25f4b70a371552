# gateway2nginx run --kubeconfig against the API server simulation
# (t/lib/kube-apiserver-sim), objects written with the real kubectl:
# what kubectl applies becomes traffic and its status, written back with
# our controllerName only (another controller's entries kept), once and
# only on change; EndpointSlice changes are pushed with no reload, route
# changes reload; a tenant's bad object costs only
# its owner; the API server stopped and restarted compacted (410 Gone):
# nginx serves throughout, the reflectors list again and converge, and
# what changed meanwhile is applied; SIGTERM ends it.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use Time::HiRes qw(sleep time);

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
my $outage = $ENV{GTLS_KUBE_OUTAGE_SECONDS} // 30;

start_numbered_backends(3, $backend_port);
my $audit = "$dir/kube-audit.log";
# the first 3 status writes are answered 409, as if another writer had been first
my $sim = start_kube_api($kube_port, '--bookmark-seconds', '1', '--audit', $audit, '--conflict-status-writes', '3');

sub slice_yaml { kube_slice_yaml($backend_port, @_) }
sub route_yaml { kube_route_yaml(@_) }

# ---- kubectl against the simulation ----------------------------------------------
kube_apply('base', kube_web_yaml());
kube_apply('route', route_yaml('/web'));
kube_apply('slice', slice_yaml(1));
my ($rc, $got) = kubectl('get', 'httproutes,services,endpointslices', '-n', 'ns', '-o', 'name');
is($got, "httproute.gateway.networking.k8s.io/r\nservice/web\nendpointslice.discovery.k8s.io/web-abc\n",
   'kubectl get lists what it applied');
($rc, $got) = kubectl('get', 'httproute', 'r', '-n', 'ns', '-o', 'jsonpath={.metadata.generation}');
is($got, '1', 'a new object is at generation 1');
kube_apply('route', route_yaml('/web', '/shop'));
($rc, $got) = kubectl('get', 'httproute', 'r', '-n', 'ns', '-o', 'jsonpath={.metadata.generation}');
is($got, '2', 'kubectl apply of a changed spec: generation 2');
($rc, $got) = kubectl('patch', 'httproute', 'r', '-n', 'ns', '--subresource=status', '--type=merge', '-p',
                      '{"status":{"parents":[{"controllerName":"example.com/other","parentRef":{"name":"gw"},"conditions":[]}]}}');
is($rc, 0, 'kubectl patch --subresource=status') or diag $got;
($rc, $got) = kubectl('get', 'httproute', 'r', '-n', 'ns', '-o', 'jsonpath={.status.parents[0].controllerName} {.metadata.generation}');
is($got, 'example.com/other 2', 'the status is there, the generation unchanged');
kube_apply('route', route_yaml('/web'));

# ---- gateway2nginx run reads the API -----------------------------------------
my $log = "$dir/run.log";
my $out = "$dir/out";
my @run_flags = ('--kubeconfig', kubeconfig(), '-o', $out, '--reload', "$out/nginx.pid",
                 '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                 '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                 '--debounce', '100', '--health-listen', "127.0.0.1:$health_port");
my $run = start_run($log, @run_flags);
sub count_in_log { count_in($log, shift) }
sub endpoint { my ($code, $h, $body) = http_request($port, shift // '/web', 'localhost'); return $body =~ /endpoint=(\S+)/ ? $1 : "($code)" }
sub endpoints_seen { my %seen; $seen{endpoint(@_)}++ for 1 .. 12; return join ' ', sort keys %seen }

ok(wait_for(sub { -f "$out/nginx.conf" }, 20), 'gateway2nginx run --kubeconfig writes a configuration') or diag slurp($log);
ok(count_in_log(qr/every kind listed: \d+ object\(s\)/), 'once every kind is listed (said before the first apply)');
sub fetch { my $out = `curl -s -w '\n%{http_code}' http://127.0.0.1:$health_port$_[0]`; my ($body, $code) = $out =~ /\A(.*)\n(\d+)\z/s; return ($code // 0, $body // '') }
is((fetch('/readyz'))[0], 503, '/readyz: not ready while no nginx serves the configuration');
start_nginx($out, 'nginx.conf', $port);
my $master = do { my $m = slurp("$out/nginx.pid"); chomp $m; $m };
my $workers = worker_pids($master);
is(endpoints_seen(), '127.0.0.1', 'what kubectl applied is served');

# endpoints through the API: pushed, no reload, nothing rendered
sub metric { my ($name) = @_; my ($code, $body) = fetch('/metrics'); return $body =~ /^\Q$name\E (\d+)$/m ? $1 : -1 }
my $pushes = sub { count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/) };
my $before = $pushes->();
my $renders = metric('gateway2nginx_renders_total');
kube_apply('slice', slice_yaml(2, 3));
ok(wait_for(sub { endpoints_seen() eq '127.0.0.2 127.0.0.3' }, 10), 'an EndpointSlice applied with kubectl reaches the traffic');
ok(wait_for(sub { $pushes->() > $before }, 5), 'pushed through the upstream API');
is(worker_pids($master), $workers, 'no reload: the same workers');
ok(metric('gateway2nginx_endpoint_updates_total') >= 1, 'only the Service the slice names was recomputed');
is(metric('gateway2nginx_renders_total'), $renders, 'nothing was rendered for it');
ok(wait_for(sub { count_in_log(qr/OUTDIR written with the servers pushed since/) >= 1 }, 10),
   'OUTDIR catches up once changes are quiet') or diag slurp($log);
like(slurp("$out/http.conf"), qr/server 127\.0\.0\.2:\d+;.*server 127\.0\.0\.3:\d+;/s,
     'with the servers nginx was given');
unlike(slurp("$out/http.conf"), qr/server 127\.0\.0\.1:$backend_port;/, 'and not the one removed');

# ---- the controller's own endpoint ----------------------------------------------
is((fetch('/healthz'))[0], 200, '/healthz: the loop turns');
ok(wait_for(sub { (fetch('/readyz'))[0] == 200 }, 10), '/readyz: nginx serves the configuration');
my ($mcode, $metrics) = fetch('/metrics');
like($metrics, qr/^gateway2nginx_watch_events_total\{kind="EndpointSlice"\} [1-9]/m, '/metrics counts watch events by kind');
like($metrics, qr/^gateway2nginx_pushes_total [1-9]/m, 'and pushes');
like($metrics, qr/^gateway2nginx_leader 1$/m, 'and says this replica leads');
like($metrics, qr/^gateway2nginx_change_to_traffic_seconds_count [1-9]/m, 'and how long changes take to reach traffic');
like($metrics, qr/^gateway2nginx_status_writes_total\{result="conflict"\} 3$/m,
     'three status writes met a conflict (409), were read again and retried');

# ---- status written back ------------------------------------------------------
sub jsonpath { my ($rc, $out) = kubectl('get', @_); return $rc == 0 ? $out : "(kubectl: $out)" }
ok(wait_for(sub { jsonpath('gateway', 'gw', '-n', 'ns', '-o', 'jsonpath={.status.conditions[?(@.type=="Programmed")].status}') eq 'True' }, 15),
   'the Gateway is Programmed once nginx runs its configuration')
    or diag jsonpath('gateway', 'gw', '-n', 'ns', '-o', 'json');
is(jsonpath('gateway', 'gw', '-n', 'ns', '-o', 'jsonpath={.status.listeners[0].name}={.status.listeners[0].attachedRoutes} {.status.addresses[0].value}'),
   'http=1 127.0.0.1', 'its listener counts the route, its address is where it listens');
like(jsonpath('gatewayclass', 'ours', '-o', 'jsonpath={.status.conditions[?(@.type=="Accepted")].status} {.status.supportedFeatures[*].name}'),
     qr/^True (\S+ )*Gateway (\S+ )*HTTPRoute\b/, 'the GatewayClass is Accepted, with its supported features');
ok(wait_for(sub { jsonpath('httproute', 'r', '-n', 'ns', '-o', 'jsonpath={.status.parents[*].controllerName}') eq 'example.com/other gateway2nginx.io/controller' }, 10),
   'the HTTPRoute holds our parent entry beside the other controller\'s');
is(jsonpath('httproute', 'r', '-n', 'ns', '-o', 'jsonpath={.status.parents[0].conditions}'), '[]',
   'whose entry is left exactly as it was');
is(jsonpath('httproute', 'r', '-n', 'ns', '-o', 'jsonpath={.status.parents[1].conditions[?(@.type=="Accepted")].status} {.status.parents[1].conditions[0].observedGeneration}'),
   'True 3', 'ours: Accepted, at the route\'s generation');
my $policy_status = sub { jsonpath('backendtlspolicy', 'web-tls', '-n', 'ns', '-o', 'jsonpath={.status.ancestors[0].controllerName} {.status.ancestors[0].conditions[?(@.type=="Accepted")].status}') };
ok(wait_for(sub { $policy_status->() eq 'gateway2nginx.io/controller True' }, 10),
   'the BackendTLSPolicy has its ancestor status') or diag $policy_status->();
is(jsonpath('lease', 'gateway2nginx', '-n', 'default', '-o', 'jsonpath={.spec.leaseDurationSeconds}'), '15',
   'a Lease elects the replica that writes');
sub status_writes { scalar grep { /"verb": "update"/ && /"subresource": "status"/ } split /\n/, (-e $audit ? slurp($audit) : '') }
my $writes = status_writes();
# endpoints that change no status: pushed twice (there and back), and no
# status written for either
for my $slice ([3], [2, 3]) {
    my $pushed = $pushes->();
    kube_apply('slice', slice_yaml(@$slice));
    ok(wait_for(sub { $pushes->() > $pushed }, 10), "the slice of @$slice is pushed") or diag slurp($log);
}
is(endpoints_seen(), '127.0.0.2 127.0.0.3', 'and served');
is(status_writes(), $writes, 'an unchanged status is not written again');

# a route change: rendered, checked, reloaded
kube_apply('route', route_yaml('/web', '/shop'));
ok(wait_for(sub { endpoint('/shop') =~ /^127\.0\.0\.[23]$/ }, 15), 'a route applied with kubectl serves after a reload');
isnt(worker_pids($master), $workers, 'with new workers');

# a tenant's bad object costs only its owner
kube_apply('bad', "apiVersion: v1\nkind: Namespace\nmetadata: {name: tenant}\n---\n"
                . "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: bad, namespace: tenant}\n"
                . "spec:\n  parentRefs: [{name: gw, namespace: ns}]\n  rules:\n"
                . "  - matches: [{path: {type: NoSuchType, value: /x}}]\n    backendRefs: [{name: web, port: 443}]\n");
ok(wait_for(sub { count_in_log(qr{HTTPRoute.*rejected: <api gateway\.networking\.k8s\.io/HTTPRoute/tenant/bad>}) >= 1 }, 10),
   'a bad HTTPRoute from the API is rejected, named by the object') or diag slurp($log);
is(endpoints_seen(), '127.0.0.2 127.0.0.3', 'and the others are served as before');

# a tenant's ListenerSet: refused until the Gateway allows it, then served
# by its hostname beside the Gateway's own listener, status written back
kube_apply('listenerset', "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\n"
                        . "metadata: {name: team, namespace: tenant}\nspec:\n  parentRef: {name: gw, namespace: ns}\n"
                        . "  listeners:\n  - {name: team, port: 80, protocol: HTTP, hostname: team.example.com, "
                        . "allowedRoutes: {namespaces: {from: All}}}\n---\n"
                        . "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: team, namespace: ns}\n"
                        . "spec:\n  parentRefs: [{kind: ListenerSet, name: team, namespace: tenant}]\n  rules:\n"
                        . "  - matches: [{path: {type: PathPrefix, value: /team}}]\n    backendRefs: [{name: web, port: 443}]\n");
sub listener_set_status { jsonpath('listenerset', 'team', '-n', 'tenant', '-o', 'jsonpath={.status.conditions[?(@.type=="Accepted")].reason} {.status.listeners[*].attachedRoutes}') }
ok(wait_for(sub { listener_set_status() eq 'NotAllowed ' }, 15), 'a ListenerSet the Gateway does not allow is NotAllowed')
    or diag listener_set_status();
sub team { my ($code, $h, $body) = http_request($port, '/team', 'team.example.com'); return $body =~ /endpoint=(\S+)/ ? $1 : "($code)" }
like(team(), qr/^\(/, 'and serves nothing');
kube_apply('base', listener_sets_from_all_namespaces(kube_web_yaml()));
ok(wait_for(sub { listener_set_status() eq 'Accepted 1' }, 15), 'allowed: Accepted, its listener counting the route')
    or diag listener_set_status();
ok(wait_for(sub { jsonpath('gateway', 'gw', '-n', 'ns', '-o', 'jsonpath={.status.attachedListenerSets}') eq '1' }, 15),
   'the Gateway counts it in attachedListenerSets');
ok(wait_for(sub { team() =~ /^127\.0\.0\.[23]$/ }, 15), 'its hostname is served') or diag team();
is(endpoint('/team'), '(404)', 'only there: not through the Gateway\'s own listener');
is(endpoints_seen(), '127.0.0.2 127.0.0.3', 'which serves as before');

# ---- the API server goes away and comes back compacted ---------------------------
kill 'TERM', $sim;
waitpid($sim, 0);
my ($served, $failed) = (0, 0);
my $until = time + $outage;
while (time < $until) {
    endpoint() =~ /^127\.0\.0\.[23]$/ ? $served++ : $failed++;
    sleep 0.2;
}
ok($served > 0 && $failed == 0, "API server away for ${outage} s: nginx served every request ($served, $failed failed)");
ok(count_in_log(qr/(watching|listing) \w+ failed \(.*\); again in \d+ ms/) > 0, 'the reflectors say they back off');
$sim = start_kube_api($kube_port, '--bookmark-seconds', '1', '--start-compacted', '--audit', $audit);
ok(wait_for(sub { count_in_log(qr/watch of \w+ expired at resourceVersion \d+ \(410 Gone\): listing again/) >= 1 }, 60),
   'back with its history compacted: 410 Gone, and a new list') or diag slurp($log);
# every kind comes back on its own backoff (up to 30 s, with jitter up to twice that)
ok(wait_for(sub { my ($c, $m) = fetch('/metrics'); my @l = $m =~ /^gateway2nginx_lists_total\{kind="\w+"\} (\d+)$/mg;
                  @l && !grep { $_ < 2 } @l }, 90),
   'every kind has listed again after the outage');
kube_apply('slice', slice_yaml(1));
ok(wait_for(sub { endpoints_seen() eq '127.0.0.1' }, 30), 'a change after the outage reaches the traffic');
my ($routes) = kubectl('get', 'httproutes', '-A', '-o', 'name');
my $status = slurp("$out/status.yaml");
my @named = $status =~ /^\s*name: r$/mg;
is(scalar @named, 1, 'status.yaml holds route r once: nothing lost or duplicated by the relist');

# deleting through the API
my ($drc, $dout) = kubectl('delete', 'httproute', 'r', '-n', 'ns');
is($drc, 0, 'kubectl delete') or diag $dout;
ok(wait_for(sub { endpoint('/web') !~ /^127/ }, 15), 'a deleted route no longer serves');
# a route made, deleted and made again exactly as it was (generation 1
# both times): the new object gets its status too
my $again = route_yaml('/again') =~ s/name: r,/name: again,/r;
sub again_status { jsonpath('httproute', 'again', '-n', 'ns', '-o', 'jsonpath={.status.parents[*].controllerName}') }
kube_apply('again', $again);
ok(wait_for(sub { again_status() eq 'gateway2nginx.io/controller' }, 15), 'a new route gets its status');
kubectl('delete', 'httproute', 'again', '-n', 'ns');
ok(wait_for(sub { endpoint('/again') !~ /^127/ }, 15), 'deleted, it no longer serves');
kube_apply('again', $again);
ok(wait_for(sub { endpoint('/again') =~ /^127/ }, 15), 'made again, it serves');
ok(wait_for(sub { again_status() eq 'gateway2nginx.io/controller' }, 15),
   'and gets its status again, though it is what it was before')
    or diag join "\n", jsonpath('httproute', 'again', '-n', 'ns', '-o', 'json'), slurp($log),
                    scalar `curl -s http://127.0.0.1:$health_port/metrics | grep status_`;
# deleted and made again at once (kubectl replace --force, within one
# debounce): another object, with no status, though its own reads the same
my $uid = jsonpath('httproute', 'again', '-n', 'ns', '-o', 'jsonpath={.metadata.uid}');
my ($frc, $fout) = kubectl('replace', '--force', '-f', "$dir/again.yaml");
is($frc, 0, 'kubectl replace --force') or diag $fout;
isnt(jsonpath('httproute', 'again', '-n', 'ns', '-o', 'jsonpath={.metadata.uid}'), $uid, 'the route is another object');
ok(wait_for(sub { again_status() eq 'gateway2nginx.io/controller' }, 15), 'and gets its status')
    or diag jsonpath('httproute', 'again', '-n', 'ns', '-o', 'json'), slurp($log);
is(endpoint('/again'), '127.0.0.1', 'and serves');

sub metric { my $name = shift; my (undef, $m) = fetch('/metrics'); return $m =~ /^\Q$name\E (\d+)$/m ? $1 : -1 }
ok(wait_for(sub { metric('gateway2nginx_status_queued') == 0 }, 15), 'every status written: none queued')
    or diag metric('gateway2nginx_status_queued');
kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
# a reload's old workers may answer the list or the push that follows it
# for the configuration they served: retried, never a failure
cmp_ok(count_in($log, qr/nginx reloaded/), '>', 2, 'reloaded along the way');
unlike(slurp($log), qr/after the reload failed/, 'every push after a reload reached the new workers');

# ---- a restart over a cluster whose status is right writes none -----------------
$writes = status_writes();
$run = start_run("$dir/run-again.log", @run_flags);
sub compared { metric('gateway2nginx_status_writes_total{result="unchanged"}') + metric('gateway2nginx_status_writes_total{result="written"}') }
ok(wait_for(sub { metric('gateway2nginx_status_offered') > 0 && metric('gateway2nginx_status_queued') == 0
                  && compared() >= metric('gateway2nginx_status_offered') }, 20),
   'restarted, run compares every status with the one the API holds')
    or diag slurp("$dir/run-again.log");
is(metric('gateway2nginx_status_writes_total{result="written"}'), 0, 'and writes none');
is(status_writes(), $writes, 'the API server saw no status write');
kill 'TERM', $run;
waitpid($run, 0);
stop_nginx($out);
stop_nginx("$dir/backends");
kill 'TERM', $sim;
waitpid($sim, 0);
