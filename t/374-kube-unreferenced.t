# ConfigMaps and Secrets nothing refers to cost a digest (issue 51,
# finding 4): gateway2nginx run --kubeconfig holds whole only those a
# resolve looked up. A tenant's 20 ConfigMaps of 256 KiB are held as
# digests; the CA ConfigMap of a policy is fetched (get) and verifies;
# a policy moved to another CA ConfigMap, unreferenced until then, gets
# it fetched and served, and the one it left is let go; an unreferenced
# one changed or deleted applies nothing.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

if (my $why = kubectl_missing()) {
    plan skip_all => $why;
}
plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $kube_port = server_port() + 21;
my $health_port = server_port() + 17;
my $backend_port = server_port() + 1;
start_numbered_backends(1, $backend_port);
my $audit = "$dir/kube-audit.log";
my $sim = start_kube_api($kube_port, '--bookmark-seconds', '1', '--audit', $audit);

my $ca = slurp(certs_dir() . '/ca.crt') =~ s/^/    /mgr;
my $junk = join '', map { "  junk$_: " . ('x' x (256 * 1024)) . "\n" } 1;
my $tenant = "apiVersion: v1\nkind: Namespace\nmetadata: {name: tenant}\n"
           . join('', map { "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: junk-$_, namespace: tenant}\ndata:\n$junk" } 1 .. 20);
kube_apply('tenant', $tenant);
kube_apply('base', kube_web_yaml() . "---\n" . kube_slice_yaml($backend_port, 1) . "---\n" . kube_route_yaml('/web')
                   . "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other-ca, namespace: ns}\ndata:\n  ca.crt: |\n$ca");

my $log = "$dir/run.log";
my $out = "$dir/out";
my $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', $out, '--reload', "$out/nginx.pid",
                    '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                    '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                    '--debounce', '100', '--health-listen', "127.0.0.1:$health_port");
sub metric { my ($name) = @_; my $m = `curl -s http://127.0.0.1:$health_port/metrics`; return $m =~ /^\Q$name\E (\d+)$/m ? $1 : -1 }
sub digests_only { metric('gateway2nginx_objects_held') - metric('gateway2nginx_objects_held_whole') }
ok(wait_for(sub { -f "$out/nginx.conf" }, 20), 'a configuration is written') or diag slurp($log);
start_nginx($out, 'nginx.conf', $port);
sub web { my ($code, $h, $body) = http_request($port, '/web', 'localhost'); return $body =~ /endpoint=(\S+)/ ? $1 : "($code)" }
ok(wait_for(sub { web() eq '127.0.0.1' }, 20), 'the policy\'s CA ConfigMap was fetched: its backend verifies')
    or diag slurp($log);
cmp_ok(digests_only(), '>=', 21, 'the 20 tenant ConfigMaps and the unreferenced CA are held as digests only (' . digests_only() . ')');
cmp_ok(metric('gateway2nginx_object_fetches_total'), '>=', 1, 'what was referred to was fetched');
ok((grep { $_->{verb} eq 'get' && $_->{resource} eq 'configmaps' && $_->{name} eq 'ca' } audit_requests($audit)),
   'with a get of that ConfigMap');
ok(!(grep { $_->{verb} eq 'get' && $_->{resource} eq 'configmaps' && ($_->{name} // '') =~ /^junk/ } audit_requests($audit)),
   'and none of the others');

# ---- the policy moves to the other CA: fetched, served; the first let go ----
my $fetches = metric('gateway2nginx_object_fetches_total');
(my $moved = kube_web_yaml()) =~ s/name: ca\}\]/name: other-ca}]/ or die "no caCertificateRefs to ca\n";
kube_apply('moved', $moved);
ok(wait_for(sub { metric('gateway2nginx_object_fetches_total') > $fetches }, 20), 'the newly referenced ConfigMap is fetched')
    or diag slurp($log);
ok(wait_for(sub { grep { /ResolvedRefs=True/ } @{ read_status("$out/status.yaml")->{'BackendTLSPolicy ns/web-tls'} // [] } }, 20),
   'the policy resolves it');
is(web(), '127.0.0.1', 'and its backend verifies');
ok(wait_for(sub { metric('gateway2nginx_objects_held_whole') < metric('gateway2nginx_objects_held') - 20 }, 20),
   'the one it left is held as a digest again');

# ---- an unreferenced one changed or deleted applies nothing -------------------------
# counted between two route changes, each waited for until served
sub path_served { my ($code, $h, $body) = http_request($port, shift, 'localhost'); return $body =~ /endpoint=/ }
kube_apply('marker1', kube_route_yaml('/web', '/m1'));
ok(wait_for(sub { path_served('/m1') }, 20), 'a route change before is served');
my $applies = metric('gateway2nginx_applies_total');
kube_apply('tenant-changed', $tenant =~ s/junk1: x/junk1: y/gr);
my ($rc, $got) = kubectl('delete', 'configmap', 'junk-20', '-n', 'tenant');
is($rc, 0, 'a tenant ConfigMap deleted') or diag $got;
ok(wait_for(sub { digests_only() == 20 }, 20),
   'it is forgotten') or diag digests_only();
kube_apply('marker2', kube_route_yaml('/web', '/m1', '/m2'));
ok(wait_for(sub { path_served('/m2') }, 20), 'a route change after is served');
is(metric('gateway2nginx_applies_total'), $applies + 1, 'and nothing but it was applied in between');

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
stop_nginx($out);
