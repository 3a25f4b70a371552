// Per-kind parsers: every field typed, CRD schema and CEL rules re-checked
// (no API server stands between the manifests and us).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <regex>
#include <set>

#include <arpa/inet.h>

#include <openssl/evp.h>

#include "parse_fields.h"

namespace g2n {

namespace {

const char *const kGatewayGroup = "gateway.networking.k8s.io";

// RFC 1123 subdomain: dot-separated labels of [a-z0-9-], starting and
// ending alphanumeric. Hand-written: std::regex costs more than the YAML.
bool valid_dns1123_subdomain(const std::string &s)
{
    if (s.empty() || s.size() > 253) return false;
    size_t label = 0;
    char prev = '.';
    for (char ch : s) {
        if (ch == '.') {
            if (label == 0 || prev == '-') return false;
            label = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
            label++;
        } else if (ch == '-' && label > 0) {
            label++;
        } else {
            return false;
        }
        prev = ch;
    }
    return label > 0 && prev != '-';
}

// Gateway API PreciseHostname / Hostname (a wildcard only as the first label).
bool valid_hostname(const std::string &s, bool allow_wildcard)
{
    if (s.size() > 2 && s[0] == '*' && s[1] == '.') {
        return allow_wildcard && valid_dns1123_subdomain(s.substr(2));
    }
    return valid_dns1123_subdomain(s);
}

std::string base64_decode(const Document &doc, const YAML::Node &node, const std::string &path,
                          const std::string &text)
{
    std::string clean;
    for (char ch : text) {
        if (ch != '\n' && ch != '\r' && ch != ' ') clean += ch;
    }
    if (clean.size() % 4 != 0) {
        doc.fail(node, path, "not base64");
    }
    std::string out(clean.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(&out[0]),
                            reinterpret_cast<const unsigned char *>(clean.data()),
                            static_cast<int>(clean.size()));
    if (n < 0) {
        doc.fail(node, path, "not base64");
    }
    size_t pad = 0;
    if (!clean.empty() && clean.back() == '=') pad++;
    if (clean.size() > 1 && clean[clean.size() - 2] == '=') pad++;
    out.resize(static_cast<size_t>(n) - pad);
    return out;
}

std::string base64_to_hex(const std::string &b64)
{
    if (b64.empty() || b64.size() % 4 != 0) return "";
    std::string raw(b64.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(&raw[0]),
                            reinterpret_cast<const unsigned char *>(b64.data()), static_cast<int>(b64.size()));
    if (n < 0) return "";
    size_t pad = (b64.back() == '=') + (b64.size() > 1 && b64[b64.size() - 2] == '=');
    raw.resize(static_cast<size_t>(n) - pad);
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char ch : raw) {
        hex += digits[ch >> 4];
        hex += digits[ch & 0xf];
    }
    return hex;
}

// The module's pin forms: sha256-spki: 32 bytes of base64, sha256-cert: 64
// hex digits, colons allowed.
bool valid_pin(const std::string &spec)
{
    if (spec.compare(0, 12, "sha256-spki:") == 0) {
        std::string v = spec.substr(12);
        return v.size() == 44 && v.back() == '=' && base64_to_hex(v).size() == 64;
    }
    std::string hex;
    for (char ch : spec.substr(12)) {
        if (ch == ':') continue;
        if (!std::isxdigit(static_cast<unsigned char>(ch))) return false;
        hex += ch;
    }
    return hex.size() == 64;
}

void parse_gateway_class(const Document &doc, const YAML::Node &root, Manifests *out)
{
    GatewayClass gc;
    gc.meta = doc.meta(root, false);
    YAML::Node spec = doc.child(root, "", "spec");
    gc.controller_name = doc.string(spec, "spec", "controllerName", true);
    out->gateway_classes.push_back(std::move(gc));
}

Listener parse_listener(const Document &doc, const YAML::Node &node, const std::string &path)
{
    Listener l;
    doc.only(node, path, {"name", "hostname", "port", "protocol", "tls", "allowedRoutes"});
    l.name = doc.string(node, path, "name", true);
    if (!valid_dns1123_subdomain(l.name)) {
        doc.fail(node, path + ".name", "not a valid section name: \"" + l.name + "\"");
    }
    l.hostname = doc.string(node, path, "hostname");
    if (!l.hostname.empty() && !valid_hostname(l.hostname, true)) {
        doc.fail(node, path + ".hostname", "not a valid hostname: \"" + l.hostname + "\"");
    }
    l.port = doc.integer(node, path, "port", 1, 65535, true);
    l.protocol = doc.string(node, path, "protocol", true);

    YAML::Node tls = doc.child(node, path, "tls");
    if (tls.IsDefined()) {
        std::string tpath = path + ".tls";
        doc.only(tls, tpath, {"mode", "certificateRefs", "options", "frontendValidation"});
        l.tls_mode = doc.string(tls, tpath, "mode", false, "Terminate");
        if (l.tls_mode != "Terminate" && l.tls_mode != "Passthrough") {
            doc.fail(tls, tpath + ".mode", "expected Terminate or Passthrough");
        }
        int i = 0;
        for (const YAML::Node &ref : doc.list(tls, tpath, "certificateRefs")) {
            std::string rpath = tpath + ".certificateRefs[" + std::to_string(i++) + "]";
            doc.only(ref, rpath, {"group", "kind", "name", "namespace"});
            SecretObjectRef r;
            r.group = doc.string(ref, rpath, "group");
            r.kind = doc.string(ref, rpath, "kind", false, "Secret");
            r.name = doc.string(ref, rpath, "name", true);
            r.namespace_ = doc.string(ref, rpath, "namespace");
            l.certificate_refs.push_back(r);
        }
    }
    // CEL: tls is required for HTTPS and TLS, forbidden for HTTP, TCP, UDP
    if ((l.protocol == "HTTPS" || l.protocol == "TLS") && !tls.IsDefined()) {
        doc.fail(node, path, "tls must be specified for protocols ['HTTPS', 'TLS']");
    }
    if ((l.protocol == "HTTP" || l.protocol == "TCP" || l.protocol == "UDP") && tls.IsDefined()) {
        doc.fail(tls, path + ".tls", "tls mode must not be set for protocols ['HTTP', 'TCP', 'UDP']");
    }
    if (l.protocol == "HTTPS" && l.tls_mode != "Terminate") {
        doc.fail(tls, path + ".tls.mode", "tls mode must be Terminate for protocol HTTPS");
    }
    if ((l.protocol == "TCP" || l.protocol == "UDP") && !l.hostname.empty()) {
        doc.fail(node, path + ".hostname", "hostname must not be specified for protocols ['TCP', 'UDP']");
    }
    if ((l.protocol == "HTTPS" || l.protocol == "TLS") && l.tls_mode == "Terminate"
        && l.certificate_refs.empty() && !doc.child(tls, path + ".tls", "options").IsDefined()) {
        doc.fail(tls, path + ".tls", "certificateRefs or options must be specified when mode is Terminate");
    }

    YAML::Node allowed = doc.child(node, path, "allowedRoutes");
    if (allowed.IsDefined()) {
        std::string apath = path + ".allowedRoutes";
        YAML::Node ns = doc.child(allowed, apath, "namespaces");
        l.allowed_namespaces_from = doc.string(ns, apath + ".namespaces", "from", false, "Same");
        if (l.allowed_namespaces_from != "Same" && l.allowed_namespaces_from != "All"
            && l.allowed_namespaces_from != "Selector") {
            doc.fail(ns, apath + ".namespaces.from", "expected All, Selector or Same");
        }
        int i = 0;
        for (const YAML::Node &kind : doc.list(allowed, apath, "kinds")) {
            l.allowed_kinds.push_back(
                doc.string(kind, apath + ".kinds[" + std::to_string(i++) + "]", "kind", true));
        }
    }
    return l;
}

void parse_gateway(const Document &doc, const YAML::Node &root, Manifests *out)
{
    Gateway gw;
    gw.meta = doc.meta(root);
    YAML::Node spec = doc.child(root, "", "spec");
    gw.gateway_class_name = doc.string(spec, "spec", "gatewayClassName", true);
    YAML::Node backend = doc.child(doc.child(spec, "spec", "tls"), "spec.tls", "backend");
    YAML::Node gate = doc.child(backend, "spec.tls.backend", "validation");
    std::string gate_mode = doc.string(gate, "spec.tls.backend.validation", "mode", false, "AllowStrictOnly");
    if (gate_mode != "AllowStrictOnly" && gate_mode != "AllowInsecureVerification") {
        doc.fail(gate, "spec.tls.backend.validation.mode", "expected AllowStrictOnly or AllowInsecureVerification");
    }
    gw.allows_insecure_backends = gate_mode == "AllowInsecureVerification";

    std::vector<YAML::Node> listeners = doc.list(spec, "spec", "listeners", true);
    if (listeners.empty() || listeners.size() > 64) {
        doc.fail(spec, "spec.listeners", "expected 1 to 64 listeners");
    }
    std::set<std::string> names, combinations;
    for (size_t i = 0; i < listeners.size(); i++) {
        std::string path = "spec.listeners[" + std::to_string(i) + "]";
        Listener l = parse_listener(doc, listeners[i], path);
        if (!names.insert(l.name).second) {
            doc.fail(listeners[i], path + ".name", "Listener name must be unique within the Gateway");
        }
        std::string combination = std::to_string(l.port) + "/" + l.protocol + "/" + l.hostname;
        if (!combinations.insert(combination).second) {
            doc.fail(listeners[i], path, "Combination of port, protocol and hostname must be unique for each listener");
        }
        gw.listeners.push_back(std::move(l));
    }

    int i = 0;
    std::set<std::string> addresses;
    for (const YAML::Node &addr : doc.list(spec, "spec", "addresses")) {
        std::string path = "spec.addresses[" + std::to_string(i++) + "]";
        std::string type = doc.string(addr, path, "type", false, "IPAddress");
        std::string value = doc.string(addr, path, "value", true);
        if (!addresses.insert(type + "/" + value).second) {
            doc.fail(addr, path, type == "IPAddress" ? "IPAddress values must be unique" : "Hostname values must be unique");
        }
        if (type == "IPAddress") {
            gw.addresses.push_back(value);
        }
    }
    out->gateways.push_back(std::move(gw));
}

ParentRef parse_parent_ref(const Document &doc, const YAML::Node &node, const std::string &path)
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
void parse_parent_refs(const Document &doc, const YAML::Node &spec, HTTPRoute *r)
{
    std::vector<YAML::Node> refs = doc.list(spec, "spec", "parentRefs");
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

RouteMatch parse_match(const Document &doc, const YAML::Node &node, const std::string &path)
{
    RouteMatch m;
    doc.only(node, path, {"path", "headers", "queryParams", "method"});
    YAML::Node p = doc.child(node, path, "path");
    if (p.IsDefined()) {
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
            if (m.path.find_first_of("{};\"' \t") != std::string::npos) {
                doc.fail(p, path + ".path.value", "contains a character nginx cannot take in a location");
            }
        }
    }
    int i = 0;
    for (const YAML::Node &h : doc.list(node, path, "headers")) {
        std::string hpath = path + ".headers[" + std::to_string(i++) + "]";
        m.headers.push_back({doc.string(h, hpath, "type", false, "Exact"),
                             doc.string(h, hpath, "name", true), doc.string(h, hpath, "value", true)});
    }
    i = 0;
    for (const YAML::Node &q : doc.list(node, path, "queryParams")) {
        std::string qpath = path + ".queryParams[" + std::to_string(i++) + "]";
        m.query_params.push_back({doc.string(q, qpath, "type", false, "Exact"),
                                  doc.string(q, qpath, "name", true),
                                  doc.string(q, qpath, "value", true)});
    }
    m.method = doc.string(node, path, "method");
    return m;
}

BackendRef parse_backend_ref(const Document &doc, const YAML::Node &node, const std::string &path)
{
    BackendRef b;
    doc.only(node, path, {"group", "kind", "name", "namespace", "port", "weight", "filters"});
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

// A header name nginx can take as a directive argument: an RFC 7230 token.
bool valid_header_name(const std::string &name)
{
    static const std::regex re("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$");
    return !name.empty() && name.size() <= 256 && std::regex_match(name, re);
}

// A value nginx can carry literally: no variable sign, quote, backslash or
// control character.
bool literal_header_value(const std::string &value)
{
    return std::none_of(value.begin(), value.end(), [](char ch) {
        return ch == '$' || ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20;
    });
}

HeaderModifier parse_header_modifier(const Document &doc, const YAML::Node &node,
                                     const std::string &path, std::string *unsupported)
{
    HeaderModifier m;
    doc.only(node, path, {"set", "add", "remove"});
    for (const char *key : {"set", "add"}) {
        int i = 0;
        for (const YAML::Node &h : doc.list(node, path, key)) {
            std::string hpath = path + "." + key + "[" + std::to_string(i++) + "]";
            std::string name = doc.string(h, hpath, "name", true);
            std::string value = doc.string(h, hpath, "value", true);
            if (!valid_header_name(name)) {
                doc.fail(h, hpath + ".name", "not a valid header name: \"" + name + "\"");
            }
            if (!literal_header_value(value)) {
                *unsupported = "header value of " + name + " holds $, a quote, a backslash or a control character";
            }
            (std::string(key) == "set" ? m.set : m.add).emplace_back(name, value);
        }
    }
    int i = 0;
    for (const YAML::Node &h : doc.list(node, path, "remove")) {
        std::string hpath = path + ".remove[" + std::to_string(i++) + "]";
        if (!h.IsScalar() || !valid_header_name(h.Scalar())) {
            doc.fail(h, hpath, "not a valid header name");
        }
        m.remove.push_back(h.Scalar());
    }
    return m;
}

PathModifier parse_path_modifier(const Document &doc, const YAML::Node &node, const std::string &path)
{
    PathModifier p;
    p.type = doc.string(node, path, "type", true);
    bool full = doc.child(node, path, "replaceFullPath").IsDefined();
    bool prefix = doc.child(node, path, "replacePrefixMatch").IsDefined();
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
    if (p.value.empty() || p.value[0] != '/' || !literal_header_value(p.value)
        || p.value.find_first_of(" {};'") != std::string::npos) {
        doc.fail(node, path, "the replacement must be an absolute path nginx can take literally");
    }
    return p;
}

RouteFilter parse_filter(const Document &doc, const YAML::Node &node, const std::string &path,
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
        bool present = doc.child(node, path, field.c_str()).IsDefined();
        if (type == f.type && !present) {
            doc.fail(node, path, "filter." + field + " must be specified for " + type + " filter.type");
        }
        if (type != f.type && present) {
            doc.fail(node, path, "filter." + field + " must be nil if the filter.type is not " + type);
        }
    }
    if (f.type == "RequestHeaderModifier" || f.type == "ResponseHeaderModifier") {
        std::string key = f.type == "RequestHeaderModifier" ? "requestHeaderModifier" : "responseHeaderModifier";
        YAML::Node m = doc.child(node, path, key.c_str());
        if (!m.IsDefined()) doc.fail(node, path + "." + key, "required field is missing");
        f.headers = parse_header_modifier(doc, m, path + "." + key, unsupported);
    } else if (f.type == "RequestRedirect") {
        YAML::Node r = doc.child(node, path, "requestRedirect");
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
        YAML::Node p = doc.child(r, rpath, "path");
        if (p.IsDefined()) f.path = parse_path_modifier(doc, p, rpath + ".path");
    } else if (f.type == "URLRewrite") {
        YAML::Node r = doc.child(node, path, "urlRewrite");
        std::string rpath = path + ".urlRewrite";
        doc.only(r, rpath, {"hostname", "path"});
        f.hostname = doc.string(r, rpath, "hostname");
        if (!f.hostname.empty() && !valid_hostname(f.hostname, false)) {
            doc.fail(r, rpath + ".hostname", "not a valid precise hostname");
        }
        YAML::Node p = doc.child(r, rpath, "path");
        if (p.IsDefined()) f.path = parse_path_modifier(doc, p, rpath + ".path");
    } else {
        *unsupported = "filter type " + f.type + " is not rendered yet";
    }
    return f;
}

// CEL rules of HTTPRoute rules on filters.
void check_rule_filters(const Document &doc, const YAML::Node &rule, const std::string &path,
                        const RouteRule &rr)
{
    std::map<std::string, int> count;
    for (const RouteFilter &f : rr.filters) count[f.type]++;
    if (count["RequestRedirect"] && count["URLRewrite"]) {
        doc.fail(rule, path + ".filters", "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both");
    }
    for (const char *once : {"RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite"}) {
        if (count[once] > 1) {
            doc.fail(rule, path + ".filters", std::string(once) + " filter cannot be repeated");
        }
    }
    for (const RouteFilter &f : rr.filters) {
        if (f.path.type != "ReplacePrefixMatch") continue;
        bool prefix_only = std::all_of(rr.matches.begin(), rr.matches.end(), [](const RouteMatch &m) {
            return m.path_type == PathMatchType::PathPrefix;
        });
        if (!prefix_only) {
            doc.fail(rule, path, "When using URLRewrite or RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified");
        }
    }
}

void parse_http_route(const Document &doc, const YAML::Node &root, Manifests *out)
{
    HTTPRoute r;
    r.meta = doc.meta(root);
    YAML::Node spec = doc.child(root, "", "spec");
    doc.only(spec, "spec", {"parentRefs", "hostnames", "rules"});

    parse_parent_refs(doc, spec, &r);
    int i = 0;
    for (const YAML::Node &h : doc.list(spec, "spec", "hostnames")) {
        std::string path = "spec.hostnames[" + std::to_string(i++) + "]";
        if (!h.IsScalar() || !valid_hostname(h.Scalar(), true)) {
            doc.fail(h, path, "not a valid hostname");
        }
        r.hostnames.push_back(h.Scalar());
    }
    i = 0;
    for (const YAML::Node &rule : doc.list(spec, "spec", "rules")) {
        std::string path = "spec.rules[" + std::to_string(i++) + "]";
        doc.only(rule, path, {"name", "matches", "filters", "backendRefs", "timeouts", "retry", "sessionPersistence"});
        RouteRule rr;
        rr.name = doc.string(rule, path, "name");
        int k = 0;
        for (const YAML::Node &f : doc.list(rule, path, "filters")) {
            std::string fpath = path + ".filters[" + std::to_string(k++) + "]";
            RouteFilter filter = parse_filter(doc, f, fpath, &rr.unsupported);
            rr.filters.push_back(filter);
        }
        int j = 0;
        for (const YAML::Node &m : doc.list(rule, path, "matches")) {
            rr.matches.push_back(parse_match(doc, m, path + ".matches[" + std::to_string(j++) + "]"));
        }
        check_rule_filters(doc, rule, path, rr);
        j = 0;
        for (const YAML::Node &b : doc.list(rule, path, "backendRefs")) {
            std::string bpath = path + ".backendRefs[" + std::to_string(j++) + "]";
            rr.backend_refs.push_back(parse_backend_ref(doc, b, bpath));
            if (!doc.list(b, bpath, "filters").empty()) {
                rr.unsupported = "filters on a backendRef are not rendered yet";
            }
        }
        r.rules.push_back(std::move(rr));
    }
    out->http_routes.push_back(std::move(r));
}

// TLSRoute v1 and the deprecated v1alpha2 (hostnames optional, up to 16
// rules) and v1alpha3: hostnames and backendRefs, routed by SNI.
void parse_tls_route(const Document &doc, const YAML::Node &root, const std::string &api_version,
                     Manifests *out)
{
    const bool v1alpha2 = api_version == "gateway.networking.k8s.io/v1alpha2";
    HTTPRoute r;
    r.kind = "TLSRoute";
    r.api_version = api_version;
    r.meta = doc.meta(root);
    YAML::Node spec = doc.child(root, "", "spec");
    doc.only(spec, "spec", {"parentRefs", "hostnames", "rules", "useDefaultGateways"});
    parse_parent_refs(doc, spec, &r);
    std::vector<YAML::Node> hostnames = doc.list(spec, "spec", "hostnames", !v1alpha2);
    if (!v1alpha2 && hostnames.empty()) {
        doc.fail(spec, "spec.hostnames", "expected at least 1 hostname");
    }
    int i = 0;
    for (const YAML::Node &h : hostnames) {
        std::string path = "spec.hostnames[" + std::to_string(i++) + "]";
        if (!h.IsScalar() || !valid_hostname(h.Scalar(), true)) {
            doc.fail(h, path, "not a valid hostname (RFC 1123, a wildcard only as the first label)");
        }
        unsigned char addr[16];
        if (!v1alpha2 && inet_pton(AF_INET, h.Scalar().c_str(), addr) == 1) {
            doc.fail(h, path, "Hostnames cannot contain an IP");
        }
        r.hostnames.push_back(h.Scalar());
    }
    std::vector<YAML::Node> rules = doc.list(spec, "spec", "rules", true);
    if (rules.empty() || rules.size() > (v1alpha2 ? 16u : 1u)) {
        doc.fail(spec, "spec.rules", v1alpha2 ? "expected 1 to 16 rules" : "expected exactly 1 rule");
    }
    std::set<std::string> names;
    i = 0;
    for (const YAML::Node &rule : rules) {
        std::string path = "spec.rules[" + std::to_string(i++) + "]";
        doc.only(rule, path, {"name", "backendRefs"});
        RouteRule rr;
        rr.name = doc.string(rule, path, "name");
        if (!rr.name.empty() && !names.insert(rr.name).second) {
            doc.fail(rule, path + ".name", "Rule name must be unique within the route");
        }
        std::vector<YAML::Node> refs = doc.list(rule, path, "backendRefs", true);
        if (refs.empty() || refs.size() > 16) {
            doc.fail(rule, path + ".backendRefs", "expected 1 to 16 backendRefs");
        }
        int j = 0;
        for (const YAML::Node &b : refs) {
            rr.backend_refs.push_back(parse_backend_ref(doc, b, path + ".backendRefs[" + std::to_string(j++) + "]"));
        }
        r.rules.push_back(std::move(rr));
    }
    out->tls_routes.push_back(std::move(r));
}

void parse_grpc_route(const Document &doc, const YAML::Node &root, Manifests *out)
{
    static const std::regex service_re("^[A-Za-z_][A-Za-z_0-9]*(\\.[A-Za-z_][A-Za-z_0-9]*)*$");
    static const std::regex method_re("^[A-Za-z_][A-Za-z_0-9]*$");
    HTTPRoute r;
    r.kind = "GRPCRoute";
    r.meta = doc.meta(root);
    YAML::Node spec = doc.child(root, "", "spec");
    doc.only(spec, "spec", {"parentRefs", "hostnames", "rules"});
    parse_parent_refs(doc, spec, &r);
    int i = 0;
    for (const YAML::Node &h : doc.list(spec, "spec", "hostnames")) {
        std::string path = "spec.hostnames[" + std::to_string(i++) + "]";
        if (!h.IsScalar() || !valid_hostname(h.Scalar(), true)) doc.fail(h, path, "not a valid hostname");
        r.hostnames.push_back(h.Scalar());
    }
    i = 0;
    for (const YAML::Node &rule : doc.list(spec, "spec", "rules")) {
        std::string path = "spec.rules[" + std::to_string(i++) + "]";
        doc.only(rule, path, {"name", "matches", "filters", "backendRefs", "sessionPersistence"});
        RouteRule rr;
        rr.name = doc.string(rule, path, "name");
        if (!doc.list(rule, path, "filters").empty()) rr.unsupported = "GRPCRoute filters are not rendered yet";
        int j = 0;
        for (const YAML::Node &m : doc.list(rule, path, "matches")) {
            std::string mpath = path + ".matches[" + std::to_string(j++) + "]";
            doc.only(m, mpath, {"method", "headers"});
            RouteMatch match;
            YAML::Node method = doc.child(m, mpath, "method");
            if (method.IsDefined()) {
                std::string type = doc.string(method, mpath + ".method", "type", false, "Exact");
                std::string service = doc.string(method, mpath + ".method", "service");
                std::string name = doc.string(method, mpath + ".method", "method");
                if (service.empty() && name.empty()) {
                    doc.fail(method, mpath + ".method", "One or both of 'service' or 'method' must be specified");
                }
                if (type != "Exact") {
                    rr.unsupported = "GRPCRoute method match type " + type + " is not rendered yet";
                } else if ((!service.empty() && !std::regex_match(service, service_re))
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
            for (const YAML::Node &h : doc.list(m, mpath, "headers")) {
                std::string hpath = mpath + ".headers[" + std::to_string(k++) + "]";
                match.headers.push_back({doc.string(h, hpath, "type", false, "Exact"),
                                         doc.string(h, hpath, "name", true), doc.string(h, hpath, "value", true)});
            }
            rr.matches.push_back(match);
        }
        j = 0;
        for (const YAML::Node &b : doc.list(rule, path, "backendRefs")) {
            std::string bpath = path + ".backendRefs[" + std::to_string(j++) + "]";
            rr.backend_refs.push_back(parse_backend_ref(doc, b, bpath));
            if (!doc.list(b, bpath, "filters").empty()) rr.unsupported = "filters on a backendRef are not rendered yet";
        }
        r.rules.push_back(std::move(rr));
    }
    out->http_routes.push_back(std::move(r));
}

void parse_service(const Document &doc, const YAML::Node &root, Manifests *out)
{
    Service s;
    s.meta = doc.meta(root);
    YAML::Node spec = doc.child(root, "", "spec");
    s.type = doc.string(spec, "spec", "type", false, "ClusterIP");
    s.external_name = doc.string(spec, "spec", "externalName");
    if (s.type == "ExternalName" && s.external_name.empty()) {
        doc.fail(spec, "spec.externalName", "required for type ExternalName");
    }
    int i = 0;
    for (const YAML::Node &p : doc.list(spec, "spec", "ports")) {
        std::string path = "spec.ports[" + std::to_string(i++) + "]";
        ServicePort sp;
        sp.name = doc.string(p, path, "name");
        sp.port = doc.integer(p, path, "port", 1, 65535, true);
        sp.target_port = doc.string(p, path, "targetPort", false, std::to_string(sp.port));
        sp.app_protocol = doc.string(p, path, "appProtocol");
        s.ports.push_back(sp);
    }
    out->services.push_back(std::move(s));
}

void parse_endpoint_slice(const Document &doc, const YAML::Node &root, Manifests *out)
{
    EndpointSlice e;
    e.meta = doc.meta(root);
    auto it = e.meta.labels.find("kubernetes.io/service-name");
    if (it == e.meta.labels.end()) {
        doc.fail(root, "metadata.labels", "an EndpointSlice needs the label kubernetes.io/service-name");
    }
    e.service_name = it->second;
    int i = 0;
    for (const YAML::Node &p : doc.list(root, "", "ports")) {
        std::string path = "ports[" + std::to_string(i++) + "]";
        e.ports.push_back({doc.string(p, path, "name"), doc.integer(p, path, "port", 1, 65535, true)});
    }
    i = 0;
    for (const YAML::Node &ep : doc.list(root, "", "endpoints")) {
        std::string path = "endpoints[" + std::to_string(i++) + "]";
        YAML::Node conditions = doc.child(ep, path, "conditions");
        std::string ready = doc.string(conditions, path + ".conditions", "ready", false, "true");
        int j = 0;
        for (const YAML::Node &a : doc.list(ep, path, "addresses", true)) {
            std::string apath = path + ".addresses[" + std::to_string(j++) + "]";
            if (!a.IsScalar()) {
                doc.fail(a, apath, "expected an address");
            }
            if (ready != "false") {
                e.ready_addresses.push_back(a.Scalar());
            }
        }
    }
    out->endpoint_slices.push_back(std::move(e));
}

void parse_config_map(const Document &doc, const YAML::Node &root, Manifests *out)
{
    ConfigMap cm;
    cm.meta = doc.meta(root);
    cm.data = doc.string_map(root, "", "data");
    out->config_maps.push_back(std::move(cm));
}

void parse_secret(const Document &doc, const YAML::Node &root, Manifests *out)
{
    Secret s;
    s.meta = doc.meta(root);
    s.type = doc.string(root, "", "type", false, "Opaque");
    YAML::Node data = doc.child(root, "", "data");
    for (const auto &entry : doc.string_map(root, "", "data")) {
        s.data[entry.first] = base64_decode(doc, data[entry.first], "data." + entry.first, entry.second);
    }
    for (const auto &entry : doc.string_map(root, "", "stringData")) {
        s.data[entry.first] = entry.second;
    }
    out->secrets.push_back(std::move(s));
}

void parse_reference_grant(const Document &doc, const YAML::Node &root, Manifests *out)
{
    ReferenceGrant g;
    g.meta = doc.meta(root);
    YAML::Node spec = doc.child(root, "", "spec");
    int i = 0;
    for (const YAML::Node &f : doc.list(spec, "spec", "from", true)) {
        std::string path = "spec.from[" + std::to_string(i++) + "]";
        g.from.push_back({doc.string(f, path, "group", true), doc.string(f, path, "kind", true),
                          doc.string(f, path, "namespace", true)});
    }
    i = 0;
    for (const YAML::Node &t : doc.list(spec, "spec", "to", true)) {
        std::string path = "spec.to[" + std::to_string(i++) + "]";
        g.to.push_back({doc.string(t, path, "group", true), doc.string(t, path, "kind", true),
                        doc.string(t, path, "name")});
    }
    out->reference_grants.push_back(std::move(g));
}

// GEP-4152, both drafts' spellings, with the options under gateway2nginx.io/
// as an alternative. Its validation rules make the policy Accepted=False/
// Invalid (the CRD cannot check fields it does not know). Returns whether
// any GEP-4152 setting is present.
bool parse_gep4152(const Document &doc, const YAML::Node &spec, const YAML::Node &validation,
                   BackendTLSPolicy *p)
{
    static const std::map<std::string, std::string> modes = {
        {"Standard", "strict"}, {"Strict", "strict"}, {"InsecureAllowExpired", "allow_expired"},
        {"InsecureSkipOnlySANVerification", "skip_san"}, {"InsecureSkipSANVerification", "skip_san"},
        {"InsecureSkipVerification", "skip"}};
    std::map<std::string, std::string> options = doc.string_map(spec, "spec", "options");
    bool present = false;

    std::string mode = doc.string(validation, "spec.validation", "mode");
    auto option = options.find("gateway2nginx.io/verification-mode");
    if (option != options.end()) {
        if (!mode.empty() && mode != option->second) {
            p->invalid_reasons.push_back("spec.validation.mode and option gateway2nginx.io/verification-mode disagree");
        }
        mode = option->second;
    }
    if (!mode.empty()) {
        present = true;
        auto it = modes.find(mode);
        if (it == modes.end()) {
            p->invalid_reasons.push_back("spec.validation.mode: unknown mode \"" + mode + "\"");
        } else {
            p->mode = it->second;
        }
    }

    int i = 0;
    for (const YAML::Node &ref : doc.list(validation, "spec.validation", "trustedCertificates")) {
        std::string path = "spec.validation.trustedCertificates[" + std::to_string(i++) + "]";
        p->trusted_certificates.push_back({doc.string(ref, path, "group"), doc.string(ref, path, "kind", true),
                                           doc.string(ref, path, "name", true)});
        present = true;
    }

    auto add_hash = [&](const std::string &where, const std::string &type, const std::string &algorithm,
                        const std::string &value) {
        present = true;
        if (algorithm != "SHA256") {
            p->invalid_reasons.push_back(where + ".algorithm: only SHA256 is supported");
            return;
        }
        std::string spec_text;
        if (type == "SPKI") {
            spec_text = "sha256-spki:" + value;
        } else if (type == "Certificate") {
            bool hex = value.find(':') != std::string::npos || value.size() == 64;
            spec_text = "sha256-cert:" + (hex ? value : base64_to_hex(value));
        } else {
            p->invalid_reasons.push_back(where + ".type: expected SPKI or Certificate");
            return;
        }
        if (!valid_pin(spec_text)) {
            p->invalid_reasons.push_back(where + ".value: not a SHA-256 " + type + " hash");
            return;
        }
        p->pins.push_back(spec_text);
    };
    i = 0;
    for (const YAML::Node &h : doc.list(validation, "spec.validation", "trustedCertificateHashes")) {
        std::string path = "spec.validation.trustedCertificateHashes[" + std::to_string(i++) + "]";
        add_hash(path, doc.string(h, path, "type", true), doc.string(h, path, "algorithm", false, "SHA256"),
                 doc.string(h, path, "value", true));
    }
    option = options.find("gateway2nginx.io/trusted-certificate-hashes");
    if (option != options.end()) {
        // "SPKI:VALUE,Certificate:VALUE"
        std::string list = option->second;
        size_t start = 0;
        while (start <= list.size()) {
            size_t end = list.find(',', start);
            std::string item = list.substr(start, end == std::string::npos ? std::string::npos : end - start);
            size_t colon = item.find(':');
            add_hash("option gateway2nginx.io/trusted-certificate-hashes", item.substr(0, colon), "SHA256",
                     colon == std::string::npos ? "" : item.substr(colon + 1));
            if (end == std::string::npos) break;
            start = end + 1;
        }
    }
    for (const auto &[key, value] : options) {
        if (key.compare(0, 17, "gateway2nginx.io/") == 0 && key != "gateway2nginx.io/verification-mode"
            && key != "gateway2nginx.io/trusted-certificate-hashes") {
            p->invalid_reasons.push_back("unknown option " + key);
        }
    }

    // the drafts' validation rules
    bool any_trust = !p->ca_certificate_refs.empty() || !p->well_known_ca_certificates.empty()
                     || !p->trusted_certificates.empty() || !p->pins.empty();
    if (present && p->mode == "skip" && any_trust) {
        p->invalid_reasons.push_back("spec.validation: InsecureSkipVerification must not name trust "
                                     "(caCertificateRefs, wellKnownCACertificates, trustedCertificates, trustedCertificateHashes)");
    }
    if (present && p->mode != "skip" && !any_trust) {
        p->invalid_reasons.push_back("spec.validation: mode needs caCertificateRefs, wellKnownCACertificates, "
                                     "trustedCertificates or trustedCertificateHashes");
    }
    if ((p->mode == "skip" || p->mode == "skip_san") && doc.child(validation, "spec.validation", "subjectAltNames").IsDefined()) {
        p->invalid_reasons.push_back("spec.validation.subjectAltNames must be empty when mode skips SAN verification");
    }
    return present;
}

void parse_backend_tls_policy(const Document &doc, const YAML::Node &root,
                              const std::string &api_version, Manifests *out)
{
    BackendTLSPolicy p;
    p.meta = doc.meta(root);
    p.api_version = api_version;
    YAML::Node spec = doc.child(root, "", "spec");
    for (const std::string &key : doc.unknown(spec, "spec", {"targetRefs", "validation", "options"})) {
        p.invalid_reasons.push_back("unsupported field spec." + key);
    }

    std::vector<YAML::Node> targets = doc.list(spec, "spec", "targetRefs", true);
    if (targets.empty() || targets.size() > 16) {
        doc.fail(spec, "spec.targetRefs", "expected 1 to 16 targetRefs");
    }
    for (size_t i = 0; i < targets.size(); i++) {
        std::string path = "spec.targetRefs[" + std::to_string(i) + "]";
        PolicyTargetRef t;
        t.group = doc.string(targets[i], path, "group", true);
        t.kind = doc.string(targets[i], path, "kind", true);
        t.name = doc.string(targets[i], path, "name", true);
        t.section_name = doc.string(targets[i], path, "sectionName");
        if (!t.section_name.empty() && !valid_dns1123_subdomain(t.section_name)) {
            doc.fail(targets[i], path + ".sectionName", "not a valid section name");
        }
        for (const PolicyTargetRef &seen : p.target_refs) {
            if (seen.group == t.group && seen.kind == t.kind && seen.name == t.name) {
                if (seen.section_name.empty() != t.section_name.empty()) {
                    doc.fail(targets[i], "spec.targetRefs", "sectionName must be specified when targetRefs includes 2 or more references to the same target");
                }
                if (seen.section_name == t.section_name) {
                    doc.fail(targets[i], "spec.targetRefs", "sectionName must be unique when targetRefs includes 2 or more references to the same target");
                }
            }
        }
        p.target_refs.push_back(t);
    }

    YAML::Node validation = doc.child(spec, "spec", "validation");
    if (!validation.IsDefined()) {
        doc.fail(spec, "spec.validation", "required field is missing");
    }
    for (const std::string &key : doc.unknown(validation, "spec.validation",
                                              {"caCertificateRefs", "wellKnownCACertificates",
                                               "hostname", "subjectAltNames", "mode",
                                               "trustedCertificates", "trustedCertificateHashes"})) {
        p.invalid_reasons.push_back("unsupported field spec.validation." + key);
    }
    int i = 0;
    for (const YAML::Node &ref : doc.list(validation, "spec.validation", "caCertificateRefs")) {
        std::string path = "spec.validation.caCertificateRefs[" + std::to_string(i++) + "]";
        p.ca_certificate_refs.push_back({doc.string(ref, path, "group", true),
                                         doc.string(ref, path, "kind", true),
                                         doc.string(ref, path, "name", true)});
    }
    if (i > 8) {
        doc.fail(validation, "spec.validation.caCertificateRefs", "expected at most 8 references");
    }
    p.well_known_ca_certificates = doc.string(validation, "spec.validation", "wellKnownCACertificates");
    if (!p.ca_certificate_refs.empty() && !p.well_known_ca_certificates.empty()) {
        doc.fail(validation, "spec.validation", "must not contain both CACertificateRefs and WellKnownCACertificates");
    }
    bool gep4152 = parse_gep4152(doc, spec, validation, &p);
    if (!gep4152 && p.ca_certificate_refs.empty() && p.well_known_ca_certificates.empty()) {
        doc.fail(validation, "spec.validation", "must specify either CACertificateRefs or WellKnownCACertificates");
    }
    p.hostname = doc.string(validation, "spec.validation", "hostname", true);
    if (!valid_hostname(p.hostname, false)) {
        doc.fail(validation, "spec.validation.hostname", "not a valid precise hostname: \"" + p.hostname + "\"");
    }

    std::vector<YAML::Node> sans = doc.list(validation, "spec.validation", "subjectAltNames");
    if (sans.size() > 5) {
        doc.fail(validation, "spec.validation.subjectAltNames", "expected at most 5 entries");
    }
    for (size_t j = 0; j < sans.size(); j++) {
        std::string path = "spec.validation.subjectAltNames[" + std::to_string(j) + "]";
        std::string type = doc.string(sans[j], path, "type", true);
        std::string hostname = doc.string(sans[j], path, "hostname");
        std::string uri = doc.string(sans[j], path, "uri");
        if (type != "Hostname" && type != "URI") {
            doc.fail(sans[j], path + ".type", "expected Hostname or URI");
        }
        if (type == "Hostname" && hostname.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must contain Hostname, if Type is set to Hostname");
        }
        if (type != "Hostname" && !hostname.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must not contain Hostname, if Type is not set to Hostname");
        }
        if (type == "URI" && uri.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must contain URI, if Type is set to URI");
        }
        if (type != "URI" && !uri.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must not contain URI, if Type is not set to URI");
        }
        static const std::regex uri_re("^(([^:/?#]+):)(//([^/?#]*))([^?#]*)(\\?([^#]*))?(#(.*))?");
        if (type == "URI" && !std::regex_search(uri, uri_re)) {
            doc.fail(sans[j], path + ".uri", "not a URI with a scheme and an authority");
        }
        if (type == "Hostname" && !valid_hostname(hostname, true)) {
            doc.fail(sans[j], path + ".hostname", "not a valid hostname");
        }
        p.subject_alt_names.push_back({type, type == "URI" ? uri : hostname});
    }
    p.options = doc.string_map(spec, "spec", "options");
    out->backend_tls_policies.push_back(std::move(p));
}

}  // namespace

void parse_object(const Document &doc, const YAML::Node &root, Manifests *out)
{
    std::string api_version = doc.string(root, "", "apiVersion", true);
    std::string kind = doc.string(root, "", "kind", true);
    std::string group = api_version.find('/') == std::string::npos
                            ? std::string()
                            : api_version.substr(0, api_version.find('/'));

    if (group == kGatewayGroup) {
        if (kind == "GatewayClass") return parse_gateway_class(doc, root, out);
        if (kind == "Gateway") return parse_gateway(doc, root, out);
        if (kind == "HTTPRoute") return parse_http_route(doc, root, out);
        if (kind == "GRPCRoute") return parse_grpc_route(doc, root, out);
        if (kind == "TLSRoute") {
            if (api_version != "gateway.networking.k8s.io/v1" && api_version != "gateway.networking.k8s.io/v1alpha2"
                && api_version != "gateway.networking.k8s.io/v1alpha3") {
                doc.fail(root, "apiVersion", "TLSRoute is read as v1, v1alpha2 or v1alpha3, not " + api_version);
            }
            return parse_tls_route(doc, root, api_version, out);
        }
        if (kind == "ReferenceGrant") return parse_reference_grant(doc, root, out);
        if (kind == "BackendTLSPolicy") {
            if (api_version != "gateway.networking.k8s.io/v1"
                && api_version != "gateway.networking.k8s.io/v1alpha3") {
                doc.fail(root, "apiVersion", "BackendTLSPolicy is read as v1 or v1alpha3, not " + api_version);
            }
            return parse_backend_tls_policy(doc, root, api_version, out);
        }
    } else if (api_version == "v1") {
        if (kind == "Service") return parse_service(doc, root, out);
        if (kind == "ConfigMap") return parse_config_map(doc, root, out);
        if (kind == "Secret") return parse_secret(doc, root, out);
    } else if (api_version == "discovery.k8s.io/v1" && kind == "EndpointSlice") {
        return parse_endpoint_slice(doc, root, out);
    }

    ObjectMeta meta = doc.meta(root);
    out->ignored.push_back(kind + " " + meta.key());
}

}  // namespace g2n
