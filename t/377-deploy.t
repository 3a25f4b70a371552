# deploy/: the kustomize base renders offline with Debian's kubectl, holds
# what a platform team installs (least-privilege RBAC, a Deployment of 2
# replicas with probes, resources and a restricted securityContext, a PDB,
# the Service in front of the listeners only, the GatewayClass), applies
# to the API server simulation with kubectl; and every request a
# gateway2nginx run makes (its audit log in the simulation) is allowed by
# those rules, each of which it uses: a request the rules do not allow
# fails this test, and so does a rule nothing needs. The base writes no
# object but status and its Lease; an overlay with the component
# components/gateway-services (each Gateway's own Service) renders too,
# and its run is checked the same way against the base's rules and the
# component's.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);

if (my $why = kubectl_missing()) {
    plan skip_all => $why;
}
plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $api_port = server_port() + 18;
my $kube_port = server_port() + 21;

# ---- the manifests ----------------------------------------------------------------------
my ($rc, $rendered, $objects) = kustomize_deploy($dir, 'deploy');
is($rc, 0, 'kubectl kustomize deploy/ renders, offline') or diag $rendered;
my %by = %$objects;
my @objects = values %by;
is(join(' ', sort keys %by),
   'ClusterRole/gateway2nginx ClusterRole/gateway2nginx-namespaced ClusterRoleBinding/gateway2nginx '
   . 'ClusterRoleBinding/gateway2nginx-namespaced Deployment/gateway2nginx GatewayClass/gateway2nginx '
   . 'Namespace/gateway-system NetworkPolicy/gateway2nginx PodDisruptionBudget/gateway2nginx Role/gateway2nginx-leader-election '
   . 'RoleBinding/gateway2nginx-leader-election Service/gateway2nginx ServiceAccount/gateway2nginx',
   'what a platform team installs');
is(scalar(grep { ($_->{metadata}{namespace} // 'gateway-system') ne 'gateway-system' } @objects), 0,
   'namespaced objects in gateway-system');

my $deployment = $by{'Deployment/gateway2nginx'};
my $pod = $deployment->{spec}{template}{spec};
my %containers = map { ($_->{name} => $_) } @{ $pod->{containers} };
is(join(' ', sort keys %containers), 'gateway2nginx nginx', 'two containers: nginx, and gateway2nginx');
my ($nginx, $container) = @containers{qw(nginx gateway2nginx)};
my $args = join ' ', @{ $container->{args} };
my $nginx_args = join ' ', @{ $nginx->{args} };
is($deployment->{spec}{replicas}, 2, 'two replicas');
like($args, qr/^run --in-cluster --nginx-control (\S+)/, 'gateway2nginx run reads the API and asks nginx\'s supervisor');
my ($socket) = $args =~ /--nginx-control (\S+)/;
like($nginx_args, qr/^supervise -o (\S+) --control \Q$socket\E\b/, "which answers at $socket, in nginx's container");
my ($outdir) = $args =~ /-o (\S+)/;
is(($nginx_args =~ /-o (\S+)/)[0], $outdir, "both on one OUTDIR ($outdir)");
like($args, qr/--upstream-api 127\.0\.0\.1:\d+/, 'the upstream API on the pod\'s loopback');
like($args, qr/--listen-address 0\.0\.0\.0 --listen-address ::(?: |$)/, 'listeners on every IPv4 and IPv6 address: dual-stack');
like($args, qr/--status-listen 127\.0\.0\.1:\d+/, 'the status endpoint too');
is($pod->{serviceAccountName}, 'gateway2nginx', 'its own service account');
is($pod->{automountServiceAccountToken}, JSON::PP::false, 'its token not mounted in every container');
my %volume = map { ($_->{name} => $_) } @{ $pod->{volumes} };
my $secrets = '/var/run/secrets/kubernetes.io/serviceaccount';
sub token_mounts { grep { $_->{mountPath} eq $secrets || $_->{mountPath} =~ m{^/(?:var/)?run/secrets} } @{ $_[0]{volumeMounts} } }
is(scalar(token_mounts($nginx)), 0, 'nginx\'s container mounts no token');
my ($token_mount) = token_mounts($container);
my @sources = @{ $volume{ $token_mount->{name} // '' }{projected}{sources} // [] };
ok((grep { $_->{serviceAccountToken} && $_->{serviceAccountToken}{path} eq 'token' } @sources)
   && (grep { ($_->{configMap}{name} // '') eq 'kube-root-ca.crt' } @sources)
   && (grep { ($_->{downwardAPI}{items}[0]{path} // '') eq 'namespace' } @sources) && $token_mount->{readOnly},
   "gateway2nginx's mounts it at $secrets, read-only: a rotated token, the CA, the namespace");
is(scalar(grep { ($_->{name} // '') =~ /TOKEN|KUBE/i } @{ $nginx->{env} // [] }), 0, 'and nginx\'s environment names none');
ok($pod->{securityContext}{runAsNonRoot}, 'not root');
is($pod->{securityContext}{seccompProfile}{type}, 'RuntimeDefault', 'the runtime\'s seccomp profile');
my $group = $pod->{securityContext}{runAsGroup};
ok($group && $pod->{securityContext}{fsGroup} == $group, "one group for both, the emptyDirs' ($group)");
my %uid = map { ($_ => $containers{$_}{securityContext}{runAsUser}) } keys %containers;
ok($uid{nginx} > 0 && $uid{gateway2nginx} > 0 && $uid{nginx} != $uid{gateway2nginx},
   "each its own user: nginx $uid{nginx}, gateway2nginx $uid{gateway2nginx}");
for my $name (sort keys %containers) {
    my $c = $containers{$name};
    my $sc = $c->{securityContext};
    is_deeply($sc->{capabilities}, {drop => ['ALL']}, "$name: no capability");
    ok(!$sc->{allowPrivilegeEscalation} && defined $sc->{allowPrivilegeEscalation}, "$name: no privilege escalation");
    ok($sc->{readOnlyRootFilesystem}, "$name: a read-only root filesystem");
    is(scalar(grep { !exists $volume{$_->{name}}{emptyDir} && !$_->{readOnly} } @{ $c->{volumeMounts} }), 0,
       "$name: what it writes is in emptyDirs");
    ok(scalar(grep { $_->{name} eq 'run' && $_->{mountPath} eq '/run/gateway2nginx' } @{ $c->{volumeMounts} }),
       "$name: OUTDIR's parent shared, at /run/gateway2nginx");
    ok($c->{resources}{requests}{memory} && $c->{resources}{limits}{memory}, "$name: resources");
}
like(join(' ', map { $_->{mountPath} } @{ $container->{volumeMounts} }), qr{/tmp}, 'gateway2nginx\'s /tmp (nginx -t)');
like($outdir, qr{^/run/gateway2nginx/}, 'OUTDIR in it');
my ($spread) = @{ $pod->{topologySpreadConstraints} // [] };
ok($spread && $spread->{topologyKey} eq 'kubernetes.io/hostname' && $spread->{maxSkew} == 1,
   'the replicas spread over nodes');
is_deeply($spread->{labelSelector}{matchLabels}, $deployment->{spec}{selector}{matchLabels}, 'counting its own pods');
my ($delay) = $nginx_args =~ /--shutdown-delay (\d+)s\b/;
ok($delay && $delay * 2 <= $pod->{terminationGracePeriodSeconds},
   "on SIGTERM, nginx accepts for ${\($delay // 0)} s more (/readyz 503) before it drains, within the grace period's first half");
my ($alive_file) = $args =~ /--alive-file (\S+)/;
ok($alive_file && $alive_file =~ m{^/run/gateway2nginx/}, "the heartbeat written to an emptyDir ($alive_file)");
for my $probe (qw(livenessProbe startupProbe)) {
    is_deeply($container->{$probe}{exec}{command}, ['/usr/bin/gateway2nginx', 'alive', $alive_file],
              "$probe: the loop turns, read from the file, not a port");
}
my ($nginx_alive) = $nginx_args =~ /--alive-file (\S+)/;
ok($nginx_alive && $nginx_alive ne $alive_file, "supervise's heartbeat apart ($nginx_alive)");
is_deeply($nginx->{livenessProbe}{exec}{command}, ['/usr/bin/gateway2nginx', 'alive', $nginx_alive],
          'nginx\'s liveness: its own (one never restarts the other)');
is($container->{readinessProbe}{httpGet}{path}, '/readyz', 'readiness: nginx serves the configuration');
my %port = map { ($_->{name} => $_->{containerPort}) } map { @{ $_->{ports} } } values %containers;
is(join(' ', sort map { $_->{containerPort} } @{ $nginx->{ports} }), '443 80', 'nginx\'s ports: the listeners');
like($args, qr/--health-listen 0\.0\.0\.0:$port{health}\b/, 'the probes on the health port');
like($args, qr/--metrics-listen 0\.0\.0\.0:$port{metrics}\b/, '/metrics on a port of its own');
# the NetworkPolicy: no pod reaches the probes' port, only labelled
# namespaces the metrics port, anyone every other port
my $policy = $by{'NetworkPolicy/gateway2nginx'}{spec};
is_deeply($policy->{podSelector}{matchLabels}, $deployment->{spec}{selector}{matchLabels}, 'the policy selects the pods');
sub admitted {
    my ($port, $protocol) = @_;
    return join ' ', map { my $rule = $_; ($rule->{from} ? 'labelled' : 'anyone') x !!grep {
        ($_->{protocol} // 'TCP') eq $protocol && $port >= $_->{port} && $port <= ($_->{endPort} // $_->{port})
    } @{ $rule->{ports} } } @{ $policy->{ingress} };
}
is(admitted($port{health}, 'TCP'), '', 'no pod is admitted to the probes\' port');
is(admitted($port{metrics}, 'TCP'), 'labelled', 'only labelled namespaces to the metrics port');
is(admitted($_, 'TCP'), 'anyone', "anyone to TCP port $_") for 80, 443, 9114, 9117, 65535;
is(admitted(5353, 'UDP'), 'anyone', 'and to UDP ports');
is_deeply($by{'NetworkPolicy/gateway2nginx'}{spec}{ingress}[1]{from}[0]{namespaceSelector}{matchLabels},
          {'gateway2nginx.io/metrics' => 'allowed'}, 'the metrics label');
is($by{'PodDisruptionBudget/gateway2nginx'}{spec}{minAvailable}, 1, 'a PodDisruptionBudget');
is(join(' ', map { $_->{port} } @{ $by{'Service/gateway2nginx'}{spec}{ports} }), '80 443',
   'the Service carries the listeners only: not the health, status or upstream API ports');
is($by{'GatewayClass/gateway2nginx'}{spec}{controllerName}, 'gateway2nginx.io/controller', 'the GatewayClass is ours');
like($args, qr{--status-address-service gateway-system/gateway2nginx}, 'Gateways are reached at its load balancer');
unlike($args, qr{--gateway-service-external-name}, 'no Gateway\'s own Service in the base');
my @writes = map { my $r = $_; map { my $res = $_; map { "$_ $res" } grep { !/^(?:list|watch|get)$/ } @{ $r->{verbs} } }
                   @{ $r->{resources} } } map { @{ $by{"ClusterRole/$_"}{rules} } } qw(gateway2nginx gateway2nginx-namespaced);
is(scalar(grep { !m{^update \w+/status$} } @writes), 0, 'the base writes no object but status (and its Lease)')
    or diag "@writes";

# ---- with each Gateway's own Service: the component ---------------------------------------
my ($with_rc, $with_services, $with_objects) = kustomize_deploy($dir, 'with-services', 'gateway-services');
is($with_rc, 0, 'kubectl kustomize of an overlay with components/gateway-services') or diag $with_services;
my %with = %$with_objects;
is(join(' ', sort grep { !$by{$_} } keys %with),
   'ClusterRole/gateway2nginx-gateway-services ClusterRoleBinding/gateway2nginx-gateway-services '
   . 'ValidatingAdmissionPolicy/gateway2nginx-gateway-services ValidatingAdmissionPolicyBinding/gateway2nginx-gateway-services',
   'it adds the Service writes and the policy that limits them');
my ($with_g2n) = grep { $_->{name} eq 'gateway2nginx' } @{ $with{'Deployment/gateway2nginx'}{spec}{template}{spec}{containers} };
like(join(' ', @{ $with_g2n->{args} }), qr{--gateway-service-external-name gateway2nginx\.gateway-system\.svc\.cluster\.local$},
     'and the option to gateway2nginx\'s container: an alias of the Service in front of nginx');
my $service_rules = $with{'ClusterRole/gateway2nginx-gateway-services'}{rules};
is_deeply($service_rules, [{apiGroups => [''], resources => ['services'], verbs => [qw(create update delete)]}],
          'the writes: services, create, update, delete');
is_deeply($with{'ClusterRoleBinding/gateway2nginx-gateway-services'}{subjects},
          $by{'ClusterRoleBinding/gateway2nginx'}{subjects}, 'to gateway2nginx\'s service account');
# the policy: what the API server would enforce (the simulation stores it
# and evaluates nothing): its subject, operations, and the mark it asks
my $vap = $with{'ValidatingAdmissionPolicy/gateway2nginx-gateway-services'}{spec};
my ($subject) = @{ $by{'ClusterRoleBinding/gateway2nginx'}{subjects} };
is($vap->{matchConditions}[0]{expression}, "request.userInfo.username == 'system:serviceaccount:$subject->{namespace}:$subject->{name}'",
   'the policy applies to that service account\'s requests');
is_deeply($vap->{matchConstraints}{resourceRules}, [{apiGroups => [''], apiVersions => ['v1'], operations => [qw(CREATE UPDATE DELETE)],
                                                     resources => ['services']}], 'to every write the component grants');
is($vap->{failurePolicy}, 'Fail', 'and fails closed');
my $validations = join ' ', map { $_->{expression} } @{ $vap->{validations} };
my ($mark_key, $mark_value) = $validations =~ /object\.metadata\.labels\['([^']+)'\] == '([^']+)'/;
ok($mark_key && $validations =~ /oldObject\.metadata\.labels\['\Q$mark_key\E'\] == '\Q$mark_value\E'/
   && $validations =~ /object\.spec\.type == 'ExternalName'/,
   "the new Service and the one replaced or deleted must carry $mark_key=$mark_value, the new one an ExternalName");
is($with{'ValidatingAdmissionPolicyBinding/gateway2nginx-gateway-services'}{spec}{policyName}, 'gateway2nginx-gateway-services',
   'bound, denying');

# ---- applied with kubectl ---------------------------------------------------------------
my $audit = "$dir/kube-audit.log";
my $sim = start_kube_api($kube_port, '--audit', $audit, '--conflict-status-writes', '1');
my $out;
($rc, $out) = kubectl('apply', '-f', "$dir/with-services.yaml");
is($rc, 0, 'kubectl apply of the rendered manifests') or diag $out;
($rc, $out) = kubectl('get', 'deployment', 'gateway2nginx', '-n', 'gateway-system', '-o', 'jsonpath={.spec.replicas}');
is($out, '2', 'kubectl get reads them back');

# ---- every request of a run, against the rules ----------------------------------------------
# a second Service whose policy's CA is a Secret: read with get, as the
# ConfigMap of the first, once the policy refers to it
sub apply_application {
kube_apply('base', kube_web_yaml() . <<"YAML");
@{[ secret_yaml('ca-secret', 'ns', ca => 'ca.crt') ]}---
apiVersion: v1
kind: Service
metadata: {name: web2, namespace: ns}
spec: {ports: [{name: https, port: 443}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: web2-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: web2}]
  validation: {hostname: abc.example.com, caCertificateRefs: [{group: "", kind: Secret, name: ca-secret}]}
YAML
kube_apply('route', kube_route_yaml('/web'));
kube_apply('slice', kube_slice_yaml(server_port() + 1, 1));
}
apply_application();
my @run_flags = ('--kubeconfig', kubeconfig(), '-o', "$dir/out", '--reload', "$dir/out/nginx.pid",
                 '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset, '--listen-address', '127.0.0.1',
                 '--module-dir', module_dir(), '--status-listen', 'off', '--debounce', '100',
                 '--leader-elect-resource-namespace', 'gateway-system', '--leader-elect-lease-duration', '3s',
                 '--leader-elect-renew-deadline', '2s', '--leader-elect-retry-period', '500ms');
sub requests { audit_requests($audit) }
sub used { my ($verb, $resource) = @_; scalar grep { $_->{verb} eq $verb && $_->{resource} . ($_->{subresource} ? "/$_->{subresource}" : '') eq $resource } requests() }
# the base binds both its ClusterRoles cluster-wide
my $cluster_rules = [map { @{ $by{"ClusterRole/$_"}{rules} } } qw(gateway2nginx gateway2nginx-namespaced)];
is_deeply([map { $by{"ClusterRoleBinding/$_"}{roleRef}{name} } qw(gateway2nginx gateway2nginx-namespaced)],
          [qw(gateway2nginx gateway2nginx-namespaced)], 'the base binds both ClusterRoles cluster-wide');
# what is in no namespace, as the API server says (kubectl api-resources)
my ($api_rc, $api_resources) = kubectl('api-resources', '--namespaced=false', '-o', 'name');
is($api_rc, 0, 'kubectl api-resources --namespaced=false') or diag $api_resources;
my %cluster_wide = map { (split /\./, $_, 2)[0] => 1 } split /\n/, $api_resources;
ok($cluster_wide{gatewayclasses} && $cluster_wide{clustertrustbundles} && !$cluster_wide{gateways},
   'it names GatewayClasses and ClusterTrustBundles, not Gateways') or diag $api_resources;
sub cluster_wide { $cluster_wide{ (split m{/}, shift)[0] } }
is(scalar(grep { grep { cluster_wide($_) } @{ $_->{resources} } }
          @{ $by{'ClusterRole/gateway2nginx-namespaced'}{rules} }), 0, 'gateway2nginx-namespaced: namespaced kinds only');
is(scalar(grep { grep { !cluster_wide($_) } @{ $_->{resources} } }
          @{ $by{'ClusterRole/gateway2nginx'}{rules} }), 0, 'gateway2nginx: what is in no namespace only');
my $lease_rules = $by{'Role/gateway2nginx-leader-election'}{rules};
my $with_rules = [@$cluster_rules, @$service_rules];
# each run is stopped once it has called what every rule grants (statuses
# are written in the order they are queued, one kind after another), or
# at the deadline, and what it called is then checked

# ---- the base ---------------------------------------------------------------------------------
unlink $audit;
my $log = "$dir/run.log";
my $run = start_run($log, @run_flags);
ok(wait_for(sub {
       used('update', 'httproutes/status') && used('update', 'leases') >= 2
           && (rbac_check($audit, $cluster_rules, $lease_rules, 'gateway-system'))[1] eq ''
   }, 30), 'the run of the base wrote status, renewed its Lease, read what it refers to') or diag slurp($log);
kill 'TERM', $run;
waitpid($run, 0);
my ($denied, $unused, $count) = rbac_check($audit, $cluster_rules, $lease_rules, 'gateway-system');
ok($count > 20, "$count requests by gateway2nginx");
is($denied, '', 'every request is allowed by the ClusterRole, or the Role in gateway-system');
is($unused, '', 'and every rule is used: nothing is granted that gateway2nginx does not call');
is(used('create', 'services') + used('update', 'services') + used('delete', 'services'), 0, 'it wrote no Service');

# ---- with components/gateway-services ---------------------------------------------------------
unlink $audit;
my $log2 = "$dir/run2.log";
$run = start_run($log2, @run_flags, '--gateway-service-external-name', 'gateway2nginx.gateway-system.svc.cluster.local');
# each Gateway's own Service: made for gw, changed with its
# infrastructure; made for a second Gateway, deleted with it
ok(wait_for(sub { used('create', 'services') >= 1 }, 30), 'the run made the Gateway\'s Service') or diag slurp($log2);
my ($own) = grep { ($_->{spec}{type} // '') eq 'ExternalName' }
            @{ decode_json((kubectl('get', 'services', '-n', 'ns', '-o', 'json'))[1])->{items} };
is($own && $own->{metadata}{labels}{$mark_key}, $mark_value, "it carries the mark the policy asks ($mark_key=$mark_value)");
my $gateway = kube_web_yaml() =~ /(apiVersion: gateway\.networking\.k8s\.io\/v1\nkind: Gateway\n.*?)(?=---|\z)/s ? $1 : die;
(my $labelled = $gateway) =~ s/(\n  listeners:)/\n  infrastructure: {labels: {team: a}}$1/;
kube_apply('gateway', $labelled);
(my $second = $gateway) =~ s/name: gw,/name: second,/;
kube_apply('second', $second);
ok(wait_for(sub { used('update', 'services') && used('create', 'services') >= 2 }, 30), 'changed it, made another')
    or diag slurp($log2);
kubectl('delete', 'gateway', 'second', '-n', 'ns');
# (the statuses the base's run wrote are current: this one writes none,
# and what the base's rules grant was shown used above)
sub service_rules_unused { (rbac_check($audit, $service_rules, [], 'gateway-system'))[1] }
ok(wait_for(sub { used('update', 'leases') >= 2 && service_rules_unused() eq '' }, 30),
   'the run renewed its Lease and deleted the second Gateway\'s Service') or diag slurp($log2);
kill 'TERM', $run;
waitpid($run, 0);

($denied, $unused, $count) = rbac_check($audit, $with_rules, $lease_rules, 'gateway-system');
ok($count > 20, "$count requests by gateway2nginx");
is($denied, '', 'every request is allowed by the ClusterRoles, or the Role in gateway-system');
is(service_rules_unused(), '', 'and every rule the component adds is used');
is(scalar(grep { grep { $_ eq '*' } map { (@{ $_->{apiGroups} }, @{ $_->{resources} }, @{ $_->{verbs} }) } @$_ }
           $with_rules, $lease_rules), 0, 'no wildcard');

# ---- with components/watch-namespaces -----------------------------------------------------------
my ($watch_rc, $watch_text, $watch_objects) = kustomize_deploy($dir, 'watch-namespaces', 'watch-namespaces');
is($watch_rc, 0, 'kubectl kustomize of an overlay with components/watch-namespaces') or diag $watch_text;
my %watch = %$watch_objects;
ok(!$watch{'ClusterRoleBinding/gateway2nginx-namespaced'} && $watch{'ClusterRoleBinding/gateway2nginx'},
   'the namespaced kinds are bound cluster-wide no more; what is in no namespace still is');
my ($watch_g2n) = grep { $_->{name} eq 'gateway2nginx' } @{ $watch{'Deployment/gateway2nginx'}{spec}{template}{spec}{containers} };
my @watched = join(' ', @{ $watch_g2n->{args} }) =~ /--watch-namespace (\S+)/g;
my $binding = $watch{'RoleBinding/gateway2nginx'};
ok(@watched == 1 && $binding->{metadata}{namespace} eq $watched[0] && $binding->{roleRef}{name} eq 'gateway2nginx-namespaced'
   && $binding->{roleRef}{kind} eq 'ClusterRole', "gateway2nginx watches @watched, where a RoleBinding grants the namespaced kinds");
is_deeply($binding->{subjects}, $by{'ClusterRoleBinding/gateway2nginx'}{subjects}, 'to its service account');
my $front_rules = $watch{'Role/gateway2nginx-front'}{rules};
is($watch{'RoleBinding/gateway2nginx-front'}{metadata}{namespace}, 'gateway-system',
   'and the Service in front of nginx is read in gateway-system');

# a run watching ns (standing for the example's namespace), against a
# fresh simulation (status to write again), checked as if the RoleBinding
# were in ns: every request allowed, every rule used
kill 'TERM', $sim;
waitpid($sim, 0);
unlink "$dir/kube-api.json";  # its state: it starts empty
$audit = "$dir/kube-audit-watch.log";
$sim = start_kube_api($kube_port, '--audit', $audit, '--conflict-status-writes', '1');
($rc, $out) = kubectl('apply', '-f', "$dir/watch-namespaces.yaml");
is($rc, 0, 'kubectl apply of those manifests') or diag $out;
apply_application();
kube_apply('elsewhere', "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n---\n"
           . "apiVersion: v1\nkind: Secret\nmetadata: {name: unseen, namespace: other}\ndata: {k: dg==}\n");
my $watch_cluster_rules = $watch{'ClusterRole/gateway2nginx'}{rules};
my $watch_rules = {ns => $by{'ClusterRole/gateway2nginx-namespaced'}{rules}, 'gateway-system' => [@$lease_rules, @$front_rules]};
my $log3 = "$dir/run3.log";
$run = start_run($log3, @run_flags, '--watch-namespace', 'ns', '--status-address-service', 'gateway-system/gateway2nginx');
ok(wait_for(sub {
       used('update', 'httproutes/status') && used('update', 'leases') >= 2
           && (rbac_check($audit, $watch_cluster_rules, $watch_rules))[1] eq ''
   }, 30), 'the run watching ns wrote status, renewed its Lease, read what it refers to') or diag slurp($log3);
kill 'TERM', $run;
waitpid($run, 0);
($denied, $unused, $count) = rbac_check($audit, $watch_cluster_rules, $watch_rules);
ok($count > 20, "$count requests by gateway2nginx");
is($denied, '', 'every request is allowed by the ClusterRole (what is in no namespace) or the Roles in ns and gateway-system');
is($unused, '', 'and every rule is used');
is(scalar(grep { $_->{verb} =~ /^(?:list|watch)$/ && !cluster_wide($_->{resource})
                  && ($_->{namespace} // '(all)') ne 'ns' && !($_->{resource} eq 'services' && $_->{namespace} eq 'gateway-system') }
          requests()), 0, 'every list and watch of a namespaced kind is of ns (the front Service\'s, of gateway-system)');
like(slurp($log3), qr/listed 1 Service\(s\) in gateway-system/, 'the Service in front of nginx, in gateway-system alone');

kill 'TERM', $sim;
waitpid($sim, 0);

# ---- --watch-namespace on the command line ------------------------------------------------------
my $bin = $ENV{GATEWAY2NGINX} || 'build/gateway2nginx';
my $usage = `$bin run -f $dir/base.yaml -o $dir/out4 --reload $dir/out4/nginx.pid --upstream-api 127.0.0.1:$api_port --watch-namespace ns 2>&1`;
is($? >> 8, 1, '--watch-namespace with files: a usage error');
like($usage, qr/--watch-namespace is for the API server: with --kubeconfig or --in-cluster/, 'said so');
$usage = `$bin run --kubeconfig @{[kubeconfig()]} -o $dir/out4 --reload $dir/out4/nginx.pid --upstream-api 127.0.0.1:$api_port --watch-namespace Not_A_Name 2>&1`;
is($? >> 8, 1, '--watch-namespace with what is no namespace\'s name: a usage error');
like($usage, qr/--watch-namespace takes a namespace's name, not Not_A_Name/, 'said so');
