# The image of `make image`, run as deploy/'s Deployment says, against the
# API server simulation: no container engine runs here, so its rootfs is
# each container (umoci unpack), entered with chroot in new PID and mount
# namespaces of each's own, in the pod's network namespace: read-only root,
# the pod's volumes where each container mounts them and nowhere else
# (emptyDirs the fsGroup's, the projected service account token, CA and
# namespace), each container's user, the pod's group, args and env, the
# pod's sysctls, every capability dropped and no new privileges.
#   - nginx's container holds no token (no file, no environment), nor
#     anything in the volume it shares that holds it; each its own user;
#   - gateway2nginx's container killed: nginx serves on; started again, it
#     takes up what nginx serves and applies changes;
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
#   - SIGTERM to the pod: nginx accepts for the shutdown delay and drains:
#     no request fails before the delay ends (a connection refused after
#     its end, when nginx has stopped listening, is what the delay is for),
#     the one in flight is answered, both containers end with 0.
# `make test-deploy` builds the image and runs this with GTLS_IMAGE set.
use lib 't/lib';
use strict;
use warnings;
use Test::GatewayTLS;
use Test::More;
use JSON::PP;
use File::Find ();
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
# with each Gateway's own Service (components/gateway-services)
my ($rendered_rc, $rendered, $objects) = kustomize_deploy($dir, 'deploy', 'gateway-services');
is($rendered_rc, 0, 'kubectl kustomize of deploy/ with components/gateway-services') or diag $rendered;
my %by = %$objects;
my $pod = $by{'Deployment/gateway2nginx'}{spec}{template}{spec};
my %containers = map { ($_->{name} => $_) } @{ $pod->{containers} };
my ($nginx_container, $container) = @containers{qw(nginx gateway2nginx)};
ok($nginx_container && $container, 'the pod\'s containers: nginx, gateway2nginx');
my $namespace = $by{'Deployment/gateway2nginx'}{metadata}{namespace};
my %volumes = map { ($_->{name} => $_) } @{ $pod->{volumes} };
my ($gid, $fs_group) = ($pod->{securityContext}{runAsGroup}, $pod->{securityContext}{fsGroup});
sub uid_of_container { $_[0]{securityContext}{runAsUser} // $pod->{securityContext}{runAsUser} }
my ($nginx_uid, $uid) = map { uid_of_container($_) } $nginx_container, $container;
ok($nginx_uid && $uid && $gid && $nginx_uid != $uid, "users: nginx $nginx_uid, gateway2nginx $uid, of group $gid");

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
is(readlink("$root/var/run"), '/run', 'the rootfs\'s /var/run is /run');
sub in_root { (my $path = shift) =~ s{^/var/run/}{/run/}; return $path }
my $secrets = '/var/run/secrets/kubernetes.io/serviceaccount';
make_path("$root/dev", "$root/proc", map { "$root" . in_root($_->{mountPath}) } map { @{ $_->{volumeMounts} } } values %containers);
# the test CA among the image's public ones, as update-ca-certificates puts
# a local CA there: System trust verifies what it signed
my $ca_hash = `openssl x509 -hash -noout -in @{[certs_dir()]}/ca.crt`;
chomp $ca_hash;
ok(-d "$root/etc/ssl/certs" && -e "$root/usr/lib/ssl/certs", 'the image has a CA bundle where OpenSSL looks');
make_path("$root/etc/ssl/certs");
spit("$root/etc/ssl/certs/$ca_hash.0", slurp(certs_dir() . '/ca.crt'));
ok(!-e "/run/secrets/kubernetes.io" || -e "$secrets/token", 'nothing made outside it');

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

# ---- the pod ---------------------------------------------------------------------------------
# its volumes, as the kubelet makes them: emptyDirs the fsGroup's and
# set-group-ID; the projected one the service account's token, CA and
# namespace
my %volume_dir;
for my $v (values %volumes) {
    my $path = $volume_dir{ $v->{name} } = "$dir/volumes/$v->{name}";
    make_path($path);
    if ($v->{emptyDir}) {
        chown(0, $fs_group, $path) && chmod(02777, $path) or die "$path: $!";
    } elsif ($v->{projected}) {
        for my $source (@{ $v->{projected}{sources} }) {
            spit("$path/$source->{serviceAccountToken}{path}", slurp("$sa/token")) if $source->{serviceAccountToken};
            spit("$path/$_->{path}", slurp("$sa/$_->{key}")) for @{ $source->{configMap}{items} // [] };
            spit("$path/$_->{path}", $namespace) for @{ $source->{downwardAPI}{items} // [] };
        }
    } else {
        die "a volume this test does not make: $v->{name}\n";
    }
}
my $token = slurp("$sa/token");

# a container: chroot into the read-only rootfs in PID and mount namespaces
# of its own, its volumes mounted, as its user (the pod's group, the
# fsGroup among its groups); its standard output and error in LOG
my %container_pid;  # unshare's pid, by container
sub start_container {
    my ($c) = @_;
    my %env = map { split /=/, $_, 2 } @{ $spec->{process}{env} };
    # what the kubelet gives every container
    $env{KUBERNETES_SERVICE_HOST} = '127.0.0.1';
    $env{KUBERNETES_SERVICE_PORT} = $kube_port;
    $env{HOSTNAME} = 'gateway2nginx-7d9f-test';
    for my $e (@{ $c->{env} // [] }) {
        my $field = $e->{valueFrom}{fieldRef}{fieldPath} // '';
        $env{$e->{name}} = $field eq 'metadata.name' ? $env{HOSTNAME} : $field eq 'metadata.namespace' ? $namespace : $e->{value};
    }
    my @mounts;
    for my $m (@{ $c->{volumeMounts} }) {
        my $target = $root . in_root($m->{mountPath});
        push @mounts, "mount --bind '$volume_dir{$m->{name}}' '$target'";
        push @mounts, "mount -o remount,bind,ro '$target'" if $m->{readOnly};
    }
    my $script = join "\n", 'set -eu',
        "mount --bind '$root' '$root'",
        "mount -o remount,bind,ro '$root'",
        "mount -t proc proc '$root/proc'",
        "mount --rbind /dev '$root/dev'",
        @mounts,
        'root=$0 uid=$1 gid=$2 groups=$3',
        'shift 3',
        'exec chroot "$root" /usr/bin/setpriv --reuid="$uid" --regid="$gid" --groups="$groups" --no-new-privs '
        . '--bounding-set=-all --inh-caps=-all -- "$@"';
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>>', "$dir/$c->{name}.log" or die;
        open STDERR, '>&', \*STDOUT or die;
        exec('unshare', '--pid', '--mount', '--fork', '--propagation', 'private', 'sh', '-c', $script,
             $root, uid_of_container($c), $gid, $fs_group, '/usr/bin/env', '-i', (map { "$_=$env{$_}" } sort keys %env),
             @{ $spec->{process}{args} }, @{ $c->{args} }) or die;
    }
    $container_pid{ $c->{name} } = $pid;
    return $pid;
}
ok($_->{securityContext}{readOnlyRootFilesystem}, "$_->{name}: the root filesystem read-only") for values %containers;
# what both said, for failures
sub logs { join '', map { "--- $_:\n" . (slurp("$dir/$_.log") // '') } sort keys %containers }
start_container($nginx_container);
start_container($container);
# a container's PID 1, the child of unshare
sub container_pid {
    my $unshare = $container_pid{ $_[0] } // return;
    my ($child) = split ' ', (slurp("/proc/$unshare/task/$unshare/children") // '');
    return $child;
}
sub status_of { my %s = map { /^(\w+):\s*(.*)$/ ? ($1 => $2) : () } split /\n/, slurp("/proc/$_[0]/status"); \%s }
my %ports = map { ($_->{name} => $_->{containerPort}) } map { @{ $_->{ports} } } values %containers;
my $health = $ports{ $container->{readinessProbe}{httpGet}{port} } // $container->{readinessProbe}{httpGet}{port};
sub probe { scalar `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$health$_[0]` }
ok(wait_for(sub { probe('/readyz') eq '200' }, 60), "ready: nginx serves the configuration (127.0.0.1:$health)")
    or diag logs();
is(probe('/healthz'), '200', 'alive');
# a command run in a container as the kubelet runs its probes
sub in_container {
    my ($name, @command) = @_;
    return system('nsenter', '--target=' . container_pid($name), '--mount', '--root', '--wd', '--', '/usr/bin/setpriv',
                  '--reuid=' . uid_of_container($containers{$name}), "--regid=$gid", "--groups=$fs_group", @command) >> 8;
}
for my $name (sort keys %containers) {
    my @alive = @{ $containers{$name}{livenessProbe}{exec}{command} };
    is(in_container($name, @alive), 0, "$name: the liveness probe (@alive) passes");
}
is(scalar `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$ports{metrics}/metrics`, '200',
   "/metrics on a port of its own (127.0.0.1:$ports{metrics})");

my $g2n = container_pid('gateway2nginx');
my $s = status_of($g2n);
like($s->{Uid}, qr/^$uid\s+$uid\s+$uid\s+$uid$/, "gateway2nginx runs as $uid");
is($s->{CapEff} . ' ' . $s->{CapPrm} . ' ' . $s->{CapBnd}, '0000000000000000 0000000000000000 0000000000000000',
   'with no capability, not even in its bounding set');
is($s->{NoNewPrivs}, '1', 'and no new privileges');
# a container's processes: those in its PID namespace
sub processes_of {
    my $ns = readlink('/proc/' . container_pid($_[0]) . '/ns/pid') // return;
    return grep { (readlink("/proc/$_/ns/pid") // '') eq $ns } map { m{/proc/(\d+)$} ? $1 : () } glob '/proc/[0-9]*';
}
my @nginx = grep { (readlink("/proc/$_/exe") // '') =~ m{/usr/sbin/nginx$} } processes_of('nginx');
ok(@nginx >= 2, 'nginx master and workers, in nginx\'s container') or diag "@nginx";
is(scalar(grep { status_of($_)->{Uid} !~ /^$nginx_uid\s/ } processes_of('nginx')), 0, "all it runs, as $nginx_uid");
is(status_of($nginx[0])->{CapBnd}, '0000000000000000', 'with no capability either');
is(scalar(grep { (readlink("/proc/$_/exe") // '') =~ m{/usr/sbin/nginx$} } processes_of('gateway2nginx')), 0,
   'no nginx runs in gateway2nginx\'s container');

# ---- no token in nginx's container ---------------------------------------------------------------
is(in_container('gateway2nginx', 'test', '-s', "$secrets/token"), 0, "gateway2nginx's container has the token ($secrets)");
is(in_container('nginx', 'test', '-e', "$secrets/token"), 1, 'nginx\'s has no such file');
# (the mount point is in the rootfs both share here; a runtime makes it in
# the container that mounts there alone)
sub secrets_mounts { scalar grep { (split ' ')[4] =~ m{/secrets\b} } split /\n/, slurp('/proc/' . container_pid($_[0]) . '/mountinfo') }
is(secrets_mounts('nginx'), 0, 'nothing is mounted there');
is(secrets_mounts('gateway2nginx'), 1, 'where gateway2nginx\'s container has the projected volume');
is(scalar(grep { index(slurp("/proc/$_/environ") // '', $token) >= 0 } processes_of('nginx')), 0,
   'no process of nginx\'s container holds the token in its environment');
my @holding;
File::Find::find(sub { push @holding, $File::Find::name if -f && index(slurp($_) // '', $token) >= 0 }, $volume_dir{run});
is("@holding", '', 'nor does any file of the volume the two share');
isnt(readlink('/proc/' . container_pid('nginx') . '/ns/pid'), readlink("/proc/$g2n/ns/pid"),
     'and it sees none of gateway2nginx\'s processes: each its own PID namespace');

# ---- traffic, status ----------------------------------------------------------------------------
sub get { scalar `curl -s -m 10 -H 'Host: abc.example.com' http://127.0.0.1:80$_[0]` }
ok(wait_for(sub { get('/web/x') =~ /endpoint=$pods\.1 path=\/web\/x/ }, 30),
   'GET /web/x on port 80: through the container\'s nginx to the TLS backend') or diag get('/web/x'), logs();
is(scalar `curl -s -g -m 10 -H 'Host: abc.example.com' 'http://[::1]:80/web/x'` =~ /endpoint=$pods\.1 path=\/web\/x/ ? 1 : 0, 1,
   'and over IPv6: the listeners on every address of both families');
ok(wait_for(sub { get('/public/x') =~ /endpoint=$pods\.1 path=\/public\/x/ }, 30),
   'GET /public/x: the backend verified by System trust, the image\'s CA bundle') or diag get('/public/x'), logs();
ok(wait_for(sub { (kubectl('get', 'httproute', 'app', '-n', 'demo', '-o',
                           'jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].status}'))[1] eq 'True' }, 30),
   'the HTTPRoute Accepted, as kubectl get shows') or diag logs();
($rc, $out) = kubectl('patch', 'service', 'gateway2nginx', '-n', $namespace, '--subresource=status', '--type=merge',
                      '-p', '{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"}]}}}');
is($rc, 0, 'the Service gets a load balancer address') or diag $out;
ok(wait_for(sub { (kubectl('get', 'gateway', 'gateway', '-n', 'demo', '-o', 'jsonpath={.status.addresses[0].value}'))[1]
                  eq '192.0.2.10' }, 30), 'the Gateway\'s status.addresses says it') or diag logs();

# ---- gateway2nginx's container killed, and started again ------------------------------------------
my ($master) = grep { parent_pid($_) == container_pid('nginx') } @nginx;
kill 'KILL', $g2n;  # its PID 1: its PID namespace goes with it
waitpid($container_pid{gateway2nginx}, 0);
ok(wait_for(sub { probe('/readyz') ne '200' }, 10), 'gateway2nginx\'s container killed: its probe is gone');
like(get('/web/x'), qr/endpoint=$pods\.1 path=\/web\/x/, 'nginx serves on');
start_container($container);
ok(wait_for(sub { probe('/readyz') eq '200' }, 60), 'started again: ready') or diag logs();
like(slurp("$dir/gateway2nginx.log"), qr/OUTDIR already holds this configuration: nothing to apply/,
     'on what nginx serves, which it knew OUTDIR to hold');
$g2n = container_pid('gateway2nginx');

# ---- each Gateway's own Service: made, changed, deleted -------------------------------------------
my ($alias) = join(' ', @{ $container->{args} }) =~ /--gateway-service-external-name (\S+)/;
sub own_service { my ($rc, $out) = kubectl('get', 'service', "$_[0]-gateway2nginx", '-n', 'demo', '-o', "jsonpath=$_[1]"); $rc == 0 ? $out : '' }
ok($alias && wait_for(sub { own_service('gateway', '{.spec.externalName}') eq $alias }, 30),
   "the Gateway has its own Service in demo, an alias of $alias") or diag logs();
($rc, $out) = kubectl('patch', 'gateway', 'gateway', '-n', 'demo', '--type=merge', '-p',
                      '{"spec":{"infrastructure":{"labels":{"team":"demo"}}}}');
is($rc, 0, 'the Gateway given an infrastructure label') or diag $out;
ok(wait_for(sub { own_service('gateway', '{.metadata.labels.team}') eq 'demo' }, 30), 'its Service carries it')
    or diag logs();
# a Secret nothing refers to yet is held as a digest; the second Gateway's
# HTTPS listener refers to it, and it is read whole then (get secrets)
sub metric { scalar(`curl -s http://127.0.0.1:$ports{metrics}/metrics`) =~ /^\Q$_[0]\E (\d+)$/m ? $1 : -1 }
sub digests_held { metric('gateway2nginx_objects_held') - metric('gateway2nginx_objects_held_whole') }
my $digests = digests_held();
kube_apply('second-tls', tls_secret_yaml('second-tls', 'leaf', 'demo'));
ok(wait_for(sub { digests_held() == $digests + 1 }, 30), 'an unreferenced Secret is held as a digest')
    or diag logs();
(my $second = $first) =~ s/.*?(apiVersion: gateway\.networking\.k8s\.io\/v1\nkind: Gateway\n.*?)---.*/$1/s;
$second =~ s/name: gateway,/name: second,/;
$second =~ s/(  - \{name: http, port: 80, protocol: HTTP\}\n)/$1  - {name: https, port: 443, protocol: HTTPS, hostname: abc.example.com,
     tls: {certificateRefs: [{name: second-tls}]}}\n/ or die "no listener in the example's Gateway\n";
kube_apply('second', $second);
ok(wait_for(sub { own_service('second', '{.metadata.name}') ne '' }, 30), 'a second Gateway has its own')
    or diag logs();
ok(wait_for(sub { (kubectl('get', 'gateway', 'second', '-n', 'demo', '-o', 'jsonpath={.status.listeners[?(@.name=="https")]'
                           . '.conditions[?(@.type=="ResolvedRefs")].status}'))[1] eq 'True' }, 30),
   'its HTTPS listener resolves the Secret, as kubectl get shows') or diag logs();
# (no route yet: its listener's certificate is what nginx is given)
ok(wait_for(sub { slurp("$dir/gateway2nginx.log") =~ /nginx reloaded: workers .* \(certificates\)/ }, 30),
   'nginx reloaded onto it, asked through the socket, for its certificate') or diag logs();
ok(kill(0, $master) && parent_pid($master) == container_pid('nginx'), 'the same nginx master all along');
ok((grep { $_->{verb} eq 'get' && $_->{resource} eq 'secrets' && ($_->{name} // '') eq 'second-tls' } audit_requests($audit)),
   'read whole when first referenced (get secrets)');
($rc, $out) = kubectl('delete', 'gateway', 'second', '-n', 'demo');
is($rc, 0, 'the second Gateway deleted') or diag $out;
ok(wait_for(sub { own_service('second', '{.metadata.name}') eq '' }, 30), 'and its Service with it') or diag logs();

# ---- RBAC: what the container called, against the rules --------------------------------------------
my @rules = ([map { ; @{ $by{"ClusterRole/$_"}{rules} } } qw(gateway2nginx gateway2nginx-namespaced gateway2nginx-gateway-services)],
             $by{'Role/gateway2nginx-leader-election'}{rules}, $namespace);
wait_for(sub { (rbac_check($audit, @rules))[1] eq '' }, 30);  # its Lease renewed, a conflict met
my ($denied, $unused) = rbac_check($audit, @rules);
is($denied, '', 'every request of the container is allowed by the ClusterRoles, or the Role in its namespace');
is($unused, '', 'every rule is used');

# ---- SIGTERM to the pod: the shutdown delay, then a drain --------------------------------------------
my ($delay) = join(' ', @{ $nginx_container->{args} }) =~ /--shutdown-delay (\S+)/;
my $in_flight = fork // die;
if ($in_flight == 0) { exec('sh', '-c', "curl -s -m 20 -H 'Host: abc.example.com' http://127.0.0.1:80/slow > $dir/slow.out") }
ok(wait_for(sub { -e "$dir/slow.accepted" }, 10), 'a slow request at its backend');
kill 'TERM', $g2n, container_pid('nginx');  # every container at once, as the kubelet does
ok(wait_for(sub { probe('/readyz') ne '200' }, 10), 'SIGTERM: the pod is not ready at once');
# requests one after another until nginx says the delay is over: one may
# fail only once it has (nginx stops listening after it says so)
my $over = qr/stopping nginx: it finishes what is in flight/;
my ($served, @failed) = (0);
my $deadline = time + 120;
until (slurp("$dir/nginx.log") =~ $over) {
    my $code = `curl -s -o /dev/null -m 10 -w '%{http_code}' -H 'Host: abc.example.com' http://127.0.0.1:80/web/x`;
    if ($code eq '200') {
        $served++;
    } elsif (slurp("$dir/nginx.log") !~ $over) {
        push @failed, $code;
    }
    if (time > $deadline) {
        push @failed, 'the delay never ended';
        last;
    }
}
is("@failed", '', "no request failed during the shutdown delay ($delay)") or diag logs();
ok($served > 0, "$served served during it");
waitpid($in_flight, 0);
is(slurp("$dir/slow.out"), 'slow', 'the request in flight at SIGTERM is answered');
for my $name (qw(nginx gateway2nginx)) {
    waitpid($container_pid{$name}, 0);
    is($? >> 8, 0, "${name}'s container ends with status 0");
}
ok(wait_for(sub { system("curl -s -o /dev/null -m 2 http://127.0.0.1:80/") != 0 }, 10), 'nothing listens on 80 any more');
like(slurp("$dir/nginx.log"), qr/stopping: nginx accepts for \d+ ms more.*\n(?:.*\n)*?.*nginx stopped \(exit status 0\)/,
     'nginx accepted for the delay, drained and stopped');

# what it started, stopped however it ends (a failed test included)
END {
    return unless $ENV{GTLS_IMAGE_NETNS} && $main_pid && $$ == $main_pid;  # not in a forked child
    kill 'KILL', grep { $_ && kill(0, $_) } values %container_pid;
    kill 'TERM', grep { $_ } $sim, $slow;
    stop_backends() if -e servroot() . '/backends/logs/nginx.pid';
}
