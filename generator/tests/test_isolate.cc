// Isolation of what nginx -t refuses: the group testing that finds the
// objects at fault, the order blame follows, and the manifests without them.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "apply/isolate.h"
#include "apply/nginx_check.h"
#include "render/render.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

// A configuration nginx refuses when it holds any of `culprits`; counts checks.
struct RefusesAny {
    std::set<size_t> culprits;
    size_t checks = 0;

    std::optional<std::string> operator()(const std::vector<bool> &included)
    {
        checks++;
        for (size_t c : culprits) {
            if (included[c]) return "refused " + std::to_string(c);
        }
        return std::nullopt;
    }
};

std::set<size_t> indices_of(const std::vector<Refused> &refused)
{
    std::set<size_t> out;
    for (const Refused &r : refused) out.insert(r.index);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(isolate)

// Every set of culprits among up to 64 objects is found exactly, each with
// the refusal that names it, within 2 d (log2 n + 1) checks.
BOOST_AUTO_TEST_CASE(finds_exactly_the_objects_at_fault)
{
    std::mt19937 random(16);
    size_t cases = 0;
    for (size_t count = 1; count <= 64; count++) {
        for (size_t faults = 1; faults <= std::min<size_t>(count, 5); faults++) {
            RefusesAny nginx;
            while (nginx.culprits.size() < faults) nginx.culprits.insert(random() % count);
            std::vector<bool> all(count, true);
            std::string refusal_of_all = *nginx(all);
            std::vector<Refused> refused = find_refused(count, refusal_of_all, std::ref(nginx));
            BOOST_TEST((indices_of(refused) == nginx.culprits), count << " objects, " << faults << " at fault");
            for (const Refused &r : refused) {
                BOOST_TEST(r.why == "refused " + std::to_string(r.index));
            }
            double bound = 2.0 * static_cast<double>(faults) * (std::log2(static_cast<double>(count)) + 1);
            BOOST_TEST(static_cast<double>(nginx.checks - 1) <= bound, count << "/" << faults << ": " << nginx.checks);
            cases++;
        }
    }
    BOOST_TEST(cases > 250u);
}

// Two objects refused only together: the later is blamed, the earlier kept,
// and what is kept is a configuration nginx accepts.
BOOST_AUTO_TEST_CASE(of_two_in_conflict_the_later_is_refused)
{
    for (size_t first = 0; first < 12; first++) {
        for (size_t second = first + 1; second < 12; second++) {
            auto conflict = [&](const std::vector<bool> &included) -> std::optional<std::string> {
                if (included[first] && included[second]) return std::string("conflict");
                return std::nullopt;
            };
            std::vector<Refused> refused = find_refused(12, "conflict", conflict);
            BOOST_TEST_REQUIRE(refused.size() == 1u);
            BOOST_TEST(refused[0].index == second);
            std::vector<bool> kept(12, true);
            kept[second] = false;
            BOOST_TEST(!conflict(kept));
        }
    }
}

const std::string kManifests = http_gateway() + tls_secret_yaml("cert", "ns") + R"(---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: ns}
spec: {ports: [{port: 443}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: app-1, namespace: ns, labels: {kubernetes.io/service-name: app}}
ports: [{port: 8443}]
endpoints: [{addresses: ["10.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: app-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: app}]
  validation: {hostname: app.example.com, wellKnownCACertificates: System}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: new, namespace: ns, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: app, port: 443}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: old, namespace: ns, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{path: {value: /old}}], backendRefs: [{name: app, port: 443}]}]
)";

// Routes come last, the oldest first; what they refer to comes before them.
std::vector<std::string> blame_order(const Manifests &m)
{
    std::vector<std::string> order;
    for (const TenantObject &o : tenant_objects(m)) {
        switch (o.kind) {
        case TenantObject::Kind::Secret: order.push_back("Secret " + m.secrets[o.index].meta.name); break;
        case TenantObject::Kind::BackendTLSPolicy:
            order.push_back("BackendTLSPolicy " + m.backend_tls_policies[o.index].meta.name);
            break;
        case TenantObject::Kind::Service: order.push_back("Service " + m.services[o.index].meta.name); break;
        case TenantObject::Kind::EndpointSlice:
            order.push_back("EndpointSlice " + m.endpoint_slices[o.index].meta.name);
            break;
        case TenantObject::Kind::HTTPRoute: order.push_back("HTTPRoute " + m.http_routes[o.index].meta.name); break;
        default: order.push_back("other"); break;
        }
    }
    return order;
}

BOOST_AUTO_TEST_CASE(routes_last_and_the_oldest_first)
{
    Manifests m = parse(kManifests);
    m.server_timestamps = true;  // as from a watch stream
    std::vector<std::string> expected{"Secret cert", "BackendTLSPolicy app-tls", "Service app",
                                      "EndpointSlice app-1", "HTTPRoute old", "HTTPRoute new"};
    BOOST_TEST(blame_order(m) == expected, boost::test_tools::per_element());
}

// Blame follows nothing a tenant chooses: from files a creationTimestamp
// is what the author wrote, and gateway2nginx run blames the object it met
// later, whatever either says.
BOOST_AUTO_TEST_CASE(blame_follows_nothing_a_tenant_writes)
{
    Manifests files = parse(kManifests);
    BOOST_TEST(blame_order(files).back() == "HTTPRoute old");  // by name: "new" < "old", 2020 or not

    FirstSeen seen;
    seen.stamp(&files);
    // "old" comes back after the first configuration, met anew
    Manifests without_old = parse(kManifests.substr(0, kManifests.rfind("---\n")));
    seen.stamp(&without_old);
    Manifests again = parse(kManifests);
    again.server_timestamps = true;
    seen.stamp(&again);
    BOOST_TEST(blame_order(again).back() == "HTTPRoute old");
    // while "new", met in the first configuration, keeps its place
    for (const Route &r : again.http_routes) BOOST_TEST(r.meta.seen == (r.meta.name == "new" ? 0u : 2u), r.meta.name);
}

// Routes share lists (HTTPRoutes and GRPCRoutes; TLSRoutes and TCPRoutes):
// two of one name and namespace but of other kinds are two objects, each
// met for the first time when it comes, and each remembered apart.
BOOST_AUTO_TEST_CASE(routes_of_one_name_and_other_kinds_are_other_objects)
{
    const std::string grpc = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: new, "
                             "namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
                             "  rules: [{backendRefs: [{name: app, port: 443}]}]\n";
    FirstSeen seen;
    Manifests first = parse(kManifests);
    seen.stamp(&first);
    Manifests second = parse(kManifests + grpc);
    seen.stamp(&second);
    size_t grpc_routes = 0;
    for (const Route &r : second.http_routes) {
        const bool is_grpc = r.kind == RouteKind::GRPCRoute;
        grpc_routes += is_grpc;
        BOOST_TEST(r.meta.seen == (is_grpc ? 1u : 0u), route_kind_name(r.kind) << " " << r.meta.name);
    }
    BOOST_TEST(grpc_routes == 1u);
}

// A route left out is rejected with its parents, so its status says why;
// a Service goes; a policy stays, invalid, so that its Service fails closed.
BOOST_AUTO_TEST_CASE(what_is_left_out_is_reported_and_a_policy_fails_closed)
{
    Manifests m = parse(kManifests);
    std::vector<Exclusion> excluded;
    for (const TenantObject &o : tenant_objects(m)) {
        if (o.kind == TenantObject::Kind::HTTPRoute && m.http_routes[o.index].meta.name == "new") {
            excluded.push_back({o, "nginx -t refuses the configuration with it: because"});
        }
        if (o.kind == TenantObject::Kind::BackendTLSPolicy) excluded.push_back({o, "nginx -t refuses it too"});
    }
    BOOST_TEST_REQUIRE(excluded.size() == 2u);
    Manifests left = without(m, excluded);
    BOOST_TEST_REQUIRE(left.http_routes.size() == 1u);
    BOOST_TEST(left.http_routes[0].meta.name == "old");
    BOOST_TEST_REQUIRE(left.backend_tls_policies.size() == 1u);
    BOOST_TEST(left.backend_tls_policies[0].invalid_reasons.size() == 1u);
    BOOST_TEST_REQUIRE(left.rejected.size() == 2u);
    auto route = std::find_if(left.rejected.begin(), left.rejected.end(),
                              [](const RejectedObject &r) { return r.kind == "HTTPRoute"; });
    BOOST_TEST_REQUIRE((route != left.rejected.end()));
    BOOST_TEST(route->meta.name == "new");
    BOOST_TEST(route->parent_refs.size() == 1u);
    BOOST_TEST(route->message.rfind("in.yaml:", 0) == 0u, route->message);

    Plan plan = resolve(left, Options{});
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "new")) == "gw:Accepted=False/UnsupportedValue ");
    const std::string status_message{status_of(plan, "HTTPRoute", "new").refs.at(0).conditions.at(0).message};
    BOOST_TEST(status_message.find("nginx -t refuses the configuration with it: because") != std::string::npos);
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "app-tls")).find("Accepted=False") != std::string::npos);
    std::string http;
    {
        std::ostringstream out;
        render_http_conf(out, plan, Options{});
        http = out.str();
    }
    BOOST_TEST(http.find("server 10.0.0.1:8443") == std::string::npos, "the Service behind an invalid policy is never reached");
    BOOST_TEST(http.find("unusable") != std::string::npos);

    // the Service left out: its routes find no backend, nothing else changes
    std::vector<Exclusion> service;
    for (const TenantObject &o : tenant_objects(m)) {
        if (o.kind == TenantObject::Kind::Service) service.push_back({o, "why"});
    }
    Manifests no_service = without(m, service);
    BOOST_TEST(no_service.services.empty());
    BOOST_TEST(no_service.http_routes.size() == 2u);
    BOOST_TEST(no_service.rejected.at(0).kind == "Service");
}

// What nginx -t does not try: a socket the new configuration listens on,
// which the running one does not hold, and another process does
// The search with a judge that applies what it takes (reloads): over
// random suspects and objects at fault among them, every configuration
// judged holds every object the one taken last held and every object not
// suspected; the objects found are exactly those at fault, and the
// configuration settled on holds all the others.
BOOST_AUTO_TEST_CASE(a_judge_that_applies_what_it_takes_moves_only_forward)
{
    namespace fs = std::filesystem;
    std::mt19937 random(4151);
    const fs::path staged = fs::temp_directory_path() / ("g2n-forward-" + std::to_string(::getpid()));
    size_t trials = 0;
    for (; trials < 40; trials++) {
        const size_t count = 1 + random() % 10;
        std::string yaml = http_gateway() + "---\napiVersion: v1\nkind: Service\nmetadata: {name: app, namespace: ns}\n"
                           "spec: {ports: [{port: 80}]}\n";
        for (size_t i = 0; i < count; i++) {
            yaml += "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r" + std::to_string(i)
                    + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{matches: [{path: {value: /r"
                    + std::to_string(i) + "x}}], backendRefs: [{name: app, port: 80}]}]\n";
        }
        const Manifests m = parse(yaml);
        std::set<std::string> suspects, culprits;
        for (size_t i = 0; i < count; i++) {
            const std::string name = "r" + std::to_string(i);
            if (random() % 2 == 0) continue;
            suspects.insert(name);
            if (random() % 3 == 0) culprits.insert(name);
        }
        if (culprits.empty()) continue;
        // the routes the staged configuration serves, by their paths
        auto routes_in = [&] {
            std::ifstream in(staged / "http.conf");
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            std::set<std::string> in_it;
            for (size_t i = 0; i < count; i++) {
                if (text.find("/r" + std::to_string(i) + "x") != std::string::npos) in_it.insert("r" + std::to_string(i));
            }
            return in_it;
        };
        std::set<std::string> taken;  // what the judge applied last
        for (size_t i = 0; i < count; i++) {
            if (!suspects.count("r" + std::to_string(i))) taken.insert("r" + std::to_string(i));
        }
        bool forward = true;
        const RefusalJudge reload = [&](const Plan &, bool) -> std::optional<std::string> {
            const std::set<std::string> judged = routes_in();
            forward = forward && std::includes(judged.begin(), judged.end(), taken.begin(), taken.end());
            for (const std::string &c : culprits) {
                if (judged.count(c)) return "refused " + c;
            }
            taken = judged;
            return std::nullopt;
        };
        std::vector<Exclusion> found;
        const std::optional<Plan> settled = stage_without_refused(
            m, "refused", Options{}, false, staged, {}, &found, reload, "refused", "check(s)",
            [&](const TenantObject &o) {
                return o.kind == TenantObject::Kind::HTTPRoute && suspects.count(m.http_routes[o.index].meta.name);
            });
        BOOST_TEST_REQUIRE(settled.has_value());
        BOOST_TEST(forward, "trial " << trials << ": a configuration judged dropped what was taken before");
        std::set<std::string> blamed;
        for (const Exclusion &e : found) blamed.insert(m.http_routes[e.object.index].meta.name);
        BOOST_TEST((blamed == culprits), "trial " << trials);
        std::set<std::string> all_but;
        for (size_t i = 0; i < count; i++) {
            if (!culprits.count("r" + std::to_string(i))) all_but.insert("r" + std::to_string(i));
        }
        BOOST_TEST((routes_in() == all_but), "trial " << trials << ": the configuration settled on");
        BOOST_TEST((taken == all_but), "trial " << trials << ": what the judge applied last");
    }
    fs::remove_all(staged);
}

BOOST_AUTO_TEST_CASE(a_listen_another_process_holds_is_refused)
{
    namespace fs = std::filesystem;
    const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_TEST_REQUIRE(::bind(holder, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    BOOST_TEST_REQUIRE(::listen(holder, 1) == 0);
    socklen_t length = sizeof a;
    ::getsockname(holder, reinterpret_cast<sockaddr *>(&a), &length);
    const std::string held = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));

    const fs::path root = fs::temp_directory_path() / ("g2n-listens-" + std::to_string(::getpid()));
    fs::create_directories(root / "new");
    fs::create_directories(root / "running");
    auto write = [](const fs::path &file, const std::string &text) { std::ofstream(file) << text; };
    write(root / "new" / "http.conf", "server {\n    listen " + held + " default_server;\n}\n");
    write(root / "new" / "stream.conf", "server {\n    listen " + held + " udp;\n}\n");
    std::optional<std::string> refused = unbindable_listen(root / "new", "");
    BOOST_TEST_REQUIRE(refused.has_value());
    BOOST_TEST(*refused == "bind() to " + held + " failed (98: Address already in use), which nginx -t does not try");
    // the running nginx's own socket is inherited, not bound again
    write(root / "running" / "http.conf", "    listen " + held + ";\n");
    BOOST_TEST(!unbindable_listen(root / "new", root / "running").has_value());
    // the UDP socket of that port number is another, and free
    write(root / "new" / "http.conf", "");
    BOOST_TEST(!unbindable_listen(root / "new", "").has_value());
    // an address not this host's
    write(root / "new" / "http.conf", "    listen 192.0.2.1:80;\n");
    refused = unbindable_listen(root / "new", "");
    BOOST_TEST((refused && refused->find("bind() to 192.0.2.1:80 failed (99: ") == 0), refused.value_or("none"));
    ::close(holder);
    fs::remove_all(root);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

const std::string kTenants = R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ops}
spec: {gatewayClassName: ours, listeners: [{name: http, port: 80, protocol: HTTP}]}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: a}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: a}
spec: {parentRefs: [{name: gw, namespace: ops}], rules: [{backendRefs: [{name: svc, port: 80}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: b}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: c}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-a, namespace: c}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: a}]
  to: [{group: "", kind: Service}]
)";

// The key RefusalMemory knows HTTPRoute a/r by
std::string route_key(const std::string &manifests)
{
    Manifests m = parse(manifests);
    std::vector<TenantObject> objects = tenant_objects(m);
    std::vector<std::string> keys = refusal_keys(m, objects);
    for (size_t i = 0; i < objects.size(); i++) {
        if (objects[i].kind == TenantObject::Kind::HTTPRoute) return keys[i];
    }
    return "";
}

std::string edited(std::string text, const std::string &from, const std::string &to)
{
    const size_t at = text.find(from);
    BOOST_TEST_REQUIRE(at != std::string::npos, from);
    return text.replace(at, from.size(), to);
}

}  // namespace

// What RefusalMemory remembers a refusal by: a route refused stays known
// while nothing that can change nginx's verdict changes (another tenant's
// namespace), and is searched for again when its document, its namespace,
// a namespace it may refer into, or the operator's objects change.
BOOST_AUTO_TEST_CASE(a_refusal_is_remembered_while_nothing_it_can_see_changes)
{
    const std::string key = route_key(kTenants);
    BOOST_TEST_REQUIRE(!key.empty());
    BOOST_TEST(route_key(kTenants) == key);
    // another tenant's namespace, its objects in another order
    BOOST_TEST(route_key(edited(kTenants, "metadata: {name: svc, namespace: b}\nspec: {ports: [{port: 80}]}",
                                "metadata: {name: svc, namespace: b}\nspec: {ports: [{port: 81}]}")) == key);
    BOOST_TEST(route_key(kTenants + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: b}\n") == key);
    // what it can see
    BOOST_TEST(route_key(edited(kTenants, "rules: [{backendRefs: [{name: svc, port: 80}]}]",
                                "rules: [{backendRefs: [{name: svc, port: 81}]}]")) != key);
    BOOST_TEST(route_key(edited(kTenants, "metadata: {name: svc, namespace: a}\nspec: {ports: [{port: 80}]}",
                                "metadata: {name: svc, namespace: a}\nspec: {ports: [{port: 81}]}")) != key);
    BOOST_TEST(route_key(kTenants + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: a}\n") != key);
    BOOST_TEST(route_key(edited(kTenants, "metadata: {name: svc, namespace: c}\nspec: {ports: [{port: 80}]}",
                                "metadata: {name: svc, namespace: c}\nspec: {ports: [{port: 81}]}")) != key);
    BOOST_TEST(route_key(edited(kTenants, "listeners: [{name: http, port: 80", "listeners: [{name: http, port: 81")) != key);

    // remembered, recalled while unchanged, forgotten once searched without it
    Manifests m = parse(kTenants);
    std::vector<TenantObject> objects = tenant_objects(m);
    const TenantObject route = *std::find_if(objects.begin(), objects.end(), [](const TenantObject &o) {
        return o.kind == TenantObject::Kind::HTTPRoute;
    });
    RefusalMemory memory;
    const auto start = std::chrono::steady_clock::now();
    memory.remember(m, {}, {{route, "refused"}}, start);
    std::vector<Exclusion> recalled = memory.recall(parse(kTenants), start + std::chrono::minutes(1));
    BOOST_TEST_REQUIRE(recalled.size() == 1u);
    BOOST_TEST(recalled[0].why == "refused");
    // searched for again after a while (a name may resolve by then), and
    // known from the new search on
    BOOST_TEST(memory.recall(m, start + RefusalMemory::kRecheckRefused).empty());
    memory.remember(m, recalled, {}, start + std::chrono::minutes(2));
    BOOST_TEST(memory.recall(m, start + RefusalMemory::kRecheckRefused).empty());
    memory.remember(m, {}, {{route, "refused"}}, start + RefusalMemory::kRecheckRefused);
    BOOST_TEST(memory.recall(m, start + RefusalMemory::kRecheckRefused + std::chrono::minutes(1)).size() == 1u);
    memory.remember(m, {}, {}, start);
    BOOST_TEST(memory.size() == 0u);
}
