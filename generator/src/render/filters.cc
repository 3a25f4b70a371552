// Route filters in a location: request and response headers, path
// rewrites, redirects, CORS, WebSocket upgrades, timeouts, retries and
// mirrors.
#include "render/locations.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>

namespace g2n {

// One directive of each module the location goes out by (proxy_X, grpc_X).
std::vector<nginx::Word> per_module(const PassModules &m, const nginx::Word &proxy, const nginx::Word &grpc)
{
    std::vector<nginx::Word> out;
    if (m.proxy) out.push_back(proxy);
    if (m.grpc) out.push_back(grpc);
    return out;
}

const RouteFilter *filter_of(const Location &l, FilterType type)
{
    for (const RouteFilter &f : l.filters) {
        if (f.type == type) return &f;
    }
    return nullptr;
}

// rewrite directives for ReplaceFullPath / ReplacePrefixMatch (Gateway API
// prefixes match whole path elements); `last`: "break", or none
void render_path_rewrite(nginx::Writer &w, const Location &l, const PathModifier &p, bool break_flag)
{
    auto rewrite = [&](const std::string &regex, const nginx::Script &replacement) {
        if (break_flag) {
            w.directive("rewrite", {nginx::Token::value(regex), replacement, "break"});
        } else {
            w.directive("rewrite", {nginx::Token::value(regex), replacement});
        }
    };
    if (p.type == PathModifierType::ReplaceFullPath) {
        rewrite("^", nginx::Script().input(p.value));
        return;
    }
    std::string base = p.value;
    while (!base.empty() && base.back() == '/') base.pop_back();
    // (?s): the rest of the path is whatever it holds, a decoded line break too
    if (l.path_prefix == "/") {
        rewrite("(?s)^/(.*)$", nginx::Script().input(base).word("/$1"));
        return;
    }
    std::string prefix = nginx::regex_quote(l.path_prefix);
    rewrite("^" + prefix + "$", nginx::Script().input(p.value));
    rewrite("(?s)^" + prefix + "(/.*)$", nginx::Script().input(base).word("$1"));
}

// $http_NAME for a header name (the name was checked to be variable-safe)
nginx::Name header_variable(const std::string &header)
{
    std::string var = "http_";
    for (char ch : header) var += ch == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return nginx::Name(var);
}

// The client's value of HEADER with VALUE appended, or VALUE alone when
// there is none: a shared map's variable.
nginx::Name appended_header(Splits &shared, const std::string &header, const std::string &value)
{
    nginx::Name var = header_variable(header);
    nginx::Fragment body = nginx::Writer::capture(1, [&](nginx::Writer &m) {
        m.entry(nginx::Token::map_key(""), {nginx::Script().input(value)});
        m.directive("default", {nginx::Script().variable(var).word(",").input(value)});
    });
    return shared.variable("header_add", "map", nginx::Token::variable(var), body);
}

void render_header_modifier(nginx::Writer &w, Splits &shared, const nginx::Word &set_header,
                            const HeaderModifier &headers)
{
    for (const auto &[name, value] : headers.set) {
        w.directive(set_header, {nginx::Token::value(name), nginx::Script().input(value)});
    }
    for (const auto &[name, value] : headers.add) {
        w.directive(set_header, {nginx::Token::value(name), nginx::Token::variable(appended_header(shared, name, value))});
    }
    for (const std::string &name : headers.remove) {
        w.directive(set_header, {nginx::Token::value(name), nginx::Token::value("")});
    }
}

bool same_header(const std::string &a, const std::string &b)
{
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
    });
}

// Request headers set per backend (backendRef RequestHeaderModifier of a
// rule with several backends): per header name, a map over the split's
// choice gives each backend's value; the backends that leave the header
// alone pass on the client's.
void render_per_backend_headers(nginx::Writer &w, Splits &shared, const nginx::Word &set_header,
                                const Location &l, const nginx::Name &split)
{
    std::vector<std::string> names;
    for (const WeightedUpstream &b : l.backends) {
        for (const std::string &n : b.request_headers.names()) {
            if (std::none_of(names.begin(), names.end(), [&](const std::string &x) { return same_header(x, n); })) {
                names.push_back(n);
            }
        }
    }
    for (const std::string &name : names) {
        nginx::Fragment body = nginx::Writer::capture(1, [&](nginx::Writer &m) {
            for (const WeightedUpstream &b : l.backends) {
                if (b.upstream.empty()) continue;
                const HeaderModifier &h = b.request_headers;
                std::optional<nginx::Token> value;
                for (const auto &[n, v] : h.set) {
                    if (same_header(n, name)) value = nginx::Token(nginx::Script().input(v));
                }
                for (const auto &[n, v] : h.add) {
                    if (same_header(n, name)) value = nginx::Token::variable(appended_header(shared, name, v));
                }
                for (const std::string &n : h.remove) {
                    if (same_header(n, name)) value = nginx::Token::value("");
                }
                // a regex, not a key: map_hash_bucket_size would limit the URL's length
                if (value) m.entry(nginx::Token::map_regex("^" + nginx::regex_quote(nginx::Token(scheme(b)).text()) + "$"), {*value});
            }
            m.directive("default", {nginx::Token::variable(header_variable(name))});
        });
        nginx::Name var = shared.variable("backend_header", "map", nginx::Token::variable(split), body);
        w.directive(set_header, {nginx::Token::value(name), nginx::Token::variable(var)});
    }
}

// WebSocket (GEP-1911 kubernetes.io/ws): the client's Upgrade reaches the
// backends that speak WebSocket, and only an Upgrade to WebSocket (one to
// h2c or anything else would let a client tunnel past the routing);
// Connection says "upgrade" then, and "close", nginx's own, otherwise.
// Where the location's backends differ, a map over the backend chosen.
// The name of the Upgrade variable, or none when no backend speaks it.
std::optional<nginx::Name> websocket_upgrade(Splits &shared, const Location &l)
{
    if (l.grpc || l.return_code != 0) return std::nullopt;
    std::vector<const WeightedUpstream *> reachable;
    for (const WeightedUpstream &b : l.backends) reachable.push_back(&b);
    for (const ConditionalTarget &t : l.conditional) {
        for (const WeightedUpstream &b : t.backends) reachable.push_back(&b);
    }
    size_t websocket = 0, valid = 0;
    for (const WeightedUpstream *b : reachable) {
        if (b->upstream.empty()) continue;
        valid++;
        websocket += b->websocket;
    }
    if (websocket == 0) return std::nullopt;
    nginx::Fragment only_websocket = nginx::Writer::capture(1, [](nginx::Writer &m) {
        m.entry(nginx::Token::map_regex("^[Ww][Ee][Bb][Ss][Oo][Cc][Kk][Ee][Tt]$"), {"websocket"});
        m.directive("default", {nginx::Token::value("")});
    });
    nginx::Name upgrade = shared.variable("websocket", "map", "$http_upgrade", only_websocket);
    if (websocket < valid) {
        bool failed = false;
        nginx::Name chosen = !l.conditional.empty() ? conditional_target(shared, l)
                                                    : backend_split(shared, l.backends, &failed);
        nginx::Fragment per_backend = nginx::Writer::capture(1, [&](nginx::Writer &m) {
            std::set<std::string> keys;
            for (const WeightedUpstream *b : reachable) {
                if (b->upstream.empty() || !b->websocket) continue;
                std::string key = "^" + nginx::regex_quote(nginx::Token(scheme(*b)).text()) + "$";
                if (keys.insert(key).second) m.entry(nginx::Token::map_regex(key), {nginx::Token::variable(upgrade)});
            }
            m.directive("default", {nginx::Token::value("")});
        });
        upgrade = shared.variable("backend_websocket", "map", nginx::Token::variable(chosen), per_backend);
    }
    return upgrade;
}

void render_websocket_upgrade(nginx::Writer &w, Splits &shared, const nginx::Name &upgrade)
{
    nginx::Fragment connection = nginx::Writer::capture(1, [](nginx::Writer &m) {
        m.entry(nginx::Token::map_key("websocket"), {"upgrade"});
        m.directive("default", {"close"});
    });
    w.directive("proxy_set_header", {"Upgrade", nginx::Token::variable(upgrade)});
    w.directive("proxy_set_header",
                {"Connection", nginx::Token::variable(shared.variable("connection", "map", nginx::Token::variable(upgrade),
                                                                      connection))});
}

void render_request_headers(nginx::Writer &w, Splits &shared, const Location &l, const PassModules &modules)
{
    const RouteFilter *headers = filter_of(l, FilterType::RequestHeaderModifier);
    const RouteFilter *rewrite = filter_of(l, FilterType::URLRewrite);
    const bool per_backend = std::any_of(l.backends.begin(), l.backends.end(),
                                         [](const WeightedUpstream &b) { return !b.request_headers.empty(); });
    const std::optional<nginx::Name> upgrade = websocket_upgrade(shared, l);
    // an HTTPRoute's h2c backend sees the client's Host as its :authority
    const bool h2c = modules.grpc && !l.grpc;
    if (headers == nullptr && !per_backend && (rewrite == nullptr || rewrite->hostname.empty()) && !upgrade && !h2c) {
        return;
    }
    // gRPC (GRPCRoute) has no URLRewrite and inherits no grpc_set_header
    const std::vector<nginx::Word> set_headers = per_module(modules, "proxy_set_header", "grpc_set_header");
    // a header the route's filters name is theirs: nginx would send a
    // second one beside the generator's (two Hosts: the backend's 400)
    std::vector<std::string> named = headers ? headers->headers.names() : std::vector<std::string>{};
    if (l.conditional.empty()) {
        for (const WeightedUpstream &b : l.backends) {
            for (const std::string &n : b.request_headers.names()) named.push_back(n);
        }
    }
    auto filters_name = [&](const char *header) {
        return std::any_of(named.begin(), named.end(), [&](const std::string &n) { return same_header(n, header); });
    };
    // a location's proxy_set_header replaces every inherited one: Host again
    if (!filters_name("Host") && !l.grpc) {
        for (const nginx::Word &set_header : set_headers) {
            if (rewrite && !rewrite->hostname.empty()) {
                w.directive(set_header, {"Host", nginx::Script().input(rewrite->hostname)});
            } else {
                w.directive(set_header, {"Host", "$http_host"});
            }
        }
    }
    // and Via, which route filters may not name
    for (const nginx::Word &set_header : set_headers) w.directive(set_header, {"Via", nginx::Token::variable(kVia)});
    if (upgrade) render_websocket_upgrade(w, shared, *upgrade);
    for (const nginx::Word &set_header : set_headers) {
        if (headers != nullptr) render_header_modifier(w, shared, set_header, headers->headers);
        if (!per_backend || !l.conditional.empty() || l.return_code != 0) continue;
        if (l.backends.size() > 1) {
            bool failed = false;  // the location answers those 500 itself
            render_per_backend_headers(w, shared, set_header, l, backend_split(shared, l.backends, &failed));
        } else {
            render_header_modifier(w, shared, set_header, l.backends.front().request_headers);
        }
    }
}

void render_response_headers(nginx::Writer &w, const Location &l, const PassModules &modules)
{
    const RouteFilter *headers = filter_of(l, FilterType::ResponseHeaderModifier);
    if (headers == nullptr) return;
    const std::vector<nginx::Word> hide_headers = per_module(modules, "proxy_hide_header", "grpc_hide_header");
    for (const std::string &name : headers->headers.remove) {
        for (const nginx::Word &hide_header : hide_headers) w.directive(hide_header, {nginx::Token::value(name)});
    }
    for (const auto &[name, value] : headers->headers.set) {
        for (const nginx::Word &hide_header : hide_headers) w.directive(hide_header, {nginx::Token::value(name)});
        w.directive("add_header", {nginx::Token::value(name), nginx::Script().input(value), "always"});
    }
    for (const auto &[name, value] : headers->headers.add) {
        w.directive("add_header", {nginx::Token::value(name), nginx::Script().input(value), "always"});
    }
}

// The PCRE an allowed origin (parse checked its form) matches an Origin
// header with: scheme and host in any case, the scheme's own port written
// or not, "*." any number of labels, "*" alone any http(s) origin.
std::string cors_origin_regex(const std::string &allowed)
{
    const std::string label = "[A-Za-z0-9-]+";
    const std::string any_host = "(" + label + "\\.)*" + label;
    if (allowed == "*") return "(?i)^https?://" + any_host + "(:[0-9]{1,5})?$";
    const size_t sep = allowed.find("://");
    const std::string scheme = allowed.substr(0, sep);
    std::string host = allowed.substr(sep + 3), port;
    if (size_t colon = host.find(':'); colon != std::string::npos) {
        port = std::to_string(std::stol(host.substr(colon + 1)));
        host.erase(colon);
    }
    const std::string own_port = scheme == "https" ? "443" : "80";
    const std::string host_regex = host == "*" ? any_host
                                   : host.rfind("*.", 0) == 0 ? "(" + label + "\\.)+" + nginx::regex_quote(host.substr(2))
                                                              : nginx::regex_quote(host);
    const std::string port_regex = port.empty() || port == own_port ? "(:" + own_port + ")?" : ":" + port;
    return "(?i)^" + scheme + "://" + host_regex + port_regex + "$";
}

// A value that is VALUE where the request's Origin is allowed (ORIGIN,
// the echo of it, not empty) and empty elsewhere: add_header leaves an
// empty header out.
nginx::Name cors_gated(Splits &shared, const nginx::Name &origin, const nginx::Token &value)
{
    nginx::Fragment body = nginx::Writer::capture(1, [&](nginx::Writer &m) {
        m.entry(nginx::Token::map_key(""), {nginx::Token::value("")});
        m.directive("default", {value});
    });
    return shared.variable("cors_allowed", "map", nginx::Token::variable(origin), body);
}

std::string comma_list(const std::vector<std::string> &items)
{
    std::string out;
    for (const std::string &item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
}

// The CORS filter (HTTPRoute, Extended). A preflight (OPTIONS with Origin
// and Access-Control-Request-Method) is answered here: 200 with the
// policy where the Origin is allowed, 403 where not; other requests go
// on, their answers carrying the Origin back where it is allowed. The
// allowed Origin is always echoed, never "*", and the requested method or
// headers where the policy allows any: the answers then hold for requests
// with credentials too. The backend's own Access-Control-* headers give
// way to the filter's.
void render_cors(nginx::Writer &w, Splits &shared, const Location &l, const PassModules &modules)
{
    const RouteFilter *filter = filter_of(l, FilterType::CORS);
    if (filter == nullptr) return;
    const CorsPolicy &c = filter->cors;
    const nginx::Name http_origin("http_origin");
    auto origin_map = [&](const nginx::Token &allowed, const nginx::Token *denied) {
        return nginx::Writer::capture(1, [&](nginx::Writer &m) {
            if (denied) m.entry(nginx::Token::map_key(""), {nginx::Token::value("")});
            for (const std::string &o : c.allow_origins) m.entry(nginx::Token::map_regex(cors_origin_regex(o)), {allowed});
            m.directive("default", {denied ? *denied : nginx::Token::value("")});
        });
    };
    // the Origin of a preflight, else ""
    nginx::Name requested = shared.variable("cors_requested", "map", "$http_access_control_request_method",
                                            nginx::Writer::capture(1, [&](nginx::Writer &m) {
                                                m.entry(nginx::Token::map_key(""), {nginx::Token::value("")});
                                                m.directive("default", {nginx::Token::variable(http_origin)});
                                            }));
    nginx::Name preflight_origin = shared.variable("cors_preflight_origin", "map", "$request_method",
                                                   nginx::Writer::capture(1, [&](nginx::Writer &m) {
                                                       m.entry("OPTIONS", {nginx::Token::variable(requested)});
                                                       m.directive("default", {nginx::Token::value("")});
                                                   }));
    const nginx::Token denied("denied");
    nginx::Name preflight = shared.variable("cors_preflight", "map", nginx::Token::variable(preflight_origin),
                                            origin_map("allowed", &denied));
    nginx::Name origin = shared.variable("cors_origin", "map", nginx::Token::variable(http_origin),
                                         origin_map(nginx::Token::variable(http_origin), nullptr));
    const bool any_method = c.allow_methods.size() == 1 && c.allow_methods[0] == "*";
    const bool any_header = c.allow_headers.size() == 1 && c.allow_headers[0] == "*";
    const bool expose_any = c.expose_headers.size() == 1 && c.expose_headers[0] == "*";
    auto common = [&](const nginx::Token &allow_origin, const std::function<nginx::Token(const nginx::Token &)> &gate) {
        w.directive("add_header", {"Access-Control-Allow-Origin", allow_origin, "always"});
        if (c.allow_credentials) w.directive("add_header", {"Access-Control-Allow-Credentials", gate("true"), "always"});
        // "*" cannot expose headers to a request with credentials
        if (!c.expose_headers.empty() && !(expose_any && c.allow_credentials)) {
            w.directive("add_header", {"Access-Control-Expose-Headers", gate(nginx::Script().input(comma_list(c.expose_headers))),
                                       "always"});
        }
        w.directive("add_header", {"Vary", "Origin", "always"});
    };
    w.open_if_equals(preflight, denied);
    w.directive("return", {nginx::Token::number(403)});
    w.close();
    w.open_if_equals(preflight, "allowed");
    common(nginx::Token::variable(http_origin), [](const nginx::Token &t) { return t; });
    if (any_method) {
        w.directive("add_header", {"Access-Control-Allow-Methods", "$http_access_control_request_method", "always"});
    } else if (!c.allow_methods.empty()) {
        w.directive("add_header", {"Access-Control-Allow-Methods", nginx::Script().input(comma_list(c.allow_methods)), "always"});
    }
    if (any_header) {
        w.directive("add_header", {"Access-Control-Allow-Headers", "$http_access_control_request_headers", "always"});
    } else if (!c.allow_headers.empty()) {
        w.directive("add_header", {"Access-Control-Allow-Headers", nginx::Script().input(comma_list(c.allow_headers)), "always"});
    }
    w.directive("add_header", {"Access-Control-Max-Age", nginx::Token::number(c.max_age), "always"});
    w.directive("return", {nginx::Token::number(200)});
    w.close();
    for (nginx::Word header : {nginx::Word("Access-Control-Allow-Origin"), nginx::Word("Access-Control-Allow-Credentials"),
                               nginx::Word("Access-Control-Allow-Methods"), nginx::Word("Access-Control-Allow-Headers"),
                               nginx::Word("Access-Control-Expose-Headers"), nginx::Word("Access-Control-Max-Age")}) {
        for (const nginx::Word &hide_header : per_module(modules, "proxy_hide_header", "grpc_hide_header")) {
            w.directive(hide_header, {header});
        }
    }
    common(nginx::Token::variable(origin), [&](const nginx::Token &t) { return nginx::Token::variable(cors_gated(shared, origin, t)); });
}

// Gateway API's redirect port: the filter's, else the scheme's well-known
// port when the filter names a scheme, else the listener's; left out of
// Location where it is the scheme's own (http 80, https 443). 0: none.
int redirect_port(const RouteFilter &r, const Server &s)
{
    const std::string scheme = !r.scheme.empty() ? r.scheme : s.ssl ? "https" : "http";
    const int port = r.port != 0 ? r.port : !r.scheme.empty() ? 0 : s.listener_port;
    return (scheme == "http" && port == 80) || (scheme == "https" && port == 443) ? 0 : port;
}

void render_redirect(nginx::Writer &w, const Server &s, const Location &l, const RouteFilter &r)
{
    nginx::Script target;
    if (r.scheme.empty()) {
        target.word("$scheme");
    } else {
        target.input(r.scheme);
    }
    target.word("://");
    if (r.hostname.empty() && r.port == 0 && r.scheme.empty()) {
        target.word("$http_host");  // as the client named the listener, port included
    } else {
        if (r.hostname.empty()) {
            target.word("$host");
        } else {
            target.input(r.hostname);
        }
        if (int port = redirect_port(r, s)) target.word(":").number(port);
    }
    if (r.path.type == PathModifierType::None) {
        target.word("$request_uri");
    } else {
        // $uri is decoded: written as it is, a "%0D%0A" in the path would
        // end Location and start a field of the client's choosing
        render_path_rewrite(w, l, r.path, false);
        target.word("$gateway_tls_redirect_path");
    }
    w.directive("return", {nginx::Token::number(r.status_code), target});
}

// nginx time in milliseconds, in seconds where it is whole seconds
std::string nginx_time(long long ms)
{
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

// HTTPRoute timeouts (GEP-1742). nginx bounds each wait of a backend
// exchange (connect, each write, each read), not the exchange as a whole:
// the backend timeout, else the request timeout, bounds each; the request
// timeout also bounds the tries of further backends, and the module's
// gateway_tls_request_timeout the whole answer. 0 (disabled): a day.
void render_timeouts(nginx::Writer &w, const Location &l, const PassModules &modules)
{
    const long long each = l.backend_timeout_ms >= 0 ? l.backend_timeout_ms : l.request_timeout_ms;
    if (each < 0) return;
    const std::string value = nginx_time(each == 0 ? 86400000 : each);
    for (const auto &[proxy, grpc] : {std::pair<nginx::Word, nginx::Word>{"proxy_connect_timeout", "grpc_connect_timeout"},
                                      {"proxy_send_timeout", "grpc_send_timeout"},
                                      {"proxy_read_timeout", "grpc_read_timeout"}}) {
        for (const nginx::Word &directive : per_module(modules, proxy, grpc)) {
            w.directive(directive, {nginx::Token::value(value)});
        }
    }
    if (l.request_timeout_ms > 0) {
        for (const nginx::Word &directive : per_module(modules, "proxy_next_upstream_timeout", "grpc_next_upstream_timeout")) {
            w.directive(directive, {nginx::Token::value(nginx_time(l.request_timeout_ms))});
        }
        // the whole of it, every try included: unanswered by then, a 504
        w.directive("gateway_tls_request_timeout", {nginx::Token::value(nginx_time(l.request_timeout_ms))});
    }
}

// The named location that answers a request whose every try failed.
const char kRetriesExhausted[] = "@gateway2nginx_retries_exhausted";

// HTTPRoute retry (GEP-1731): connection errors and the rule's codes send
// the request to the next peer (its upstream lists enough of them), up to
// the rule's tries. nginx retries no request that is not idempotent once
// sent (a POST's body may have reached the backend).
void render_retry(nginx::Writer &w, const Location &l, const PassModules &modules)
{
    if (l.retry_tries <= 1) return;
    std::vector<nginx::Token> cases{"error", "timeout"};
    for (int code : l.retry_codes) cases.push_back(nginx::Token::value("http_" + std::to_string(code)));
    for (const nginx::Word &directive : per_module(modules, "proxy_next_upstream", "grpc_next_upstream")) {
        w.directive(directive, cases);
    }
    for (const nginx::Word &directive : per_module(modules, "proxy_next_upstream_tries", "grpc_next_upstream_tries")) {
        w.directive(directive, {nginx::Token::number(l.retry_tries)});
    }
    // every try failed to connect or was cut off: no backend is available
    // (503, as GEP-1731 expects), not nginx's 502; a backend's own 502
    // passes, errors are not intercepted
    w.directive("error_page", {"502", "=503", kRetriesExhausted});
}

void render_retries_exhausted(nginx::Writer &w, const Server &s)
{
    if (std::none_of(s.locations.begin(), s.locations.end(), [](const Location &l) { return l.retry_tries > 1; })) return;
    w.open("location", {kRetriesExhausted});
    w.directive("return", {"503"});
    w.close();
}

// The URI of a server's Nth mirror location: '|' is outside what an
// HTTPRoute path may hold, so no route's location can be it (a request's
// %7C reaches it decoded, and `internal` answers 404).
std::string mirror_uri(size_t n)
{
    return "/gateway2nginx|mirror|" + std::to_string(n);
}

// The locations a server's mirror subrequests go to: each forwards the
// original request line to its backend; a share below all is exactly that
// share of the location's requests (the module's gateway_tls_share, a
// counter of its own), the rest answered 204 at once.
void render_mirror_locations(nginx::Writer &w, Splits &splits, const Server &s, const std::vector<const Mirror *> &mirrors)
{
    for (size_t i = 0; i < mirrors.size(); i++) {
        const Mirror &m = *mirrors[i];
        w.open("location", {"=", nginx::Token::value(mirror_uri(i + 1))});
        w.directive("internal");
        if (m.numerator < m.denominator) {
            nginx::Name share = splits.share("mirror_share", s.listen + " " + s.server_name + " " + mirror_uri(i + 1), m.numerator, m.denominator);
            w.open_if_equals(share, nginx::Token::value(""));
            w.directive("return", {"204"});
            w.close();
        }
        w.directive("proxy_pass", {nginx::Script(scheme(m.backend)).word("$request_uri")});
        w.close();
    }
}

}  // namespace g2n
