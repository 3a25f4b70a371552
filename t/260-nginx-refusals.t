# What nginx -t would refuse costs only its owner (issue 16). The longest
# hostnames and header names validation lets through are served (nginx's
# hashes are sized for them); a named regex group is refused at parse (nginx
# would make it a variable); and a route that nginx -t still refuses, here
# through an ExternalName no resolver knows, is found by --check, rendered
# out and reported in its status, while every other route is served.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();
my $dir = servroot();

my $long_host = join '.', ('a' x 63), ('b' x 63), ('c' x 63), ('d' x 61);   # 253 bytes
my $long_sni = join '.', ('e' x 63), ('f' x 63), ('g' x 63), ('h' x 61);
my $long_header = 'X-' . ('h' x 254);                                        # 256 bytes
my $tcp_tls = backend_port('tcp_tls');

my $route = sub {
    my ($name, $created, $rule) = @_;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
         . "metadata: {name: $name, namespace: ns, creationTimestamp: \"$created\"}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n$rule";
};
my $yaml = gateway_manifests(svc => 'leaf');
$yaml .= $route->('long-host', '2020-01-01T00:00:00Z', <<"YAML");
  hostnames: [$long_host]
  rules:
  - matches: [{path: {type: PathPrefix, value: /long}}]
    backendRefs: [{name: svc, port: 443}]
YAML
$yaml .= $route->('long-headers', '2020-01-02T00:00:00Z', <<"YAML");
  rules:
  - matches: [{path: {type: PathPrefix, value: /headers}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: $long_header, value: a}]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        remove: [$long_header]
    backendRefs: [{name: svc, port: 443}]
YAML
$yaml .= $route->('named-group', '2020-01-03T00:00:00Z', <<'YAML');
  rules:
  - matches: [{path: {type: RegularExpression, value: "/(?<uri>.*)"}}]
    backendRefs: [{name: svc, port: 443}]
YAML
for my $n (1, 2) {
    $yaml .= $route->("external-$n", "2020-01-0${\($n + 3)}T00:00:00Z", <<"YAML");
  rules:
  - matches: [{path: {type: PathPrefix, value: /far-$n}}]
    backendRefs: [{name: far-$n, port: 443}]
YAML
    $yaml .= <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: far-$n, namespace: ns}
spec: {type: ExternalName, externalName: nowhere-$n.invalid, ports: [{port: 443}]}
YAML
}
$yaml .= $route->('late', '2020-01-09T00:00:00Z', <<'YAML');
  rules:
  - matches: [{path: {type: PathPrefix, value: /late}}]
    backendRefs: [{name: svc, port: 443}]
YAML
# a TLS passthrough listener on port 81 and a TLSRoute for the longest SNI
$yaml .= <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: ns}
spec:
  gatewayClassName: ours
  listeners: [{name: tls, port: 81, protocol: TLS, tls: {mode: Passthrough}}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: long-sni, namespace: ns}
spec:
  parentRefs: [{name: edge}]
  hostnames: [$long_sni]
  rules:
  - backendRefs: [{name: tcp-tls, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: tcp-tls, namespace: ns}
spec:
  ports: [{name: tls, port: 443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: tcp-tls-local, namespace: ns, labels: {kubernetes.io/service-name: tcp-tls}}
ports: [{name: tls, port: $tcp_tls}]
endpoints: [{addresses: ["127.0.0.1"]}]
YAML

my ($port, $out) = serve_manifests($yaml);
my $status = read_status("$dir/out/status.yaml");

# the longest names are served
{
    my ($code, undef, $body) = request($port, 'GET', '/long', "Host: $long_host");
    is($code, 200, 'a 253-byte route hostname is served');
    like($body, qr/backend=leaf/, '... by its backend');
    ($code) = request($port, 'GET', '/headers', 'Host: shop.example.com');
    is($code, 200, 'a 256-byte header name is set and removed');
    like(tls_exchange($port + 1, $long_sni, "hello\n"), qr/backend=tcp_tls tls=yes sni=\Q$long_sni\E/,
         'a TLSRoute for a 253-byte SNI is passed through');
}

# a named group: refused at parse, with the field
like($out, qr{warning: HTTPRoute ns/named-group is rejected: \S+:\d+:\d+: spec\.rules\[0\]\.matches\[0\]\.path\.value: named groups are not supported},
     'a named regex group is refused at parse, with FILE:LINE:COL and the field');

# what nginx -t refuses: each route at fault is left out and says why
for my $n (1, 2) {
    like($out, qr{warning: HTTPRoute ns/external-$n is rejected: \S+:\d+:\d+: nginx -t refuses the configuration with it: host not found in upstream "nowhere-$n\.invalid:443"},
         "external-$n: the warning names the route and what nginx -t said");
    like(join("\n", @{$status->{"HTTPRoute ns/external-$n"} || []}), qr{ns/gw: Accepted=False/UnsupportedValue},
         "external-$n: status.yaml says Accepted=False/UnsupportedValue");
    my ($code) = request($port, 'GET', "/far-$n", 'Host: shop.example.com');
    is($code, 404, "external-$n: not served");
}
like(slurp("$dir/out/status.yaml"), qr/nginx -t refuses the configuration with it: host not found in upstream \\"nowhere-1\.invalid:443\\"/,
     "status.yaml carries nginx's reason");
unlike($out, qr{HTTPRoute ns/(?:long-host|long-headers|late) is rejected}, 'no other route is blamed');
for my $path ('/late', '/long') {
    my ($code) = request($port, 'GET', $path, $path eq '/long' ? "Host: $long_host" : 'Host: shop.example.com');
    is($code, 200, "$path: served beside the refused routes");
}
like(join("\n", @{$status->{'HTTPRoute ns/late'} || []}), qr{ns/gw: Accepted=True/Accepted}, 'late: Accepted');
unlike(slurp("$dir/out/http.conf"), qr/nowhere/, 'what nginx refused is not in the configuration');
stop_served();
