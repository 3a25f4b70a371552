// Route parsers: HTTPRoute, GRPCRoute (read into the HTTPRoute shape) and
// TLSRoute, with their parentRefs, matches, filters and backendRefs; the CRD
// schema and CEL rules re-checked.
#include "parse/routes.h"
#include "parse/kinds.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <regex>
#include <set>

#include <arpa/inet.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "render/nginx_text.h"
#include "parse/fields.h"

namespace g2n {

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
void parse_parent_refs(const Document &doc, const YamlNode &spec, Route *r)
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
    HeaderMatch h;
    h.type_name = doc.string(node, path, "type", false, "Exact");
    h.type = h.type_name == "Exact"               ? HeaderMatchType::Exact
             : h.type_name == "RegularExpression" ? HeaderMatchType::RegularExpression
                                                  : HeaderMatchType::Other;
    h.name = doc.string(node, path, "name", true);
    h.value = doc.string(node, path, "value", true);
    if (!gtls::is_header_name(h.name)) doc.fail(node, path + ".name", "not a valid header or parameter name");
    if (h.value.size() > 4096) doc.fail(node, path + ".value", "must be at most 4096 characters");
    if (h.type == HeaderMatchType::RegularExpression) {
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
                             bool weighted)
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

const char *const kVariableSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

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

// What every route kind starts with: metadata, the spec's known fields,
// parentRefs and hostnames (TLSRoute v1/v1alpha3: at least one, no IP).
Route parse_route_head(const Document &doc, const YamlNode &root, RouteKind kind,
                           std::initializer_list<const char *> spec_fields, bool hostnames_required = false,
                           bool ip_forbidden = false)
{
    Route r;
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

void parse_http_route(const Document &doc, const YamlNode &root, Manifests *out)
{
    Route r = parse_route_head(doc, root, RouteKind::HTTPRoute, {"parentRefs", "hostnames", "rules"});
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
                if (!gtls::is_retryable_status(static_cast<unsigned>(rr.retry_codes.back()))) {
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
// rules) and v1alpha3: hostnames and backendRefs, routed by SNI. TCPRoute
// and UDPRoute v1 and v1alpha2 (up to 16 rules): backendRefs alone, a
// listener's every connection or datagram.
void parse_stream_route(const Document &doc, const YamlNode &root, RouteKind kind, Manifests *out)
{
    const std::string api_version = doc.string(root, "", "apiVersion", true);
    const bool v1alpha2 = api_version == "gateway.networking.k8s.io/v1alpha2";
    const bool tls = kind == RouteKind::TLSRoute;
    Route r = tls ? parse_route_head(doc, root, kind, {"parentRefs", "hostnames", "rules", "useDefaultGateways"},
                                         !v1alpha2, !v1alpha2)
                      : parse_route_head(doc, root, kind, {"parentRefs", "rules"});
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
    out->stream_routes.push_back(std::move(r));
}

void parse_tls_route(const Document &doc, const YamlNode &root, Manifests *out)
{
    parse_stream_route(doc, root, RouteKind::TLSRoute, out);
}

void parse_tcp_route(const Document &doc, const YamlNode &root, Manifests *out)
{
    parse_stream_route(doc, root, RouteKind::TCPRoute, out);
}

void parse_udp_route(const Document &doc, const YamlNode &root, Manifests *out)
{
    parse_stream_route(doc, root, RouteKind::UDPRoute, out);
}

// ngx_http_grpc_module's headers hash: bucket_size ngx_align(64, ngx_cacheline_size)
constexpr size_t kGrpcHeadersHashBucketSize = 64;

void parse_grpc_route(const Document &doc, const YamlNode &root, Manifests *out)
{
    static const std::regex service_re("^[A-Za-z_][A-Za-z_0-9]*(\\.[A-Za-z_][A-Za-z_0-9]*)*$");
    static const std::regex method_re("^[A-Za-z_][A-Za-z_0-9]*$");
    Route r = parse_route_head(doc, root, RouteKind::GRPCRoute, {"parentRefs", "hostnames", "rules"});
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
            static const std::set<FilterType> grpc_types = {FilterType::RequestHeaderModifier,
                                                            FilterType::ResponseHeaderModifier,
                                                            FilterType::RequestMirror, FilterType::ExtensionRef};
            if (grpc_types.count(filter.type) == 0) {
                doc.fail(f, fpath + ".type",
                         "expected RequestHeaderModifier, ResponseHeaderModifier, RequestMirror or ExtensionRef");
            }
            if (filter.type == FilterType::RequestMirror) rr.unsupported = "filter type RequestMirror is not rendered yet";
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
