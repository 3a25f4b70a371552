# HTTPRoute header, query-parameter and method matches through
# gateway2nginx and nginx, with Gateway API precedence among the rules of
# one path, each rule's backend verified under its own BackendTLSPolicy.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $port = serve_manifests(gateway_manifests(v1 => 'leaf', v2 => 'wildcard', canary => 'leaf_h2')
                           . <<'YAML');
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: matches, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /shop}}]
    backendRefs: [{name: v1, port: 443}]
  - matches:
    - path: {type: PathPrefix, value: /shop}
      headers: [{name: X-Version, value: v2}]
    backendRefs: [{name: v2, port: 443}]
  - matches:
    - path: {type: PathPrefix, value: /shop}
      headers: [{name: X-Version, value: v2}, {name: X-Canary, type: RegularExpression, value: "yes|true"}]
    backendRefs: [{name: canary, port: 443}]
  - matches:
    - path: {type: PathPrefix, value: /shop}
      method: DELETE
    backendRefs: [{name: missing, port: 443}]
  - matches:
    - path: {type: Exact, value: /search}
      queryParams: [{name: engine, value: v2}]
    backendRefs: [{name: v2, port: 443}]
  - matches:
    - path: {type: Exact, value: /find}
      queryParams: [{name: q, type: RegularExpression, value: ".*"}]
    backendRefs: [{name: v2, port: 443}]
  - matches:
    - path: {type: Exact, value: /traced}
      headers: [{name: X-Trace-Id, type: RegularExpression, value: ".*"}]
    backendRefs: [{name: v2, port: 443}]
  - matches:
    - path: {type: RegularExpression, value: "/items/[0-9]+"}
    backendRefs: [{name: v2, port: 443}]
YAML

sub backend_of {
    my ($status, $hdrs) = request($port, @_);
    return $status == 200 ? $hdrs->{'x-backend'} : $status;
}

is(backend_of('GET', '/shop/cart', 'Host: app.example.com'), 'leaf', 'no condition: the plain rule');
is(backend_of('GET', '/shop/cart', 'Host: app.example.com', 'X-Version: v2'), 'wildcard', 'a header match');
is(backend_of('GET', '/shop/cart', 'Host: app.example.com', 'X-Version: v3'), 'leaf', 'a header mismatch falls back');
is(backend_of('GET', '/shop', 'Host: app.example.com', 'X-Version: v2', 'X-Canary: true'), 'leaf_h2',
   'more header matches win (regular expression)');
is(backend_of('GET', '/shop', 'Host: app.example.com', 'X-Version: v2', 'X-Canary: truer'), 'wildcard',
   'the regular expression is anchored');
is(backend_of('DELETE', '/shop/x', 'Host: app.example.com', 'X-Version: v2', 'X-Canary: yes'), 500,
   'a method match comes first (its backend does not exist: 500)');
is(backend_of('GET', '/search?engine=v2', 'Host: app.example.com'), 'wildcard', 'a query parameter match');
is(backend_of('GET', '/search?engine=v1', 'Host: app.example.com'), 404, 'no rule matches: 404');
# Gateway API names query parameters with case, and reads the first of a name
is(backend_of('GET', '/search?Engine=v2', 'Host: app.example.com'), 404, 'a query parameter name matches with case');
is(backend_of('GET', '/search?ENGINE=v1&engine=v2', 'Host: app.example.com'), 'wildcard', 'another case is another name');
is(backend_of('GET', '/search?engine=v1&engine=v2', 'Host: app.example.com'), 404, 'the first value of a name counts');
is(backend_of('GET', '/search?xengine=v2&engine2=v2', 'Host: app.example.com'), 404, 'a longer name is another name');
is(backend_of('GET', '/search?a=1&engine=v2&b', 'Host: app.example.com'), 'wildcard', 'among others');
is(backend_of('GET', '/shopping', 'Host: app.example.com', 'X-Version: v2'), 404, 'whole path elements only');
is(backend_of('GET', '/find', 'Host: app.example.com'), 404, 'a parameter that is not there matches no pattern');
is(backend_of('GET', '/find?Q=1', 'Host: app.example.com'), 404, 'nor one of another case');
is(backend_of('GET', '/find?q', 'Host: app.example.com'), 'wildcard', 'a bare name is an empty value');
is(backend_of('GET', '/find?x=1&q=', 'Host: app.example.com'), 'wildcard', 'so is "q="');

# a header field that is not there matches no value, even one a pattern takes empty
is(backend_of('GET', '/traced', 'Host: app.example.com'), 404, 'a pattern that takes any value needs the field');
is(backend_of('GET', '/traced', 'Host: app.example.com', 'x-trace-id: 7'), 'wildcard', 'and takes it, of any case');
is(backend_of('GET', '/traced', 'Host: app.example.com', 'X-Trace-Id:'), 'wildcard', 'empty too');

is(backend_of('GET', '/items/42', 'Host: app.example.com'), 'wildcard', 'a regular-expression path');
is(backend_of('GET', '/items/42/x', 'Host: app.example.com'), 404, 'a regular-expression path matches the whole path');

# What no rule matches is nginx's own 404 whatever OUTDIR holds: not a file
# under OUTDIR/html (nginx's static handler), nor 403 where the workers
# cannot read OUTDIR
my $out = servroot() . '/out';
mkdir "$out/html";
spit("$out/html/$_", "a file, not a route\n") for 'unrouted', 'index.html';
is(backend_of('GET', '/unrouted', 'Host: app.example.com'), 404, 'a path no rule matches: 404, not a file of OUTDIR/html');
is(backend_of('GET', '/', 'Host: app.example.com'), 404, 'no rule covers /: 404, not an index file');
chmod 0700, $out or die "chmod: $!";
is(backend_of('GET', '/elsewhere', 'Host: app.example.com'), 404, 'in an OUTDIR of mode 0700: 404');
is(backend_of('GET', '/shop/cart', 'Host: app.example.com'), 'leaf', 'and the routes still serve');
chmod 0755, $out;

stop_served();
