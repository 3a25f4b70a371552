// render: status.yaml, the status Kubernetes would hold.
#include <boost/test/unit_test.hpp>

#include <string>

#include <yaml-cpp/yaml.h>

#include "resolve_render_fixtures.h"

using namespace g2n;
using namespace g2n_test;

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
    std::vector<ObjectStatus> statuses;
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
        statuses.push_back(st);
    }
    plan.statuses = std::make_shared<const StatusList>(std::move(statuses));
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

// One HTTPS listener with a hostname, and a route for all of it
std::string one_https_listener()
{
    return class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
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
}

// HTTPRouteHTTPSListener: with no listener for every hostname, an unknown
// SNI still completes a handshake, with the port's first certificate, and
// gets 404 (the module answers 421 where Host then names a server that
// verifies its clients: t/430).
BOOST_AUTO_TEST_CASE(an_https_port_without_a_catch_all_answers_404_over_tls)
{
    std::string http = render_http_conf(plan_of(one_https_listener()));
    // HTTP/2 offered, as on every TLS listen (the listen parameter before nginx 1.25.1)
    BOOST_TEST(http.find("server {\n    listen 0.0.0.0:443 ssl http2 default_server;\n    server_name \"\";\n"
                         "    ssl_certificate certs/listener_ns_cert.crt;\n"
                         "    ssl_certificate_key certs/listener_ns_cert.key;\n"
                         "    if ($sni_listener_1 != \"\") {\n        return 421;\n    }\n    if ($gateway2nginx_loop = 1) {\n        return 508;\n    }\n    return 404;\n}")
                   != std::string::npos,
               http);
    BOOST_TEST(http.find("ssl_reject_handshake") == std::string::npos);
}

// HTTPS offers HTTP/2 (ALPN h2) as clients expect, GRPCRoute or not:
// the listen parameter before nginx 1.25.1, the `http2`
// directive from it; every server of the port, its default one too
BOOST_AUTO_TEST_CASE(https_listeners_offer_http2_without_a_grpcroute)
{
    Options old_nginx, new_nginx;
    new_nginx.nginx_version = 1026003;
    const Plan plan = plan_of(one_https_listener());
    BOOST_TEST_REQUIRE(plan.servers.size() == 1u);
    const std::string before = render_http_conf(plan, old_nginx), after = render_http_conf(plan, new_nginx);
    BOOST_TEST(before.find("    listen 0.0.0.0:443 ssl http2;\n    server_name example.org;\n") != std::string::npos, before);
    BOOST_TEST(before.find("    listen 0.0.0.0:443 ssl http2 default_server;\n") != std::string::npos, before);
    BOOST_TEST(after.find("    listen 0.0.0.0:443 ssl;\n    http2 on;\n    server_name example.org;\n") != std::string::npos, after);
    BOOST_TEST(after.find("    listen 0.0.0.0:443 ssl default_server;\n    http2 on;\n") != std::string::npos, after);
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
