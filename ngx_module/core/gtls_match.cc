#include "gtls_match.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace gtls {

namespace {

bool iequals(std::string_view a, std::string_view b)
{
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); i++) {
        if (std::tolower(static_cast<unsigned char>(a[i]))
            != std::tolower(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

std::string_view strip_trailing_dot(std::string_view name)
{
    if (!name.empty() && name.back() == '.') {
        name.remove_suffix(1);
    }
    return name;
}

}  // namespace

namespace {

// The limits every pattern is compiled and matched with: made once, for
// the life of the process (a worker's, or a test's)
struct RegexContexts {
    pcre2_compile_context *compile = pcre2_compile_context_create(nullptr);
    pcre2_match_context *match = pcre2_match_context_create(nullptr);

    RegexContexts()
    {
        pcre2_set_max_pattern_length(compile, kRegexMaxPattern);
        pcre2_set_parens_nest_limit(compile, kRegexMaxNesting);
        pcre2_set_match_limit(match, kRegexMatchLimit);
        pcre2_set_depth_limit(match, kRegexDepthLimit);
    }
    ~RegexContexts()
    {
        pcre2_compile_context_free(compile);
        pcre2_match_context_free(match);
    }
};

const RegexContexts &regex_contexts()
{
    static const RegexContexts contexts;
    return contexts;
}

}  // namespace

std::shared_ptr<Regex> Regex::compile(std::string_view pattern, std::string *error, bool utf)
{
    int errcode = 0;
    PCRE2_SIZE erroffset = 0;
    pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_ANCHORED | PCRE2_ENDANCHORED | (utf ? PCRE2_UTF : 0)
                                         | PCRE2_NEVER_BACKSLASH_C,
                                     &errcode, &erroffset, regex_contexts().compile);
    if (code == nullptr) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(errcode, buf, sizeof(buf));
        *error = std::string(reinterpret_cast<char *>(buf)) + " at offset "
                 + std::to_string(erroffset);
        return nullptr;
    }
    // JIT is an optimisation: a pattern it cannot handle still matches
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);

    std::shared_ptr<Regex> re(new Regex());
    re->code_ = code;
    re->match_data_ = pcre2_match_data_create_from_pattern(code, nullptr);
    if (re->match_data_ == nullptr) {
        *error = "out of memory";
        return nullptr;
    }
    return re;
}

Regex::~Regex()
{
    pcre2_match_data_free(static_cast<pcre2_match_data *>(match_data_));
    pcre2_code_free(static_cast<pcre2_code *>(code_));
}

Regex::Outcome Regex::match(std::string_view subject) const
{
    int rc = pcre2_match(static_cast<pcre2_code *>(code_),
                         reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                         static_cast<pcre2_match_data *>(match_data_), regex_contexts().match);
    if (rc >= 0) return Outcome::Match;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT
        || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        return Outcome::Limit;
    }
    return Outcome::NoMatch;
}

bool dns_name_matches(std::string_view reference, std::string_view presented)
{
    reference = strip_trailing_dot(reference);
    presented = strip_trailing_dot(presented);

    if (reference.empty() || presented.empty()
        || reference.find('*') != std::string_view::npos) {
        return false;
    }

    if (presented.size() < 2 || presented.substr(0, 2) != "*.") {
        return presented.find('*') == std::string_view::npos && iequals(reference, presented);
    }

    // "*.example.com": the rest must hold two labels and no other wildcard
    std::string_view rest = presented.substr(2);
    if (rest.find('*') != std::string_view::npos || rest.find('.') == std::string_view::npos) {
        return false;
    }

    size_t dot = reference.find('.');
    if (dot == 0 || dot == std::string_view::npos) {
        return false;
    }
    // a wildcard never stands for an IDN A-label (RFC 6125 6.4.3)
    if (reference.size() >= 4 && iequals(reference.substr(0, 4), "xn--")) {
        return false;
    }
    return iequals(reference.substr(dot + 1), rest);
}

bool parse_ip(std::string_view text, std::string *binary)
{
    char buf[INET6_ADDRSTRLEN + 1];
    if (text.empty() || text.size() >= sizeof(buf)) {
        return false;
    }
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';

    unsigned char addr[16];
    if (inet_pton(AF_INET, buf, addr) == 1) {
        binary->assign(reinterpret_cast<char *>(addr), 4);
        return true;
    }
    if (inet_pton(AF_INET6, buf, addr) == 1) {
        binary->assign(reinterpret_cast<char *>(addr), 16);
        return true;
    }
    return false;
}

std::string format_ip(std::string_view binary)
{
    char buf[INET6_ADDRSTRLEN];
    int family = binary.size() == 4 ? AF_INET : binary.size() == 16 ? AF_INET6 : 0;
    if (family == 0 || inet_ntop(family, binary.data(), buf, sizeof(buf)) == nullptr) {
        return "?";
    }
    return buf;
}

bool san_matches(const SanMatcher &matcher, const PresentedName &name)
{
    if (matcher.type != name.type) {
        return false;
    }

    if (matcher.is_regex) {
        // a regex sees the name as presented, without its trailing dot
        std::string_view subject = name.value;
        if (name.type == SanType::Dns) {
            subject = strip_trailing_dot(subject);
        }
        return matcher.regex->matches(subject);
    }

    switch (matcher.type) {
    case SanType::Dns:
        return dns_name_matches(matcher.value, name.value);
    case SanType::Uri:
        // SPIFFE IDs and URIs compare exactly, byte for byte
        return matcher.value == name.value;
    case SanType::Ip:
        return matcher.value == name.value;
    case SanType::Email: {
        size_t at = name.value.rfind('@');
        if (at == std::string::npos) {
            return false;
        }
        return matcher.value.compare(0, at + 1, name.value, 0, at + 1) == 0
               && matcher.value.size() == name.value.size()
               && iequals(std::string_view(matcher.value).substr(at + 1),
                          std::string_view(name.value).substr(at + 1));
    }
    }
    return false;
}

std::string escaped_text(std::string_view text, size_t limit)
{
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(std::min(text.size(), limit));
    for (size_t i = 0; i < text.size(); i++) {
        if (i == limit) {
            out += "...";
            break;
        }
        auto ch = static_cast<unsigned char>(text[i]);
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            out += "\\x";
            out += hex[ch >> 4];
            out += hex[ch & 0xf];
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out;
}

std::string presented_name_text(const PresentedName &name)
{
    std::string out = san_type_name(name.type);
    out += ':';
    out += name.type == SanType::Ip ? format_ip(name.value) : escaped_text(name.value, kMaxNameText);
    return out;
}

}  // namespace gtls
