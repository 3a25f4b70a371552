#include "gtls_upstream_api.h"

#include <arpa/inet.h>

#include <cstdio>
#include <memory>
#include <set>
#include <utility>

#include "gtls_spec.h"

namespace gtls {

namespace {

// A parsed JSON value: a small strict reader (RFC 8259, nesting at most
// kMaxApiJsonDepth, duplicate keys refused) for bodies of bounded size.
struct Json {
    enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
    bool                                     boolean = false;
    std::string                              text;  // a string's value, a number's digits
    std::vector<Json>                        items;
    std::vector<std::pair<std::string, Json>> members;
};

const char *type_name(Json::Type t)
{
    switch (t) {
    case Json::Type::Null: return "null";
    case Json::Type::Bool: return "a boolean";
    case Json::Type::Number: return "a number";
    case Json::Type::String: return "a string";
    case Json::Type::Array: return "an array";
    case Json::Type::Object: return "an object";
    }
    return "a value";
}

class Reader {
public:
    explicit Reader(std::string_view s) : s_(s) {}

    Json document()
    {
        Json v = value(0);
        space();
        if (pos_ != s_.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string &what) const
    {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < pos_ && i < s_.size(); i++) {
            if (s_[i] == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        throw ApiError(400, "JSON line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
    }

    void space()
    {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) pos_++;
    }

    bool literal(std::string_view word)
    {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    Json value(size_t depth)
    {
        if (depth >= kMaxApiJsonDepth) fail("nested deeper than " + std::to_string(kMaxApiJsonDepth) + " levels");
        space();
        if (pos_ >= s_.size()) fail("a value was expected, the body ended");
        Json v;
        const char c = s_[pos_];
        if (c == '{') {
            v.type = Json::Type::Object;
            pos_++;
            std::set<std::string> seen;
            space();
            if (pos_ < s_.size() && s_[pos_] == '}') {
                pos_++;
                return v;
            }
            for (;;) {
                space();
                if (pos_ >= s_.size() || s_[pos_] != '"') fail("a key (a string) was expected");
                std::string key = string();
                if (!seen.insert(key).second) fail("the key " + json_string(key) + " appears twice");
                space();
                if (pos_ >= s_.size() || s_[pos_] != ':') fail("':' was expected");
                pos_++;
                v.members.emplace_back(std::move(key), value(depth + 1));
                space();
                if (pos_ < s_.size() && s_[pos_] == ',') {
                    pos_++;
                    continue;
                }
                if (pos_ < s_.size() && s_[pos_] == '}') {
                    pos_++;
                    return v;
                }
                fail("',' or '}' was expected");
            }
        }
        if (c == '[') {
            v.type = Json::Type::Array;
            pos_++;
            space();
            if (pos_ < s_.size() && s_[pos_] == ']') {
                pos_++;
                return v;
            }
            for (;;) {
                v.items.push_back(value(depth + 1));
                space();
                if (pos_ < s_.size() && s_[pos_] == ',') {
                    pos_++;
                    continue;
                }
                if (pos_ < s_.size() && s_[pos_] == ']') {
                    pos_++;
                    return v;
                }
                fail("',' or ']' was expected");
            }
        }
        if (c == '"') {
            v.type = Json::Type::String;
            v.text = string();
            return v;
        }
        if (literal("true") || literal("false")) {
            v.type = Json::Type::Bool;
            v.boolean = s_[pos_ - 1] == 'e' && s_[pos_ - 2] == 'u';
            return v;
        }
        if (literal("null")) return v;
        if (c == '-' || (c >= '0' && c <= '9')) {
            v.type = Json::Type::Number;
            const size_t start = pos_;
            if (s_[pos_] == '-') pos_++;
            if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("a digit was expected");
            if (s_[pos_] == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9') {
                fail("a number has a leading zero");
            }
            auto digits = [&] {
                while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') pos_++;
            };
            digits();
            if (pos_ < s_.size() && s_[pos_] == '.') {
                pos_++;
                if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("a digit was expected");
                digits();
            }
            if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
                pos_++;
                if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) pos_++;
                if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("a digit was expected");
                digits();
            }
            v.text = std::string(s_.substr(start, pos_ - start));
            return v;
        }
        fail("a value was expected");
    }

    unsigned hex4()
    {
        if (s_.size() - pos_ < 4) fail("\\u needs four hex digits");
        unsigned u = 0;
        for (int i = 0; i < 4; i++) {
            const char h = s_[pos_++];
            u <<= 4;
            if (h >= '0' && h <= '9') u |= h - '0';
            else if (h >= 'a' && h <= 'f') u |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') u |= h - 'A' + 10;
            else fail("\\u needs four hex digits");
        }
        return u;
    }

    std::string string()
    {
        pos_++;  // the opening quote
        std::string out;
        for (;;) {
            if (pos_ >= s_.size()) fail("a string is not closed");
            const unsigned char c = s_[pos_];
            if (c == '"') {
                pos_++;
                return out;
            }
            if (c < 0x20 || c == 0x7f) fail("a control character in a string");
            if (c != '\\') {
                out.push_back(static_cast<char>(c));
                pos_++;
                continue;
            }
            pos_++;
            if (pos_ >= s_.size()) fail("a string is not closed");
            const char e = s_[pos_++];
            switch (e) {
            case '"': out.push_back('"'); break;
            case '\\': out.push_back('\\'); break;
            case '/': out.push_back('/'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'b':
            case 'f': fail("a control character in a string");
            case 'u': {
                unsigned u = hex4();
                if (u >= 0xD800 && u <= 0xDBFF) {
                    if (!literal("\\u")) fail("a lone surrogate in \\u");
                    const unsigned low = hex4();
                    if (low < 0xDC00 || low > 0xDFFF) fail("a lone surrogate in \\u");
                    u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
                } else if (u >= 0xDC00 && u <= 0xDFFF) {
                    fail("a lone surrogate in \\u");
                }
                // no field holds a control byte but a PEM bundle's line breaks:
                // one would cut an address or a name short where C reads it
                if ((u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7f) {
                    fail("a control character in a string");
                }
                // UTF-8
                if (u < 0x80) {
                    out.push_back(static_cast<char>(u));
                } else if (u < 0x800) {
                    out.push_back(static_cast<char>(0xC0 | (u >> 6)));
                    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
                } else if (u < 0x10000) {
                    out.push_back(static_cast<char>(0xE0 | (u >> 12)));
                    out.push_back(static_cast<char>(0x80 | ((u >> 6) & 0x3F)));
                    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
                } else {
                    out.push_back(static_cast<char>(0xF0 | (u >> 18)));
                    out.push_back(static_cast<char>(0x80 | ((u >> 12) & 0x3F)));
                    out.push_back(static_cast<char>(0x80 | ((u >> 6) & 0x3F)));
                    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
                }
                break;
            }
            default: fail("an unknown escape in a string");
            }
        }
    }

    std::string_view s_;
    size_t pos_ = 0;
};

[[noreturn]] void refuse(const std::string &field, const std::string &what)
{
    throw ApiError(400, field + ": " + what);
}

void expect(const Json &v, Json::Type type, const std::string &field)
{
    if (v.type != type) refuse(field, std::string("must be ") + type_name(type) + ", not " + type_name(v.type));
}

unsigned bounded(const Json &v, const std::string &field, unsigned low, unsigned high)
{
    expect(v, Json::Type::Number, field);
    const std::string &t = v.text;
    bool integer = !t.empty() && t[0] != '-' && t.find_first_not_of("0123456789") == std::string::npos;
    if (!integer || t.size() > 10 || std::stoull(t) < low || std::stoull(t) > high) {
        refuse(field, "must be a whole number from " + std::to_string(low) + " to " + std::to_string(high) + ", not "
                          + t);
    }
    return static_cast<unsigned>(std::stoull(t));
}

UpstreamServer server_of(const Json &v, const std::string &field)
{
    expect(v, Json::Type::Object, field);
    const Json *address = nullptr;
    for (const auto &[key, value] : v.members) {
        if (key == "address") address = &value;
    }
    if (address == nullptr) refuse(field, "\"address\" is required");
    expect(*address, Json::Type::String, field + ".address");
    UpstreamServer s = parse_server_address(address->text, field + ".address");
    for (const auto &[key, value] : v.members) {
        const std::string f = field + "." + key;
        if (key == "address") continue;
        else if (key == "weight") s.weight = bounded(value, f, 1, kMaxApiWeight);
        else if (key == "max_conns") s.max_conns = bounded(value, f, 0, kMaxApiMaxConns);
        else if (key == "max_fails") s.max_fails = bounded(value, f, 0, kMaxApiMaxFails);
        else if (key == "fail_timeout") s.fail_timeout = bounded(value, f, 0, kMaxApiFailTimeout);
        else if (key == "down") {
            expect(value, Json::Type::Bool, f);
            s.down = value.boolean;
        } else {
            refuse(field, "unknown field " + json_string(key)
                              + " (known: address, weight, max_conns, max_fails, fail_timeout, down)");
        }
    }
    return s;
}

std::vector<UpstreamServer> servers_of(const Json &v, const std::string &field)
{
    expect(v, Json::Type::Array, field);
    if (v.items.size() > kMaxApiServers) {
        refuse(field, std::to_string(v.items.size()) + " servers, more than " + std::to_string(kMaxApiServers));
    }
    std::vector<UpstreamServer> servers;
    servers.reserve(v.items.size());
    for (size_t i = 0; i < v.items.size(); i++) {
        servers.push_back(server_of(v.items[i], field + "[" + std::to_string(i) + "]"));
    }
    return servers;
}

bool valid_upstream_name(const std::string &name)
{
    if (name.empty() || name.size() > kMaxApiUpstreamName) return false;
    for (unsigned char c : name) {
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '{' || c == '}' || c == ';') return false;
    }
    return true;
}

// The members of `section`, an object of at most `most` named entries
// (KEY["NAME"] in messages), each name checked by `valid`.
template <typename Each>
void each_named(const Json &section, const char *key, const char *noun, const char *a_noun, size_t most,
                bool (*valid)(const std::string &), Each each)
{
    expect(section, Json::Type::Object, key);
    if (section.members.empty()) refuse(key, std::string("names no ") + noun);
    if (section.members.size() > most) refuse(key, "more than " + std::to_string(most) + " " + key);
    for (const auto &[name, value] : section.members) {
        const std::string field = std::string(key) + "[" + json_string(name) + "]";
        if (!valid(name)) refuse(field, std::string("is not ") + a_noun + " name");
        each(name, value, field);
    }
}

UpstreamServers upstream_of(const Json &v, const std::string &upstream, const std::string &field)
{
    expect(v, Json::Type::Object, field);
    const Json *servers = nullptr;
    for (const auto &[key, value] : v.members) {
        if (key != "servers") refuse(field, "unknown field " + json_string(key) + " (known: servers)");
        servers = &value;
    }
    if (servers == nullptr) refuse(field, "\"servers\" is required");
    return {upstream, servers_of(*servers, field + ".servers")};
}

bool valid_policy_name(const std::string &name)
{
    if (name.empty() || name.size() > kMaxApiPolicyName) return false;
    for (unsigned char c : name) {
        if (c < 0x20 || c >= 0x7f) return false;
    }
    return true;
}

// PEM text: BEGIN/END lines of one label each, base64 between, nothing
// else but blank lines (no headers, no private key: a CA bundle only)
void check_pem_certificates(const std::string &pem, const std::string &field)
{
    if (pem.size() > kMaxApiCaBytes) {
        refuse(field, "more than " + std::to_string(kMaxApiCaBytes) + " bytes");
    }
    size_t blocks = 0, line_no = 0;
    bool inside = false;
    for (size_t at = 0; at < pem.size();) {
        size_t end = pem.find('\n', at);
        if (end == std::string::npos) end = pem.size();
        std::string_view line(pem.data() + at, end - at);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        at = end + 1;
        line_no++;
        const std::string where = " (line " + std::to_string(line_no) + ")";
        if (line == "-----BEGIN CERTIFICATE-----") {
            if (inside) refuse(field, "a PEM block begins inside another" + where);
            inside = true;
        } else if (line == "-----END CERTIFICATE-----") {
            if (!inside) refuse(field, "a PEM block ends that did not begin" + where);
            inside = false;
            blocks++;
        } else if (inside) {
            if (line.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != std::string_view::npos
                || line.empty()) {
                refuse(field, "a PEM certificate holds something that is not base64" + where);
            }
        } else if (line.find_first_not_of(" \t") != std::string_view::npos) {
            refuse(field, "only CERTIFICATE PEM blocks may be given" + where);
        }
    }
    if (inside) refuse(field, "the last PEM block does not end");
    if (blocks == 0) refuse(field, "holds no certificate");
}

PolicyTrust trust_of(const Json &v, const std::string &policy, const std::string &field)
{
    expect(v, Json::Type::Object, field);
    PolicyTrust t;
    t.policy = policy;
    for (const auto &[key, value] : v.members) {
        const std::string f = field + "." + key;
        if (key == "ca") {
            expect(value, Json::Type::String, f);
            if (value.text != "system") check_pem_certificates(value.text, f);
            t.ca = value.text;
        } else if (key == "pins") {
            expect(value, Json::Type::Array, f);
            if (value.items.size() > kMaxApiPins) {
                refuse(f, std::to_string(value.items.size()) + " pins, more than " + std::to_string(kMaxApiPins));
            }
            for (size_t i = 0; i < value.items.size(); i++) {
                const std::string fi = f + "[" + std::to_string(i) + "]";
                expect(value.items[i], Json::Type::String, fi);
                std::string error;
                std::optional<Pin> pin = parse_pin_spec(value.items[i].text, &error);
                if (!pin) refuse(fi, error);
                t.pins.push_back(pin->spec);
            }
        } else {
            refuse(field, "unknown field " + json_string(key) + " (known: ca, pins)");
        }
    }
    if (t.ca.empty() && t.pins.empty()) {
        refuse(field, "a policy verifies against \"ca\", \"pins\" or both; neither was given");
    }
    return t;
}

}  // namespace

UpstreamServer parse_server_address(std::string_view text, const std::string &field)
{
    for (unsigned char c : text) {
        if (c <= 0x20 || c >= 0x7f) refuse(field, json_string(text) + " holds a byte no address has");
    }
    UpstreamServer s;
    std::string host;
    std::string_view port;
    if (!text.empty() && text[0] == '[') {
        const size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            refuse(field, json_string(text) + " is not \"[IPv6]:PORT\"");
        }
        host = std::string(text.substr(1, close - 1));
        port = text.substr(close + 2);
        s.family = 6;
        if (inet_pton(AF_INET6, host.c_str(), s.ip.data()) != 1) {
            refuse(field, json_string(text) + ": " + json_string(host) + " is not an IPv6 address");
        }
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) refuse(field, json_string(text) + " has no port (ADDRESS:PORT)");
        host = std::string(text.substr(0, colon));
        port = text.substr(colon + 1);
        s.family = 4;
        if (inet_pton(AF_INET, host.c_str(), s.ip.data()) != 1) {
            refuse(field, json_string(text) + ": " + json_string(host)
                              + " is not an IPv4 address (IP literals only: nothing is resolved at run time;"
                                " IPv6 goes in brackets)");
        }
    }
    unsigned long p = 0;
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos
        || (p = std::stoul(std::string(port))) < 1 || p > 65535) {
        refuse(field, json_string(text) + ": the port must be 1 to 65535");
    }
    s.port = static_cast<uint16_t>(p);
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(s.family == 6 ? AF_INET6 : AF_INET, s.ip.data(), buf, sizeof buf);
    s.address = s.family == 6 ? "[" + std::string(buf) + "]:" + std::to_string(p) : std::string(buf) + ":" + std::to_string(p);
    return s;
}

ApiUpdate parse_api_update(std::string_view body)
{
    const Json doc = Reader(body).document();
    expect(doc, Json::Type::Object, "the body");
    const Json *upstreams = nullptr, *stream_upstreams = nullptr, *policies = nullptr;
    for (const auto &[key, value] : doc.members) {
        if (key == "upstreams") upstreams = &value;
        else if (key == "stream_upstreams") stream_upstreams = &value;
        else if (key == "policies") policies = &value;
        else refuse("the body", "unknown field " + json_string(key) + " (known: upstreams, stream_upstreams, policies)");
    }
    if (upstreams == nullptr && stream_upstreams == nullptr && policies == nullptr) {
        refuse("the body", "\"upstreams\", \"stream_upstreams\" or \"policies\" is required");
    }
    ApiUpdate out;
    if (policies != nullptr) {
        each_named(*policies, "policies", "policy", "a policy", kMaxApiPolicies, valid_policy_name,
                   [&](const std::string &name, const Json &value, const std::string &field) {
                       out.policies.push_back(trust_of(value, name, field));
                   });
    }
    const std::pair<const Json *, const char *> lists[] = {{upstreams, "upstreams"}, {stream_upstreams, "stream_upstreams"}};
    for (const auto &[list, key] : lists) {
        if (list == nullptr) continue;
        std::vector<UpstreamServers> &to = list == upstreams ? out.upstreams : out.stream_upstreams;
        each_named(*list, key, "upstream", "an upstream", kMaxApiUpstreams, valid_upstream_name,
                   [&](const std::string &name, const Json &value, const std::string &field) {
                       to.push_back(upstream_of(value, name, field));
                   });
    }
    return out;
}

PolicyTrust parse_policy_trust(std::string_view json, const std::string &policy)
{
    return trust_of(Reader(json).document(), policy, "policies[" + json_string(policy) + "]");
}

std::vector<std::string> pushed_policies(std::string_view list)
{
    const Json doc = Reader(list).document();
    expect(doc, Json::Type::Object, "the list");
    std::vector<std::string> names;
    for (const auto &[key, value] : doc.members) {
        if (key != "policies") continue;
        expect(value, Json::Type::Object, "policies");
        for (const auto &[name, policy] : value.members) {
            expect(policy, Json::Type::Object, "policies[" + json_string(name) + "]");
            for (const auto &[field, v] : policy.members) {
                if (field == "source" && v.type == Json::Type::String && v.text == "api") names.push_back(name);
            }
        }
    }
    return names;
}

std::vector<UpstreamServers> listed_servers(std::string_view list, std::string_view section)
{
    const Json doc = Reader(list).document();
    expect(doc, Json::Type::Object, "the list");
    std::vector<UpstreamServers> out;
    for (const auto &[key, value] : doc.members) {
        if (key != section) continue;
        expect(value, Json::Type::Object, key);
        for (const auto &[name, upstream] : value.members) {
            const std::string field = key + "[" + json_string(name) + "]";
            expect(upstream, Json::Type::Object, field);
            for (const auto &[f, v] : upstream.members) {
                if (f == "servers") out.push_back({name, servers_of(v, field + ".servers")});
            }
        }
    }
    return out;
}

std::string policy_trust_json(const PolicyTrust &trust)
{
    std::string out = trust.ca.empty() ? "{\"pins\":[" : "{\"ca\":" + json_string(trust.ca) + ",\"pins\":[";
    for (size_t i = 0; i < trust.pins.size(); i++) out += (i ? "," : "") + json_string(trust.pins[i]);
    return out + "]}";
}

std::vector<UpstreamServer> parse_server_list(std::string_view json)
{
    return servers_of(Reader(json).document(), "servers");
}

std::string json_string(std::string_view text)
{
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    out.push_back('"');
    return out;
}

std::string upstream_servers_json(const std::vector<UpstreamServer> &servers)
{
    std::string out = "[";
    for (const UpstreamServer &s : servers) {
        if (out.size() > 1) out += ",";
        out += "{\"address\":" + json_string(s.address) + ",\"weight\":" + std::to_string(s.weight)
               + ",\"max_conns\":" + std::to_string(s.max_conns) + ",\"max_fails\":" + std::to_string(s.max_fails)
               + ",\"fail_timeout\":" + std::to_string(s.fail_timeout) + ",\"down\":" + (s.down ? "true" : "false")
               + "}";
    }
    return out + "]";
}

std::string api_error_json(int status, std::string_view text)
{
    return "{\"error\":{\"status\":" + std::to_string(status) + ",\"text\":" + json_string(text) + "}}\n";
}

uint64_t server_list_fingerprint(const std::vector<UpstreamServer> &servers)
{
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](std::string_view bytes) {
        for (unsigned char c : bytes) {
            h ^= c;
            h *= 0x100000001b3ull;
        }
        h ^= 0xff;  // a field separator no text byte can fake
        h *= 0x100000001b3ull;
    };
    for (const UpstreamServer &s : servers) {
        mix(s.address);
        for (unsigned n : {s.weight, s.max_conns, s.max_fails, s.fail_timeout, static_cast<unsigned>(s.down)}) {
            mix(std::to_string(n));
        }
    }
    return h;
}

}  // namespace gtls
