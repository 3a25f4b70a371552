// render: nginx text and status YAML from a Plan. No decisions here: the
// same Plan always gives the same bytes.
#pragma once

#include <map>

#include <functional>
#include <sstream>
#include <string>

#include "nginx_text.h"
#include "plan.h"

namespace g2n {

std::string render_nginx_conf(const Plan &plan, const Options &options);
std::string render_http_conf(const Plan &plan, const Options &options = Options{});
void render_http_conf(std::ostream &out, const Plan &plan, const Options &options);
std::string render_stream_conf(const Plan &plan, const Options &options);

// ---- shared by render.cc and render_stream.cc -----------------------------

extern const char *const kHeader;
// "12.50%": hundredths, rounded down, so that shares never pass 100%
std::string percent(long part, long total);
// The lines of a split_clients block over weighted backends, the last
// taking the rest ("*"); target names what each share goes to.
nginx::Fragment split_clients_body(const std::vector<WeightedUpstream> &backends,
                                   const std::function<nginx::Token(const WeightedUpstream &)> &target);
// ssl_verify_client, ssl_client_certificate and ssl_verify_client_pin of a
// TLS listener (GEP-91, GEP-4078), and proxy_ (and grpc_)
// ssl_certificate{,_key} for the gateway's client certificate to backends
// (GEP-3155).
void render_client_validation(nginx::Writer &w, const ClientValidation &client);
void render_backend_client(nginx::Writer &w, const BackendClientCertificate &client, bool grpc_too);
// The proxy modules a location's requests go out by: grpc_pass for gRPC
// (GRPCRoute) and kubernetes.io/h2c backends, proxy_pass for the rest;
// both where one location reaches both kinds.
struct PassModules {
    bool proxy = false;
    bool grpc = false;
};
PassModules pass_modules(const Location &l);
// An upstream's servers as written: each address as often as its rule's
// retries need, without passive health checks where it is retried.
struct ServerLine {
    std::string address;
    bool max_fails_off = false;
};
std::vector<ServerLine> upstream_server_lines(const Upstream &u);
// Whether gateway_tls_upstream_api can replace the upstream's servers: an
// http upstream that can be reached, its servers IP literals (names are
// resolved only when nginx loads its configuration).
bool api_replaceable(const Upstream &u);
// The same for an upstream of plan.stream_upstreams (a TLSRoute's).
bool stream_api_replaceable(const Upstream &u);
// Its servers as the API takes them (gtls::upstream_servers_json).
std::string upstream_servers_api_json(const Upstream &u);
// The zones of replaceable upstreams, one per tenant (namespace), each
// sized from the servers in it: the upstream{} blocks that declare them
// are rendered, and the zone of each upstream is returned by name.
std::map<std::string, std::string> render_servers_zones(nginx::Writer &w, const std::string &prefix,
                                                        const std::vector<const Upstream *> &replaceable);
// The size of a zone holding `server_lines` servers, in kilobytes.
size_t servers_zone_kilobytes(size_t server_lines);
// The policies whose trust (CA bundle, pins) gateway_tls_upstream_api can
// replace, by name: with the API on, verifying (not skip), in upstreams
// (of http{} or stream{}) that can be reached, one trust per name.
std::map<std::string, const UpstreamPolicy *> trust_replaceable_policies(const Plan &plan, const Options &o);
// Its trust as the API takes it (gtls::policy_trust_json): the CA bundle's
// PEM (from the plan's files) or "system", and the pins.
std::string policy_trust_api_json(const UpstreamPolicy &p, const Plan &plan);
// What the skeleton of a configuration leaves out (run mode compares the
// rest): servers replaceable at run time, and the CA and pins of policies
// whose trust is
struct Skeleton {
    bool servers = false;
    bool trust = false;
};
// upstream{} with its servers and the module directives of its policy; in
// `zone` when its servers are replaceable at run time
void render_upstream(nginx::Writer &w, const Upstream &u, const char *zone = nullptr, Skeleton skeleton = {});
std::string render_status(const Plan &plan, const Options &options);
// The same, straight into a stream: status.yaml is the largest output.
void render_status(std::ostream &out, const Plan &plan, const Options &options);

}  // namespace g2n
