# The image of `make image`, run as deploy/'s Deployment says, against the
# API server simulation: no container engine runs here, so its rootfs is
# the container (umoci unpack), entered with chroot in new PID, mount and
# network namespaces: read-only root, emptyDirs (tmpfs) where the
# Deployment mounts them, the service account token, CA and namespace
# where Kubernetes mounts them, the Deployment's user, args, env and
# sysctls, every capability dropped and no new privileges.
#   - the rendered manifests and deploy/examples/first-gateway.yaml (a
#     Gateway, HTTPRoute and BackendTLSPolicy) applied with kubectl, and
#     an application's Services and EndpointSlices, become traffic through the
#     container's nginx (ports 80 and 443 bound with no capability);
#   - status comes back (the route Accepted, the Gateway's address from
#     the Service's load balancer);
#   - a backend signed by a CA among the image's public ones (the test CA
#     added to its bundle here) verified by wellKnownCACertificates: System;
#   - every request the container makes is allowed by the ClusterRole or
#     the Role (the simulation's audit log), and each rule is used;
#   - SIGTERM: a request in flight is answered, the container ends with 0.
# `make test-deploy` builds the image and runs this with GTLS_IMAGE set.
use lib 't/lib';
use strict;
use warnings;
use Test::GatewayTLS;
use Test::More;
use JSON::PP;
use File::Path qw(make_path);
use Time::HiRes qw(sleep time);

my $image = $ENV{GTLS_IMAGE};
plan skip_all => 'GTLS_IMAGE (an OCI layout of make image) not set: make test-deploy builds and tests the image'
    unless $image;
plan skip_all => "$image is not an OCI layout" unless -f "$image/index.json";
plan skip_all => 'needs root (mount, chroot and network namespaces)' if $> != 0;
if (my $why = kubectl_missing()) {
    plan skip_all => $why;
}
for my $tool (qw(umoci unshare ip)) {
    plan skip_all => "$tool not installed" if system("command -v $tool >/dev/null") != 0;
}
# the whole test in a network namespace of its own: ports 80 and 443, and
# the pod's sysctls, are its alone
unless ($ENV{GTLS_IMAGE_NETNS}) {
    $ENV{GTLS_IMAGE_NETNS} = 1;
    exec('unshare', '--net', '--', $^X, '-Mlib=t/lib', $0) or die "unshare: $!";
}
# and an address for the backends, as pods have (loopback endpoints are
# refused, as the API server refuses them)
my $pods = '10.244.0';
system("ip link set lo up && ip addr add $pods.1/32 dev lo") == 0
    or die "cannot set up the network namespace\n";
plan 'no_plan';
my $main_pid = $$;
setup();
my $dir = servroot();
my $kube_port = server_port() + 21;
my $slow_port = server_port() + 2;
my $backend_port = server_port() + 1;

# ---- the Deployment, as rendered ------------------------------------------------------------
my $rendered = `kubectl kustomize deploy 2>&1`;
is($?, 0, 'kubectl kustomize deploy/') or diag $rendered;
spit("$dir/deploy.yaml", $rendered);
my @objects = @{ decode_json(`python3 -c 'import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))' $dir/deploy.yaml`) };
my %by = map { ("$_->{kind}/$_->{metadata}{name}" => $_) } @objects;
my $pod = $by{'Deployment/gateway2nginx'}{spec}{template}{spec};
my ($container) = @{ $pod->{containers} };
my $namespace = $by{'Deployment/gateway2nginx'}{metadata}{namespace};
my %volumes = map { ($_->{name} => $_) } @{ $pod->{volumes} };
my ($uid, $gid) = ($pod->{securityContext}{runAsUser}, $pod->{securityContext}{runAsGroup});
ok($uid && $gid, "the pod's user $uid:$gid");

# the pod's sysctls, in this network namespace
for my $s (@{ $pod->{securityContext}{sysctls} // [] }) {
    (my $path = "/proc/sys/$s->{name}") =~ s{\.}{/}g;
    spit($path, "$s->{value}\n");
}

# ---- the container's filesystem: the image unpacked -------------------------------------------
my $bundle = "$dir/bundle";
my $unpacked = `umoci unpack --image '$image:gateway2nginx' '$bundle' 2>&1`;
is($?, 0, 'umoci unpack') or diag $unpacked;
my $spec = decode_json(slurp("$bundle/config.json"));
my $root = "$bundle/rootfs";

# what the image says it is: labels of the build, and an SBOM listing
# exactly the packages of its own dpkg database
my %labels = %{ $spec->{annotations} // {} };
like($labels{'org.opencontainers.image.revision'} // '', qr/^[0-9a-f]{40}$/, 'labelled with the commit it was built from');
like($labels{'org.opencontainers.image.version'} // '', qr/^\d+\.\d+/, 'and the packages\' version');
ok(exists $labels{'org.opencontainers.image.licenses'}, 'and the license (NOASSERTION until one is chosen)');
my $sbom = decode_json(slurp("$root/usr/share/gateway2nginx/sbom.spdx.json") // '{}');
my $installed = `dpkg-query --admindir=$root/var/lib/dpkg -W --showformat='\${db:Status-Abbrev} \${Package} \${Version}\n'`;
my @installed = sort map { /^ii\s+(\S+) (\S+)$/ ? "$1 $2" : () } split /\n/, $installed;
is_deeply([sort map { "$_->{name} $_->{versionInfo}" } @{ $sbom->{packages} // [] }], \@installed,
          'the SBOM (SPDX ' . ($sbom->{spdxVersion} // '?') . ') lists exactly the ' . scalar(@installed) . ' packages installed');
# what the runtime makes before the root is read-only: mount points, in
# the rootfs (its /var/run is a link to /run: resolved inside, not here)
my $secrets = '/run/secrets/kubernetes.io/serviceaccount';
is(readlink("$root/var/run"), '/run', 'the rootfs\'s /var/run is /run');
make_path("$root/dev", "$root/proc", "$root$secrets", map { "$root$_->{mountPath}" } @{ $container->{volumeMounts} });
# the test CA among the image's public ones, as update-ca-certificates puts
# a local CA there: System trust verifies what it signed
my $ca_hash = `openssl x509 -hash -noout -in @{[certs_dir()]}/ca.crt`;
chomp $ca_hash;
ok(-d "$root/etc/ssl/certs" && -e "$root/usr/lib/ssl/certs", 'the image has a CA bundle where OpenSSL looks');
make_path("$root/etc/ssl/certs");
spit("$root/etc/ssl/certs/$ca_hash.0", slurp(certs_dir() . '/ca.crt'));
ok(!-e $secrets || -e "/var/run/secrets/kubernetes.io/serviceaccount/token", 'nothing made outside it');

# ---- the API server simulation, the service account -------------------------------------------
my $audit = "$dir/kube-audit.log";
my $sim = start_kube_api($kube_port, '--audit', $audit, '--conflict-status-writes', '1');
my $sa = "$dir/serviceaccount";
make_path($sa);
spit("$sa/token", slurp("$dir/kube-api.token"));
spit("$sa/ca.crt", slurp(certs_dir() . '/ca.crt'));
spit("$sa/namespace", $namespace);
my ($rc, $out) = kubectl('apply', '-f', "$dir/deploy.yaml");
is($rc, 0, 'the rendered manifests applied with kubectl') or diag $out;

# backends: TLS (abc.example.com) for /web, plain HTTP answering /slow after 3 s
start_numbered_backends(1, $backend_port, $pods);
my $slow = start_slow_backend("$pods.1", $slow_port, "$dir/slow.accepted");

# deploy/examples/first-gateway.yaml, with the test CA and the backend's
# name (abc.example.com) for its placeholders; the Services the application
# team would have (app: the TLS backend; slow: plain HTTP) and their
# EndpointSlices, as the EndpointSlice controller would write them
my $first = slurp('deploy/examples/first-gateway.yaml');
(my $ca = slurp(certs_dir() . '/ca.crt')) =~ s/^/    /mg;
ok($first =~ s/    -----BEGIN CERTIFICATE-----\n.*?-----END CERTIFICATE-----\n/$ca/s
   && $first =~ s/hostname: app\.example\.com/hostname: abc.example.com/, 'the example\'s placeholders');
kube_apply('first-gateway', $first);

# Service demo/NAME with PORT (named PORT_NAME), its one endpoint at pods' .1
sub service_yaml {
    my ($name, $port_name, $port, $target) = @_;
    return <<"YAML";
apiVersion: v1
kind: Service
metadata: {name: $name, namespace: demo}
spec: {ports: [{name: $port_name, port: $port}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: $name-1, namespace: demo, labels: {kubernetes.io/service-name: $name}}
ports: [{name: $port_name, port: $target}]
endpoints: [{addresses: ["$pods.1"]}]
---
YAML
}
kube_apply('application', service_yaml('app', 'https', 443, $backend_port) . service_yaml('slow', 'http', 80, $slow_port)
                          . service_yaml('public', 'https', 443, $backend_port) . <<"YAML");
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: public, namespace: demo}
spec:
  parentRefs: [{name: gateway}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /public}}]
    backendRefs: [{name: public, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: public, namespace: demo}
spec:
  targetRefs: [{group: "", kind: Service, name: public}]
  validation: {wellKnownCACertificates: System, hostname: abc.example.com}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: slow, namespace: demo}
spec:
  parentRefs: [{name: gateway}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /slow}}]
    backendRefs: [{name: slow, port: 80}]
YAML

# ---- the container ----------------------------------------------------------------------------
my %env = map { split /=/, $_, 2 } @{ $spec->{process}{env} };
$env{KUBERNETES_SERVICE_HOST} = '127.0.0.1';
$env{KUBERNETES_SERVICE_PORT} = $kube_port;
$env{HOSTNAME} = 'gateway2nginx-7d9f-test';
for my $e (@{ $container->{env} // [] }) {
    my $field = $e->{valueFrom}{fieldRef}{fieldPath} // '';
    $env{$e->{name}} = $field eq 'metadata.name' ? $env{HOSTNAME} : $field eq 'metadata.namespace' ? $namespace : $e->{value};
}
my @command = (@{ $spec->{process}{args} }, @{ $container->{args} });
my @mounts;
for my $m (@{ $container->{volumeMounts} }) {
    ok(exists $volumes{$m->{name}}{emptyDir}, "$m->{mountPath}: an emptyDir");
    push @mounts, "mount -t tmpfs -o mode=0777,nosuid,nodev $m->{name} '$root$m->{mountPath}'";
}
ok($container->{securityContext}{readOnlyRootFilesystem}, 'the root filesystem read-only');
my $pod_script = join "\n", 'set -eu',
    "mount --bind '$root' '$root'",
    "mount -o remount,bind,ro '$root'",
    "mount -t proc proc '$root/proc'",
    "mount --rbind /dev '$root/dev'",
    @mounts,
    "mount --bind '$sa' '$root$secrets'",
    "mount -o remount,bind,ro '$root$secrets'",
    'root=$0 uid=$1 gid=$2',
    'shift 2',
    'exec chroot "$root" /usr/bin/setpriv --reuid="$uid" --regid="$gid" --clear-groups --no-new-privs '
    . '--bounding-set=-all --inh-caps=-all -- "$@"';
my $log = "$dir/container.log";
my $pid = fork // die "fork: $!";
if ($pid == 0) {
    open STDOUT, '>>', $log or die;
    open STDERR, '>&', \*STDOUT or die;
    exec('unshare', '--pid', '--mount', '--fork', '--propagation', 'private', 'sh', '-c', $pod_script,
         $root, $uid, $gid, '/usr/bin/env', '-i', (map { "$_=$env{$_}" } sort keys %env), @command) or die;
}
# the container's PID 1 (gateway2nginx), the child of unshare
sub container_pid {
    my ($child) = split ' ', (slurp("/proc/$pid/task/$pid/children") // '');
    return $child;
}
sub status_of { my %s = map { /^(\w+):\s*(.*)$/ ? ($1 => $2) : () } split /\n/, slurp("/proc/$_[0]/status"); \%s }
my %ports = map { ($_->{name} => $_->{containerPort}) } @{ $container->{ports} };
my $health = $ports{ $container->{readinessProbe}{httpGet}{port} } // $container->{readinessProbe}{httpGet}{port};
sub probe { scalar `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$health$_[0]` }
ok(wait_for(sub { probe('/readyz') eq '200' }, 60), "ready: nginx serves the configuration (127.0.0.1:$health)")
    or diag slurp($log);
is(probe('/healthz'), '200', 'alive');
# the liveness probe's command, run in the container as the kubelet runs it
my @alive = @{ $container->{livenessProbe}{exec}{command} };
sub alive_in_container {
    my $target = container_pid();
    return system('nsenter', "--target=$target", '--mount', '--root', '--wd', '--', '/usr/bin/setpriv',
                  "--reuid=$uid", "--regid=$gid", '--clear-groups', @alive, @_) >> 8;
}
is(alive_in_container(), 0, "the liveness probe (@alive) passes");
is(scalar `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$ports{metrics}/metrics`, '200',
   "/metrics on a port of its own (127.0.0.1:$ports{metrics})");

my $g2n = container_pid();
my $s = status_of($g2n);
like($s->{Uid}, qr/^$uid\s+$uid\s+$uid\s+$uid$/, "gateway2nginx runs as $uid");
is($s->{CapEff} . ' ' . $s->{CapPrm} . ' ' . $s->{CapBnd}, '0000000000000000 0000000000000000 0000000000000000',
   'with no capability, not even in its bounding set');
is($s->{NoNewPrivs}, '1', 'and no new privileges');
# the container's processes: those whose root is its rootfs
my @nginx = grep { (readlink("/proc/$_/root") // '') eq $root && (readlink("/proc/$_/exe") // '') =~ m{/usr/sbin/nginx$} }
            map { m{/proc/(\d+)$} ? $1 : () } glob '/proc/[0-9]*';
ok(@nginx >= 2, 'nginx master and workers') or diag "@nginx";
is(scalar(grep { status_of($_)->{Uid} !~ /^$uid\s/ } @nginx), 0, "all run as $uid too");

# ---- traffic, status ----------------------------------------------------------------------------
sub get { scalar `curl -s -m 10 -H 'Host: abc.example.com' http://127.0.0.1:80$_[0]` }
ok(wait_for(sub { get('/web/x') =~ /endpoint=$pods\.1 path=\/web\/x/ }, 30),
   'GET /web/x on port 80: through the container\'s nginx to the TLS backend') or diag get('/web/x'), slurp($log);
ok(wait_for(sub { get('/public/x') =~ /endpoint=$pods\.1 path=\/public\/x/ }, 30),
   'GET /public/x: the backend verified by System trust, the image\'s CA bundle') or diag get('/public/x'), slurp($log);
ok(wait_for(sub { (kubectl('get', 'httproute', 'app', '-n', 'demo', '-o',
                           'jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].status}'))[1] eq 'True' }, 30),
   'the HTTPRoute Accepted, as kubectl get shows') or diag slurp($log);
($rc, $out) = kubectl('patch', 'service', 'gateway2nginx', '-n', $namespace, '--subresource=status', '--type=merge',
                      '-p', '{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"}]}}}');
is($rc, 0, 'the Service gets a load balancer address') or diag $out;
ok(wait_for(sub { (kubectl('get', 'gateway', 'gateway', '-n', 'demo', '-o', 'jsonpath={.status.addresses[0].value}'))[1]
                  eq '192.0.2.10' }, 30), 'the Gateway\'s status.addresses says it') or diag slurp($log);

# ---- each Gateway's own Service: made, changed, deleted -------------------------------------------
my ($alias) = join(' ', @{ $container->{args} }) =~ /--gateway-service-external-name (\S+)/;
sub own_service { my ($rc, $out) = kubectl('get', 'service', "$_[0]-gateway2nginx", '-n', 'demo', '-o', "jsonpath=$_[1]"); $rc == 0 ? $out : '' }
ok($alias && wait_for(sub { own_service('gateway', '{.spec.externalName}') eq $alias }, 30),
   "the Gateway has its own Service in demo, an alias of $alias") or diag slurp($log);
($rc, $out) = kubectl('patch', 'gateway', 'gateway', '-n', 'demo', '--type=merge', '-p',
                      '{"spec":{"infrastructure":{"labels":{"team":"demo"}}}}');
is($rc, 0, 'the Gateway given an infrastructure label') or diag $out;
ok(wait_for(sub { own_service('gateway', '{.metadata.labels.team}') eq 'demo' }, 30), 'its Service carries it')
    or diag slurp($log);
# a Secret nothing refers to yet is held as a digest; the second Gateway's
# HTTPS listener refers to it, and it is read whole then (get secrets)
sub metric { scalar(`curl -s http://127.0.0.1:$ports{metrics}/metrics`) =~ /^\Q$_[0]\E (\d+)$/m ? $1 : -1 }
sub digests_held { metric('gateway2nginx_objects_held') - metric('gateway2nginx_objects_held_whole') }
my $digests = digests_held();
kube_apply('second-tls', tls_secret_yaml('second-tls', 'leaf', 'demo'));
ok(wait_for(sub { digests_held() == $digests + 1 }, 30), 'an unreferenced Secret is held as a digest')
    or diag slurp($log);
(my $second = $first) =~ s/.*?(apiVersion: gateway\.networking\.k8s\.io\/v1\nkind: Gateway\n.*?)---.*/$1/s;
$second =~ s/name: gateway,/name: second,/;
$second =~ s/(  - \{name: http, port: 80, protocol: HTTP\}\n)/$1  - {name: https, port: 443, protocol: HTTPS, hostname: abc.example.com,
     tls: {certificateRefs: [{name: second-tls}]}}\n/ or die "no listener in the example's Gateway\n";
kube_apply('second', $second);
ok(wait_for(sub { own_service('second', '{.metadata.name}') ne '' }, 30), 'a second Gateway has its own')
    or diag slurp($log);
ok(wait_for(sub { (kubectl('get', 'gateway', 'second', '-n', 'demo', '-o', 'jsonpath={.status.listeners[?(@.name=="https")]'
                           . '.conditions[?(@.type=="ResolvedRefs")].status}'))[1] eq 'True' }, 30),
   'its HTTPS listener resolves the Secret, as kubectl get shows') or diag slurp($log);
ok((grep { $_->{verb} eq 'get' && $_->{resource} eq 'secrets' && ($_->{name} // '') eq 'second-tls' } audit_requests($audit)),
   'read whole when first referenced (get secrets)');
($rc, $out) = kubectl('delete', 'gateway', 'second', '-n', 'demo');
is($rc, 0, 'the second Gateway deleted') or diag $out;
ok(wait_for(sub { own_service('second', '{.metadata.name}') eq '' }, 30), 'and its Service with it') or diag slurp($log);

# ---- RBAC: what the container called, against the rules --------------------------------------------
my @rules = ($by{'ClusterRole/gateway2nginx'}{rules}, $by{'Role/gateway2nginx-leader-election'}{rules}, $namespace);
wait_for(sub { (rbac_check($audit, @rules))[1] eq '' }, 30);  # its Lease renewed, a conflict met
my ($denied, $unused) = rbac_check($audit, @rules);
is($denied, '', 'every request of the container is allowed by the ClusterRole, or the Role in its namespace');
is($unused, '', 'every rule is used');

# ---- SIGTERM, a request in flight --------------------------------------------------------------------
my $in_flight = fork // die;
if ($in_flight == 0) { exec('sh', '-c', "curl -s -m 20 -H 'Host: abc.example.com' http://127.0.0.1:80/slow > $dir/slow.out") }
ok(wait_for(sub { -e "$dir/slow.accepted" }, 10), 'a slow request at its backend');
kill 'TERM', $g2n;
waitpid($in_flight, 0);
is(slurp("$dir/slow.out"), 'slow', 'the request in flight at SIGTERM is answered');
waitpid($pid, 0);
is($? >> 8, 0, 'the container ends with status 0');
ok(wait_for(sub { system("curl -s -o /dev/null -m 2 http://127.0.0.1:80/") != 0 }, 10), 'nothing listens on 80 any more');
like(slurp($log), qr/nginx stopped \(exit status 0\)/, 'nginx drained and stopped');

# what it started, stopped however it ends (a failed test included)
END {
    return unless $ENV{GTLS_IMAGE_NETNS} && $main_pid && $$ == $main_pid;  # not in a forked child
    kill 'KILL', $pid if $pid && kill(0, $pid);
    kill 'TERM', grep { $_ } $sim, $slow;
    stop_backends() if -e servroot() . '/backends/logs/nginx.pid';
}
