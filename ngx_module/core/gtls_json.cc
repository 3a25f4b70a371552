#include "gtls_json.h"

#include <cstdio>

namespace gtls {

namespace {

// The length of the valid UTF-8 sequence at `text[at]` (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), 0 when none
// starts there.
size_t utf8_sequence(std::string_view text, size_t at)
{
    const auto byte = [&](size_t i) { return at + i < text.size() ? static_cast<unsigned char>(text[at + i]) : 0u; };
    const auto continuation = [&](size_t i, unsigned lo = 0x80, unsigned hi = 0xbf) {
        return byte(i) >= lo && byte(i) <= hi;
    };
    const unsigned lead = byte(0);
    if (lead < 0x80) return 1;
    if (lead >= 0xc2 && lead <= 0xdf) return continuation(1) ? 2 : 0;
    if (lead >= 0xe0 && lead <= 0xef) {
        const bool second = lead == 0xe0 ? continuation(1, 0xa0) : lead == 0xed ? continuation(1, 0x80, 0x9f)
                                                                               : continuation(1);
        return second && continuation(2) ? 3 : 0;
    }
    if (lead >= 0xf0 && lead <= 0xf4) {
        const bool second = lead == 0xf0 ? continuation(1, 0x90) : lead == 0xf4 ? continuation(1, 0x80, 0x8f)
                                                                               : continuation(1);
        return second && continuation(2) && continuation(3) ? 4 : 0;
    }
    return 0;
}

}  // namespace

std::string json_string(std::string_view text)
{
    std::string out = "\"";
    out.reserve(text.size() + 2);
    for (size_t at = 0; at < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[at]);
        const size_t length = utf8_sequence(text, at);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else if (length == 0) {
            out += "\\ufffd";
        } else {
            out.append(text.substr(at, length));
            at += length;
            continue;
        }
        at++;
    }
    out.push_back('"');
    return out;
}

std::string json_position(std::string_view text, size_t offset)
{
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); i++) {
        if (text[i] == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    return "JSON line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace gtls
