# HTTPRoute filters through gateway2nginx and nginx: URLRewrite (hostname,
# ReplacePrefixMatch, ReplaceFullPath), Request/ResponseHeaderModifier,
# RequestRedirect and RequestMirror, in front of a backend verified by a
# BackendTLSPolicy.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $port = serve_manifests(gateway_manifests(svc => 'leaf') . <<'YAML');
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: filters, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    filters:
    - type: URLRewrite
      urlRewrite:
        hostname: internal.example.com
        path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: X-Set, value: gateway}]
        add: [{name: X-Add, value: added}]
        remove: [X-Drop]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        set: [{name: X-Backend, value: hidden}]
        add: [{name: X-Gateway, value: gateway2nginx}]
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /full}}]
    filters:
    - type: URLRewrite
      urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /replaced}}
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters:
    - type: RequestRedirect
      requestRedirect:
        scheme: https
        hostname: new.example.com
        statusCode: 301
        path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}
  - matches: [{path: {type: Exact, value: /moved}}]
    filters:
    - type: RequestRedirect
      requestRedirect: {port: 8443}
  # header values with nginx syntax reach the wire as written, never as
  # variables or directives
  - matches: [{path: {type: PathPrefix, value: /literal}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: X-Set, value: 'cost $host ${request_uri} "q" \ ; }'}]
        add: [{name: X-Add, value: '$remote_addr'}]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        add: [{name: X-Gateway, value: '$server_name;#'}]
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: Exact, value: /copied}}]
    filters:
    - type: RequestMirror
      requestMirror: {backendRef: {name: svc, port: 443}}
    backendRefs: [{name: svc, port: 443}]
YAML

sub get { request($port, 'GET', shift, 'Host: app.example.com', @_) }

my ($status, $hdrs, $body) = get('/api/items?q=1', 'X-Add: client', 'X-Drop: secret', 'X-Set: client');
is($status, 200, 'URLRewrite: proxied through the verified backend');
like($body, qr{^backend=leaf sni=abc\.example\.com path=/v2/items$}m, 'ReplacePrefixMatch /api -> /v2');
is($hdrs->{'x-echo-host'}, 'internal.example.com', 'URLRewrite hostname sets Host');
is($hdrs->{'x-echo-set'}, 'gateway', 'RequestHeaderModifier set replaces the client value');
is($hdrs->{'x-echo-add'}, 'client,added', 'RequestHeaderModifier add appends to the client value');
is($hdrs->{'x-echo-drop'}, undef, 'RequestHeaderModifier remove drops the header');
is($hdrs->{'x-backend'}, 'hidden', 'ResponseHeaderModifier set replaces the backend value');
is($hdrs->{'x-gateway'}, 'gateway2nginx', 'ResponseHeaderModifier add');

($status, $hdrs, $body) = get('/api');
like($body, qr{path=/v2$}m, 'ReplacePrefixMatch of the prefix itself');
is((get('/apix'))[0], 404, 'a prefix matches whole path elements only');
is((get('/api/x'))[1]->{'x-echo-add'}, 'added', 'RequestHeaderModifier add sets a header the client did not send');

($status, $hdrs, $body) = get('/full/anything');
like($body, qr{path=/replaced$}m, 'ReplaceFullPath');

($status, $hdrs) = get('/old/page?x=1');
is($status, 301, 'RequestRedirect statusCode');
is($hdrs->{location}, 'https://new.example.com/new/page?x=1', 'RequestRedirect scheme, hostname and prefix');
# $uri is decoded: a line break in the path must not end Location and
# start a field of the client's choosing (response splitting)
($status, $hdrs) = get('/old/a%0D%0ASet-Cookie:%20stolen=1%0D%0A?x=%22');
is($status, 301, 'a redirect of a path holding an encoded line break');
is($hdrs->{location}, 'https://new.example.com/new/a%0D%0ASet-Cookie:%20stolen=1%0D%0A?x=%22',
   'its Location holds the path escaped, rewritten as any other');
ok(!exists $hdrs->{'set-cookie'}, 'and no field of the client\'s choosing');
($status, $hdrs) = get('/moved');
is($status, 302, 'RequestRedirect default status');
is($hdrs->{location}, 'http://app.example.com:8443/moved', 'RequestRedirect port');

($status, $hdrs) = get('/literal/x');
is($status, 200, 'header values with $, quotes, a backslash, ; and } are served');
is($hdrs->{'x-echo-set'}, 'cost $host ${request_uri} "q" \\ ; }', 'set: the value reaches the backend as written');
is($hdrs->{'x-echo-add'}, '$remote_addr', 'add: the value reaches the backend as written');
is($hdrs->{'x-gateway'}, '$server_name;#', 'response add: the value reaches the client as written');

# RequestMirror: the mirror's internal location answers no client, not even
# through %7C (nginx matches the decoded path, and its URI is one no route
# path may hold); the mirrored rule is served as ever
is((get('/copied'))[0], 200, 'RequestMirror: the mirrored rule is served');
is((get('/gateway2nginx%7Cmirror%7C1'))[0], 404, 'RequestMirror: its internal location is not reachable from outside');
is((get('/gateway2nginx|mirror|1'))[0], 404, 'RequestMirror: nor with the | written out');

stop_served();
