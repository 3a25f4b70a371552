# gateway2nginx run --gateway-service-external-name against the API server
# simulation, seen with the real kubectl: each Gateway of ours it accepts
# gets its own Service in its namespace (GEP-1762: <gateway>-<class>,
# labelled gateway.networking.k8s.io/gateway-name, an ExternalName alias of
# the Service in front of nginx, owned by the Gateway) carrying the
# Gateway's spec.infrastructure labels and annotations (GEP-1867); changed
# as they change, with what others add kept; made again when deleted by
# hand; deleted when the Gateway goes or leaves our class; a Service of
# that name it did not make left alone; reserved keys not taken from the
# Gateway; the feature claimed by the GatewayClass.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use JSON::PP;

if (my $why = kubectl_missing()) {
    plan skip_all => $why;
}
plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $api_port = server_port() + 18;
my $kube_port = server_port() + 21;
my $health_port = server_port() + 17;
my $alias = 'gateway2nginx.gateway-system.svc.cluster.local';

my $audit = "$dir/kube-audit.log";
my $sim = start_kube_api($kube_port, '--bookmark-seconds', '1', '--audit', $audit);

sub gateway_yaml {
    my ($name, $class, $infrastructure) = @_;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: $name, namespace: ns}\n"
         . "spec:\n  gatewayClassName: $class\n" . ($infrastructure ? "  infrastructure:\n$infrastructure" : '')
         . "  listeners:\n  - {name: http, port: 80, protocol: HTTP}\n  - {name: dns, port: 5353, protocol: UDP}\n";
}
my $infrastructure = "    labels: {key2: value2, app.kubernetes.io/managed-by: someone}\n    annotations: {key1: value1}\n";
kube_apply('base', "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n" . gateway_manifests()
                   . "---\napiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: theirs}\n"
                   . "spec: {controllerName: example.com/other}\n"
                   . gateway_yaml('infra', 'ours', $infrastructure) . gateway_yaml('elsewhere', 'theirs')
                   . gateway_yaml('taken', 'ours')
                   # two names that make one Service name, x-ours-b
                   . "---\napiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: ours-b}\n"
                   . "spec: {controllerName: gateway2nginx.io/controller}\n"
                   . "---\napiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: b}\n"
                   . "spec: {controllerName: gateway2nginx.io/controller}\n"
                   . gateway_yaml('x', 'ours-b') . gateway_yaml('x-ours', 'b')
                   . "---\napiVersion: v1\nkind: Service\nmetadata: {name: taken-ours, namespace: ns}\n"
                   . "spec: {ports: [{name: http, port: 80}]}\n");

sub jsonpath { my ($rc, $out) = kubectl('get', @_); return $rc == 0 ? $out : "(kubectl: $out)" }
sub service { my ($rc, $out) = kubectl('get', 'service', shift, '-n', 'ns', '-o', 'json'); return $rc == 0 ? decode_json($out) : undef }
my $taken_version = service('taken-ours')->{metadata}{resourceVersion};

my $log = "$dir/run.log";
my $out = "$dir/out";
my $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', $out, '--reload', "$out/nginx.pid",
                    '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                    '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                    '--debounce', '100', '--health-listen', "127.0.0.1:$health_port",
                    '--gateway-service-external-name', $alias);
# no nginx needs to run: a Gateway is accepted, and has its Service, before
ok(wait_for(sub { -f "$out/nginx.conf" }, 20), 'a configuration is written') or diag slurp($log);

# ---- made as the Gateway says -------------------------------------------------
ok(wait_for(sub { service('infra-ours') }, 15), 'the Gateway infra of class ours has its Service infra-ours')
    or diag slurp($log);
my $svc = service('infra-ours');
my %labels = %{ $svc->{metadata}{labels} };
is($labels{key2}, 'value2', 'with the Gateway\'s infrastructure label');
is($labels{'gateway.networking.k8s.io/gateway-name'}, 'infra', 'labelled with the Gateway\'s name');
is($labels{'gateway.networking.k8s.io/gateway-class-name'}, 'ours', 'and its class');
is($labels{'app.kubernetes.io/managed-by'}, 'gateway2nginx', 'a reserved key is not the Gateway\'s to set');
like(slurp($log), qr{Gateway ns/infra: spec\.infrastructure\.labels\.app\.kubernetes\.io/managed-by is not propagated},
     'which is said');
is($svc->{metadata}{annotations}{key1}, 'value1', 'with the Gateway\'s infrastructure annotation');
my $gateway_uid = jsonpath('gateway', 'infra', '-n', 'ns', '-o', 'jsonpath={.metadata.uid}');
is(join(' ', map { "$_->{kind}/$_->{name}/$_->{uid}" } @{ $svc->{metadata}{ownerReferences} || [] }),
   "Gateway/infra/$gateway_uid", 'owned by the Gateway');
is("$svc->{spec}{type} $svc->{spec}{externalName}", "ExternalName $alias", 'an alias of the Service in front of nginx');
is(join(' ', map { "$_->{name}=$_->{port}/$_->{protocol}" } @{ $svc->{spec}{ports} }), 'tcp-80=80/TCP udp-5353=5353/UDP',
   'with the ports of its listeners');
is(jsonpath('services', '-n', 'ns', '-l', 'gateway.networking.k8s.io/gateway-name=infra', '-o', 'name'),
   "service/infra-ours\n", 'found by the gateway-name label, as the conformance suite looks');
ok(service('gw-ours'), 'a Gateway without infrastructure has its Service too');
ok(wait_for(sub { jsonpath('gatewayclass', 'ours', '-o', 'jsonpath={.status.supportedFeatures[*].name}')
                  =~ /\bGatewayInfrastructurePropagation\b/ }, 15),
   'the GatewayClass claims GatewayInfrastructurePropagation')
    or diag jsonpath('gatewayclass', 'ours', '-o', 'json');

# ---- not made --------------------------------------------------------------
is(jsonpath('services', '-n', 'ns', '-l', 'gateway.networking.k8s.io/gateway-name=elsewhere', '-o', 'name'), '',
   'none for a Gateway of another controller\'s class');
ok(wait_for(sub { count_in($log, qr{Service ns/taken-ours of Gateway ns/taken: a Service of that name that gateway2nginx did not make is there; left alone}) }, 10),
   'a Service of that name it did not make: said') or diag slurp($log);
my $taken = service('taken-ours');
is($taken->{metadata}{resourceVersion}, $taken_version, 'and left alone');
ok(!$taken->{metadata}{labels}, 'unlabelled');

ok(wait_for(sub { service('x-ours-b') }, 15), 'of two Gateways whose Services would have one name')
    or diag slurp($log);
is(service('x-ours-b')->{metadata}{labels}{'gateway.networking.k8s.io/gateway-name'}, 'x', 'the first has it');
ok(wait_for(sub { count_in($log, qr{Service ns/x-ours-b of Gateway ns/x-ours: the name of another Gateway's Service; it has none}) }, 10),
   'the other has none, which is said') or diag slurp($log);
my $version = service('x-ours-b')->{metadata}{resourceVersion};

# ---- changed as the Gateway changes -----------------------------------------
my ($rc, $got) = kubectl('label', 'service', 'infra-ours', '-n', 'ns', 'team=x');
is($rc, 0, 'kubectl label adds a label of its own') or diag $got;
kube_apply('infra', gateway_yaml('infra', 'ours', "    labels: {key3: value3}\n    annotations: {key1: changed}\n"));
ok(wait_for(sub { my $s = service('infra-ours'); $s && ($s->{metadata}{labels}{key3} // '') eq 'value3' }, 15),
   'a label added to the Gateway\'s infrastructure is added') or diag slurp($log);
is(service('x-ours-b')->{metadata}{resourceVersion}, $version,
   'the two Gateways of one Service name did not take it from each other meanwhile');
$svc = service('infra-ours');
ok(!exists $svc->{metadata}{labels}{key2}, 'one removed from it is removed');
is($svc->{metadata}{labels}{team}, 'x', 'one someone else added stays');
is($svc->{metadata}{annotations}{key1}, 'changed', 'a changed annotation is changed');

# ---- a tenant who edits it without pause gets at most a write a second -------
sub metric { my ($name) = @_; my $m = `curl -s http://127.0.0.1:$health_port/metrics`; return $m =~ /^\Q$name\E (\d+)$/m ? $1 : -1 }
my $updates = 'gateway2nginx_gateway_service_writes_total{result="updated"}';
my $updated_before = metric($updates);
my $edits_began = time;
for my $i (1 .. 50) {
    kubectl('label', '--overwrite', 'service', 'infra-ours', '-n', 'ns', "key3=edit$i");
}
ok(wait_for(sub { my $s = service('infra-ours'); $s && ($s->{metadata}{labels}{key3} // '') eq 'value3' }, 15),
   'after 50 edits of a label the Gateway sets, it is put back') or diag slurp($log);
my $seconds = time - $edits_began;
my $writes = metric($updates) - $updated_before;
cmp_ok($writes, '<=', int($seconds) + 1, sprintf('in %.1f s, with %d updates: at most one a second', $seconds, $writes));

# ---- made again, deleted ----------------------------------------------------
my $uid = $svc->{metadata}{uid};
($rc, $got) = kubectl('delete', 'service', 'infra-ours', '-n', 'ns');
is($rc, 0, 'kubectl delete of the Service') or diag $got;
ok(wait_for(sub { my $s = service('infra-ours'); $s && $s->{metadata}{uid} ne $uid }, 15),
   'it is made again') or diag slurp($log);
($rc, $got) = kubectl('delete', 'gateway', 'infra', '-n', 'ns');
is($rc, 0, 'kubectl delete of the Gateway') or diag $got;
ok(wait_for(sub { !service('infra-ours') }, 15), 'its Service is deleted with it') or diag slurp($log);
($rc, $got) = kubectl('patch', 'gateway', 'gw', '-n', 'ns', '--type=merge', '-p', '{"spec":{"gatewayClassName":"theirs"}}');
is($rc, 0, 'a Gateway moved to another controller\'s class') or diag $got;
ok(wait_for(sub { !service('gw-ours') }, 15), 'its Service is deleted') or diag slurp($log);
ok(service('taken-ours'), 'the one it did not make is still there');

is(metric('gateway2nginx_gateway_service_writes_total{result="created"}'), 4, '/metrics: four made (one again)');
cmp_ok(metric('gateway2nginx_gateway_service_writes_total{result="updated"}'), '>=', 1, 'updated');
is(metric('gateway2nginx_gateway_service_writes_total{result="deleted"}'), 2, 'two deleted');
is(metric('gateway2nginx_gateway_service_writes_total{result="failed"}'), 0, 'none failed');
my @writes = grep { $_->{resource} eq 'services' && $_->{verb} =~ /^(create|update|delete)$/ } audit_requests($audit);
is(join(' ', sort { $a cmp $b } keys %{{ map { ("$_->{verb} $_->{namespace}" => 1) } @writes }}),
   'create ns delete ns update ns', 'its writes: Services in the Gateways\' namespace');

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
kill 'TERM', $sim;
waitpid($sim, 0);
