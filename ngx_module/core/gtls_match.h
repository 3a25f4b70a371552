// Name matching: DNS names with RFC 6125 wildcard rules, URIs, IP
// addresses, e-mail addresses and PCRE2 patterns. No nginx types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtls_spec.h"

namespace gtls {

// Compiled, anchored (whole-subject) PCRE2 pattern. Matching reuses one
// match block: nginx workers are single-threaded. Every match is bounded
// (kRegexMatchLimit, kRegexDepthLimit): a pattern that backtracks
// catastrophically on a subject gives up, as Outcome::Limit, and never
// stalls a worker; patterns themselves are bounded in length and nesting.
inline constexpr uint32_t kRegexMatchLimit = 100000;
inline constexpr uint32_t kRegexDepthLimit = 10000;
inline constexpr size_t kRegexMaxPattern = 4096;
inline constexpr uint32_t kRegexMaxNesting = 32;

class Regex {
public:
    enum class Outcome { NoMatch, Match, Limit };

    // `utf`: the pattern and subjects are UTF-8 (a subject that is not
    // never matches); without it bytes, as nginx's own locations match.
    static std::shared_ptr<Regex> compile(std::string_view pattern, std::string *error, bool utf = true);
    ~Regex();
    Outcome match(std::string_view subject) const;
    bool matches(std::string_view subject) const { return match(subject) == Outcome::Match; }

    Regex(const Regex &) = delete;
    Regex &operator=(const Regex &) = delete;

private:
    Regex() = default;
    void *code_ = nullptr;        // pcre2_code *
    void *match_data_ = nullptr;  // pcre2_match_data *
};

// A presented identifier (from the certificate), typed.
struct PresentedName {
    SanType type;
    std::string value;  // IP: binary (4 or 16 bytes)
};

// RFC 6125 6.4: "reference" is what we expect (no wildcard), "presented"
// is what the certificate says; a presented '*' may stand for exactly the
// whole left-most label and needs two more labels after it.
bool dns_name_matches(std::string_view reference, std::string_view presented);

// Parses a textual IPv4/IPv6 address into its binary form.
bool parse_ip(std::string_view text, std::string *binary);
std::string format_ip(std::string_view binary);

bool san_matches(const SanMatcher &matcher, const PresentedName &name);

// Text from a certificate made safe for a log line, a variable or a
// header: `"`, `\`, control characters and bytes from 0x7f as \xHH, as
// nginx escapes variables in its access log; past `limit` bytes of input
// the rest is "...". A peer writes what it likes into its certificate: a
// CR or LF would start a forged line in the audit trail.
std::string escaped_text(std::string_view text, size_t limit);

// "dns:NAME", "uri:URI", "ip:ADDR", "email:ADDR", the value escaped and
// at most kMaxNameText bytes of it: the form used by logs and
// $upstream_ssl_peer_san.
inline constexpr size_t kMaxNameText = 256;
std::string presented_name_text(const PresentedName &name);

}  // namespace gtls
