#include "gtls_spec.h"

#include <cctype>

#include <openssl/evp.h>

#include "gtls_match.h"

namespace gtls {

namespace {

bool starts_with(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

std::string lower(std::string_view text)
{
    std::string out(text);
    for (char &ch : out) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return out;
}

bool valid_dns_name(std::string_view name)
{
    if (name.empty() || name.size() > 253) {
        return false;
    }
    size_t label = 0;
    for (size_t i = 0; i < name.size(); i++) {
        unsigned char ch = static_cast<unsigned char>(name[i]);
        if (ch == '.') {
            if (label == 0) {
                return false;
            }
            label = 0;
            continue;
        }
        if (!(std::isalnum(ch) || ch == '-' || ch == '_')) {
            return false;
        }
        if (++label > 63) {
            return false;
        }
    }
    return label != 0;
}

int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

}  // namespace

std::optional<Mode> parse_mode(std::string_view text)
{
    if (text == "off") return Mode::Off;
    if (text == "strict") return Mode::Strict;
    if (text == "allow_expired") return Mode::AllowExpired;
    if (text == "skip_san") return Mode::SkipSan;
    if (text == "skip") return Mode::Skip;
    return std::nullopt;
}

const char *mode_name(Mode mode)
{
    switch (mode) {
    case Mode::Off: return "off";
    case Mode::Strict: return "strict";
    case Mode::AllowExpired: return "allow_expired";
    case Mode::SkipSan: return "skip_san";
    case Mode::Skip: return "skip";
    }
    return "off";
}

bool mode_is_insecure(Mode mode)
{
    return mode == Mode::AllowExpired || mode == Mode::SkipSan || mode == Mode::Skip;
}

const char *san_type_name(SanType type)
{
    switch (type) {
    case SanType::Dns: return "dns";
    case SanType::Uri: return "uri";
    case SanType::Ip: return "ip";
    case SanType::Email: return "email";
    }
    return "dns";
}

std::optional<SanMatcher> parse_san_spec(std::string_view spec, std::string *error)
{
    struct Form {
        const char *prefix;
        SanType type;
        bool regex;
    };
    static const Form forms[] = {
        {"dns:", SanType::Dns, false},   {"uri:", SanType::Uri, false},
        {"ip:", SanType::Ip, false},     {"email:", SanType::Email, false},
        {"dns~", SanType::Dns, true},    {"uri~", SanType::Uri, true},
    };

    for (const Form &form : forms) {
        if (!starts_with(spec, form.prefix)) {
            continue;
        }
        std::string_view value = spec.substr(std::char_traits<char>::length(form.prefix));
        SanMatcher m;
        m.type = form.type;
        m.is_regex = form.regex;
        m.spec = std::string(spec);
        if (value.empty()) {
            *error = "empty value";
            return std::nullopt;
        }

        if (form.regex) {
            std::string why;
            m.regex = Regex::compile(value, &why);
            if (!m.regex) {
                *error = "bad regular expression: " + why;
                return std::nullopt;
            }
            m.value = std::string(value);
            return m;
        }

        switch (form.type) {
        case SanType::Dns: {
            std::string name = lower(value);
            if (!name.empty() && name.back() == '.') {
                name.pop_back();
            }
            if (name.find('*') != std::string::npos) {
                *error = "wildcards are not allowed in a DNS SPEC, use \"dns~\"";
                return std::nullopt;
            }
            if (!valid_dns_name(name)) {
                *error = "not a DNS name";
                return std::nullopt;
            }
            m.value = name;
            return m;
        }
        case SanType::Uri:
            if (value.find(':') == std::string_view::npos) {
                *error = "a URI needs a scheme";
                return std::nullopt;
            }
            m.value = std::string(value);
            return m;
        case SanType::Ip:
            if (!parse_ip(value, &m.value)) {
                *error = "not an IP address";
                return std::nullopt;
            }
            return m;
        case SanType::Email: {
            size_t at = value.rfind('@');
            if (at == std::string_view::npos || at == 0 || at + 1 == value.size()) {
                *error = "not an e-mail address";
                return std::nullopt;
            }
            // the local part is case-sensitive, the domain is not
            m.value = std::string(value.substr(0, at + 1)) + lower(value.substr(at + 1));
            return m;
        }
        }
    }

    *error = "unknown SPEC type, expected dns:, uri:, ip:, email:, dns~ or uri~";
    return std::nullopt;
}

std::optional<Pin> parse_pin_spec(std::string_view spec, std::string *error)
{
    Pin pin;

    if (starts_with(spec, "sha256-spki:")) {
        std::vector<unsigned char> raw;
        if (!from_base64(spec.substr(12), &raw) || raw.size() != pin.digest.size()) {
            *error = "expected the base64 of a 32-byte SHA-256 digest";
            return std::nullopt;
        }
        pin.type = PinType::Spki;
        std::copy(raw.begin(), raw.end(), pin.digest.begin());
        pin.spec = "sha256-spki:" + to_base64(pin.digest.data(), pin.digest.size());
        return pin;
    }

    if (starts_with(spec, "sha256-cert:")) {
        std::string_view hex = spec.substr(12);
        size_t n = 0;
        for (size_t i = 0; i < hex.size();) {
            if (hex[i] == ':') {
                i++;
                continue;
            }
            int hi = hex_value(hex[i]);
            int lo = i + 1 < hex.size() ? hex_value(hex[i + 1]) : -1;
            if (hi < 0 || lo < 0 || n == pin.digest.size()) {
                *error = "expected 64 hex digits (colons allowed)";
                return std::nullopt;
            }
            pin.digest[n++] = static_cast<unsigned char>(hi << 4 | lo);
            i += 2;
        }
        if (n != pin.digest.size()) {
            *error = "expected 64 hex digits (colons allowed)";
            return std::nullopt;
        }
        pin.type = PinType::Cert;
        pin.spec = "sha256-cert:" + to_hex(pin.digest.data(), pin.digest.size());
        return pin;
    }

    *error = "unknown pin type, expected sha256-spki: or sha256-cert:";
    return std::nullopt;
}

std::string to_hex(const unsigned char *data, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(len * 2);
    for (size_t i = 0; i < len; i++) {
        out.push_back(digits[data[i] >> 4]);
        out.push_back(digits[data[i] & 0xf]);
    }
    return out;
}

std::string to_base64(const unsigned char *data, size_t len)
{
    std::string out(4 * ((len + 2) / 3), '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(&out[0]), data,
                            static_cast<int>(len));
    out.resize(n < 0 ? 0 : static_cast<size_t>(n));
    return out;
}

bool from_base64(std::string_view text, std::vector<unsigned char> *out)
{
    if (text.empty() || text.size() % 4 != 0) {
        return false;
    }
    for (char ch : text) {
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '+' || ch == '/'
              || ch == '=')) {
            return false;
        }
    }
    out->assign(text.size() / 4 * 3, 0);
    int n = EVP_DecodeBlock(out->data(), reinterpret_cast<const unsigned char *>(text.data()),
                            static_cast<int>(text.size()));
    if (n < 0) {
        return false;
    }
    // EVP_DecodeBlock keeps the bytes that padding stands for
    size_t pad = 0;
    if (text.back() == '=') pad++;
    if (text.size() > 1 && text[text.size() - 2] == '=') pad++;
    out->resize(static_cast<size_t>(n) - pad);
    return true;
}

}  // namespace gtls
