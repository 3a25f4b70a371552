// Route parsers: HTTPRoute, GRPCRoute (read into the HTTPRoute shape) and
// TLSRoute, with their parentRefs, matches, filters and backendRefs; the CRD
// schema and CEL rules re-checked.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <regex>
#include <set>

#include <arpa/inet.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "nginx_text.h"
#include "parse_fields.h"

namespace g2n {

namespace {

const char *const kPathCharacters =
    "a path holds letters, digits, -._~!$&'()*+,;=:@/ and %XX escapes only";

// The HTTPRoute CRD's pattern for Exact and PathPrefix values:
// ^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$
bool crd_path_characters(const std::string &path)
{
    auto hex = [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; };
    if (path.empty()) return false;
    for (size_t i = 0; i < path.size(); i++) {
        char ch = path[i];
        if (std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("-/._~!$&'()*+,;=:@", ch) != nullptr) continue;
        if (ch == '%' && i + 2 < path.size() && hex(path[i + 1]) && hex(path[i + 2])) {
            i += 2;
            continue;
        }
        return false;
    }
    return true;
}

ParentRef parse_parent_ref(const Document &doc, const YamlNode &node, const std::string &path)
{
    ParentRef p;
    doc.only(node, path, {"group", "kind", "name", "namespace", "sectionName", "port"});
    p.group = doc.string(node, path, "group", false, kGatewayGroup);
    p.kind = doc.string(node, path, "kind", false, "Gateway");
    p.name = doc.string(node, path, "name", true);
    p.namespace_ = doc.string(node, path, "namespace");
    p.section_name = doc.string(node, path, "sectionName");
    p.port = doc.integer(node, path, "port", 1, 65535);
    return p;
}

// parentRefs, with the CEL rules on several references to one parent.
void parse_parent_refs(const Document &doc, const YamlNode &spec, HTTPRoute *r)
{
    std::vector<YamlNode> refs = doc.list(spec, "spec", "parentRefs");
    for (size_t i = 0; i < refs.size(); i++) {
        ParentRef p = parse_parent_ref(doc, refs[i], "spec.parentRefs[" + std::to_string(i) + "]");
        for (const ParentRef &seen : r->parent_refs) {
            if (seen.group != p.group || seen.kind != p.kind || seen.name != p.name
                || seen.namespace_ != p.namespace_) {
                continue;
            }
            if (seen.section_name.empty() != p.section_name.empty()) {
                doc.fail(refs[i], "spec.parentRefs", "sectionName must be specified when parentRefs includes 2 or more references to the same parent");
            }
            if (seen.section_name == p.section_name && seen.port == p.port) {
                doc.fail(refs[i], "spec.parentRefs", "sectionName must be unique when parentRefs includes 2 or more references to the same parent");
            }
        }
        r->parent_refs.push_back(p);
    }
}

bool valid_header_name(const std::string &name);

// Why nginx would refuse `regex` (PCRE2, as nginx compiles it), or "".
// Control characters are refused as well: they have no place in a path or
// a header, and nginx's text could not carry some of them.
std::string nginx_regex_error(const std::string &regex)
{
    for (unsigned char ch : regex) {
        if (ch < 0x20 || ch == 0x7f) return "a regular expression must not hold control characters";
    }
    if (!nginx::fits_value(regex)) return "a regular expression must fit in one nginx argument";
    int code = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code *re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(), 0, &code, &offset, nullptr);
    if (re != nullptr) {
        // nginx makes every named group a variable of that name: `(?<uri>)`
        // fails nginx -t, and others would overwrite variables we rely on
        uint32_t named_groups = 0;
        pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &named_groups);
        pcre2_code_free(re);
        return named_groups == 0 ? "" : "named groups are not supported (nginx makes each a variable)";
    }
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof(message));
    return "not a regular expression nginx compiles: " + std::string(reinterpret_cast<const char *>(message))
           + " at offset " + std::to_string(offset);
}

// A header or query parameter match: CRD lengths, an HTTP token name, a
// value with no control character, and a RegularExpression that compiles.
HeaderMatch parse_header_match(const Document &doc, const YamlNode &node, const std::string &path)
{
    doc.only(node, path, {"type", "name", "value"});
    HeaderMatch h{doc.string(node, path, "type", false, "Exact"), doc.string(node, path, "name", true),
                  doc.string(node, path, "value", true)};
    if (!valid_header_name(h.name)) doc.fail(node, path + ".name", "not a valid header or parameter name");
    if (h.value.size() > 4096) doc.fail(node, path + ".value", "must be at most 4096 characters");
    if (h.type == "RegularExpression") {
        std::string why = nginx_regex_error("^(?:" + h.value + ")$");
        if (!why.empty()) doc.fail(node, path + ".value", why);
    } else if (std::any_of(h.value.begin(), h.value.end(),
                           [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
        doc.fail(node, path + ".value", "must not hold control characters");
    }
    return h;
}

RouteMatch parse_match(const Document &doc, const YamlNode &node, const std::string &path)
{
    RouteMatch m;
    doc.only(node, path, {"path", "headers", "queryParams", "method"});
    YamlNode p = doc.child(node, path, "path");
    if (p.defined()) {
        doc.only(p, path + ".path", {"type", "value"});
        std::string type = doc.string(p, path + ".path", "type", false, "PathPrefix");
        m.path = doc.string(p, path + ".path", "value", false, "/");
        if (type == "PathPrefix") {
            m.path_type = PathMatchType::PathPrefix;
        } else if (type == "Exact") {
            m.path_type = PathMatchType::Exact;
        } else if (type == "RegularExpression") {
            m.path_type = PathMatchType::RegularExpression;
        } else {
            doc.fail(p, path + ".path.type", "expected Exact, PathPrefix or RegularExpression");
        }
        if (m.path.size() > 1024) {
            doc.fail(p, path + ".path.value", "must be at most 1024 characters");
        }
        if (m.path_type == PathMatchType::RegularExpression) {
            std::string why = nginx_regex_error("^(?:" + m.path + ")$");
            if (!why.empty()) doc.fail(p, path + ".path.value", why);
        }
        if (m.path_type != PathMatchType::RegularExpression) {
            // CEL rules of the HTTPRoute CRD
            if (m.path.empty() || m.path[0] != '/') {
                doc.fail(p, path + ".path.value", "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']");
            }
            for (const char *bad : {"//", "/./", "/../", "%2f", "%2F", "#"}) {
                if (m.path.find(bad) != std::string::npos) {
                    doc.fail(p, path + ".path.value", std::string("must not contain '") + bad
                                                          + "' when type one of ['Exact', 'PathPrefix']");
                }
            }
            for (const char *bad : {"/..", "/."}) {
                size_t n = std::strlen(bad);
                if (m.path.size() >= n && m.path.compare(m.path.size() - n, n, bad) == 0) {
                    doc.fail(p, path + ".path.value", std::string("must not end with '") + bad
                                                          + "' when type one of ['Exact', 'PathPrefix']");
                }
            }
            if (!crd_path_characters(m.path)) {
                doc.fail(p, path + ".path.value", kPathCharacters);
            }
        }
    }
    int i = 0;
    for (const YamlNode &h : doc.list(node, path, "headers")) {
        std::string hpath = path + ".headers[" + std::to_string(i++) + "]";
        m.headers.push_back(parse_header_match(doc, h, hpath));
    }
    i = 0;
    for (const YamlNode &q : doc.list(node, path, "queryParams")) {
        std::string qpath = path + ".queryParams[" + std::to_string(i++) + "]";
        m.query_params.push_back(parse_header_match(doc, q, qpath));
    }
    m.method = doc.string(node, path, "method");
    if (!m.method.empty() && m.method.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos) {
        doc.fail(node, path + ".method", "expected an HTTP method (GET, POST, ...)");
    }
    return m;
}

// A backendRef (with weight and filters), or a BackendObjectReference
// (a mirror's: without).
BackendRef parse_backend_ref(const Document &doc, const YamlNode &node, const std::string &path,
                             bool weighted = true)
{
    BackendRef b;
    if (weighted) {
        doc.only(node, path, {"group", "kind", "name", "namespace", "port", "weight", "filters"});
    } else {
        doc.only(node, path, {"group", "kind", "name", "namespace", "port"});
    }
    b.group = doc.string(node, path, "group");
    b.kind = doc.string(node, path, "kind", false, "Service");
    b.name = doc.string(node, path, "name", true);
    b.namespace_ = doc.string(node, path, "namespace");
    b.port = doc.integer(node, path, "port", 1, 65535);
    b.weight = doc.integer(node, path, "weight", 0, 1000000, false, 1);
    if (b.group.empty() && b.kind == "Service" && b.port == 0) {
        doc.fail(node, path, "Must have port for Service reference");
    }
    return b;
}

// A header name nginx can take as a directive argument: an RFC 7230 token
// (CRD: at most 256 characters).
bool valid_header_name(const std::string &name)
{
    static const std::regex re("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$");
    return !name.empty() && name.size() <= kMaxHeaderNameBytes && std::regex_match(name, re);
}

const char *const kVariableSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// An HTTP field value: no control character but a tab. Anything else,
// "$" and quotes included, reaches nginx literally through nginx::Token.
bool valid_header_value(const std::string &value)
{
    return std::none_of(value.begin(), value.end(), [](char ch) {
        return (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f;
    });
}

// Headers that frame a message or belong to one connection (RFC 9110
// 7.6.1, RFC 9112 6): nginx sets them toward either side itself. A route
// that set, added or removed one would desynchronize a connection other
// clients share (a Content-Length that disagrees with the body is request
// smuggling) or reopen the Upgrade that websocket_upgrade() keeps to
// WebSocket.
bool header_among(const std::string &name, const std::set<std::string> &lower_case_names)
{
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return lower_case_names.count(lower) > 0;
}

bool connection_header(const std::string &name)
{
    return header_among(name, {"connection", "content-length", "keep-alive", "proxy-connection", "te", "trailer",
                               "transfer-encoding", "upgrade"});
}

HeaderModifier parse_header_modifier(const Document &doc, const YamlNode &node,
                                     const std::string &path, std::string *unsupported)
{
    auto refuse_connection_header = [&](const std::string &name) {
        if (connection_header(name)) {
            *unsupported = "header " + name + " frames the message or belongs to the connection: nginx sets it";
        }
    };
    HeaderModifier m;
    doc.only(node, path, {"set", "add", "remove"});
    for (const char *key : {"set", "add"}) {
        int i = 0;
        for (const YamlNode &h : doc.list(node, path, key)) {
            std::string hpath = path + "." + key + "[" + std::to_string(i++) + "]";
            std::string name = doc.string(h, hpath, "name", true);
            std::string value = doc.string(h, hpath, "value", true);
            if (!valid_header_name(name)) {
                doc.fail(h, hpath + ".name", "not a valid header name: \"" + name + "\"");
            }
            if (value.size() > 4096) doc.fail(h, hpath + ".value", "must be at most 4096 characters");
            if (!valid_header_value(value)) {
                doc.fail(h, hpath + ".value", "must not hold control characters");
            } else if (!nginx::fits_script(value)) {
                // the CRD allows 4,096 characters, nginx reads less as one argument
                *unsupported = "header value of " + name + " is longer than nginx takes as one argument";
            }
            refuse_connection_header(name);
            if (std::string(key) == "add" && name.find_first_not_of(kVariableSafe) != std::string::npos) {
                // appended through the $http_NAME variable
                *unsupported = "header " + name + " cannot be appended to: only letters, digits, '-' and '_'";
            }
            (std::string(key) == "set" ? m.set : m.add).emplace_back(name, value);
        }
    }
    int i = 0;
    for (const YamlNode &h : doc.list(node, path, "remove")) {
        std::string hpath = path + ".remove[" + std::to_string(i++) + "]";
        if (!h.is_scalar() || !valid_header_name(h.scalar())) {
            doc.fail(h, hpath, "not a valid header name");
        }
        refuse_connection_header(h.scalar());
        m.remove.push_back(h.scalar());
    }
    return m;
}

PathModifier parse_path_modifier(const Document &doc, const YamlNode &node, const std::string &path)
{
    PathModifier p;
    p.type = doc.string(node, path, "type", true);
    bool full = doc.child(node, path, "replaceFullPath").defined();
    bool prefix = doc.child(node, path, "replacePrefixMatch").defined();
    if (full && p.type != "ReplaceFullPath") {
        doc.fail(node, path, "type must be 'ReplaceFullPath' when replaceFullPath is set");
    }
    if (prefix && p.type != "ReplacePrefixMatch") {
        doc.fail(node, path, "type must be 'ReplacePrefixMatch' when replacePrefixMatch is set");
    }
    if (p.type == "ReplaceFullPath") {
        p.value = doc.string(node, path, "replaceFullPath", true);
    } else if (p.type == "ReplacePrefixMatch") {
        p.value = doc.string(node, path, "replacePrefixMatch", true);
    } else {
        doc.fail(node, path + ".type", "expected ReplaceFullPath or ReplacePrefixMatch");
    }
    // absolute (a rewrite to "http://..." would be a redirect), and the
    // characters the CRD allows in a path
    if (p.value.empty() || p.value[0] != '/' || !crd_path_characters(p.value) || p.value.size() > 1024) {
        doc.fail(node, path, "the replacement must be an absolute path (" + std::string(kPathCharacters) + ")");
    }
    return p;
}

// A CORS filter's lists, as the CRD has them: at most MAX_ITEMS, no
// duplicates (a set), and "*" only alone.
std::vector<std::string> parse_cors_list(const Document &doc, const YamlNode &node, const std::string &path,
                                         const char *key, size_t max_items,
                                         const std::function<bool(const std::string &)> &valid, const char *expected)
{
    std::vector<std::string> items;
    int i = 0;
    for (const YamlNode &item : doc.list(node, path, key)) {
        std::string ipath = path + "." + key + "[" + std::to_string(i++) + "]";
        if (!item.is_scalar() || !valid(item.scalar())) doc.fail(item, ipath, expected);
        if (std::find(items.begin(), items.end(), item.scalar()) != items.end()) {
            doc.fail(item, ipath, "duplicate value: \"" + item.scalar() + "\"");
        }
        items.push_back(item.scalar());
    }
    if (items.size() > max_items) {
        doc.fail(node, path + "." + key, "must have at most " + std::to_string(max_items) + " items");
    }
    if (items.size() > 1 && std::find(items.begin(), items.end(), "*") != items.end()) {
        doc.fail(node, path + "." + key, std::string("cannot contain '*' alongside other values"));
    }
    return items;
}

CorsPolicy parse_cors(const Document &doc, const YamlNode &node, const std::string &path, std::string *unsupported)
{
    CorsPolicy c;
    doc.only(node, path, {"allowOrigins", "allowMethods", "allowHeaders", "exposeHeaders", "allowCredentials", "maxAge"});
    // the CRD's CORSOrigin: "*", or http(s)://host[:port], host a DNS
    // name with an optional leading "*." or "*" alone
    static const std::regex origin(
        "^(\\*|https?://((\\*\\.)?([a-zA-Z0-9-]+\\.)*[a-zA-Z0-9-]+|\\*)(:[0-9]{1,5})?)$");
    c.allow_origins = parse_cors_list(doc, node, path, "allowOrigins", 64, [](const std::string &o) {
        return o.size() <= 253 && std::regex_match(o, origin);
    }, "not an origin: \"*\" or http(s)://host[:port]");
    for (const std::string &o : c.allow_origins) {
        size_t colon = o.rfind(':');  // the scheme's, at 4 or 5, or the port's
        if (colon != std::string::npos && colon > 5 && std::stol(o.substr(colon + 1)) > 65535) {
            doc.fail(node, path + ".allowOrigins", "port of " + o + " is not within 1-65535");
        }
    }
    static const std::set<std::string> methods = {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT",
                                                  "OPTIONS", "TRACE", "PATCH", "*"};
    c.allow_methods = parse_cors_list(doc, node, path, "allowMethods", 9, [](const std::string &m) {
        return methods.count(m) > 0;
    }, "expected GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH or *");
    c.allow_headers = parse_cors_list(doc, node, path, "allowHeaders", 64, valid_header_name, "not a valid header name");
    c.expose_headers = parse_cors_list(doc, node, path, "exposeHeaders", 64, valid_header_name, "not a valid header name");
    std::string credentials = doc.string(node, path, "allowCredentials", false, "false");
    if (credentials != "true" && credentials != "false") doc.fail(node, path + ".allowCredentials", "expected true or false");
    c.allow_credentials = credentials == "true";
    c.max_age = doc.integer(node, path, "maxAge", 1, 2147483647, false, 5);
    for (const std::vector<std::string> *list : {&c.allow_headers, &c.expose_headers}) {
        std::string joined;
        for (const std::string &h : *list) joined += h + ", ";
        // the CRD allows 64 names of 256 bytes, nginx reads less as one argument
        if (!nginx::fits_script(joined)) *unsupported = "the CORS filter's header list is longer than nginx takes as one argument";
    }
    return c;
}

RouteFilter parse_filter(const Document &doc, const YamlNode &node, const std::string &path,
                         std::string *unsupported)
{
    RouteFilter f;
    f.type = doc.string(node, path, "type", true);
    // CEL: the field named after the type, and no other
    static const std::map<std::string, std::string> field_of = {
        {"RequestHeaderModifier", "requestHeaderModifier"}, {"ResponseHeaderModifier", "responseHeaderModifier"},
        {"RequestMirror", "requestMirror"}, {"RequestRedirect", "requestRedirect"},
        {"URLRewrite", "urlRewrite"}, {"ExtensionRef", "extensionRef"}, {"CORS", "cors"}};
    for (const auto &[type, field] : field_of) {
        bool present = doc.child(node, path, field.c_str()).defined();
        if (type == f.type && !present) {
            doc.fail(node, path, "filter." + field + " must be specified for " + type + " filter.type");
        }
        if (type != f.type && present) {
            doc.fail(node, path, "filter." + field + " must be nil if the filter.type is not " + type);
        }
    }
    if (f.type == "RequestHeaderModifier" || f.type == "ResponseHeaderModifier") {
        std::string key = f.type == "RequestHeaderModifier" ? "requestHeaderModifier" : "responseHeaderModifier";
        YamlNode m = doc.child(node, path, key.c_str());
        if (!m.defined()) doc.fail(node, path + "." + key, "required field is missing");
        f.headers = parse_header_modifier(doc, m, path + "." + key, unsupported);
        for (const std::string &name : f.headers.names()) {
            if (f.type == "RequestHeaderModifier" && header_among(name, {"via"})) {
                // the gateway's loop marker: a route that could drop it could loop
                *unsupported = "header " + name + " names the proxies a request passed: the gateway sets it";
            }
        }
    } else if (f.type == "RequestRedirect") {
        YamlNode r = doc.child(node, path, "requestRedirect");
        std::string rpath = path + ".requestRedirect";
        doc.only(r, rpath, {"scheme", "hostname", "path", "port", "statusCode"});
        f.scheme = doc.string(r, rpath, "scheme");
        if (!f.scheme.empty() && f.scheme != "http" && f.scheme != "https") {
            doc.fail(r, rpath + ".scheme", "expected http or https");
        }
        f.hostname = doc.string(r, rpath, "hostname");
        if (!f.hostname.empty() && !valid_hostname(f.hostname, false)) {
            doc.fail(r, rpath + ".hostname", "not a valid precise hostname");
        }
        f.port = doc.integer(r, rpath, "port", 1, 65535);
        f.status_code = doc.integer(r, rpath, "statusCode", 301, 308, false, 302);
        if (f.status_code != 301 && f.status_code != 302 && f.status_code != 303
            && f.status_code != 307 && f.status_code != 308) {
            doc.fail(r, rpath + ".statusCode", "expected 301, 302, 303, 307 or 308");
        }
        YamlNode p = doc.child(r, rpath, "path");
        if (p.defined()) f.path = parse_path_modifier(doc, p, rpath + ".path");
    } else if (f.type == "URLRewrite") {
        YamlNode r = doc.child(node, path, "urlRewrite");
        std::string rpath = path + ".urlRewrite";
        doc.only(r, rpath, {"hostname", "path"});
        f.hostname = doc.string(r, rpath, "hostname");
        if (!f.hostname.empty() && !valid_hostname(f.hostname, false)) {
            doc.fail(r, rpath + ".hostname", "not a valid precise hostname");
        }
        YamlNode p = doc.child(r, rpath, "path");
        if (p.defined()) f.path = parse_path_modifier(doc, p, rpath + ".path");
    } else if (f.type == "RequestMirror") {
        YamlNode m = doc.child(node, path, "requestMirror");
        std::string mpath = path + ".requestMirror";
        doc.only(m, mpath, {"backendRef", "percent", "fraction"});
        YamlNode b = doc.child(m, mpath, "backendRef");
        if (!b.defined()) doc.fail(m, mpath + ".backendRef", "required field is missing");
        f.mirror = parse_backend_ref(doc, b, mpath + ".backendRef", false);
        YamlNode fraction = doc.child(m, mpath, "fraction");
        if (doc.child(m, mpath, "percent").defined() && fraction.defined()) {
            doc.fail(m, mpath, "Only one of percent or fraction may be specified in HTTPRequestMirrorFilter");
        }
        if (doc.child(m, mpath, "percent").defined()) {
            f.mirror_numerator = doc.integer(m, mpath, "percent", 0, 100, false, 100);
        } else if (fraction.defined()) {
            std::string fpath = mpath + ".fraction";
            doc.only(fraction, fpath, {"numerator", "denominator"});
            f.mirror_numerator = doc.integer(fraction, fpath, "numerator", 0, 1000000000, true);
            f.mirror_denominator = doc.integer(fraction, fpath, "denominator", 1, 1000000000, false, 100);
            if (f.mirror_numerator > f.mirror_denominator) {
                doc.fail(fraction, fpath, "numerator must be less than or equal to denominator");
            }
        }
    } else if (f.type == "CORS") {
        f.cors = parse_cors(doc, doc.child(node, path, "cors"), path + ".cors", unsupported);
    } else {
        *unsupported = "filter type " + f.type + " is not rendered yet";
    }
    return f;
}

// A Gateway API Duration (GEP-2257: 1 to 4 of number and unit, h, m, s
// or ms) in milliseconds.
long long parse_duration(const Document &doc, const YamlNode &node, const std::string &path, const char *key)
{
    std::string text = doc.string(node, path, key);
    static const std::regex re("^([0-9]{1,5}(h|m|s|ms)){1,4}$");
    if (!std::regex_match(text, re)) {
        doc.fail(node, path + "." + key, "not a duration: 1 to 4 of a number of up to 5 digits and h, m, s or ms");
    }
    static const std::regex part("([0-9]{1,5})(h|ms|m|s)");
    long long ms = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), part); it != std::sregex_iterator(); ++it) {
        long long n = std::stoll((*it)[1].str());
        const std::string unit = (*it)[2].str();
        ms += unit == "h" ? n * 3600000 : unit == "m" ? n * 60000 : unit == "s" ? n * 1000 : n;
    }
    return ms;
}

// CEL rules of HTTPRoute filters (a rule's, or a backendRef's at NODE,
// PATH), with the rule's MATCHES.
void check_filters(const Document &doc, const YamlNode &node, const std::string &path,
                   const std::vector<RouteFilter> &filters, const std::vector<RouteMatch> &matches)
{
    std::map<std::string, int> count;
    for (const RouteFilter &f : filters) count[f.type]++;
    if (count["RequestRedirect"] && count["URLRewrite"]) {
        doc.fail(node, path + ".filters", "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both");
    }
    for (const char *once : {"RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite"}) {
        if (count[once] > 1) {
            doc.fail(node, path + ".filters", std::string(once) + " filter cannot be repeated");
        }
    }
    for (const RouteFilter &f : filters) {
        if (f.path.type != "ReplacePrefixMatch") continue;
        bool prefix_only = std::all_of(matches.begin(), matches.end(), [](const RouteMatch &m) {
            return m.path_type == PathMatchType::PathPrefix;
        });
        if (!prefix_only) {
            doc.fail(node, path, "When using URLRewrite or RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified");
        }
    }
}

// What every route kind starts with: metadata, the spec's known fields,
// parentRefs and hostnames (TLSRoute v1/v1alpha3: at least one, no IP).
HTTPRoute parse_route_head(const Document &doc, const YamlNode &root, const char *kind,
                           std::initializer_list<const char *> spec_fields, bool hostnames_required = false,
                           bool ip_forbidden = false)
{
    HTTPRoute r;
    r.kind = kind;
    r.meta = doc.meta(root);
    YamlNode spec = doc.child(root, "", "spec");
    doc.only(spec, "spec", spec_fields);
    parse_parent_refs(doc, spec, &r);
    std::vector<YamlNode> hostnames = doc.list(spec, "spec", "hostnames", hostnames_required);
    if (hostnames_required && hostnames.empty()) {
        doc.fail(spec, "spec.hostnames", "expected at least 1 hostname");
    }
    int i = 0;
    for (const YamlNode &h : hostnames) {
        std::string path = "spec.hostnames[" + std::to_string(i++) + "]";
        if (!h.is_scalar() || !valid_hostname(h.scalar(), true)) {
            doc.fail(h, path, "not a valid hostname (RFC 1123, a wildcard only as the first label)");
        }
        unsigned char addr[4];
        if (ip_forbidden && inet_pton(AF_INET, h.scalar().c_str(), addr) == 1) {
            doc.fail(h, path, "Hostnames cannot contain an IP");
        }
        r.hostnames.push_back(h.scalar());
    }
    return r;
}

}  // namespace

void parse_http_route(const Document &doc, const YamlNode &root, Manifests *out)
{
    HTTPRoute r = parse_route_head(doc, root, "HTTPRoute", {"parentRefs", "hostnames", "rules"});
    YamlNode spec = doc.child(root, "", "spec");
    int i = 0;
    for (const YamlNode &rule : doc.list(spec, "spec", "rules")) {
        std::string path = "spec.rules[" + std::to_string(i++) + "]";
        doc.only(rule, path, {"name", "matches", "filters", "backendRefs", "timeouts", "retry", "sessionPersistence"});
        RouteRule rr;
        rr.name = doc.string(rule, path, "name");
        int k = 0;
        for (const YamlNode &f : doc.list(rule, path, "filters")) {
            std::string fpath = path + ".filters[" + std::to_string(k++) + "]";
            RouteFilter filter = parse_filter(doc, f, fpath, &rr.unsupported);
            rr.filters.push_back(filter);
        }
        YamlNode timeouts = doc.child(rule, path, "timeouts");
        if (timeouts.defined()) {
            std::string tpath = path + ".timeouts";
            doc.only(timeouts, tpath, {"request", "backendRequest"});
            if (doc.child(timeouts, tpath, "request").defined()) {
                rr.request_timeout_ms = parse_duration(doc, timeouts, tpath, "request");
            }
            if (doc.child(timeouts, tpath, "backendRequest").defined()) {
                rr.backend_timeout_ms = parse_duration(doc, timeouts, tpath, "backendRequest");
            }
            if (rr.request_timeout_ms > 0 && rr.backend_timeout_ms > rr.request_timeout_ms) {
                doc.fail(timeouts, tpath, "backendRequest timeout cannot be longer than request timeout");
            }
        }
        YamlNode retry = doc.child(rule, path, "retry");
        if (retry.defined()) {
            std::string rpath = path + ".retry";
            doc.only(retry, rpath, {"codes", "attempts", "backoff"});
            // unset: one retry (an implementation's default, as Envoy's)
            rr.retry_attempts = doc.integer(retry, rpath, "attempts", 1, 2147483647, false, 1);
            // each try is a server line of the rule's own upstream, and a
            // request's tries multiply the backend's load: bounded
            if (rr.retry_attempts > kMaxRetryAttempts) {
                rr.unsupported = rpath + ".attempts: at most " + std::to_string(kMaxRetryAttempts) + " retries are served";
                rr.retry_attempts = 0;
            }
            int c = 0;
            for (const YamlNode &code : doc.list(retry, rpath, "codes")) {
                rr.retry_codes.push_back(doc.integer(code, rpath + ".codes[" + std::to_string(c++) + "]", 400, 599));
                // nginx's proxy_next_upstream names these alone
                static const int kRetryable[] = {403, 404, 429, 500, 502, 503, 504};
                if (std::find(std::begin(kRetryable), std::end(kRetryable), rr.retry_codes.back()) == std::end(kRetryable)) {
                    rr.unsupported = rpath + ".codes: " + std::to_string(rr.retry_codes.back())
                                     + " is not retried: nginx retries on 403, 404, 429, 500, 502, 503 and 504";
                }
            }
            if (doc.child(retry, rpath, "backoff").defined()) {
                // nginx retries at once, where the API wants at least the backoff between tries
                if (parse_duration(doc, retry, rpath, "backoff") > 0) {
                    rr.unsupported = rpath + ".backoff: nginx retries at once, without waiting between tries";
                }
            }
        }
        // fields of the CRD not rendered: the rule is not served rather than served without them
        for (const char *field : {"sessionPersistence"}) {
            if (doc.child(rule, path, field).defined()) rr.unsupported = std::string(field) + " is not rendered yet";
        }
        int j = 0;
        for (const YamlNode &m : doc.list(rule, path, "matches")) {
            rr.matches.push_back(parse_match(doc, m, path + ".matches[" + std::to_string(j++) + "]"));
        }
        check_filters(doc, rule, path, rr.filters, rr.matches);
        j = 0;
        for (const YamlNode &b : doc.list(rule, path, "backendRefs")) {
            std::string bpath = path + ".backendRefs[" + std::to_string(j++) + "]";
            BackendRef ref = parse_backend_ref(doc, b, bpath);
            int n = 0;
            for (const YamlNode &f : doc.list(b, bpath, "filters")) {
                std::string fpath = bpath + ".filters[" + std::to_string(n++) + "]";
                ref.filters.push_back(parse_filter(doc, f, fpath, &rr.unsupported));
            }
            check_filters(doc, b, bpath, ref.filters, rr.matches);
            rr.backend_refs.push_back(std::move(ref));
        }
        r.rules.push_back(std::move(rr));
    }
    out->http_routes.push_back(std::move(r));
}

// TLSRoute v1 and the deprecated v1alpha2 (hostnames optional, up to 16
// rules) and v1alpha3: hostnames and backendRefs, routed by SNI.
void parse_tls_route(const Document &doc, const YamlNode &root, const std::string &api_version,
                     Manifests *out)
{
    const bool v1alpha2 = api_version == "gateway.networking.k8s.io/v1alpha2";
    HTTPRoute r = parse_route_head(doc, root, "TLSRoute", {"parentRefs", "hostnames", "rules", "useDefaultGateways"},
                                   !v1alpha2, !v1alpha2);
    r.api_version = api_version;
    YamlNode spec = doc.child(root, "", "spec");
    std::vector<YamlNode> rules = doc.list(spec, "spec", "rules", true);
    if (rules.empty() || rules.size() > (v1alpha2 ? 16u : 1u)) {
        doc.fail(spec, "spec.rules", v1alpha2 ? "expected 1 to 16 rules" : "expected exactly 1 rule");
    }
    std::set<std::string> names;
    int i = 0;
    for (const YamlNode &rule : rules) {
        std::string path = "spec.rules[" + std::to_string(i++) + "]";
        doc.only(rule, path, {"name", "backendRefs"});
        RouteRule rr;
        rr.name = doc.string(rule, path, "name");
        if (!rr.name.empty() && !names.insert(rr.name).second) {
            doc.fail(rule, path + ".name", "Rule name must be unique within the route");
        }
        std::vector<YamlNode> refs = doc.list(rule, path, "backendRefs", true);
        if (refs.empty() || refs.size() > 16) {
            doc.fail(rule, path + ".backendRefs", "expected 1 to 16 backendRefs");
        }
        int j = 0;
        for (const YamlNode &b : refs) {
            rr.backend_refs.push_back(parse_backend_ref(doc, b, path + ".backendRefs[" + std::to_string(j++) + "]"));
        }
        r.rules.push_back(std::move(rr));
    }
    out->tls_routes.push_back(std::move(r));
}

// ngx_http_grpc_module's headers hash: bucket_size ngx_align(64, ngx_cacheline_size)
constexpr size_t kGrpcHeadersHashBucketSize = 64;

void parse_grpc_route(const Document &doc, const YamlNode &root, Manifests *out)
{
    static const std::regex service_re("^[A-Za-z_][A-Za-z_0-9]*(\\.[A-Za-z_][A-Za-z_0-9]*)*$");
    static const std::regex method_re("^[A-Za-z_][A-Za-z_0-9]*$");
    HTTPRoute r = parse_route_head(doc, root, "GRPCRoute", {"parentRefs", "hostnames", "rules"});
    YamlNode spec = doc.child(root, "", "spec");
    int i = 0;
    for (const YamlNode &rule : doc.list(spec, "spec", "rules")) {
        std::string path = "spec.rules[" + std::to_string(i++) + "]";
        doc.only(rule, path, {"name", "matches", "filters", "backendRefs", "sessionPersistence"});
        RouteRule rr;
        rr.name = doc.string(rule, path, "name");
        if (doc.child(rule, path, "sessionPersistence").defined()) rr.unsupported = "sessionPersistence is not rendered yet";
        int k = 0;
        for (const YamlNode &f : doc.list(rule, path, "filters")) {
            std::string fpath = path + ".filters[" + std::to_string(k++) + "]";
            RouteFilter filter = parse_filter(doc, f, fpath, &rr.unsupported);
            static const std::set<std::string> grpc_types = {"RequestHeaderModifier", "ResponseHeaderModifier",
                                                             "RequestMirror", "ExtensionRef"};
            if (grpc_types.count(filter.type) == 0) {
                doc.fail(f, fpath + ".type",
                         "expected RequestHeaderModifier, ResponseHeaderModifier, RequestMirror or ExtensionRef");
            }
            if (filter.type == "RequestMirror") rr.unsupported = "filter type RequestMirror is not rendered yet";
            // nginx's grpc module hashes the header names of grpc_set_header
            // and grpc_hide_header in buckets of a fixed 64 bytes (no
            // *_hash_bucket_size directive, unlike proxy_)
            for (const std::string &name : filter.headers.names()) {
                if (nginx::hash_bucket_size(name.size()) > kGrpcHeadersHashBucketSize) {
                    rr.unsupported = "header name " + name + " is longer than nginx's gRPC proxy takes";
                }
            }
            rr.filters.push_back(filter);
        }
        int j = 0;
        for (const YamlNode &m : doc.list(rule, path, "matches")) {
            std::string mpath = path + ".matches[" + std::to_string(j++) + "]";
            doc.only(m, mpath, {"method", "headers"});
            RouteMatch match;
            YamlNode method = doc.child(m, mpath, "method");
            if (method.defined()) {
                doc.only(method, mpath + ".method", {"type", "service", "method"});
                std::string type = doc.string(method, mpath + ".method", "type", false, "Exact");
                std::string service = doc.string(method, mpath + ".method", "service");
                std::string name = doc.string(method, mpath + ".method", "method");
                if (service.empty() && name.empty()) {
                    doc.fail(method, mpath + ".method", "One or both of 'service' or 'method' must be specified");
                }
                if (type != "Exact") {
                    rr.unsupported = "GRPCRoute method match type " + type + " is not rendered yet";
                } else if (service.size() > 1024 || name.size() > 1024
                           || (!service.empty() && !std::regex_match(service, service_re))
                           || (!name.empty() && !std::regex_match(name, method_re))) {
                    doc.fail(method, mpath + ".method", "not a valid gRPC service or method name");
                } else if (service.empty()) {
                    rr.unsupported = "a GRPCRoute method match without a service is not rendered yet";
                } else if (name.empty()) {
                    match.path_type = PathMatchType::PathPrefix;
                    match.path = "/" + service;
                } else {
                    match.path_type = PathMatchType::Exact;
                    match.path = "/" + service + "/" + name;
                }
            }
            int k = 0;
            for (const YamlNode &h : doc.list(m, mpath, "headers")) {
                std::string hpath = mpath + ".headers[" + std::to_string(k++) + "]";
                match.headers.push_back(parse_header_match(doc, h, hpath));
            }
            rr.matches.push_back(match);
        }
        check_filters(doc, rule, path, rr.filters, rr.matches);
        j = 0;
        for (const YamlNode &b : doc.list(rule, path, "backendRefs")) {
            std::string bpath = path + ".backendRefs[" + std::to_string(j++) + "]";
            rr.backend_refs.push_back(parse_backend_ref(doc, b, bpath));
            if (!doc.list(b, bpath, "filters").empty()) rr.unsupported = "filters on a backendRef are not rendered yet";
        }
        r.rules.push_back(std::move(rr));
    }
    out->http_routes.push_back(std::move(r));
}

}  // namespace g2n
