// TLSRoute: parse (v1, v1alpha2, v1alpha3), TLS listeners (Passthrough,
// Terminate, conflicts, route kinds), BackendTLSPolicy behind Terminate
// only, and stream.conf.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gtls_upstream_api.h"
#include "apply/nginx_check.h"
#include "apply/reload.h"
#include "apply/upstream_api.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

const std::string kSetupHead = class_and_certificate() + R"(apiVersion: v1
kind: Service
metadata: {name: db, namespace: ns}
spec:
  ports: [{name: tls, port: 5432}, {name: plain, port: 5433}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-1, namespace: ns, labels: {kubernetes.io/service-name: db}}
ports: [{name: tls, port: 15432}, {name: plain, port: 15433}]
endpoints: [{addresses: ["10.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: db-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: db, sectionName: tls}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
    hostname: db.internal
)";

std::string setup()
{
    return kSetupHead + ca_configmap_yaml("ca");
}


std::string gateway(const std::string &name, const std::string &listeners)
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: " + name
           + ", namespace: ns}\nspec:\n  gatewayClassName: ours\n  listeners:\n" + listeners;
}

const char *const kPassthrough = "  - {name: pass, port: 443, protocol: TLS, tls: {mode: Passthrough}}\n";
const char *const kTerminate =
    "  - {name: term, port: 8443, protocol: TLS, hostname: \"*.example.com\", tls: {mode: Terminate, "
    "certificateRefs: [{name: cert}]}}\n";

std::string tls_route(const std::string &name, const std::string &gw, const std::string &hostnames,
                      const std::string &backends, const std::string &version = "v1")
{
    return "---\napiVersion: gateway.networking.k8s.io/" + version + "\nkind: TLSRoute\nmetadata: {name: " + name
           + ", namespace: ns}\nspec:\n  parentRefs: [{name: " + gw + "}]\n"
           + (hostnames.empty() ? "" : "  hostnames: " + hostnames + "\n")
           + "  rules:\n  - backendRefs: " + backends + "\n";
}

std::string listener_reasons(const ObjectStatus &gw, const std::string &listener)
{
    std::string out;
    for (const auto &l : gw.listeners) {
        if (l.name != listener) continue;
        out += "attached=" + std::to_string(l.attached_routes) + " kinds=";
        for (const std::string &k : l.supported_kinds) out += k + ",";
        for (const Condition &c : l.conditions) out += " " + std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason);
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(stream_routes)

BOOST_AUTO_TEST_CASE(versions_and_crd_rules)
{
    // v1alpha2: hostnames optional, up to 16 rules
    Manifests m = parse(tls_route("a", "gw", "", "[{name: db, port: 5432}]\n  - backendRefs: [{name: db, port: 5433}]",
                                  "v1alpha2"));
    BOOST_TEST_REQUIRE(m.stream_routes.size() == 1u);
    BOOST_TEST(m.stream_routes[0].api_version == "gateway.networking.k8s.io/v1alpha2");
    BOOST_TEST(m.stream_routes[0].rules.size() == 2u);
    BOOST_TEST(parse(tls_route("a", "gw", "[a.example.com]", "[{name: db, port: 5432}]", "v1alpha3")).stream_routes.size() == 1u);

    BOOST_TEST(error_of(tls_route("a", "gw", "", "[{name: db, port: 5432}]")).find("spec.hostnames") != std::string::npos);
    BOOST_TEST(error_of(tls_route("a", "gw", "[a.example.com]",
                                  "[{name: db, port: 5432}]\n  - backendRefs: [{name: db, port: 5433}]"))
                   .find("expected exactly 1 rule") != std::string::npos);
    BOOST_TEST(error_of(tls_route("a", "gw", "[10.0.0.1]", "[{name: db, port: 5432}]")).find("spec.hostnames[0]")
               != std::string::npos);
    BOOST_TEST(error_of(tls_route("a", "gw", "[a.example.com]", "[{name: db}]")).find("Must have port for Service reference")
               != std::string::npos);
    BOOST_TEST(error_of(tls_route("a", "gw", "[a.example.com]", "[]")).find("expected 1 to 16 backendRefs")
               != std::string::npos);
    BOOST_TEST(error_of(tls_route("a", "gw", "[a.example.com]", "[{name: db, port: 5432}]", "v1beta1"))
                   .find("TLSRoute is read as v1, v1alpha2 or v1alpha3") != std::string::npos);
    // a TLS Terminate listener needs a certificate (CEL)
    BOOST_TEST(error_of(gateway("gw", "  - {name: t, port: 443, protocol: TLS, tls: {mode: Terminate}}\n"))
                   .find("certificateRefs or options must be specified when mode is Terminate") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(passthrough_routes_by_sni_and_ignores_backend_tls_policy)
{
    Plan plan = plan_of(setup() + gateway("gw", kPassthrough)
                        + tls_route("db", "gw", "[db.example.com, \"*.db.example.com\"]", "[{name: db, port: 5432}]"));
    BOOST_TEST(reasons(status_of(plan, "TLSRoute", "db")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    BOOST_TEST(listener_reasons(status_of(plan, "Gateway", "gw"), "pass")
               == "attached=1 kinds=TLSRoute, Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs");
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u);
    const StreamServer &s = plan.stream_servers[0];
    BOOST_TEST(!s.terminate);
    BOOST_TEST(!s.proxy_ssl);
    BOOST_TEST_REQUIRE(plan.stream_upstreams.size() == 1u);
    BOOST_TEST(!plan.stream_upstreams[0].tls());  // the client's TLS goes through untouched
    BOOST_TEST(plan.upstreams.empty());
    // the policy has nothing to act on behind Passthrough: no ancestor
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "db-tls").refs.empty());

    std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("map $ssl_preread_server_name $tls_route_1 {\n    hostnames;\n"
                         "    # TLSRoute ns/db\n    *.db.example.com backend_ns_db_5432_passthrough;\n"
                         "    # TLSRoute ns/db\n    db.example.com backend_ns_db_5432_passthrough;\n"
                         "    default tls_route_refused;\n}") != std::string::npos, conf);
    BOOST_TEST(conf.find("    listen 0.0.0.0:443;\n    ssl_preread on;\n    proxy_pass $tls_route_1;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("proxy_ssl on;") == std::string::npos);
    BOOST_TEST(render_nginx_conf(plan, Options{}).find("load_module /usr/lib/nginx/modules/ngx_stream_module.so;")
               != std::string::npos);
    BOOST_TEST(render_stream_conf(plan, Options()) == conf);  // deterministic
}

// The stream module is loaded from where the nginx that runs the
// configuration keeps its modules, and not at all when it is built in.
// With the upstream API, a TLSRoute's backends (Passthrough and Terminate,
// with a policy or without) change endpoints without a reload, as an
// HTTPRoute's do: their upstreams share a stream zone, the skeleton leaves
// their servers out, and the API is given them as "stream_upstreams".
BOOST_AUTO_TEST_CASE(tls_route_endpoints_are_replaceable_through_the_api)
{
    Options api;
    api.upstream_api = "127.0.0.1:9114";
    Options skeleton = api;
    skeleton.endpoint_skeleton = true;
    auto manifests = [](const std::string &addresses) {
        std::string m = setup() + gateway("gw", std::string(kPassthrough) + kTerminate)
                         + tls_route("db", "gw", "[db.example.com]", "[{name: db, port: 5432}]");
        const std::string slice = "endpoints: [{addresses: [\"10.0.0.1\"]}]";
        m.replace(m.find(slice), slice.size(), "endpoints: [{addresses: [" + addresses + "]}]");
        return m;
    };
    Plan plan = plan_of(manifests(R"("10.0.0.1", "10.0.0.2")"));
    BOOST_TEST_REQUIRE(plan.stream_upstreams.size() == 2u);  // the Passthrough route's and the Terminate route's
    size_t with_policy = 0;
    for (const Upstream &u : plan.stream_upstreams) {
        BOOST_TEST(stream_api_replaceable(u));
        with_policy += u.tls();
    }
    BOOST_TEST(with_policy == 1u);

    const std::string conf = render_stream_conf(plan, api);
    BOOST_TEST(conf.find("upstream gateway2nginx_stream_servers_ns {\n"
                         "    # the zone of the replaceable upstreams of namespace ns\n"
                         "    zone gateway2nginx_stream_servers_ns 128k;\n    server 127.0.0.1:1 down;\n}\n")
                   != std::string::npos,
               conf);
    size_t zoned = 0;
    for (size_t at = 0; (at = conf.find("    zone gateway2nginx_stream_servers_ns;\n", at)) != std::string::npos; at++) zoned++;
    BOOST_TEST(zoned == 2u);
    BOOST_TEST(conf.find("server 10.0.0.2:15432;") != std::string::npos, conf);
    // the state zone keeps a list per upstream, http's and stream's, and
    // room for the trust of the policy and the Terminate listener's certificate
    BOOST_TEST(render_http_conf(plan, api).find("gateway_tls_upstream_state_zone 1128k;") != std::string::npos,
               render_http_conf(plan, api).substr(0, 2000));

    // other endpoints, none at all: the same skeleton
    auto stream_skeleton = [&](const std::string &addresses) {
        return render_stream_conf(plan_of(manifests(addresses)), skeleton);
    };
    BOOST_TEST(stream_skeleton(R"("10.0.0.1")") == stream_skeleton(R"("10.0.0.7", "10.0.0.8")"));
    BOOST_TEST(stream_skeleton(R"("10.0.0.1")") == stream_skeleton(""));
    BOOST_TEST(stream_skeleton(R"("10.0.0.1")").find("10.0.0.1") == std::string::npos);
    // and the policy's trust, which the API replaces in stream{} too
    const std::map<std::string, const UpstreamPolicy *> trusts = trust_replaceable_policies(plan, api);
    BOOST_TEST_REQUIRE(trusts.size() == 1u);
    const std::string ca = trusts.begin()->second->ca;
    BOOST_TEST(conf.find("proxy_ssl_verify_ca " + ca + ";") != std::string::npos, conf);
    BOOST_TEST(stream_skeleton(R"("10.0.0.1")").find(ca) == std::string::npos);
    BOOST_TEST(stream_skeleton(R"("10.0.0.1")").find("    # trust replaceable at run time\n") != std::string::npos);
    BOOST_TEST(api_content(plan, api).trust.count(trusts.begin()->first) == 1u);
    BOOST_TEST(render_stream_conf(plan_of(manifests(R"("10.0.0.7")")), api) != conf);

    // what the API is given: the servers nginx would be given, by stream upstream
    const ApiContent content = api_content(plan, api);
    BOOST_TEST(content.servers.empty());
    BOOST_TEST_REQUIRE(content.stream_servers.size() == 2u);
    for (const Upstream &u : plan.stream_upstreams) {
        std::vector<gtls::UpstreamServer> servers = gtls::parse_server_list(content.stream_servers.at(u.name));
        BOOST_TEST_REQUIRE(servers.size() == 2u);
        BOOST_TEST(servers[1].address == "10.0.0.2:15432");
    }
    const ApiContent moved = api_content(plan_of(manifests(R"("10.0.0.9")")), api);
    const std::string body = api_body(moved.changed_since(ApiHeld::of(content)));
    BOOST_TEST(body.rfind("{\"stream_upstreams\":{", 0) == 0, body);
    BOOST_TEST(body.find("{\"servers\":[{\"address\":\"10.0.0.9:15432\"") != std::string::npos, body);
    gtls::ApiUpdate update = gtls::parse_api_update(body);  // what the module reads
    BOOST_TEST(update.upstreams.empty());
    BOOST_TEST(update.stream_upstreams.size() == 2u);

    // without the API: no zone
    BOOST_TEST(render_stream_conf(plan, Options()).find("gateway2nginx_stream_servers") == std::string::npos);
    BOOST_TEST(api_content(plan, Options()).empty());
}

BOOST_AUTO_TEST_CASE(stream_module_follows_the_nginx_build)
{
    NginxBuild debian = nginx_build_from(
        "nginx version: nginx/1.22.1\nconfigure arguments: --with-cc-opt='-g -O2' --prefix=/usr/share/nginx "
        "--modules-path=/usr/lib/nginx/modules --with-stream_ssl_module --with-stream=dynamic "
        "--with-stream_geoip_module=dynamic\n");
    BOOST_TEST(debian.modules_path == "/usr/lib/nginx/modules");
    BOOST_TEST(debian.stream_dynamic);
    NginxBuild source = nginx_build_from("nginx version: nginx/1.30.4\nconfigure arguments: --prefix=/opt/nginx "
                                         "--with-stream --with-stream_ssl_module\n");
    BOOST_TEST(debian.version == 1022001);
    BOOST_TEST(source.version == 1030004);
    BOOST_TEST(source.modules_path == "/opt/nginx/modules");
    BOOST_TEST(!source.stream_dynamic);  // built in
    BOOST_TEST(nginx_build_from("nginx version: nginx/1.31.4\nconfigure arguments:\n").modules_path
               == "/usr/local/nginx/modules");

    Plan plan = plan_of(setup() + gateway("gw", kPassthrough)
                        + tls_route("db", "gw", "[db.example.com]", "[{name: db, port: 5432}]"));
    Options o;
    o.module_dir = source.modules_path;
    follow_nginx_build(source, &o);
    BOOST_TEST(o.nginx_version == 1030004);
    std::string conf = render_nginx_conf(plan, o);
    BOOST_TEST(conf.find("ngx_stream_module.so") == std::string::npos, conf);
    BOOST_TEST(conf.find("load_module /opt/nginx/modules/ngx_stream_gateway_tls_module.so;") != std::string::npos, conf);
    follow_nginx_build(debian, &o);
    BOOST_TEST(o.nginx_version == 1022001);
    conf = render_nginx_conf(plan, o);
    BOOST_TEST(conf.find("load_module /usr/lib/nginx/modules/ngx_stream_module.so;\n"
                         "load_module /opt/nginx/modules/ngx_stream_gateway_tls_module.so;") != std::string::npos, conf);
}

BOOST_AUTO_TEST_CASE(terminate_reencrypts_with_the_policy)
{
    Plan plan = plan_of(setup() + gateway("gw", kTerminate)
                        + tls_route("db", "gw", "[db.example.com]", "[{name: db, port: 5432}]"));
    BOOST_TEST(reasons(status_of(plan, "TLSRoute", "db")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u);
    const StreamServer &s = plan.stream_servers[0];
    BOOST_TEST(s.terminate);
    BOOST_TEST(s.proxy_ssl);
    BOOST_TEST(s.certificate == "certs/listener_ns_cert.crt");
    BOOST_TEST_REQUIRE(plan.stream_upstreams.size() == 1u);
    BOOST_TEST(plan.stream_upstreams[0].policy->hostname == "db.internal");
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "db-tls")).find("gw:Accepted=True/Accepted") != std::string::npos);

    std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("map $ssl_server_name $tls_route_1 {") != std::string::npos, conf);
    BOOST_TEST(conf.find("    listen 0.0.0.0:8443 ssl;\n    ssl_certificate certs/listener_ns_cert.crt;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("    proxy_ssl on;\n    proxy_ssl_server_name on;\n    proxy_ssl_name $upstream_ssl_policy_hostname;\n")
               != std::string::npos, conf);
    BOOST_TEST(conf.find("    proxy_ssl_policy_name ns/db-tls;\n    proxy_ssl_policy_hostname db.internal;\n") != std::string::npos, conf);
}

// Two Terminate listeners of one port, each with its own certificate; the
// routes behind one take TLS, behind the other plaintext.
std::string two_terminate_listeners()
{
    const std::string listeners =
        "  - {name: db, port: 8443, protocol: TLS, hostname: db.example.com, tls: {mode: Terminate, "
        "certificateRefs: [{name: cert}]}}\n"
        "  - {name: plain, port: 8443, protocol: TLS, hostname: \"*.plain.example.com\", tls: {mode: Terminate, "
        "certificateRefs: [{name: cert2}]}}\n";
    return setup() + "---\n" + tls_secret_yaml("cert2", "ns") + gateway("gw", listeners)
           + tls_route("db", "gw", "[db.example.com]", "[{name: db, port: 5432}]")
           + tls_route("plain", "gw", "[a.plain.example.com]", "[{name: db, port: 5433}]");
}

Plan plan_for_nginx(const std::string &yaml, long nginx_version)
{
    Options o;
    o.nginx_version = nginx_version;
    return resolve(parse(yaml), o);
}

// Before nginx 1.25.5 a stream server has one certificate and one
// proxy_ssl: a port whose listeners' certificates differ, or whose routes
// need proxy_ssl beside routes that must not have it, reads the SNI
// (ssl_preread) and sends each hostname, still encrypted, to a server of
// its own on a loopback address, as nginx from 1.25.5 picks them itself.
BOOST_AUTO_TEST_CASE(terminate_hostnames_get_servers_behind_the_port_before_1_25_5)
{
    Plan plan = plan_for_nginx(two_terminate_listeners(), 1022001);
    BOOST_TEST(plan.warnings.empty(), plan.warnings[0]);
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 3u);
    const StreamServer &front = plan.stream_servers[0];
    BOOST_TEST(!front.terminate);
    BOOST_TEST(front.listen == "0.0.0.0:8443");
    BOOST_TEST_REQUIRE(front.routes.size() == 2u);
    const StreamServer &plain = plan.stream_servers[1], &db = plan.stream_servers[2];
    BOOST_TEST(db.listen == "127.254.0.2:8443");
    BOOST_TEST(db.certificate == "certs/listener_ns_cert.crt");
    BOOST_TEST(db.proxy_ssl);
    BOOST_TEST(plain.listen == "127.254.0.1:8443");
    BOOST_TEST(plain.certificate == "certs/listener_ns_cert2.crt");
    BOOST_TEST(!plain.proxy_ssl);
    BOOST_TEST_REQUIRE(plain.routes.size() == 1u);
    BOOST_TEST(!plain.routes[0].backends[0].upstream.empty());  // reached, in plaintext

    std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("map $ssl_preread_server_name $tls_route_1 {\n    hostnames;\n"
                         "    # a Terminate listener's hostname: to the server that terminates\n"
                         "    a.plain.example.com tls_terminate_1;\n"
                         "    # a Terminate listener's hostname: to the server that terminates\n"
                         "    db.example.com tls_terminate_2;\n    default tls_route_refused;\n}")
               != std::string::npos, conf);
    BOOST_TEST(conf.find("server {\n    listen 0.0.0.0:8443;\n    ssl_preread on;\n    proxy_pass $tls_route_1;\n")
               != std::string::npos, conf);
    BOOST_TEST(conf.find("    listen 127.254.0.1:8443 ssl;\n    ssl_certificate certs/listener_ns_cert2.crt;\n")
               != std::string::npos, conf);
    BOOST_TEST(conf.find("    listen 127.254.0.2:8443 ssl;\n    ssl_certificate certs/listener_ns_cert.crt;\n")
               != std::string::npos, conf);
    BOOST_TEST(conf.find("    server_name ") == std::string::npos, conf);

    // one certificate, and every route with a policy: one server, no hop
    plan = plan_for_nginx(setup() + gateway("gw", kTerminate)
                          + tls_route("db", "gw", "[db.example.com]", "[{name: db, port: 5432}]")
                          + tls_route("db2", "gw", "[db2.example.com]", "[{name: db, port: 5432}]"), 1022001);
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u);
    BOOST_TEST(plan.stream_servers[0].listen == "0.0.0.0:8443");
    BOOST_TEST(plan.stream_servers[0].terminate);
}

// From nginx 1.25.5 the stream module picks servers by SNI: a server per
// route hostname with its listener's certificate and its own proxy_ssl, so
// a plaintext backend and a TLS one share the port.
BOOST_AUTO_TEST_CASE(terminate_routes_get_stream_servers_by_name_from_1_25_5)
{
    Plan plan = plan_for_nginx(two_terminate_listeners(), 1025005);
    BOOST_TEST(plan.warnings.empty());
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u);
    const StreamServer &s = plan.stream_servers[0];
    BOOST_TEST(s.server_per_hostname);
    BOOST_TEST_REQUIRE(s.routes.size() == 2u);
    BOOST_TEST(s.routes[0].hostname == "a.plain.example.com");
    BOOST_TEST(!s.routes[0].proxy_ssl);
    BOOST_TEST(!s.routes[0].backends[0].upstream.empty());
    BOOST_TEST(s.routes[1].proxy_ssl);

    std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("map $ssl_server_name") == std::string::npos, conf);
    BOOST_TEST(conf.find("# TLSRoute ns/plain\nserver {\n    listen 0.0.0.0:8443 ssl;\n"
                         "    server_name a.plain.example.com;\n"
                         "    ssl_certificate certs/listener_ns_cert2.crt;\n"
                         "    ssl_certificate_key certs/listener_ns_cert2.key;\n"
                         "    proxy_ssl_verify_insecure deny;\n"
                         "    proxy_pass backend_ns_db_5433;\n}\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("# TLSRoute ns/db\nserver {\n    listen 0.0.0.0:8443 ssl;\n"
                         "    server_name db.example.com;\n"
                         "    ssl_certificate certs/listener_ns_cert.crt;\n"
                         "    ssl_certificate_key certs/listener_ns_cert.key;\n"
                         "    proxy_ssl_verify_insecure deny;\n"
                         "    proxy_pass backend_ns_db_5432;\n"
                         "    proxy_ssl on;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("# no route for this SNI: the connection is closed\nserver {\n"
                         "    listen 0.0.0.0:8443 ssl default_server;\n    server_name \"\";\n"
                         "    ssl_certificate certs/listener_ns_cert2.crt;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("    proxy_pass tls_route_refused;\n}") != std::string::npos, conf);

    // a route for any name is the default server itself
    plan = plan_for_nginx(setup() + gateway("gw", "  - {name: any, port: 8443, protocol: TLS, tls: {mode: Terminate, "
                                                  "certificateRefs: [{name: cert}]}}\n")
                          + tls_route("db", "gw", "", "[{name: db, port: 5432}]", "v1alpha2"), 1025005);
    conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("    listen 0.0.0.0:8443 ssl default_server;\n    server_name \"\";\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("tls_route_refused;\n}") == std::string::npos, conf);
    BOOST_TEST(conf.find("no route for this SNI: the connection is closed") == std::string::npos, conf);
}

// One route's own backends still share its server's proxy_ssl.
BOOST_AUTO_TEST_CASE(a_route_mixing_policies_refuses_its_plaintext_backend_from_1_25_5)
{
    Plan plan = plan_for_nginx(setup() + gateway("gw", kTerminate)
                                   + tls_route("db", "gw", "[db.example.com]",
                                               "[{name: db, port: 5432}, {name: db, port: 5433}]"),
                               1025005);
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u);
    const StreamServer &s = plan.stream_servers[0];
    BOOST_TEST_REQUIRE(s.routes.size() == 1u);
    BOOST_TEST(s.routes[0].proxy_ssl);
    BOOST_TEST_REQUIRE(s.routes[0].backends.size() == 2u);
    BOOST_TEST(s.routes[0].backends[1].upstream.empty());
    BOOST_TEST_REQUIRE(plan.warnings.size() == 1u);
    BOOST_TEST(plan.warnings[0].find("shares hostname \"db.example.com\" on 0.0.0.0:8443") != std::string::npos,
               plan.warnings[0]);
}

BOOST_AUTO_TEST_CASE(route_kinds_follow_the_listener_protocol)
{
    std::string listeners = "  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {kinds: [{kind: HTTPRoute}, {kind: TLSRoute}]}}\n"
                            + std::string(kPassthrough);
    Plan plan = plan_of(setup() + gateway("gw", listeners)
                        + tls_route("db", "gw", "[db.example.com]", "[{name: db, port: 5432}]")
                        + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: web, namespace: ns}\n"
                          "spec:\n  parentRefs: [{name: gw, sectionName: pass}]\n  rules: [{backendRefs: [{name: db, port: 5433}]}]\n");
    const ObjectStatus gw = status_of(plan, "Gateway", "gw");
    BOOST_TEST(listener_reasons(gw, "http")
               == "attached=0 kinds=HTTPRoute, Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=False/InvalidRouteKinds");
    BOOST_TEST(listener_reasons(gw, "pass").find("attached=1 kinds=TLSRoute,") == 0u);
    BOOST_TEST(reasons(status_of(plan, "HTTPRoute", "web")).find("gw:Accepted=False/NotAllowedByListeners") == 0u);
    BOOST_TEST(plan.servers.empty());
}

// TLSRouteModeMixed: Terminate and Passthrough listeners of one port. The
// port reads the SNI; a Terminate listener's hostname goes on, still
// encrypted, to the terminating server on a loopback address of its own.
BOOST_AUTO_TEST_CASE(terminate_and_passthrough_share_a_port_by_sni)
{
    std::string mixed = "  - {name: a, port: 443, protocol: TLS, hostname: \"*.a.example.com\", tls: {mode: Passthrough}}\n"
                        "  - {name: b, port: 443, protocol: TLS, hostname: b.example.com, tls: {mode: Terminate, "
                        "certificateRefs: [{name: cert}]}}\n"
                        "  - {name: c, port: 443, protocol: TLS, hostname: \"*.c.example.com\", tls: {mode: Terminate, "
                        "certificateRefs: [{name: cert}]}}\n";
    Plan plan = plan_of(setup() + gateway("gw", mixed)
                        + tls_route("db", "gw", "[db.a.example.com]", "[{name: db, port: 5432}]")
                        + tls_route("term", "gw", "[b.example.com, x.c.example.com]", "[{name: db, port: 5433}]"));
    const ObjectStatus gw = status_of(plan, "Gateway", "gw");
    BOOST_TEST(listener_reasons(gw, "a").find("attached=1 kinds=TLSRoute, Accepted=True/Accepted") == 0u, listener_reasons(gw, "a"));
    BOOST_TEST(listener_reasons(gw, "b").find("attached=1 kinds=TLSRoute, Accepted=True/Accepted") == 0u, listener_reasons(gw, "b"));
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 2u);
    std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("upstream tls_terminate_1 {\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("    server 127.254.0.1:443;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("map $ssl_preread_server_name $tls_route_1 {\n    hostnames;\n"
                         "    # a Terminate listener's hostname: to the server that terminates\n"
                         "    *.c.example.com tls_terminate_1;\n"
                         "    # a Terminate listener's hostname: to the server that terminates\n"
                         "    b.example.com tls_terminate_1;\n"
                         "    # TLSRoute ns/db\n    db.a.example.com backend_ns_db_5432_passthrough;\n"
                         "    default tls_route_refused;\n}") != std::string::npos, conf);
    BOOST_TEST(conf.find("map $ssl_server_name $tls_route_2 {\n    hostnames;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("server {\n    listen 0.0.0.0:443;\n    ssl_preread on;\n    proxy_pass $tls_route_1;\n")
               != std::string::npos, conf);
    BOOST_TEST(conf.find("server {\n    listen 127.254.0.1:443 ssl;\n") != std::string::npos, conf);
}

// A mixed port whose Terminate listeners differ in certificates: before
// 1.25.5 each Terminate hostname has its own hop from the Passthrough
// server; from 1.25.5 one hop reaches the Terminate servers, which nginx
// picks by SNI.
BOOST_AUTO_TEST_CASE(a_mixed_port_with_terminate_certificates_that_differ)
{
    std::string mixed = "  - {name: a, port: 443, protocol: TLS, hostname: \"*.a.example.com\", tls: {mode: Passthrough}}\n"
                        "  - {name: b, port: 443, protocol: TLS, hostname: b.example.com, tls: {mode: Terminate, "
                        "certificateRefs: [{name: cert}]}}\n"
                        "  - {name: c, port: 443, protocol: TLS, hostname: \"*.c.example.com\", tls: {mode: Terminate, "
                        "certificateRefs: [{name: cert2}]}}\n";
    std::string yaml = setup() + "---\n" + tls_secret_yaml("cert2", "ns") + gateway("gw", mixed)
                       + tls_route("pass", "gw", "[db.a.example.com]", "[{name: db, port: 5432}]")
                       + tls_route("plain", "gw", "[b.example.com]", "[{name: db, port: 5433}]")
                       + tls_route("db", "gw", "[x.c.example.com]", "[{name: db, port: 5432}]");

    Plan plan = plan_for_nginx(yaml, 1022001);
    BOOST_TEST(plan.warnings.empty());
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 3u);
    const StreamServer &front = plan.stream_servers[0];
    BOOST_TEST(!front.terminate);
    BOOST_TEST(front.listen == "0.0.0.0:443");
    BOOST_TEST(plan.stream_servers[1].listen == "127.254.0.1:443");
    BOOST_TEST(plan.stream_servers[1].certificate == "certs/listener_ns_cert.crt");
    BOOST_TEST(!plan.stream_servers[1].proxy_ssl);
    BOOST_TEST(plan.stream_servers[2].listen == "127.254.0.2:443");
    BOOST_TEST(plan.stream_servers[2].certificate == "certs/listener_ns_cert2.crt");
    BOOST_TEST(plan.stream_servers[2].proxy_ssl);
    std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("map $ssl_preread_server_name $tls_route_1 {\n    hostnames;\n"
                         "    # a Terminate listener's hostname: to the server that terminates\n"
                         "    b.example.com tls_terminate_1;\n"
                         "    # TLSRoute ns/pass\n    db.a.example.com backend_ns_db_5432_passthrough;\n"
                         "    # a Terminate listener's hostname: to the server that terminates\n"
                         "    x.c.example.com tls_terminate_2;\n"
                         "    default tls_route_refused;\n}") != std::string::npos, conf);

    plan = plan_for_nginx(yaml, 1025005);
    BOOST_TEST(plan.warnings.empty());
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 2u);
    BOOST_TEST(plan.stream_servers[1].listen == "127.254.0.1:443");
    BOOST_TEST(plan.stream_servers[1].server_per_hostname);
    conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("    *.c.example.com tls_terminate_1;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("    b.example.com tls_terminate_1;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("    listen 127.254.0.1:443 ssl;\n    server_name x.c.example.com;\n"
                         "    ssl_certificate certs/listener_ns_cert2.crt;\n") != std::string::npos, conf);
    BOOST_TEST(conf.find("    listen 127.254.0.1:443 ssl default_server;\n") != std::string::npos, conf);
}

// TLSRoutes on Gateway gw's listener x (*.x.example.com), 16 hostnames
// each, `hostnames` in all.
std::string routes_with_hostnames(int hostnames)
{
    std::string yaml;
    for (int r = 0; r * 16 < hostnames; r++) {
        std::string list = "[";
        for (int h = r * 16; h < std::min(hostnames, r * 16 + 16); h++) {
            list += (h % 16 ? ", h" : "h") + std::to_string(h) + ".x.example.com";
        }
        yaml += tls_route("r" + std::to_string(r), "gw", list + "]", "[{name: db, port: 5433}]");
    }
    return yaml;
}

const std::string kTwoCertificateListeners =
    "  - {name: x, port: 8443, protocol: TLS, hostname: \"*.x.example.com\", tls: {mode: Terminate, "
    "certificateRefs: [{name: cert}]}}\n"
    "  - {name: y, port: 8443, protocol: TLS, hostname: \"*.y.example.com\", tls: {mode: Terminate, "
    "certificateRefs: [{name: cert2}]}}\n";

// 127.254.0.0/16 bounds the terminating servers behind ports: a port with
// more hostnames than addresses left stays one server, and says so, rather
// than render an address nginx refuses (every tenant's update lost).
BOOST_AUTO_TEST_CASE(terminate_hostnames_past_the_loopback_addresses_keep_one_server)
{
    std::string yaml = setup() + "---\n" + tls_secret_yaml("cert2", "ns") + gateway("gw", kTwoCertificateListeners)
                       + routes_with_hostnames(65552) + tls_route("y", "gw", "[a.y.example.com]", "[{name: db, port: 5433}]");
    Plan plan = plan_for_nginx(yaml, 1022001);
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u);
    BOOST_TEST(plan.stream_servers[0].listen == "0.0.0.0:8443");
    BOOST_TEST(plan.stream_servers[0].routes.size() == 65553u);
    BOOST_TEST_REQUIRE(plan.warnings.size() == 2u);
    BOOST_TEST(plan.warnings[0] == "stream listener 0.0.0.0:8443: more Terminate hostnames than loopback addresses for "
                                   "them; the port is one server");
    BOOST_TEST(plan.warnings[1].find("TLS listeners with different certificates share the port") != std::string::npos);
}

// The addresses all taken by one port, a mixed port after it has no hop
// for its Terminate listeners: their hostnames are refused, its Passthrough
// routes still served.
BOOST_AUTO_TEST_CASE(a_mixed_port_without_a_loopback_address_left_refuses_its_terminate_hostnames)
{
    const std::string mixed = "  - {name: p, port: 9443, protocol: TLS, hostname: p.example.com, tls: {mode: Passthrough}}\n"
                              "  - {name: t, port: 9443, protocol: TLS, hostname: t.example.com, tls: {mode: Terminate, "
                              "certificateRefs: [{name: cert}]}}\n";
    std::string yaml = setup() + "---\n" + tls_secret_yaml("cert2", "ns")
                       + gateway("gw", kTwoCertificateListeners + mixed)
                       + routes_with_hostnames(65534) + tls_route("y", "gw", "[a.y.example.com]", "[{name: db, port: 5433}]")
                       + tls_route("pass", "gw", "[p.example.com]", "[{name: db, port: 5432}]")
                       + tls_route("term", "gw", "[t.example.com]", "[{name: db, port: 5433}]");
    Plan plan = plan_for_nginx(yaml, 1022001);
    BOOST_TEST_REQUIRE(plan.stream_servers.size() == 1u + 65535u + 1u);
    BOOST_TEST(plan.stream_servers[65535].listen == "127.254.255.255:8443");
    const StreamServer &mixed_port = plan.stream_servers.back();
    BOOST_TEST(mixed_port.listen == "0.0.0.0:9443");
    BOOST_TEST(!mixed_port.terminate);
    BOOST_TEST_REQUIRE(mixed_port.routes.size() == 1u);
    BOOST_TEST(mixed_port.routes[0].hostname == "p.example.com");
    BOOST_TEST_REQUIRE(plan.warnings.size() == 1u);
    BOOST_TEST(plan.warnings[0] == "stream listener 0.0.0.0:9443: no loopback address is left for its Terminate "
                                   "listeners; their hostnames are refused");
    std::string conf = render_stream_conf(plan, Options());
    BOOST_TEST(conf.find("127.254.256.") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(protocol_conflicts_on_one_port)
{
    // one Gateway: HTTP and TLS on one port -> both lose it
    std::string mixed = "  - {name: a, port: 443, protocol: TLS, hostname: a.example.com, tls: {mode: Passthrough}}\n"
                        "  - {name: b, port: 443, protocol: HTTP, hostname: b.example.com}\n";
    Plan plan = plan_of(setup() + gateway("gw", mixed)
                        + tls_route("db", "gw", "[a.example.com]", "[{name: db, port: 5432}]"));
    const ObjectStatus gw = status_of(plan, "Gateway", "gw");
    BOOST_TEST(listener_reasons(gw, "a") == "attached=0 kinds=TLSRoute, Accepted=False/ProtocolConflict "
                                            "Programmed=False/ProtocolConflict Conflicted=True/ProtocolConflict");
    BOOST_TEST(listener_reasons(gw, "b").find("Accepted=False/ProtocolConflict Programmed=False/ProtocolConflict "
                                              "Conflicted=True/ProtocolConflict") != std::string::npos,
               listener_reasons(gw, "b"));
    BOOST_TEST(reasons(status_of(plan, "TLSRoute", "db")).find("gw:Accepted=False/NotAllowedByListeners") == 0u);
    BOOST_TEST(plan.stream_servers.empty());

    // two Gateways on one address: the first (by name) keeps the port's protocol
    plan = plan_of(setup() + gateway("a-web", "  - {name: http, port: 443, protocol: HTTP}\n")
                   + gateway("b-tls", kPassthrough));
    BOOST_TEST(listener_reasons(status_of(plan, "Gateway", "a-web"), "http").find("Accepted=True/Accepted") != std::string::npos);
    BOOST_TEST(listener_reasons(status_of(plan, "Gateway", "b-tls"), "pass").find("Accepted=False/ProtocolConflict")
               != std::string::npos);
}

BOOST_AUTO_TEST_CASE(weights_and_invalid_backends)
{
    Plan plan = plan_of(setup() + gateway("gw", kPassthrough)
                        + tls_route("db", "gw", "[db.example.com]",
                                    "[{name: db, port: 5432, weight: 3}, {name: missing, port: 1, weight: 1}]"));
    BOOST_TEST(reasons(status_of(plan, "TLSRoute", "db")) == "gw:Accepted=True/Accepted gw:ResolvedRefs=False/BackendNotFound ");
    std::string conf = render_stream_conf(plan, Options());
    // the missing Service keeps its quarter of the connections, refused
    BOOST_TEST(conf.find("split_clients \"${remote_addr}${remote_port}${msec}\" $tls_split_1 {\n"
                         "    75.00% backend_ns_db_5432_passthrough;\n    * tls_route_refused;\n}") != std::string::npos, conf);
    BOOST_TEST(conf.find("    db.example.com $tls_split_1;") != std::string::npos, conf);
}

BOOST_AUTO_TEST_SUITE_END()
