// Unit tests of SPEC parsing and name matching (no certificates needed).
#include <boost/test/unit_test.hpp>

#include "gtls_match.h"
#include "gtls_spec.h"

using namespace gtls;

namespace {

SanMatcher must_parse(const char *spec)
{
    std::string error;
    auto m = parse_san_spec(spec, &error);
    BOOST_TEST_REQUIRE(m.has_value(), spec << ": " << error);
    return *m;
}

std::string parse_error(const char *spec)
{
    std::string error;
    auto m = parse_san_spec(spec, &error);
    BOOST_TEST(!m.has_value(), spec << " should be rejected");
    return error;
}

PresentedName dns(const char *v) { return {SanType::Dns, v}; }
PresentedName uri(const char *v) { return {SanType::Uri, v}; }

}  // namespace

BOOST_AUTO_TEST_SUITE(modes)

BOOST_AUTO_TEST_CASE(every_mode_round_trips)
{
    for (const char *name : {"off", "strict", "allow_expired", "skip_san", "skip"}) {
        auto mode = parse_mode(name);
        BOOST_TEST_REQUIRE(mode.has_value());
        BOOST_TEST(std::string(mode_name(*mode)) == name);
    }
    BOOST_TEST(!parse_mode("Strict").has_value());
    BOOST_TEST(!parse_mode("").has_value());
    BOOST_TEST(!parse_mode("on").has_value());
}

BOOST_AUTO_TEST_CASE(insecure_modes)
{
    BOOST_TEST(!mode_is_insecure(Mode::Off));
    BOOST_TEST(!mode_is_insecure(Mode::Strict));
    BOOST_TEST(mode_is_insecure(Mode::AllowExpired));
    BOOST_TEST(mode_is_insecure(Mode::SkipSan));
    BOOST_TEST(mode_is_insecure(Mode::Skip));
    // the operator's gate refuses exactly the insecure modes, and only when it denies
    for (Mode mode : {Mode::Off, Mode::Strict, Mode::AllowExpired, Mode::SkipSan, Mode::Skip}) {
        BOOST_TEST(gate_refuses(true, mode) == mode_is_insecure(mode));
        BOOST_TEST(!gate_refuses(false, mode));
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(san_specs)

BOOST_AUTO_TEST_CASE(forms_are_typed)
{
    BOOST_TEST((must_parse("dns:ABC.Example.com.").value == "abc.example.com"));
    BOOST_TEST((must_parse("uri:spiffe://abc.example.com/x").type == SanType::Uri));
    BOOST_TEST(must_parse("ip:127.0.0.1").value.size() == 4u);
    BOOST_TEST(must_parse("ip:2001:db8::1").value.size() == 16u);
    BOOST_TEST((must_parse("email:Ops@EXAMPLE.com").value == "Ops@example.com"));
    BOOST_TEST(must_parse("dns~.*\\.example\\.com").is_regex);
    BOOST_TEST(must_parse("uri~spiffe://abc\\.example\\.com/.*").is_regex);
}

BOOST_AUTO_TEST_CASE(bad_specs_are_rejected_with_a_reason)
{
    BOOST_TEST(parse_error("abc.example.com").find("unknown SPEC type") != std::string::npos);
    BOOST_TEST(parse_error("dns:").find("empty") != std::string::npos);
    BOOST_TEST(parse_error("dns:*.example.com").find("wildcards") != std::string::npos);
    BOOST_TEST(parse_error("dns:a..b").find("not a DNS name") != std::string::npos);
    BOOST_TEST(parse_error("dns:a b").find("not a DNS name") != std::string::npos);
    BOOST_TEST(parse_error("uri:no-scheme").find("scheme") != std::string::npos);
    BOOST_TEST(parse_error("ip:300.1.1.1").find("IP") != std::string::npos);
    BOOST_TEST(parse_error("ip:abc.example.com").find("IP") != std::string::npos);
    BOOST_TEST(parse_error("email:nobody").find("e-mail") != std::string::npos);
    BOOST_TEST(parse_error("email:@example.com").find("e-mail") != std::string::npos);
    BOOST_TEST(parse_error("dns~(unclosed").find("regular expression") != std::string::npos);
    BOOST_TEST(parse_error("DNS:abc.example.com").find("unknown") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pin_specs)

BOOST_AUTO_TEST_CASE(spki_pin_normalises)
{
    std::string error;
    // 32 zero bytes
    auto pin = parse_pin_spec("sha256-spki:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", &error);
    BOOST_TEST_REQUIRE(pin.has_value(), error);
    BOOST_TEST((pin->type == PinType::Spki));
    BOOST_TEST(pin->spec == "sha256-spki:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
}

BOOST_AUTO_TEST_CASE(cert_pin_accepts_colons_and_case)
{
    std::string error;
    std::string hex;
    for (int i = 0; i < 32; i++) {
        hex += i ? ":AB" : "AB";
    }
    auto pin = parse_pin_spec("sha256-cert:" + hex, &error);
    BOOST_TEST_REQUIRE(pin.has_value(), error);
    BOOST_TEST((pin->type == PinType::Cert));
    BOOST_TEST(pin->digest[31] == 0xab);
    std::string expected = "sha256-cert:";
    for (int i = 0; i < 32; i++) {
        expected += "ab";
    }
    BOOST_TEST(pin->spec == expected);
}

BOOST_AUTO_TEST_CASE(bad_pins_are_rejected)
{
    std::string error;
    BOOST_TEST(!parse_pin_spec("sha1-spki:AAAA", &error).has_value());
    BOOST_TEST(error.find("unknown pin type") != std::string::npos);
    BOOST_TEST(!parse_pin_spec("sha256-spki:AAAA", &error).has_value());  // 3 bytes
    BOOST_TEST(!parse_pin_spec("sha256-spki:not base64!", &error).has_value());
    BOOST_TEST(!parse_pin_spec("sha256-cert:abcd", &error).has_value());
    BOOST_TEST(!parse_pin_spec("sha256-cert:" + std::string(66, 'a'), &error).has_value());
    BOOST_TEST(!parse_pin_spec("sha256-cert:" + std::string(63, 'a') + "g", &error).has_value());
    BOOST_TEST(!parse_pin_spec("sha256-cert:", &error).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dns_matching)

BOOST_AUTO_TEST_CASE(exact_is_case_insensitive)
{
    BOOST_TEST(dns_name_matches("abc.example.com", "ABC.Example.COM"));
    BOOST_TEST(dns_name_matches("abc.example.com.", "abc.example.com"));
    BOOST_TEST(!dns_name_matches("abc.example.com", "abd.example.com"));
    BOOST_TEST(!dns_name_matches("abc.example.com", "abc.example.com.evil"));
}

BOOST_AUTO_TEST_CASE(wildcard_covers_one_left_most_label)
{
    BOOST_TEST(dns_name_matches("abc.example.com", "*.example.com"));
    BOOST_TEST(!dns_name_matches("a.b.example.com", "*.example.com"));
    BOOST_TEST(!dns_name_matches("example.com", "*.example.com"));
    BOOST_TEST(!dns_name_matches("abc.example.com", "*.com"));
    BOOST_TEST(!dns_name_matches("abc.example.com", "a*.example.com"));
    BOOST_TEST(!dns_name_matches("abc.example.com", "abc.*.com"));
    BOOST_TEST(!dns_name_matches("xn--bcher-kva.example.com", "*.example.com"));
    // a reference name is never a pattern
    BOOST_TEST(!dns_name_matches("*.example.com", "*.example.com"));
}

BOOST_AUTO_TEST_CASE(san_matchers_by_type)
{
    BOOST_TEST(san_matches(must_parse("dns:abc.example.com"), dns("*.example.com")));
    BOOST_TEST(!san_matches(must_parse("dns:abc.example.com"), uri("abc.example.com")));
    BOOST_TEST(san_matches(must_parse("uri:spiffe://abc.example.com/test-identity"),
                           uri("spiffe://abc.example.com/test-identity")));
    BOOST_TEST(!san_matches(must_parse("uri:spiffe://abc.example.com/test-identity"),
                            uri("spiffe://abc.example.com/test-identity/x")));
    BOOST_TEST(!san_matches(must_parse("uri:spiffe://abc.example.com/test-identity"),
                            uri("SPIFFE://abc.example.com/test-identity")));
    std::string ip;
    BOOST_TEST_REQUIRE(parse_ip("::1", &ip));
    BOOST_TEST(san_matches(must_parse("ip:0:0::1"), PresentedName{SanType::Ip, ip}));
    BOOST_TEST(!san_matches(must_parse("ip:127.0.0.1"), PresentedName{SanType::Ip, ip}));
    BOOST_TEST(san_matches(must_parse("email:ops@example.com"), {SanType::Email, "ops@EXAMPLE.com"}));
    BOOST_TEST(!san_matches(must_parse("email:ops@example.com"), {SanType::Email, "OPS@example.com"}));
}

BOOST_AUTO_TEST_CASE(regex_is_anchored)
{
    auto re = must_parse("dns~[a-z]+\\.example\\.com");
    BOOST_TEST(san_matches(re, dns("abc.example.com")));
    BOOST_TEST(!san_matches(re, dns("abc.example.com.evil.net")));
    BOOST_TEST(!san_matches(re, dns("x.abc.example.com")));
    auto spiffe = must_parse("uri~spiffe://abc\\.example\\.com/.+");
    BOOST_TEST(san_matches(spiffe, uri("spiffe://abc.example.com/test-identity")));
    BOOST_TEST(!san_matches(spiffe, uri("spiffe://abc.example.com/")));
    BOOST_TEST(!san_matches(spiffe, dns("abc.example.com")));
}

BOOST_AUTO_TEST_SUITE_END()
