// Issue 16: every string field a tenant writes, set to each value of a
// hostile corpus, and the rendered configuration read back with nginx's
// token grammar (hostile_property.h says what must hold).
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "hostile_property.h"
#include "apply/nginx_check.h"
#include "apply/output.h"
#include "test_support.h"

using namespace g2n_test;

namespace {

std::string benign()
{
    return hostile_benign_manifests(test_cert_file("ca.crt"), test_cert_file("leaf.crt"), test_cert_file("leaf.key"));
}

// Every field with every hostile value (a renamed key is an unknown field:
// a few values show it is refused); `check(field, value)` says what fails.
// Returns the substitutions made; reports the first failure of each field
// (one field, one fix), at most 60. With `shards` > 1, the fields whose
// position is `shard` modulo `shards` alone.
size_t check_each_substitution(const HostileProperty &property,
                               const std::function<std::string(size_t, const std::string &)> &check,
                               size_t shard = 0, size_t shards = 1)
{
    std::vector<std::string> values = hostile_values();
    size_t checked = 0, failures = 0;
    for (size_t i = shard; i < property.paths().size(); i += shards) {
        size_t path_failures = 0;
        size_t tries = property.paths()[i].is_key ? 6 : values.size();
        std::vector<std::string> tried;
        for (size_t v = 0; v < tries; v++) tried.push_back(values[v * values.size() / tries]);
        // the field's own valid text with a tail a C string or a line
        // would not show: a check that stops at NUL or at the end of a line
        // passes it
        for (const char *tail : {"\0x", "\nx"}) tried.push_back(property.paths()[i].original + std::string(tail, 2));
        for (const std::string &value : tried) {
            std::string failure = check(i, value);
            checked++;
            if (!failure.empty() && ++path_failures == 1 && ++failures <= 60) BOOST_ERROR(failure.substr(0, 300));
        }
    }
    BOOST_TEST(failures == 0u);
    return checked;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(hostile_input)

BOOST_AUTO_TEST_CASE(the_benign_manifests_render_everything_the_property_looks_at)
{
    HostileProperty property(benign());
    const Rendered &r = property.baseline();
    BOOST_TEST_REQUIRE(r.error.empty(), r.error);
    BOOST_TEST(r.rejected == 0u);
    BOOST_TEST(property.paths().size() > 150u);
    // each kind of block and directive that carries tenant text is there
    for (const char *name : {"map>default", "split_clients><key>", "upstream>proxy_ssl_verify_san",
                             "upstream>proxy_ssl_verify_pin", "upstream>grpc_ssl_verify_ca", "server>location>rewrite",
                             "server>location>add_header", "server>location>proxy_set_header", "server>location>if",
                             "server>location>if>add_header",
                             "server>location>grpc_set_header", "server>location>grpc_hide_header",
                             "server>location>return", "server>proxy_ssl_certificate", "server>ssl_preread",
                             "server>proxy_timeout", "server>location>gateway_tls_request_timeout",
                             "server>location>error_page", "server>gateway_tls_h2c_preface"}) {
        BOOST_TEST((std::find(r.names.begin(), r.names.end(), name) != r.names.end()), name);
    }
    BOOST_TEST(r.statuses.find("=False") == std::string::npos, r.statuses);
    // a tenant's ListenerSet, accepted, serving its route
    BOOST_TEST(r.statuses.find("ListenerSet app/team") != std::string::npos, r.statuses);
    // a Terminate port of a backend with a policy and one without: for
    // nginx 1.22 a terminating server per hostname behind the port, from
    // 1.25.5 a server per hostname picked by SNI
    for (long version : {g2n::Options().nginx_version, g2n::kNginxStreamServerName}) {
        g2n::Options options;
        options.nginx_version = version;
        g2n::Plan plan = g2n::resolve(parse(benign()), options);
        size_t behind = 0, by_name = 0, tcp = 0, udp = 0;
        for (const g2n::StreamServer &s : plan.stream_servers) {
            behind += s.listen.rfind("127.254.", 0) == 0;
            by_name += s.server_per_hostname;
            tcp += s.protocol == g2n::StreamProtocol::TCP;
            udp += s.protocol == g2n::StreamProtocol::UDP;
        }
        BOOST_TEST(tcp == 1u);  // the TCPRoute's listener
        BOOST_TEST(udp == 1u);  // the UDPRoute's
        BOOST_TEST(behind == (version < g2n::kNginxStreamServerName ? 2u : 0u));
        BOOST_TEST(by_name == (version < g2n::kNginxStreamServerName ? 0u : 1u));
    }
}

BOOST_AUTO_TEST_CASE(no_string_field_changes_the_shape_of_the_configuration)
{
    HostileProperty property(benign());
    size_t checked = check_each_substitution(
        property, [&](size_t field, const std::string &value) { return property.check(field, value); });
    BOOST_TEST_MESSAGE("hostile input: " << checked << " substitutions checked");
}

// The configuration for a newer nginx is cut differently (the http2
// directive, a stream server per Terminate hostname): the same property.
BOOST_AUTO_TEST_CASE(no_string_field_changes_the_shape_for_a_newer_nginx)
{
    HostileProperty property(benign(), g2n::kNginxStreamServerName);
    const Rendered &r = property.baseline();
    BOOST_TEST_REQUIRE(r.error.empty(), r.error);
    BOOST_TEST((std::find(r.names.begin(), r.names.end(), "server>http2") != r.names.end()));
    size_t checked = check_each_substitution(
        property, [&](size_t field, const std::string &value) { return property.check(field, value); });
    BOOST_TEST_MESSAGE("hostile input, nginx 1.25.5: " << checked << " substitutions checked");
}

BOOST_AUTO_TEST_SUITE_END()

// The same substitutions, and what the generator writes for each run
// through nginx -t with the module: what validation lets through, nginx
// accepts, or --check would have to leave the object out. Needs nginx and
// the module (GTLS_NGINX, GTLS_MODULE_DIR; GTLS_PORT_OFFSET moves the
// listeners nginx would listen on; GTLS_SHARD=K/N a share of the fields):
// t/265 runs it, by name, as it is disabled otherwise, as two processes
// side by side. Each distinct configuration is checked once.
BOOST_AUTO_TEST_SUITE(hostile_input_nginx, *boost::unit_test::disabled())

BOOST_AUTO_TEST_CASE(nginx_accepts_what_the_generator_writes)
{
    const char *nginx = std::getenv("GTLS_NGINX");
    const char *modules = std::getenv("GTLS_MODULE_DIR");
    BOOST_TEST_REQUIRE((nginx != nullptr && modules != nullptr), "GTLS_NGINX and GTLS_MODULE_DIR name nginx and the module");
    g2n::Options options;
    options.module_dir = modules;
    // the configuration as gateway2nginx writes it for this nginx
    if (std::optional<g2n::NginxBuild> build = g2n::nginx_build(nginx)) g2n::follow_nginx_build(*build, &options);
    options.listen_address = "127.0.0.1";
    options.status_listen = "off";
    options.port_offset = std::getenv("GTLS_PORT_OFFSET") ? std::atoi(std::getenv("GTLS_PORT_OFFSET")) : 0;
    options.upstream_api = "127.0.0.1:" + std::to_string(9114 + options.port_offset);
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gtls-nginx-accepts-" + std::to_string(::getpid()));
    // an ExternalName nginx resolves wherever it runs
    std::string manifests = benign();
    const std::string external = "externalName: db.internal.example.com";
    BOOST_TEST_REQUIRE(manifests.find(external) != std::string::npos);
    manifests.replace(manifests.find(external), external.size(), "externalName: localhost");
    HostileProperty property(manifests, options.nginx_version);
    // GTLS_SHARD=K/N: a share of the fields, for N processes side by side
    size_t shard = 0, shards = 1;
    if (const char *given = std::getenv("GTLS_SHARD")) {
        BOOST_TEST_REQUIRE(std::sscanf(given, "%zu/%zu", &shard, &shards) == 2);
        BOOST_TEST_REQUIRE(shard < shards);
    }
    std::set<std::string> seen;
    size_t refused_as_a_whole = 0;
    size_t checked = check_each_substitution(property, [&](size_t field, const std::string &value) -> std::string {
        g2n::Manifests m;
        std::istringstream in(property.manifests_with(field, value));
        try {
            g2n::parse_stream(in, "hostile.yaml", &m);
        } catch (const g2n::InputError &) {
            refused_as_a_whole++;  // the shape test's concern
            return "";
        }
        g2n::Plan plan = g2n::resolve(m, options);
        std::string text = g2n::render_nginx_conf(plan, options) + g2n::render_http_conf(plan, options)
                           + g2n::render_stream_conf(plan, options);
        for (const g2n::OutputFile &f : plan.files) text += f.path + f.content;
        if (!seen.insert(text).second) return "";
        g2n::write_configuration(plan, options, dir, false);
        std::optional<std::string> refusal = g2n::nginx_refusal(nginx, dir, true);
        if (!refusal) return "";
        // a name only DNS can judge: what --check leaves out (t/260)
        if (property.paths()[field].where.find(".externalName") != std::string::npos
            && refusal->rfind("host not found in upstream", 0) == 0) {
            return "";
        }
        return property.where(field, value) + "nginx -t refuses: " + *refusal;
    }, shard, shards);
    std::filesystem::remove_all(dir);
    BOOST_TEST(seen.size() > 200u / shards);
    BOOST_TEST_MESSAGE("nginx accepts: " << seen.size() << " distinct configurations of " << checked
                                         << " substitutions (" << refused_as_a_whole << " refused as a whole)");
}

BOOST_AUTO_TEST_SUITE_END()
