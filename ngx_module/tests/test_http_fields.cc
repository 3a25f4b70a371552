// The HTTP field rules shared by gateway2nginx and the module.
#include <boost/test/unit_test.hpp>

#include "gtls_http_fields.h"

using namespace gtls;

BOOST_AUTO_TEST_SUITE(http_fields)

// $gateway_tls_has_http_NAME names fields as $http_NAME does, so that a
// rendered header match tests the field its value came from
BOOST_AUTO_TEST_CASE(a_variable_suffix_names_fields_as_http_variables_do)
{
    BOOST_TEST(variable_names_field("x_env", "X-Env"));
    BOOST_TEST(variable_names_field("x_env", "x_env"));
    BOOST_TEST(variable_names_field("accept", "ACCEPT"));
    BOOST_TEST(!variable_names_field("x_env", "X-Envy"));
    BOOST_TEST(!variable_names_field("x_envy", "X-Env"));
    BOOST_TEST(!variable_names_field("X_Env", "X-Env"));  // nginx lowers variable names before
    BOOST_TEST(!variable_names_field("x-env", "X-Env"));
    BOOST_TEST(!variable_names_field("", "X"));
}

BOOST_AUTO_TEST_CASE(connection_fields_and_retryable_statuses)
{
    BOOST_TEST(is_connection_header("Transfer-Encoding"));
    BOOST_TEST(!is_connection_header("X-Transfer-Encoding"));
    BOOST_TEST(is_retryable_status(503));
    BOOST_TEST(!is_retryable_status(501));
    BOOST_TEST(is_header_name("X-Env"));
    BOOST_TEST(!is_header_name("X Env"));
    BOOST_TEST(!is_header_value("a\r\nb"));
}

BOOST_AUTO_TEST_SUITE_END()
