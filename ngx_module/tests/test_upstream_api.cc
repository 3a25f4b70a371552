#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "gtls_routes_json.h"
#include "gtls_upstream_api.h"

using gtls::ApiError;
using gtls::parse_server_list;
using gtls::parse_api_update;
using gtls::UpstreamServer;

namespace {

// The refusal of `body`: its status and text ("" when it was accepted).
std::string refusal(const std::string &body, int *status = nullptr)
{
    try {
        parse_api_update(body);
    } catch (const ApiError &e) {
        if (status != nullptr) *status = e.status();
        return e.what();
    }
    return "";
}

std::string one(const std::string &servers)
{
    return R"({"upstreams": {"web": {"servers": )" + servers + "}}}";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(upstream_api)

BOOST_AUTO_TEST_CASE(a_full_list_parses_with_nginx_defaults)
{
    auto updates = parse_api_update(R"({"upstreams": {
        "backend_a": {"servers": [{"address": "10.0.0.1:8443"},
                                  {"address": "10.0.0.2:8443", "weight": 3, "max_conns": 10, "max_fails": 0,
                                   "fail_timeout": 30, "down": true}]},
        "backend_b": {"servers": [{"address": "[FD00:0::1]:80"}]},
        "backend_c": {"servers": []}}})").upstreams;
    BOOST_TEST_REQUIRE(updates.size() == 3u);
    BOOST_TEST(updates[0].upstream == "backend_a");
    BOOST_TEST_REQUIRE(updates[0].servers.size() == 2u);
    const UpstreamServer &a = updates[0].servers[0];
    BOOST_TEST(a.address == "10.0.0.1:8443");
    BOOST_TEST(a.family == 4);
    BOOST_TEST(a.port == 8443);
    BOOST_TEST((a.weight == 1 && a.max_conns == 0 && a.max_fails == 1 && a.fail_timeout == 10 && !a.down));
    const UpstreamServer &b = updates[0].servers[1];
    BOOST_TEST((b.weight == 3 && b.max_conns == 10 && b.max_fails == 0 && b.fail_timeout == 30 && b.down));
    // canonical, as nginx names a peer
    BOOST_TEST(updates[1].servers[0].address == "[fd00::1]:80");
    BOOST_TEST(updates[1].servers[0].family == 6);
    BOOST_TEST(updates[2].servers.empty());
}

// stream{} names its upstreams apart from http{}: one name may be both
BOOST_AUTO_TEST_CASE(stream_upstreams_parse_apart_from_http_upstreams)
{
    auto update = parse_api_update(R"({"stream_upstreams": {"db": {"servers": [{"address": "10.0.0.5:5432"}]},
                                                              "web": {"servers": []}},
                                       "upstreams": {"web": {"servers": [{"address": "10.0.0.1:8443", "weight": 2}]}}})");
    BOOST_TEST_REQUIRE(update.upstreams.size() == 1u);
    BOOST_TEST(update.upstreams[0].upstream == "web");
    BOOST_TEST(update.upstreams[0].servers.at(0).weight == 2u);
    BOOST_TEST_REQUIRE(update.stream_upstreams.size() == 2u);
    BOOST_TEST(update.stream_upstreams[0].upstream == "db");
    BOOST_TEST(update.stream_upstreams[0].servers.at(0).address == "10.0.0.5:5432");
    BOOST_TEST(update.stream_upstreams[1].upstream == "web");
    BOOST_TEST(update.stream_upstreams[1].servers.empty());
    BOOST_TEST(update.policies.empty());
    // stream lists alone, checked and named as http's are
    BOOST_TEST(parse_api_update(R"({"stream_upstreams": {"db": {"servers": []}}})").upstreams.empty());
    BOOST_TEST(refusal(R"({"stream_upstreams": {}})") == "stream_upstreams: names no upstream");
    BOOST_TEST(refusal(R"({"stream_upstreams": {"db": {"servers": [{"address": "db.ns.svc:5432"}]}}})")
                   .rfind(R"(stream_upstreams["db"].servers[0].address: )", 0)
               == 0);
    BOOST_TEST(refusal(R"({"stream_upstreams": {"a b": {"servers": []}}})") == R"(stream_upstreams["a b"]: is not an upstream name)");
    BOOST_TEST(refusal(R"({"streams": {}})").find("(known: upstreams, stream_upstreams, policies, routes, certificates)") != std::string::npos);
}

// A body's sections are read by two readers (routes apart): each takes
// every section the other reads, beside its own
BOOST_AUTO_TEST_CASE(every_body_section_is_known_to_both_readers)
{
    for (const char *section : gtls::kApiBodySections) {
        if (std::string(section) == "routes") continue;
        const std::string body = std::string(R"({"routes": {"t": {}}, )") + gtls::json_string(section) + ": {}}";
        BOOST_TEST(gtls::parse_route_update(body).size() == 1u, section);
        const std::string refused = refusal(body);
        BOOST_TEST(refused.find("unknown field") == std::string::npos, section << ": " << refused);
    }
}

BOOST_AUTO_TEST_CASE(what_the_api_writes_it_reads_back)
{
    auto servers = parse_api_update(one(R"([{"address": "127.0.0.1:1", "weight": 1000, "down": true},
                                            {"address": "[::1]:65535", "max_conns": 1000000}])")).upstreams[0].servers;
    auto again = parse_server_list(gtls::upstream_servers_json(servers));
    BOOST_TEST((again == servers));
    BOOST_TEST(gtls::server_list_fingerprint(again) == gtls::server_list_fingerprint(servers));
    again[1].weight = 2;
    BOOST_TEST(gtls::server_list_fingerprint(again) != gtls::server_list_fingerprint(servers));
    std::swap(again[0], again[1]);
    again[0].weight = 1;
    BOOST_TEST(gtls::server_list_fingerprint(again) != gtls::server_list_fingerprint(servers));
}

BOOST_AUTO_TEST_CASE(malformed_json_is_refused_with_its_line_and_column)
{
    int status = 0;
    BOOST_TEST(refusal("{\"upstreams\":\n {\"web\" {}}}", &status) == "JSON line 2, column 9: Missing a colon after a name of object member.");
    BOOST_TEST(status == 400);
    for (const char *bad : {"", "   ", "{", "{\"upstreams\"", "{\"upstreams\": }", "{\"policies\": {\"ns/p\": {\"ca\": \"system\"}}} x", "{'upstreams': {}}",
                            "{\"upstreams\": {\"a\": {\"servers\": [,]}}}", "{\"upstreams\": {\"a\": {\"servers\": [{\"address\": \"10.0.0.1:1\", \"max_conns\": 01}]}}}",
                            "{\"upstreams\": \"\\x\"}", "{\"upstreams\": \"\\ud800\"}", "{\"upstreams\": \"a\nb\"}",
                            "{\"upstreams\": tru}", "{\"upstreams\": 1.}", "{\"upstreams\": -}", "nul"}) {
        BOOST_TEST(refusal(bad).rfind("JSON line ", 0) == 0u, bad);
    }
    // read as it comes: a deep body is refused at its first value out of
    // place, and where values are skipped (a list), nesting is bounded;
    // never a stack overflow
    BOOST_TEST(refusal(std::string(100000, '[')) == "the body: must be an object, not an array");
    try {
        gtls::pushed_policies("{\"x\": " + std::string(100000, '['));
        BOOST_ERROR("a list nested 100,000 deep is read");
    } catch (const ApiError &e) {
        BOOST_TEST(std::string(e.what()).find("nested deeper than 8 levels") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_CASE(every_field_is_checked_and_named)
{
    BOOST_TEST(refusal("[]") == "the body: must be an object, not an array");
    BOOST_TEST(refusal("{}") == "the body: \"upstreams\", \"stream_upstreams\", \"policies\", \"routes\" or \"certificates\" is required");
    BOOST_TEST(refusal(R"({"upstreams": {"a": {"servers": []}}, "x": 1})").find("unknown field \"x\"") != std::string::npos);
    BOOST_TEST(refusal(R"({"upstreams": {}})") == "upstreams: names no upstream");
    BOOST_TEST(refusal(R"({"upstreams": {"a": {"servers": []}, "a": {"servers": []}}})").find("the key \"a\" appears twice")
               != std::string::npos);
    BOOST_TEST(refusal(R"({"upstreams": {"a b": {"servers": []}}})") == R"(upstreams["a b"]: is not an upstream name)");
    BOOST_TEST(refusal(R"({"upstreams": {"a": {"servers": [], "zone": 1}}})")
               == R"(upstreams["a"]: unknown field "zone" (known: servers))");
    BOOST_TEST(refusal(one(R"({})")) == R"(upstreams["web"].servers: must be an array, not an object)");
    BOOST_TEST(refusal(one(R"([{"weight": 1}])")) == R"(upstreams["web"].servers[0]: "address" is required)");
    BOOST_TEST(refusal(one(R"([{"address": "10.0.0.1:80"}, {"address": "web.default.svc:80"}])"))
               .rfind(R"(upstreams["web"].servers[1].address: "web.default.svc:80": "web.default.svc" is not an IPv4)", 0)
               == 0u);
    BOOST_TEST(refusal(one(R"([{"address": "10.0.0.1:80", "backup": true}])"))
               .find(R"(unknown field "backup")") != std::string::npos);
    BOOST_TEST(refusal(one(R"([{"address": "10.0.0.1:80", "weight": 0}])"))
               == R"(upstreams["web"].servers[0].weight: must be a whole number from 1 to 1000, not 0)");
    BOOST_TEST(refusal(one(R"([{"address": "10.0.0.1:80", "down": "yes"}])"))
               == R"(upstreams["web"].servers[0].down: must be a boolean, not a string)");
    for (const char *bad : {R"("weight": 1001)", R"("weight": 1.5)", R"("weight": -1)", R"("weight": 1e2)",
                            R"("max_fails": 1001)", R"("fail_timeout": 86401)", R"("max_conns": 99999999999999)",
                            R"("weight": "2")", R"("weight": null)"}) {
        std::string body = one(std::string(R"([{"address": "10.0.0.1:80", )") + bad + "}]");
        BOOST_TEST(refusal(body).find("servers[0].") != std::string::npos, bad);
    }
}

BOOST_AUTO_TEST_CASE(addresses_are_ip_literals_with_a_port)
{
    for (const char *good : {"0.0.0.0:1", "255.255.255.255:65535", "[::]:1", "[::ffff:10.0.0.1]:443"}) {
        BOOST_TEST(gtls::parse_server_address(good, "a").port > 0, good);
        BOOST_TEST(gtls::is_server_address(good), good);
    }
    const std::string long_literal = "[" + std::string(60, '1') + "]:80";
    for (const char *bad : {"10.0.0.1", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:+80", "10.0.0.1:80 ",
                            " 10.0.0.1:80", "10.0.0.01:80", "10.0.0:80", "::1:80", "[::1]80", "[::1]:", "[::1",
                            "[10.0.0.1]:80", "localhost:80", "10.0.0.1:80;", "10.0.0.1:8080:80", "unix:/tmp/s",
                            "10.0.0.1:123456", "10.0.0.1:99999", "", long_literal.c_str()}) {
        BOOST_CHECK_THROW(gtls::parse_server_address(bad, "a"), ApiError);
        BOOST_TEST(!gtls::is_server_address(bad), bad);  // the same verdict, with no text made
    }
}

BOOST_AUTO_TEST_CASE(sizes_are_bounded)
{
    std::string many = "[";
    for (size_t i = 0; i <= gtls::kMaxApiServers; i++) many += std::string(i ? "," : "") + R"({"address":"10.0.0.1:80"})";
    many += "]";
    BOOST_TEST(refusal(one(many)) == R"(upstreams["web"].servers: 10001 servers, more than 10000)");
    BOOST_TEST(refusal(R"({"upstreams": {")" + std::string(256, 'a') + R"(": {"servers": []}}})")
                   .find("is not an upstream name") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(replies_escape_what_they_quote)
{
    BOOST_TEST(gtls::json_string("a\"b\\c\n\x01\xff") == R"("a\"b\\c\u000a\u0001\ufffd")");
    BOOST_TEST(gtls::api_error_json(404, "no upstream \"x\"") == "{\"error\":{\"status\":404,\"text\":\"no upstream \\\"x\\\"\"}}\n");
    // a hostile name comes back quoted, never raw
    BOOST_TEST(refusal(R"({"upstreams": {"a\"}\n": {"servers": []}}})") == R"(upstreams["a\"}\u000a"]: is not an upstream name)");
}

BOOST_AUTO_TEST_CASE(policies_trust_a_ca_bundle_pins_or_both)
{
    const std::string pem = "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n";
    auto update = parse_api_update(R"({"policies": {"ns/web-tls": {"ca": ")" + pem + R"("},
        "ns/pinned": {"pins": ["sha256-spki:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                               "sha256-cert:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:FF"]},
        "ns/both": {"ca": "system", "pins": []}},
        "upstreams": {"web": {"servers": []}}})");
    BOOST_TEST(update.upstreams.size() == 1u);
    BOOST_TEST_REQUIRE(update.policies.size() == 3u);
    BOOST_TEST(update.policies[0].policy == "ns/web-tls");
    BOOST_TEST(update.policies[0].ca == "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    // pins are kept normalised
    BOOST_TEST(update.policies[1].pins[1] == "sha256-cert:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
    BOOST_TEST(update.policies[2].ca == "system");
    for (const gtls::PolicyTrust &t : update.policies) {
        BOOST_TEST((gtls::parse_policy_trust(gtls::policy_trust_json(t), t.policy) == t));
    }
}

// A spare upstream{} becomes a backend new to nginx: the push names the
// peer as BackendTLSPolicy does (hostname, subjectAltNames), each checked
// as its directive would be.
BOOST_AUTO_TEST_CASE(policies_may_name_the_peer)
{
    auto update = parse_api_update(R"({"policies": {"gateway2nginx|spare-0": {"ca": "system",
        "hostname": "api.shop.internal", "subject_alt_names": ["dns:api.shop.internal", "uri:spiffe://td/ns/shop/sa/api"]},
        "ns/plain": {"ca": "system"}, "ns/none": {"ca": "system", "subject_alt_names": []}}})");
    BOOST_TEST_REQUIRE(update.policies.size() == 3u);
    BOOST_TEST(update.policies[0].hostname.value_or("") == "api.shop.internal");
    BOOST_TEST(update.policies[0].subject_alt_names->size() == 2u);
    BOOST_TEST(update.policies[0].names_peer());
    BOOST_TEST(!update.policies[1].names_peer());
    BOOST_TEST(update.policies[2].subject_alt_names->empty());
    for (const gtls::PolicyTrust &t : update.policies) {
        BOOST_TEST((gtls::parse_policy_trust(gtls::policy_trust_json(t), t.policy) == t));
    }

    auto policy = [](const std::string &trust) { return R"({"policies": {"ns/p": )" + trust + "}}"; };
    BOOST_TEST(refusal(policy(R"({"ca": "system", "hostname": ""})")) == R"(policies["ns/p"].hostname: is empty)");
    BOOST_TEST(refusal(policy(R"({"ca": "system", "hostname": "a b"})")).rfind(R"(policies["ns/p"].hostname: )", 0) == 0u);
    BOOST_TEST(refusal(policy(R"({"ca": "system", "hostname": ["a"]})")) == R"(policies["ns/p"].hostname: must be a string, not an array)");
    BOOST_TEST(refusal(policy(R"({"ca": "system", "subject_alt_names": "dns:a"})"))
               == R"(policies["ns/p"].subject_alt_names: must be an array, not a string)");
    BOOST_TEST(refusal(policy(R"({"ca": "system", "subject_alt_names": ["a.example"]})"))
                   .rfind(R"(policies["ns/p"].subject_alt_names[0]: )", 0) == 0u);
    BOOST_TEST(refusal(policy(R"({"ca": "system", "subject_alt_names": ["dns~("]})"))
                   .rfind(R"(policies["ns/p"].subject_alt_names[0]: )", 0) == 0u);
    BOOST_TEST(refusal(policy(R"({"ca": "system", "subject_alt_names": [{}]})"))
               == R"(policies["ns/p"].subject_alt_names[0]: must be a string, not an object)");
    // the names alone trust nothing
    BOOST_TEST(refusal(policy(R"({"hostname": "a.example"})")).find("neither was given") != std::string::npos);
    std::string sans = "[";
    for (size_t i = 0; i <= gtls::kMaxApiSans; i++) sans += std::string(i ? "," : "") + R"("dns:a.example")";
    BOOST_TEST(refusal(policy(R"({"ca": "system", "subject_alt_names": )" + sans + "]}"))
               == R"(policies["ns/p"].subject_alt_names: 65 names, more than 64)");
}

// A policy's own client certificate (proxy_ssl_policy_certificate) comes
// with its trust: its chain and key checked as a listener's are, kept
// across reloads, listed by its leaf's SHA-256 alone.
BOOST_AUTO_TEST_CASE(a_policy_may_bring_its_client_certificate)
{
    const std::string cert = R"(-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n)";
    const std::string key = R"(-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n)";
    auto update = parse_api_update(R"({"policies": {"ns/p": {"ca": "system", "client_certificate": {"certificate": ")"
                                   + cert + R"(", "key": ")" + key + R"("}}, "ns/q": {"ca": "system"}}})");
    BOOST_TEST_REQUIRE(update.policies.size() == 2u);
    BOOST_TEST_REQUIRE(update.policies[0].client_certificate.has_value());
    BOOST_TEST(update.policies[0].client_certificate->certificate == "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    BOOST_TEST(update.policies[0].client_certificate->key == "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n");
    BOOST_TEST(!update.policies[1].client_certificate.has_value());
    for (const gtls::PolicyTrust &t : update.policies) {
        BOOST_TEST((gtls::parse_policy_trust(gtls::policy_trust_json(t), t.policy) == t));
    }

    auto policy = [](const std::string &pair) {
        return R"({"policies": {"ns/p": {"ca": "system", "client_certificate": )" + pair + "}}}";
    };
    BOOST_TEST(refusal(policy(R"({"certificate": ")" + cert + R"("})"))
               == R"(policies["ns/p"].client_certificate: "certificate" and "key" are both required)");
    BOOST_TEST(refusal(policy(R"({"certificate": ")" + key + R"(", "key": ")" + key + R"("})"))
               == R"(policies["ns/p"].client_certificate.certificate: only CERTIFICATE PEM blocks may be given (line 1))");
    BOOST_TEST(refusal(policy(R"({"certificate": ")" + cert + R"(", "key": ")" + cert + R"("})"))
                   .rfind(R"(policies["ns/p"].client_certificate.key: )", 0) == 0u);
    BOOST_TEST(refusal(policy(R"({"certificate": ")" + cert + R"(", "key": ")" + key + R"(", "chain": ""})"))
               == R"(policies["ns/p"].client_certificate: unknown field "chain" (known: certificate, key))");
    BOOST_TEST(refusal(policy(R"({"certificate": [], "key": ""})"))
               == R"(policies["ns/p"].client_certificate.certificate: must be a string, not an array)");
    BOOST_TEST(refusal(policy(R"("ns/client-tls")")) == R"(policies["ns/p"].client_certificate: must be an object, not a string)");
    // a client certificate alone verifies nothing
    BOOST_TEST(refusal(R"({"policies": {"ns/p": {"client_certificate": {"certificate": ")" + cert + R"(", "key": ")" + key
                       + R"("}}}})").find("neither was given") != std::string::npos);

    gtls::ApiList list;
    list.policies.push_back({"ns/p", 4, true, "api:sha256:00", {}, "", {}, "ab12"});
    list.policies.push_back({"ns/q", 0, false, "system", {}, "", {}, ""});
    const std::string listed = gtls::api_list_json(list);
    BOOST_TEST(listed.find(R"("ns/p":{"generation":4,"source":"api","ca":"api:sha256:00","pins":[],"hostname":"","subject_alt_names":[],"client_certificate":"ab12"})") != std::string::npos);
    BOOST_TEST(listed.find(R"("ns/q":{"generation":0,"source":"configuration","ca":"system","pins":[],"hostname":"","subject_alt_names":[]})") != std::string::npos);
    BOOST_TEST(gtls::pushed_policies(listed) == std::vector<std::string>{"ns/p"});
}

BOOST_AUTO_TEST_CASE(a_list_says_which_policies_hold_pushed_trust)
{
    auto names = gtls::pushed_policies(R"({"upstreams":{"svc":{"generation":2,"source":"api","servers":[]}},)"
                                       R"("policies":{"ns/a":{"generation":3,"source":"api","ca":"x","pins":[]},)"
                                       R"("ns/b":{"generation":0,"source":"configuration","ca":"","pins":["p"]}}})");
    BOOST_TEST(names == std::vector<std::string>{"ns/a"});
    BOOST_CHECK_THROW(gtls::pushed_policies("<html>"), ApiError);
    BOOST_CHECK_THROW(gtls::pushed_policies(R"({"policies": []})"), ApiError);
}

BOOST_AUTO_TEST_CASE(policy_trust_is_checked_and_named)
{
    auto policy = [](const std::string &trust) { return R"({"policies": {"ns/p": )" + trust + "}}"; };
    BOOST_TEST(refusal(policy("{}")) == R"(policies["ns/p"]: a policy verifies against "ca", "pins" or both; neither was given)");
    BOOST_TEST(refusal(policy(R"({"pins": []})")).find("neither was given") != std::string::npos);
    BOOST_TEST(refusal(policy(R"({"ca": ""})")) == R"(policies["ns/p"].ca: holds no certificate)");
    BOOST_TEST(refusal(policy(R"({"ca": "/etc/ssl/certs/ca.pem"})")) == R"(policies["ns/p"].ca: only CERTIFICATE PEM blocks may be given (line 1))");
    BOOST_TEST(refusal(policy(R"({"ca": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"})"))
               == R"(policies["ns/p"].ca: only CERTIFICATE PEM blocks may be given (line 1))");
    BOOST_TEST(refusal(policy(R"({"ca": "-----BEGIN CERTIFICATE-----\nMI IB\n-----END CERTIFICATE-----\n"})"))
               == R"(policies["ns/p"].ca: a PEM certificate holds something that is not base64 (line 2))");
    BOOST_TEST(refusal(policy(R"({"ca": "-----BEGIN CERTIFICATE-----\nMIIB\n"})")) == R"(policies["ns/p"].ca: the last PEM block does not end)");
    BOOST_TEST(refusal(policy(R"({"pins": ["sha1/AAAA"]})")).rfind(R"(policies["ns/p"].pins[0]: )", 0) == 0u);
    BOOST_TEST(refusal(policy(R"({"pins": "sha256-spki:AAAA"})")) == R"(policies["ns/p"].pins: must be an array, not a string)");
    BOOST_TEST(refusal(policy(R"({"ca": "system", "mode": "skip"})"))
               == R"(policies["ns/p"]: unknown field "mode" (known: ca, pins, hostname, subject_alt_names, client_certificate))");
    BOOST_TEST(refusal(R"({"policies": {}})") == "policies: names no policy");
    BOOST_TEST(refusal(R"({"policies": {"": {"ca": "system"}}})") == R"(policies[""]: is not a policy name)");
    BOOST_TEST(refusal(R"({"policies": {"a\nb": {"ca": "system"}}})") == R"(policies["a\u000ab"]: is not a policy name)");
    std::string pins = "[";
    for (size_t i = 0; i <= gtls::kMaxApiPins; i++) pins += std::string(i ? "," : "") + R"("sha256-spki:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")";
    BOOST_TEST(refusal(policy(R"({"pins": )" + pins + "]}")) == R"(policies["ns/p"].pins: 65 pins, more than 64)");
    BOOST_TEST(refusal(policy(R"({"ca": ")" + std::string(gtls::kMaxApiCaBytes + 1, 'A') + R"("})"))
               == R"(policies["ns/p"].ca: more than 1048576 bytes)");
}

// Every string field, every control byte, raw or escaped: refused, never
// read as a shorter string ("10.0.0.1\u0000junk:8443" once passed as
// 10.0.0.1:8443, inet_pton stopping at the NUL).
BOOST_AUTO_TEST_CASE(no_string_field_takes_a_control_byte)
{
    const std::vector<std::pair<std::string, std::string>> fields = {
        {R"({"upstreams": {"web": {"servers": [{"address": "10.0.0.1)", R"(junk:8443"}]}}})"},
        {R"({"upstreams": {"web)", R"(": {"servers": []}}})"},
        {R"({"stream_upstreams": {"web)", R"(": {"servers": []}}})"},
        {R"({"policies": {"ns/p)", R"(": {"pins": ["sha256-spki:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]}}})"},
        {R"({"policies": {"ns/p": {"pins": ["sha256-spki:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=)", R"("]}}})"},
    };
    for (const auto &[before, after] : fields) {
        for (int c = 0; c < 0x20; c++) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            for (const std::string &byte : {std::string(escaped), std::string(1, static_cast<char>(c))}) {
                const std::string body = before + byte + after;
                BOOST_TEST(!refusal(body).empty(), "taken: " << gtls::json_string(body));
            }
        }
        BOOST_TEST(!refusal(before + "\\u007f" + after).empty());
        BOOST_TEST(!refusal(before + "\\b" + after).empty());
        BOOST_TEST(!refusal(before + "\\f" + after).empty());
    }
    BOOST_TEST(refusal(one(R"([{"address": "10.0.0.1\u0000junk:8443"}])")) == "JSON line 1, column 73: a control character in a string");
    BOOST_TEST(refusal(one(R"([{"address": "10.0.0.1\u00e9:8443"}])")).find("holds a byte no address has") != std::string::npos);
    // a PEM bundle keeps its line breaks
    BOOST_TEST(refusal(R"({"policies": {"ns/p": {"ca": "\r\n\t"}}})").find("holds no certificate") != std::string::npos);
}

// What gateway2nginx compares with what it rendered after a reload.
BOOST_AUTO_TEST_CASE(a_list_says_which_servers_each_upstream_holds)
{
    const std::string list = R"({"upstreams":{"a":{"generation":3,"source":"api","servers":[{"address":"10.0.0.1:80","weight":1,"max_conns":0,"max_fails":1,"fail_timeout":10,"down":false}]},"b":{"generation":1,"source":"configuration","servers":[]}},"stream_upstreams":{"a":{"generation":1,"source":"configuration","servers":[{"address":"[fd00::1]:443"}]}},"policies":{}})";
    auto http = gtls::listed_servers(list, "upstreams");
    BOOST_TEST_REQUIRE(http.size() == 2u);
    BOOST_TEST(http[0].upstream == "a");
    BOOST_TEST(http[0].servers.size() == 1u);
    BOOST_TEST(http[0].servers[0].address == "10.0.0.1:80");
    BOOST_TEST(http[1].servers.empty());
    auto stream = gtls::listed_servers(list, "stream_upstreams");
    BOOST_TEST_REQUIRE(stream.size() == 1u);
    BOOST_TEST(stream[0].servers[0].address == "[fd00::1]:443");
    BOOST_CHECK_THROW(gtls::listed_servers(R"({"upstreams":{"a":{"servers":[{"address":"x"}]}}})", "upstreams"), ApiError);
}

// The list the module writes is what gateway2nginx reads: the servers of
// each upstream of both sections, and which policies hold pushed trust,
// whatever the names hold.
BOOST_AUTO_TEST_CASE(what_a_get_lists_reads_back)
{
    gtls::ApiList list;
    auto servers = parse_server_list(R"([{"address":"10.0.0.1:80","weight":3},{"address":"[fd00::1]:8443","down":true}])");
    list.upstreams.push_back({"web", 7, true, servers});
    list.upstreams.push_back({"quote\"d \\ name", 1, false, {}});
    list.has_stream = true;
    list.stream_upstreams.push_back({"db", 2, false, {servers[0]}});
    list.policies.push_back({"ns/pushed", 4, true, "api", {"sha256-spki:AAAA"}, "a.example", {"dns:a.example"}, ""});
    list.policies.push_back({"ns/configured", 1, false, "/etc/ca.pem", {}, "", {}, ""});
    const std::string json = gtls::api_list_json(list);

    auto http = gtls::listed_servers(json, "upstreams");
    BOOST_TEST_REQUIRE(http.size() == 2u);
    BOOST_TEST(http[0].upstream == "web");
    BOOST_TEST(http[0].servers == servers);
    BOOST_TEST(http[1].upstream == "quote\"d \\ name");
    BOOST_TEST(http[1].servers.empty());
    auto stream = gtls::listed_servers(json, "stream_upstreams");
    BOOST_TEST_REQUIRE(stream.size() == 1u);
    BOOST_TEST(stream[0].upstream == "db");
    BOOST_TEST(stream[0].servers == std::vector<UpstreamServer>{servers[0]});
    BOOST_TEST(gtls::pushed_policies(json) == std::vector<std::string>{"ns/pushed"});

    list.has_stream = false;
    BOOST_TEST(gtls::api_list_json(list).find("stream_upstreams") == std::string::npos);
    BOOST_TEST(gtls::api_list_json(gtls::ApiList{}) == "{\"upstreams\":{},\"policies\":{}}\n");
}

BOOST_AUTO_TEST_CASE(what_a_put_answers)
{
    gtls::ApiUpdated updated;
    updated.upstreams = {{"web", 2}, {"api\"x", 0}};
    updated.policies = {{"ns/p", 9}};
    BOOST_TEST(gtls::api_updated_json(updated)
               == R"({"upstreams":{"web":{"servers":2},"api\"x":{"servers":0}},"policies":{"ns/p":{"generation":9}}})"
                      "\n");
    updated.has_stream = true;
    updated.stream_upstreams = {{"db", 1}};
    BOOST_TEST(gtls::api_updated_json(updated)
               == R"({"upstreams":{"web":{"servers":2},"api\"x":{"servers":0}},"stream_upstreams":{"db":{"servers":1}},)"
                  R"("policies":{"ns/p":{"generation":9}}})"
                      "\n");
}

BOOST_AUTO_TEST_CASE(route_tables_are_read_by_their_own_reader)
{
    // one body may carry servers and routes: each reader takes its own
    // sections, and routes nest deeper than servers may
    const std::string body = R"({"upstreams": {"web": {"servers": [{"address": "10.0.0.1:8443"}]}},
        "routes": {"main": {"a.example": {"actions": [{"backends": [{"backend": "web",
            "request_headers": {"set": [{"name": "x", "value": "1"}]}}]}], "matches": [{"action": 0}]}}}})";
    BOOST_TEST(refusal(body).empty());
    BOOST_TEST(parse_api_update(body).upstreams.size() == 1u);
    BOOST_TEST(parse_api_update(body).has_routes);
    BOOST_TEST(!parse_api_update(R"({"upstreams": {"web": {"servers": []}}})").has_routes);
    BOOST_TEST(gtls::parse_route_update(body).size() == 1u);
    BOOST_TEST(refusal(R"({"routes": {"main": )" + std::string(20, '[') + std::string(20, ']') + "}}")
                   .find("nested deeper than 16 levels") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(route_tables_are_listed_and_answered)
{
    gtls::ApiList list;
    list.routes = {{"main", "*", 3, 1, false}, {"main", "a.example", 4, 2, false}, {"other", "", 0, 0, false}};
    const std::string listed = gtls::api_list_json(list);
    BOOST_TEST(listed.find(R"("routes":{"main":{"*":{"generation":3,"matches":1},"a.example":{"generation":4,"matches":2}},"other":{}})")
               != std::string::npos, listed);
    gtls::ApiUpdated updated;
    updated.routes = {{"main", "b.example", 5, 0, true}};
    const std::string answered = gtls::api_updated_json(updated);
    BOOST_TEST(answered.find(R"("routes":{"main":{"b.example":{"generation":5,"removed":true}}})") != std::string::npos,
               answered);
    BOOST_TEST(gtls::api_updated_json(gtls::ApiUpdated{}).find("routes") == std::string::npos);

    // what gateway2nginx reads back: each table's hostnames, nothing of a
    // table that holds none, whatever else the list holds
    list.upstreams.push_back({"web", 1, false, {}});
    const std::vector<gtls::ListedRoutes> hosts = gtls::listed_route_hosts(gtls::api_list_json(list));
    BOOST_TEST_REQUIRE(hosts.size() == 2u);
    BOOST_TEST(hosts[0].table + " " + hosts[0].host == "main *");
    BOOST_TEST(hosts[1].table + " " + hosts[1].host == "main a.example");
    BOOST_TEST(gtls::listed_route_hosts(R"({"upstreams":{}})").empty());
    BOOST_CHECK_THROW(gtls::listed_route_hosts(R"({"routes":{"main":[]}})"), ApiError);
    BOOST_CHECK_THROW(gtls::listed_route_hosts(R"({"routes":{"main":{"a.example":1}}})"), ApiError);
    BOOST_CHECK_THROW(gtls::listed_route_hosts(R"({"routes":[]})"), ApiError);
}

BOOST_AUTO_TEST_SUITE_END()
