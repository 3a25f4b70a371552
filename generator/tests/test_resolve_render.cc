// resolve (attachment, conflicts, references, conditions) and render.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "resolve/features.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"

#include <yaml-cpp/yaml.h>

using namespace g2n;
using namespace g2n_test;

namespace {

std::string base_manifests()
{
    std::string indented;
    std::istringstream lines(test_ca());
    for (std::string line; std::getline(lines, line);) indented += "    " + line + "\n";
    return R"(apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: theirs}
spec: {controllerName: example.com/other}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other, namespace: ns}
spec:
  gatewayClassName: theirs
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec:
  ports:
  - {name: https, port: 443}
  - {name: admin, port: 8443}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: svc-1
  namespace: ns
  labels: {kubernetes.io/service-name: svc}
ports: [{name: https, port: 9443}, {name: admin, port: 9444}]
endpoints:
- addresses: ["10.0.0.2", "10.0.0.1"]
- addresses: ["10.0.0.9"]
  conditions: {ready: false}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: ns}
data:
  ca.crt: |
)" + indented + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route, namespace: ns, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw}, {name: other}]
  hostnames: [app.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: Exact, value: /admin}}]
    backendRefs: [{name: svc, port: 8443}]
)";
}

std::string policy(const std::string &name, const std::string &section, const std::string &hostname,
                   const std::string &created = "", const std::string &ca_ref = "ca")
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata:\n  name: "
           + name + "\n  namespace: ns\n"
           + (created.empty() ? "" : "  creationTimestamp: \"" + created + "\"\n")
           + "spec:\n  targetRefs:\n  - {group: \"\", kind: Service, name: svc"
           + (section.empty() ? "" : ", sectionName: " + section) + "}\n  validation:\n"
           + "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: " + ca_ref + "}]\n"
           + "    hostname: " + hostname + "\n";
}

const Upstream &upstream_named(const Plan &plan, const std::string &suffix)
{
    for (const Upstream &u : plan.upstreams) {
        if (u.name.size() >= suffix.size() && u.name.compare(u.name.size() - suffix.size(), suffix.size(), suffix) == 0) return u;
    }
    BOOST_FAIL("no upstream " << suffix);
    return plan.upstreams.front();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(resolve_attachment)

BOOST_AUTO_TEST_CASE(only_our_gateways_and_ready_endpoints)
{
    Plan plan = plan_of(base_manifests());
    const ObjectStatus route = status_of(plan, "HTTPRoute", "route");
    BOOST_TEST_REQUIRE(route.refs.size() == 1u);  // "other" belongs to another controller
    BOOST_TEST(route.refs[0].name == "gw");
    BOOST_TEST(reasons(route) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    const Upstream u = upstream_named(plan, "_443");
    BOOST_TEST(u.servers == (std::vector<std::string>{"10.0.0.1:9443", "10.0.0.2:9443"}));
    BOOST_TEST(!u.tls());
    BOOST_TEST_REQUIRE(plan.servers.size() == 1u);
    BOOST_TEST(plan.servers[0].server_name == "app.example.com");
    BOOST_TEST(plan.servers[0].listen == "0.0.0.0:80");
    std::vector<std::string> matches;
    for (const Location &l : plan.servers[0].locations) matches.push_back(l.match.describe());
    BOOST_TEST(matches == (std::vector<std::string>{"/api/", "= /admin", "= /api"}));
}

BOOST_AUTO_TEST_CASE(endpoints_then_external_name_then_cluster_dns)
{
    std::string yaml = base_manifests() + R"(---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: ns}
spec:
  type: ExternalName
  externalName: api.example.net
  ports: [{name: https, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: plain, namespace: ns}
spec:
  ports: [{name: https, port: 8443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: more, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [more.example.com]
  rules:
  - matches: [{path: {value: /ext}}]
    backendRefs: [{name: ext, port: 443}]
  - matches: [{path: {value: /plain}}]
    backendRefs: [{name: plain, port: 8443}]
)";
    Plan plan = plan_of(yaml);
    BOOST_TEST(upstream_named(plan, "ns_ext_443").servers == std::vector<std::string>{"api.example.net:443"});
    BOOST_TEST(upstream_named(plan, "ns_plain_8443").servers.empty());
    // fail closed: without the upstream API nothing can ever fill it
    BOOST_TEST(render_http_conf(plan, Options{}).find("upstream backend_ns_plain_8443 {\n    # for \"Service ns/plain port 8443\"\n"
                                                      "    # unusable: \"no ready endpoints (with --resolver, the cluster DNS "
                                                      "name is used)\"\n    server 127.0.0.1:1 down;\n}\n")
               != std::string::npos);

    Manifests m;
    std::istringstream in(yaml);
    parse_stream(in, "test.yaml", &m);
    Options with_resolver;
    with_resolver.resolver = "10.96.0.10";
    Plan in_cluster = resolve(m, with_resolver);
    BOOST_TEST(upstream_named(in_cluster, "ns_plain_8443").servers
               == std::vector<std::string>{"plain.ns.svc.cluster.local:8443"});
    BOOST_TEST(render_nginx_conf(in_cluster, with_resolver).find("    resolver 10.96.0.10;\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(listener_certificate_in_another_namespace_needs_a_grant)
{
    std::string tls = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: secure, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - name: https
    port: 443
    protocol: HTTPS
    tls: {certificateRefs: [{name: cert, namespace: certs}]}
---
)" + g2n_test::tls_secret_yaml("cert", "certs");
    Plan denied = plan_of(base_manifests() + tls);
    const ObjectStatus gw = status_of(denied, "Gateway", "secure");
    // GatewaySecretMissingReferenceGrant: RefNotPermitted, whether the Secret exists or not
    BOOST_TEST(gw.listeners.at(0).conditions.back().reason == "RefNotPermitted");
    BOOST_TEST(gw.listeners.at(0).conditions.back().message
               == "Secret certs/cert is in another namespace and no ReferenceGrant allows it");
    std::string missing = tls;
    missing.replace(missing.find("{name: cert, namespace: certs}"), 30, "{name: none, namespace: certs}");
    BOOST_TEST(status_of(plan_of(base_manifests() + missing), "Gateway", "secure").listeners.at(0).conditions.back().reason
               == "RefNotPermitted");
    // a Secret in its own namespace that is not a certificate stays InvalidCertificateRef
    std::string own = tls;
    own.replace(own.find("{name: cert, namespace: certs}"), 30, "{name: nothing-here}");
    BOOST_TEST(status_of(plan_of(base_manifests() + own), "Gateway", "secure").listeners.at(0).conditions.back().reason
               == "InvalidCertificateRef");

    Plan allowed = plan_of(base_manifests() + tls + R"(---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: certs-for-gateways, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: ns}]
  to: [{group: "", kind: Secret, name: cert}]
)");
    BOOST_TEST(status_of(allowed, "Gateway", "secure").listeners.at(0).conditions.back().reason == "ResolvedRefs");
    bool key_private = false;
    for (const OutputFile &f : allowed.files) {
        // the key as OpenSSL encodes it, never the input's bytes
        if (f.path == "certs/listener_certs_cert.key") {
            key_private = f.mode == 0600 && f.content.find("-----BEGIN PRIVATE KEY-----") == 0;
        }
    }
    BOOST_TEST(key_private);
}

BOOST_AUTO_TEST_CASE(allowed_routes_select_namespaces_by_label)
{
    // a listener that takes routes from namespaces labelled team=a, with
    // three routes: in a labelled namespace, an unlabelled one, and one
    // given no Namespace object (only its name label, as the API server sets)
    auto yaml = [](const std::string &selector) {
        std::string out = R"(apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: v1
kind: Namespace
metadata: {name: a, labels: {team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: b, labels: {team: b}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: ours
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    allowedRoutes: {namespaces: {from: Selector, selector: )" + selector + R"(}}
)";
        for (const char *ns : {"a", "b", "c"}) {
            out += std::string("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ")
                   + ns + "}\nspec:\n  parentRefs: [{name: gw, namespace: infra}]\n  hostnames: [" + ns
                   + ".example.com]\n";
        }
        return out;
    };
    auto accepted = [](const Plan &plan) {
        std::string out;
        for (const ObjectStatus &st : plan.statuses) {
            if (st.kind == "HTTPRoute" && reasons(st).find("Accepted=True") != std::string::npos) out += st.meta.namespace_;
        }
        return out;
    };
    Plan by_label = plan_of(yaml("{matchLabels: {team: a}}"));
    BOOST_TEST(accepted(by_label) == "a");
    for (const ObjectStatus &st : by_label.statuses) {
        if (st.kind == "HTTPRoute" && st.meta.namespace_ == "b") {
            BOOST_TEST(reasons(st).find("Accepted=False/NotAllowedByListeners") != std::string::npos);
        }
    }
    BOOST_TEST(status_of(by_label, "Gateway", "gw").listeners.at(0).attached_routes == 1);
    BOOST_TEST(accepted(plan_of(yaml("{matchLabels: {kubernetes.io/metadata.name: c}}"))) == "c");
    BOOST_TEST(accepted(plan_of(yaml("{matchExpressions: [{key: team, operator: In, values: [a, b]}]}"))) == "ab");
    BOOST_TEST(accepted(plan_of(yaml("{matchExpressions: [{key: team, operator: NotIn, values: [a]}]}"))) == "bc");
    BOOST_TEST(accepted(plan_of(yaml("{matchExpressions: [{key: team, operator: Exists}]}"))) == "ab");
    BOOST_TEST(accepted(plan_of(yaml("{matchExpressions: [{key: team, operator: DoesNotExist}]}"))) == "c");
    BOOST_TEST(accepted(plan_of(yaml("{matchLabels: {team: a}, matchExpressions: [{key: team, operator: In, values: [b]}]}")))
               == "");
    BOOST_TEST(accepted(plan_of(yaml("{}"))) == "abc");
    // a selector that cannot be read is the Gateway's error, with where it is
    BOOST_TEST(error_of(yaml("{matchExpressions: [{key: team, operator: In}]}"))
               .find("spec.listeners[0].allowedRoutes.namespaces.selector.matchExpressions[0].values: must be non-empty")
               != std::string::npos);
    BOOST_TEST(error_of(yaml("{matchExpressions: [{key: team, operator: Near, values: [a]}]}"))
               .find("operator: expected In, NotIn, Exists or DoesNotExist") != std::string::npos);
    std::string no_selector = yaml("{}");
    no_selector.replace(no_selector.find(", selector: {}"), 14, "");
    BOOST_TEST(error_of(no_selector).find("namespaces.selector: required when from is Selector") != std::string::npos);
}

// "Type=Status/Reason " for each of a status's own conditions (a Gateway's
// or a GatewayClass's), or of listener `listener`'s.
std::string own_reasons(const ObjectStatus &st, int listener = -1)
{
    std::string out;
    for (const Condition &c : listener < 0 ? st.conditions : st.listeners.at(listener).conditions) {
        out += std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason) + " ";
    }
    return out;
}

BOOST_AUTO_TEST_CASE(gateway_class_and_gateway_status)
{
    // supportedFeatures: sorted by name and without repeats, as the API requires
    BOOST_TEST(std::adjacent_find(std::begin(kSupportedFeatures), std::end(kSupportedFeatures),
                                  [](std::string_view a, std::string_view b) { return a >= b; })
               == std::end(kSupportedFeatures));

    // GatewayClass: ours Accepted, with the features it supports; another
    // controller's class gets no status from us
    Plan plan = plan_of(base_manifests());
    BOOST_TEST(own_reasons(status_of(plan, "GatewayClass", "ours")) == "Accepted=True/Accepted ");
    for (const ObjectStatus &st : plan.statuses) BOOST_TEST(st.meta.name != "theirs");
    std::string text = render_status(plan, Options{});
    BOOST_TEST(text.find("kind: GatewayClass\nmetadata:\n  name: ours\n  generation: 1\nstatus:\n") != std::string::npos);
    BOOST_TEST(text.find("  supportedFeatures:\n    - name: BackendTLSPolicy\n    - name: BackendTLSPolicySANValidation\n    - name: GRPCRoute\n")
               != std::string::npos);

    // status.addresses: where it listens, unless that is every address
    BOOST_TEST(status_of(plan, "Gateway", "gw").addresses.empty());
    Options local;
    local.listen_address = "127.0.0.1";
    Plan listening = resolve(parse(base_manifests()), local);
    BOOST_TEST(status_of(listening, "Gateway", "gw").addresses == std::vector<std::string>{"127.0.0.1"});
    BOOST_TEST(render_status(listening, local).find("  addresses:\n    - type: IPAddress\n      value: 127.0.0.1\n")
               != std::string::npos);

    // a parametersRef we cannot honour: InvalidParameters, nothing served
    std::string class_params = base_manifests();
    const std::string class_spec = "spec: {controllerName: gateway2nginx.io/controller}";
    class_params.replace(class_params.find(class_spec), class_spec.size(),
                         "spec: {controllerName: gateway2nginx.io/controller, parametersRef: {group: x.io, kind: P, name: p}}");
    Plan bad_class = plan_of(class_params);
    BOOST_TEST(own_reasons(status_of(bad_class, "GatewayClass", "ours")) == "Accepted=False/InvalidParameters ");
    BOOST_TEST(bad_class.servers.empty());
    std::string gateway_params = base_manifests();
    gateway_params.replace(gateway_params.find("  gatewayClassName: ours\n"), 0,
                           "  infrastructure: {parametersRef: {group: invalid.io, kind: InvalidParameters, name: invalid}}\n");
    Plan bad_gateway = resolve(parse(gateway_params), local);
    BOOST_TEST(own_reasons(status_of(bad_gateway, "Gateway", "gw")) == "Accepted=False/InvalidParameters Programmed=False/Invalid ");
    BOOST_TEST(status_of(bad_gateway, "Gateway", "gw").addresses.empty());
    BOOST_TEST(bad_gateway.servers.empty());
    BOOST_TEST(reasons(status_of(bad_gateway, "HTTPRoute", "route")).find("Accepted=False/NotAllowedByListeners") != std::string::npos);

    // GatewayListenerUnsupportedProtocol: a Gateway is accepted while one
    // of its listeners is, and says that the others are not valid
    auto with_listeners = [](const std::string &listeners) {
        std::string yaml = base_manifests();
        const std::string http = "  - {name: http, port: 80, protocol: HTTP}\n";
        yaml.replace(yaml.find(http), http.size(), listeners);
        return plan_of(yaml);
    };
    Plan only_bad = with_listeners("  - {name: invalid, port: 1111, protocol: INVALID}\n");
    BOOST_TEST(own_reasons(status_of(only_bad, "Gateway", "gw")) == "Accepted=False/ListenersNotValid Programmed=False/Invalid ");
    BOOST_TEST(own_reasons(status_of(only_bad, "Gateway", "gw"), 0) == "Accepted=False/UnsupportedProtocol ");
    BOOST_TEST(status_of(only_bad, "Gateway", "gw").listeners.at(0).supported_kinds.empty());
    Plan mixed = with_listeners("  - {name: http, port: 80, protocol: HTTP}\n  - {name: invalid, port: 1111, protocol: INVALID}\n");
    BOOST_TEST(own_reasons(status_of(mixed, "Gateway", "gw")) == "Accepted=True/ListenersNotValid Programmed=True/Programmed ");
    BOOST_TEST(mixed.servers.size() == 1u);

    // GatewayWithAttachedRoutes: a listener whose certificate is not
    // there is accepted and counts its routes, but is not programmed,
    // and serves nothing
    Plan unresolved = with_listeners("  - {name: tls, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: does-not-exist}]}}\n");
    const ObjectStatus gw = status_of(unresolved, "Gateway", "gw");
    BOOST_TEST(own_reasons(gw, 0) == "Accepted=True/Accepted Programmed=False/Invalid ResolvedRefs=False/InvalidCertificateRef ");
    BOOST_TEST(gw.listeners.at(0).attached_routes == 1);
    BOOST_TEST(own_reasons(gw) == "Accepted=True/ListenersNotValid Programmed=False/Invalid ");
    BOOST_TEST(reasons(status_of(unresolved, "HTTPRoute", "route")).find("gw:Accepted=True/Accepted") != std::string::npos);
    BOOST_TEST(unresolved.servers.empty());
    // and its routes' references are still checked
    std::string missing_backend = base_manifests();
    missing_backend.replace(missing_backend.find("backendRefs: [{name: svc, port: 8443}]"), 38,
                            "backendRefs: [{name: nope, port: 1}]");
    const std::string http = "  - {name: http, port: 80, protocol: HTTP}\n";
    missing_backend.replace(missing_backend.find(http), http.size(),
                            "  - {name: tls, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: does-not-exist}]}}\n");
    BOOST_TEST(reasons(status_of(plan_of(missing_backend), "HTTPRoute", "route"))
               == "gw:Accepted=True/Accepted gw:ResolvedRefs=False/BackendNotFound ");
}

BOOST_AUTO_TEST_CASE(listeners_are_isolated_by_their_hostnames)
{
    // GEP-1713: a route on the catch-all listener that names *.example.com
    // does not serve *.example.com where a listener of that hostname
    // exists on the same port; bar.com stays its own
    std::string yaml = R"(apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: any, port: 80, protocol: HTTP}
  - {name: wild, port: 80, protocol: HTTP, hostname: "*.example.com"}
  - {name: exact, port: 80, protocol: HTTP, hostname: abc.example.com}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broad, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: any}]
  hostnames: [bar.com, "*.example.com", abc.example.com]
  rules: [{matches: [{path: {type: PathPrefix, value: /broad}}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wild, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: wild}]
  hostnames: ["*.example.com", abc.example.com]
  rules: [{matches: [{path: {type: PathPrefix, value: /wild}}]}]
)";
    Plan plan = plan_of(yaml);
    std::map<std::string, std::set<std::string>> sources;  // server_name -> routes served there
    for (const Server &server : plan.servers) {
        std::set<std::string> &served = sources[server.server_name];
        for (const Location &l : server.locations) served.insert(l.source.substr(0, l.source.find(' ')));
    }
    BOOST_TEST(sources["bar.com"] == std::set<std::string>{"ns/broad"});
    BOOST_TEST(sources["*.example.com"] == std::set<std::string>{"ns/wild"});
    // the exact listener has no route, yet owns its hostname: a server of
    // its own without locations (404), not the wildcard's
    BOOST_TEST_REQUIRE(sources.count("abc.example.com") == 1u);
    BOOST_TEST(sources["abc.example.com"].empty());
    BOOST_TEST(render_http_conf(plan, Options{}).find("server_name abc.example.com;\n    proxy_ssl_verify_insecure deny;\n    if ($gateway2nginx_loop = 1) {\n        return 508;\n    }\n    return 404;\n")
               != std::string::npos);
    // still attached, and counted where they attach
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "broad")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    BOOST_TEST(status_of(plan, "Gateway", "gw").listeners.at(0).attached_routes == 1);
}

BOOST_AUTO_TEST_CASE(v1alpha3_policies_are_read_too)
{
    std::string yaml = base_manifests() + policy("p", "https", "abc.example.com");
    yaml.replace(yaml.rfind("gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy"), 28,
                 "gateway.networking.k8s.io/v1alpha3");
    Plan plan = plan_of(yaml);
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "p").api_version == "gateway.networking.k8s.io/v1alpha3");
    BOOST_TEST(upstream_named(plan, "_443").tls());
}

BOOST_AUTO_TEST_CASE(gateway_addresses_choose_the_listen_address)
{
    auto gateway_reasons = [](const Plan &p) {
        std::string out;
        for (const Condition &c : status_of(p, "Gateway", "gw").conditions) {
            out += std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason) + " ";
        }
        return out;
    };
    auto with_addresses = [](const std::string &addresses) {
        std::string yaml = base_manifests();
        yaml.replace(yaml.find("  gatewayClassName: ours\n  listeners:\n  - {name: http, port: 80"), 0,
                     "  addresses: " + addresses + "\n");
        return yaml;
    };
    Plan plan = plan_of(with_addresses("[{type: IPAddress, value: \"127.0.0.2\"}]"));
    BOOST_TEST_REQUIRE(plan.servers.size() == 1u);
    BOOST_TEST(plan.servers[0].listen == "127.0.0.2:80");
    BOOST_TEST(status_of(plan, "Gateway", "gw").addresses == std::vector<std::string>{"127.0.0.2"});
    // GatewayAddressEmpty: an IPAddress without value is assigned one
    Plan assigned = plan_of(with_addresses("[{type: IPAddress}]"));
    BOOST_TEST(assigned.servers.at(0).listen == "0.0.0.0:80");
    BOOST_TEST(gateway_reasons(assigned) == "Accepted=True/Accepted Programmed=True/Programmed ");

    // what cannot be listened on is said, and nothing of the Gateway served
    for (const auto &[addresses, why] : std::vector<std::pair<std::string, std::string>>{
             {"[{type: IPAddress, value: \"127.0.0.2\"}, {type: Hostname, value: gw.example.com}]",
              "Accepted=False/UnsupportedAddress Programmed=False/Invalid "},
             {"[{type: example.com/custom, value: \"x y\"}]", "Accepted=False/UnsupportedAddress Programmed=False/Invalid "},
             {"[{value: \"192.0.2.1\"}]", "Accepted=True/Accepted Programmed=False/AddressNotUsable "},
             {"[{value: \"127.0.0.2\"}, {value: \"127.0.0.3\"}]", "Accepted=True/Accepted Programmed=False/AddressNotAssigned "}}) {
        Plan refused = plan_of(with_addresses(addresses));
        BOOST_TEST(gateway_reasons(refused) == why, addresses);
        BOOST_TEST(refused.servers.empty(), addresses);
        BOOST_TEST(status_of(refused, "Gateway", "gw").addresses.empty(), addresses);
    }
    BOOST_TEST(error_of(with_addresses("[{type: \"not a type\"}]")).find("spec.addresses[0].type: must be Hostname, IPAddress")
               != std::string::npos);
    BOOST_TEST(error_of(with_addresses("[{value: \"1.2.3.4\"}, {value: \"1.2.3.4\"}]")).find("IPAddress values must be unique")
               != std::string::npos);

    std::string v6 = base_manifests();
    v6.replace(v6.find("  gatewayClassName: ours\n  listeners:\n  - {name: http, port: 80"), 0,
               "  addresses: [{value: \"::1\"}]\n");
    BOOST_TEST(plan_of(v6).servers.at(0).listen == "[::1]:80");
}

BOOST_AUTO_TEST_CASE(missing_backend_is_a_500_and_a_condition)
{
    std::string yaml = base_manifests();
    yaml.replace(yaml.find("backendRefs: [{name: svc, port: 8443}]"), 38, "backendRefs: [{name: nope, port: 1}]");
    Plan plan = plan_of(yaml);
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "route")).find("ResolvedRefs=False/BackendNotFound")
               != std::string::npos);
    for (const Location &l : plan.servers[0].locations) {
        if (l.match.describe() == "= /admin") BOOST_TEST(l.return_code == 500);
    }
}

BOOST_AUTO_TEST_CASE(cross_namespace_backend_needs_a_reference_grant)
{
    std::string route = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cross, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [cross.example.com]
  rules:
  - backendRefs: [{name: remote, namespace: other, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: remote, namespace: other}
spec:
  ports: [{name: https, port: 443}]
)";
    Plan denied = plan_of(base_manifests() + route);
    BOOST_TEST(reasons(status_of(denied, "HTTPRoute", "cross")).find("ResolvedRefs=False/RefNotPermitted")
               != std::string::npos);
    Plan allowed = plan_of(base_manifests() + route + R"(---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: allow, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ns}]
  to: [{group: "", kind: Service}]
)");
    BOOST_TEST(reasons(status_of(allowed, "HTTPRoute", "cross")).find("ResolvedRefs=True") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(gateways_sharing_a_port_are_told_apart_by_hostname)
{
    std::string second = R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw2, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: late, namespace: ns, creationTimestamp: "2030-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw2}]
  hostnames: [app.example.com]
  rules:
  - backendRefs: [{name: svc, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: own-host, namespace: ns}
spec:
  parentRefs: [{name: gw2}]
  hostnames: [other.example.com]
  rules:
  - backendRefs: [{name: svc, port: 443}]
)";
    Plan plan = plan_of(base_manifests() + second);
    std::string late = reasons(status_of(plan, "HTTPRoute", "late"));
    BOOST_TEST(late.find("Accepted=False/NotAllowedByListeners") != std::string::npos, late);
    BOOST_TEST(status_of(plan, "HTTPRoute", "late").refs[0].conditions[0].message
               == "hostname \"app.example.com\" on 0.0.0.0:80 is served by Gateway ns/gw, whose route is older");
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "own-host")).find("Accepted=True") != std::string::npos);
    BOOST_TEST(plan.servers.size() == 2u);

    Options only_gw2;
    only_gw2.gateways = {"ns/gw2"};
    Manifests m;
    std::istringstream in(base_manifests() + second);
    parse_stream(in, "test.yaml", &m);
    Plan alone = resolve(m, only_gw2);
    BOOST_TEST(reasons(status_of(alone, "HTTPRoute", "late")).find("Accepted=True") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unrendered_features_are_not_served_wrongly)
{
    std::string yaml = base_manifests();
    yaml.replace(yaml.find("    backendRefs: [{name: svc, port: 8443}]"), 42,
                 "    filters: [{type: ExtensionRef, extensionRef: {group: example.com, kind: Thing, name: x}}]\n"
                 "    backendRefs: [{name: svc, port: 8443}]");
    Plan plan = plan_of(yaml);
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "route")).find("Accepted=False/UnsupportedValue")
               != std::string::npos);
    BOOST_TEST(plan.servers.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(resolve_policies)

BOOST_AUTO_TEST_CASE(policy_binds_to_its_port_with_sni_and_ca)
{
    Plan plan = plan_of(base_manifests() + policy("p", "https", "abc.example.com"));
    const Upstream u = upstream_named(plan, "_443");
    BOOST_TEST(u.tls());
    BOOST_TEST(u.unusable.empty());
    BOOST_TEST(u.policy->hostname == "abc.example.com");
    BOOST_TEST(u.policy->name == "ns/p");
    BOOST_TEST(u.policy->ca.find("certs/ca-") == 0u);
    BOOST_TEST(!upstream_named(plan, "_8443").tls());  // the other port has no policy
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "p"))
               == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
}

// at 100,000 routes a copy per upstream was 20 MB of the peak
BOOST_AUTO_TEST_CASE(a_policy_is_held_once_by_all_its_upstreams)
{
    Plan plan = plan_of(base_manifests() + policy("p", "", "abc.example.com"));
    const Upstream a = upstream_named(plan, "_443"), b = upstream_named(plan, "_8443");
    BOOST_TEST_REQUIRE(a.policy != nullptr);
    BOOST_TEST(a.policy == b.policy);
    BOOST_TEST(a.policy->hostname == "abc.example.com");
}

BOOST_AUTO_TEST_CASE(conflicts_go_to_the_oldest_then_by_name)
{
    Plan plan = plan_of(base_manifests() + policy("b-old", "", "old.example.com", "2024-01-01T00:00:00Z")
                        + policy("a-new", "", "new.example.com", "2025-01-01T00:00:00Z")
                        + policy("z-port", "https", "port.example.com"));
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "a-new")).find("Accepted=False/Conflicted")
               != std::string::npos);
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "b-old")).find("Accepted=True") != std::string::npos);
    // a port policy and a whole-Service policy do not conflict: the port one governs its port
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "z-port")).find("Accepted=True") != std::string::npos);
    BOOST_TEST(upstream_named(plan, "_443").policy->hostname == "port.example.com");
    BOOST_TEST(upstream_named(plan, "_8443").policy->hostname == "old.example.com");
}

BOOST_AUTO_TEST_CASE(invalid_references_fail_closed)
{
    Plan plan = plan_of(base_manifests() + policy("p", "https", "abc.example.com", "", "missing"));
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "p"))
               == "gw:Accepted=False/NoValidCACertificate gw:ResolvedRefs=False/InvalidCACertificateRef ");
    const Upstream u = upstream_named(plan, "_443");
    BOOST_TEST(u.tls());  // never plaintext
    BOOST_TEST(!u.unusable.empty());
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "p").refs[0].conditions[1].message
               == "ConfigMap ns/missing does not exist");
}

BOOST_AUTO_TEST_CASE(at_most_16_ancestors_and_no_gateway_left_in_plaintext)
{
    std::string yaml = base_manifests() + policy("p", "https", "abc.example.com");
    for (int i = 0; i < 20; i++) {
        std::string n = std::to_string(i);
        yaml += "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g" + n
                + ", namespace: ns}\nspec:\n  gatewayClassName: ours\n  listeners:\n  - {name: http, port: "
                + std::to_string(9000 + i) + ", protocol: HTTP}\n---\napiVersion: gateway.networking.k8s.io/v1\n"
                "kind: HTTPRoute\nmetadata: {name: r" + n + ", namespace: ns}\nspec:\n  parentRefs: [{name: g" + n
                + "}]\n  rules:\n  - backendRefs: [{name: svc, port: 443}]\n";
    }
    Plan plan = plan_of(yaml);
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "p").refs.size() == 16u);
    BOOST_TEST(plan.warnings.size() == 1u);
    // every one of the 21 Gateways reaches the Service through the one verifying upstream
    BOOST_TEST(plan.servers.size() == 21u);
    for (const Server &server : plan.servers) {
        for (const Location &l : server.locations) {
            if (l.match.describe() == "/") BOOST_TEST(l.backends.at(0).tls);
        }
    }
}

BOOST_AUTO_TEST_CASE(operator_gate_per_gateway)
{
    std::string yaml = base_manifests() + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: lab, namespace: ns}
spec:
  gatewayClassName: ours
  tls: {backend: {validation: {mode: AllowInsecureVerification}}}
  listeners:
  - {name: http, port: 8080, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: lab-route, namespace: ns}
spec:
  parentRefs: [{name: lab}]
  rules:
  - backendRefs: [{name: svc, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: dev, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: svc, sectionName: https}]
  validation:
    mode: InsecureSkipVerification
    hostname: abc.example.com
)";
    Plan plan = plan_of(yaml);
    std::string r = reasons(status_of(plan, "BackendTLSPolicy", "dev"));
    BOOST_TEST(r.find("gw:Accepted=False/InsecureVerificationNotAllowed") != std::string::npos, r);
    BOOST_TEST(r.find("lab:Accepted=True/Accepted") != std::string::npos, r);
    const ObjectStatus lab = status_of(plan, "Gateway", "lab");
    BOOST_TEST(lab.conditions.back().type == "InsecureBackendValidationMode");
    BOOST_TEST(lab.conditions.back().reason == "ConfigurationChanged");
    BOOST_TEST(status_of(plan, "Gateway", "gw").conditions.size() == 2u);

    const Upstream allowed = upstream_named(plan, "ns_svc_443");
    BOOST_TEST(allowed.unusable.empty());
    BOOST_TEST((allowed.policy->mode == gtls::Mode::Skip));
    const Upstream denied = upstream_named(plan, "ns_svc_443_insecure_denied");
    BOOST_TEST(denied.unusable.find("does not allow") != std::string::npos);

    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("\nproxy_ssl_verify_insecure allow;\n") != std::string::npos);
    BOOST_TEST(http.find("    server_name app.example.com;\n    proxy_ssl_verify_insecure deny;\n") != std::string::npos);
    BOOST_TEST(http.find("    proxy_ssl_verify_mode skip;\n    proxy_ssl_policy_name ns/dev;") != std::string::npos, http);
}

BOOST_AUTO_TEST_CASE(missing_target_port)
{
    Plan plan = plan_of(base_manifests() + policy("p", "nope", "abc.example.com"));
    // no route reaches a port that does not exist: the policy has no ancestor
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "p").refs.empty());
    BOOST_TEST(!upstream_named(plan, "_443").tls());
}

BOOST_AUTO_TEST_SUITE_END()

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

BOOST_AUTO_TEST_CASE(filters_render_as_nginx_directives)
{
    std::string yaml = base_manifests();
    const std::string api_rule = "  - matches: [{path: {type: PathPrefix, value: /api}}]\n    backendRefs: [{name: svc, port: 443}]";
    yaml.replace(yaml.find(api_rule), api_rule.size(),
                 "  - matches: [{path: {type: PathPrefix, value: /api}}]\n"
                 "    filters:\n"
                 "    - {type: URLRewrite, urlRewrite: {hostname: internal.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}\n"
                 "    - type: RequestHeaderModifier\n"
                 "      requestHeaderModifier: {set: [{name: X-Set, value: one}], add: [{name: X-Add, value: two}], remove: [X-Drop]}\n"
                 "    - type: ResponseHeaderModifier\n"
                 "      responseHeaderModifier: {set: [{name: X-Resp, value: three}], remove: [Server-Timing]}\n"
                 "    backendRefs: [{name: svc, port: 443}]\n"
                 "  - matches: [{path: {type: PathPrefix, value: /old}}]\n"
                 "    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301, path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}}]");
    std::string http = render_http_conf(plan_of(yaml));
    BOOST_TEST(http.find("    location /api/ {\n"
                         "        proxy_hide_header Server-Timing;\n"
                         "        proxy_hide_header X-Resp;\n"
                         "        add_header X-Resp three always;\n"
                         "        rewrite \"^/api$\" /v2 break;\n"
                         "        rewrite \"^/api(/.*)$\" /v2$1 break;\n"
                         "        proxy_set_header Host internal.example.com;\n"
                         "        proxy_set_header Via $gateway2nginx_via;\n"
                         "        proxy_set_header X-Set one;\n"
                         "        proxy_set_header X-Add $header_add_1;\n"
                         "        proxy_set_header X-Drop \"\";\n"
                         "        proxy_pass http://backend_ns_svc_443;\n") != std::string::npos, http);
    BOOST_TEST(http.find("map $http_x_add $header_add_1 {\n    \"\" two;\n    default $http_x_add,two;\n}")
               != std::string::npos);
    BOOST_TEST(http.find("    location /old/ {\n"
                         "        rewrite \"^/old$\" /new;\n"
                         "        rewrite \"^/old(/.*)$\" /new$1;\n"
                         "        return 301 https://$host$uri$is_args$args;\n") != std::string::npos, http);
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

// HTTP/2 for a GRPCRoute's listener: the listen parameter before nginx
// 1.25.1, the `http2` directive in each of the listen's servers after
// (which deprecates the parameter, with a warning at every start).
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
    BOOST_TEST(count(before, " http2") > 0u, before);
    BOOST_TEST(count(before, "http2 on;") == 0u, before);
    BOOST_TEST(count(after, "http2 on;") == count(before, " http2;") + count(before, " http2 default_server;"), after);
    BOOST_TEST(count(after, "http2 on;") > 0u, after);
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
    std::string http = render_http_conf(plan_of(base_manifests() + route));
    BOOST_TEST(http.find("    location = /pkg.Echo/Say {\n"
                         "        grpc_hide_header Server-Timing;\n"
                         "        grpc_hide_header X-Resp;\n"
                         "        add_header X-Resp three always;\n"
                         "        grpc_set_header Via $gateway2nginx_via;\n"
                         "        grpc_set_header X-Set one;\n"
                         "        grpc_set_header X-Add $header_add_1;\n"
                         "        grpc_set_header X-Drop \"\";\n"
                         "        grpc_pass grpc://backend_ns_svc_443;\n") != std::string::npos, http);
    BOOST_TEST(http.find("proxy_set_header X-") == std::string::npos, http);

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
                         "        rewrite \"^/single(/.*)$\" /new$1 break;\n") != std::string::npos, http);

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
    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("map $http_origin $cors_origin_4 {\n"
                         "    \"~(?i)^https://www\\\\.foo\\\\.com(:443)?$\" $http_origin;\n"
                         "    \"~(?i)^https://([A-Za-z0-9-]+\\\\.)+bar\\\\.com(:443)?$\" $http_origin;\n"
                         "    \"~(?i)^http://a-b\\\\.test:8080$\" $http_origin;\n"
                         "    \"~(?i)^https://c\\\\.test(:443)?$\" $http_origin;\n"
                         "    default \"\";\n}\n") != std::string::npos, http);
    BOOST_TEST(http.find("map $request_method $cors_preflight_origin_2 {\n    OPTIONS $cors_requested_1;\n") != std::string::npos, http);
    // the preflight before the rewrite (which would end the phase); "*"
    // exposes nothing to a request with credentials
    BOOST_TEST(http.find("    location /api/ {\n"
                         "        if ($cors_preflight_3 = denied) {\n            return 403;\n        }\n"
                         "        if ($cors_preflight_3 = allowed) {\n"
                         "            add_header Access-Control-Allow-Origin $http_origin always;\n"
                         "            add_header Access-Control-Allow-Credentials true always;\n"
                         "            add_header Vary Origin always;\n"
                         "            add_header Access-Control-Allow-Methods \"GET, PUT\" always;\n"
                         "            add_header Access-Control-Allow-Headers \"x-one, x-two\" always;\n"
                         "            add_header Access-Control-Max-Age 60 always;\n"
                         "            return 200;\n        }\n") != std::string::npos, http);
    BOOST_TEST(http.find("add_header Access-Control-Expose-Headers") == std::string::npos, http);
    BOOST_TEST(http.find("        add_header Access-Control-Allow-Origin $cors_origin_4 always;\n"
                         "        add_header Access-Control-Allow-Credentials $cors_allowed_5 always;\n"
                         "        add_header Vary Origin always;\n"
                         "        rewrite ") != std::string::npos, http);

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
    // GEP-1911: kubernetes.io/ws gets the WebSocket Upgrade, an unverified
    // wss is not served (ResolvedRefs=False/UnsupportedProtocol)
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
    Plan plan = plan_of(base_manifests() + route);
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "protocols")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    std::string http = render_http_conf(plan);
    // only a WebSocket Upgrade, whatever its case; Connection follows it
    BOOST_TEST(http.find("map $http_upgrade $websocket_1 {\n    \"~^[Ww][Ee][Bb][Ss][Oo][Cc][Kk][Ee][Tt]$\" websocket;\n"
                         "    default \"\";\n}\n") != std::string::npos, http);
    BOOST_TEST(http.find("map $websocket_1 $connection_2 {\n    websocket upgrade;\n    default close;\n}\n")
               != std::string::npos, http);
    BOOST_TEST(http.find("    location /ws/ {\n        proxy_set_header Host $http_host;\n"
                         "        proxy_set_header Via $gateway2nginx_via;\n"
                         "        proxy_set_header Upgrade $websocket_1;\n"
                         "        proxy_set_header Connection $connection_2;\n"
                         "        proxy_pass http://backend_ns_ws_80;\n") != std::string::npos, http);
    // beside another backend, the Upgrade follows the split's pick
    BOOST_TEST(http.find("$backend_split_3 $backend_websocket_4 {\n    \"~^http://backend_ns_ws_80$\" $websocket_1;\n"
                         "    default \"\";\n}\n") != std::string::npos, http);
    BOOST_TEST(http.find("        proxy_set_header Upgrade $backend_websocket_4;\n"
                         "        proxy_set_header Connection $connection_5;\n"
                         "        proxy_pass $backend_split_3;\n") != std::string::npos, http);
    // a header the filters name is theirs alone: one Host
    BOOST_TEST(http.find("    location /host/ {\n        proxy_set_header Via $gateway2nginx_via;\n        proxy_set_header Upgrade $websocket_1;\n"
                         "        proxy_set_header Connection $connection_2;\n"
                         "        proxy_set_header HOST h.example.com;\n") != std::string::npos, http);
    // a backend without kubernetes.io/ws gets none
    Plan plain = plan_of(base_manifests() + edited(route, {"{name: ws, port: 80}]\n  - matches: [{path: {value: /mixed}}]",
                                                          "{name: svc, port: 443}]\n  - matches: [{path: {value: /mixed}}]", ""}));
    BOOST_TEST(render_http_conf(plain).find("    location /ws/ {\n        proxy_pass http://backend_ns_svc_443;\n")
               != std::string::npos);

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
                         "        grpc_next_upstream_timeout 5s;\n"
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
    const std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("    location /codes/ {\n        proxy_next_upstream error timeout http_500 http_503;\n"
                         "        proxy_next_upstream_tries 5;\n        proxy_pass http://backend_ns_svc_443_tries5;\n")
               != std::string::npos, http);
    // five tries over two endpoints: each listed three times
    BOOST_TEST(http.find("upstream backend_ns_svc_443_tries5 {\n    # for \"Service ns/svc port 443\"\n"
                         "    server 10.0.0.1:9443 max_fails=0;\n    server 10.0.0.2:9443 max_fails=0;\n"
                         "    server 10.0.0.1:9443 max_fails=0;\n    server 10.0.0.2:9443 max_fails=0;\n"
                         "    server 10.0.0.1:9443 max_fails=0;\n    server 10.0.0.2:9443 max_fails=0;\n}\n")
               != std::string::npos, http);
    BOOST_TEST(http.find("    location /errors/ {\n        proxy_next_upstream error timeout;\n"
                         "        proxy_next_upstream_tries 2;\n        proxy_pass http://backend_ns_svc_443_tries2;\n")
               != std::string::npos, http);
    // the rule without retries keeps the plain upstream
    BOOST_TEST(http.find("upstream backend_ns_svc_443 {\n") != std::string::npos);

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

BOOST_AUTO_TEST_CASE(cleartext_listeners_take_h2c_clients_from_nginx_1_25_1)
{
    // nginx 1.25.1 tells HTTP/1.1 and HTTP/2 by prior knowledge apart on
    // one cleartext port: every cleartext server gets `http2 on`, and the
    // GatewayClass claims HTTPRouteBackendProtocolH2C; 1.22 neither
    Plan plan = plan_of(base_manifests());
    Options old_nginx, new_nginx;
    new_nginx.nginx_version = 1026003;
    BOOST_TEST(render_http_conf(plan, old_nginx).find("http2") == std::string::npos);
    const std::string http = render_http_conf(plan, new_nginx);
    BOOST_TEST(http.find("    listen 0.0.0.0:80 default_server;\n    http2 on;\n") != std::string::npos, http);
    BOOST_TEST(render_status(plan, old_nginx).find("HTTPRouteBackendProtocolH2C") == std::string::npos);
    BOOST_TEST(render_status(plan, new_nginx).find("    - name: HTTPRouteBackendProtocolH2C\n"
                                                   "    - name: HTTPRouteBackendProtocolWebSocket\n") != std::string::npos);
    // still sorted, without repeats
    const std::vector<std::string_view> features = supported_features(new_nginx.nginx_version);
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
    Plan plan = plan_of(base_manifests() + route);
    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("    location = /a {\n"
                         "        mirror \"/gateway2nginx|mirror|1\";\n"
                         "        mirror \"/gateway2nginx|mirror|2\";\n") != std::string::npos, http);
    // one location per target and share
    BOOST_TEST(http.find("    location = /b {\n        mirror \"/gateway2nginx|mirror|1\";\n") != std::string::npos, http);
    BOOST_TEST(http.find("    location = \"/gateway2nginx|mirror|1\" {\n"
                         "        internal;\n"
                         "        proxy_pass http://backend_ns_svc_443$request_uri;\n    }\n") != std::string::npos, http);
    // exactly a third: the module's counter, not a random pick
    BOOST_TEST(http.find("gateway_tls_share $mirror_share_1 1/3;\n") != std::string::npos, http);
    BOOST_TEST(http.find("split_clients") == std::string::npos, http);
    BOOST_TEST(http.find("    location = \"/gateway2nginx|mirror|2\" {\n"
                         "        internal;\n"
                         "        if ($mirror_share_1 = \"\") {\n            return 204;\n        }\n"
                         "        proxy_pass http://backend_ns_svc_8443$request_uri;\n") != std::string::npos, http);
    // a share is of one location's requests: /c counts its own
    BOOST_TEST(http.find("    location = /c {\n        mirror \"/gateway2nginx|mirror|3\";\n") != std::string::npos, http);
    BOOST_TEST(http.find("gateway_tls_share $mirror_share_2 1/3;\n") != std::string::npos, http);
    BOOST_TEST(http.find("gateway2nginx|mirror|4") == std::string::npos, http);

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
    std::string http = render_http_conf(plan_of(base_manifests() + route));
    BOOST_TEST(http.find("    location = /both {\n"
                         "        proxy_connect_timeout 1500ms;\n"
                         "        proxy_send_timeout 1500ms;\n"
                         "        proxy_read_timeout 1500ms;\n"
                         "        proxy_next_upstream_timeout 90s;\n") != std::string::npos, http);
    BOOST_TEST(http.find("    location = /off {\n"
                         "        proxy_connect_timeout 86400s;\n"
                         "        proxy_send_timeout 86400s;\n"
                         "        proxy_read_timeout 86400s;\n"
                         "        proxy_pass") != std::string::npos, http);

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

BOOST_AUTO_TEST_CASE(unusable_upstream_is_a_down_server)
{
    Plan plan = plan_of(base_manifests() + policy("p", "https", "abc.example.com", "", "missing"));
    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("    # unusable: \"BackendTLSPolicy ns/p cannot be honoured\"\n    server 127.0.0.1:1 down;")
               != std::string::npos);
    BOOST_TEST(http.find("proxy_pass https://backend_ns_svc_443;") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(weighted_rule_splits_over_upstreams)
{
    std::string yaml = base_manifests();
    yaml.replace(yaml.find("backendRefs: [{name: svc, port: 443}]"), 37,
                 "backendRefs: [{name: svc, port: 443, weight: 3}, {name: svc, port: 8443, weight: 1}, "
                 "{name: gone, port: 1, weight: 1}]");
    Plan plan = plan_of(yaml + policy("p", "https", "abc.example.com"));
    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("split_clients \"${request_id}\" $backend_split_1 {\n"
                         "    60.00% https://backend_ns_svc_443;\n"
                         "    20.00% http://backend_ns_svc_8443;\n"
                         "    * \"\";\n}") != std::string::npos, http);
    BOOST_TEST(http.find("if ($backend_split_1 = \"\") {\n            return 500;") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(status_yaml)

// status.yaml is written by hand: whatever a message or name holds, a YAML
// reader gets back exactly the text.
BOOST_AUTO_TEST_CASE(every_scalar_round_trips)
{
    const std::vector<std::string> tricky = {
        "plain words", "key: value", "- dash first", "quote \" inside", "back\\slash", "line\nbreak",
        "tab\there", "true", "No", "~", "null", "# comment", "trailing colon:", " leading space",
        "trailing space ", "ünïcödé ✓", "{braces}", "[list]", "a #b", "@at", "`tick`", "100", "0x1F",
        "1970-01-01T00:00:00Z", "bell\x07", "", "*star", "&anchor", "!tag", "%percent", "'single'",
        "spiffe://abc.example.com/test-identity", "a,b", "?q"};
    Plan plan;
    for (size_t i = 0; i < tricky.size(); i++) {
        ObjectStatus st;
        st.api_version = "gateway.networking.k8s.io/v1";
        st.kind = "HTTPRoute";
        st.meta.name = tricky[i];
        st.meta.namespace_ = "ns";
        st.meta.generation = static_cast<int64_t>(i);
        st.refs_key = "parents";
        ObjectStatus::RefStatus ref;
        ref.namespace_ = "ns";
        ref.name = tricky[i];
        ref.section_name = tricky[i];
        ref.conditions = {{"Accepted", "False", "Reason", tricky[i]}};
        st.refs.push_back(ref);
        plan.statuses.push_back(st);
    }
    std::string text = render_status(plan, Options{});
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    BOOST_TEST_REQUIRE(docs.size() == tricky.size());
    for (size_t i = 0; i < tricky.size(); i++) {
        BOOST_TEST(docs[i]["metadata"]["name"].as<std::string>("<missing>") == tricky[i]);
        BOOST_TEST(docs[i]["metadata"]["generation"].as<int>() == static_cast<int>(i));
        const YAML::Node parent = docs[i]["status"]["parents"][0];
        // an empty sectionName is left out, as Kubernetes omits it
        BOOST_TEST(parent["parentRef"]["sectionName"].as<std::string>("") == tricky[i]);
        BOOST_TEST(parent["conditions"][0]["message"].as<std::string>("<missing>") == tricky[i]);
        BOOST_TEST(parent["conditions"][0]["status"].as<std::string>() == "False");
        BOOST_TEST(parent["conditions"][0]["status"].Tag() == "!");  // quoted: a string, not a boolean
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(key_less_orders_as_the_keys_do)
{
    // '-' sorts before '/', so namespace-then-name would differ from the key
    const char *names[][2] = {{"a", "x"}, {"a-b", "x"}, {"a", "x-1"}, {"ab", ""}, {"a", ""}, {"", "a"},
                              {"a0", "z"}, {"a", "x"}, {"b", "a"}, {"a/b", "c"}};
    for (auto &l : names) {
        for (auto &r : names) {
            g2n::ObjectMeta a, b;
            a.namespace_ = l[0], a.name = l[1], b.namespace_ = r[0], b.name = r[1];
            BOOST_TEST(g2n::key_less(a, b) == (a.key() < b.key()), a.key() << " < " << b.key());
        }
    }
}

BOOST_AUTO_TEST_CASE(sort_by_position_is_a_stable_sort)
{
    // (key, input position): many equal keys, long permutation cycles
    for (unsigned seed : {1u, 7u, 42u}) {
        std::vector<std::pair<int, std::string>> items;
        unsigned x = seed;
        for (int i = 0; i < 500; i++) {
            x = x * 1103515245u + 12345u;
            items.emplace_back(static_cast<int>((x >> 16) % 37), "item number " + std::to_string(i));
        }
        auto by_key = [](const auto &a, const auto &b) { return a.first < b.first; };
        std::vector<std::pair<int, std::string>> expected = items;
        std::stable_sort(expected.begin(), expected.end(), by_key);
        g2n::sort_by_position(items, by_key);
        BOOST_TEST((items == expected), "seed " << seed);
    }
    std::vector<std::string> none;
    g2n::sort_by_position(none, std::less<std::string>());
    BOOST_TEST(none.empty());
}

BOOST_AUTO_TEST_CASE(http_conf_streams_even_without_servers)
{
    // a Gateway with TLS listeners only: no server{} in http.conf, and the
    // stream http.conf is written to must stay good
    g2n::Plan plan;
    std::ostringstream out;
    g2n::render_http_conf(out, plan, g2n::Options{});
    BOOST_TEST(out.good());
    BOOST_TEST(out.str() == g2n::render_http_conf(plan));
    BOOST_TEST(out.str().find("proxy_ssl_verify_insecure deny;") != std::string::npos);
}

// Gateway API's redirect port (HTTPRouteRedirectPortAndScheme): the filter's,
// else the scheme's well-known one when it names a scheme, else the
// listener's; never written where it is the scheme's own (http 80, https 443).
BOOST_AUTO_TEST_CASE(redirect_ports_follow_the_listener)
{
    std::string yaml = class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: http-8080, port: 8080, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {value: /nil-nil}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org}}]
  - matches: [{path: {value: /nil-80}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org, port: 80}}]
  - matches: [{path: {value: /nil-8080}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org, port: 8080}}]
  - matches: [{path: {value: /https-nil}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org, scheme: https}}]
  - matches: [{path: {value: /https-443}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org, scheme: https, port: 443}}]
  - matches: [{path: {value: /https-8443}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org, scheme: https, port: 8443}}]
  - matches: [{path: {value: /as-sent}}]
    filters: [{type: RequestRedirect, requestRedirect: {statusCode: 301}}]
)";
    Plan plan = plan_of(yaml);
    BOOST_TEST_REQUIRE(plan.servers.size() == 2u);
    // each server's block, by its listener
    std::map<int, std::string> by_port;
    for (const Server &s : plan.servers) {
        Plan one;
        one.servers.push_back(s);
        by_port[s.listener_port] = render_http_conf(one);
    }
    const std::map<std::string, std::pair<std::string, std::string>> expected = {
        {"/nil-nil/", {"$scheme://example.org$request_uri", "$scheme://example.org:8080$request_uri"}},
        {"/nil-80/", {"$scheme://example.org$request_uri", "$scheme://example.org$request_uri"}},
        {"/nil-8080/", {"$scheme://example.org:8080$request_uri", "$scheme://example.org:8080$request_uri"}},
        {"/https-nil/", {"https://example.org$request_uri", "https://example.org$request_uri"}},
        {"/https-443/", {"https://example.org$request_uri", "https://example.org$request_uri"}},
        {"/https-8443/", {"https://example.org:8443$request_uri", "https://example.org:8443$request_uri"}},
    };
    for (const auto &[path, targets] : expected) {
        BOOST_TEST(by_port[80].find("location " + path + " {\n        return 302 " + targets.first + ";")
                       != std::string::npos,
                   path << " on 80:\n" << by_port[80]);
        BOOST_TEST(by_port[8080].find("location " + path + " {\n        return 302 " + targets.second + ";")
                       != std::string::npos,
                   path << " on 8080");
    }
    // nothing named: the host and port the client used
    BOOST_TEST(by_port[8080].find("return 301 $scheme://$http_host$request_uri;") != std::string::npos);
}

// HTTPRouteHTTPSListener: with no listener for every hostname, an unknown
// SNI still completes a handshake, with the port's first certificate, and
// gets 404 (the module answers 421 where Host then names a server that
// verifies its clients: t/430).
BOOST_AUTO_TEST_CASE(an_https_port_without_a_catch_all_answers_404_over_tls)
{
    std::string yaml = class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: example.org, tls: {certificateRefs: [{name: cert}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{path: {value: /}}]}]
)";
    std::string http = render_http_conf(plan_of(yaml));
    BOOST_TEST(http.find("server {\n    listen 0.0.0.0:443 ssl default_server;\n    server_name \"\";\n"
                         "    ssl_certificate certs/listener_ns_cert.crt;\n"
                         "    ssl_certificate_key certs/listener_ns_cert.key;\n"
                         "    if ($sni_listener_1 != \"\") {\n        return 421;\n    }\n    if ($gateway2nginx_loop = 1) {\n        return 508;\n    }\n    return 404;\n}")
                   != std::string::npos,
               http);
    BOOST_TEST(http.find("ssl_reject_handshake") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_request_for_another_listener_than_its_sni_is_misdirected)
{
    // the server chosen by Host must serve the listener the SNI chose: the
    // map of the port's server names says which listener that is, as
    // nginx's server_name would choose (exact, then wildcard, else default)
    std::string yaml = class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert}]}}
  - {name: named, port: 443, protocol: HTTPS, hostname: second.example.org, tls: {certificateRefs: [{name: cert}]}}
  - {name: wild, port: 443, protocol: HTTPS, hostname: "*.wild.org", tls: {certificateRefs: [{name: cert}]}}
  - {name: plain, port: 80, protocol: HTTP}
  - {name: lone, port: 8443, protocol: HTTPS, tls: {certificateRefs: [{name: cert}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [example.org, second.example.org, a.wild.org]
  rules: [{matches: [{path: {value: /}}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: w, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: wild}]
  rules: [{matches: [{path: {value: /}}]}]
)";
    std::string http = render_http_conf(plan_of(yaml));
    auto server = [&](const std::string &listen, const std::string &name) {
        size_t at = http.find("server {\n    listen 0.0.0.0:" + listen);
        for (; at != std::string::npos; at = http.find("server {\n    listen 0.0.0.0:" + listen, at + 1)) {
            size_t end = http.find("\n}\n", at);
            std::string text = http.substr(at, end - at);
            if (text.find("server_name " + name + ";") != std::string::npos) return text;
        }
        BOOST_FAIL("no server " << name << " on " << listen << "\n" << http);
        return std::string();
    };
    const std::string check = "{\n        return 421;\n    }";
    BOOST_TEST(http.find("map $ssl_server_name $sni_listener_1 {\n    hostnames;\n    *.wild.org *.wild.org;\n"
                         "    a.wild.org *.wild.org;\n    example.org \"\";\n"
                         "    second.example.org second.example.org;\n    default \"\";\n}\n")
                   != std::string::npos,
               http);
    BOOST_TEST(server("443", "example.org").find("if ($sni_listener_1 != \"\") " + check) != std::string::npos);
    BOOST_TEST(server("443", "second.example.org").find("if ($sni_listener_1 != second.example.org) " + check)
               != std::string::npos);
    // a.wild.org of the route on every listener is the wildcard listener's
    BOOST_TEST(server("443", "a.wild.org").find("if ($sni_listener_1 != *.wild.org) " + check) != std::string::npos);
    BOOST_TEST(server("443", "*.wild.org").find("if ($sni_listener_1 != *.wild.org) " + check) != std::string::npos);
    // the default server answers 404 only to the catch-all listener's SNI
    BOOST_TEST(server("443", "\"\"").find("if ($sni_listener_1 != \"\") " + check) != std::string::npos);
    // a cleartext port has no SNI; a TLS port with one listener nothing to tell apart
    BOOST_TEST(server("80", "example.org").find("421") == std::string::npos);
    BOOST_TEST(server("8443", "example.org").find("421") == std::string::npos);
    BOOST_TEST(http.find("$sni_listener_2") == std::string::npos);
}
