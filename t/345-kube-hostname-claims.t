# No tenant takes another's hostname (issue 51, finding 1), through
# gateway2nginx run --kubeconfig and the API server simulation, with the
# real kubectl. A tenant makes a route for shop.example.com early,
# attached to nothing; later the victim's Gateway names shop.example.com
# and serves it; then the tenant makes a Gateway of their own with a
# listener for the name and moves the old route onto it. The victim keeps
# the name; the tenant's listener is Conflicted/HostnameConflict and told
# nobody's name. Then the tenant's listener names no hostname, and the old
# route still takes nothing.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use POSIX qw(strftime);
use Time::HiRes qw(sleep time);

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
my $backend_port = server_port() + 1;
start_numbered_backends(2, $backend_port);    # 127.0.0.1: the victim's, 127.0.0.2: the tenant's
my $sim = start_kube_api($kube_port, '--bookmark-seconds', '1');

# the API server's creationTimestamps are whole seconds: each step is made
# once the clock has passed the last one's second
my $last_made = '';
sub made_after_the_last {
    wait_for(sub { strftime('%Y-%m-%dT%H:%M:%SZ', gmtime) gt $last_made }, 5);
    $last_made = strftime('%Y-%m-%dT%H:%M:%SZ', gmtime);
}

my $ca = slurp(certs_dir() . '/ca.crt') =~ s/^/    /mgr;
sub backend_yaml {
    my ($ns, $n) = @_;
    return <<"YAML";
---
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: $ns}
data:
  ca.crt: |
$ca
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: $ns}
spec: {ports: [{name: https, port: 443}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: $ns, labels: {kubernetes.io/service-name: web}}
ports: [{name: https, port: $backend_port}]
endpoints: [{addresses: ["127.0.0.$n"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: web-tls, namespace: $ns}
spec:
  targetRefs: [{group: "", kind: Service, name: web}]
  validation: {hostname: abc.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}
YAML
}
sub gateway_yaml {
    my ($ns, $hostname) = @_;
    my $host = defined $hostname ? ", hostname: $hostname" : '';
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: $ns}\n"
         . "spec:\n  gatewayClassName: ours\n  listeners:\n  - {name: http, port: 80, protocol: HTTP$host}\n";
}
sub route_yaml {
    my ($ns, $parent) = @_;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: $ns}\n"
         . "spec:\n  parentRefs: [{name: $parent}]\n  hostnames: [shop.example.com]\n"
         . "  rules: [{backendRefs: [{name: web, port: 443}]}]\n";
}

# ---- the tenant's route, early, attached to nothing -------------------------
made_after_the_last();
kube_apply('early', "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: ours}\n"
                    . "spec: {controllerName: gateway2nginx.io/controller}\n"
                    . backend_yaml('shop', 1) . backend_yaml('evil', 2) . route_yaml('evil', 'nowhere'));
# ---- later, the victim's Gateway and route ------------------------------------------
made_after_the_last();
kube_apply('victim', gateway_yaml('shop', 'shop.example.com') . route_yaml('shop', 'gw'));

my $log = "$dir/run.log";
my $out = "$dir/out";
my $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', $out, '--reload', "$out/nginx.pid",
                    '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                    '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                    '--debounce', '100');
ok(wait_for(sub { -f "$out/nginx.conf" }, 20), 'a configuration is written') or diag slurp($log);
start_nginx($out, 'nginx.conf', $port);
sub served { my %seen; for (1 .. 6) { my ($c, $h, $b) = http_request($port, '/', 'shop.example.com'); $seen{$b =~ /endpoint=(\S+)/ ? $1 : "($c)"}++ } join ' ', sort keys %seen }
ok(wait_for(sub { served() eq '127.0.0.1' }, 20), 'shop.example.com is the victim\'s') or diag slurp($log);

sub jsonpath { my ($rc, $got) = kubectl('get', @_); return $rc == 0 ? $got : "(kubectl: $got)" }
sub listener_condition {
    my ($ns, $type) = @_;
    return jsonpath('gateway', 'gw', '-n', $ns, '-o',
                    "jsonpath={.status.listeners[0].conditions[?(\@.type==\"$type\")].status}/{.status.listeners[0].conditions[?(\@.type==\"$type\")].reason}");
}
sub route_accepted {
    my ($ns) = @_;
    return jsonpath('httproute', 'r', '-n', $ns, '-o',
                    'jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].status}/{.status.parents[0].conditions[?(@.type=="Accepted")].reason}');
}

# ---- the tenant's own Gateway for the name, and the old route moved onto it ----
made_after_the_last();
kube_apply('tenant', gateway_yaml('evil', 'shop.example.com'));
my ($rc, $got) = kubectl('patch', 'httproute', 'r', '-n', 'evil', '--type=merge', '-p', '{"spec":{"parentRefs":[{"name":"gw"}]}}');
is($rc, 0, 'the tenant moves the old route onto their Gateway') or diag $got;
ok(wait_for(sub { listener_condition('evil', 'Conflicted') eq 'True/HostnameConflict' }, 20),
   'the tenant\'s listener is Conflicted/HostnameConflict') or diag slurp($log);
is(listener_condition('evil', 'Accepted'), 'False/HostnameConflict', 'and not accepted');
my $message = jsonpath('gateway', 'gw', '-n', 'evil', '-o', 'jsonpath={.status.listeners[0].conditions[?(@.type=="Conflicted")].message}');
like($message, qr/claimed by an older listener on this address/, "it says why ($message)");
unlike($message, qr/\bshop\/|Gateway /, 'naming nobody');
ok(wait_for(sub { route_accepted('evil') eq 'False/NotAllowedByListeners' }, 20), 'the moved route is not accepted');
is(route_accepted('shop'), 'True/Accepted', 'the victim\'s route still is');
is(served(), '127.0.0.1', 'shop.example.com is still the victim\'s');
is(listener_condition('shop', 'Accepted'), 'True/Accepted', 'and the victim\'s listener is accepted as before');

# ---- a listener with no hostname takes nothing either ---------------------------
kube_apply('tenant-any', gateway_yaml('evil'));
ok(wait_for(sub { listener_condition('evil', 'Accepted') eq 'True/Accepted' }, 20),
   'the tenant\'s listener with no hostname is accepted') or diag slurp($log);
ok(wait_for(sub { jsonpath('httproute', 'r', '-n', 'evil', '-o', 'jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].message}')
                  =~ /claimed by an older or more specific listener on this address/ }, 20),
   'the old route on it is refused the name, and told why');
is(served(), '127.0.0.1', 'shop.example.com is still the victim\'s');

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
stop_nginx($out);
kill 'TERM', $sim;
waitpid($sim, 0);
