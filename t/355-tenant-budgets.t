# One tenant's servers take no other tenant's room (issue 35, finding 4).
# With the upstream API, replaceable upstreams keep their servers in a
# shared memory zone. On 46c5027 one zone held every tenant's, sized by the
# number of upstreams: about 1,300 endpoints of one tenant filled it, nginx -t
# failed with "no memory in upstream zone", and isolation refused the next
# route in its order, another tenant's. Now each namespace has a zone of its
# own, sized from the servers in it: a tenant with 3,000 endpoints is
# served beside the others, and one who pushes more than its zone holds is
# refused (507) while the others' pushes still land.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use JSON::PP;

plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $module_dir = module_dir();

my $yaml = routes_from_all_namespaces(gateway_manifests(web => 'leaf'));
# the older routes are the big tenant's: blame by age would fall on ns/web
$yaml .= <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: ns, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{path: {value: /web}}], backendRefs: [{name: web, port: 443}]}]
YAML
# three Services of 1,000 endpoints each: 250 addresses at 4 ports
for my $n (0 .. 2) {
    $yaml .= <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: many-$n, namespace: big}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: many-$n, namespace: big, creationTimestamp: "2020-01-01T00:00:0${n}Z"}
spec:
  parentRefs: [{name: gw, namespace: ns}]
  rules: [{matches: [{path: {value: /many-$n}}], backendRefs: [{name: many-$n, port: 80}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: many-$n, namespace: big, labels: {kubernetes.io/service-name: many-$n}}
ports: [@{[ join ', ', map { "{name: http, port: 1000$_}" } 1 .. 4 ]}]
endpoints: [{addresses: [@{[ join ', ', map { "\"127.1.$n.$_\"" } 0 .. 249 ]}]}]
YAML
}
spit("$dir/manifests.yaml", $yaml);

my ($rc, $out) = run_generator('-f', "$dir/manifests.yaml", '-o', "$dir/out", '--port-offset', $offset,
                               '--listen-address', '127.0.0.1', '--module-dir', $module_dir, '--check',
                               '--status-listen', '127.0.0.1:' . status_port(), '--upstream-api', "127.0.0.1:$api_port");
is($rc, 0, 'gateway2nginx writes a configuration that passes nginx -t') or diag $out;
unlike($out, qr/is rejected/, 'no route is refused') or diag $out;
unlike($out, qr/no memory/, 'no zone runs out of room');
my $http = slurp("$dir/out/http.conf");
my %zones = $http =~ /^\s*zone (gateway2nginx_servers_\S+) (\d+)k;/mg;
is_deeply([sort keys %zones], [qw(gateway2nginx_servers_big gateway2nginx_servers_ns)], 'a zone per namespace');
cmp_ok($zones{gateway2nginx_servers_big}, '>=', 2 * 3000, "big's zone is sized from its servers: 2 KB a server");
is($zones{gateway2nginx_servers_ns}, 128, "ns's zone from its one server");
like($http, qr/upstream backend_big_many-0_80 \{[^}]*zone gateway2nginx_servers_big;/, "big's upstream is in big's zone");
like($http, qr/upstream backend_ns_web_443 \{[^}]*zone gateway2nginx_servers_ns;/, "ns's upstream is in ns's zone");

start_backends();
start_nginx("$dir/out", 'nginx.conf', $port);
my ($code) = request($port, 'GET', '/web', 'Host: localhost');
is($code, 200, "the other tenant's route is served");

# at run time: big pushes more servers than its zone holds (10,000 to each
# of its upstreams, the most one upstream takes)
my $token = slurp("$dir/out/upstream-api.token") =~ s/\n//r;
my $flood = encode_json({upstreams => {map { ("backend_big_many-${_}_80" => {servers => [
    map { {address => sprintf('127.2.%d.%d:443', $_ / 250, $_ % 250)} } 0 .. 9_999]}) } 0 .. 2}});
my ($c, $reply) = api_request($api_port, '/upstreams', 'PUT', $flood, $token);
is($c, 507, 'a push bigger than the tenant\'s zone: 507') or diag substr($reply, 0, 300);
like($reply, qr/zone \\"gateway2nginx_servers_big\\" has no room/, '... naming that tenant\'s zone');
my $two = encode_json({upstreams => {backend_ns_web_443 => {servers => [
    {address => '127.0.0.1:' . backend_port('leaf')}, {address => '127.0.0.1:' . backend_port('leaf')}]}}});
($c, $reply) = api_request($api_port, '/upstreams', 'PUT', $two, $token);
is($c, 200, "the other tenant's push still lands") or diag $reply;
($c, $reply) = api_request($api_port, '/upstreams', 'GET', '', $token);
like($reply, qr/"backend_ns_web_443":\{[^\[]*"source":"api","servers":\[\{"address":"127\.0\.0\.1:\d+"[^\]]*\},\{"address"/,
     '... and the API lists its two servers');
($code) = request($port, 'GET', '/web', 'Host: localhost');
is($code, 200, 'and its route is served');
stop_served();
