// Route filters (HTTPRoute and GRPCRoute) and the header names and values
// they carry, checked as the CRDs and their CEL rules check them.
#include "parse/routes.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <regex>
#include <set>
#include <arpa/inet.h>
#include "render/nginx_text.h"
#include "parse/fields.h"

namespace g2n {

HeaderModifier parse_header_modifier(const Document &doc, const YamlNode &node,
                                     const std::string &path, std::string *unsupported)
{
    auto refuse_connection_header = [&](const std::string &name) {
        if (gtls::is_connection_header(name)) {
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
            if (!gtls::is_header_name(name)) {
                doc.fail(h, hpath + ".name", "not a valid header name: \"" + name + "\"");
            }
            if (value.size() > 4096) doc.fail(h, hpath + ".value", "must be at most 4096 characters");
            if (!gtls::is_header_value(value)) {
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
        if (!h.is_scalar() || !gtls::is_header_name(h.scalar())) {
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
    const std::string type = doc.string(node, path, "type", true);
    bool full = doc.child(node, path, "replaceFullPath").defined();
    bool prefix = doc.child(node, path, "replacePrefixMatch").defined();
    if (full && type != "ReplaceFullPath") {
        doc.fail(node, path, "type must be 'ReplaceFullPath' when replaceFullPath is set");
    }
    if (prefix && type != "ReplacePrefixMatch") {
        doc.fail(node, path, "type must be 'ReplacePrefixMatch' when replacePrefixMatch is set");
    }
    if (type == "ReplaceFullPath") {
        p.type = PathModifierType::ReplaceFullPath;
        p.value = doc.string(node, path, "replaceFullPath", true);
    } else if (type == "ReplacePrefixMatch") {
        p.type = PathModifierType::ReplacePrefixMatch;
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
    c.allow_headers = parse_cors_list(doc, node, path, "allowHeaders", 64, gtls::is_header_name, "not a valid header name");
    c.expose_headers = parse_cors_list(doc, node, path, "exposeHeaders", 64, gtls::is_header_name, "not a valid header name");
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
    f.type_name = doc.string(node, path, "type", true);
    static const std::map<std::string, FilterType> types = {
        {"RequestHeaderModifier", FilterType::RequestHeaderModifier},
        {"ResponseHeaderModifier", FilterType::ResponseHeaderModifier},
        {"RequestRedirect", FilterType::RequestRedirect},
        {"URLRewrite", FilterType::URLRewrite},
        {"RequestMirror", FilterType::RequestMirror},
        {"CORS", FilterType::CORS},
        {"ExtensionRef", FilterType::ExtensionRef}};
    const auto type = types.find(f.type_name);
    f.type = type != types.end() ? type->second : FilterType::Other;
    // CEL: the field named after the type, and no other
    static const std::map<std::string, std::string> field_of = {
        {"RequestHeaderModifier", "requestHeaderModifier"}, {"ResponseHeaderModifier", "responseHeaderModifier"},
        {"RequestMirror", "requestMirror"}, {"RequestRedirect", "requestRedirect"},
        {"URLRewrite", "urlRewrite"}, {"ExtensionRef", "extensionRef"}, {"CORS", "cors"}};
    for (const auto &[type, field] : field_of) {
        bool present = doc.child(node, path, field.c_str()).defined();
        if (type == f.type_name && !present) {
            doc.fail(node, path, "filter." + field + " must be specified for " + type + " filter.type");
        }
        if (type != f.type_name && present) {
            doc.fail(node, path, "filter." + field + " must be nil if the filter.type is not " + type);
        }
    }
    if (f.type == FilterType::RequestHeaderModifier || f.type == FilterType::ResponseHeaderModifier) {
        const std::string key =
            f.type == FilterType::RequestHeaderModifier ? "requestHeaderModifier" : "responseHeaderModifier";
        YamlNode m = doc.child(node, path, key.c_str());
        if (!m.defined()) doc.fail(node, path + "." + key, "required field is missing");
        f.headers = parse_header_modifier(doc, m, path + "." + key, unsupported);
        for (const std::string &name : f.headers.names()) {
            if (f.type == FilterType::RequestHeaderModifier && gtls::is_gateway_request_header(name)) {
                // the gateway's loop marker: a route that could drop it could loop
                *unsupported = "header " + name + " names the proxies a request passed: the gateway sets it";
            }
        }
    } else if (f.type == FilterType::RequestRedirect) {
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
    } else if (f.type == FilterType::URLRewrite) {
        YamlNode r = doc.child(node, path, "urlRewrite");
        std::string rpath = path + ".urlRewrite";
        doc.only(r, rpath, {"hostname", "path"});
        f.hostname = doc.string(r, rpath, "hostname");
        if (!f.hostname.empty() && !valid_hostname(f.hostname, false)) {
            doc.fail(r, rpath + ".hostname", "not a valid precise hostname");
        }
        YamlNode p = doc.child(r, rpath, "path");
        if (p.defined()) f.path = parse_path_modifier(doc, p, rpath + ".path");
    } else if (f.type == FilterType::RequestMirror) {
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
    } else if (f.type == FilterType::CORS) {
        f.cors = parse_cors(doc, doc.child(node, path, "cors"), path + ".cors", unsupported);
    } else {
        *unsupported = "filter type " + f.type_name + " is not rendered yet";
    }
    return f;
}

// CEL rules of HTTPRoute filters (a rule's, or a backendRef's at NODE,
// PATH), with the rule's MATCHES.
void check_filters(const Document &doc, const YamlNode &node, const std::string &path,
                   const std::vector<RouteFilter> &filters, const std::vector<RouteMatch> &matches)
{
    std::map<std::string, int> count;
    for (const RouteFilter &f : filters) count[f.type_name]++;
    if (count["RequestRedirect"] && count["URLRewrite"]) {
        doc.fail(node, path + ".filters", "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both");
    }
    for (const char *once : {"RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite"}) {
        if (count[once] > 1) {
            doc.fail(node, path + ".filters", std::string(once) + " filter cannot be repeated");
        }
    }
    for (const RouteFilter &f : filters) {
        if (f.path.type != PathModifierType::ReplacePrefixMatch) continue;
        bool prefix_only = std::all_of(matches.begin(), matches.end(), [](const RouteMatch &m) {
            return m.path_type == PathMatchType::PathPrefix;
        });
        if (!prefix_only) {
            doc.fail(node, path, "When using URLRewrite or RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified");
        }
    }
}

}  // namespace g2n
