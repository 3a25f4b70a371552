// Where a tenant's endpoint may point (endpoints.h): the API server's
// rules for EndpointSlice addresses, never the gateway itself, and the
// operator's --allow-endpoints for test rigs.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "resolve/endpoints.h"
#include "render/render.h"
#include "test_support.h"

using namespace g2n;
using g2n_test::parse;

namespace {

const std::string kManifests = g2n_test::web_route();

// the manifests with web's endpoint ADDRESS:PORT, resolved under `o`: the
// servers of web's upstream, and the warnings
std::pair<std::vector<std::string>, std::string> served(const std::string &address, int port, const Options &o)
{
    const std::string yaml = kManifests
                             + "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-1\n"
                               "  namespace: ns\n  labels: {kubernetes.io/service-name: web}\n"
                               "ports: [{name: http, port: " + std::to_string(port) + "}]\n"
                               "endpoints: [{addresses: [\"" + address + "\"]}]\n";
    Plan plan = resolve(parse(yaml), o);
    std::string warnings;
    for (const std::string &w : plan.warnings) warnings += w + "\n";
    for (const Upstream &u : plan.upstreams) {
        if (u.comment.find("ns/web") != std::string::npos) return {u.servers, warnings};
    }
    return {{}, warnings};
}

// Every spelling of every special range the API server refuses.
const std::vector<std::string> kSpecial = {
    "127.0.0.1", "127.1.2.3", "0.0.0.0", "0.1.2.3", "169.254.169.254", "169.254.0.1", "224.0.0.1", "239.255.255.250",
    "255.255.255.255", "::1", "::", "fe80::1", "febf::1", "ff02::1", "ff05::2", "::ffff:127.0.0.1",
    "::FFFF:127.0.0.1", "0:0:0:0:0:ffff:7f00:1", "::ffff:0.0.0.0", "::ffff:169.254.169.254", "::ffff:224.0.0.1",
    "0000:0000:0000:0000:0000:0000:0000:0001"};

}  // namespace

BOOST_AUTO_TEST_SUITE(endpoints)

BOOST_AUTO_TEST_CASE(special_addresses_are_refused_in_every_spelling)
{
    for (const std::string &address : kSpecial) {
        auto [servers, warnings] = served(address, 8443, Options{});
        BOOST_TEST(servers.empty(), address << " is served");
        BOOST_TEST(warnings.find("EndpointSlice ns/web-1: endpoint ") != std::string::npos, address << ": " << warnings);
        BOOST_TEST(warnings.find("which the API server refuses for endpoints") != std::string::npos, warnings);
    }
    for (std::string address : {"10.0.0.1", "192.0.2.7", "fd00::1", "2001:db8::5", "::ffff:10.0.0.1"}) {
        auto [servers, warnings] = served(address, 8443, Options{});
        BOOST_TEST(servers.size() == 1u, address << " is not served: " << warnings);
        BOOST_TEST(warnings.empty(), warnings);
    }
}

BOOST_AUTO_TEST_CASE(the_operator_admits_ranges_but_never_the_gateways_own_ports)
{
    Options o;
    o.allow_endpoints = {"127.0.0.0/8", "::1/128"};
    o.listen_address = "127.0.0.1";
    o.port_offset = 20000;
    o.upstream_api = "127.0.0.1:9114";
    BOOST_TEST(served("127.0.0.1", 8443, o).first == std::vector<std::string>{"127.0.0.1:8443"});
    BOOST_TEST(served("::ffff:127.0.0.1", 8443, o).first.size() == 1u);
    BOOST_TEST(served("::1", 8443, o).first == std::vector<std::string>{"[::1]:8443"});
    BOOST_TEST(served("169.254.169.254", 80, o).first.empty());  // not admitted
    // the listener (80 + 20000), the upstream API, the status endpoint
    for (int own : {20080, 9114, 9113}) {
        for (std::string address : {"127.0.0.1", "127.0.0.2", "::ffff:127.0.0.1", "0.0.0.0", "::1"}) {
            auto [servers, warnings] = served(address, own, o);
            BOOST_TEST(servers.empty(), address << ":" << own << " is served");
            BOOST_TEST(warnings.find("is the gateway's own address and port") != std::string::npos, warnings);
        }
    }
    // the gateway's own address, not special, at its own port
    o.listen_address = "192.0.2.10";
    BOOST_TEST(served("192.0.2.10", 20080, o).first.empty());
    BOOST_TEST(served("192.0.2.10", 8443, o).first.size() == 1u);
    BOOST_TEST(served("192.0.2.11", 20080, o).first.size() == 1u);
}

BOOST_AUTO_TEST_CASE(an_external_name_of_this_host_is_a_loopback_address)
{
    // the numeric spellings getaddrinfo reads as inet_aton does, too
    for (std::string name : {"localhost", "api.localhost", "127.0.0.1", "localhost.localdomain",
                             "ip6-localhost", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "169.254.43518"}) {
        const std::string yaml = kManifests.substr(0, kManifests.find("---\napiVersion: v1\nkind: Service"))
                                 + "---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\n"
                                   "spec: {type: ExternalName, externalName: \"" + name + "\", ports: [{name: http, port: 80}]}\n"
                                 + kManifests.substr(kManifests.find("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute"));
        Plan plan = resolve(parse(yaml), Options{});
        bool served = false;
        for (const Upstream &u : plan.upstreams) served = served || !u.servers.empty();
        BOOST_TEST(!served, name << " is served");
        std::string warnings;
        for (const std::string &w : plan.warnings) warnings += w;
        BOOST_TEST(warnings.find("Service ns/web (externalName): endpoint") != std::string::npos, warnings);
    }
    BOOST_TEST(names_local_host("LocalHost."));
    BOOST_TEST(!names_local_host("localhost.example.com"));
    BOOST_TEST(!names_local_host("notlocalhost"));
}

BOOST_AUTO_TEST_CASE(cidrs_parse_as_the_flag_takes_them)
{
    BOOST_TEST(parse_cidr("127.0.0.0/8").has_value());
    BOOST_TEST(parse_cidr("::1/128").has_value());
    BOOST_TEST(parse_cidr("10.0.0.1").has_value());
    BOOST_TEST(!parse_cidr("127.0.0.0/33").has_value());
    BOOST_TEST(!parse_cidr("localhost").has_value());
    BOOST_TEST(!parse_cidr("10.0.0.0/").has_value());
    BOOST_TEST(!parse_cidr("10.0.0.0/8x").has_value());
    BOOST_TEST_REQUIRE(parse_cidr("::ffff:127.0.0.0/104").has_value());
    const Cidr mapped = *parse_cidr("::ffff:127.0.0.0/104");
    BOOST_TEST(mapped.contains(*parse_ip("127.9.9.9")));
    BOOST_TEST(!mapped.contains(*parse_ip("128.0.0.1")));
    BOOST_TEST(!parse_cidr("::ffff:127.0.0.0/90").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
