// The one quoting of literal text into the regular expressions render
// writes (location and map regexes, rewrites): for any text, the anchored
// expression built around nginx::regex_quote matches that text and nothing
// else, as nginx's PCRE2 compiles it.
#include <boost/test/unit_test.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <random>
#include <string>

#include "render/nginx_text.h"

namespace {

bool matches(const std::string &regex, const std::string &subject)
{
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.c_str()), regex.size(), 0, &error,
                                     &offset, nullptr);
    BOOST_TEST_REQUIRE(code != nullptr, "does not compile: " << regex);
    pcre2_match_data *data = pcre2_match_data_create_from_pattern(code, nullptr);
    int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.c_str()), subject.size(), 0, 0, data, nullptr);
    pcre2_match_data_free(data);
    pcre2_code_free(code);
    return rc >= 0;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(nginx_text)

BOOST_AUTO_TEST_CASE(a_quoted_text_matches_itself_alone)
{
    std::mt19937 random(20261126);
    const std::string alphabet = "ab/.^$*+?()[]{}|\\-_: ,;=%~!@#&'\"<>";
    for (int round = 0; round < 2000; round++) {
        std::string text;
        const size_t size = random() % 12;
        for (size_t i = 0; i < size; i++) text += alphabet[random() % alphabet.size()];
        const std::string regex = "^" + g2n::nginx::regex_quote(text) + "$";
        BOOST_TEST_REQUIRE(matches(regex, text), regex << " does not match " << text);
        BOOST_TEST(!matches(regex, text + "a"), regex);
        BOOST_TEST(!matches(regex, "a" + text), regex);
        if (!text.empty()) {
            std::string other = text;
            other[random() % other.size()] = 'Z';
            BOOST_TEST(!matches(regex, other), regex << " matches " << other);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
