// Routes at run time: the rules of one listener's hostnames, as
// gateway2nginx computes them from HTTPRoutes and GRPCRoutes, matched
// against requests with Gateway API's semantics, and the actions they
// lead to. Pure C++, no nginx types: the glue hands a request over, gets
// a rule and acts on it.
//
// A listener's table holds one entry per hostname: exact ("a.example"),
// wildcard ("*.example", a suffix of one or more labels) or "*" (the
// listener's other hostnames). A request is served by the entry of its
// host, the exact one, else the longest wildcard, else "*"; nothing falls
// through to a less specific entry (as nginx chooses a server{}): whatever
// rules of broader hostnames should apply, gateway2nginx lists in the
// entry.
//
// An entry lists its matches in precedence order (gateway2nginx decides
// it: Gateway API's, then age); a request takes the first whose path,
// method, headers and query parameters all hold. Exact and PathPrefix
// paths are looked up (a hash of paths, walked at each segment boundary of
// the request's path), so a request costs in proportion to the paths it
// could match, not to the entry's size; regular expressions are tried in
// order, only ahead of the best looked-up candidate.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gtls_match.h"

namespace gtls {

enum class PathMatchKind { Exact, PathPrefix, RegularExpression };
enum class ValueMatchKind { Exact, RegularExpression };

// A header or query parameter match. Header names are compared without
// case (held in lower case), query parameter names with it (Gateway API).
struct ValueMatch {
    std::string            name;
    ValueMatchKind         kind = ValueMatchKind::Exact;
    std::string            value;   // the value, or the pattern
    std::shared_ptr<Regex> regex;   // RegularExpression: the whole value must match
};

// One match of a rule: every condition given must hold.
struct RouteMatch {
    PathMatchKind            path_kind = PathMatchKind::PathPrefix;
    // Exact: the path; PathPrefix: the prefix without trailing "/" ("/"
    // alone for every path); RegularExpression: the pattern, which the
    // whole path must match
    std::string              path = "/";
    std::shared_ptr<Regex>   path_regex;
    std::string              method;  // empty: any
    std::vector<ValueMatch>  headers;
    std::vector<ValueMatch>  query;
    uint32_t                 action = 0;  // index into the entry's actions
};

// ---- actions

struct HeaderValue {
    std::string name, value;
};

// RequestHeaderModifier, ResponseHeaderModifier
struct HeaderModifier {
    std::vector<HeaderValue>  set, add;
    std::vector<std::string>  remove;

    bool empty() const { return set.empty() && add.empty() && remove.empty(); }
};

enum class PathRewriteKind { None, ReplaceFullPath, ReplacePrefixMatch };

struct PathRewrite {
    PathRewriteKind kind = PathRewriteKind::None;
    std::string     value;
};

// RequestRedirect: empty or 0 keeps the request's own
struct Redirect {
    std::string  scheme;
    std::string  hostname;
    unsigned     port = 0;
    PathRewrite  path;
    unsigned     status = 302;
};

// URLRewrite
struct UrlRewrite {
    std::string  hostname;
    PathRewrite  path;
};

// A backend by the name the module knows it by; an empty name is a share
// of the traffic that cannot be served (an invalid backendRef), answered
// 500.
// How a backend is spoken to: HTTP/1.1 over TLS or in plaintext, HTTP/2
// by prior knowledge (gRPC, appProtocol kubernetes.io/h2c) over TLS or in
// plaintext: proxy_pass https://, http://, grpc_pass grpcs://, grpc://
enum class BackendScheme { Https, Http, Grpcs, Grpc };
const char *scheme_name(BackendScheme scheme);
// plaintext: what an upstream{} whose policy verifies TLS never takes
inline bool scheme_is_plaintext(BackendScheme scheme) { return scheme == BackendScheme::Http || scheme == BackendScheme::Grpc; }

struct WeightedBackend {
    std::string     backend;
    unsigned        weight = 1;
    HeaderModifier  request_headers;  // its own backendRef's filter
    bool            websocket = false;  // appProtocol kubernetes.io/ws: a client's WebSocket Upgrade passes
    BackendScheme   scheme = BackendScheme::Https;
    // the glue's own: what `backend` names in this process (nginx: its
    // upstream{}), found at the first request that takes it
    mutable const void *resolved = nullptr;
};

// The Upgrade a request sends `backend`: "websocket" where the backend
// takes WebSocket (GEP-1911) and the client asked for it (any case), else
// none: no other upgrade (h2c would tunnel past the routing) ever passes
std::string_view upgrade_sent(const WeightedBackend &backend, std::optional<std::string_view> client_upgrade);

// RequestMirror: a copy of NUMERATOR in DENOMINATOR requests
struct Mirror {
    std::string backend;
    unsigned    numerator = 100;
    unsigned    denominator = 100;
};

struct RouteAction {
    std::vector<WeightedBackend>  backends;
    unsigned                      status = 0;  // answered by the gateway when there is no backend
    HeaderModifier                request_headers, response_headers;
    std::optional<Redirect>       redirect;
    std::optional<UrlRewrite>     rewrite;
    std::vector<Mirror>           mirrors;
    int64_t                       request_timeout_ms = -1;  // -1: unset, 0: disabled
    int64_t                       backend_timeout_ms = -1;
    unsigned                      retry_attempts = 0;
    std::vector<unsigned>         retry_codes;
    int64_t                       retry_backoff_ms = -1;
};

// ---- a request

// What the matcher reads of a request. `path` is the decoded, normalised
// path nginx matches its locations against ($uri), `args` the raw query
// string ($args), `host` lower case without port or trailing dot ($host).
class RouteRequest {
public:
    virtual ~RouteRequest() = default;
    // The first value of the header named `lowercase_name`, if it was sent
    virtual std::optional<std::string_view> header(std::string_view lowercase_name) const = 0;

    std::string_view method, path, args;
};

// The value of the first query parameter named `name` (case-sensitive) in
// `args`, raw as sent; "" for a name without "=".
std::optional<std::string_view> query_value(std::string_view args, std::string_view name);

// ---- an entry: one hostname's rules

// What a request matched: the match, its action, and whether a regular
// expression on the way gave up at its limit (counted, and logged by the
// glue, as the match it could not decide did not apply).
struct RouteChoice {
    const RouteMatch   *match = nullptr;
    const RouteAction  *action = nullptr;
    bool                regex_limit = false;
};

class HostRoutes {
public:
    // Compiled from matches in precedence order and the actions they
    // name; throws std::invalid_argument naming a match whose action is out
    // of range or whose regular expression was not compiled.
    HostRoutes(std::string host, std::vector<RouteAction> actions, std::vector<RouteMatch> matches);
    HostRoutes(const HostRoutes &) = delete;
    HostRoutes &operator=(const HostRoutes &) = delete;

    RouteChoice match(const RouteRequest &request) const;

    const std::string &host() const { return host_; }
    const std::vector<RouteMatch> &matches() const { return matches_; }
    const std::vector<RouteAction> &actions() const { return actions_; }

private:
    // the ranks (positions in matches_) of one path's Exact and PathPrefix
    // matches, each in precedence order
    struct PathRanks {
        std::vector<uint32_t> exact, prefix;
    };

    bool conditions_hold(const RouteMatch &m, const RouteRequest &request, bool *limit) const;

    std::string                                       host_;
    std::vector<RouteAction>                          actions_;
    std::vector<RouteMatch>                           matches_;
    // keys point into matches_' paths, which never change once built
    std::unordered_map<std::string_view, PathRanks>  by_path_;
    const std::vector<uint32_t>                      *root_prefix_ = nullptr;  // PathPrefix "/": every path's
    std::vector<uint32_t>                             regex_ranks_;
};

// ---- a listener's table

class RouteTable {
public:
    // Replaces the entry of `routes->host()`, or adds it
    void replace(std::shared_ptr<const HostRoutes> routes);
    // Removes the entry of `host`: false when there was none
    bool remove(std::string_view host);

    // The entry serving `host` (as RouteRequest::host is); null: none
    std::shared_ptr<const HostRoutes> find(std::string_view host) const;

    size_t hosts() const { return exact_.size() + wildcard_.size() + (any_ ? 1 : 0); }
    size_t matches() const { return matches_; }

private:
    // exact hostnames by name, wildcards by their suffix (".example"),
    // keys pointing into the entries' own host names
    std::unordered_map<std::string_view, std::shared_ptr<const HostRoutes>>  exact_, wildcard_;
    std::shared_ptr<const HostRoutes>                                        any_;
    size_t                                                                   matches_ = 0;
};

// ---- what an action does to a request (decided here, applied by the glue)

// The share (an index into `backends`) a request goes to, `random` drawn
// uniformly from [0, total weight); out of range when no share has weight.
size_t choose_backend(const std::vector<WeightedBackend> &backends, uint64_t random);
uint64_t total_weight(const std::vector<WeightedBackend> &backends);

// Whether a request, `random` drawn uniformly, is in the share a mirror
// copies (numerator in denominator)
bool mirror_takes(const Mirror &mirror, uint64_t random);

// The path a URLRewrite or RequestRedirect gives `path`, which `match`
// matched: ReplaceFullPath's value; ReplacePrefixMatch's value in place of
// the matched prefix (a prefix of "/" ahead of the whole path), keeping
// the rest. `escape`: what comes from `path` (decoded, as $uri) is
// %-escaped as a request line or a Location carries it (the values are
// already).
std::string rewritten_path(const PathRewrite &rewrite, const RouteMatch &match, std::string_view path,
                           bool escape = false);

// A header field of a request, as the glue hands it over
struct HeaderField {
    std::string_view name, value;
};

// What a rule's filters do to the header fields a request sends its
// backend: which of the request's fields are dropped, and the fields that
// follow the kept ones. Names are compared without case.
struct HeaderEdits {
    std::vector<bool>         dropped;   // one per field given
    std::vector<HeaderValue>  appended;  // in order
};

// The header fields `action` sends toward `backend` (the share the
// request fell to; null: none), applied in order: URLRewrite's hostname
// as the Host, the rule's RequestHeaderModifier, the backend's. As the
// rendered proxy_set_header does: set replaces every field of its name;
// add replaces them with their values joined and its own appended
// ("v1, v2,value", the map over $http_NAME); remove drops them; a field
// left empty is not sent (as nginx sends none).
HeaderEdits edit_request_headers(const std::vector<HeaderField> &fields, const RouteAction &action,
                                 const WeightedBackend *backend);

// Whether a request taking `action` has header fields edited at all
bool edits_request_headers(const RouteAction &action, const WeightedBackend *backend);

// What a request arrived with, for a redirect: its scheme ("http" or
// "https"), $host, the listener's port, $uri and $args; the Host header
// ($http_host) and the request's target ($request_uri) as sent
struct RequestTarget {
    std::string_view scheme, host, path, args;
    unsigned port = 0;
    std::string_view host_header, request_uri;
};

// The Location a RequestRedirect answers with (Gateway API), as the
// rendered return gives it: its scheme, hostname and path where given, the
// request's otherwise; its port where given, else the well-known port of
// a scheme it gives, else the listener's; a port the scheme implies (http
// 80, https 443) left out. A redirect that gives no scheme, hostname or
// port keeps the Host header as sent; one that gives no path keeps the
// request's target as sent (query included), one that does keeps the
// query. What the request gave is escaped where it holds what a header
// may not.
std::string redirect_location(const Redirect &redirect, const RouteMatch &match, const RequestTarget &request);

// A request's path (as a rewrite left it) and its query, as a Location
// holds them: escaped where they hold what a header may not (a decoded
// "%0D%0A" would end the field and start one of the client's choosing).
// What the rendered redirects send as $gateway_tls_redirect_path.
std::string location_path(std::string_view path, std::string_view args);

}  // namespace gtls
