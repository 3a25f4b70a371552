// Issue 16: every string field a tenant writes, set to each value of a
// hostile corpus, and the rendered configuration read back with nginx's
// token grammar (hostile_property.h says what must hold).
#include <boost/test/unit_test.hpp>

#include "hostile_property.h"
#include "test_support.h"

using namespace g2n_test;

namespace {

std::string benign()
{
    return hostile_benign_manifests(test_cert_file("ca.crt"), test_cert_file("leaf.crt"), test_cert_file("leaf.key"));
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
                             "server>location>return", "server>proxy_ssl_certificate", "server>ssl_preread"}) {
        BOOST_TEST((std::find(r.names.begin(), r.names.end(), name) != r.names.end()), name);
    }
    BOOST_TEST(r.statuses.find("=False") == std::string::npos, r.statuses);
}

BOOST_AUTO_TEST_CASE(no_string_field_changes_the_shape_of_the_configuration)
{
    HostileProperty property(benign());
    std::vector<std::string> values = hostile_values();
    size_t checked = 0, failures = 0;
    for (size_t i = 0; i < property.paths().size(); i++) {
        size_t path_failures = 0;
        // a renamed key is an unknown field: a few values show it is refused
        size_t tries = property.paths()[i].is_key ? 6 : values.size();
        for (size_t v = 0; v < tries; v++) {
            const std::string &value = values[v * values.size() / tries];
            std::string failure = property.check(i, value);
            checked++;
            // the first failure of each field: one field, one fix
            if (!failure.empty() && ++path_failures == 1 && ++failures <= 60) BOOST_ERROR(failure.substr(0, 300));
        }
    }
    BOOST_TEST(failures == 0u);
    BOOST_TEST_MESSAGE("hostile input: " << checked << " substitutions checked");
}

BOOST_AUTO_TEST_SUITE_END()
