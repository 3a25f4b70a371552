// Decisions about upstreams that follow from a Plan, shared by render (what
// it writes) and apply (what it pushes): which proxy module a location
// goes out by, how many times each server is written, and what
// gateway_tls_upstream_api may replace at run time.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "plan.h"

namespace g2n {

// An upstream's servers as written: each address as often as its rule's
// retries need, without passive health checks where it is retried.
struct ServerLine {
    std::string address;
    bool max_fails_off = false;
};
std::vector<ServerLine> upstream_server_lines(const Upstream &u);
// How many they are.
size_t upstream_server_line_count(const Upstream &u);
// The server lines an upstream's zone keeps room for: its own, or a
// spare's future ones.
size_t zone_server_lines(const Upstream &u);
// Whether gateway_tls_upstream_api can replace the upstream's servers: an
// http upstream that can be reached, its servers IP literals (names are
// resolved only when nginx loads its configuration).
bool api_replaceable(const Upstream &u);
// The same for an upstream of plan.stream_upstreams (a TLSRoute's).
bool stream_api_replaceable(const Upstream &u);
// Spare upstreams (--spare-backends, with --routes table): COUNT that take
// TLS (a policy of their own that trusts no key) and COUNT plaintext, with
// no server that is ever sent to, in a zone of their own. The upstream API
// makes one a backend with no reload: its servers, its policy's trust
// (CA or pins, hostname, subject alt names) and a route table rule that
// sends to it (docs/gateway_tls_upstream_api.md, "Backends new to nginx").
std::vector<Upstream> spare_upstreams(int count);
// Their tenant: no namespace is named so (a DNS label has no '_').
inline constexpr const char *kSpareTenant = "_spares";
// The server lines a spare keeps room for in its zone.
inline constexpr size_t kSpareServerLines = 16;
// The proxy modules a location's requests go out by: grpc_pass for gRPC
// (GRPCRoute) and kubernetes.io/h2c backends, proxy_pass for the rest;
// both where one location reaches both kinds.
struct PassModules {
    bool proxy = false;
    bool grpc = false;
};
PassModules pass_modules(const Location &l);
// What the upstream API needs room for (with the API on): `upstreams`
// replaceable upstreams (of http{} and stream{}) with `server_lines`
// servers between them, the number of policies whose trust it may
// replace, and of listener certificates.
struct UpstreamApiRoom {
    size_t state_zone_kilobytes = 0;  // gateway_tls_upstream_state_zone
    size_t body_kilobytes = 0;        // client_max_body_size of its location

    bool operator==(const UpstreamApiRoom &o) const
    {
        return state_zone_kilobytes == o.state_zone_kilobytes && body_kilobytes == o.body_kilobytes;
    }
};
UpstreamApiRoom upstream_api_room(size_t upstreams, size_t server_lines, size_t trusts, size_t certificates);
// The least power of two times `least` that is at least n: sizes that
// change only when what they hold doubles or halves.
size_t power_of_two_at_least(size_t n, size_t least);
// The size of a zone holding `server_lines` servers, in kilobytes.
size_t servers_zone_kilobytes(size_t server_lines);
// The policies whose trust (CA bundle, pins) gateway_tls_upstream_api can
// replace, by name: with the API on, verifying (not skip), in upstreams
// (of http{} or stream{}) that can be reached, one trust per name.
std::map<std::string, const UpstreamPolicy *> trust_replaceable_policies(const Plan &plan, const Options &o);
// A listener certificate gateway_tls_upstream_api can replace
// (gateway_tls_certificate NAME): its files under OUTDIR.
struct ReplaceableCertificate {
    std::string certificate, key;
};
// By name (the files' stem): with the API on, the certificates that
// HTTPS servers or TLS Terminate servers present, each on one side only
// (a name is the http module's or the stream module's), no backend
// connection presenting it too.
std::map<std::string, ReplaceableCertificate> replaceable_certificates(const Plan &plan, const Options &o);
// What of that the policy decides itself: it verifies, with a CA or pins.
bool trust_replaceable(const UpstreamPolicy &p);
// Marks names_pushed the trust-replaceable policies whose every scope is
// an upstream{} of http{} (which sets proxy_ssl_policy_hostname, the one
// place the module takes a pushed hostname): their hostname and SANs go
// with their trust, out of the skeleton.
void plan_pushed_names(Plan *plan, const Options &o);

}  // namespace g2n
