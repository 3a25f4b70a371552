// TCPRoute and UDPRoute: parse (v1, v1alpha2), TCP and UDP listeners
// (route kinds, the oldest route of a listener, weights, invalid backends,
// one port number as two sockets), a BackendTLSPolicy with no say, the
// upstream API, and stream.conf.
#include <boost/test/unit_test.hpp>

#include "apply/upstream_api.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

const std::string kSetup = class_and_certificate() + R"(apiVersion: v1
kind: Service
metadata: {name: db, namespace: ns}
spec:
  ports: [{name: sql, port: 5432}, {name: other, port: 5433}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-1, namespace: ns, labels: {kubernetes.io/service-name: db}}
ports: [{name: sql, port: 15432}, {name: other, port: 15433}]
endpoints: [{addresses: ["10.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: db-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: db}]
  validation:
    wellKnownCACertificates: System
    hostname: db.internal
)";

std::string gateway(const std::string &listeners)
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\n"
           "spec:\n  gatewayClassName: ours\n  listeners:\n" + listeners;
}

const char *const kTcp = "  - {name: sql, port: 5432, protocol: TCP}\n";
const char *const kHttp = "  - {name: web, port: 80, protocol: HTTP}\n";

std::string tcp_route(const std::string &name, const std::string &backends, const std::string &version = "v1",
                      const std::string &more_rules = "")
{
    return "---\napiVersion: gateway.networking.k8s.io/" + version + "\nkind: TCPRoute\nmetadata: {name: " + name
           + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: " + backends + "\n"
           + more_rules;
}

std::string listener(const ObjectStatus &gw, const std::string &name)
{
    std::string out;
    for (const auto &l : gw.listeners) {
        if (l.name != name) continue;
        out += "attached=" + std::to_string(l.attached_routes) + " kinds=";
        for (const std::string &k : l.supported_kinds) out += k + ",";
        for (const Condition &c : l.conditions) out += " " + std::string(c.type) + "=" + std::string(c.status);
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tcp_routes)

BOOST_AUTO_TEST_CASE(versions_and_crd_rules)
{
    Manifests m = parse(tcp_route("a", "[{name: db, port: 5432}]", "v1alpha2", "  - backendRefs: [{name: db, port: 5433}]\n"));
    BOOST_TEST_REQUIRE(m.stream_routes.size() == 1u);
    BOOST_TEST((m.stream_routes[0].kind == RouteKind::TCPRoute));
    BOOST_TEST(m.stream_routes[0].rules.size() == 2u);
    BOOST_TEST(parse(tcp_route("a", "[{name: db, port: 5432}]")).stream_routes.size() == 1u);

    BOOST_TEST(error_of(tcp_route("a", "[{name: db, port: 5432}]", "v1", "  - backendRefs: [{name: db, port: 5433}]\n"))
                   .find("expected exactly 1 rule") != std::string::npos);
    BOOST_TEST(error_of(tcp_route("a", "[]")).find("expected 1 to 16 backendRefs") != std::string::npos);
    BOOST_TEST(error_of(tcp_route("a", "[{name: db}]")).find("Must have port for Service reference") != std::string::npos);
    BOOST_TEST(error_of(tcp_route("a", "[{name: db, port: 5432}]", "v1alpha3")).find("TCPRoute is read as v1 or v1alpha2")
               != std::string::npos);
    // no hostnames: a TCP connection has none
    std::string with_hostnames = tcp_route("a", "[{name: db, port: 5432}]");
    with_hostnames.replace(with_hostnames.find("  rules:"), 0, "  hostnames: [a.example.com]\n");
    BOOST_TEST(error_of(with_hostnames).find("spec.hostnames") != std::string::npos, error_of(with_hostnames));
}

BOOST_AUTO_TEST_CASE(a_tcp_listener_forwards_every_connection_to_its_route)
{
    const Plan plan = plan_of(kSetup + gateway(kTcp) + tcp_route("db", "[{name: db, port: 5432}]"));
    BOOST_TEST(reasons(status_of(plan, "TCPRoute", "db")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    BOOST_TEST(listener(status_of(plan, "Gateway", "gw"), "sql")
               == "attached=1 kinds=TCPRoute, Accepted=True Programmed=True ResolvedRefs=True");
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u);
    BOOST_TEST((plan.stream_servers[0].protocol == StreamProtocol::TCP));
    BOOST_TEST_REQUIRE(plan.stream_upstreams.size() == 1u);
    // plain TCP: the policy has nothing to act on, and no ancestor
    BOOST_TEST(!plan.stream_upstreams[0].tls());
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "db-tls").refs.empty());
    const std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("# TCPRoute ns/db\nserver {\n    listen 0.0.0.0:5432;\n"
                         "    proxy_pass backend_ns_db_5432_passthrough;\n}\n")
                   != std::string::npos,
               conf);
    BOOST_TEST(conf.find("ssl_preread") == std::string::npos);
    BOOST_TEST(conf.find("proxy_ssl on") == std::string::npos);
    BOOST_TEST(conf.find("server 10.0.0.1:15432;") != std::string::npos, conf);
    BOOST_TEST(render_stream_conf(plan, Options()) == conf);  // deterministic
}

BOOST_AUTO_TEST_CASE(the_oldest_route_of_a_listener_has_it_and_both_are_accepted)
{
    std::string newer = tcp_route("newer", "[{name: db, port: 5433}]");
    newer.replace(newer.find("namespace: ns}"), 14, "namespace: ns, creationTimestamp: \"2026-01-02T00:00:00Z\"}");
    std::string older = tcp_route("older", "[{name: db, port: 5432}]");
    older.replace(older.find("namespace: ns}"), 14, "namespace: ns, creationTimestamp: \"2026-01-01T00:00:00Z\"}");
    Manifests m = parse(kSetup + gateway(kTcp) + newer + older);
    m.server_timestamps = true;
    const Plan plan = resolve(m, Options());
    for (const char *route : {"older", "newer"}) {
        BOOST_TEST(reasons(status_of(plan, "TCPRoute", route)) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ",
                   route);
    }
    BOOST_TEST(listener(status_of(plan, "Gateway", "gw"), "sql").rfind("attached=2 ", 0) == 0u);
    const std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("# TCPRoute ns/older\nserver {\n    listen 0.0.0.0:5432;\n"
                         "    proxy_pass backend_ns_db_5432_passthrough;\n}") != std::string::npos,
               conf);
    BOOST_TEST(conf.find("ns/newer") == std::string::npos, conf);
    BOOST_TEST((std::find(plan.warnings.begin(), plan.warnings.end(),
                          "TCPRoute ns/newer: TCP listener 0.0.0.0:5432 is served by the older TCPRoute ns/older")
                != plan.warnings.end()));
}

BOOST_AUTO_TEST_CASE(route_kinds_follow_the_listener_protocol)
{
    std::string to_web = tcp_route("db", "[{name: db, port: 5432}]");
    to_web.replace(to_web.find("[{name: gw}]"), 12, "[{name: gw, sectionName: web}]");
    const Plan plan = plan_of(kSetup + gateway(std::string(kTcp) + kHttp) + to_web
                              + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: web, "
                                "namespace: ns}\nspec:\n  parentRefs: [{name: gw, sectionName: sql}]\n"
                                "  rules: [{backendRefs: [{name: db, port: 5432}]}]\n");
    BOOST_TEST(reasons(status_of(plan, "TCPRoute", "db")).find("gw:Accepted=False/NotAllowedByListeners") == 0u,
               reasons(status_of(plan, "TCPRoute", "db")));
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "web")).find("gw:Accepted=False/NotAllowedByListeners") == 0u,
               reasons(status_of(plan, "HTTPRoute", "web")));
    BOOST_TEST(plan.stream_servers.empty());
    // a TCP listener's allowedRoutes may not name an HTTP kind
    const Plan kinds = plan_of(kSetup + gateway("  - {name: sql, port: 5432, protocol: TCP, allowedRoutes: {kinds: "
                                                "[{kind: TCPRoute}, {kind: HTTPRoute}]}}\n"));
    BOOST_TEST(listener(status_of(kinds, "Gateway", "gw"), "sql")
               == "attached=0 kinds=TCPRoute, Accepted=True Programmed=True ResolvedRefs=False");
}

BOOST_AUTO_TEST_CASE(weights_and_invalid_backends)
{
    const Plan plan = plan_of(kSetup + gateway(kTcp)
                              + tcp_route("db", "[{name: db, port: 5432, weight: 3}, {name: db, port: 5433, weight: 1}, "
                                                "{name: gone, port: 1, weight: 1}, {name: db, port: 5433, weight: 0}]"));
    BOOST_TEST(reasons(status_of(plan, "TCPRoute", "db")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=False/BackendNotFound ");
    const std::string conf = render_stream_conf(plan, Options());
    // an invalid backend's share is refused, a weight of 0 gets none
    BOOST_TEST(conf.find("split_clients \"${remote_addr}${remote_port}${msec}\" $tls_split_1 {\n"
                         "    60.00% backend_ns_db_5432_passthrough;\n    20.00% backend_ns_db_5433_passthrough;\n"
                         "    * tls_route_refused;\n}")
                   != std::string::npos,
               conf);
    BOOST_TEST(conf.find("    listen 0.0.0.0:5432;\n    proxy_pass $tls_split_1;\n") != std::string::npos, conf);

    const Plan none = plan_of(kSetup + gateway(kTcp) + tcp_route("db", "[{name: gone, port: 1}]"));
    BOOST_TEST(render_stream_conf(none, Options()).find("    listen 0.0.0.0:5432;\n    proxy_pass tls_route_refused;\n")
               != std::string::npos);
}

BOOST_AUTO_TEST_CASE(tcp_route_endpoints_are_replaceable_through_the_api)
{
    Options api;
    api.upstream_api = "127.0.0.1:9114";
    const Plan plan = plan_of(kSetup + gateway(kTcp) + tcp_route("db", "[{name: db, port: 5432}]"));
    BOOST_TEST_REQUIRE(plan.stream_upstreams.size() == 1u);
    BOOST_TEST(stream_api_replaceable(plan.stream_upstreams[0]));
    BOOST_TEST(api_content(plan, api).stream_servers.count("backend_ns_db_5432_passthrough") == 1u);
}

std::string udp_route(const std::string &name, const std::string &section, const std::string &backends)
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: UDPRoute\nmetadata: {name: " + name
           + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw, sectionName: " + section + "}]\n  rules:\n"
           + "  - backendRefs: " + backends + "\n";
}

const char *const kUdp = "  - {name: dns, port: 5432, protocol: UDP}\n";

BOOST_AUTO_TEST_CASE(udp_route_versions)
{
    Manifests m = parse(udp_route("a", "dns", "[{name: db, port: 5432}]"));
    BOOST_TEST_REQUIRE(m.stream_routes.size() == 1u);
    BOOST_TEST((m.stream_routes[0].kind == RouteKind::UDPRoute));
    std::string alpha = udp_route("a", "dns", "[{name: db, port: 5432}]");
    alpha.replace(alpha.find("/v1\n"), 4, "/v1alpha2\n");
    BOOST_TEST(parse(alpha).stream_routes.size() == 1u);
    std::string beta = alpha;
    beta.replace(beta.find("/v1alpha2\n"), 10, "/v1beta1\n");
    BOOST_TEST(error_of(beta).find("UDPRoute is read as v1 or v1alpha2") != std::string::npos, error_of(beta));
    BOOST_TEST(error_of(udp_route("a", "dns", "[]")).find("expected 1 to 16 backendRefs") != std::string::npos);
}

// One port number, TCP and UDP: two sockets, no conflict; each listener
// carries its own kind of route.
BOOST_AUTO_TEST_CASE(a_udp_listener_forwards_datagrams_beside_tcp_on_the_same_port)
{
    const Plan plan = plan_of(kSetup + gateway(std::string(kTcp) + kUdp) + tcp_route("db", "[{name: db, port: 5432}]")
                              + udp_route("dns", "dns", "[{name: db, port: 5433}]")
                              + udp_route("wrong", "sql", "[{name: db, port: 5433}]"));
    BOOST_TEST(reasons(status_of(plan, "UDPRoute", "dns")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    BOOST_TEST(reasons(status_of(plan, "UDPRoute", "wrong")).find("gw:Accepted=False/NotAllowedByListeners") == 0u);
    BOOST_TEST(listener(status_of(plan, "Gateway", "gw"), "dns")
               == "attached=1 kinds=UDPRoute, Accepted=True Programmed=True ResolvedRefs=True");
    BOOST_TEST(listener(status_of(plan, "Gateway", "gw"), "sql").rfind("attached=1 kinds=TCPRoute, Accepted=True Programmed=True", 0)
               == 0u);
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 2u);
    const std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("# UDPRoute ns/dns\nserver {\n    listen 0.0.0.0:5432 udp;\n"
                         "    proxy_pass backend_ns_db_5433_passthrough;\n    proxy_timeout 60s;\n}\n")
                   != std::string::npos,
               conf);
    BOOST_TEST(conf.find("# TCPRoute ns/db\nserver {\n    listen 0.0.0.0:5432;\n") != std::string::npos, conf);
    // the older UDPRoute of a listener has it
    const Plan two = plan_of(kSetup + gateway(kUdp) + udp_route("a", "dns", "[{name: db, port: 5432}]")
                             + udp_route("b", "dns", "[{name: db, port: 5433}]"));
    BOOST_TEST(listener(status_of(two, "Gateway", "gw"), "dns").rfind("attached=2 ", 0) == 0u);
    BOOST_TEST((std::find(two.warnings.begin(), two.warnings.end(),
                          "UDPRoute ns/b: UDP listener 0.0.0.0:5432 is served by the older UDPRoute ns/a")
                != two.warnings.end()));
}

BOOST_AUTO_TEST_SUITE_END()
