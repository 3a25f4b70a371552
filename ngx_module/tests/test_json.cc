#include <boost/test/unit_test.hpp>

#include <random>
#include <string>

#include <rapidjson/document.h>

#include "gtls_json.h"

using gtls::json_string;

namespace {

// `literal` read back by a validating JSON reader; false when it is not
// one valid JSON string
bool read_back(const std::string &literal, std::string *text)
{
    rapidjson::Document d;
    d.Parse<rapidjson::kParseValidateEncodingFlag>(literal.c_str(), literal.size());
    if (d.HasParseError() || !d.IsString()) return false;
    text->assign(d.GetString(), d.GetStringLength());
    return true;
}

// The oracle: RapidJSON's UTF-8 validation of the bytes, with only what
// JSON cannot hold raw escaped
bool is_utf8(const std::string &bytes)
{
    std::string literal = "\"";
    for (unsigned char c : bytes) {
        if (c == '"' || c == '\\') literal.push_back('\\');
        if (c < 0x20) {
            literal += "\\u00";
            literal.push_back("0123456789abcdef"[c >> 4]);
            literal.push_back("0123456789abcdef"[c & 15]);
        } else {
            literal.push_back(static_cast<char>(c));
        }
    }
    literal.push_back('"');
    rapidjson::Document d;
    d.Parse<rapidjson::kParseValidateEncodingFlag>(literal.c_str(), literal.size());
    return !d.HasParseError();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(json)

BOOST_AUTO_TEST_CASE(one_spelling_for_every_byte_string)
{
    BOOST_TEST(json_string("a\"b\\c\n\x01\x7f") == R"("a\"b\\c\u000a\u0001\u007f")");
    // UTF-8 as it is: two, three and four bytes
    BOOST_TEST(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92\"");
    // what is not UTF-8, each byte U+FFFD: a byte UTF-8 never uses, a stray
    // continuation, an overlong form, a surrogate, beyond U+10FFFF, cut short
    BOOST_TEST(json_string("\xff") == R"("\ufffd")");
    BOOST_TEST(json_string("a\x80z") == R"("a\ufffdz")");
    BOOST_TEST(json_string("\xc0\xaf") == R"("\ufffd\ufffd")");
    BOOST_TEST(json_string("\xed\xa0\x80") == R"("\ufffd\ufffd\ufffd")");
    BOOST_TEST(json_string("\xf4\x90\x80\x80") == R"("\ufffd\ufffd\ufffd\ufffd")");
    BOOST_TEST(json_string("\xe2\x82") == R"("\ufffd\ufffd")");
    BOOST_TEST(json_string("\xe2\x82\"") == R"("\ufffd\ufffd\"")", "a cut sequence takes nothing after it");
    BOOST_TEST(json_string("") == R"("")");
}

// Any bytes: the literal is valid JSON (RapidJSON validating UTF-8) and
// reads back as the bytes themselves when they are UTF-8, with U+FFFD
// where they are not; 20,000 random strings, biased to high bytes.
BOOST_AUTO_TEST_CASE(any_bytes_make_valid_json_and_utf8_reads_back_whole)
{
    std::mt19937 random(20261129);
    std::uniform_int_distribution<int> length(0, 12), byte(0, 255), pick(0, 3);
    size_t valid = 0;
    for (int trial = 0; trial < 20000; trial++) {
        std::string bytes;
        for (int n = length(random); n > 0; n--) {
            const int b = byte(random);
            bytes.push_back(static_cast<char>(pick(random) == 0 ? b & 0x7f : b | 0x80));
        }
        const std::string literal = json_string(bytes);
        std::string text;
        BOOST_TEST_REQUIRE(read_back(literal, &text), "not valid JSON: " << literal);
        if (is_utf8(bytes)) {
            valid++;
            BOOST_TEST(text == bytes);
        } else {
            BOOST_TEST(text.find("\xef\xbf\xbd") != std::string::npos, "U+FFFD where it is not UTF-8");
        }
    }
    BOOST_TEST(valid > 1000u, valid << " of the random strings were UTF-8");
}

BOOST_AUTO_TEST_SUITE_END()
