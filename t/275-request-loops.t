# A request that comes back to the gateway is refused (issue 35, finding
# 7). Each gateway adds "1.1 gateway2nginx-NAME" to Via on what it
# proxies, and its listeners answer 508 to a request whose Via names it
# already. On 46c5027 two gateways routing to each other (as through DNS
# names of their own, which the endpoint checks cannot see) turned one
# request into as many as the connections allowed; now it passes each
# gateway once. A route may not set or remove Via (it could drop the mark).
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();
my $dir = servroot();
my $module_dir = module_dir();
my %port = (a => server_port() + 20, b => server_port() + 21);

# gateway NAME's /loop goes to gateway OTHER's listener; /web to the backend
sub manifests {
    my ($other) = @_;
    return gateway_manifests(web => 'leaf') . <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: ns}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: other-1, namespace: ns, labels: {kubernetes.io/service-name: other}}
ports: [{name: http, port: $port{$other}}]
endpoints: [{addresses: ["127.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {value: /web}}]
    backendRefs: [{name: web, port: 443}]
  - matches: [{path: {value: /loop}}]
    backendRefs: [{name: other, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: unmarked, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {value: /unmarked}}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {remove: [via]}}]
    backendRefs: [{name: other, port: 80}]
YAML
}

my %out;
for my $name (qw(a b)) {
    my $other = $name eq 'a' ? 'b' : 'a';
    spit("$dir/$name.yaml", manifests($other));
    $out{$name} = "$dir/out-$name";
    my ($rc, $out) = run_generator('-f', "$dir/$name.yaml", '-o', $out{$name}, '--port-offset', $port{$name} - 80,
                                   '--listen-address', '127.0.0.1', '--module-dir', $module_dir, '--check',
                                   '--status-listen', 'off');
    is($rc, 0, "gateway $name: nginx -t passes") or diag $out;
    like(join("\n", @{read_status("$out{$name}/status.yaml")->{'HTTPRoute ns/unmarked'} || []}),
         qr{ns/gw: Accepted=False/UnsupportedValue}, "gateway $name: a route that removes Via is not accepted");
    like(slurp("$out{$name}/status.yaml"), qr/message: "header via names the proxies a request passed: the gateway sets it"/,
         '... and says why');
    like(slurp("$out{$name}/instance"), qr/^[0-9a-f]{16}\n\z/, "gateway $name: a random name, kept in OUTDIR/instance");
}
isnt(slurp("$out{a}/instance"), slurp("$out{b}/instance"), 'each gateway has a name of its own');
my ($a_name) = slurp("$out{a}/instance") =~ /(\S+)/;

# rewritten, a gateway keeps its name (else every rewrite would reload)
my ($rc) = run_generator('-f', "$dir/a.yaml", '-o', $out{a}, '--port-offset', $port{a} - 80,
                         '--listen-address', '127.0.0.1', '--module-dir', $module_dir, '--status-listen', 'off');
is(slurp("$out{a}/instance"), "$a_name\n", 'a rewritten OUTDIR keeps its name');

start_backends();
start_nginx($out{$_}, 'nginx.conf', $port{$_}) for qw(a b);
my ($code) = request($port{a}, 'GET', '/web', 'Host: localhost');
is($code, 200, 'a route to a backend is served');
($code) = request($port{a}, 'GET', '/loop', 'Host: localhost');
is($code, 508, 'a request that comes back to gateway a: 508 Loop Detected');
for my $name (qw(a b)) {
    wait_for(sub { count_in("$out{$name}/logs/access.log", qr{"GET /loop HTTP}) >= ($name eq 'a' ? 2 : 1) }, 5);
}
is(count_in("$out{a}/logs/access.log", qr{"GET /loop HTTP}), 2, 'gateway a saw it twice: from the client, back from b');
is(count_in("$out{b}/logs/access.log", qr{"GET /loop HTTP}), 1, 'gateway b once');
($code) = request($port{b}, 'GET', '/web', 'Host: localhost', "Via: 1.0 fred, 1.1 gateway2nginx-$a_name");
is($code, 200, "gateway b serves a request that passed a");
($code) = request($port{a}, 'GET', '/web', 'Host: localhost', "Via: 1.1 gateway2nginx-$a_name (nginx)");
is($code, 508, 'gateway a refuses one whose Via names it');
($code) = request($port{a}, 'GET', '/web', 'Host: localhost', "Via: 1.1 gateway2nginx-${a_name}0");
is($code, 200, '... not one that names a longer name');
stop_nginx($out{$_}) for qw(a b);
stop_backends();
