// ServiceEndpoints: EndpointSlice changes followed by recomputing only the
// Services they name. Property: after any sequence of slice changes the
// servers are what resolve makes of the same objects, and the index asks
// for resolve exactly when the skeleton (what a reload would change)
// changes.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "render/render.h"
#include "resolve/resolve.h"
#include "resolve/service_endpoints.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

// Services in two namespaces (tenants, with zones of their own), routed
// from the HTTP listener (once with retries, so that servers are written
// more than once), one ExternalName, one behind a TLS Passthrough
// listener (stream{}).
std::string objects_yaml()
{
    std::string yaml = class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - {name: pass, port: 443, protocol: TLS, tls: {mode: Passthrough}, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: pass, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: pass}]
  hostnames: [db.example.com]
  rules: [{backendRefs: [{name: s0, port: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: t1}
spec: {type: ExternalName, externalName: ext.example.com, ports: [{name: http, port: 80}]}
)";
    for (const char *ns : {"ns", "t1"}) {
        for (int i = 0; i < 3; i++) {
            const std::string name = "s" + std::to_string(i);
            yaml += "---\napiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: " + ns
                    + "}\nspec:\n  ports: [{name: http, port: 80}, {name: alt, port: 81}]\n";
        }
        yaml += std::string("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ")
                + ns + "}\nspec:\n  parentRefs: [{name: gw, namespace: ns, sectionName: http}]\n  rules:\n"
                  "  - matches: [{path: {type: PathPrefix, value: /a}}]\n    backendRefs: [{name: s0, port: 80}, {name: s1, port: 81}]\n"
                  "  - matches: [{path: {type: PathPrefix, value: /b}}]\n    retry: {attempts: 3}\n"
                  "    backendRefs: [{name: s2, port: 80}]\n"
                  "  - matches: [{path: {type: PathPrefix, value: /c}}]\n    backendRefs: [{name: s1, port: 80}]\n";
    }
    yaml += "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: e, namespace: t1}\n"
            "spec:\n  parentRefs: [{name: gw, namespace: ns, sectionName: http}]\n"
            "  rules: [{matches: [{path: {type: PathPrefix, value: /e}}], backendRefs: [{name: ext, port: 80}]}]\n";
    return yaml;
}

std::string slice_yaml(const EndpointSlice &s)
{
    std::string yaml = "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: " + s.meta.name
                       + ", namespace: " + s.meta.namespace_ + ", labels: {kubernetes.io/service-name: "
                       + s.service_name + "}}\nports:";
    for (const EndpointPort &p : s.ports) yaml += " [{name: " + p.name + ", port: " + std::to_string(p.port) + "}]";
    if (s.ports.empty()) yaml += " []";
    yaml += "\nendpoints:\n";
    for (const std::string &a : s.ready_addresses) yaml += "- addresses: [\"" + a + "\"]\n";
    if (s.ready_addresses.empty()) yaml += "- addresses: [\"10.9.9.9\"]\n  conditions: {ready: false}\n";
    return yaml;
}

std::string skeleton(const Plan &plan, Options o)
{
    o.endpoint_skeleton = true;
    return render_http_conf(plan, o) + "\n" + render_stream_conf(plan, o);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(service_endpoints)

BOOST_AUTO_TEST_CASE(slice_changes_recompute_what_resolve_would)
{
    Options o;
    o.upstream_api = "127.0.0.1:9114";
        const std::string base = objects_yaml();
    std::map<std::string, EndpointSlice> slices;  // what the API holds
    auto all_yaml = [&] {
        std::string yaml = base;
        for (const auto &[key, s] : slices) yaml += slice_yaml(s);
        return yaml;
    };
    auto truth = [&] { return resolve(parse(all_yaml()), o); };

    // as run keeps it: made of a read, which goes back to the document
    // cache and is followed there, or (objects nginx -t refused left out
    // of a copy of the read) copied before the read goes
    DocumentCache cache;
    std::unique_ptr<ServiceEndpoints> index;
    int made = 0, viewed = 0;
    auto make_index = [&](const Plan &plan) {
        index.reset();  // before the cache lends what it views
        Manifests m = read_through(&cache, all_yaml());
        index = std::make_unique<ServiceEndpoints>(m, plan, o);
        if (made++ % 3 == 2) {
            index->copy_objects();
            cache.give_back(std::move(m));
            return;
        }
        std::vector<std::pair<const EndpointSlice *, std::string>> read;
        for (const EndpointSlice &s : m.endpoint_slices) read.emplace_back(&s, s.meta.key());
        MovedObjects moved;
        cache.give_back(std::move(m), &moved);
        BOOST_TEST_REQUIRE(index->follow(moved));
        // it holds the cache's slices, no copies of them
        for (const auto &[was, key] : read) {
            if (index->slice(key) == nullptr) continue;  // of a Service no upstream uses
            BOOST_TEST(index->slice(key) == moved.where(was), key);
            viewed++;
        }
    };
    Plan plan = truth();
    make_index(plan);

    std::mt19937 random(20261127);
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    int fast = 0, resolved = 0;
    for (int round = 0; round < 400; round++) {
        // a few slices changed at once: made, replaced or deleted
        const int changes = 1 + pick(3);
        for (int c = 0; c < changes; c++) {
            EndpointSlice s;
            s.meta.namespace_ = pick(2) ? "ns" : "t1";
            const int service = pick(5);
            s.service_name = service < 3 ? "s" + std::to_string(service) : service == 3 ? "ext" : "nothing";
            s.meta.name = s.service_name + "-" + std::to_string(pick(2));
            const std::string key = s.meta.key();
            if (pick(5) == 0) {
                slices.erase(key);
                index->slice_changed(key, nullptr);
                continue;
            }
            s.ports.push_back({pick(2) ? "http" : "alt", 8000 + pick(2)});
            // mostly a few endpoints; at times enough to fill a zone of the
            // next size, or one the rules refuse (a warning)
            const int count = pick(6) == 0 ? 20 + pick(30) : pick(4);
            for (int a = 0; a < count; a++) s.ready_addresses.push_back("10.0." + std::to_string(pick(3)) + "." + std::to_string(pick(60)));
            if (pick(8) == 0) s.ready_addresses.push_back("169.254.0." + std::to_string(1 + pick(3)));
            slices[key] = s;
            index->slice_changed(key, &slices[key]);
        }
        const Plan want = truth();
        const bool skeleton_changes = skeleton(want, o) != skeleton(plan, o);
        const ServiceEndpoints::Update update = index->update(&plan);
        BOOST_TEST_CONTEXT("round " << round << "\n" << all_yaml())
        {
            BOOST_TEST(update.needs_resolve == skeleton_changes);
            if (update.needs_resolve) {
                resolved++;
                plan = want;
                make_index(plan);
                continue;
            }
            fast++;
            for (auto [got, wanted] : {std::pair{&plan.upstreams, &want.upstreams},
                                       std::pair{&plan.stream_upstreams, &want.stream_upstreams}}) {
                BOOST_TEST_REQUIRE(got->size() == wanted->size());
                for (size_t i = 0; i < got->size(); i++) {
                    BOOST_TEST((*got)[i].name == (*wanted)[i].name);
                    BOOST_TEST((*got)[i].servers == (*wanted)[i].servers, (*got)[i].name);
                }
            }
            for (const std::string &w : update.warnings) {
                BOOST_TEST((std::find(want.warnings.begin(), want.warnings.end(), w) != want.warnings.end()), w);
            }
        }
    }
    // both ways were taken, often
    BOOST_TEST(fast > 100);
    BOOST_TEST(resolved > 20);
    BOOST_TEST(viewed > 20);
}

BOOST_AUTO_TEST_CASE(an_upstream_rendered_with_its_servers_needs_resolve)
{
    // the upstream API off: every server is in the configuration
    const std::string yaml = web_route();
    Options o;
    const Manifests m = parse(yaml);
    Plan plan = resolve(m, o);
    ServiceEndpoints index(m, plan, o);
    EndpointSlice s;
    s.meta.namespace_ = "ns";
    s.meta.name = "web-1";
    s.service_name = "web";
    s.ports.push_back({"http", 8080});
    s.ready_addresses = {"10.0.0.1"};
    index.slice_changed(s.meta.key(), &s);
    BOOST_TEST(index.update(&plan).needs_resolve);
    BOOST_TEST(plan.upstreams.at(0).servers.empty());  // left as it was

    o.upstream_api = "127.0.0.1:9114";
    Plan api_plan = resolve(m, o);
    ServiceEndpoints api_index(m, api_plan, o);
    api_index.slice_changed(s.meta.key(), &s);
    const ServiceEndpoints::Update update = api_index.update(&api_plan);
    BOOST_TEST(!update.needs_resolve);
    BOOST_TEST_REQUIRE(update.changed.size() == 1u);
    BOOST_TEST(update.changed[0]->servers == std::vector<std::string>{"10.0.0.1:8080"});
}

// A Service changed keeps its upstreams' servers (later slices are read
// by its new ports), or needs resolve: gone, or other servers by its ports
BOOST_AUTO_TEST_CASE(a_service_change_keeps_its_servers_or_needs_resolve)
{
    const std::string slice = "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
                              "metadata: {name: web-1, namespace: ns, labels: {kubernetes.io/service-name: web}}\n"
                              "ports: [{name: http, port: 8080}]\nendpoints: [{addresses: [\"10.0.0.1\"]}]\n";
    auto service = [](const std::string &ports) {
        return parse("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns, labels: {a: b}}\n"
                     "spec:\n  ports: " + ports + "\n");
    };
    Options o;
    o.upstream_api = "127.0.0.1:9114";
    const Manifests m = parse(web_route() + slice);
    Plan plan = resolve(m, o);
    BOOST_TEST_REQUIRE(plan.upstreams.at(0).servers == std::vector<std::string>{"10.0.0.1:8080"});
    ServiceEndpoints index(m, plan, o);
    // a label, a port more, a Service no upstream uses: the same servers
    const Manifests labelled = service("[{name: http, port: 80}, {name: extra, port: 81}]");
    index.service_changed("ns/web", &labelled.services[0]);
    index.service_changed("ns/unused", nullptr);
    BOOST_TEST(!index.update(&plan).needs_resolve);
    // its port named otherwise: the slice's port is no longer its
    const Manifests renamed = service("[{name: web, port: 80}]");
    index.service_changed("ns/web", &renamed.services[0]);
    BOOST_TEST(index.update(&plan).needs_resolve);
    BOOST_TEST(plan.upstreams.at(0).servers == std::vector<std::string>{"10.0.0.1:8080"});  // left as it was
    index.service_changed("ns/web", nullptr);
    BOOST_TEST(index.update(&plan).needs_resolve);
    const Manifests no_port = service("[{name: http, port: 81}]");
    index.service_changed("ns/web", &no_port.services[0]);
    BOOST_TEST(index.update(&plan).needs_resolve);
}

BOOST_AUTO_TEST_CASE(two_slices_of_one_name_cannot_be_followed)
{
    std::string slice = "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
                        "metadata: {name: web-1, namespace: ns, labels: {kubernetes.io/service-name: web}}\n"
                        "ports: [{name: http, port: 8080}]\nendpoints: [{addresses: [\"10.0.0.1\"]}]\n";
    const std::string yaml = web_route() + slice + slice;
    Options o;
    o.upstream_api = "127.0.0.1:9114";
    const Manifests m = parse(yaml);
    BOOST_TEST(!ServiceEndpoints(m, resolve(m, o), o).usable());
}

BOOST_AUTO_TEST_SUITE_END()
