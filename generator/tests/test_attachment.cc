// resolve: route attachment to listeners, hostnames, conflicts, references
// and the conditions that say so.
#include <boost/test/unit_test.hpp>

#include <string>

#include "resolve_render_fixtures.h"

using namespace g2n;
using namespace g2n_test;

namespace {

// A Gateway's status.addresses, as TYPE=VALUE words
std::string addresses_of(const Plan &plan)
{
    std::string out;
    for (const ObjectStatus::Address &a : status_of(plan, "Gateway", "gw").addresses) {
        out += (out.empty() ? "" : " ") + a.type + "=" + a.value;
    }
    return out;
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
    BOOST_TEST(matches == (std::vector<std::string>{"/", "/api/", "= /admin", "= /api"}));
    // what no rule matches: a 404 of its own, not nginx's static handler
    BOOST_TEST(plan.servers[0].locations[0].return_code == 404);
    BOOST_TEST(plan.servers[0].locations[0].backends.empty());
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
        for (const ObjectStatus &st : *plan.statuses) {
            if (st.kind == "HTTPRoute" && reasons(st).find("Accepted=True") != std::string::npos) out += st.meta.namespace_;
        }
        return out;
    };
    Plan by_label = plan_of(yaml("{matchLabels: {team: a}}"));
    BOOST_TEST(accepted(by_label) == "a");
    for (const ObjectStatus &st : *by_label.statuses) {
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
    for (const ObjectStatus &st : *plan.statuses) BOOST_TEST(st.meta.name != "theirs");
    std::string text = render_status(plan, Options{});
    BOOST_TEST(text.find("kind: GatewayClass\nmetadata:\n  name: ours\n  generation: 1\nstatus:\n") != std::string::npos);
    BOOST_TEST(text.find("  supportedFeatures:\n    - name: BackendTLSPolicy\n    - name: BackendTLSPolicySANValidation\n    - name: GRPCRoute\n")
               != std::string::npos);

    // status.addresses: where it listens, unless that is every address
    BOOST_TEST(status_of(plan, "Gateway", "gw").addresses.empty());
    Options local;
    local.listen_address = "127.0.0.1";
    Plan listening = resolve(parse(base_manifests()), local);
    BOOST_TEST(addresses_of(listening) == "IPAddress=127.0.0.1");
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
        for (const Location &l : server.locations) {
            if (l.return_code != 404) served.insert(l.source.substr(0, l.source.find(' ')));  // not what no rule matches
        }
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
    BOOST_TEST(addresses_of(plan) == "IPAddress=127.0.0.2");
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

    // listening on every address, it is reached where the operator says
    Options behind_a_balancer;
    behind_a_balancer.status_addresses = {"203.0.113.7", "2001:db8::1"};
    BOOST_TEST(addresses_of(resolve(parse(base_manifests()), behind_a_balancer))
               == "IPAddress=203.0.113.7 IPAddress=2001:db8::1");
    BOOST_TEST(status_of(plan_of(base_manifests()), "Gateway", "gw").addresses.empty());

    // or where the load balancer in front of a Service is reached, as its
    // controller wrote in the Service's status
    Options behind_a_service;
    behind_a_service.status_address_service = "gateway-system/gateway";
    auto front = [](const std::string &ingress) {
        return "---\napiVersion: v1\nkind: Service\nmetadata: {name: gateway, namespace: gateway-system}\n"
               "spec: {type: LoadBalancer, ports: [{name: http, port: 80}]}\n"
               "status: {loadBalancer: {ingress: " + ingress + "}}\n";
    };
    const Plan fronted = resolve(parse(base_manifests() + front("[{ip: 203.0.113.9}, {hostname: lb.example.com}]")),
                                 behind_a_service);
    BOOST_TEST(addresses_of(fronted) == "IPAddress=203.0.113.9 Hostname=lb.example.com");
    BOOST_TEST(render_status(fronted, behind_a_service).find("  addresses:\n    - type: IPAddress\n      value: 203.0.113.9\n"
                                                          "    - type: Hostname\n      value: lb.example.com\n")
               != std::string::npos);
    BOOST_TEST(addresses_of(resolve(parse(base_manifests() + front("[]")), behind_a_service)) == "");  // none yet
    BOOST_TEST(addresses_of(resolve(parse(base_manifests()), behind_a_service)) == "");  // no such Service
    behind_a_service.status_addresses = {"203.0.113.7"};
    BOOST_TEST(addresses_of(resolve(parse(base_manifests() + front("[{ip: 203.0.113.9}]")), behind_a_service))
               == "IPAddress=203.0.113.7");  // the operator's word first
    BOOST_TEST(error_of(base_manifests() + front("[{ip: \"203.0.113\"}]")).find("status.loadBalancer.ingress[0].ip: not an IP address")
               != std::string::npos);
    BOOST_TEST(error_of(base_manifests() + front("[{hostname: \"lb example\"}]")).find("status.loadBalancer.ingress[0].hostname: must be a DNS name")
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
               == "hostname \"app.example.com\" on 0.0.0.0:80 is claimed by an older or more specific listener on this address");
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
