// ListenerSets (GEP-1713): parse, the Gateway's allowedListeners, routes
// attached to a ListenerSet or to its Gateway, conflicts in precedence
// order, ReferenceGrants from a ListenerSet, their status and the servers
// their listeners make.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <regex>

#include "apply/isolate.h"
#include "cli.h"
#include "parse/parse.h"
#include "resolve/endpoints.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

const std::string kSetup = class_and_certificate() + R"(apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Namespace
metadata: {name: team, labels: {listeners: allowed}}
)";

std::string gateway(const std::string &allowed, const std::string &listeners = "  - {name: gw-web, port: 80, protocol: HTTP, hostname: gw.example.com, allowedRoutes: {namespaces: {from: All}}}\n")
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\n"
           "spec:\n  gatewayClassName: ours\n"
           + (allowed.empty() ? "" : "  allowedListeners: {namespaces: " + allowed + "}\n") + "  listeners:\n" + listeners;
}

std::string listener_set(const std::string &name, const std::string &ns, const std::string &listeners,
                         const std::string &created = "")
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: " + name
           + ", namespace: " + ns + (created.empty() ? "" : ", creationTimestamp: \"" + created + "\"")
           + "}\nspec:\n  parentRef: {kind: Gateway, group: gateway.networking.k8s.io, name: gw, namespace: ns}\n"
             "  listeners:\n" + listeners;
}

std::string http_listener(const std::string &name, const std::string &hostname, const std::string &from = "All")
{
    return "  - {name: " + name + ", port: 80, protocol: HTTP, hostname: " + hostname
           + ", allowedRoutes: {namespaces: {from: " + from + "}}}\n";
}

// parentRefs: a YAML flow list
std::string route(const std::string &name, const std::string &ns, const std::string &parents, const std::string &path)
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name
           + ", namespace: " + ns + "}\nspec:\n  parentRefs: " + parents
           + "\n  rules:\n  - matches: [{path: {type: PathPrefix, value: " + path
           + "}}]\n    backendRefs: [{name: web, namespace: ns, port: 80}]\n";
}

std::string ls_ref(const std::string &name, const std::string &section = "")
{
    return "{kind: ListenerSet, group: gateway.networking.k8s.io, name: " + name + ", namespace: ns"
           + (section.empty() ? "" : ", sectionName: " + section) + "}";
}

// "Type=Status/Reason " of each condition of the object's own
std::string conditions(const ObjectStatus &st)
{
    std::string out;
    for (const Condition &c : st.conditions) {
        out += std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason) + " ";
    }
    return out;
}

std::string listener_reasons(const ObjectStatus &st, const std::string &listener)
{
    std::string out;
    for (const auto &l : st.listeners) {
        if (l.name != listener) continue;
        out += "attached=" + std::to_string(l.attached_routes);
        for (const Condition &c : l.conditions) {
            out += " " + std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason);
        }
    }
    return out;
}

// "kind/name:Type=Status/Reason " for each parent of a route
std::string parents(const ObjectStatus &st)
{
    std::string out;
    for (const auto &ref : st.refs) {
        for (const Condition &c : ref.conditions) {
            if (c.type == "Accepted") out += std::string(ref.kind) + "/" + ref.name + ":" + std::string(c.status) + "/" + std::string(c.reason) + " ";
        }
    }
    return out;
}

bool serves(const std::string &conf, const std::string &host, const std::string &path)
{
    size_t server = conf.find("    server_name " + host + ";\n");
    if (server == std::string::npos) return false;
    size_t end = conf.find("\n}\n", server);
    return conf.substr(server, end - server).find("location ^~ " + path) != std::string::npos
           || conf.substr(server, end - server).find("location = " + path) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(listener_sets)

BOOST_AUTO_TEST_CASE(parse_and_crd_rules)
{
    Manifests m = parse(gateway("{from: Selector, selector: {matchLabels: {listeners: allowed}}}")
                        + listener_set("team-ls", "team", http_listener("web", "team.example.com")));
    BOOST_TEST_REQUIRE(m.listener_sets.size() == 1u);
    BOOST_TEST(m.listener_sets[0].parent_ns() == "ns");
    BOOST_TEST(m.listener_sets[0].listeners[0].hostname == "team.example.com");
    BOOST_TEST(m.gateways[0].allowed_listeners_from == "Selector");
    BOOST_TEST(m.gateways[0].allowed_listeners_selector.match_labels.at("listeners") == "allowed");
    BOOST_TEST(parse(gateway("")).gateways[0].allowed_listeners_from == "None");

    // a tenant's object: what is wrong rejects it alone
    auto bad = [](const std::string &spec) {
        return error_of("apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: x, namespace: team}\n"
                        "spec:\n" + spec);
    };
    const std::string parent = "  parentRef: {name: gw, namespace: ns}\n";
    BOOST_TEST(bad("  parentRef: {kind: Service, name: gw}\n  listeners:\n" + http_listener("a", "a.example.com"))
                   .find("spec.parentRef: must be a Gateway") != std::string::npos);
    BOOST_TEST(bad("  listeners:\n" + http_listener("a", "a.example.com")).find("spec.parentRef: required") != std::string::npos);
    BOOST_TEST(bad(parent + "  listeners:\n" + http_listener("a", "a.example.com") + http_listener("a", "b.example.com"))
                   .find("Listener name must be unique within the ListenerSet") != std::string::npos);
    BOOST_TEST(bad(parent + "  listeners: []\n").find("expected 1 to 64 listeners") != std::string::npos);
    BOOST_TEST(bad(parent + "  listeners:\n  - {name: a, port: 80, protocol: HTTP, hostname: \"a b\"}\n")
                   .find("not a valid hostname") != std::string::npos);
    BOOST_TEST(error_of("apiVersion: gateway.networking.k8s.io/v1alpha1\nkind: ListenerSet\nmetadata: {name: x, namespace: team}\n"
                        "spec:\n" + parent + "  listeners:\n" + http_listener("a", "a.example.com"))
                   .find("ListenerSet is read as v1") != std::string::npos);
    // the Gateway is the operator's: bad input as a whole
    BOOST_CHECK_THROW(parse(gateway("{from: Everyone}")), InputError);
}

BOOST_AUTO_TEST_CASE(the_gateway_decides_which_attach)
{
    const std::string sets = listener_set("same", "ns", http_listener("a", "same.example.com"))
                             + listener_set("selected", "team", http_listener("a", "selected.example.com"))
                             + listener_set("other", "elsewhere", http_listener("a", "other.example.com"));
    struct Case {
        std::string allowed;
        std::set<std::string> attached;
    } cases[] = {
        {"", {}},
        {"{from: None}", {}},
        {"{from: Same}", {"same"}},
        {"{from: Selector, selector: {matchLabels: {listeners: allowed}}}", {"selected"}},
        {"{from: All}", {"same", "selected", "other"}},
    };
    for (const Case &c : cases) {
        Plan plan = plan_of(kSetup + gateway(c.allowed) + sets);
        for (const std::string name : {"same", "selected", "other"}) {
            const ObjectStatus st = status_of(plan, "ListenerSet", name);
            if (c.attached.count(name)) {
                BOOST_TEST(conditions(st) == "Accepted=True/Accepted Programmed=True/Programmed ", c.allowed << " " << name);
                BOOST_TEST(listener_reasons(st, "a") == "attached=0 Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs");
            } else {
                BOOST_TEST(conditions(st) == "Accepted=False/NotAllowed Programmed=False/NotAllowed ", c.allowed << " " << name);
                BOOST_TEST(st.listeners.empty());
            }
        }
        BOOST_TEST(status_of(plan, "Gateway", "gw").attached_listener_sets == static_cast<int>(c.attached.size()), c.allowed);
        BOOST_TEST(status_of(plan, "Gateway", "gw").listeners.size() == 1u);  // its own only
        // a ListenerSet not admitted opens no server
        const std::string conf = render_http_conf(plan);
        BOOST_TEST((conf.find("server_name other.example.com;") != std::string::npos) == (c.attached.count("other") == 1));
    }
    // a ListenerSet of a Gateway that is not ours has no status from us
    Plan plan = plan_of(kSetup + gateway("{from: All}")
                        + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: theirs, namespace: ns}\n"
                          "spec:\n  parentRef: {name: not-ours}\n  listeners:\n" + http_listener("a", "theirs.example.com"));
    for (const ObjectStatus &st : *plan.statuses) BOOST_TEST(st.kind != "ListenerSet");
}

BOOST_AUTO_TEST_CASE(routes_attach_to_their_direct_parent)
{
    Plan plan = plan_of(kSetup + gateway("{from: All}")
                        + listener_set("ls", "ns", http_listener("one", "one.example.com") + http_listener("two", "two.example.com"))
                        + route("to-all", "ns", "[{name: gw}, " + ls_ref("ls") + "]", "/all")
                        + route("to-gw", "ns", "[{name: gw}]", "/gw")
                        + route("to-ls", "ns", "[" + ls_ref("ls") + "]", "/ls")
                        + route("to-one", "ns", "[" + ls_ref("ls", "one") + "]", "/one")
                        // a ListenerSet's listener is not the Gateway's section
                        + route("gw-section", "ns", "[{name: gw, sectionName: one}]", "/gw-section")
                        + route("no-section", "ns", "[" + ls_ref("ls", "gw-web") + "]", "/no-section"));
    BOOST_TEST(parents(status_of(plan, "HTTPRoute", "to-all")) == "Gateway/gw:True/Accepted ListenerSet/ls:True/Accepted ");
    BOOST_TEST(parents(status_of(plan, "HTTPRoute", "gw-section")) == "Gateway/gw:False/NoMatchingParent ");
    BOOST_TEST(parents(status_of(plan, "HTTPRoute", "no-section")) == "ListenerSet/ls:False/NoMatchingParent ");
    const ObjectStatus ls = status_of(plan, "ListenerSet", "ls");
    BOOST_TEST(listener_reasons(ls, "one").rfind("attached=3 ", 0) == 0u, listener_reasons(ls, "one"));
    BOOST_TEST(listener_reasons(ls, "two").rfind("attached=2 ", 0) == 0u, listener_reasons(ls, "two"));
    BOOST_TEST(listener_reasons(status_of(plan, "Gateway", "gw"), "gw-web").rfind("attached=2 ", 0) == 0u);

    const std::string conf = render_http_conf(plan);
    BOOST_TEST(serves(conf, "gw.example.com", "/all"));
    BOOST_TEST(serves(conf, "gw.example.com", "/gw"));
    BOOST_TEST(!serves(conf, "gw.example.com", "/ls"));
    BOOST_TEST(!serves(conf, "gw.example.com", "/gw-section"));
    BOOST_TEST(serves(conf, "one.example.com", "/all"));
    BOOST_TEST(serves(conf, "one.example.com", "/ls"));
    BOOST_TEST(serves(conf, "one.example.com", "/one"));
    BOOST_TEST(!serves(conf, "one.example.com", "/gw"));
    BOOST_TEST(serves(conf, "two.example.com", "/ls"));
    BOOST_TEST(!serves(conf, "two.example.com", "/one"));
    BOOST_TEST(render_http_conf(plan) == conf);  // deterministic
}

BOOST_AUTO_TEST_CASE(same_namespace_is_the_listener_sets)
{
    Plan plan = plan_of(kSetup + gateway("{from: All}")
                        + listener_set("ls", "team", http_listener("same", "same.example.com", "Same"))
                        + route("in-team", "team", "[{kind: ListenerSet, name: ls}]", "/team")
                        + route("in-ns", "ns", "[{kind: ListenerSet, name: ls, namespace: team}]", "/ns")
                        + "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\n"
                          "metadata: {name: to-web, namespace: ns}\nspec:\n"
                          "  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: team}]\n"
                          "  to: [{group: \"\", kind: Service}]\n");
    BOOST_TEST(parents(status_of(plan, "HTTPRoute", "in-team")) == "ListenerSet/ls:True/Accepted ");
    BOOST_TEST(parents(status_of(plan, "HTTPRoute", "in-ns")) == "ListenerSet/ls:False/NotAllowedByListeners ");
    BOOST_TEST(status_of(plan, "HTTPRoute", "in-ns").refs[0].namespace_ == "team");
}

BOOST_AUTO_TEST_CASE(conflicts_follow_precedence)
{
    // the Gateway's own first, then the oldest ListenerSet, then by name
    Plan plan = plan_of(kSetup + gateway("{from: Same}")
                        + listener_set("b-newer", "ns", http_listener("x", "x.example.com") + http_listener("mine", "b.example.com"),
                                       "2024-01-01T00:00:00Z")
                        + listener_set("c-older", "ns", http_listener("x", "x.example.com"), "2020-01-01T00:00:00Z")
                        + listener_set("a-same-as-gateway", "ns", http_listener("gw", "gw.example.com"), "2020-01-01T00:00:00Z")
                        + listener_set("tcp", "ns", "  - {name: t, port: 80, protocol: TCP}\n", "2019-01-01T00:00:00Z")
                        + route("r", "ns", "[" + ls_ref("b-newer") + "]", "/b"));
    const std::string conflicted = "attached=0 Accepted=False/HostnameConflict Programmed=False/HostnameConflict "
                                   "Conflicted=True/HostnameConflict";
    BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "c-older"), "x").rfind("attached=0 Accepted=True/Accepted", 0) == 0u);
    BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "b-newer"), "x") == conflicted);
    BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "a-same-as-gateway"), "gw") == conflicted);
    BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "tcp"), "t")
               == "attached=0 Accepted=False/ProtocolConflict Programmed=False/ProtocolConflict Conflicted=True/ProtocolConflict");
    // one listener served keeps a ListenerSet accepted; none, not
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "b-newer")) == "Accepted=True/Accepted Programmed=True/Programmed ");
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "a-same-as-gateway"))
               == "Accepted=False/ListenersNotValid Programmed=False/ListenersNotValid ");
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "tcp"))
               == "Accepted=False/ListenersNotValid Programmed=False/ListenersNotValid ");
    const ObjectStatus gw = status_of(plan, "Gateway", "gw");
    BOOST_TEST(gw.attached_listener_sets == 2);
    BOOST_TEST(conditions(gw).find("Accepted=True/Accepted Programmed=True/Programmed") == 0u, conditions(gw));
    BOOST_TEST(listener_reasons(gw, "gw-web").find("Accepted=True/Accepted") != std::string::npos);
    // the route on the newer ListenerSet attaches where it is not conflicted
    BOOST_TEST(parents(status_of(plan, "HTTPRoute", "r")) == "ListenerSet/b-newer:True/Accepted ");
    BOOST_TEST(serves(render_http_conf(plan), "b.example.com", "/b"));
    BOOST_TEST(!serves(render_http_conf(plan), "x.example.com", "/b"));
    // no other tenant's ListenerSet is named to the loser
    for (const auto &l : status_of(plan, "ListenerSet", "b-newer").listeners) {
        for (const Condition &c : l.conditions) BOOST_TEST(std::string(c.message).find("c-older") == std::string::npos);
    }

    // equal timestamps: namespace/name decides
    plan = plan_of(kSetup + gateway("{from: Same}") + listener_set("z", "ns", http_listener("x", "x.example.com"))
                   + listener_set("y", "ns", http_listener("x", "x.example.com")));
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "y")) == "Accepted=True/Accepted Programmed=True/Programmed ");
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "z")).find("ListenersNotValid") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(reference_grants_are_the_listener_sets_own)
{
    const std::string https = "  - {name: s, port: 443, protocol: HTTPS, hostname: s.example.com, "
                              "tls: {certificateRefs: [{name: cert, namespace: ns}]}}\n";
    auto grant = [](const std::string &kind, const std::string &from_ns) {
        return "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: g-"
               + from_ns + "-" + std::to_string(kind.size()) + ", namespace: ns}\nspec:\n  from: [{group: gateway.networking.k8s.io, kind: "
               + kind + ", namespace: " + from_ns + "}]\n  to: [{group: \"\", kind: Secret}]\n";
    };
    // in the Secret's namespace: no grant needed
    Plan plan = plan_of(kSetup + gateway("{from: All}") + listener_set("ls", "ns", https));
    BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "ls"), "s").find("ResolvedRefs=True") != std::string::npos);
    // from another namespace: a grant from ListenerSets there, not the Gateway's
    plan = plan_of(kSetup + gateway("{from: All}") + listener_set("ls", "team", https) + grant("Gateway", "team"));
    BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "ls"), "s").find("ResolvedRefs=False/RefNotPermitted")
               != std::string::npos);
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "ls")).find("Accepted=False/ListenersNotValid") == 0u);
    BOOST_TEST(render_http_conf(plan).find("s.example.com") == std::string::npos);
    plan = plan_of(kSetup + gateway("{from: All}") + listener_set("ls", "team", https) + grant("ListenerSet", "team")
                   + route("r", "team", "[{kind: ListenerSet, name: ls}]", "/s"));
    BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "ls"), "s").find("ResolvedRefs=True") != std::string::npos);
    BOOST_TEST(serves(render_http_conf(plan), "s.example.com", "/s"));
    // and a grant to ListenerSets is not the Gateway's
    plan = plan_of(kSetup + gateway("", "  - {name: s, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: other, namespace: team}]}}\n")
                   + tls_secret_yaml("other", "team")
                   + "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: g, namespace: team}\n"
                     "spec:\n  from: [{group: gateway.networking.k8s.io, kind: ListenerSet, namespace: ns}]\n"
                     "  to: [{group: \"\", kind: Secret}]\n");
    BOOST_TEST(listener_reasons(status_of(plan, "Gateway", "gw"), "s").find("ResolvedRefs=False/RefNotPermitted") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_rejected_listener_set_costs_only_itself)
{
    Plan plan = plan_of(kSetup + gateway("{from: All}")
                        + listener_set("good", "ns", http_listener("a", "good.example.com"))
                        + listener_set("bad", "ns", "  - {name: a, port: 80, protocol: HTTP, hostname: \"-bad-\"}\n")
                        + route("r", "ns", "[" + ls_ref("bad") + "]", "/r"));
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "good")) == "Accepted=True/Accepted Programmed=True/Programmed ");
    const ObjectStatus bad = status_of(plan, "ListenerSet", "bad");
    BOOST_TEST(conditions(bad) == "Accepted=False/ListenersNotValid Programmed=False/ListenersNotValid ");
    BOOST_TEST(std::string(bad.conditions[0].message).find("not a valid hostname") != std::string::npos);
    // a route naming it names nothing we serve: no status of ours
    for (const ObjectStatus &st : *plan.statuses) BOOST_TEST(!(st.kind == "HTTPRoute" && st.meta.name == "r"));
    BOOST_TEST(status_of(plan, "Gateway", "gw").attached_listener_sets == 1);
}

// nginx refusing a configuration with a ListenerSet: it alone is left
// out, and its status says why
BOOST_AUTO_TEST_CASE(a_listener_set_nginx_refuses_is_left_out_alone)
{
    Manifests m = parse(kSetup + gateway("{from: All}") + listener_set("good", "ns", http_listener("a", "good.example.com"))
                        + listener_set("refused", "team", http_listener("a", "refused.example.com"))
                        + route("r", "team", "[{kind: ListenerSet, name: refused}]", "/r"));
    std::vector<Exclusion> excluded;
    for (const TenantObject &o : tenant_objects(m)) {
        if (o.kind == TenantObject::Kind::ListenerSet && m.listener_sets[o.index].meta.name == "refused") {
            excluded.push_back({o, "nginx -t refuses the configuration with it: because"});
        }
    }
    BOOST_TEST_REQUIRE(excluded.size() == 1u);
    Manifests left = without(m, excluded);
    BOOST_TEST_REQUIRE(left.listener_sets.size() == 1u);
    Plan plan = resolve(left, Options{});
    const ObjectStatus refused = status_of(plan, "ListenerSet", "refused");
    BOOST_TEST(conditions(refused) == "Accepted=False/ListenersNotValid Programmed=False/ListenersNotValid ");
    BOOST_TEST(std::string(refused.conditions[0].message).find("nginx -t refuses the configuration with it") != std::string::npos);
    BOOST_TEST(conditions(status_of(plan, "ListenerSet", "good")) == "Accepted=True/Accepted Programmed=True/Programmed ");
    BOOST_TEST(render_http_conf(plan).find("refused.example.com") == std::string::npos);
}

// A tenant's listener takes no operator interface's port, and its port is
// the gateway's own to an endpoint (a request loop)
BOOST_AUTO_TEST_CASE(operator_ports_stay_the_operators)
{
    Options o;
    o.upstream_api = "127.0.0.1:9114";
    Manifests m = parse(kSetup + gateway("{from: All}")
                        + listener_set("ls", "team", "  - {name: status, port: 9113, protocol: HTTP}\n"
                                                     "  - {name: api, port: 9114, protocol: TCP}\n"
                                                     "  - {name: web, port: 8080, protocol: HTTP}\n"
                                                     "  - {name: dns, port: 9113, protocol: UDP}\n"));
    Plan plan = resolve(m, o);
    const ObjectStatus ls = status_of(plan, "ListenerSet", "ls");
    BOOST_TEST(listener_reasons(ls, "status") == "attached=0 Accepted=False/PortUnavailable Programmed=False/Invalid");
    BOOST_TEST(listener_reasons(ls, "api") == "attached=0 Accepted=False/PortUnavailable Programmed=False/Invalid");
    BOOST_TEST(listener_reasons(ls, "web").find("Accepted=True") != std::string::npos);
    // a UDP port is another socket than the interface's TCP one
    BOOST_TEST(listener_reasons(ls, "dns").find("Accepted=True") != std::string::npos, listener_reasons(ls, "dns"));
    EndpointRules rules(m, o);
    BOOST_TEST(rules.refusal("127.0.0.1", 8080).find("the gateway's own address and port") != std::string::npos);
    BOOST_TEST(rules.refusal("127.0.0.1", 8081).find("the gateway's own address and port") == std::string::npos);
}

// Every option that listens (ADDR:PORT in --help) is an operator
// interface, so the property below covers it
BOOST_AUTO_TEST_CASE(every_listening_option_is_an_operator_interface)
{
    const std::string usage = usage_text();
    const std::regex option(R"((--[a-z-]+) ADDR:PORT)");
    int listening = 0;
    for (auto it = std::sregex_iterator(usage.begin(), usage.end(), option); it != std::sregex_iterator(); ++it) {
        const std::string flag = (*it)[1];
        listening++;
        BOOST_TEST(std::any_of(std::begin(kOperatorInterfaces), std::end(kOperatorInterfaces),
                               [&](const OperatorInterface &i) { return flag == i.flag; }),
                   flag << " listens, and is not in kOperatorInterfaces");
    }
    BOOST_TEST(listening == static_cast<int>(std::size(kOperatorInterfaces)));
}

// Every operator interface (kOperatorInterfaces, one entry per flag that
// listens): its port is no listener's, a Gateway's or a ListenerSet's,
// and no endpoint's on any address of this host, while the next port is
// free to both
BOOST_AUTO_TEST_CASE(every_operator_interface_port_is_the_operators)
{
    for (const OperatorInterface &i : kOperatorInterfaces) {
        BOOST_TEST_CONTEXT(i.flag)
        {
            Options o;
            o.upstream_api = "off";
            o.status_listen = "off";
            o.health_listen = "";
            o.*i.listen = "0.0.0.0:9200";
            o.address_is_local = [](const std::string &address) { return address == "10.9.9.9"; };
            BOOST_TEST_REQUIRE(operator_ports(o).size() == 1u);
            Manifests m = parse(kSetup
                                + gateway("{from: All}",
                                          "  - {name: own, port: 9200, protocol: HTTP}\n"
                                          "  - {name: next, port: 9201, protocol: HTTP}\n")
                                + listener_set("ls", "team", "  - {name: own, port: 9200, protocol: TCP}\n"
                                                             "  - {name: next, port: 9202, protocol: HTTP}\n"));
            Plan plan = resolve(m, o);
            const std::string refused = "attached=0 Accepted=False/PortUnavailable Programmed=False/Invalid";
            BOOST_TEST(listener_reasons(status_of(plan, "Gateway", "gw"), "own") == refused);
            BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "ls"), "own") == refused);
            BOOST_TEST(listener_reasons(status_of(plan, "Gateway", "gw"), "next").find("Accepted=True") != std::string::npos);
            BOOST_TEST(listener_reasons(status_of(plan, "ListenerSet", "ls"), "next").find("Accepted=True")
                       != std::string::npos);
            EndpointRules rules(parse(kSetup), o);  // no listener of its own on 9200
            for (const char *address : {"127.0.0.1", "::1", "10.9.9.9", "::ffff:10.9.9.9"}) {
                BOOST_TEST(rules.refusal(address, 9200).find("the gateway's own address and port") != std::string::npos,
                           address);
            }
            BOOST_TEST(rules.refusal("10.9.9.9", 9203) == "");
            BOOST_TEST(rules.refusal("10.9.9.8", 9200) == "");
        }
    }
}

BOOST_AUTO_TEST_CASE(status_documents)
{
    Plan plan = plan_of(kSetup + gateway("{from: All}") + listener_set("ls", "team", http_listener("a", "a.example.com")));
    const std::string status = render_status(plan, Options{});
    BOOST_TEST(status.find("kind: ListenerSet\nmetadata:\n  name: ls\n  namespace: team\n  generation: 1\nstatus:\n"
                           "  conditions:\n    - type: Accepted\n")
                   != std::string::npos,
               status);
    BOOST_TEST(status.find("  attachedListenerSets: 1\n") != std::string::npos);
    BOOST_TEST(status.find("    - name: a\n      attachedRoutes: 0\n      supportedKinds:\n") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
