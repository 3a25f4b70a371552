// Who has a hostname or a port on an address Gateways share
// (resolve/claims.cc): the oldest listener that names it, else the oldest
// listener a route brings it to; never the oldest route. Properties over
// random creation orders and routes moved between parents.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>

#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

const std::string kClassAndService = R"(apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: shared}
spec:
  ports: [{name: http, port: 80}]
)";

std::string timestamp(int day) { return "\"2026-01-" + std::string(day < 10 ? "0" : "") + std::to_string(day) + "T00:00:00Z\""; }

struct GatewaySpec {
    int day;            // its creationTimestamp
    bool names_host;    // its listener names shop.example.com, else none
    std::string protocol = "HTTP";
};

std::string gateway_yaml(size_t i, const GatewaySpec &g)
{
    const std::string host = g.names_host ? ", hostname: shop.example.com" : "";
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw" + std::to_string(i)
           + ", namespace: team" + std::to_string(i) + ", creationTimestamp: " + timestamp(g.day)
           + "}\nspec:\n  gatewayClassName: ours\n  listeners:\n  - {name: l, port: 80, protocol: " + g.protocol + host
           + ", allowedRoutes: {namespaces: {from: All}}}\n";
}

// an HTTPRoute (or a TCPRoute) in namespace `shared`, made on DAY, for
// shop.example.com on Gateway gwPARENT
std::string route_yaml(size_t j, int day, size_t parent, bool tcp = false)
{
    return "---\napiVersion: gateway.networking.k8s.io/" + std::string(tcp ? "v1alpha2" : "v1") + "\nkind: "
           + (tcp ? "TCPRoute" : "HTTPRoute") + "\nmetadata: {name: r" + std::to_string(j)
           + ", namespace: shared, creationTimestamp: " + timestamp(day) + "}\nspec:\n  parentRefs: [{name: gw"
           + std::to_string(parent) + ", namespace: team" + std::to_string(parent) + "}]\n"
           + (tcp ? "" : "  hostnames: [shop.example.com]\n") + "  rules:\n  - backendRefs: [{name: svc, port: 80}]\n";
}

bool accepted(const ObjectStatus &st)
{
    return reasons(st).find("Accepted=True") != std::string::npos;
}

std::string listener_conditions(const ObjectStatus &gw)
{
    std::string out;
    for (const Condition &c : gw.listeners.at(0).conditions) {
        out += std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason) + " ";
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(claims)

// Random Gateways on one address, each listener naming shop.example.com
// or none, and routes for it on random Gateways, made on random days: the
// name is served by the oldest Gateway whose listener names it, else by
// the oldest whose listener a route brings it to; every other Gateway's
// routes for it are refused, a listener that names it too is Conflicted.
// Moving the routes between parents, or making them on other days, never
// gives the name to another Gateway than the rule says.
BOOST_AUTO_TEST_CASE(a_hostname_belongs_to_the_oldest_claim_by_listener)
{
    std::mt19937 random(51);
    for (int trial = 0; trial < 300; trial++) {
        BOOST_TEST_CONTEXT("trial " << trial)
        {
            const size_t gateways = 2 + random() % 4, routes = 1 + random() % 5;
            std::vector<int> days(28);
            std::iota(days.begin(), days.end(), 1);
            std::shuffle(days.begin(), days.end(), random);
            std::vector<GatewaySpec> gw;
            std::string yaml = kClassAndService;
            for (size_t i = 0; i < gateways; i++) {
                gw.push_back({days[i], random() % 2 == 0});
                yaml += gateway_yaml(i, gw.back());
            }
            std::vector<size_t> parent;
            std::string routes_yaml;
            for (size_t j = 0; j < routes; j++) {
                parent.push_back(random() % gateways);
                routes_yaml += route_yaml(j, days[gateways + j], parent.back());
            }
            // the rule: a Gateway whose listener names the host, oldest first;
            // else one with a route, oldest first
            auto oldest = [&](auto &&has) {
                std::optional<size_t> best;
                for (size_t i = 0; i < gateways; i++) {
                    if (has(i) && (!best || gw[i].day < gw[*best].day)) best = i;
                }
                return best;
            };
            std::optional<size_t> owner = oldest([&](size_t i) { return gw[i].names_host; });
            if (!owner) {
                owner = oldest([&](size_t i) { return std::find(parent.begin(), parent.end(), i) != parent.end(); });
            }
            Plan plan = plan_of(yaml + routes_yaml);
            for (size_t j = 0; j < routes; j++) {
                BOOST_TEST(accepted(status_of(plan, "HTTPRoute", "r" + std::to_string(j))) == (parent[j] == *owner),
                           "route r" << j << " on gw" << parent[j] << ", owner gw" << *owner);
            }
            for (size_t i = 0; i < gateways; i++) {
                const std::string conditions = listener_conditions(status_of(plan, "Gateway", "gw" + std::to_string(i)));
                const bool conflicted = gw[i].names_host && i != *owner;
                BOOST_TEST((conditions.find("Conflicted=True/HostnameConflict") != std::string::npos) == conflicted,
                           "gw" << i << ": " << conditions);
                BOOST_TEST(conditions.find("team") == std::string::npos, "names no other tenant: " << conditions);
            }
            // one server for the name, where the owner has a route for it
            const bool served = std::find(parent.begin(), parent.end(), *owner) != parent.end();
            BOOST_TEST(plan.servers.size() == (served ? 1u : 0u));

            // a tenant moves every route to another parent, made long ago
            std::string moved;
            for (size_t j = 0; j < routes; j++) {
                const size_t to = random() % gateways;
                moved += route_yaml(j, 1 + j % 2, to);
                parent[j] = to;
            }
            std::optional<size_t> moved_owner = oldest([&](size_t i) { return gw[i].names_host; });
            if (!moved_owner) {
                moved_owner = oldest([&](size_t i) { return std::find(parent.begin(), parent.end(), i) != parent.end(); });
            }
            Plan after = plan_of(yaml + moved);
            for (size_t j = 0; j < routes; j++) {
                BOOST_TEST(accepted(status_of(after, "HTTPRoute", "r" + std::to_string(j))) == (parent[j] == *moved_owner),
                           "moved route r" << j << " on gw" << parent[j] << ", owner gw" << *moved_owner);
            }
            // a listener that names the host keeps it, whatever the routes did
            if (owner && gw[*owner].names_host) BOOST_TEST(*moved_owner == *owner);
        }
    }
}

// The attack of issue 51: a route made long ago, attached to nothing;
// later a victim's Gateway serves shop.example.com; then the tenant makes
// a Gateway of their own with a listener for it and moves the old route
// there. The victim keeps the name; the tenant's listener is Conflicted.
BOOST_AUTO_TEST_CASE(an_old_route_moved_to_a_new_listener_takes_nothing)
{
    const std::string victim = gateway_yaml(0, {10, true}) + route_yaml(1, 11, 0);
    const std::string tenant = gateway_yaml(2, {20, true}) + route_yaml(0, 1, 2);
    Plan plan = plan_of(kClassAndService + victim + tenant);
    BOOST_TEST(accepted(status_of(plan, "HTTPRoute", "r1")));
    BOOST_TEST(!accepted(status_of(plan, "HTTPRoute", "r0")));
    BOOST_TEST(listener_conditions(status_of(plan, "Gateway", "gw2")).find("Conflicted=True/HostnameConflict")
               != std::string::npos);
    BOOST_TEST_REQUIRE(plan.servers.size() == 1u);
    BOOST_TEST(plan.servers[0].locations.back().source.find("shared/r1") == 0u);

    // the same with a listener of no hostname: the victim's names it
    const std::string catch_all = gateway_yaml(2, {20, false}) + route_yaml(0, 1, 2);
    Plan plan2 = plan_of(kClassAndService + victim + catch_all);
    BOOST_TEST(accepted(status_of(plan2, "HTTPRoute", "r1")));
    const ObjectStatus refused = status_of(plan2, "HTTPRoute", "r0");
    BOOST_TEST(reasons(refused).find("Accepted=False/NotAllowedByListeners") != std::string::npos);
    BOOST_TEST(refused.refs[0].conditions[0].message
               == "hostname \"shop.example.com\" on 0.0.0.0:80 is claimed by an older or more specific listener on this address");

    // and an older Gateway with no hostname cannot take what a newer one names
    const std::string old_catch_all = gateway_yaml(2, {5, false}) + route_yaml(0, 1, 2);
    Plan plan3 = plan_of(kClassAndService + victim + old_catch_all);
    BOOST_TEST(accepted(status_of(plan3, "HTTPRoute", "r1")));
    BOOST_TEST(!accepted(status_of(plan3, "HTTPRoute", "r0")));
}

// TCP and UDP listeners claim their whole port; a socket's protocol is
// the oldest claim's: a tenant's Gateway named to sort first, made later,
// takes neither
BOOST_AUTO_TEST_CASE(a_port_belongs_to_the_oldest_listener)
{
    GatewaySpec victim{10, false, "TCP"}, tenant{20, false, "TCP"};
    Plan plan = plan_of(kClassAndService + gateway_yaml(1, victim) + route_yaml(1, 11, 1, true) + gateway_yaml(0, tenant)
                        + route_yaml(0, 1, 0, true));
    BOOST_TEST(accepted(status_of(plan, "TCPRoute", "r1")));
    BOOST_TEST(!accepted(status_of(plan, "TCPRoute", "r0")));
    BOOST_TEST(listener_conditions(status_of(plan, "Gateway", "gw0"))
               == "Accepted=False/HostnameConflict Programmed=False/HostnameConflict Conflicted=True/HostnameConflict ");

    GatewaySpec http{10, true}, tcp{20, false, "TCP"};
    Plan protocols = plan_of(kClassAndService + gateway_yaml(1, http) + route_yaml(1, 11, 1) + gateway_yaml(0, tcp));
    BOOST_TEST(accepted(status_of(protocols, "HTTPRoute", "r1")));
    const std::string lost = listener_conditions(status_of(protocols, "Gateway", "gw0"));
    BOOST_TEST(lost.find("Conflicted=True/ProtocolConflict") != std::string::npos, lost);
    BOOST_TEST(status_of(protocols, "Gateway", "gw0").listeners.at(0).conditions.back().message
               == "port 80 is served as HTTP by an older listener on this address");
}

BOOST_AUTO_TEST_SUITE_END()
