// render: the nginx configuration a Plan gives.
#include <boost/test/unit_test.hpp>

#include <string>

#include "resolve_render_fixtures.h"

using namespace g2n;
using namespace g2n_test;

BOOST_AUTO_TEST_SUITE(render)

BOOST_AUTO_TEST_CASE(deterministic_and_verifying)
{
    Plan plan = plan_of(base_manifests() + policy("p", "https", "abc.example.com"));
    std::string http = render_http_conf(plan);
    BOOST_TEST(http == render_http_conf(plan_of(base_manifests() + policy("p", "https", "abc.example.com"))));
    BOOST_TEST(http.find("proxy_ssl_verify_insecure deny;") != std::string::npos);
    BOOST_TEST(http.find("    proxy_ssl_verify_mode strict;\n    proxy_ssl_verify_ca certs/ca-") != std::string::npos);
    BOOST_TEST(http.find("    proxy_ssl_policy_hostname abc.example.com;\n") != std::string::npos);
    BOOST_TEST(http.find("proxy_pass https://backend_ns_svc_443;") != std::string::npos);
    BOOST_TEST(http.find("proxy_pass http://backend_ns_svc_8443;") != std::string::npos);
    BOOST_TEST(render_status(plan, Options{}) == render_status(plan, Options{}));
    BOOST_TEST(render_status(plan, Options{}).find("controllerName: gateway2nginx.io/controller")
               != std::string::npos);
}

// GRPCRoute filters (its CRD allows RequestHeaderModifier,
// ResponseHeaderModifier, RequestMirror, ExtensionRef): grpc_* directives
// GRPCRoute ns/grpc on Gateway gw for grpc.example.com, its rules to follow.
const std::string kGrpcRouteHead = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
)";

// HTTP/2 for a GRPCRoute's cleartext listener, beside HTTP/1.x: the
// module's gateway_tls_h2c_preface before nginx 1.25.1 (a `listen ...
// http2` would take HTTP/2 alone), the `http2` directive in each of the
// listen's servers after (which deprecates the listen parameter, with a
// warning at every start).
BOOST_AUTO_TEST_CASE(http2_follows_the_nginx_version)
{
    const std::string route = kGrpcRouteHead + "  - backendRefs: [{name: svc, port: 443}]\n";
    Plan plan = plan_of(base_manifests() + route);
    Options old_nginx, new_nginx;
    old_nginx.nginx_version = 1022001;
    new_nginx.nginx_version = 1026003;
    std::string before = render_http_conf(plan, old_nginx), after = render_http_conf(plan, new_nginx);
    auto count = [](const std::string &text, const std::string &what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
        return n;
    };
    BOOST_TEST(count(before, "http2") == 0u, before);
    BOOST_TEST(count(before, "gateway_tls_h2c_preface on;") > 0u, before);
    BOOST_TEST(count(after, "http2 on;") == count(before, "gateway_tls_h2c_preface on;"), after);
    BOOST_TEST(count(after, "gateway_tls_h2c_preface") == 0u, after);
    for (size_t at = after.find("listen "); at != std::string::npos; at = after.find("listen ", at + 1)) {
        std::string line = after.substr(at, after.find('\n', at) - at);
        BOOST_TEST(line.find("http2") == std::string::npos, line);
    }
}

BOOST_AUTO_TEST_CASE(grpc_route_filters_render_as_grpc_directives)
{
    const std::string route = kGrpcRouteHead + R"(  - matches: [{method: {service: pkg.Echo, method: Say}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: X-Set, value: one}], add: [{name: X-Add, value: two}], remove: [X-Drop]}
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: X-Resp, value: three}], remove: [Server-Timing]}
    backendRefs: [{name: svc, port: 443}]
)";
    // what it renders: testdata/routes-by-kind (golden), shop.Cart/Remove

    // the grpc module hashes header names in fixed 64-byte buckets: a name
    // of 46 bytes fits, one of 47 would stop nginx -t, so its rule is not
    // served (the route is not accepted, with the reason)
    for (size_t length : {46u, 47u}) {
        std::string named = route;
        named.replace(named.find("remove: [X-Drop]"), 16, "remove: [" + std::string(length, 'h') + "]");
        Plan plan = plan_of(base_manifests() + named);
        const ObjectStatus st = status_of(plan, "GRPCRoute", "grpc");
        BOOST_TEST_REQUIRE(st.refs.size() == 1u);
        const Condition &accepted = st.refs[0].conditions.front();
        BOOST_TEST(accepted.status == (length == 46 ? "True" : "False"), length);
        if (length == 47) BOOST_TEST(accepted.message.find("longer than nginx's gRPC proxy takes") != std::string::npos);
    }

    // filters of HTTPRoute only, and repeats, are refused with the field path
    for (const auto &[filter, message] : std::vector<std::pair<std::string, std::string>>{
             {"{type: URLRewrite, urlRewrite: {hostname: a.example.com}}",
              "spec.rules[0].filters[0].type: expected RequestHeaderModifier, ResponseHeaderModifier, RequestMirror or ExtensionRef"},
             {"{type: RequestHeaderModifier, requestHeaderModifier: {remove: [A]}}, "
              "{type: RequestHeaderModifier, requestHeaderModifier: {remove: [B]}}",
              "spec.rules[0].filters: RequestHeaderModifier filter cannot be repeated"}}) {
        std::string bad = route;
        std::string filters = bad.substr(bad.find("    filters:"), bad.find("    backendRefs") - bad.find("    filters:"));
        bad.replace(bad.find(filters), filters.size(), "    filters: [" + filter + "]\n");
        std::string e = error_of(bad);
        BOOST_TEST(e.find(message) != std::string::npos, e);
    }
}

namespace {

// An edit of a manifest: replace FROM (which must be there) with TO; what
// the result must give (an error, a condition's message).
struct Edit {
    std::string from, to, expected;
};

std::string edited(std::string text, const Edit &e)
{
    size_t at = text.find(e.from);
    BOOST_TEST_REQUIRE(at != std::string::npos, e.from);
    return text.replace(at, e.from.size(), e.to);
}

// Each edit of ROUTE is refused with its field path and message.
void check_refused(const std::string &route, const std::vector<Edit> &edits)
{
    for (const Edit &e : edits) {
        std::string error = error_of(base_manifests() + edited(route, e));
        BOOST_TEST(error.find(e.expected) != std::string::npos, error);
    }
}

// Each edit of ROUTE (a KIND called NAME) leaves it not Accepted, saying why.
void check_not_accepted(const std::string &route, const std::string &kind, const std::string &name,
                        const std::vector<Edit> &edits)
{
    for (const Edit &e : edits) {
        Plan p = plan_of(base_manifests() + edited(route, e));
        const Condition &accepted = status_of(p, kind, name).refs.at(0).conditions.front();
        BOOST_TEST(accepted.status == "False", e.to);
        BOOST_TEST(accepted.message.find(e.expected) != std::string::npos, accepted.message);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(backend_ref_filters_render_per_backend)
{
    const std::string route = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: split, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [split.example.com]
  rules:
  - matches: [{path: {value: /weighted}}]
    backendRefs:
    - name: svc
      port: 443
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: Backend, value: one}], add: [{name: X-Trail, value: a}]}}]
    - name: svc
      port: 8443
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {remove: [backend]}}]
  - matches: [{path: {value: /single}}]
    backendRefs:
    - name: svc
      port: 443
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}}]
)";
    Plan plan = plan_of(base_manifests() + route);
    BOOST_TEST(status_of(plan, "HTTPRoute", "split").refs.at(0).conditions.front().status == "True");
    std::string http = render_http_conf(plan);
    // several backendRefs: each header's value chosen by the split's pick;
    // a backend that leaves a header alone passes on the client's
    BOOST_TEST(http.find("map $backend_split_1 $backend_header_2 {\n"
                         "    \"~^http://backend_ns_svc_443$\" one;\n"
                         "    \"~^http://backend_ns_svc_8443$\" \"\";\n"
                         "    default $http_backend;\n}\n") != std::string::npos, http);
    BOOST_TEST(http.find("map $backend_split_1 $backend_header_4 {\n"
                         "    \"~^http://backend_ns_svc_443$\" $header_add_3;\n"
                         "    default $http_x_trail;\n}\n") != std::string::npos, http);
    BOOST_TEST(http.find("        proxy_set_header Host $http_host;\n"
                         "        proxy_set_header Via $gateway2nginx_via;\n"
                         "        proxy_set_header Backend $backend_header_2;\n"
                         "        proxy_set_header X-Trail $backend_header_4;\n"
                         "        proxy_pass $backend_split_1;\n") != std::string::npos, http);
    // the only backendRef's filter is the rule's own
    BOOST_TEST(http.find("    location /single/ {\n        rewrite \"^/single$\" /new break;\n"
                         "        rewrite \"(?s)^/single(/.*)$\" /new$1 break;\n") != std::string::npos, http);

    // what cannot be rendered makes the route not Accepted, with the reason
    check_not_accepted(route, "HTTPRoute", "split", {
             {"filters: [{type: RequestHeaderModifier, requestHeaderModifier: {remove: [backend]}}]",
              "filters: [{type: URLRewrite, urlRewrite: {hostname: a.example.com}}]",
              "a URLRewrite filter on one of several backendRefs"},
             {"port: 8443\n", "port: 443\n", "two backendRefs to svc with filters"},
             {"  - matches: [{path: {value: /weighted}}]\n",
              "  - matches: [{path: {value: /weighted}}]\n"
              "    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: BACKEND, value: x}]}}]\n",
              "header backend is modified by both the rule and a backendRef"},
             {"  - matches: [{path: {value: /single}}]\n",
              "  - matches: [{path: {value: /single}}]\n"
              "    filters: [{type: URLRewrite, urlRewrite: {hostname: b.example.com}}]\n",
              "a URLRewrite filter on the backendRef beside the rule's own filters"},
             {"  - matches: [{path: {value: /weighted}}]\n",
              "  - matches: [{path: {value: /weighted}, headers: [{name: v, value: \"1\"}]}]\n",
              "filters, timeouts or retries on a rule with header, query or method matches"}});

    // a backendRef's filters are checked as a rule's, with their field path
    check_refused(route, {
             {"replacePrefixMatch: /new}}}]",
              "replacePrefixMatch: /new}}}, {type: URLRewrite, urlRewrite: {hostname: a.example.com}}]",
              "spec.rules[1].backendRefs[0].filters: URLRewrite filter cannot be repeated"},
             {"{remove: [backend]}", "{remove: [\"bad header\"]}",
              "spec.rules[0].backendRefs[1].filters[0].requestHeaderModifier.remove[0]"},
             {"  - matches: [{path: {value: /single}}]\n", "  - matches: [{path: {type: Exact, value: /single}}]\n",
              "spec.rules[1].backendRefs[0]: When using URLRewrite or RequestRedirect filter with path.replacePrefixMatch"}});
}

// Framing and hop-by-hop headers are nginx's own toward either side: a
// route that sets, adds or removes one, whatever its case and wherever
// the filter stands, is not served (a Content-Length that disagrees with
// the body would smuggle a request into a shared upstream connection).
BOOST_AUTO_TEST_CASE(connection_headers_are_nginx_s_to_set)
{
    const std::string route = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: headers, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [headers.example.com]
  rules:
  - matches: [{path: {value: /rule}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: X-Set, value: one}], add: [{name: X-Add, value: two}], remove: [X-Drop]}
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: X-Resp, value: three}], add: [{name: X-Resp-Add, value: four}], remove: [X-Hide]}
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {value: /backend}}]
    backendRefs:
    - name: svc
      port: 443
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Backend, value: five}]}}]
)";
    Plan plan = plan_of(base_manifests() + route);
    BOOST_TEST(status_of(plan, "HTTPRoute", "headers").refs.at(0).conditions.front().status == "True");
    std::vector<Edit> edits;
    for (const char *header : {"Content-Length", "transfer-encoding", "Connection", "Keep-Alive", "Proxy-Connection",
                               "TE", "Trailer", "UPGRADE"}) {
        const std::string why = std::string("header ") + header + " frames the message or belongs to the connection";
        for (const char *field : {"{name: X-Set,", "{name: X-Add,", "[X-Drop]", "{name: X-Resp,", "{name: X-Resp-Add,",
                                  "[X-Hide]", "{name: X-Backend,"}) {
            std::string to = field;
            to.replace(to.find("X-"), to.find_first_of(",]") - to.find("X-"), header);
            edits.push_back({field, to, why});
        }
    }
    check_not_accepted(route, "HTTPRoute", "headers", edits);
    // and a GRPCRoute's (TE: trailers is gRPC's, which nginx's grpc module sends)
    const std::string grpc = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
  - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Set, value: one}]}}]
    backendRefs: [{name: svc, port: 443}]
)";
    BOOST_TEST(status_of(plan_of(base_manifests() + grpc), "GRPCRoute", "grpc").refs.at(0).conditions.front().status
               == "True");
    check_not_accepted(grpc, "GRPCRoute", "grpc",
                       {{"{name: X-Set,", "{name: te,", "header te frames the message or belongs to the connection"}});
}

// CORS (HTTPRoute, Extended): a preflight is answered in the location,
// before anything else it does; allowed origins become anchored,
// case-insensitive regular expressions of their parts only.
BOOST_AUTO_TEST_CASE(cors_filters_answer_preflights_and_echo_allowed_origins)
{
    const std::string route = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cors, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [cors.example.com]
  rules:
  - matches: [{path: {value: /api}}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["https://www.foo.com", "https://*.bar.com", "http://a-b.test:8080", "https://c.test:443"]
        allowMethods: [GET, PUT]
        allowHeaders: [x-one, x-two]
        exposeHeaders: ["*"]
        allowCredentials: true
        maxAge: 60
    - type: URLRewrite
      urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}
    backendRefs: [{name: svc, port: 443}]
)";
    Plan plan = plan_of(base_manifests() + route);
    BOOST_TEST(status_of(plan, "HTTPRoute", "cors").refs.at(0).conditions.front().status == "True");
    // what it renders: testdata/timeouts-cors-weights (golden), /partners

    check_refused(route, {
             {"\"https://www.foo.com\",", "\"ftp://www.foo.com\",", "spec.rules[0].filters[0].cors.allowOrigins[0]: not an origin"},
             {"\"https://www.foo.com\",", "\"https://www.foo.com/path\",", "cors.allowOrigins[0]: not an origin"},
             {"\"https://www.foo.com\",", "\"https://www.foo.com:70000\",", "cors.allowOrigins: port of"},
             {"\"https://www.foo.com\",", "\"*\",", "cors.allowOrigins: cannot contain '*' alongside other values"},
             {"\"https://www.foo.com\",", "\"https://c.test:443\",", "cors.allowOrigins[3]: duplicate value"},
             {"[GET, PUT]", "[GET, FETCH]", "cors.allowMethods[1]: expected GET"},
             {"[x-one, x-two]", "[x-one, \"x two\"]", "cors.allowHeaders[1]: not a valid header name"},
             {"maxAge: 60", "maxAge: 0", "cors.maxAge"},
             {"allowCredentials: true", "allowCredentials: maybe", "cors.allowCredentials: expected true or false"},
             {"        maxAge: 60\n", "        maxAge: 60\n        allowPrivateNetwork: true\n", "allowPrivateNetwork"}});
    check_not_accepted(route, "HTTPRoute", "cors", {
             {"    - type: URLRewrite\n      urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}\n",
              "    - type: ResponseHeaderModifier\n      responseHeaderModifier: {remove: [access-control-max-age]}\n",
              "header access-control-max-age is the CORS filter's to set"}});
}

BOOST_AUTO_TEST_CASE(backend_protocols_follow_the_app_protocol)
{
    // GEP-1911: an unverified wss is not served
    // (ResolvedRefs=False/UnsupportedProtocol)
    const std::string services = R"(---
apiVersion: v1
kind: Service
metadata: {name: ws, namespace: ns}
spec:
  ports:
  - {name: ws, port: 80, appProtocol: kubernetes.io/ws}
  - {name: h2c, port: 81, appProtocol: kubernetes.io/h2c}
  - {name: wss, port: 82, appProtocol: kubernetes.io/wss}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ws-1
  namespace: ns
  labels: {kubernetes.io/service-name: ws}
ports: [{name: ws, port: 8080}, {name: h2c, port: 8081}, {name: wss, port: 8082}]
endpoints: [{addresses: ["10.0.0.3"]}]
)";
    const std::string route = services + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: protocols, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [ws.example.com]
  rules:
  - matches: [{path: {value: /ws}}]
    backendRefs: [{name: ws, port: 80}]
  - matches: [{path: {value: /mixed}}]
    backendRefs: [{name: ws, port: 80}, {name: svc, port: 443}]
  - matches: [{path: {value: /host}}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: HOST, value: h.example.com}]}}]
    backendRefs: [{name: ws, port: 80}]
)";
    // what they render: testdata/backend-protocols (golden)
    Plan plan = plan_of(base_manifests() + route);
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "protocols")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");

    for (const auto &[port, why] : std::vector<std::pair<std::string, std::string>>{
             {"82", "appProtocol kubernetes.io/wss needs a BackendTLSPolicy to verify the backend"}}) {
        Plan p = plan_of(base_manifests() + edited(route, {"backendRefs: [{name: ws, port: 80}]\n  - matches: [{path: {value: /mixed}}]",
                                                            "backendRefs: [{name: ws, port: " + port + "}]\n  - matches: [{path: {value: /mixed}}]", ""}));
        const Condition &refs = status_of(p, "HTTPRoute", "protocols").refs.at(0).conditions.at(1);
        BOOST_TEST(refs.reason == "UnsupportedProtocol");
        BOOST_TEST(refs.message.find(why) != std::string::npos, refs.message);
        BOOST_TEST(render_http_conf(p).find("    location /ws/ {\n        return 500;\n") != std::string::npos);
    }
    // what the API server would refuse
    std::string error = error_of(base_manifests() + edited(route, {"appProtocol: kubernetes.io/ws", "appProtocol: \"ws;x\"", ""}));
    BOOST_TEST(error.find("spec.ports[0].appProtocol: must be a qualified name") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(h2c_backends_go_out_by_grpc_pass)
{
    // GEP-1911 kubernetes.io/h2c: HTTP/2 by prior knowledge, which nginx
    // speaks by grpc_pass; with the client's Host as :authority
    const std::string route = R"(---
apiVersion: v1
kind: Service
metadata: {name: h2, namespace: ns}
spec:
  ports: [{name: h2c, port: 81, appProtocol: kubernetes.io/h2c}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: h2-1
  namespace: ns
  labels: {kubernetes.io/service-name: h2}
ports: [{name: h2c, port: 8081}]
endpoints: [{addresses: ["10.0.0.3"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: h2c, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [h2c.example.com]
  rules:
  - matches: [{path: {value: /only}}]
    timeouts: {request: 5s}
    backendRefs: [{name: h2, port: 81}]
  - matches: [{path: {value: /mixed}}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-a, value: b}]}}]
    backendRefs: [{name: h2, port: 81}, {name: svc, port: 443}]
  - matches: [{path: {value: /header}, headers: [{name: x-h2, value: "yes"}]}]
    backendRefs: [{name: h2, port: 81}]
  - matches: [{path: {value: /header}}]
    backendRefs: [{name: svc, port: 443}]
)";
    Plan plan = plan_of(base_manifests() + route);
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "h2c")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    std::string http = render_http_conf(plan);
    // a location of h2c backends alone: grpc_pass, and grpc_ timeouts
    BOOST_TEST(http.find("    location /only/ {\n        grpc_set_header Host $http_host;\n"
                         "        grpc_set_header Via $gateway2nginx_via;\n"
                         "        grpc_connect_timeout 5s;\n        grpc_send_timeout 5s;\n        grpc_read_timeout 5s;\n"
                         "        grpc_next_upstream_timeout 5s;\n        gateway_tls_request_timeout 5s;\n"
                         "        grpc_pass grpc://backend_ns_h2_81;\n") != std::string::npos, http);
    // beside HTTP/1.1 backends: the backend chosen says the module, and
    // the filter's headers go to both
    BOOST_TEST(http.find("    location /mixed/ {\n        proxy_set_header Host $http_host;\n"
                         "        grpc_set_header Host $http_host;\n"
                         "        proxy_set_header Via $gateway2nginx_via;\n        grpc_set_header Via $gateway2nginx_via;\n"
                         "        proxy_set_header x-a b;\n        grpc_set_header x-a b;\n") != std::string::npos, http);
    const size_t split = http.find("split_clients \"${request_id}\" $backend_split_");
    BOOST_TEST_REQUIRE(split != std::string::npos);
    const std::string split_var = http.substr(http.find('$', split + 30), http.find(' ', http.find('$', split + 30)) - http.find('$', split + 30));
    BOOST_TEST(http.find("    50.00% grpc://backend_ns_h2_81;\n    * http://backend_ns_svc_443;\n") != std::string::npos, http);
    const size_t chooser = http.find("map " + split_var + " $grpc_backend_");
    BOOST_TEST_REQUIRE(chooser != std::string::npos, http);
    BOOST_TEST(http.find(" {\n    \"~^grpcs?://\" 1;\n    default \"\";\n}\n", chooser) != std::string::npos, http);
    BOOST_TEST(http.find("        if ($grpc_backend_") != std::string::npos, http);
    BOOST_TEST(http.find(" = 1) {\n            grpc_pass " + split_var + ";\n        }\n        proxy_pass " + split_var + ";\n")
               != std::string::npos, http);
    // a header match's h2c target beside the path's HTTP/1.1 one
    BOOST_TEST(http.find("    location /header/ {\n        proxy_set_header Host $http_host;\n        grpc_set_header Host $http_host;\n")
               != std::string::npos, http);
    for (const Server &server : plan.servers) {
        for (const Location &l : server.locations) {
            const PassModules m = pass_modules(l);
            const std::string path = l.match.describe();
            BOOST_TEST(m.grpc == (path.find("only") != std::string::npos || path.find("mixed") != std::string::npos
                                  || path.find("header") != std::string::npos), path);
            BOOST_TEST(m.proxy == (path.find("only") == std::string::npos), path);
        }
    }

    // what a GRPCRoute location has always had: no Host of ours
    BOOST_TEST(http.find("grpc_set_header Host $http_host;\n        grpc_pass grpc://backend_ns_h2_81;") == std::string::npos);

    // a mirror's subrequest has no way through grpc_pass: refused, the
    // rule served
    Plan mirrored = plan_of(base_manifests() + edited(route, {"    timeouts: {request: 5s}\n",
        "    timeouts: {request: 5s}\n    filters: [{type: RequestMirror, requestMirror: {backendRef: {name: h2, port: 81}}}]\n", ""}));
    const Condition &refs = status_of(mirrored, "HTTPRoute", "h2c").refs.at(0).conditions.at(1);
    BOOST_TEST(refs.reason == "UnsupportedProtocol");
    BOOST_TEST(refs.message.find("kubernetes.io/h2c is not supported for mirrors") != std::string::npos, refs.message);
    BOOST_TEST(render_http_conf(mirrored).find("mirror ") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(retries_go_to_the_next_of_enough_peers)
{
    // GEP-1731: attempts retries after the first try, on connection
    // errors and the rule's codes; nginx tries each peer once, so the
    // upstream lists each server often enough, without passive health
    // checks (a retried 500 would take the only server out)
    const std::string route = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: retried, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [retry.example.com]
  rules:
  - matches: [{path: {value: /codes}}]
    retry: {codes: [500, 503], attempts: 4}
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {value: /errors}}]
    retry: {attempts: 1}
    backendRefs: [{name: svc, port: 443}]
)";
    Plan plan = plan_of(base_manifests() + route);
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "retried")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    // what it renders: testdata/retries-weights (golden)

    // what nginx cannot do is not served half-done
    check_not_accepted(route, "HTTPRoute", "retried",
                       {{"codes: [500, 503]", "codes: [500, 501]",
                         "spec.rules[0].retry.codes: 501 is not retried: nginx retries on 403, 404, 429, 500, 502, 503 and 504"},
                        {"retry: {attempts: 1}", "retry: {attempts: 1, backoff: 100ms}",
                         "spec.rules[1].retry.backoff: nginx retries at once"},
                        // a server line per try, and the backend's load multiplied
                        {"retry: {attempts: 1}", "retry: {attempts: 11}", "spec.rules[1].retry.attempts: at most 10 retries"}});
    BOOST_TEST(render_http_conf(plan_of(base_manifests() + edited(route, {"attempts: 1}", "attempts: 10}", ""})))
                   .find("proxy_next_upstream_tries 11;") != std::string::npos);
    // the CRD's bounds
    check_refused(route, {{"attempts: 1}", "attempts: 0}", "spec.rules[1].retry.attempts: expected an integer from 1"},
                          {"attempts: 1}", "attempts: 2147483648}", "spec.rules[1].retry.attempts: expected an integer from 1"},
                          {"codes: [500, 503]", "codes: [500, 600]", "spec.rules[0].retry.codes[1]: expected an integer from 400 to 599"},
                          {"attempts: 1}", "attempts: 1, budget: 2}", "spec.rules[1].retry.budget: unknown field"},
                          {"attempts: 1}", "attempts: 1, backoff: 1x}", "spec.rules[1].retry.backoff: not a duration"}});
}

BOOST_AUTO_TEST_CASE(cleartext_listeners_take_h2c_clients)
{
    // HTTP/2 by prior knowledge beside HTTP/1.x on one cleartext port:
    // nginx 1.25.1 tells them apart itself (`http2 on`), 1.22 through the
    // module (gateway_tls_h2c_preface; a cleartext `listen ... http2`
    // would take HTTP/2 alone); the GatewayClass claims
    // HTTPRouteBackendProtocolH2C on both
    Plan plan = plan_of(base_manifests());
    Options old_nginx, new_nginx;
    new_nginx.nginx_version = 1026003;
    const std::string old_http = render_http_conf(plan, old_nginx);
    BOOST_TEST(old_http.find("    listen 0.0.0.0:80 default_server;\n    gateway_tls_h2c_preface on;\n") != std::string::npos,
               old_http);
    BOOST_TEST(old_http.find("http2") == std::string::npos);
    const std::string http = render_http_conf(plan, new_nginx);
    BOOST_TEST(http.find("    listen 0.0.0.0:80 default_server;\n    http2 on;\n") != std::string::npos, http);
    BOOST_TEST(http.find("gateway_tls_h2c_preface") == std::string::npos);
    for (const Options &o : {old_nginx, new_nginx}) {
        BOOST_TEST(render_status(plan, o).find("    - name: HTTPRouteBackendProtocolH2C\n"
                                               "    - name: HTTPRouteBackendProtocolWebSocket\n") != std::string::npos);
    }
    // still sorted, without repeats
    const std::vector<std::string_view> features = supported_features();
    BOOST_TEST((std::adjacent_find(features.begin(), features.end(), std::greater_equal<>()) == features.end()));
}

BOOST_AUTO_TEST_CASE(request_mirrors_render_as_internal_locations)
{
    const std::string route = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: copy, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [copy.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /a}}]
    filters:
    - {type: RequestMirror, requestMirror: {backendRef: {name: svc, port: 443}}}
    - {type: RequestMirror, requestMirror: {backendRef: {name: svc, port: 8443}, fraction: {numerator: 1, denominator: 3}}}
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: Exact, value: /b}}]
    filters:
    - {type: RequestMirror, requestMirror: {backendRef: {name: svc, port: 443}}}
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: Exact, value: /c}}]
    filters:
    - {type: RequestMirror, requestMirror: {backendRef: {name: svc, port: 8443}, fraction: {numerator: 1, denominator: 3}}}
    backendRefs: [{name: svc, port: 443}]
)";
    // what it renders: testdata/mirrors-timeouts (golden)

    // a mirror to a Service that does not exist: left out, and said
    Plan p = plan_of(base_manifests() + edited(route, {"name: svc, port: 8443", "name: gone, port: 8443", ""}));
    BOOST_TEST(render_http_conf(p).find("gateway2nginx|mirror|3") == std::string::npos);
    const std::vector<Condition> &conditions = status_of(p, "HTTPRoute", "copy").refs.at(0).conditions;
    BOOST_TEST(std::any_of(conditions.begin(), conditions.end(), [](const Condition &c) {
        return c.type == "ResolvedRefs" && c.status == "False" && c.message.find("gone") != std::string::npos;
    }));

    // the CRD's rules, with the field path
    check_refused(route, {
             {"fraction: {numerator: 1, denominator: 3}", "fraction: {numerator: 4, denominator: 3}",
              "spec.rules[0].filters[1].requestMirror.fraction: numerator must be less than or equal to denominator"},
             {"fraction: {numerator: 1, denominator: 3}", "percent: 10, fraction: {numerator: 1}",
              "spec.rules[0].filters[1].requestMirror: Only one of percent or fraction"},
             {"fraction: {numerator: 1, denominator: 3}", "percent: 101",
              "spec.rules[0].filters[1].requestMirror.percent"},
             {"backendRef: {name: svc, port: 8443}", "backendRef: {name: svc, port: 8443, weight: 2}",
              "spec.rules[0].filters[1].requestMirror.backendRef.weight: unknown field"}});
}

BOOST_AUTO_TEST_CASE(timeouts_bound_each_backend_wait)
{
    const std::string route = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: slow, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [slow.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /both}}]
    backendRefs: [{name: svc, port: 443}]
    timeouts: {request: 1m30s, backendRequest: 1500ms}
  - matches: [{path: {type: Exact, value: /off}}]
    backendRefs: [{name: svc, port: 443}]
    timeouts: {request: 0s}
)";
    // what it renders: testdata/mirrors-timeouts (golden)

    check_refused(route, {
             {"request: 1m30s", "request: 1s", "spec.rules[0].timeouts: backendRequest timeout cannot be longer"},
             {"request: 1m30s", "request: 90", "spec.rules[0].timeouts.request: not a duration"},
             {"request: 1m30s", "request: 1h1m1s1ms1h", "spec.rules[0].timeouts.request: not a duration"},
             {"request: 0s}", "request: 0s, idle: 1s}", "spec.rules[1].timeouts.idle: unknown field"}});

    // a rule field the CRD has and gateway2nginx does not render: the
    // route is not served without it, whichever route kind
    check_not_accepted(route, "HTTPRoute", "slow",
                       {{"    timeouts: {request: 0s}\n", "    sessionPersistence: {type: Cookie}\n",
                         "sessionPersistence is not rendered yet"}});
    const std::string grpc = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: sticky, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 443}]
    sessionPersistence: {type: Cookie}
)";
    Plan p = plan_of(base_manifests() + grpc);
    BOOST_TEST(status_of(p, "GRPCRoute", "sticky").refs.at(0).conditions.front().message
               == "sessionPersistence is not rendered yet");
}

BOOST_AUTO_TEST_SUITE_END()
