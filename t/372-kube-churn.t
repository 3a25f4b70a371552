# 500 EndpointSlice changes made through the API (merge patches to the
# API server simulation, as a controller's endpoint updates arrive) while
# wrk keeps requests flowing through nginx: every change is pushed to the
# upstream API, none reloads nginx, no request fails, and the last list is
# what nginx serves. Then the CA ConfigMap the BackendTLSPolicy names is
# changed through the API: a CA that did not sign the backend fails every
# request closed (502), the right one serves again, each pushed as trust
# with no reload and nothing else read again (the whole way's CPU time
# stays where it was); a ConfigMap nothing reads changes nothing.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
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
my $changes = 500;

start_numbered_backends(8, $backend_port);
my $sim = start_kube_api($kube_port);
sub slice_json { '{"endpoints":[{"addresses":[' . join(',', map { "\"127.0.0.$_\"" } @_) . ']}]}' }
kube_apply('base', kube_web_yaml() . "---\n" . kube_slice_yaml($backend_port, 1) . "---\n" . kube_route_yaml('/'));

my $log = "$dir/run.log";
my $out = "$dir/out";
my $health_port = server_port() + 17;
my $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', $out, '--reload', "$out/nginx.pid",
                    '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                    '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                    '--debounce', '50', '--health-listen', "127.0.0.1:$health_port");
ok(wait_for(sub { -f "$out/nginx.conf" }, 20), 'gateway2nginx run --kubeconfig writes a configuration') or diag slurp($log);
start_nginx($out, 'nginx.conf', $port);
my $master = do { my $m = slurp("$out/nginx.pid"); chomp $m; $m };
my $workers = worker_pids($master);
sub endpoint { my ($code, $h, $body) = http_request($port, '/', 'localhost'); return $body =~ /endpoint=(\S+)/ ? $1 : "($code)" }
ok(wait_for(sub { endpoint() eq '127.0.0.1' }, 10), 'served');

my $wrk = "$dir/wrk.txt";
my $wrk_pid = fork // die;
if ($wrk_pid == 0) {
    # until told to stop (SIGINT: wrk prints its report), however long
    # the changes take on this machine
    exec("exec wrk -t1 -c4 -d300s -H 'Host: localhost' http://127.0.0.1:$port/ > $wrk 2>&1");
}
ok(wait_for(sub { connections_to($port) > 0 }), 'wrk is connected');
my $token = slurp("$dir/kube-api.token") =~ s/\s+//gr;
my $url = "https://127.0.0.1:$kube_port/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices/web-abc";
my ($accepted, @last) = (0);
srand(42);
my $started = time;
for my $i (1 .. $changes) {
    my @list = grep { rand() < 0.5 } 1 .. 8;
    @list = (1 + $i % 8) unless @list;
    my $code = `curl -s -o /dev/null -w '%{http_code}' --cacert $dir/certs/ca.crt -H 'Authorization: Bearer $token' -H 'Content-Type: application/merge-patch+json' -X PATCH --data '@{[slice_json(@list)]}' $url`;
    $accepted++ if $code eq '200';
    @last = @list;
    sleep 0.02;
}
my $took = time - $started;
my $want = join ' ', map { "127.0.0.$_" } @last;
sub endpoints_seen { my %seen; $seen{endpoint()}++ for 1 .. 24; return join ' ', sort keys %seen }
ok(wait_for(sub { endpoints_seen() eq $want }, 10), "after $changes changes nginx serves the last list ($want)");
kill 'INT', $wrk_pid;
waitpid($wrk_pid, 0);
my $report = slurp($wrk);
diag sprintf("%d EndpointSlice changes through the API in %.1f s, under load throughout", $changes, $took);
diag $report;
is($accepted, $changes, "the API server took $changes changes");
my ($requests) = $report =~ /(\d+) requests in/;
ok(($requests // 0) > 1000, "wrk made requests throughout (@{[$requests // 0]})");
unlike($report, qr/Non-2xx or 3xx responses/, 'no request got anything but a 2xx');
unlike($report, qr/Socket errors/, 'no request met a connection error');
is(worker_pids($master), $workers, 'no reload: the same workers served every change');
is(count_in($log, qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');
my $pushes = count_in($log, qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/);
ok($pushes > 10, "the changes were pushed ($pushes pushes: changes that come within --debounce are one)");

# ---- the CA changed through the API: trust pushed alone ----------------------------
sub metric {
    my $name = shift;
    my $text = `curl -s http://127.0.0.1:$health_port/metrics`;
    return $text =~ /^\Q$name\E (\S+)$/m ? $1 : -1;
}
sub ca_configmap {
    my ($name, $pem) = @_;
    $pem =~ s/^/    /mg;
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: $name, namespace: ns}\ndata:\n  ca.crt: |\n$pem";
}
sub status_of { my ($code) = http_request($port, '/', 'localhost'); return $code }
my $whole_cpu = metric('gateway2nginx_apply_cpu_seconds_total{way="whole"}');
my $trust_pushes = count_in($log, qr/trust of 1 policy\(ies\) pushed to nginx, no reload/);
kube_apply('wrong-ca', ca_configmap('ca', slurp("$dir/certs/unrelated-ca.crt")));
ok(wait_for(sub { status_of() eq '502' }, 10), 'a CA that did not sign the backend: every request fails closed (502)');
kube_apply('right-ca', ca_configmap('ca', slurp("$dir/certs/ca.crt")));
ok(wait_for(sub { status_of() eq '200' }, 10), 'the right CA again: served');
ok(wait_for(sub { count_in($log, qr/trust of 1 policy\(ies\) pushed to nginx, no reload/) >= $trust_pushes + 2 }, 10),
   'each change pushed as the trust of the one policy reading it');
ok(wait_for(sub { metric('gateway2nginx_trust_updates_total') >= 2 }, 10), 'counted as trust updates');
my ($held, $whole, $applies) = map { metric($_) } qw(gateway2nginx_objects_held gateway2nginx_objects_held_whole gateway2nginx_applies_total);
kube_apply('unread', ca_configmap('unread', slurp("$dir/certs/unrelated-ca.crt")));
ok(wait_for(sub { metric('gateway2nginx_objects_held') == $held + 1 }, 10), 'a ConfigMap nothing reads: held')
    or diag slurp($log);
is(metric('gateway2nginx_objects_held_whole'), $whole, 'as a digest only');
is(metric('gateway2nginx_applies_total'), $applies, 'and nothing applied for it');
is(metric('gateway2nginx_apply_cpu_seconds_total{way="whole"}'), $whole_cpu,
   'none of them read, resolved or rendered the rest: the whole way\'s CPU time is where it was');
is(worker_pids($master), $workers, 'and none reloaded nginx');
is(status_of(), '200', 'still served');

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
stop_nginx($out);
stop_nginx("$dir/backends");
kill 'TERM', $sim;
waitpid($sim, 0);
