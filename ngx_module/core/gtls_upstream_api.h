// The upstream API's language (gateway_tls_upstream_api): the servers an
// operator's tool pushes into a zone upstream at run time, read from JSON
// and checked field by field before anything changes, and the JSON the API
// answers with. Pure C++, no nginx types.
//
// A request body:
//   {"upstreams": {"NAME": {"servers": [{"address": "10.0.0.1:8443",
//                                         "weight": 2, "max_conns": 0,
//                                         "max_fails": 1, "fail_timeout": 10,
//                                         "down": false}, ...]}, ...}}
// Only "address" is required; the rest default as nginx's `server` does.
// Stream upstream{} blocks (nginx names them apart from http's) go under
// "stream_upstreams", in the same form.
// The trust of named backend policies (proxy_ssl_policy_name) is replaced
// the same way, in the same body or alone:
//   {"policies": {"ns/web-tls": {"ca": "-----BEGIN CERTIFICATE-----...",
//                                "pins": ["sha256-spki:BASE64", ...]}}}
// "ca" is PEM certificates or "system"; a policy needs "ca", "pins" or both.
// "hostname" (the name sent and verified where no SAN is listed) and
// "subject_alt_names" (SAN SPECs) may come too, replacing what the policy
// is configured with: a spare upstream{} becomes a backend new to nginx.
// "client_certificate": {"certificate": PEM, "key": PEM} may come too,
// replacing the policy's own client certificate (proxy_ssl_policy_
// certificate) for new connections; a GET lists its leaf's SHA-256, never
// its key.
// A listener's certificate (gateway_tls_certificate NAME of a server{})
// is replaced for new handshakes, its chain (the leaf first) and key PEM:
//   {"certificates": {"NAME": {"certificate": "-----BEGIN CERTIFICATE-----...",
//                              "key": "-----BEGIN PRIVATE KEY-----..."}}}
// A GET lists each certificate's name, generation, source and the SHA-256
// of its leaf, never its key.
#pragma once

#include "gtls_json.h"

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gtls {

inline constexpr size_t kMaxApiServers = 10000;      // per upstream
inline constexpr size_t kMaxApiUpstreams = 100000;   // per request (a Gateway of 100,000 routes)
inline constexpr size_t kMaxApiUpstreamName = 255;
inline constexpr unsigned kMaxApiWeight = 1000;
inline constexpr unsigned kMaxApiMaxConns = 1000000;
inline constexpr unsigned kMaxApiMaxFails = 1000;
inline constexpr unsigned kMaxApiFailTimeout = 86400;  // seconds
inline constexpr size_t kMaxApiJsonDepth = 8;
inline constexpr size_t kMaxRouteJsonDepth = 16;    // inside "routes" (gtls_routes_json.h)
inline constexpr size_t kMaxApiPolicies = 100000;    // per request (a policy per route)
inline constexpr size_t kMaxApiPolicyName = 253;     // namespace/name
inline constexpr size_t kMaxApiCaBytes = 1 << 20;    // one policy's PEM bundle
inline constexpr size_t kMaxApiPins = 64;            // per policy
inline constexpr size_t kMaxApiSans = 64;            // per policy
inline constexpr size_t kMaxApiCertificates = 10000; // per request (a listener each)
inline constexpr size_t kMaxApiCertificateBytes = 1 << 20;  // one chain, or one key

// The sections a PUT body may have, in the order refusals list them: all
// read by parse_api_update but "routes", read by parse_route_update
// (gtls_routes_json.h); each reader skips the other's.
inline constexpr const char *kApiBodySections[] = {"upstreams", "stream_upstreams", "policies", "routes",
                                                   "certificates"};

// One server as nginx's round robin takes it. `address` is canonical
// ("10.0.0.1:8443", "[fd00::1]:8443": what nginx names a peer), `ip` its
// bytes (4 for IPv4, 16 for IPv6) in network order.
struct UpstreamServer {
    std::string                    address;
    int                            family = 0;  // 4 or 6
    std::array<unsigned char, 16>  ip{};
    uint16_t                       port = 0;
    unsigned                       weight = 1;
    unsigned                       max_conns = 0;
    unsigned                       max_fails = 1;
    unsigned                       fail_timeout = 10;
    bool                           down = false;

    bool operator==(const UpstreamServer &o) const
    {
        return address == o.address && weight == o.weight && max_conns == o.max_conns && max_fails == o.max_fails
               && fail_timeout == o.fail_timeout && down == o.down;
    }
};

struct UpstreamServers {
    std::string                  upstream;
    std::vector<UpstreamServer>  servers;
};

// The trust a policy verifies backends against, replacing its configured
// proxy_ssl_verify_ca and pins, and, when given, the name it sends and
// verifies (proxy_ssl_policy_hostname, proxy_ssl_verify_san). The PEM is
// checked to be text of PEM blocks here; its certificates are read by
// trust_store_from_pem.
struct PemKeyPair {
    std::string  certificate;  // PEM certificates, the leaf first
    std::string  key;          // one PEM private key, unencrypted

    bool operator==(const PemKeyPair &o) const { return certificate == o.certificate && key == o.key; }
};

struct PolicyTrust {
    std::string                              policy;
    std::string                              ca;    // PEM certificates, "system", or empty: pins alone
    std::vector<std::string>                 pins;  // normalised pin SPECs
    std::optional<std::string>               hostname;           // absent: as configured
    std::optional<std::vector<std::string>>  subject_alt_names;  // SAN SPECs; absent: as configured
    std::optional<PemKeyPair>                client_certificate;  // absent: as configured

    bool names_peer() const { return hostname.has_value() || subject_alt_names.has_value(); }
    bool operator==(const PolicyTrust &o) const
    {
        return policy == o.policy && ca == o.ca && pins == o.pins && hostname == o.hostname
               && subject_alt_names == o.subject_alt_names && client_certificate == o.client_certificate;
    }
};

// A listener's certificate chain and key, replacing what its servers are
// configured with (ssl_certificate, ssl_certificate_key) for new
// handshakes. The PEM is checked to be text of PEM blocks of the right
// labels here; key_pair_from_pem (gtls_certificate.h) reads it.
struct ListenerCertificate {
    std::string  name;
    std::string  certificate;  // PEM certificates, the leaf first
    std::string  key;          // one PEM private key, unencrypted

    bool operator==(const ListenerCertificate &o) const
    {
        return name == o.name && certificate == o.certificate && key == o.key;
    }
};

// A PUT body: servers of upstreams (of http{}, of stream{}), trust of
// policies, listeners' certificates, or any of them together.
struct ApiUpdate {
    std::vector<UpstreamServers>  upstreams;
    std::vector<UpstreamServers>  stream_upstreams;
    std::vector<PolicyTrust>      policies;
    std::vector<ListenerCertificate>  certificates;
    bool                          has_routes = false;  // a "routes" section, for parse_route_update
};

// What a GET of the API lists: each replaceable upstream of http{} (and of
// stream{}, where there is a stream block), and each policy whose trust
// the API may replace, with the generation in force and where it came
// from ("api", or "configuration").
struct ListedUpstream {
    std::string                  name;
    uint64_t                     generation = 0;
    bool                         pushed = false;
    std::vector<UpstreamServer>  servers;
};

struct ListedPolicy {
    std::string               name;
    uint64_t                  generation = 0;
    bool                      pushed = false;
    std::string               ca;  // where its trust comes from: a file, "system", the API
    std::vector<std::string>  pins;
    std::string               hostname;           // empty: none
    std::vector<std::string>  subject_alt_names;
    std::string               client_certificate;  // its leaf's SHA-256; empty: none
};

struct ListedCertificate {
    std::string  name;
    uint64_t     generation = 0;
    bool         pushed = false;
    std::string  sha256;  // of the leaf served to new handshakes
};

// One hostname of a route table (gateway_tls_routes): the state entry its
// rules came from, and how many matches they hold; `removed` when a PUT
// removed it.
struct ListedRoutes {
    std::string  table;
    std::string  host;  // empty: the table, holding no hostname
    uint64_t     generation = 0;
    size_t       matches = 0;
    bool         removed = false;
};

struct ApiList {
    std::vector<ListedUpstream>  upstreams;
    bool                         has_stream = false;
    std::vector<ListedUpstream>  stream_upstreams;
    std::vector<ListedPolicy>    policies;
    std::vector<ListedRoutes>    routes;  // by table, then host; none: not listed
    std::vector<ListedCertificate>  certificates;  // none: not listed
};

// What a PUT that took effect answers: how many servers each upstream
// given now has, and the generation of each policy's trust given.
struct ApiUpdated {
    std::vector<std::pair<std::string, size_t>>    upstreams;
    bool                                           has_stream = false;  // the PUT gave stream upstreams
    std::vector<std::pair<std::string, size_t>>    stream_upstreams;
    std::vector<std::pair<std::string, uint64_t>>  policies;
    std::vector<ListedRoutes>                      routes;  // given by the PUT
    std::vector<std::pair<std::string, uint64_t>>  certificates;  // none: not listed
};

// A refused request: the HTTP status to answer, and what was wrong, naming
// the field (`upstreams["web"].servers[2].address: ...`) or the place in
// the JSON (line and column).
class ApiError : public std::runtime_error {
public:
    ApiError(int status, const std::string &text, std::string table = {})
        : std::runtime_error(text), status_(status), table_(std::move(table))
    {
    }
    int status() const { return status_; }
    // the route table whose part of the body is at fault, where it is one
    const std::string &table() const { return table_; }

private:
    int          status_;
    std::string  table_;
};

// A PUT body: every upstream's full list, in the order given. Throws
// ApiError (400) on anything malformed, unknown or out of range: JSON
// syntax, duplicate keys, unknown fields, a host name (no DNS at run
// time), a port outside 1-65535, more than kMaxApiServers servers, a
// policy with neither "ca" nor "pins", a pin that is not a pin SPEC, "ca"
// that is not PEM blocks.
ApiUpdate parse_api_update(std::string_view body);

// The hostnames each route table holds, as a GET of the API lists them
// (table and host; generation and matches left out). Throws ApiError on a
// body that is not such a list.
std::vector<ListedRoutes> listed_route_hosts(std::string_view list);

// One policy's trust as policy_trust_json wrote it (kept across reloads).
PolicyTrust parse_policy_trust(std::string_view json, const std::string &policy);

// The policies a GET of the API lists as pushed ("source":"api"), by name.
// Throws ApiError on a body that is not such a list.
std::vector<std::string> pushed_policies(std::string_view list);

// The listener certificates a GET of the API lists as pushed, by name.
// Throws ApiError on a body that is not such a list.
std::vector<std::string> pushed_certificates(std::string_view list);

// The servers a GET of the API lists for each upstream of `section`
// ("upstreams" or "stream_upstreams"), by name. Throws ApiError on a body
// that is not such a list.
std::vector<UpstreamServers> listed_servers(std::string_view list, std::string_view section);

// One listener's certificate as listener_certificate_json wrote it (kept
// across reloads).
ListenerCertificate parse_listener_certificate(std::string_view json, const std::string &name);

// {"certificate":"...","key":"..."}
std::string listener_certificate_json(const ListenerCertificate &certificate);

// {"ca":"...","pins":[...],"hostname":"...","subject_alt_names":[...],
// "client_certificate":{"certificate":"...","key":"..."}}, "ca" left out
// when empty, the names and the client certificate when not given
std::string policy_trust_json(const PolicyTrust &trust);

// One server list as upstream_servers_json wrote it (what the module
// keeps across reloads). Throws ApiError.
std::vector<UpstreamServer> parse_server_list(std::string_view json);

// A name the API takes for an upstream, a route table or a backend: 1 to
// kMaxApiUpstreamName bytes of printable ASCII with no space, quote,
// backslash, brace or semicolon (nothing nginx would read as syntax)
bool is_api_name(std::string_view name);

// "10.0.0.1:8443" or "[fd00::1]:8443" (IP literals only), canonical;
// throws ApiError naming `field`.
UpstreamServer parse_server_address(std::string_view text, const std::string &field);
// Whether parse_server_address takes it (no error text made)
bool is_server_address(std::string_view text);

// [{"address":...,"weight":...,...}, ...], every field written.
std::string upstream_servers_json(const std::vector<UpstreamServer> &servers);

// The body of a GET: {"upstreams":{NAME:{"generation":N,"source":...,
// "servers":[...]}},"stream_upstreams":{...},"policies":{NAME:{
// "generation":N,"source":...,"ca":...,"pins":[...],"hostname":...,
// "subject_alt_names":[...],"client_certificate":SHA256}},"routes":{TABLE:{
// HOST:{"generation":N,"matches":M}}},"certificates":{NAME:{
// "generation":N,"source":...,"sha256":"..."}}}, which listed_servers and
// pushed_policies read.
std::string api_list_json(const ApiList &list);

// The body of a PUT's 200: {"upstreams":{NAME:{"servers":N}},
// "stream_upstreams":{...},"policies":{NAME:{"generation":N}},
// "routes":{TABLE:{HOST:{"generation":N,"matches":M}}},
// "certificates":{NAME:{"generation":N}}} (a removed hostname:
// "removed":true instead of its matches).
std::string api_updated_json(const ApiUpdated &updated);

// {"error":{"status":N,"text":"..."}}
std::string api_error_json(int status, std::string_view text);

// The same list as far as a balancer sees it (FNV-1a over each server's
// fields): tells whether a reload changed an upstream's configured servers.
uint64_t server_list_fingerprint(const std::vector<UpstreamServer> &servers);

}  // namespace gtls
