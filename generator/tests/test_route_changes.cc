// RouteChanges: HTTPRoute changes applied by resolving only the routes of
// the hostnames they touch. Property: after any sequence of route changes
// the plan renders what resolve makes of the same objects (every file,
// the route tables, the status), and the index asks for resolve when the
// change reaches past its hostnames. Service, ReferenceGrant and
// BackendTLSPolicy changes among them.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "apply/upstream_api.h"
#include "kube/status.h"
#include "plan/spare_assignment.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "resolve/route_changes.h"
#include "resolve/service_endpoints.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

// A Gateway with an HTTP listener of any hostname and an HTTPS listener
// of *.example.com, a second Gateway on its own port, EndpointSlices of
// Services s0 to s5 in two namespaces (the Services are service_yaml()'s),
// and CA ConfigMaps for the BackendTLSPolicy of t1/s1 (policy_yaml()'s;
// the ReferenceGrant is grant_yaml()'s).
std::string world_yaml()
{
    std::string yaml = class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - name: https
    port: 443
    protocol: HTTPS
    hostname: "*.example.com"
    tls: {certificateRefs: [{name: cert}]}
    allowedRoutes: {namespaces: {from: All}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: http, port: 8080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
)" + ca_configmap_yaml("ca", "t1") + ca_configmap_yaml("ca2", "t1");
    for (const char *ns : {"t1", "t2"}) {
        for (int i = 0; i < 6; i++) {
            const std::string name = "s" + std::to_string(i);
            yaml += "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: " + name
                    + "-a, namespace: " + ns + ", labels: {kubernetes.io/service-name: " + name
                    + "}}\nports: [{name: http, port: 8080}]\nendpoints: [{addresses: [\"10.0." + std::to_string(i)
                    + ".1\"]}]\n";
        }
    }
    return yaml;
}

// Service NAME in NS as the world starts (VARIANT 0; s0 to s3 are, s4
// and s5 are not), or changed: 1 a label, 2 a second port, 3 its port
// named otherwise (its slices' port no longer: other servers), 4
// appProtocol kubernetes.io/h2c
std::string service_yaml(const std::string &ns, const std::string &name, int variant)
{
    const char *ports[] = {"[{name: http, port: 80}]", "[{name: http, port: 80}]",
                           "[{name: http, port: 80}, {name: extra, port: 81}]", "[{name: web, port: 80}]",
                           "[{name: http, port: 80, appProtocol: kubernetes.io/h2c}]"};
    return "---\napiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: " + ns
           + (variant == 1 ? ", labels: {tier: web}" : "") + "}\nspec:\n  ports: " + ports[variant] + "\n";
}

// The ReferenceGrant t1/from-t2 as the world starts (VARIANT 0: t2's
// HTTPRoutes to t1's Services), or changed: 1 to t1/s2 alone, 2 from t2's
// GRPCRoutes alone
std::string grant_yaml(int variant)
{
    return std::string("---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\n"
                       "metadata: {name: from-t2, namespace: t1}\nspec:\n"
                       "  from: [{group: gateway.networking.k8s.io, kind: ")
           + (variant == 2 ? "GRPCRoute" : "HTTPRoute") + ", namespace: t2}]\n  to: [{group: \"\", kind: Service"
           + (variant == 1 ? ", name: s2" : "") + "}]\n";
}

// The BackendTLSPolicy t1/s1 at GENERATION as the world starts (VARIANT
// 0: a CA ConfigMap, a hostname), or changed: 1 another hostname, 2 a SAN,
// 3 a pin besides, 4 another mode, 5 t1/s2 a target too, 6 a second CA
// ConfigMap (1 to 3: its trust and names alone), 7 deleted
std::string policy_yaml(int variant, int generation)
{
    if (variant == 7) return "";
    const char *validation[] = {
        "hostname: s1.example.com",
        "hostname: s1-b.example.com",
        "hostname: s1.example.com\n    subjectAltNames: [{type: Hostname, hostname: alt.example.com}]",
        "hostname: s1.example.com\n    trustedCertificateHashes: [{type: SPKI, value: \"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\"}]",
        "hostname: s1.example.com\n    mode: InsecureAllowExpired",
        "hostname: s1.example.com",
        "hostname: s1.example.com",
    };
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: s1, namespace: t1, "
           "generation: " + std::to_string(generation) + "}\nspec:\n  targetRefs: [{group: \"\", kind: Service, name: s1}"
           + (variant == 5 ? ", {group: \"\", kind: Service, name: s2}" : "")
           + "]\n  validation:\n    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}"
           + (variant == 6 ? ", {group: \"\", kind: ConfigMap, name: ca2}" : "") + "]\n    " + validation[variant] + "\n";
}

// A random HTTPRoute NAME in NS: hostnames of a few (now and then a
// wildcard or none), parents among the listeners, rules to Services of
// its namespace or t1's (s3 one backendRef in S3_ONE_IN: new to nginx;
// s4 one in 30: made by a round, if at all)
std::string route_yaml(std::mt19937 &random, const std::string &ns, const std::string &name, int created, int s3_one_in = 12,
                       const std::string &uid = "")
{
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    const char *hosts[] = {"a.example.com", "b.example.com", "c.example.com", "d.other.org"};
    std::string hostnames;
    const int shape = pick(20);
    if (shape == 0) {
        hostnames = "";
    } else if (shape == 1) {
        hostnames = "  hostnames: [\"*.example.com\"]\n";
    } else {
        hostnames = std::string("  hostnames: [") + hosts[pick(4)] + (pick(4) == 0 ? std::string(", ") + hosts[pick(4)] : "") + "]\n";
    }
    const char *parents[] = {"[{name: gw, namespace: ns, sectionName: http}]",
                             "[{name: gw, namespace: ns, sectionName: https}]", "[{name: gw, namespace: ns}]",
                             "[{name: other, namespace: ns}]"};
    std::string yaml = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name
                       + ", namespace: " + ns + ", creationTimestamp: \"2026-01-01T00:00:" + (created < 10 ? "0" : "")
                       + std::to_string(created) + "Z\"" + (uid.empty() ? "" : ", uid: " + uid)
                       + "}\nspec:\n  parentRefs: " + parents[pick(4)] + "\n" + hostnames
                       + "  rules:\n";
    const char *paths[] = {"/x", "/y", "/z", "/"};
    for (int r = 0, rules = 1 + pick(2); r < rules; r++) {
        yaml += std::string("  - matches: [{path: {type: ") + (pick(4) == 0 ? "Exact" : "PathPrefix") + ", value: "
                + paths[pick(4)] + "}}]\n    backendRefs: [";
        for (int b = 0, refs = 1 + pick(2); b < refs; b++) {
            const std::string service = "s" + std::to_string(pick(s3_one_in) == 0 ? 3 : pick(30) == 0 ? 4 : pick(3));
            yaml += std::string(b ? ", " : "") + "{name: " + service + ", port: 80"
                    + (pick(3) == 0 ? ", namespace: t1" : "") + "}";
        }
        yaml += "]\n";
    }
    return yaml;
}

struct Rendered {
    std::string http, tables, status, nginx, stream;
};

Rendered rendered(const Plan &plan, const Options &o)
{
    return {render_http_conf(plan, o), render_route_tables(plan, o), render_status(plan, o),
            render_nginx_conf(plan, o), render_stream_conf(plan, o)};
}

struct Tally {
    int fast = 0, resolved = 0, hostnames_moved = 0, unchanged_named = 0;
    int grants_alone = 0;     // ReferenceGrant changes spliced
    int policies_alone = 0;   // BackendTLSPolicy changes spliced
    int services_alone = 0;   // Service changes spliced
    int services_routed = 0;  // of them, with routes naming the Service resolved again
    int fast_while_held = 0;  // spliced while spares held backends
    int held_alone = 0;       // backends new to nginx the splices gave spares
    int tls_turned = 0;       // of them, backends nginx runs whose TLS a policy made or deleted turned
    int made_again = 0;       // routes deleted and made again as they were, spliced
};

// Routes no round changes, naming s0, s1 and s2 of both namespaces: only
// s3 is ever new to nginx
std::string every_service_routes_yaml()
{
    std::string yaml;
    for (const char *ns : {"t1", "t2"}) {
        yaml += std::string("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: every, namespace: ")
                + ns + "}\nspec:\n  parentRefs: [{name: other, namespace: ns}]\n  hostnames: [every." + ns
                + ".org]\n  rules:\n  - backendRefs: [{name: s0, port: 80}, {name: s1, port: 80}, {name: s2, port: 80}]\n";
    }
    return yaml;
}

// ROUNDS random route changes, and one in five a Service's, each applied
// alone where RouteChanges (with ServiceEndpoints, as gateway2nginx run
// has them) can, compared with the whole way; SPARES: --spare-backends,
// whose spares the whole way gives backends new to nginx as gateway2nginx
// run does (hold_in_spares), in a world where s3 and s4 alone are new
Tally splice_rounds(int rounds, int spares, unsigned seed)
{
    Options o;
    o.routes = "table";
    o.upstream_api = "127.0.0.1:9114";
    o.spare_backends = spares;
    Tally tally;
    const std::string base = world_yaml() + (spares > 0 ? every_service_routes_yaml() : "");
    // held by a spare, s3 sends every change whose hostnames reach it the
    // whole way: rarer, for changes beside it
    const int s3_one_in = spares > 0 ? 60 : 12;
    std::map<std::string, std::string> routes;  // what the API holds, by "ns/name"
    std::map<std::string, std::string> uids;    // theirs, by "ns/name": kept while they change
    int made = 0;
    auto uid_of = [&](const std::string &key) {
        auto [it, added] = uids.try_emplace(key);
        if (added) it->second = "uid-" + std::to_string(made++);
        return it->second;
    };
    std::map<std::string, std::string> services;
    std::string grant = grant_yaml(0);  // none: deleted
    int policy_generation = 1;
    std::string policy = policy_yaml(0, policy_generation);
    for (const char *ns : {"t1", "t2"}) {
        for (int i = 0; i < 4; i++) services[ns + std::string("/s") + std::to_string(i)] = service_yaml(ns, "s" + std::to_string(i), 0);
    }
    std::mt19937 random(seed);
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    auto all_yaml = [&] {
        std::string yaml = base;
        for (const auto &[key, r] : routes) yaml += r;
        for (const auto &[key, svc] : services) yaml += svc;
        return yaml + grant + policy;
    };
    int created = 0;
    for (int i = 0; i < 10; i++) {
        const std::string ns = i % 2 ? "t2" : "t1", name = "r" + std::to_string(i);
        const std::string uid = uid_of(ns + "/" + name);
        std::string yaml = route_yaml(random, ns, name, created++ % 60, s3_one_in, uid);
        // with spares, s3 is new to the nginx the first plan starts
        while (spares > 0 && yaml.find("name: s3") != std::string::npos) {
            yaml = route_yaml(random, ns, name, created, s3_one_in, uid);
        }
        routes[ns + "/" + name] = yaml;
    }

    // what the whole way makes: resolved, the backends nginx runs kept,
    // those new to it held by spares (not at the start: nginx runs none)
    Plan plan;
    SpareAssignment held;
    auto whole = [&](const Plan &running, ResolveReads *reads, const SpareAssignment &kept, SpareAssignment *assigned) {
        Plan p = resolve(parse(all_yaml()), o, reads);
        retain_upstreams(&p, running.upstreams);
        if (!running.upstreams.empty() && spares > 0) {
            std::set<std::string> names;
            for (const Upstream &u : running.upstreams) {
                if (u.tenant != kSpareTenant) names.insert(u.name);
            }
            *assigned = assign_spares(&p, names, kept, &running.upstreams);
        }
        return p;
    };
    std::unique_ptr<Manifests> read;
    std::unique_ptr<RouteChanges> index;
    std::unique_ptr<ServiceEndpoints> endpoints;
    auto make_index = [&] {
        index.reset();
        endpoints.reset();
        read = std::make_unique<Manifests>(parse(all_yaml()));
        ResolveReads reads;
        SpareAssignment assigned;
        plan = whole(plan, &reads, held, &assigned);
        held = std::move(assigned);
        index = std::make_unique<RouteChanges>(*read, plan, o, reads);
        endpoints = std::make_unique<ServiceEndpoints>(*read, plan, o);
        BOOST_TEST_REQUIRE(index->usable());
    };
    make_index();

    for (int round = 0; round < rounds; round++) {
        const std::string ns = pick(2) ? "t2" : "t1", name = "r" + std::to_string(pick(14));
        std::string key = ns + "/" + name;
        const Plan running = plan;
        const SpareAssignment held_before = held;
        bool service_round = false, services_forgot = false, grant_round = false, policy_round = false;
        bool made_again = false;
        if (pick(8) == 0) {
            // the BackendTLSPolicy changed
            policy_round = true;
            key = "t1/s1";
            policy = policy_yaml(pick(4) == 0 ? 4 + pick(4) : pick(4), ++policy_generation);
            const Manifests one = parse(policy);
            index->policy_changed(key, policy.empty() ? nullptr : &one.backend_tls_policies.at(0));
        } else if (pick(12) == 0) {
            // the ReferenceGrant made, changed or deleted
            grant_round = true;
            key = "t1/from-t2";
            grant = pick(4) == 0 ? "" : grant_yaml(pick(3));
            const Manifests one = parse(grant);
            index->reference_grant_changed(key, grant.empty() ? nullptr : &one.reference_grants.at(0));
        } else if (pick(5) == 0) {
            // a Service made, changed or deleted, as gateway2nginx run
            // applies it: its servers (ServiceEndpoints), then the routes
            service_round = true;
            key = ns + "/s" + std::to_string(1 + pick(5));
            if (services.count(key) && pick(3) == 0) {
                services.erase(key);
                index->service_changed(key, nullptr);
                endpoints->service_changed(key, nullptr);
            } else {
                services[key] = service_yaml(ns, key.substr(3), services.count(key) ? pick(5) : 0);
                const Manifests one = parse(services[key]);
                BOOST_TEST_REQUIRE(one.services.size() == 1u);
                index->service_changed(key, &one.services[0]);
                endpoints->service_changed(key, &one.services[0]);
            }
            services_forgot = endpoints->update(&plan).needs_resolve;
        } else if (pick(6) == 0) {
            routes.erase(key);
            uids.erase(key);
            index->route_changed("HTTPRoute " + key, nullptr);
        } else if (pick(8) == 0 && routes.count(key)) {
            // deleted and made again as it was (one debounce): another
            // object, whose status is to be written
            made_again = true;
            const std::string was = uids.at(key);
            uids.erase(key);
            const std::string uid = uid_of(key);
            routes[key].replace(routes[key].find("uid: " + was), 5 + was.size(), "uid: " + uid);
            const Manifests one = parse(routes[key]);
            BOOST_TEST_REQUIRE(one.http_routes.size() == 1u);
            index->route_changed("HTTPRoute " + key, &one.http_routes[0]);
        } else {
            routes[key] = route_yaml(random, ns, name, created++ % 60, s3_one_in, uid_of(key));
            const Manifests one = parse(routes[key]);
            BOOST_TEST_REQUIRE(one.http_routes.size() == 1u);
            index->route_changed("HTTPRoute " + key, &one.http_routes[0]);
        }
        if (services_forgot) {
            tally.resolved++;
            make_index();
            continue;
        }
        // (the room the whole way does not weigh here either)
        const RouteChanges::Update update =
            index->update(&plan, spares > 0 ? &held : nullptr, [](const auto &) { return true; });
        BOOST_TEST_CONTEXT("round " << round << ": " << key << "\n" << update.needs_resolve << "\n" << all_yaml())
        {
            if (!update.needs_resolve.empty()) {
                tally.resolved++;
                make_index();
                continue;
            }
            for (const RouteChanges::Update::Held &h : update.held) {
                endpoints->hold(h.index, h.spare, plan.upstreams[h.index], *h.service, h.slices);
            }
            tally.fast++;
            if (service_round) tally.services_alone++;
            if (grant_round) tally.grants_alone++;
            if (policy_round) tally.policies_alone++;
            if (made_again) tally.made_again++;
            if (service_round && !update.servers.empty()) tally.services_routed++;
            if (!held.empty()) tally.fast_while_held++;
            tally.held_alone += static_cast<int>(update.held.size());
            for (const RouteChanges::Update::Held &h : update.held) tally.tls_turned += h.tls_turned ? 1 : 0;
            SpareAssignment assigned;
            const Plan want = whole(running, nullptr, held_before, &assigned);
            BOOST_TEST((assigned == held), "the spares hold what the whole way gives them");
            const Rendered got = rendered(plan, o), wanted = rendered(want, o);
            BOOST_TEST(got.http == wanted.http);
            BOOST_TEST(got.tables == wanted.tables);
            BOOST_TEST(got.status == wanted.status);
            // (the objects the statuses are of: status.yaml names no uid)
            auto objects = [](const Plan &p) {
                std::vector<std::string> uids;
                for (const ObjectStatus &st : *p.statuses) uids.push_back(st.meta.name + " " + st.meta.uid);
                return uids;
            };
            BOOST_TEST(objects(plan) == objects(want), "the statuses are of the objects the API holds");
            BOOST_TEST(got.nginx == wanted.nginx);
            BOOST_TEST(got.stream == wanted.stream);
            // the trust the API holds, and the CA bundles written
            const ApiContent trust_got = api_content(plan, o), trust_wanted = api_content(want, o);
            BOOST_TEST((trust_got.trust == trust_wanted.trust));
            std::map<std::string, std::string> files_got, files_wanted;
            for (const OutputFile &f : plan.files) files_got[f.path] = f.content;
            for (const OutputFile &f : want.files) files_wanted[f.path] = f.content;
            BOOST_TEST((files_got == files_wanted));
            // what it says changed is what a push would carry
            const ApiContent entries = route_entries(update.servers, update.replaced);
            const ApiContent before = api_content(running, o), after = api_content(want, o);
            for (const auto &[entry, json] : after.routes) {
                if (!before.routes.count(entry) || before.routes.at(entry) != json) {
                    BOOST_TEST(entries.routes.count(entry) == 1u, entry);
                }
            }
            for (const auto &[entry, json] : entries.routes) {
                BOOST_TEST((after.routes.count(entry) ? after.routes.at(entry) : "null") == json, entry);
            }
            std::set<std::string> trust_pushed;
            for (const UpstreamPolicy *p : update.trust) trust_pushed.insert(p->name);
            for (const auto &[name, json] : after.trust) {
                if (!before.trust.count(name) || before.trust.at(name) != json) BOOST_TEST(trust_pushed.count(name) == 1u, name);
            }
            if (update.replaced.size() != update.servers.size()) tally.hostnames_moved++;
            // a status said unchanged is the one at that position before, and
            // every other is named new
            BOOST_TEST_REQUIRE(update.status_from.size() == plan.statuses->size());
            std::map<std::string, std::string> then;
            auto json = [](const ObjectStatus &st) {
                return kube::our_status_json(st, "c", {}) + " " + st.meta.creation_timestamp + " " + st.meta.uid + " "
                       + std::to_string(st.meta.generation);  // (a status with no ancestors does not show it)
            };
            auto key = [](const ObjectStatus &st) { return std::string(st.kind) + " " + st.meta.namespace_ + "/" + st.meta.name; };
            for (const ObjectStatus &st : *running.statuses) then[key(st)] = json(st);
            for (size_t i = 0; i < plan.statuses->size(); i++) {
                const ObjectStatus &st = (*plan.statuses)[i];
                if (update.status_from[i] >= 0) {
                    const ObjectStatus &was = (*running.statuses)[static_cast<size_t>(update.status_from[i])];
                    BOOST_TEST(key(was) == key(st));
                    BOOST_TEST(json(was) == json(st), key(st));
                } else if (then.count(key(st)) && then[key(st)] == json(st)) {
                    tally.unchanged_named++;
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(tally.fast << " spliced (" << tally.fast_while_held << " while spares held backends, "
                       << tally.held_alone << " backends given spares, " << tally.tls_turned << " of them TLS turned, " << tally.services_alone
                       << " Service changes, " << tally.services_routed << " of them with routes, "
                       << tally.grants_alone << " ReferenceGrant changes, " << tally.policies_alone
                       << " BackendTLSPolicy changes, " << tally.made_again << " routes made again), "
                       << tally.resolved << " resolved, " << tally.hostnames_moved << " moved a hostname");
    return tally;
}

// (fewer under valgrind: make test-valgrind sets GTLS_PROPERTY_ROUNDS)
int property_rounds()
{
    return std::getenv("GTLS_PROPERTY_ROUNDS") ? std::atoi(std::getenv("GTLS_PROPERTY_ROUNDS")) : 300;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(route_changes)

BOOST_AUTO_TEST_CASE(route_changes_splice_what_resolve_would)
{
    const int rounds = property_rounds();
    const Tally t = splice_rounds(rounds, 0, 20261130);
    // both ways were taken, often
    BOOST_TEST(t.fast > rounds / 2);
    BOOST_TEST(t.resolved > rounds / 10);
    BOOST_TEST(t.hostnames_moved > (rounds >= 100 ? rounds / 30 : 0));
    // Service and ReferenceGrant changes among them
    BOOST_TEST(t.services_alone >= (rounds >= 100 ? rounds / 30 : 0));
    BOOST_TEST(t.services_routed >= (rounds >= 100 ? 2 : 0));
    BOOST_TEST(t.grants_alone >= (rounds >= 100 ? 2 : 0));
    BOOST_TEST(t.policies_alone >= (rounds >= 100 ? 4 : 0));
    BOOST_TEST(t.made_again >= (rounds >= 100 ? 2 : 0));
    // the routes resolved again whose status is as it was are not named
    BOOST_TEST(t.unchanged_named == 0);
}

// Spares holding backends new to nginx: changes beside them and of routes
// naming them are spliced, and a backend new to nginx is given the spare
// the whole way would give it
BOOST_AUTO_TEST_CASE(route_changes_splice_while_spares_hold_backends)
{
    const int rounds = property_rounds();
    const Tally t = splice_rounds(rounds, 2, 20261201);
    BOOST_TEST(t.fast_while_held >= std::max(1, rounds / 40));
    // and backends new to nginx given spares by the splice itself
    BOOST_TEST(t.held_alone >= (rounds >= 100 ? 2 : 0));
    BOOST_TEST(t.services_alone >= (rounds >= 100 ? rounds / 30 : 0));
    BOOST_TEST(t.grants_alone >= (rounds >= 100 ? 2 : 0));
    BOOST_TEST(t.policies_alone >= (rounds >= 100 ? 4 : 0));
    BOOST_TEST(t.made_again >= (rounds >= 100 ? 2 : 0));
    BOOST_TEST(t.tls_turned >= (rounds >= 100 ? 1 : 0));
    BOOST_TEST(t.resolved > rounds / 10);
    BOOST_TEST(t.unchanged_named == 0);
}

// A Service made for a route that names it: the route resolved again
// (its backend in a spare's place); one a BackendTLSPolicy, a TLSRoute
// or the Gateways' status reads: resolve
BOOST_AUTO_TEST_CASE(a_service_change_resolves_the_routes_naming_it)
{
    Options o;
    o.routes = "table";
    o.upstream_api = "127.0.0.1:9114";
    o.spare_backends = 2;
    o.status_address_service = "ns/front";
    const std::string route = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
                              "metadata: {name: app, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
                              "  hostnames: [a.example.com]\n  rules: [{backendRefs: [{name: app, port: 80}]}]\n";
    const std::string policy = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\n"
                               "metadata: {name: p, namespace: ns}\nspec:\n  targetRefs: [{group: \"\", kind: Service, name: safe}]\n"
                               "  validation: {wellKnownCACertificates: System, hostname: safe.example.com}\n";
    const std::string safe_route = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
                                   "metadata: {name: s, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
                                   "  hostnames: [b.example.com]\n  rules: [{backendRefs: [{name: safe, port: 80}]}]\n";
    auto service = [](const std::string &name) {
        return parse("apiVersion: v1\nkind: Service\nmetadata: {name: " + name
                     + ", namespace: ns}\nspec:\n  ports: [{name: http, port: 80}]\n");
    };
    const Manifests m = parse(web_route() + route + policy + safe_route);
    ResolveReads reads;
    Plan plan = resolve(m, o, &reads);
    // nginx runs web's backend; app and safe do not exist
    RouteChanges index(m, plan, o, reads);
    BOOST_TEST_REQUIRE(index.usable());
    const auto room = [](const auto &) { return true; };
    SpareAssignment held;

    const Manifests app = service("app");
    index.service_changed("ns/app", &app.services[0]);
    RouteChanges::Update update = index.update(&plan, &held, room);
    BOOST_TEST_REQUIRE(update.needs_resolve == "");
    BOOST_TEST_REQUIRE(update.held.size() == 1u);
    BOOST_TEST(update.held[0].upstream == "backend_ns_app_80");
    BOOST_TEST_REQUIRE(update.held[0].service != nullptr);
    BOOST_TEST(update.held[0].service->meta.key() == "ns/app");
    BOOST_TEST(held.at("backend_ns_app_80") == plan.upstreams[update.held[0].index].name);
    BOOST_TEST_REQUIRE(update.servers.size() == 1u);
    BOOST_TEST(update.servers[0]->server_name == "a.example.com");
    // (its route's status is new: ResolvedRefs now)
    BOOST_TEST(std::count(update.status_from.begin(), update.status_from.end(), -1) == 1);

    // a Service no route names: nothing resolved, every status as it was
    const Manifests other = service("other");
    index.service_changed("ns/other", &other.services[0]);
    update = index.update(&plan, &held, room);
    BOOST_TEST(update.needs_resolve == "");
    BOOST_TEST(update.servers.empty());
    BOOST_TEST(std::count(update.status_from.begin(), update.status_from.end(), -1) == 0);
    BOOST_TEST(update.status_from.size() == plan.statuses->size());

    // a policy's target, though it does not exist yet: its status would
    // change, and its route's backend is TLS, not what a splice would make
    const Manifests safe = service("safe");
    index.service_changed("ns/safe", &safe.services[0]);
    BOOST_TEST(index.update(&plan, &held, room).needs_resolve == "Service ns/safe is read by a BackendTLSPolicy");
    const Manifests front = service("front");
    index.service_changed("ns/front", &front.services[0]);
    BOOST_TEST(index.update(&plan, &held, room).needs_resolve == "Service ns/front is read by the Gateways' status");
}

// A backend a spare holds stays held while a route of another hostname
// names it: a change that leaves it to those is spliced; one that leaves
// it to no route goes the whole way (which gives the spare back)
BOOST_AUTO_TEST_CASE(a_held_backend_another_hostname_names_stays_held)
{
    Options o;
    o.routes = "table";
    o.upstream_api = "127.0.0.1:9114";
    o.spare_backends = 1;
    auto route = [](const std::string &name, const std::string &host, const std::string &service) {
        return parse("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name
                     + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [" + host
                     + "]\n  rules: [{backendRefs: [{name: " + service + ", port: 80}]}]\n");
    };
    const Manifests m = parse(web_route());
    ResolveReads reads;
    Plan plan = resolve(m, o, &reads);
    RouteChanges index(m, plan, o, reads);
    BOOST_TEST_REQUIRE(index.usable());
    const auto room = [](const auto &) { return true; };
    SpareAssignment held;
    const Manifests app = parse("apiVersion: v1\nkind: Service\nmetadata: {name: app, namespace: ns}\n"
                                "spec:\n  ports: [{name: http, port: 80}]\n");
    index.service_changed("ns/app", &app.services[0]);
    const Manifests a = route("a", "a.example.com", "app"), c = route("c", "c.example.com", "app");
    index.route_changed("HTTPRoute ns/a", &a.http_routes[0]);
    index.route_changed("HTTPRoute ns/c", &c.http_routes[0]);
    BOOST_TEST_REQUIRE(index.update(&plan, &held, room).needs_resolve == "");
    BOOST_TEST_REQUIRE(held.count("backend_ns_app_80") == 1u);
    const SpareAssignment holding = held;
    // a.example.com to web: c.example.com still names the spare
    const Manifests a_web = route("a", "a.example.com", "web");
    index.route_changed("HTTPRoute ns/a", &a_web.http_routes[0]);
    BOOST_TEST(index.update(&plan, &held, room).needs_resolve == "");
    BOOST_TEST((held == holding));
    // c.example.com too: no route names it
    const Manifests c_web = route("c", "c.example.com", "web");
    index.route_changed("HTTPRoute ns/c", &c_web.http_routes[0]);
    BOOST_TEST(index.update(&plan, &held, room).needs_resolve
               == "a spare holds backend backend_ns_app_80, which it may no longer need");
}

// A ReferenceGrant of a namespace whose grants only routes read: the
// routes naming its Services from other namespaces resolved again (data's
// own route makes db's backend one nginx runs); one of a namespace a
// Gateway's certificate is in: resolve
BOOST_AUTO_TEST_CASE(a_reference_grant_change_resolves_the_routes_it_governs)
{
    Options o;
    o.routes = "table";
    o.upstream_api = "127.0.0.1:9114";
    const std::string yaml = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: ours}\n"
                             "spec: {controllerName: gateway2nginx.io/controller}\n---\n"
                             + tls_secret_yaml("cert", "certs") + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - name: https
    port: 443
    protocol: HTTPS
    tls: {certificateRefs: [{name: cert, namespace: certs}]}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: gateway, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: ns}]
  to: [{group: "", kind: Secret}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: data}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: db, namespace: data, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: local, namespace: data}
spec:
  parentRefs: [{name: gw, namespace: ns, sectionName: http}]
  hostnames: [b.example.com]
  rules: [{backendRefs: [{name: db, port: 80}]}]
)";
    const Manifests m = parse(yaml);
    ResolveReads reads;
    Plan plan = resolve(m, o, &reads);
    RouteChanges index(m, plan, o, reads);
    BOOST_TEST_REQUIRE(index.usable());
    auto grant = [](const std::string &ns, const std::string &from_kind, const std::string &from_ns,
                    const std::string &to_kind) {
        return parse("apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: g, namespace: "
                     + ns + "}\nspec:\n  from: [{group: gateway.networking.k8s.io, kind: " + from_kind
                     + ", namespace: " + from_ns + "}]\n  to: [{group: \"\", kind: " + to_kind + "}]\n");
    };
    // data's grants: the route's RefNotPermitted lifted, its status new
    const Manifests allow = grant("data", "HTTPRoute", "ns", "Service");
    index.reference_grant_changed("data/g", &allow.reference_grants[0]);
    const RouteChanges::Update update = index.update(&plan);
    BOOST_TEST_REQUIRE(update.needs_resolve == "");
    BOOST_TEST_REQUIRE(update.servers.size() == 1u);
    BOOST_TEST(update.servers[0]->server_name == "a.example.com");
    BOOST_TEST(std::count(update.status_from.begin(), update.status_from.end(), -1) == 1);
    BOOST_TEST(render_status(plan, o).find("RefNotPermitted") == std::string::npos);
    // certs' grants: the Gateway's certificate reads them
    const Manifests other = grant("certs", "HTTPRoute", "ns", "Service");
    index.reference_grant_changed("certs/g", &other.reference_grants[0]);
    BOOST_TEST(index.update(&plan).needs_resolve
               == "the ReferenceGrants of certs are read by a Gateway, a ListenerSet or a TLSRoute, TCPRoute or UDPRoute");
}

// A BackendTLSPolicy whose hostname, SANs or pins change: the routes
// naming its Services resolved again, its trust and names pushed (and a
// spare's copy of them, where the spare holds a backend of it), its status
// written, as the whole way would; another mode or other ConfigMaps read:
// resolve
BOOST_AUTO_TEST_CASE(a_policy_change_pushes_its_trust_names_and_status)
{
    Options o;
    o.routes = "table";
    o.upstream_api = "127.0.0.1:9114";
    o.spare_backends = 2;
    auto policy = [](const std::string &validation, int generation, const std::string &ca = "ca") {
        return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: p, namespace: ns, "
               "generation: " + std::to_string(generation) + "}\nspec:\n  targetRefs: [{group: \"\", kind: Service, name: safe}, "
               "{group: \"\", kind: Service, name: late}]\n  validation:\n    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: "
               + ca + "}]\n    " + validation + "\n";
    };
    std::string yaml = http_gateway();
    for (const char *name : {"safe", "late"}) {
        yaml += std::string("apiVersion: v1\nkind: Service\nmetadata: {name: ") + name
                + ", namespace: ns}\nspec:\n  ports: [{name: http, port: 80}]\n---\n"
                  "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name
                + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [" + name
                + ".example.com]\n  rules: [{backendRefs: [{name: " + name + ", port: 80}]}]\n---\n";
    }
    yaml += ca_configmap_yaml("ca") + ca_configmap_yaml("ca2");
    // nginx runs safe's backend; late's is new to it, held by a spare as
    // the whole way gives it one
    auto whole = [&](const std::string &policy_yaml, SpareAssignment *held) {
        Plan p = resolve(parse(yaml + policy_yaml), o);
        const SpareAssignment kept = *held;
        *held = assign_spares(&p, {"backend_ns_safe_80"}, kept);
        return p;
    };
    const std::string before = policy("hostname: safe.example.com", 1);
    const Manifests m = parse(yaml + before);
    ResolveReads reads;
    Plan plan = resolve(m, o, &reads);
    SpareAssignment held = assign_spares(&plan, {"backend_ns_safe_80"}, {});
    BOOST_TEST_REQUIRE(held.count("backend_ns_late_80") == 1u);
    RouteChanges index(m, plan, o, reads);
    BOOST_TEST_REQUIRE(index.usable());
    const auto room = [](const auto &) { return true; };

    const std::string after = policy("hostname: safe.example.org\n    subjectAltNames: [{type: Hostname, hostname: "
                                     "alt.example.org}]\n    trustedCertificateHashes: [{type: SPKI, value: "
                                     "\"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\"}]", 2);
    const Manifests changed = parse(after);
    index.policy_changed("ns/p", &changed.backend_tls_policies[0]);
    const ApiContent api_before = api_content(plan, o);
    const RouteChanges::Update update = index.update(&plan, &held, room);
    BOOST_TEST_REQUIRE(update.needs_resolve == "");
    for (const auto &[entry, json] : route_entries(update.servers, update.replaced).routes) {
        BOOST_TEST((api_before.routes.count(entry) ? api_before.routes.at(entry) : "") == json, entry);  // as they were
    }
    std::set<std::string> pushed;
    for (const UpstreamPolicy *p : update.trust) pushed.insert(p->name + " " + p->hostname);
    auto spare = std::find_if(plan.upstreams.begin(), plan.upstreams.end(),
                              [&](const Upstream &u) { return u.name == held.at("backend_ns_late_80"); });
    BOOST_TEST_REQUIRE((spare != plan.upstreams.end() && spare->tls()));
    const std::string spare_policy = spare->policy->name;
    BOOST_TEST((pushed == std::set<std::string>{"ns/p safe.example.org", spare_policy + " safe.example.org"}));
    SpareAssignment kept = held;
    const Plan want = whole(after, &kept);
    BOOST_TEST((kept == held));
    BOOST_TEST((api_content(plan, o).trust == api_content(want, o).trust));
    BOOST_TEST(render_http_conf(plan, o) == render_http_conf(want, o));
    BOOST_TEST(render_status(plan, o) == render_status(want, o));
    // the policy's status alone is new
    BOOST_TEST_REQUIRE(update.status_from.size() == plan.statuses->size());
    for (size_t i = 0; i < plan.statuses->size(); i++) {
        BOOST_TEST((update.status_from[i] < 0) == ((*plan.statuses)[i].kind == std::string_view("BackendTLSPolicy")),
                   (*plan.statuses)[i].meta.name);
    }

    // what the API cannot replace: resolve, the plan as it was
    const std::string http = render_http_conf(plan, o);
    for (const auto &[validation, ca, why] : std::vector<std::array<std::string, 3>>{
             {"hostname: safe.example.org\n    mode: InsecureAllowExpired", "ca", "BackendTLSPolicy ns/p changes its mode"},
             {"hostname: safe.example.org", "ca2", "it refers to ConfigMap ns/ca2, which the plan does not read"}}) {
        const Manifests other = parse(policy(validation, 3, ca));
        index.policy_changed("ns/p", &other.backend_tls_policies[0]);
        BOOST_TEST(index.update(&plan, &held, room).needs_resolve == why);
        BOOST_TEST(render_http_conf(plan, o) == http);
    }
}

// A BackendTLSPolicy made for a Service whose backend nginx runs in
// plaintext: the backend, TLS now, in a TLS spare's place (its own
// upstream{} kept as nginx runs it), the spare's trust pushed, the
// policy's status written, as the whole way would; deleted again while
// the spare holds it: resolve (the spare cannot hold it in plaintext)
BOOST_AUTO_TEST_CASE(a_policy_made_turns_its_backend_s_tls_on_in_a_spare)
{
    Options o;
    o.routes = "table";
    o.upstream_api = "127.0.0.1:9114";
    o.spare_backends = 1;
    const std::string yaml = http_gateway() + "apiVersion: v1\nkind: Service\nmetadata: {name: app, namespace: ns}\n"
                             "spec:\n  ports: [{name: http, port: 80}]\n---\napiVersion: gateway.networking.k8s.io/v1\n"
                             "kind: HTTPRoute\nmetadata: {name: app, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
                             "  hostnames: [app.example.com]\n  rules: [{backendRefs: [{name: app, port: 80}]}]\n";
    const std::string policy = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\n"
                               "metadata: {name: app, namespace: ns}\nspec:\n  targetRefs: [{group: \"\", kind: Service, name: app}]\n"
                               "  validation: {wellKnownCACertificates: System, hostname: app.example.com}\n";
    const Manifests m = parse(yaml);
    ResolveReads reads;
    Plan plan = resolve(m, o, &reads);
    const Plan running = plan;
    RouteChanges index(m, plan, o, reads);
    BOOST_TEST_REQUIRE(index.usable());
    const auto room = [](const auto &) { return true; };
    SpareAssignment held;

    const Manifests made = parse(policy);
    index.policy_changed("ns/app", &made.backend_tls_policies[0]);
    const RouteChanges::Update update = index.update(&plan, &held, room);
    BOOST_TEST_REQUIRE(update.needs_resolve == "");
    BOOST_TEST(update.trust_reads_changed);
    BOOST_TEST_REQUIRE(update.held.size() == 1u);
    BOOST_TEST(update.held[0].upstream == "backend_ns_app_80");
    BOOST_TEST(update.held[0].tls_turned);
    const Upstream &spare = plan.upstreams[update.held[0].index];
    BOOST_TEST_REQUIRE(spare.tls());
    BOOST_TEST(spare.policy->hostname == "app.example.com");
    BOOST_TEST_REQUIRE(update.trust.size() == 1u);
    BOOST_TEST(update.trust[0] == spare.policy.get());
    // what the whole way makes of it: the backend held the same way
    Plan want = resolve(parse(yaml + policy), o);
    std::set<std::string> names;
    for (const Upstream &u : running.upstreams) {
        if (u.tenant != kSpareTenant) names.insert(u.name);
    }
    const SpareAssignment assigned = assign_spares(&want, names, {}, &running.upstreams);
    BOOST_TEST((assigned == held));
    BOOST_TEST(render_http_conf(plan, o) == render_http_conf(want, o));
    BOOST_TEST(render_route_tables(plan, o) == render_route_tables(want, o));
    BOOST_TEST(render_status(plan, o) == render_status(want, o));
    BOOST_TEST((api_content(plan, o).trust == api_content(want, o).trust));

    index.policy_changed("ns/app", nullptr);
    BOOST_TEST(index.update(&plan, &held, room).needs_resolve == "it changes backend backend_ns_app_80, held by a spare");
}

// A policy nginx cannot honour (an insecure mode its Gateway does not
// allow: its backend rendered down) changed in the same mode: resolve,
// the API holding no trust of it
BOOST_AUTO_TEST_CASE(a_policy_nginx_cannot_honour_is_resolved)
{
    Options o;
    o.routes = "table";
    o.upstream_api = "127.0.0.1:9114";
    auto policy = [](const std::string &hostname) {
        return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: p, namespace: ns}\n"
               "spec:\n  targetRefs: [{group: \"\", kind: Service, name: safe}]\n  validation:\n"
               "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n    mode: InsecureAllowExpired\n"
               "    hostname: " + hostname + "\n";
    };
    const std::string yaml = http_gateway() + "apiVersion: v1\nkind: Service\nmetadata: {name: safe, namespace: ns}\n"
                             "spec:\n  ports: [{name: http, port: 80}]\n---\napiVersion: gateway.networking.k8s.io/v1\n"
                             "kind: HTTPRoute\nmetadata: {name: safe, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
                             "  hostnames: [safe.example.com]\n  rules: [{backendRefs: [{name: safe, port: 80}]}]\n---\n"
                             + ca_configmap_yaml("ca");
    const Manifests m = parse(yaml + policy("safe.example.com"));
    ResolveReads reads;
    Plan plan = resolve(m, o, &reads);
    auto safe = std::find_if(plan.upstreams.begin(), plan.upstreams.end(),
                             [](const Upstream &u) { return u.name == "backend_ns_safe_80_insecure_denied"; });
    BOOST_TEST_REQUIRE((safe != plan.upstreams.end() && !safe->unusable.empty()));
    RouteChanges index(m, plan, o, reads);
    BOOST_TEST_REQUIRE(index.usable());
    const Manifests changed = parse(policy("safe.example.org"));
    index.policy_changed("ns/p", &changed.backend_tls_policies[0]);
    BOOST_TEST(index.update(&plan).needs_resolve
               == "BackendTLSPolicy ns/p cannot be honoured for backend_ns_safe_80_insecure_denied");
}

BOOST_AUTO_TEST_SUITE_END()
