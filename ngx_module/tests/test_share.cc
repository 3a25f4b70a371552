#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "gtls_share.h"

using gtls::EvenShare;
using gtls::Fraction;
using gtls::parse_fraction;

BOOST_AUTO_TEST_SUITE(share)

BOOST_AUTO_TEST_CASE(fractions_parse_as_gateway_api_bounds_them)
{
    BOOST_TEST(parse_fraction("20/100")->numerator == 20u);
    BOOST_TEST(parse_fraction("25/50")->denominator == 50u);
    BOOST_TEST(parse_fraction("0/1").has_value());
    BOOST_TEST(parse_fraction("1000000/1000000").has_value());
    BOOST_TEST(parse_fraction("1/2147483647")->denominator == 2147483647u);
    for (const char *bad : {"", "/", "1/", "/2", "1/0", "3/2", "1/2147483648", "-1/2", "1/-2", "1 /2", "1/2 ", "+1/2",
                            "0x1/2", "1/2/3", "20", "4294967297/1", "1/4294967297", "1/02147483647x"}) {
        BOOST_TEST(!parse_fraction(bad).has_value(), bad);
    }
}

BOOST_AUTO_TEST_CASE(every_prefix_of_picks_holds_the_exact_share)
{
    // property: after any k picks, exactly floor(kN/D) taken, for every
    // fraction with D up to 60 and a few large ones
    std::vector<Fraction> fractions;
    for (uint32_t d = 1; d <= 60; d++) {
        for (uint32_t n = 0; n <= d; n++) fractions.push_back({n, d});
    }
    fractions.push_back({1, 1000000});
    fractions.push_back({999999, 1000000});
    fractions.push_back({2147483646, 2147483647});  // (n + 1) * N stays in 64 bits
    fractions.push_back({35, 100});
    for (const Fraction &f : fractions) {
        EvenShare share(f);
        uint64_t taken = 0;
        // three rounds, or the first 100,000 picks of a large denominator
        const uint64_t picks = std::min<uint64_t>(3 * uint64_t(f.denominator) + 7, 100000);
        bool exact = true;
        for (uint64_t k = 1; k <= picks; k++) {
            taken += share.next();
            exact &= taken == k * f.numerator / f.denominator;
        }
        BOOST_TEST(exact, f.numerator << "/" << f.denominator);
    }
}

BOOST_AUTO_TEST_CASE(taken_picks_are_spread_evenly)
{
    // 1/2 is every other pick, 1/5 one in each five, never two together
    EvenShare half(Fraction{1, 2});
    std::string pattern;
    for (int i = 0; i < 8; i++) pattern += half.next() ? 'x' : '.';
    BOOST_TEST(pattern == ".x.x.x.x");
    EvenShare fifth(Fraction{20, 100});
    pattern.clear();
    for (int i = 0; i < 10; i++) pattern += fifth.next() ? 'x' : '.';
    BOOST_TEST(pattern == "....x....x");
    // 500 picks of the suite's shares: 100, 175 and 250
    for (const auto &[f, want] : {std::pair{Fraction{20, 100}, 100}, {Fraction{35, 100}, 175}, {Fraction{25, 50}, 250}}) {
        EvenShare share(f);
        int taken = 0;
        for (int i = 0; i < 500; i++) taken += share.next();
        BOOST_TEST(taken == want);
    }
}

BOOST_AUTO_TEST_SUITE_END()
