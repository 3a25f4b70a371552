// gateway2nginx run: what the upstream API changes without a reload, and
// how the watch-event stream is cut into events.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "gtls_routes_json.h"
#include "gtls_upstream_api.h"
#include "apply/reload.h"
#include "apply/upstream_api.h"
#include "plan/route_tables.h"
#include "plan/spare_assignment.h"
#include "plan/upstreams.h"
#include "render/render.h"
#include "run/debounce.h"
#include "run/digests.h"
#include "run/run.h"
#include "run/watch_events.h"
#include "test_support.h"

using namespace g2n;
using g2n_test::parse;

namespace {

const std::string kManifests = g2n_test::http_gateway() + R"(apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: ns}
spec: {type: ExternalName, externalName: db.example.com, ports: [{name: http, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {value: /web}}]
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /retried}}]
    retry: {attempts: 3, codes: [503]}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {value: /ext}}]
    backendRefs: [{name: ext, port: 80}]
)";

std::string slice(const std::string &addresses)
{
    return "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-1\n  namespace: ns\n"
           "  labels: {kubernetes.io/service-name: web}\nports: [{name: http, port: 8080}]\n"
           "endpoints: [{addresses: [" + addresses + "]}]\n";
}

Options with_api()
{
    Options o;
    o.upstream_api = "127.0.0.1:9114";
    return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(run_mode)

// gateway2nginx run resolves again and again, for weeks, as tenants' names
// come and go: what one resolve keeps (its status texts, what it made of CA
// bundles) goes with its Plan, nothing grows for the life of the process.
BOOST_AUTO_TEST_CASE(what_a_resolve_keeps_goes_with_its_plan)
{
    auto route_to = [](const std::string &service) {
        return g2n_test::http_gateway() + "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
               "metadata: {name: r, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
               "  rules: [{backendRefs: [{name: " + service + ", port: 80}]}]\n";
    };
    std::weak_ptr<TextTable> first_texts;
    size_t first_size = 0;
    {
        Plan first = resolve(parse(route_to("gone-0")), Options{});
        first_texts = first.texts;
        first_size = first.texts->size();
        const Plan second = resolve(parse(route_to("gone-1")), Options{});
        BOOST_TEST(second.texts != first.texts);
        BOOST_TEST(first.texts->size() == first_size);  // the second's "Service ns/gone-1 does not exist" is its own
        bool said = false;
        for (const ObjectStatus &st : *second.statuses) {
            for (const ObjectStatus::RefStatus &ref : st.refs) {
                for (const Condition &c : ref.conditions) said |= c.message.find("gone-1") != std::string_view::npos;
            }
        }
        BOOST_TEST(said);
        const Plan copy = first;  // a copy views the same texts
        BOOST_TEST(copy.texts == first.texts);
    }
    BOOST_TEST(first_texts.expired(), "freed with the last Plan that views them");
    BOOST_CHECK_THROW(intern("outside"), std::logic_error);
}

BOOST_AUTO_TEST_CASE(a_namespace_s_upstreams_share_a_zone_and_the_api_listens_on_loopback)
{
    Plan plan = resolve(parse(kManifests + slice(R"("10.0.0.1", "fd00::2")")), with_api());
    const std::string http = render_http_conf(plan, with_api());
    BOOST_TEST(http.find("zone gateway2nginx_servers_ns 128k;") != std::string::npos);
    // 4k an upstream, and 64k for the lists of up to 256 servers
    BOOST_TEST(http.find("gateway_tls_upstream_state_zone 1096k;") != std::string::npos);
    BOOST_TEST(http.find("listen 127.0.0.1:9114;") != std::string::npos);
    BOOST_TEST(http.find("gateway_tls_upstream_api_allow 127.0.0.1 ::1;") != std::string::npos);
    size_t zoned = 0, replaceable = 0;
    for (size_t at = 0; (at = http.find("zone gateway2nginx_servers_ns;", at)) != std::string::npos; at++) zoned++;
    for (const Upstream &u : plan.upstreams) replaceable += api_replaceable(u);
    BOOST_TEST(replaceable == 2u);  // web, and web for the retried rule
    BOOST_TEST(zoned == replaceable);
    // a name is resolved when nginx loads it: never replaceable
    for (const Upstream &u : plan.upstreams) {
        if (u.comment.find("ext") != std::string::npos) BOOST_TEST(!api_replaceable(u));
    }
    // without --upstream-api: no zone, no API
    const std::string plain = render_http_conf(plan, Options{});
    BOOST_TEST(plain.find("gateway2nginx_servers") == std::string::npos);
    BOOST_TEST(plain.find("gateway_tls_upstream_api") == std::string::npos);
}

namespace {

// The zone line of each namespace: tenant -> kilobytes
std::map<std::string, size_t> servers_zones(const std::string &http)
{
    std::map<std::string, size_t> zones;
    const std::string prefix = "    zone gateway2nginx_servers_";
    for (size_t at = 0; (at = http.find(prefix, at)) != std::string::npos; at++) {
        const size_t name_end = http.find(' ', at + prefix.size());
        if (name_end > http.find('\n', at)) continue;  // an upstream's "zone NAME;"
        zones[http.substr(at + prefix.size(), name_end - at - prefix.size())] = std::stoul(http.substr(name_end + 1));
    }
    return zones;
}

// What is sized from all tenants' servers together: the state zone, and
// the API's body limit
std::string shared_sizes(const std::string &http)
{
    std::string sizes;
    for (const char *directive : {"gateway_tls_upstream_state_zone ", "client_max_body_size "}) {
        const size_t at = http.find(directive);
        if (at != std::string::npos) sizes += http.substr(at, http.find('\n', at) - at);
    }
    return sizes;
}

size_t body_limit(const std::string &http)
{
    const size_t at = http.find("client_max_body_size ");
    return at == std::string::npos ? 0 : std::stoul(http.substr(at + 21)) * 1024;
}

Upstream endpoints_of(const std::string &tenant, size_t count)
{
    Upstream u;
    u.name = "backend_" + tenant + "_web_80";
    u.tenant = tenant;
    u.for_http = true;
    for (size_t i = 0; i < count; i++) u.servers.push_back("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":80");
    return u;
}

}  // namespace

// The class of finding 4 of issue 35 (a shared budget one tenant fills):
// whatever the servers of two tenants, each tenant's zone holds its own (2
// KB a server) and does not depend on the other's; the skeleton, and so a
// reload, changes only when a tenant's count crosses a power of two (or
// all lists together cross one in the state zone or the API's body
// limit), and the body limit holds twice the largest push.
BOOST_AUTO_TEST_CASE(each_tenant_s_zone_holds_its_servers_whatever_the_other_s)
{
    std::mt19937 random(35);
    Options skeleton = with_api();
    skeleton.endpoint_skeleton = true;
    for (int round = 0; round < 40; round++) {
        // up to 5,000 servers: buckets from 128 KB to 16 MB (the test runs under valgrind too)
        const size_t mine = random() % 5000, theirs = random() % 5000, theirs_later = random() % 5000;
        Plan plan, later;
        plan.upstreams = {endpoints_of("mine", mine), endpoints_of("theirs", theirs)};
        later.upstreams = {endpoints_of("mine", mine), endpoints_of("theirs", theirs_later)};
        const std::map<std::string, size_t> zones = servers_zones(render_http_conf(plan, with_api()));
        const std::map<std::string, size_t> zones_later = servers_zones(render_http_conf(later, with_api()));
        BOOST_TEST_REQUIRE(zones.size() == 2u);
        BOOST_TEST(zones.at("mine") * 1024 >= 2048 * mine);
        BOOST_TEST(zones.at("theirs") * 1024 >= 2048 * theirs);
        BOOST_TEST(zones_later.at("mine") == zones.at("mine"));
        BOOST_TEST((render_http_conf(plan, skeleton) == render_http_conf(later, skeleton))
                   == (zones.at("theirs") == zones_later.at("theirs")
                       && shared_sizes(render_http_conf(plan, with_api()))
                              == shared_sizes(render_http_conf(later, with_api()))));
        // the largest push gateway2nginx makes fits the API's body limit
        BOOST_TEST(2 * api_body(api_content(plan, with_api())).size() <= body_limit(render_http_conf(plan, with_api())));
    }
}

BOOST_AUTO_TEST_CASE(the_api_gets_the_servers_nginx_would_be_given)
{
    Plan plan = resolve(parse(kManifests + slice(R"("10.0.0.1", "fd00::2")")), with_api());
    for (const Upstream &u : plan.upstreams) {
        if (!api_replaceable(u)) continue;
        std::vector<gtls::UpstreamServer> servers = gtls::parse_server_list(upstream_servers_api_json(u));
        const std::vector<ServerLine> lines = upstream_server_lines(u);
        BOOST_TEST_REQUIRE(servers.size() == lines.size());
        for (size_t i = 0; i < lines.size(); i++) {
            BOOST_TEST(servers[i].address == lines[i].address);
            BOOST_TEST(servers[i].max_fails == (lines[i].max_fails_off ? 0u : 1u));
        }
        // the retried rule lists each server often enough for 4 tries
        if (u.tries > 1) BOOST_TEST(servers.size() == 4u);
    }
}

BOOST_AUTO_TEST_CASE(the_skeleton_leaves_out_exactly_the_replaceable_servers)
{
    Options skeleton = with_api();
    skeleton.endpoint_skeleton = true;
    auto http = [&](const std::string &addresses, const Options &o) {
        return render_http_conf(resolve(parse(kManifests + slice(addresses)), o), o);
    };
    // other endpoints: the same skeleton, other servers
    BOOST_TEST(http(R"("10.0.0.1")", skeleton) == http(R"("10.0.0.7", "10.0.0.8")", skeleton));
    BOOST_TEST(http(R"("10.0.0.1")", with_api()) != http(R"("10.0.0.7", "10.0.0.8")", with_api()));
    BOOST_TEST(http(R"("10.0.0.1")", skeleton).find("10.0.0.1") == std::string::npos);
    // the ExternalName's server stays in the skeleton: changing it reloads
    BOOST_TEST(http(R"("10.0.0.1")", skeleton).find("db.example.com:80") != std::string::npos);
    // to and from no endpoints at all (a Service scaled to zero, its
    // EndpointSlice empty or gone): the same skeleton too
    BOOST_TEST(http(R"("10.0.0.1")", skeleton) == http("", skeleton));
    BOOST_TEST(http(R"("10.0.0.1")", skeleton) == render_http_conf(resolve(parse(kManifests), skeleton), skeleton));
}

BOOST_AUTO_TEST_CASE(a_service_without_endpoints_is_replaceable_and_empty)
{
    for (const std::string &manifests : {kManifests, kManifests + slice("")}) {
        Plan plan = resolve(parse(manifests), with_api());
        size_t replaceable = 0;
        for (const Upstream &u : plan.upstreams) {
            if (!api_replaceable(u)) continue;
            replaceable++;
            BOOST_TEST(u.servers.empty());
            BOOST_TEST(upstream_servers_api_json(u) == "[]");  // 502 until endpoints are pushed
        }
        BOOST_TEST(replaceable == 2u);
        // nginx wants a server in each upstream{}: one that is never used
        const std::string http = render_http_conf(plan, with_api());
        BOOST_TEST(http.find("    zone gateway2nginx_servers_ns;\n    # no ready endpoints (with --resolver, the cluster DNS "
                             "name is used)\n    server 127.0.0.1:1 down;\n")
                   != std::string::npos);
    }
}

namespace {

// Service web behind a BackendTLSPolicy whose CA ConfigMap holds `ca_file`
// (of the test certificates), `mode` its GEP-4152 mode when not strict
std::string with_policy(const std::string &ca_file, const std::string &mode = "")
{
    return kManifests + slice(R"("10.0.0.1")")
           + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ca, namespace: ns}\ndata:\n  ca.crt: |\n"
           + g2n_test::yaml_block(g2n_test::test_cert_file(ca_file), 4)
           + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: web-tls, namespace: ns}\n"
             "spec:\n  targetRefs: [{group: \"\", kind: Service, name: web}]\n  validation:\n"
             "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n    hostname: web.example.com\n"
           + (mode.empty() ? "" : "    mode: " + mode + "\n");
}

// --routes table --spare-backends 1
Options with_spares()
{
    Options o = with_api();
    o.routes = "table";
    o.spare_backends = 1;
    return o;
}

// A Service ns/NAME (port 80 to ADDRESS:8080) and an HTTPRoute ns/ROUTE on
// hostname ROUTE.example sending everything to Service ns/TO
std::string service_and_route(const std::string &name, const std::string &address, const std::string &route,
                              const std::string &to)
{
    return "---\napiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: ns}\n"
           "spec:\n  ports: [{name: http, port: 80}]\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
           "metadata:\n  name: " + name + "-1\n  namespace: ns\n  labels: {kubernetes.io/service-name: " + name
           + "}\nports: [{name: http, port: 8080}]\nendpoints: [{addresses: [\"" + address + "\"]}]\n"
           "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + route
           + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [" + route
           + ".example]\n  rules: [{backendRefs: [{name: " + to + ", port: 80}]}]\n";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_ca_change_is_trust_the_api_replaces)
{
    Options skeleton = with_api();
    skeleton.endpoint_skeleton = true;
    Plan before = resolve(parse(with_policy("ca.crt")), with_api());
    Plan after = resolve(parse(with_policy("unrelated-ca.crt")), with_api());
    const auto policies = trust_replaceable_policies(before, with_api());
    BOOST_TEST_REQUIRE(policies.size() == 1u);
    BOOST_TEST(policies.begin()->first == "ns/web-tls");
    // the skeleton is the same, the configuration is not
    BOOST_TEST(render_http_conf(before, skeleton) == render_http_conf(after, skeleton));
    BOOST_TEST(render_http_conf(before, with_api()) != render_http_conf(after, with_api()));
    BOOST_TEST(render_http_conf(before, skeleton).find("# trust replaceable at run time") != std::string::npos);
    BOOST_TEST(render_http_conf(before, skeleton).find("proxy_ssl_verify_ca") == std::string::npos);
    // and the API is given the new bundle itself
    const ApiContent content = api_content(after, with_api());
    BOOST_TEST_REQUIRE(content.trust.count("ns/web-tls") == 1u);
    gtls::PolicyTrust trust = gtls::parse_policy_trust(content.trust.at("ns/web-tls"), "ns/web-tls");
    BOOST_TEST(trust.ca == g2n_test::test_cert_file("unrelated-ca.crt"));
    ApiHeld digests;
    BOOST_TEST(api_body(content.changed_since(ApiHeld::of(api_content(before, with_api())), &digests))
               == "{\"policies\":{\"ns/web-tls\":" + content.trust.at("ns/web-tls") + "}}");
    // what run then holds as pushed: every entry's digest, as ApiHeld::of gives
    const ApiHeld all = ApiHeld::of(content);
    BOOST_TEST((digests.servers == all.servers && digests.stream_servers == all.stream_servers
                && digests.trust == all.trust));
    // the state zone has room for the trust pushed (16k a policy), whatever its size
    BOOST_TEST(render_http_conf(before, with_api()).find("gateway_tls_upstream_state_zone 1112k;") != std::string::npos);
    BOOST_TEST(render_http_conf(after, with_api()).find("gateway_tls_upstream_state_zone 1112k;") != std::string::npos);
    // without the API: nothing is replaceable, and the CA is written as ever
    BOOST_TEST(trust_replaceable_policies(before, Options{}).empty());
}

// A policy's hostname and SANs change with no reload where the module
// takes them pushed (every scope an upstream{} of http{}); where a
// stream{} server sends the name too, they stay the reload's.
BOOST_AUTO_TEST_CASE(a_hostname_or_san_change_is_pushed_with_the_trust)
{
    Options skeleton = with_api();
    skeleton.endpoint_skeleton = true;
    const std::string hostname = "    hostname: web.example.com\n";
    auto named = [&](const std::string &names) {
        std::string yaml = with_policy("ca.crt");
        yaml.replace(yaml.find(hostname), hostname.size(), names);
        return yaml;
    };
    Plan before = resolve(parse(with_policy("ca.crt")), with_api());
    Plan renamed = resolve(parse(named("    hostname: other.example.com\n")), with_api());
    Plan with_sans = resolve(parse(named(hostname + "    subjectAltNames: [{type: Hostname, hostname: "
                                                    "san.example.com}]\n")),
                             with_api());
    BOOST_TEST(render_http_conf(before, skeleton) == render_http_conf(renamed, skeleton));
    BOOST_TEST(render_http_conf(before, skeleton) == render_http_conf(with_sans, skeleton));
    BOOST_TEST(render_http_conf(before, skeleton).find("# names replaceable at run time") != std::string::npos);
    BOOST_TEST(render_http_conf(before, with_api()) != render_http_conf(renamed, with_api()));
    // the API is given the names, each change a push of that policy
    const gtls::PolicyTrust trust =
        gtls::parse_policy_trust(api_content(renamed, with_api()).trust.at("ns/web-tls"), "ns/web-tls");
    BOOST_TEST((trust.hostname && *trust.hostname == "other.example.com"));
    const gtls::PolicyTrust sans =
        gtls::parse_policy_trust(api_content(with_sans, with_api()).trust.at("ns/web-tls"), "ns/web-tls");
    BOOST_TEST_REQUIRE(sans.subject_alt_names.has_value());
    BOOST_TEST(sans.subject_alt_names->size() == 1u);
    ApiHeld digests;
    BOOST_TEST(api_content(renamed, with_api())
                   .changed_since(ApiHeld::of(api_content(before, with_api())), &digests)
                   .trust.size()
               == 1u);
    // without the API, the names are rendered as ever
    BOOST_TEST(render_http_conf(before, Options{}).find("proxy_ssl_policy_hostname web.example.com;")
               != std::string::npos);
    // also in stream{}: the names stay the skeleton's, and are not pushed
    Plan streamed = resolve(parse(with_policy("ca.crt")), with_api());
    for (Upstream &u : streamed.upstreams) {
        if (!u.tls()) continue;
        auto unmarked = std::make_shared<UpstreamPolicy>(*u.policy);
        unmarked->names_pushed = false;
        u.policy = std::move(unmarked);
        streamed.stream_upstreams.push_back(u);
    }
    plan_pushed_names(&streamed, with_api());
    BOOST_TEST(render_http_conf(streamed, skeleton).find("proxy_ssl_policy_hostname web.example.com;")
               != std::string::npos);
    BOOST_TEST(!gtls::parse_policy_trust(api_content(streamed, with_api()).trust.at("ns/web-tls"), "ns/web-tls")
                    .hostname.has_value());
}

// What is kept from plans before (trust digests by what the JSON is made
// of, table entries read back by their rules) gives what computing afresh
// gives, whatever came before: plans that differ in one thing, in turns.
BOOST_AUTO_TEST_CASE(what_earlier_plans_left_gives_what_computing_afresh_gives)
{
    Options table = with_api();
    table.routes = "table";
    const std::string hostname = "    hostname: web.example.com\n";
    auto variant = [&](int i) {
        std::string yaml = with_policy(i % 2 == 0 ? "ca.crt" : "unrelated-ca.crt");
        if (i % 3 == 1) yaml.replace(yaml.find(hostname), hostname.size(), "    hostname: other.example.com\n");
        const std::string path = "{value: /web}";
        if (i % 4 == 2) yaml.replace(yaml.find(path), path.size(), "{value: /moved}");
        // the endpoints, and how many tries a rule has (its server lines)
        const std::string endpoints = R"(endpoints: [{addresses: ["10.0.0.1"]}])";
        const char *moved[] = {R"(["10.0.0.1"])", R"(["10.0.0.1", "10.0.0.2"])", R"(["fd00::3"])"};
        yaml.replace(yaml.find(endpoints), endpoints.size(),
                     std::string("endpoints: [{addresses: ") + moved[i % 3] + "}]");
        if (i % 2 == 1) {
            const std::string tries = "attempts: 3";
            yaml.replace(yaml.find(tries), tries.size(), "attempts: 5");
        }
        return yaml;
    };
    for (int round = 0; round < 12; round++) {
        const Plan plan = resolve(parse(variant(round * 5 % 7)), table);
        const ApiHeld held = ApiHeld::of(plan, table);
        const ApiHeld afresh = ApiHeld::of(api_content(plan, table));
        for (int section = 0; section < kApiSections; section++) {
            BOOST_TEST((held.list(section) == afresh.list(section)), "round " << round << ", section " << section);
        }
        BOOST_TEST_REQUIRE(!plan.servers.empty());
        for (const Server &s : plan.servers) {
            if (!s.in_table()) continue;
            std::string why;
            const auto entry = table_entry(s, &why);
            BOOST_TEST_REQUIRE(entry != nullptr, why);
            BOOST_TEST(s.table_json == gtls::host_routes_json(*entry), "round " << round);
        }
    }
}

// A hostname with more rules than the module's table takes per hostname
// stays rendered locations, every route served; one rule fewer is the
// table's.
BOOST_AUTO_TEST_CASE(a_hostname_past_the_table_s_bound_stays_locations)
{
    Options table = with_api();
    table.routes = "table";
    auto routes = [](size_t n) {
        std::string yaml = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
                           "metadata: {name: many, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
                           "  hostnames: [many.example]\n  rules:\n";
        for (size_t i = 0; i < n; i++) {
            yaml += "  - matches: [{path: {type: Exact, value: /p" + std::to_string(i)
                    + "}}]\n    backendRefs: [{name: web, port: 80}]\n";
        }
        return yaml;
    };
    const std::string base = kManifests + slice(R"("10.0.0.1")");
    // (an Exact path is one rule; the route's rules past 16 are its own routes' business)
    auto server_of = [](const Plan &plan) {
        auto s = std::find_if(plan.servers.begin(), plan.servers.end(),
                              [](const Server &sv) { return sv.server_name == "many.example"; });
        BOOST_TEST_REQUIRE((s != plan.servers.end()));
        return *s;
    };
    const Server within = server_of(resolve(parse(base + routes(gtls::kMaxHostMatches - 1)), table));
    BOOST_TEST(within.in_table());
    const Server past = server_of(resolve(parse(base + routes(gtls::kMaxHostMatches + 1)), table));
    BOOST_TEST(!past.in_table());
    BOOST_TEST(past.table_refusal.find("the table refuses it") == 0u, past.table_refusal);
    BOOST_TEST(past.locations.size() >= gtls::kMaxHostMatches + 1);
}

// --routes table: the API holds each hostname's rules; a change costs the
// hostnames it touches, a hostname the plan lost is removed, and part of a
// plan (what an EndpointSlice changes) removes nothing.
BOOST_AUTO_TEST_CASE(route_table_entries_are_pushed_hostname_by_hostname)
{
    Options table = with_api();
    table.routes = "table";
    auto route = [](const std::string &name, const std::string &host, const std::string &path) {
        return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name
               + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [" + host
               + "]\n  rules: [{matches: [{path: {value: " + path + "}}], backendRefs: [{name: web, port: 80}]}]\n";
    };
    const std::string base = kManifests + slice(R"("10.0.0.1")");
    const Plan before = resolve(parse(base + route("a", "a.example", "/a") + route("b", "b.example", "/b")), table);
    const ApiContent content = api_content(before, table);
    BOOST_TEST_REQUIRE(content.routes.count(route_entry_key("port_80", "a.example")) == 1u);
    BOOST_TEST(content.routes.count(route_entry_key("port_80", "b.example")) == 1u);
    BOOST_TEST(content.routes.count(route_entry_key("port_80", "*")) == 1u);  // route r has no hostname
    BOOST_TEST(api_content(resolve(parse(base + route("a", "a.example", "/a")), with_api()), with_api()).routes.empty(),
               "rendered locations hold their routes");
    // the body the module takes: a table's hostnames together
    const std::string body = api_body(content);
    BOOST_TEST(body.find("\"routes\":{\"port_80\":{\"*\":{") != std::string::npos, body);
    BOOST_TEST(gtls::parse_api_update(body).has_routes);

    const ApiHeld held = ApiHeld::of(content);
    ApiHeld now;
    // b.example's path changes, a.example's route goes, c.example's comes
    const Plan after = resolve(parse(base + route("b", "b.example", "/b2") + route("c", "c.example", "/c")), table);
    const ApiContent changed = api_changes(after, table, held, &now);
    std::vector<std::string> keys;
    for (const auto &[key, json] : changed.routes) keys.push_back(key + (json == "null" ? " removed" : ""));
    BOOST_TEST(keys == (std::vector<std::string>{"port_80 a.example removed", "port_80 b.example", "port_80 c.example"}),
               boost::test_tools::per_element());
    BOOST_TEST(changed.servers.empty());
    BOOST_TEST(api_body(changed).find("\"a.example\":null") != std::string::npos);
    ApiHeld pushed = held;
    pushed.hold(changed);
    BOOST_TEST(pushed.routes == now.routes, "what is held after the push is what the plan has");
    // part of a plan removes nothing
    ApiContent servers_only;
    servers_only.servers = content.servers;
    BOOST_TEST(servers_only.changed_since(held).routes.empty());
}

// --routes table: a route hostname its listener's own server would be
// given by nginx anyway has no server{} of its own, so that a hostname
// coming or going leaves the skeleton (and nginx) as it is; one that
// server cannot serve for it (CORS keeps locations) keeps its own.
BOOST_AUTO_TEST_CASE(route_hostnames_new_to_a_listener_need_no_server_of_their_own)
{
    Options table = with_api();
    table.routes = "table";
    std::string gateway = g2n_test::http_gateway();
    const std::string one = "  - {name: http, port: 80, protocol: HTTP}\n";
    BOOST_TEST_REQUIRE(gateway.find(one) != std::string::npos);
    gateway.replace(gateway.find(one), one.size(),
                    one + "  - {name: wild, port: 80, protocol: HTTP, hostname: \"*.example.com\"}\n");
    auto route = [](const std::string &name, const std::string &host, const std::string &filter) {
        return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name
               + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [" + host
               + "]\n  rules: [{" + filter + "backendRefs: [{name: web, port: 80}]}]\n";
    };
    const std::string cors = "filters: [{type: CORS, cors: {allowOrigins: [\"https://app.example\"]}}], ";
    const std::string base = gateway + kManifests.substr(g2n_test::http_gateway().size()) + slice(R"("10.0.0.1")")
                             + route("a", "a.example.com", "") + route("x", "x.other.org", "")
                             + route("c", "c.example.com", cors);
    const Plan before = resolve(parse(base), table);
    std::set<std::string> servers;
    for (const Server &s : before.servers) servers.insert(s.server_name + (s.served_by_listener ? " by listener" : ""));
    const std::set<std::string> wanted{"",  // the hostname-less listener's: routes r and x.other.org
                                       "*.example.com",  // listener wild's: a.example.com
                                       "a.example.com by listener", "x.other.org by listener",
                                       "c.example.com"};  // CORS: rendered locations
    BOOST_TEST(servers == wanted, boost::test_tools::per_element());
    const std::string http = render_http_conf(before, table);
    BOOST_TEST(http.find("server_name a.example.com;") == std::string::npos);
    BOOST_TEST(http.find("server_name c.example.com;") != std::string::npos);
    BOOST_TEST(api_content(before, table).routes.count(route_entry_key("port_80", "a.example.com")) == 1u);
    // a hostname new to either listener, and one gone: the same skeleton
    const Plan after = resolve(parse(base + route("d", "d.example.com", "") + route("y", "y.other.org", "")), table);
    BOOST_TEST(skeleton_digest(after, table) == skeleton_digest(before, table));
    const Plan fewer = resolve(parse(gateway + kManifests.substr(g2n_test::http_gateway().size())
                                     + slice(R"("10.0.0.1")") + route("c", "c.example.com", cors)), table);
    BOOST_TEST(skeleton_digest(fewer, table) == skeleton_digest(before, table));
    // with locations, every hostname is a server{}: a new one reloads
    BOOST_TEST(skeleton_digest(resolve(parse(base), with_api()), with_api())
               != skeleton_digest(resolve(parse(base + route("d", "d.example.com", "")), with_api()), with_api()));
}

// --spare-backends: a backend nginx runs in plaintext whose Service a
// BackendTLSPolicy now targets takes a TLS spare's place, its upstream{}
// kept as nginx runs it (serving nothing): no reload; the policy gone
// again, it is nginx's own upstream{} once more, as it runs it
BOOST_AUTO_TEST_CASE(a_backend_whose_tls_turns_on_takes_a_spare_s_place)
{
    Options table = with_spares();
    table.spare_backends = 2;  // web's two backends (one with retries)
    Options skeleton = table;
    skeleton.endpoint_skeleton = true;
    const std::string plain = kManifests + slice(R"("10.0.0.1")");
    const Plan running = resolve(parse(plain), table);
    std::set<std::string> names;
    for (const Upstream &u : running.upstreams) {
        if (u.tenant != kSpareTenant) names.insert(u.name);
    }
    BOOST_TEST_REQUIRE(names.count("backend_ns_web_80") == 1u);
    Plan plan = resolve(parse(with_policy("ca.crt")), table);
    BOOST_TEST_REQUIRE(skeleton_digest(plan, table) != skeleton_digest(running, table));
    // (without what nginx runs, it is no backend new to nginx)
    Plan by_names = plan;
    BOOST_TEST(assign_spares(&by_names, names, {}).empty());
    const SpareAssignment assigned = assign_spares(&plan, names, {}, &running.upstreams);
    BOOST_TEST_REQUIRE(assigned.size() == 2u);
    BOOST_TEST(assigned.at("backend_ns_web_80") == "gateway2nginx_spare_tls_0");
    BOOST_TEST(assigned.at("backend_ns_web_80_tries4") == "gateway2nginx_spare_tls_1");
    BOOST_TEST(render_http_conf(plan, skeleton) == render_http_conf(running, skeleton));
    const ApiContent content = api_content(plan, table);
    BOOST_TEST(content.trust.count("spare|0") == 1u);  // the CA pushed to the spare's policy
    BOOST_TEST(content.servers.at("gateway2nginx_spare_tls_0").find("10.0.0.1:8080") != std::string::npos);
    for (const auto &[key, entry] : content.routes) {
        BOOST_TEST(entry.find("backend_ns_web_80") == std::string::npos, key);
    }
    // kept where it is
    Plan again = resolve(parse(with_policy("ca.crt")), table);
    BOOST_TEST(assign_spares(&again, names, assigned, &plan.upstreams) == assigned);
    BOOST_TEST(render_http_conf(again, skeleton) == render_http_conf(running, skeleton));
    // the policy deleted: nginx's own upstream{} again, no spare
    Plan back = resolve(parse(plain), table);
    BOOST_TEST(assign_spares(&back, names, assigned, &again.upstreams).empty());
    BOOST_TEST(render_http_conf(back, skeleton) == render_http_conf(running, skeleton));
}

// --spare-backends: a Service new to the nginx that runs takes a spare's
// place, the skeleton as it was; its servers, policy and names go to the
// spare's, and the table names the spare.
BOOST_AUTO_TEST_CASE(a_backend_new_to_nginx_takes_a_spare_s_place)
{
    const Options table = with_spares();
    Options skeleton = table;
    skeleton.endpoint_skeleton = true;
    const std::string base = with_policy("ca.crt") + slice(R"("10.0.0.1")");
    auto service = [](const std::string &name, const std::string &address) {
        return service_and_route(name, address, name, name);
    };
    const Plan running = resolve(parse(base), table);
    std::set<std::string> names;
    for (const Upstream &u : running.upstreams) {
        if (u.tenant != kSpareTenant) names.insert(u.name);
    }
    Plan plan = resolve(parse(base + service("fresh", "10.0.0.9")), table);
    BOOST_TEST(skeleton_digest(plan, table) != skeleton_digest(running, table));
    const SpareAssignment assigned = assign_spares(&plan, names, {});
    BOOST_TEST_REQUIRE(assigned.size() == 1u);
    BOOST_TEST(assigned.begin()->first == "backend_ns_fresh_80");
    BOOST_TEST(assigned.begin()->second == "gateway2nginx_spare_plain_0");
    BOOST_TEST(render_http_conf(plan, skeleton) == render_http_conf(running, skeleton));
    const ApiContent content = api_content(plan, table);
    BOOST_TEST(content.servers.at("gateway2nginx_spare_plain_0").find("10.0.0.9:8080") != std::string::npos);
    BOOST_TEST(content.routes.at(route_entry_key("port_80", "fresh.example")).find("gateway2nginx_spare_plain_0")
               != std::string::npos);
    BOOST_TEST(content.servers.count("backend_ns_fresh_80") == 0u);
    // kept where it is; and gone with its route, the spare is free again
    Plan again = resolve(parse(base + service("fresh", "10.0.0.10")), table);
    BOOST_TEST(assign_spares(&again, names, assigned) == assigned);
    Plan without = resolve(parse(base), table);
    BOOST_TEST(assign_spares(&without, names, assigned).empty());

    // what a tenant writes that holds the backend's name as the table's
    // JSON names it (a header value, a path) is text, and stays as it was:
    // only the rules' backends name the spare
    const std::string quoted = "'\"backend\":\"backend_ns_fresh_80\"'";
    std::string tricky = base + service("fresh", "10.0.0.9");
    const std::string rules = "  rules: [{backendRefs: [{name: fresh, port: 80}]}]\n";
    BOOST_TEST_REQUIRE(tricky.find(rules) != std::string::npos);
    tricky.replace(tricky.find(rules), rules.size(),
                   "  rules:\n  - matches: [{path: {value: /backend_ns_fresh_80}}]\n"
                   "    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-note, value: "
                       + quoted + "}]}}]\n    backendRefs: [{name: fresh, port: 80}]\n");
    Plan named = resolve(parse(tricky), table);
    BOOST_TEST_REQUIRE(assign_spares(&named, names, {}).size() == 1u);
    const std::string host = route_entry_key("port_80", "fresh.example");
    const auto entry = gtls::parse_host_routes(api_content(named, table).routes.at(host), "fresh.example");
    size_t backends = 0, notes = 0;
    for (const gtls::RouteAction &a : entry->actions()) {
        for (const gtls::WeightedBackend &b : a.backends) {
            BOOST_TEST(b.backend == "gateway2nginx_spare_plain_0");
            backends++;
        }
        for (const gtls::HeaderValue &h : a.request_headers.set) {
            BOOST_TEST(h.value == "\"backend\":\"backend_ns_fresh_80\"");
            notes++;
        }
    }
    BOOST_TEST(backends >= 1u);
    BOOST_TEST(notes >= 1u);  // (a prefix is two locations, each an action)
    bool path_kept = false;
    for (const gtls::RouteMatch &m : entry->matches()) path_kept |= m.path == "/backend_ns_fresh_80";
    BOOST_TEST(path_kept);
}

// The state zone is sized from the route tables' text, measured with no
// copy of it made: the same walk as the text itself
BOOST_AUTO_TEST_CASE(the_route_tables_are_measured_as_they_are_written)
{
    const Options table = with_spares();
    std::string routes = kManifests + slice(R"("10.0.0.1")");
    for (const std::string route : {"a", "b", "c"}) {
        routes += service_and_route("svc-" + route, "10.0.0.9", route, "svc-" + route);
    }
    const Plan plan = resolve(parse(routes), table);
    size_t in_table = 0;
    for (const Server &s : plan.servers) in_table += s.in_table();
    BOOST_TEST_REQUIRE(in_table >= 3u);
    BOOST_TEST(route_tables_size(plan) == render_route_tables(plan, table).size());
    BOOST_TEST(route_tables_size(Plan()) == render_route_tables(Plan(), table).size());
}

// --routes table: a backend no route names any more stays in the
// configuration nginx runs until a reload; one route's backend replaced
// by a Service new to nginx (a spare takes it) changes nothing nginx was
// configured with.
BOOST_AUTO_TEST_CASE(a_backend_no_route_names_stays_until_a_reload)
{
    const Options table = with_spares();
    Options skeleton = table;
    skeleton.endpoint_skeleton = true;
    const std::string base = with_policy("ca.crt") + slice(R"("10.0.0.1")");
    auto service = [](const std::string &name, const std::string &address, const std::string &route_to) {
        return service_and_route(name, address, "app", route_to);
    };
    const Plan running = resolve(parse(base + service("old", "10.0.0.8", "old")), table);
    std::set<std::string> names;
    for (const Upstream &u : running.upstreams) {
        if (u.tenant != kSpareTenant) names.insert(u.name);
    }
    BOOST_TEST_REQUIRE(names.count("backend_ns_old_80") == 1u);
    const std::string replaced = base + service("fresh", "10.0.0.9", "fresh");
    Plan spared = resolve(parse(replaced), table);
    BOOST_TEST(assign_spares(&spared, names, {}).size() == 1u);
    BOOST_TEST(render_http_conf(spared, skeleton) != render_http_conf(running, skeleton), "the old one's upstream{} gone");
    Plan plan = resolve(parse(replaced), table);
    BOOST_TEST(retain_upstreams(&plan, running.upstreams) == 1u);
    BOOST_TEST(assign_spares(&plan, names, {}).size() == 1u);
    BOOST_TEST(render_http_conf(plan, skeleton) == render_http_conf(running, skeleton));
    // its servers as nginx holds them: nothing pushed for it; the route to the spare
    const ApiContent content = api_content(plan, table);
    BOOST_TEST(content.servers.at("backend_ns_old_80") == api_content(running, table).servers.at("backend_ns_old_80"));
    BOOST_TEST(content.routes.at(route_entry_key("port_80", "app.example")).find("gateway2nginx_spare_plain_0")
               != std::string::npos);
    // kept again from a plan that kept it; nothing when nothing was dropped
    Plan again = resolve(parse(replaced), table);
    BOOST_TEST(retain_upstreams(&again, plan.upstreams) == 1u);
    Plan same = resolve(parse(base + service("old", "10.0.0.8", "old")), table);
    BOOST_TEST(retain_upstreams(&same, running.upstreams) == 0u);
    // not one whose policy's CA bundle went with it: OUTDIR would name a file it lacks
    const std::string own_policy =
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: old-ca, namespace: ns}\ndata:\n  ca.crt: |\n"
        + g2n_test::yaml_block(g2n_test::test_cert_file("unrelated-ca.crt"), 4)
        + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: old-tls, namespace: ns}\n"
          "spec:\n  targetRefs: [{group: \"\", kind: Service, name: old}]\n  validation:\n"
          "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: old-ca}]\n    hostname: old.example.com\n";
    const Plan verified = resolve(parse(base + service("old", "10.0.0.8", "old") + own_policy), table);
    Plan without = resolve(parse(replaced), table);
    BOOST_TEST(retain_upstreams(&without, verified.upstreams) == 0u);
    for (const Upstream &u : without.upstreams) BOOST_TEST(u.name != "backend_ns_old_80");
}

// A reload says what it is for: the first part of the skeleton that
// changed, listeners before backends before routes.
BOOST_AUTO_TEST_CASE(a_reload_is_counted_by_what_it_changes)
{
    const std::string base = kManifests + slice(R"("10.0.0.1")");
    const SkeletonParts before = skeleton_parts(resolve(parse(base), with_api()), with_api());
    auto reason = [&](const std::string &manifests) {
        return kReloadReasons[static_cast<size_t>(
            reload_reason(before, skeleton_parts(resolve(parse(manifests), with_api()), with_api())))];
    };
    std::string moved = base;
    const std::string path = "{value: /web}";
    moved.replace(moved.find(path), path.size(), "{value: /moved}");
    BOOST_TEST(reason(moved) == "routes");
    const std::string other = "---\napiVersion: v1\nkind: Service\nmetadata: {name: other, namespace: ns}\n"
                              "spec: {type: ExternalName, externalName: other.example.com, ports: [{name: http, port: 80}]}\n"
                              "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
                              "metadata: {name: o, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n"
                              "  rules: [{matches: [{path: {value: /other}}], backendRefs: [{name: other, port: 80}]}]\n";
    BOOST_TEST(reason(base + other) == "backends");
    std::string listener = base;
    const std::string one = "  - {name: http, port: 80, protocol: HTTP}\n";
    listener.replace(listener.find(one), one.size(), one + "  - {name: more, port: 8080, protocol: HTTP}\n");
    BOOST_TEST(reason(listener) == "listeners");
    BOOST_TEST(reason(listener + other) == "listeners", "the most telling part");
    // a second Gateway on the same port, and an HTTPS listener of its own
    const std::string second = "---\n" + g2n_test::tls_secret_yaml("second-tls", "ns")
                               + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
                                 "metadata: {name: second, namespace: ns}\nspec:\n  gatewayClassName: ours\n"
                                 "  listeners:\n  - {name: http, port: 80, protocol: HTTP}\n"
                                 "  - {name: https, port: 443, protocol: HTTPS, hostname: abc.example.com,\n"
                                 "     tls: {certificateRefs: [{name: second-tls}]}}\n";
    // (no route: no server presents its certificate yet, which is written)
    BOOST_TEST(reason(base + second) == "certificates");
    std::string routed = second;
    routed += "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
              "metadata: {name: s, namespace: ns}\nspec:\n  parentRefs: [{name: second, sectionName: https}]\n"
              "  rules: [{backendRefs: [{name: web, port: 80}]}]\n";
    BOOST_TEST(reason(base + routed) == "listeners");
    BOOST_TEST(reason(base + second + other) == "certificates", "before backends");
    BOOST_TEST(reason(base) == "routes", "nothing differs: what is left");
}

// A listener's Secret renewed (cert-manager): with the upstream API, its
// key pair is pushed and the configuration nginx runs is the same; not
// where a stream{} server presents it too (the module's certificate step
// is http's), which reloads for it.
BOOST_AUTO_TEST_CASE(a_listener_certificate_renewed_is_pushed_not_reloaded)
{
    auto secret = [](const std::string &cert) {
        return "apiVersion: v1\nkind: Secret\nmetadata: {name: cert, namespace: ns}\ntype: kubernetes.io/tls\n"
               "stringData:\n  tls.crt: |\n" + g2n_test::yaml_block(g2n_test::test_cert_file(cert + ".crt"), 4)
               + "  tls.key: |\n" + g2n_test::yaml_block(g2n_test::test_cert_file(cert + ".key"), 4) + "---\n";
    };
    auto manifests = [&](const std::string &cert, const std::string &more_listeners, const std::string &more) {
        return "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: ours}\n"
               "spec: {controllerName: gateway2nginx.io/controller}\n---\n" + secret(cert)
               + "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\n"
                 "spec:\n  gatewayClassName: ours\n  listeners:\n"
                 "  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert}]}}\n"
               + more_listeners
               + "---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\n"
                 "spec:\n  ports: [{name: http, port: 80}]\n"
                 "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
                 "spec:\n  parentRefs: [{name: gw, sectionName: https}]\n  rules: [{backendRefs: [{name: web, port: 80}]}]\n"
               + more;
    };
    const Options api = with_api();
    const Plan before = resolve(parse(manifests("leaf", "", "")), api);
    const Plan renewed = resolve(parse(manifests("wildcard", "", "")), api);
    const auto certificates = replaceable_certificates(renewed, api);
    BOOST_TEST_REQUIRE(certificates.size() == 1u);
    const std::string name = certificates.begin()->first;
    BOOST_TEST(render_http_conf(renewed, api).find("gateway_tls_certificate " + name + ";") != std::string::npos);
    BOOST_TEST(skeleton_digest(renewed, api) == skeleton_digest(before, api), "no reload");
    ApiHeld now;
    const ApiContent changed = api_changes(renewed, api, ApiHeld::of(before, api), &now);
    BOOST_TEST(changed.certificates.size() == 1u);
    BOOST_TEST(changed.servers.empty());
    const gtls::ListenerCertificate pushed = gtls::parse_listener_certificate(changed.certificates.at(name), name);
    BOOST_TEST(pushed.certificate.find("BEGIN CERTIFICATE") != std::string::npos);
    BOOST_TEST(pushed.key.find("PRIVATE KEY") != std::string::npos);
    BOOST_TEST(api_body(changed).find(R"("certificates":{")" + name + "\":{\"certificate\":") != std::string::npos);
    ApiHeld again;
    BOOST_TEST(api_changes(renewed, api, now, &again).empty(), "pushed once");
    // the API off: the files are nginx's alone, a reload's
    BOOST_TEST(replaceable_certificates(renewed, Options()).empty());
    BOOST_TEST(render_http_conf(renewed, Options()).find("gateway_tls_certificate") == std::string::npos);
    // the same Secret behind a TLS Terminate listener too
    const std::string terminate =
        "  - {name: term, port: 8443, protocol: TLS, tls: {mode: Terminate, certificateRefs: [{name: cert}]}}\n";
    const std::string route = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\n"
                              "metadata: {name: t, namespace: ns}\nspec:\n  parentRefs: [{name: gw, sectionName: term}]\n"
                              "  hostnames: [db.example.com]\n  rules:\n  - backendRefs: [{name: web, port: 80}]\n";
    const Plan streamed = resolve(parse(manifests("leaf", terminate, route)), api);
    BOOST_TEST_REQUIRE(!streamed.stream_servers.empty());
    BOOST_TEST(replaceable_certificates(streamed, api).empty());
    const Plan streamed_renewed = resolve(parse(manifests("wildcard", terminate, route)), api);
    BOOST_TEST(skeleton_digest(streamed_renewed, api) != skeleton_digest(streamed, api));
    BOOST_TEST(kReloadReasons[static_cast<size_t>(reload_reason(skeleton_parts(streamed, api),
                                                                skeleton_parts(streamed_renewed, api)))]
               == "certificates");
}

// A policy's own client certificate (gateway2nginx.io/client-certificate)
// renewed in its Secret: pushed with the policy's trust, the key pair in
// it, and the configuration nginx runs is the same, though its files keep
// their names; with the API off, a reload's.
BOOST_AUTO_TEST_CASE(a_policy_client_certificate_renewed_is_pushed_not_reloaded)
{
    auto manifests = [](const std::string &cert) {
        std::string policy = with_policy("ca.crt");
        const std::string validation = "  validation:\n";
        policy.replace(policy.find(validation), validation.size(),
                       "  options: {gateway2nginx.io/client-certificate: client}\n" + validation);
        return policy + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: client, namespace: ns}\n"
                        "type: kubernetes.io/tls\nstringData:\n  tls.crt: |\n"
               + g2n_test::yaml_block(g2n_test::test_cert_file(cert + ".crt"), 4) + "  tls.key: |\n"
               + g2n_test::yaml_block(g2n_test::test_cert_file(cert + ".key"), 4);
    };
    const Options api = with_api();
    const Plan before = resolve(parse(manifests("leaf")), api);
    const Plan renewed = resolve(parse(manifests("spiffe")), api);
    BOOST_TEST_REQUIRE(trust_replaceable_policies(renewed, api).count("ns/web-tls") == 1u);
    BOOST_TEST(render_http_conf(renewed, api).find("proxy_ssl_policy_certificate certs/policy-client_ns_client.crt")
               != std::string::npos);
    BOOST_TEST(skeleton_digest(renewed, api) == skeleton_digest(before, api), "no reload");
    ApiHeld now;
    const ApiContent changed = api_changes(renewed, api, ApiHeld::of(before, api), &now);
    BOOST_TEST_REQUIRE(changed.trust.size() == 1u);
    const gtls::PolicyTrust pushed = gtls::parse_policy_trust(changed.trust.at("ns/web-tls"), "ns/web-tls");
    BOOST_TEST_REQUIRE(pushed.client_certificate.has_value());
    auto file = [&](const std::string &path) {
        for (const OutputFile &f : renewed.files) {
            if (f.path == path) return f.content;
        }
        return std::string();
    };
    BOOST_TEST(pushed.client_certificate->certificate == file("certs/policy-client_ns_client.crt"));
    BOOST_TEST(pushed.client_certificate->key == file("certs/policy-client_ns_client.key"));
    BOOST_TEST(pushed.client_certificate->certificate != std::string());
    ApiHeld again;
    BOOST_TEST(api_changes(renewed, api, now, &again).empty(), "pushed once");
    // the API off: the files are nginx's alone
    BOOST_TEST(skeleton_digest(renewed, Options()) != skeleton_digest(before, Options()));
}

BOOST_AUTO_TEST_CASE(a_terminate_listener_certificate_renewed_is_pushed_not_reloaded)
{
    auto secret = [](const std::string &name, const std::string &cert) {
        return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + ", namespace: ns}\ntype: kubernetes.io/tls\n"
               "stringData:\n  tls.crt: |\n" + g2n_test::yaml_block(g2n_test::test_cert_file(cert + ".crt"), 4)
               + "  tls.key: |\n" + g2n_test::yaml_block(g2n_test::test_cert_file(cert + ".key"), 4) + "---\n";
    };
    // an HTTPS listener with Secret `web`, a Terminate one with Secret `db`
    auto manifests = [&](const std::string &db_cert) {
        return "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: ours}\n"
               "spec: {controllerName: gateway2nginx.io/controller}\n---\n" + secret("web", "leaf") + secret("db", db_cert)
               + "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\n"
                 "spec:\n  gatewayClassName: ours\n  listeners:\n"
                 "  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: web}]}}\n"
                 "  - {name: term, port: 8443, protocol: TLS, tls: {mode: Terminate, certificateRefs: [{name: db}]}}\n"
                 "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: ns}\n"
                 "spec:\n  ports: [{name: http, port: 80}]\n"
                 "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
                 "spec:\n  parentRefs: [{name: gw, sectionName: https}]\n  rules: [{backendRefs: [{name: svc, port: 80}]}]\n"
                 "---\napiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\n"
                 "metadata: {name: t, namespace: ns}\nspec:\n  parentRefs: [{name: gw, sectionName: term}]\n"
                 "  hostnames: [db.example.com]\n  rules:\n  - backendRefs: [{name: svc, port: 80}]\n";
    };
    const Options api = with_api();
    for (const int nginx_version : {1022001, 1025005}) {  // one server per port; one per hostname
        Options o = api;
        o.nginx_version = nginx_version;
        const Plan before = resolve(parse(manifests("leaf")), o);
        const Plan renewed = resolve(parse(manifests("wildcard")), o);
        BOOST_TEST_REQUIRE(!renewed.stream_servers.empty());
        const auto certificates = replaceable_certificates(renewed, o);
        BOOST_TEST_REQUIRE(certificates.size() == 2u, "the HTTPS listener's and the Terminate listener's");
        std::string db;
        for (const auto &[name, c] : certificates) {
            if (render_http_conf(renewed, o).find("gateway_tls_certificate " + name + ";") == std::string::npos) db = name;
        }
        BOOST_TEST_REQUIRE(!db.empty(), "one of them is not http's");
        const std::string stream = render_stream_conf(renewed, o);
        BOOST_TEST(stream.find("gateway_tls_certificate " + db + ";") != std::string::npos, stream);
        BOOST_TEST(skeleton_digest(renewed, o) == skeleton_digest(before, o), "no reload");
        ApiHeld now;
        const ApiContent changed = api_changes(renewed, o, ApiHeld::of(before, o), &now);
        BOOST_TEST(changed.certificates.size() == 1u);
        BOOST_TEST(changed.certificates.count(db) == 1u, "the Terminate listener's pushed");
    }
}

BOOST_AUTO_TEST_CASE(trust_that_verifies_nothing_or_differs_by_name_is_not_replaceable)
{
    Options skeleton = with_api();
    skeleton.endpoint_skeleton = true;
    // mode skip: no trust to replace, the CA change is the reload's
    std::string allowing = with_policy("ca.crt", "InsecureSkipVerification");
    const std::string class_line = "  gatewayClassName: ours\n";
    allowing.replace(allowing.find(class_line), class_line.size(),
                     class_line + "  tls: {backend: {validation: {mode: AllowInsecureVerification}}}\n");
    const std::string refs_line = "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n";
    allowing.erase(allowing.find(refs_line), refs_line.size());  // skip trusts nothing
    Plan skipped = resolve(parse(allowing), with_api());
    size_t verified = 0;
    for (const Upstream &u : skipped.upstreams) {
        if (!u.tls()) continue;
        BOOST_TEST_REQUIRE((u.policy->mode == gtls::Mode::Skip));
        BOOST_TEST_REQUIRE(u.unusable.empty(), u.unusable);  // the Gateway allows it
        verified++;
    }
    BOOST_TEST_REQUIRE(verified > 0u);
    BOOST_TEST(trust_replaceable_policies(skipped, with_api()).empty());
    // a policy also rendered in stream{} (a TLSRoute's backend) is, as one:
    // the API reaches the stream module's policies of the name too
    Plan streamed = resolve(parse(with_policy("ca.crt")), with_api());
    Upstream stream_copy = streamed.upstreams.front();
    for (const Upstream &u : streamed.upstreams) {
        if (u.tls()) stream_copy = u;
    }
    BOOST_TEST_REQUIRE(stream_copy.tls());
    streamed.stream_upstreams.push_back(stream_copy);
    BOOST_TEST(trust_replaceable_policies(streamed, with_api()).size() == 1u);
    BOOST_TEST(api_content(streamed, with_api()).trust.size() == 1u);
    // unless its copies disagree on what they trust: one trust per name
    auto differing = std::make_shared<UpstreamPolicy>(*stream_copy.policy);
    differing->pins.push_back("sha256-spki:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    streamed.stream_upstreams.back().policy = differing;
    BOOST_TEST(trust_replaceable_policies(streamed, with_api()).empty());
    BOOST_TEST(api_content(streamed, with_api()).trust.empty());
}

BOOST_AUTO_TEST_CASE(documents_read_again_from_the_cache_give_the_same_objects)
{
    auto rendered = [](const Manifests &m) {
        Plan plan = resolve(m, with_api());
        return render_http_conf(plan, with_api()) + render_status(plan, with_api());
    };
    // how a read's objects go back to the cache that lent them: all of
    // them, never (run stopped half-way), or lists of another length
    enum class Back { All, Never, Shorter };
    auto read = [&](const std::string &yaml, DocumentCache *cache, Back back = Back::All) {
        Manifests m;
        std::istringstream in(yaml);
        parse_stream(in, "in.yaml", &m, 2, cache);
        if (cache != nullptr) cache->forget_unused();
        std::string text = rendered(m);
        for (const Namespace &n : m.namespaces) text += " namespace " + n.meta.name;
        BOOST_TEST_REQUIRE(m.rejected.size() == 1u);
        const std::string rejected = m.rejected[0].message;
        if (back == Back::Shorter) m.endpoint_slices.pop_back();
        if (cache != nullptr && back != Back::Never) cache->give_back(std::move(m));
        return text + rejected;
    };
    // a rejected object too: its message (with its line) comes back as well
    // and a document of two objects (a List), kept as such
    const std::string rejected = "---\napiVersion: v1\nkind: Service\nmetadata: {name: Bad_Name, namespace: ns}\n"
                                 "---\napiVersion: v1\nkind: List\nitems:\n"
                                 "- {apiVersion: v1, kind: Namespace, metadata: {name: listed-a}}\n"
                                 "- {apiVersion: v1, kind: Namespace, metadata: {name: listed-b}}\n";
    DocumentCache cache;
    const char *addresses[] = {R"("10.0.0.1")", R"("10.0.0.1")", R"("10.0.0.7", "10.0.0.8")", R"("10.0.0.1")"};
    for (Back back : {Back::All, Back::Never, Back::Shorter, Back::All}) {
        for (const char *a : addresses) {
            const std::string yaml = with_policy("ca.crt") + rejected + slice(a);
            const std::string cold = read(yaml, nullptr);
            BOOST_TEST(read(yaml, &cache, back) == cold);
            BOOST_TEST(read(yaml, &cache) == cold, "read again after that");
        }
    }
    // what the last read no longer held is forgotten
    const size_t held = cache.size();
    {
        Manifests m;
        std::istringstream in(kManifests);
        parse_stream(in, "in.yaml", &m, 2, &cache);
        cache.forget_unused();
        cache.give_back(std::move(m));
    }
    BOOST_TEST(cache.size() < held);
    // bad input is raised from the cache's read just the same
    BOOST_CHECK_THROW(read(kManifests + "---\nkind: [\n", &cache), InputError);
}

// The API objects' texts, shared with the store that holds them: one read
// before whole, and still held, is lent by the key kept for it, neither
// split nor hashed again; a text replaced (a new object version) or one
// the cache dropped is read afresh.
BOOST_AUTO_TEST_CASE(shared_texts_read_again_are_known_by_identity)
{
    auto text = [](const std::string &yaml) { return std::make_shared<const std::string>(yaml); };
    std::vector<std::pair<std::string, SharedText>> texts = {
        {"Service ns/web", text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\n"
                                "spec:\n  ports: [{name: http, port: 80}]\n")},
        {"Namespace listed", text("{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"listed\"}}")},
        // two documents: never kept by identity
        {"List", text("apiVersion: v1\nkind: Namespace\nmetadata: {name: first}\n---\n"
                      "apiVersion: v1\nkind: Namespace\nmetadata: {name: second}\n")}};
    DocumentCache cache;
    auto read = [&]() {
        Manifests m;
        parse_texts(texts, &m, 2, &cache);
        cache.forget_unused();
        std::string seen;
        for (const Service &svc : m.services) seen += "service " + svc.meta.name + " " + std::to_string(svc.ports.size()) + ";";
        for (const Namespace &n : m.namespaces) seen += "namespace " + n.meta.name + ";";
        cache.give_back(std::move(m));
        return seen;
    };
    const std::string first = read();
    BOOST_TEST(first == "service web 1;namespace listed;namespace first;namespace second;");
    BOOST_TEST(cache.shared_key(texts[0].second) != nullptr);
    BOOST_TEST(cache.shared_key(texts[1].second) != nullptr);
    BOOST_TEST(cache.shared_key(texts[2].second) == nullptr, "a text of two documents");
    BOOST_TEST(read() == first, "lent by identity");
    // a new version of the Service: another text
    texts[0].second = text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\n"
                           "spec:\n  ports: [{name: http, port: 80}, {name: https, port: 443}]\n");
    BOOST_TEST(read() == "service web 2;namespace listed;namespace first;namespace second;");
    // the cache dropped a text's document (a read without it), its key kept:
    // read afresh when it comes back
    const auto namespace_text = texts[1];
    texts.erase(texts.begin() + 1);
    BOOST_TEST(read() == "service web 2;namespace first;namespace second;");
    texts.insert(texts.begin() + 1, namespace_text);
    BOOST_TEST(read() == "service web 2;namespace listed;namespace first;namespace second;");
}

// A file whose stamp (device, inode, size, mtime, ctime) is unchanged is
// not read again: its documents are lent by the keys kept for it. One
// changed in place, renamed over, removed, or written too recently for its
// stamp to tell a change in the same tick is read again.
BOOST_AUTO_TEST_CASE(files_unchanged_since_their_read_are_not_read_again)
{
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("g2n-file-stamps-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto write = [&](const std::string &name, const std::string &text) {
        std::ofstream(dir / name) << text;
    };
    auto ctime_of = [&](const std::string &name) {
        struct stat st {};
        ::stat((dir / name).c_str(), &st);
        return std::make_pair(st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    };
    // in place, and written again until its ctime moved: the file system's
    // clock ticks every few milliseconds, and a change within the tick of
    // the read is what `settled` is for
    auto rewrite = [&](const std::string &name, const std::string &text) {
        const auto before = ctime_of(name);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        do write(name, text);
        while (ctime_of(name) == before && std::chrono::steady_clock::now() < deadline);
    };
    auto service = [](const std::string &name, int port) {
        return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: ns}\n"
               "spec:\n  ports: [{name: p, port: " + std::to_string(port) + "}]\n";
    };
    auto read = [&](DocumentCache *cache) {
        Manifests m;
        parse_path(dir.string(), &m, 2, cache);
        cache->forget_unused();
        std::string seen;
        for (const Service &svc : m.services) seen += svc.meta.name + ":" + std::to_string(svc.ports.at(0).port) + " ";
        cache->give_back(std::move(m));
        return seen;
    };
    write("a.yaml", service("a", 80) + "---\n" + service("a2", 81));
    write("b.yaml", service("b", 80));

    DocumentCache settled(0);  // any stamp tells a change
    BOOST_TEST(read(&settled) == "a:80 a2:81 b:80 ");
    BOOST_TEST(settled.files_read() == 2u);
    BOOST_TEST(read(&settled) == "a:80 a2:81 b:80 ");
    BOOST_TEST(settled.files_read() == 2u, "unchanged: neither read again");
    rewrite("b.yaml", service("b", 90));  // in place: another ctime (and mtime)
    BOOST_TEST(read(&settled) == "a:80 a2:81 b:90 ");
    BOOST_TEST(settled.files_read() == 3u, "b alone read again");
    write("c.tmp", service("b", 91));
    fs::rename(dir / "c.tmp", dir / "b.yaml");  // renamed over: another inode
    BOOST_TEST(read(&settled) == "a:80 a2:81 b:91 ");
    BOOST_TEST(settled.files_read() == 4u);
    fs::remove(dir / "a.yaml");
    BOOST_TEST(read(&settled) == "b:91 ");
    write("a.yaml", service("a", 80) + "---\n" + service("a2", 81));
    BOOST_TEST(read(&settled) == "a:80 a2:81 b:91 ", "back, read again");

    // by default a file written within 2 s of its read is read again: the
    // same size in the same clock tick leaves mtime and ctime as they were
    DocumentCache cache;
    const auto written = std::chrono::steady_clock::now();
    write("a.yaml", service("a", 80) + "---\n" + service("a2", 81));
    write("b.yaml", service("b", 91));
    BOOST_TEST(read(&cache) == "a:80 a2:81 b:91 ");
    write("b.yaml", service("b", 92));  // the same size, maybe the same tick
    BOOST_TEST(read(&cache) == "a:80 a2:81 b:92 ");
    if (std::chrono::steady_clock::now() - written < std::chrono::seconds(1)) {
        BOOST_TEST(cache.files_read() == 4u, "every file just written: read each time");
    }
    fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_read_given_back_says_where_each_object_went)
{
    // one-object documents and a List (a document of two objects)
    const std::string yaml = kManifests
                             + "---\napiVersion: v1\nkind: List\nitems:\n"
                               "- {apiVersion: v1, kind: Namespace, metadata: {name: listed-a}}\n"
                               "- {apiVersion: v1, kind: Service, metadata: {name: listed, namespace: ns}, "
                               "spec: {ports: [{port: 80}]}}\n";
    // an input read twice (one file named twice): its second copy is not
    // taken back
    const std::string twice = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: twice}\n";
    DocumentCache cache;
    for (int round = 0; round < 2; round++) {  // scanned, then lent again
        Manifests m;
        for (const std::string *input : {&yaml, &twice, &twice}) {
            std::istringstream in(*input);
            parse_stream(in, input == &yaml ? "in.yaml" : "twice.yaml", &m, 1, &cache);
        }
        cache.forget_unused();
        BOOST_TEST_REQUIRE(m.services.size() >= 2u);
        BOOST_TEST_REQUIRE(m.namespaces.size() >= 3u);
        std::vector<std::pair<const Service *, std::string>> services;
        std::vector<std::pair<const Namespace *, std::string>> namespaces;
        for (const Service &x : m.services) services.emplace_back(&x, x.meta.key());
        for (const Namespace &x : m.namespaces) namespaces.emplace_back(&x, x.meta.name);
        MovedObjects moved;
        cache.give_back(std::move(m), &moved);
        for (const auto &[was, key] : services) {
            const Service *now = moved.where(was);
            BOOST_TEST_REQUIRE(now != nullptr, key);
            BOOST_TEST(now != was);
            BOOST_TEST(now->meta.key() == key);
        }
        size_t twice_seen = 0;
        for (const auto &[was, name] : namespaces) {
            const Namespace *now = moved.where(was);
            if (name == "twice" && twice_seen++ == 1) {
                BOOST_TEST(now == nullptr, "the second copy of a document went nowhere");
                continue;
            }
            BOOST_TEST_REQUIRE(now != nullptr, name);
            BOOST_TEST(now->meta.name == name);
        }
        BOOST_TEST(twice_seen == 2u);
        // an address in no list of the read, or inside an object, maps to nothing
        const Service elsewhere;
        BOOST_TEST(moved.where(&elsewhere) == nullptr);
        BOOST_TEST(moved.where(reinterpret_cast<const Service *>(reinterpret_cast<const char *>(services[0].first) + 8))
                   == nullptr);
    }
    // lists of another length than lent: nothing is taken back, nothing moved
    Manifests m = g2n_test::read_through(&cache, yaml);
    const Service *first = &m.services.at(0);
    m.namespaces.pop_back();
    MovedObjects moved;
    cache.give_back(std::move(m), &moved);
    BOOST_TEST(moved.where(first) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_read_as_big_as_the_last_one_doubles_no_list)
{
    std::string yaml = kManifests;
    for (int i = 0; i < 5; i++) {
        yaml += "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: extra-" + std::to_string(i) + "}\n";
    }
    DocumentCache cache;
    auto capacities = [](const Manifests &m) {
        return std::vector<size_t>{m.namespaces.capacity(), m.gateways.capacity(), m.http_routes.capacity(),
                                   m.services.capacity(), m.endpoint_slices.capacity()};
    };
    auto sizes = [](const Manifests &m) {
        return std::vector<size_t>{m.namespaces.size(), m.gateways.size(), m.http_routes.size(), m.services.size(),
                                   m.endpoint_slices.size()};
    };
    Manifests first;
    cache.reserve_as_last(&first);  // nothing read before: no room made
    BOOST_TEST(capacities(first) == std::vector<size_t>(5, 0), boost::test_tools::per_element());
    {
        std::istringstream in(yaml);
        parse_stream(in, "in.yaml", &first, 2, &cache);
    }
    cache.forget_unused();
    BOOST_TEST_REQUIRE(first.namespaces.size() >= 5u);
    BOOST_TEST(first.namespaces.capacity() > first.namespaces.size(), "grown by doubling, room left over");
    const std::vector<size_t> read = sizes(first);
    cache.give_back(std::move(first));
    for (int again = 0; again < 2; again++) {
        Manifests m;
        cache.reserve_as_last(&m);
        BOOST_TEST(capacities(m) == read, boost::test_tools::per_element());
        std::istringstream in(yaml);
        parse_stream(in, "in.yaml", &m, 2, &cache);
        cache.forget_unused();
        BOOST_TEST(sizes(m) == read, boost::test_tools::per_element());
        BOOST_TEST(capacities(m) == read, "no list grew: " << again);
        cache.give_back(std::move(m));
    }
}

BOOST_AUTO_TEST_CASE(watch_events_are_cut_where_each_json_value_ends)
{
    const std::string stream = "{\"type\": \"ADDED\", \"object\": {\"a\": \"}{\\\"\", \"b\": [1, {\"c\": 2}]}}\n"
                               "  {\n  \"type\": \"DELETED\"\n}\n{\"type\": \"MOD";
    size_t first = json_value_end(stream, 0);
    BOOST_TEST_REQUIRE(first != std::string::npos);
    BOOST_TEST(stream.substr(0, first) == "{\"type\": \"ADDED\", \"object\": {\"a\": \"}{\\\"\", \"b\": [1, {\"c\": 2}]}}");
    size_t second = json_value_end(stream, first);
    BOOST_TEST_REQUIRE(second != std::string::npos);
    BOOST_TEST(stream.substr(first, second - first) == "\n  {\n  \"type\": \"DELETED\"\n}");
    BOOST_TEST(json_value_end(stream, second) == std::string::npos);  // incomplete: wait for more
    BOOST_TEST(json_value_end("   \n", 0) == std::string::npos);
    BOOST_TEST(json_value_end("12", 0) == std::string::npos, "a number may go on");
    BOOST_TEST(json_value_end("12 ", 0) == 2u);
    // not JSON: cut after the fault, always forward
    BOOST_TEST(json_value_end("{\"a\" 1}{}", 0) == 6u);
    BOOST_TEST(json_value_end("}", 0) == 1u);
    // cut anywhere, the stream gives the same values
    const std::string whole = "{\"a\": [1, \"x\\\"]\"]}\n[true, null, {\"b\": -1.5e3}] \"s\" ";
    for (size_t cut = 0; cut <= whole.size(); cut++) {
        std::string seen;
        std::string pending = whole.substr(0, cut);
        size_t end;
        while ((end = json_value_end(pending, 0)) != std::string::npos) {
            seen += pending.substr(0, end) + "|";
            pending.erase(0, end);
        }
        pending += whole.substr(cut);
        while ((end = json_value_end(pending, 0)) != std::string::npos) {
            seen += pending.substr(0, end) + "|";
            pending.erase(0, end);
        }
        BOOST_TEST(seen == "{\"a\": [1, \"x\\\"]\"]}|\n[true, null, {\"b\": -1.5e3}]| \"s\"|", "cut at " << cut);
    }
}

// A change is applied after a quiet spell, or once the first event has
// waited kLongestDebounceWaits spells however often others follow; at
// once when the input ends; nothing is due while nothing is pending.
BOOST_AUTO_TEST_CASE(changes_are_applied_after_a_quiet_spell_or_the_longest_wait)
{
    using std::chrono::milliseconds;
    const auto t0 = g2n::Debounce::clock::time_point() + std::chrono::hours(1);
    g2n::Debounce debounce(milliseconds(100));
    g2n::Debounce::clock::time_point first;
    BOOST_TEST(!debounce.due());
    BOOST_TEST(!debounce.take(t0, true, &first));

    debounce.changed(t0);
    BOOST_TEST((*debounce.due() == t0 + milliseconds(100)));
    BOOST_TEST(!debounce.take(t0 + milliseconds(99), false, &first));
    BOOST_TEST(debounce.take(t0 + milliseconds(100), false, &first));
    BOOST_TEST((first == t0));
    BOOST_TEST(!debounce.pending());

    // an event every 50 ms never falls quiet: applied at 4 spells all the same
    for (int i = 0; i < 20; i++) {
        const auto now = t0 + milliseconds(50 * i);
        if (debounce.take(now, false, &first)) {
            BOOST_TEST(i * 50 == g2n::kLongestDebounceWaits * 100);
            BOOST_TEST((first == t0));
            break;
        }
        BOOST_TEST_REQUIRE(i * 50 < g2n::kLongestDebounceWaits * 100);
        debounce.changed(now);
    }

    debounce.changed(t0);
    BOOST_TEST(debounce.take(t0, true, &first), "the input ended: at once");
    debounce.changed_long_ago(t0);
    BOOST_TEST(debounce.take(t0, false, &first), "synced: at once");
}

// A reload is confirmed by scanning /proc for the master's new workers while
// the old ones exit: a process gone between the listing and the read of its
// stat is no child, not an error that loses a reload it took (CI, t/350).
// The processes that come and go are a shell's (exec'd: under valgrind it
// runs natively); the scan meets them wherever they are in /proc.
namespace {

pid_t spawn(const char *command)
{
    const pid_t child = ::fork();
    if (child == 0) {
        ::execl("/bin/sh", "sh", "-c", command, static_cast<char *>(nullptr));
        ::_exit(127);
    }
    return child;
}

// processes made on this host so far: the last pid given out, counted on
// across pid_max
long long pids_made()
{
    static long long wraps = 0, last = -1;
    std::ifstream loadavg("/proc/loadavg"), pid_max("/proc/sys/kernel/pid_max");
    std::string skip;
    long long pid = 0, max = 0;
    loadavg >> skip >> skip >> skip >> skip >> pid;
    pid_max >> max;
    if (last >= 0 && pid < last) wraps += max;
    last = pid;
    return wraps + pid;
}

}  // namespace

BOOST_AUTO_TEST_CASE(children_are_found_while_processes_come_and_go)
{
    const pid_t churn = spawn("while :; do /bin/true; done");
    const pid_t stays = spawn("exec sleep 600");
    BOOST_TEST_REQUIRE(churn > 0);
    BOOST_TEST_REQUIRE(stays > 0);
    const long long start = pids_made();
    long scans = 0;
    bool found = true;
    try {
        while (pids_made() - start < 5000) {
            found = found && g2n::children_of(::getpid()).count(stays) == 1;
            scans++;
        }
    } catch (const std::exception &e) {
        BOOST_ERROR("scan " << scans << " failed after " << pids_made() - start << " processes: " << e.what());
    }
    for (pid_t p : {churn, stays}) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
    }
    BOOST_TEST(scans > 0);
    BOOST_TEST(found, "a child that stays is found in every scan");
}

BOOST_AUTO_TEST_SUITE_END()
