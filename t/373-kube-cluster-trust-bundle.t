# A BackendTLSPolicy whose CA is a ClusterTrustBundle (GEP-5075), through
# the API server simulation with the real kubectl: the bundle selected by
# name from a policy's namespace with no ReferenceGrant; missing, the
# policy is ResolvedRefs=False and its traffic fails closed (502); made,
# served; rotated (a CA that did not sign the backend, then both CAs as a
# rotation holds them) each pushed as the trust of the policy reading it,
# with the same nginx workers and no reload; a bundle nothing reads
# changes nothing; deleted, fails closed again.
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

start_numbered_backends(1, $backend_port);
my $sim = start_kube_api($kube_port);
my $bundle = 'corp.example:backends:current';
(my $web = kube_web_yaml()) =~ s/\{group: "", kind: ConfigMap, name: ca\}/{group: certificates.k8s.io, kind: ClusterTrustBundle, name: "$bundle"}/
    or die 'kube_web_yaml names no ConfigMap ca';
kube_apply('base', $web . "---\n" . kube_slice_yaml($backend_port, 1) . "---\n" . kube_route_yaml('/'));

sub trust_bundle {
    my ($name, @pem_files) = @_;
    my $pem = join '', map { slurp("$dir/certs/$_") } @pem_files;
    $pem =~ s/^/    /mg;
    return "apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: \"$name\"}\n"
         . "spec:\n  signerName: corp.example/backends\n  trustBundle: |\n$pem";
}

my $log = "$dir/run.log";
my $out = "$dir/out";
my $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', $out, '--start-nginx',
                    '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                    '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                    '--debounce', '50', '--health-listen', "127.0.0.1:$health_port");
sub metric { run_metric($health_port, shift) }
sub status_code { my ($code) = http_request($port, '/', 'localhost'); return $code }
sub jsonpath { my ($rc, $o) = kubectl('get', @_); return $rc == 0 ? $o : "(kubectl: $o)" }
sub resolved_refs {
    jsonpath('backendtlspolicy', 'web-tls', '-n', 'ns', '-o',
             'jsonpath={.status.ancestors[0].conditions[?(@.type=="ResolvedRefs")].status}/'
             . '{.status.ancestors[0].conditions[?(@.type=="ResolvedRefs")].reason}');
}
sub trust_pushes { count_in($log, qr/trust of 1 policy\(ies\) pushed to nginx, no reload/) }

# ---- missing: fails closed ---------------------------------------------------
ok(wait_for(sub { -f "$out/nginx.pid" && status_code() eq '502' }, 30),
   'the bundle missing: the policy\'s traffic fails closed (502)') or diag slurp($log);
ok(wait_for(sub { resolved_refs() eq 'False/InvalidCACertificateRef' }, 15), 'ResolvedRefs=False/InvalidCACertificateRef')
    or diag resolved_refs();
like(jsonpath('backendtlspolicy', 'web-tls', '-n', 'ns', '-o', 'jsonpath={.status.ancestors[0].conditions}'),
     qr/ClusterTrustBundle \Q$bundle\E does not exist/, 'its message names the bundle');

# ---- made: served -------------------------------------------------------------
kube_apply('bundle', trust_bundle($bundle, 'ca.crt'));
my ($rc, $listed) = kubectl('get', 'clustertrustbundles');
is($rc, 0, 'kubectl get clustertrustbundles') or diag $listed;
like($listed, qr/^\Q$bundle\E\s/m, 'kubectl lists the bundle');
ok(wait_for(sub { status_code() eq '200' }, 15), 'the bundle made: served, verified by its CA') or diag slurp($log);
ok(wait_for(sub { resolved_refs() eq 'True/ResolvedRefs' }, 15), 'ResolvedRefs=True') or diag resolved_refs();

# ---- rotated: trust pushed, no reload ------------------------------------------
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);
my $reloads = metric(qr/gateway2nginx_reloads_total\{reason="\w+"\}/);
my $pushes = trust_pushes();
my $updates = metric(qr/gateway2nginx_trust_updates_total/);
kube_apply('bundle', trust_bundle($bundle, 'unrelated-ca.crt'));
ok(wait_for(sub { status_code() eq '502' }, 15), 'rotated to a CA that did not sign the backend: fails closed (502)');
ok(wait_for(sub { trust_pushes() >= $pushes + 1 }, 10), 'pushed as the trust of the one policy reading it')
    or diag slurp($log);
kube_apply('bundle', trust_bundle($bundle, 'unrelated-ca.crt', 'ca.crt'));
ok(wait_for(sub { status_code() eq '200' }, 15), 'both CAs, as a rotation holds them: served');
ok(wait_for(sub { trust_pushes() >= $pushes + 2 }, 10), 'pushed likewise');
ok(wait_for(sub { metric(qr/gateway2nginx_trust_updates_total/) >= $updates + 2 }, 10), 'counted as trust updates');
is(metric(qr/gateway2nginx_reloads_total\{reason="\w+"\}/), $reloads, 'no reload');
is(worker_pids($master), $workers, 'the same workers served every rotation');
is(resolved_refs(), 'True/ResolvedRefs', 'the policy\'s status as it was');

# ---- a bundle nothing reads ----------------------------------------------------
my $applies = metric(qr/gateway2nginx_applies_total/);
my $whole_cpu = metric(qr/gateway2nginx_apply_cpu_seconds_total\{way="whole"\}/);
kube_apply('other', trust_bundle('corp.example:backends:other', 'unrelated-ca.crt'));
ok(wait_for(sub { metric(qr/gateway2nginx_applies_total/) > $applies }, 10), 'a bundle nothing reads: applied');
is(metric(qr/gateway2nginx_apply_cpu_seconds_total\{way="whole"\}/), $whole_cpu, 'without the whole way');
is(status_code(), '200', 'still served');

# ---- deleted: fails closed -----------------------------------------------------
($rc, my $said) = kubectl('delete', 'clustertrustbundle', $bundle);
is($rc, 0, 'kubectl delete clustertrustbundle') or diag $said;
ok(wait_for(sub { status_code() eq '502' }, 15), 'the bundle deleted: fails closed (502)') or diag slurp($log);
ok(wait_for(sub { resolved_refs() eq 'False/InvalidCACertificateRef' }, 15), 'ResolvedRefs=False again')
    or diag resolved_refs();

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
stop_nginx($out);
stop_nginx("$dir/backends");
kill 'TERM', $sim;
waitpid($sim, 0);
