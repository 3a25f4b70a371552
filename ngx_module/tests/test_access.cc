#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "gtls_access.h"

using gtls::bearer_token_matches;
using gtls::read_access_token_file;

namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef-operator";

// A token file in a fresh directory, of `mode`, holding `text`.
std::string token_file(const std::string &text, mode_t mode)
{
    char dir[] = "/tmp/gtls-access-XXXXXX";
    BOOST_TEST_REQUIRE(::mkdtemp(dir) != nullptr);
    const std::string path = std::string(dir) + "/token";
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
}

// The refusal of the file (its text after the path), "" when it was taken.
std::string refusal(const std::string &path, bool group_may_read = false)
{
    try {
        read_access_token_file(path, group_may_read);
    } catch (const std::runtime_error &e) {
        return e.what();
    }
    return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(access_token)

BOOST_AUTO_TEST_CASE(the_token_of_a_0600_file_is_the_only_bearer_taken)
{
    const auto digest = read_access_token_file(token_file(kToken + "\n", 0600));
    BOOST_TEST(bearer_token_matches("Bearer " + kToken, digest));
    BOOST_TEST(bearer_token_matches("bearer " + kToken, digest));  // the scheme is case-insensitive
    BOOST_TEST(!bearer_token_matches("Bearer " + kToken + "x", digest));
    BOOST_TEST(!bearer_token_matches("Bearer " + kToken.substr(1), digest));
    BOOST_TEST(!bearer_token_matches("Basic " + kToken, digest));
    BOOST_TEST(!bearer_token_matches(kToken, digest));
    BOOST_TEST(!bearer_token_matches("Bearer ", digest));
    BOOST_TEST(!bearer_token_matches("", digest));
    // a NUL cuts nothing short
    BOOST_TEST(!bearer_token_matches(std::string("Bearer ") + kToken + std::string(1, '\0') + "x", digest));
    BOOST_TEST(read_access_token_file(token_file(kToken, 0400)) == digest);
}

BOOST_AUTO_TEST_CASE(with_group_its_group_may_read_it_and_no_more)
{
    const auto digest = gtls::access_token_digest(kToken);
    for (mode_t mode : {0640, 0440, 0600, 0400}) {
        BOOST_TEST(read_access_token_file(token_file(kToken, mode), true) == digest);
    }
    for (mode_t mode : {0660, 0620, 0644, 0604, 0642, 0641, 0650}) {
        char octal[8];
        std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
        BOOST_TEST(refusal(token_file(kToken, mode), true)
                       .find(std::string("may be written by its group, or read or written by others (mode ") + octal
                             + "): it must be 0640, 0600, 0440 or 0400")
                   != std::string::npos);
    }
    // without it, the group may not
    BOOST_TEST(refusal(token_file(kToken, 0440)).find("mode 0440") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_file_others_may_read_or_a_token_too_weak_is_refused)
{
    BOOST_TEST(refusal(token_file(kToken, 0644)).find("may be read or written by its group or others (mode 0644)")
               != std::string::npos);
    BOOST_TEST(refusal(token_file(kToken, 0640)).find("mode 0640") != std::string::npos);
    BOOST_TEST(refusal(token_file(kToken, 0602)).find("mode 0602") != std::string::npos);
    BOOST_TEST(refusal(token_file("short", 0600)).find("does not hold a token") != std::string::npos);
    BOOST_TEST(refusal(token_file("", 0600)).find("does not hold a token") != std::string::npos);
    BOOST_TEST(refusal(token_file(kToken + "\n" + kToken + "\n", 0600)).find("does not hold a token")
               != std::string::npos);
    BOOST_TEST(refusal(token_file(kToken + " x", 0600)).find("does not hold a token") != std::string::npos);
    BOOST_TEST(refusal(token_file(std::string(2000, 'a'), 0600)).find("does not hold a token") != std::string::npos);
    BOOST_TEST(refusal("/nonexistent/token").find("cannot be opened") != std::string::npos);
    BOOST_TEST(refusal("/tmp").find("is not a regular file") != std::string::npos);
    // a link is not followed: whoever may change the link may not choose the token
    const std::string target = token_file(kToken, 0600);
    const std::string link = target + ".link";
    BOOST_TEST_REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
    BOOST_TEST(refusal(link).find("cannot be opened") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
