# No tenant reaches an operator's interface (issue 35, findings 1, 8 and 10).
# A tenant who writes an EndpointSlice or an ExternalName Service pointing
# at the gateway itself (its upstream API, its status endpoint, its own
# listener) and a route to it: gateway2nginx serves none of them, even
# where the operator admits loopback endpoints (--allow-endpoints, as test
# rigs need), and says so; special addresses the API server refuses are
# refused by default. And where a request does get proxied to an operator
# interface (a DNS name that resolves to loopback, a hand-written
# configuration), the interface refuses it: an address is no credential,
# the bearer token is.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use JSON::PP;

plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $status_port = status_port();
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
my $module_dir = module_dir();

sub thief {
    my ($name, $address, $target_port) = @_;
    return <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: $name, namespace: tenant}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $name-1
  namespace: tenant
  labels: {kubernetes.io/service-name: $name}
ports: [{name: http, port: $target_port}]
endpoints: [{addresses: ["$address"]}]
YAML
}

my $yaml = routes_from_all_namespaces(gateway_manifests(web => 'leaf'));
$yaml .= <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{path: {value: /web}}], backendRefs: [{name: web, port: 443}]}]
YAML
my %thieves = (
    steal    => ['127.0.0.1', $api_port],          # the upstream API
    mapped   => ['::ffff:127.0.0.1', $api_port],   # the same, IPv4-mapped
    any      => ['0.0.0.0', $api_port],            # the same, unspecified
    peek     => ['127.0.0.1', $status_port],       # the status endpoint
    loop     => ['127.0.0.1', $port],              # the gateway's own listener
    metadata => ['169.254.169.254', 80],           # link-local: never admitted here
);
for my $name (sort keys %thieves) {
    $yaml .= thief($name, @{$thieves{$name}});
}
$yaml .= <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: named, namespace: tenant}
spec: {type: ExternalName, externalName: localhost, ports: [{name: http, port: $api_port}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: thief, namespace: tenant}
spec:
  parentRefs: [{name: gw, namespace: ns}]
  rules:
@{[ join '', map { "  - matches: [{path: {value: /$_}}]\n    backendRefs: [{name: $_, port: 80}]\n" } sort keys %thieves ]}  - matches: [{path: {value: /named}}]
    backendRefs: [{name: named, port: $api_port}]
YAML
spit("$dir/manifests.yaml", $yaml);

my ($rc, $out) = run_generator('-f', "$dir/manifests.yaml", '-o', "$dir/out", '--port-offset', $offset,
                               '--listen-address', '127.0.0.1', '--module-dir', $module_dir, '--check',
                               '--status-listen', "127.0.0.1:$status_port", '--upstream-api', "127.0.0.1:$api_port");
is($rc, 0, 'gateway2nginx writes a configuration that passes nginx -t') or diag $out;
for my $name (qw(steal mapped any peek loop)) {
    like($out, qr/warning: EndpointSlice tenant\/$name-1: endpoint \S+ is not served: it is the gateway's own address and port/,
         "$name: refused, though loopback endpoints are admitted here, and the warning names its object");
}
like($out, qr/warning: EndpointSlice tenant\/metadata-1: endpoint 169\.254\.169\.254:80 is not served: it is a link-local address, which the API server refuses/,
     'metadata: a link-local endpoint is refused');
like($out, qr/warning: Service tenant\/named \(externalName\): endpoint localhost:$api_port is not served: it is the gateway's own address and port/,
     'named: an ExternalName of this host at the API port is refused');
my $http = slurp("$dir/out/http.conf");
unlike($http, qr/server \S*:(?:$api_port|$status_port|$port)\b(?!.*down)/, 'no upstream server is an operator interface or a listener');
unlike($http, qr/server \S*169\.254\./, 'nor the link-local address');
like($http, qr/gateway_tls_upstream_api_token_file upstream-api\.token;/, 'the API is rendered with its token file');
like($http, qr/gateway_tls_status_token_file status\.token;\n\s*/, 'so is the status endpoint');

start_backends();
start_nginx("$dir/out", 'nginx.conf', $port);
my $api_auth = bearer("$dir/out/upstream-api.token");
my ($code) = request($port, 'GET', '/web', 'Host: localhost');
is($code, 200, 'the tenant-free route serves');
my ($listed_code, $listed) = api_request($api_port, '/upstreams', 'GET', '', slurp("$dir/out/upstream-api.token") =~ s/\n//r);
is($listed_code, 200, 'the operator lists the upstreams with the token');
for my $path (qw(/steal /mapped /any /named)) {
    my ($c, undef, $body) = request($port, 'GET', $path, 'Host: localhost');
    like($c, qr/^5\d\d$/, "GET $path: $c, not the API");
    unlike($body, qr/"upstreams"/, "GET $path: no upstream list");
    my $push = encode_json({upstreams => {map { $_ => {servers => [{address => "127.0.0.1:1"}]} } ($listed =~ /"(backend_[^"]+)"/g)}});
    ($c) = api_request($port, $path, 'PUT', $push, '');
    like($c, qr/^[45]\d\d$/, "PUT $path: $c");
}
is((api_request($api_port, '/upstreams', 'GET', '', slurp("$dir/out/upstream-api.token") =~ s/\n//r))[1], $listed,
   'no upstream was changed through a route');
my ($peek, undef, $peeked) = request($port, 'GET', '/peek', 'Host: localhost');
like($peek, qr/^5\d\d$/, "GET /peek: $peek, not the status endpoint");
unlike($peeked, qr/"policies"/, 'and none of its policies');
my ($loop) = request($port, 'GET', '/loop', 'Host: localhost');
like($loop, qr/^5\d\d$/, "GET /loop: $loop, no request loop");
# the access log's line is written after the response: waited for
wait_for(sub { count_in("$dir/out/logs/access.log", qr{"GET /loop HTTP}) >= 1 }, 5);
is(count_in("$dir/out/logs/access.log", qr{"GET /loop HTTP}), 1, 'the looping request reached the gateway once');
($code) = request($status_port, 'GET', '/status', 'Host: localhost');
is($code, 401, 'the status endpoint without its token: 401');
($code) = request($status_port, 'GET', '/status', 'Host: localhost', bearer("$dir/out/status.token"));
is($code, 200, 'and 200 with it');
stop_nginx("$dir/out");

# ---- by default, the special ranges the API server refuses ------------------
($rc, $out) = run_generator('-f', "$dir/manifests.yaml", '-o', "$dir/strict", '--port-offset', $offset,
                            '--listen-address', '127.0.0.1', '--no-test-endpoints');
is($rc, 0, 'without --allow-endpoints') or diag $out;
like($out, qr/warning: EndpointSlice ns\/web-local: endpoint 127\.0\.0\.1:\d+ is not served: it is a loopback address, which the API server refuses for endpoints \(the operator's --allow-endpoints admits one\)/,
     'a loopback endpoint is refused, and the warning says how an operator admits it');
unlike(slurp("$dir/strict/http.conf"), qr/server 127\.0\.0\.1:(?!1 down)/, 'no loopback server is rendered');

# ---- a request proxied to the interfaces anyway: refused --------------------
# As if a tenant's DNS name resolved to loopback: nginx proxies to the API
# and the status endpoint from 127.0.0.1, an address both allow.
make_path("$dir/gw/logs");
my $token_file = operator_token_file();
spit("$dir/gw/nginx.conf", <<"EOF");
load_module $module;
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path logs/client_body;
    proxy_temp_path logs/proxy;
    gateway_tls_upstream_state_zone 64k;
    gateway_tls_status_zone 64k;
    upstream zoned { zone z 64k; server 127.0.0.1:1; }
    server {
        listen 127.0.0.1:$port;
        location /api {
            gateway_tls_upstream_api;
            gateway_tls_upstream_api_allow 127.0.0.1;
            gateway_tls_upstream_api_token_file $token_file;
        }
        location /status {
            gateway_tls_status;
            gateway_tls_status_allow 127.0.0.1;
            gateway_tls_status_token_file $token_file;
        }
        location /tenant-api { proxy_pass http://127.0.0.1:$port/api; }
        location /tenant-status { proxy_pass http://127.0.0.1:$port/status; }
    }
}
EOF
start_nginx("$dir/gw", 'nginx.conf', $port);
my ($before_code, $before) = api_request($port, '/api', 'GET', '');
is($before_code, 200, 'the operator, with the token, lists the upstreams');
my ($c, $reply) = api_request($port, '/tenant-api', 'PUT', '{"upstreams":{"zoned":{"servers":[{"address":"10.9.9.9:443"}]}}}', '');
is($c, 401, 'a PUT proxied from 127.0.0.1 without the token: 401');
like($reply, qr/the upstream API needs its bearer token/, 'and says why');
($c) = api_request($port, '/tenant-api', 'GET', '', 'guessed-0123456789abcdef0123456789abcdef');
is($c, 401, 'a proxied GET with a guessed token: 401');
is((api_request($port, '/api', 'GET', ''))[1], $before, 'the upstreams are unchanged');
($c) = api_request($port, '/tenant-status', 'GET', '', '');
is($c, 401, 'the status endpoint proxied from 127.0.0.1: 401');
like(slurp("$dir/gw/logs/error.log"), qr/upstream API refused to 127\.0\.0\.1: no bearer token/, 'the refusals are logged');

# Finding 10: an escaped NUL in an address was taken as the address before
# it ("10.0.0.1\u0000junk:8443" as 10.0.0.1:8443); every control byte is
# refused, and nothing changes.
($c, $reply) = api_request($port, '/api', 'PUT', '{"upstreams":{"zoned":{"servers":[{"address":"10.0.0.1\\u0000junk:8443"}]}}}');
is($c, 400, 'an escaped NUL in an address: 400');
like($reply, qr/a control character in a string/, 'and says why');
($c, $reply) = api_request($port, '/api', 'PUT', '{"upstreams":{"zoned\\u0000x":{"servers":[]}}}');
is($c, 400, 'an escaped NUL in an upstream name: 400');
is((api_request($port, '/api', 'GET', ''))[1], $before, 'the upstreams are unchanged');
stop_nginx("$dir/gw");
stop_backends();
