// The route tables' language in the upstream API: what gateway2nginx
// sends to replace one hostname's rules of one listener, read from JSON
// and checked field by field (every regular expression compiled) before
// anything changes; and the same rules written back, as the module keeps
// them across reloads. Pure C++, no nginx types.
//
// A body replaces the hostnames it names and leaves the others alone;
// null removes one:
//   {"routes": {"TABLE": {"HOST": {"actions": [ACTION, ...],
//                                  "matches": [MATCH, ...]},
//                         "OTHER.HOST": null}}}
// TABLE names a listener's table (gateway_tls_routes); HOST is a
// hostname, "*.suffix", or "*" for the listener's other hostnames.
// MATCHes come in precedence order, each naming its ACTION by index:
//   {"path": {"type": "Exact" | "PathPrefix" | "RegularExpression",
//             "value": "/x"},                       (default: PathPrefix /)
//    "method": "GET",
//    "headers": [{"name": "x-a", "type": "Exact" | "RegularExpression",
//                 "value": "..."}],                (type defaults to Exact)
//    "query": [{"name": "a", "type": ..., "value": "..."}],
//    "action": 0}
// An ACTION forwards ("backends"), redirects ("redirect") or answers
// ("status"), exactly one of them:
//   {"backends": [{"backend": "NAME", "weight": 1, "request_headers": MOD,
//                  "websocket": false, "scheme": "https" | "http" | "grpcs" | "grpc"}],
//    "status": 500,
//    "request_headers": MOD, "response_headers": MOD,
//    "redirect": {"scheme": "https", "hostname": "h", "port": 443,
//                 "path": REWRITE, "status": 301},
//    "rewrite": {"hostname": "h", "path": REWRITE},
//    "mirrors": [{"backend": "NAME", "numerator": 1, "denominator": 100}],
//    "timeouts": {"request_ms": N, "backend_ms": N},
//    "retry": {"attempts": N, "codes": [502, ...], "backoff_ms": N}}
//   MOD: {"set": [{"name": ..., "value": ...}], "add": [...], "remove": [NAME]}
//   REWRITE: {"type": "ReplaceFullPath" | "ReplacePrefixMatch", "value": "/y"}
// A backend "" is a share answered 500 (a backendRef that cannot be served).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtls_routes.h"
#include "gtls_upstream_api.h"

namespace gtls {

inline constexpr size_t kMaxRouteTables = 1024;         // per request
inline constexpr size_t kMaxRouteHosts = 100000;        // per request
inline constexpr size_t kMaxHostMatches = 10000;        // per hostname
inline constexpr size_t kMaxHostActions = 10000;        // per hostname
inline constexpr size_t kMaxHostPatterns = 1024;        // regular expressions per hostname
inline constexpr size_t kMaxMatchValues = 16;           // headers, query parameters per match (the CRDs')
inline constexpr size_t kMaxActionBackends = 16;        // the CRDs'
inline constexpr size_t kMaxActionMirrors = 16;
inline constexpr size_t kMaxHeaderEdits = 16;           // per set, add, remove (the CRDs')
inline constexpr size_t kMaxRetryCodes = 32;
inline constexpr size_t kMaxRoutePath = 1024;           // the CRDs'
inline constexpr unsigned kMaxRouteWeight = 1000000;    // the CRDs'
inline constexpr unsigned kMaxRetryAttempts = 100;
inline constexpr int64_t kMaxRouteTimeoutMs = 86400000; // a day

// One hostname of one table: its new rules, or null (removed)
struct HostUpdate {
    std::string                        host;
    std::shared_ptr<const HostRoutes>  routes;
};

struct TableUpdate {
    std::string              table;
    std::vector<HostUpdate>  hosts;
};

// A PUT body's routes, in the order given. Throws ApiError (400) naming
// the field (`routes["main"]["a.example"].matches[2].path.value: ...`) or
// the place in the JSON: syntax, duplicate keys, unknown fields, counts
// and sizes past the limits above, control characters, header names that
// are not tokens or that frame the message, paths that do not begin with
// "/" or hold what a request line cannot, patterns that do not compile,
// an action that names no or several outcomes, a ReplacePrefixMatch used
// by a match that is not a PathPrefix.
std::vector<TableUpdate> parse_route_update(std::string_view body);

// One hostname's rules as the module keeps them: {"actions":[...],
// "matches":[...]}, every field written; read back by
// parse_host_routes into the same rules.
std::string host_routes_json(const HostRoutes &routes);
std::shared_ptr<const HostRoutes> parse_host_routes(std::string_view json, const std::string &host);

}  // namespace gtls
