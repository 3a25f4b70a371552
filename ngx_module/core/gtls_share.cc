#include "gtls_share.h"

#include <charconv>

namespace gtls {

namespace {

std::optional<uint32_t> decimal(std::string_view text)
{
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > kMaxDenominator) {
        return std::nullopt;
    }
    return value;
}

}  // namespace

std::optional<Fraction> parse_fraction(std::string_view text)
{
    const size_t slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const std::optional<uint32_t> n = decimal(text.substr(0, slash));
    const std::optional<uint32_t> d = decimal(text.substr(slash + 1));
    if (!n || !d || *d == 0 || *n > *d) return std::nullopt;
    return Fraction{*n, *d};
}

}  // namespace gtls
