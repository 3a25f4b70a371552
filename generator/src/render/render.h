// render: the Plan as text: nginx.conf, http.conf, stream.conf and
// status.yaml. nginx syntax is written here only, and only through
// render/nginx_text.h's Writer, whose tokens cannot carry syntax.
// No decisions here: the same Plan always gives the same bytes; what the
// Plan leaves open is decided in plan/ (plan/upstreams.h).
// May not: read or write files, or run anything.
#pragma once

#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "plan.h"
#include "plan/upstreams.h"
#include "render/nginx_text.h"

namespace g2n {

std::string render_nginx_conf(const Plan &plan, const Options &options);
std::string render_http_conf(const Plan &plan, const Options &options = Options{});
void render_http_conf(std::ostream &out, const Plan &plan, const Options &options);
std::string render_stream_conf(const Plan &plan, const Options &options);
// --routes table: the upstream API's body that fills the route tables of
// the servers a table serves (plan/route_tables.h), one entry each
std::string render_route_tables(const Plan &plan, const Options &options);
// Its size, the text not made
size_t route_tables_size(const Plan &plan);
// What one server's entry adds to it, in a table that has others
size_t route_table_entry_bytes(const Server &s);
// The room the upstream API keeps for tables of `table_bytes` (part of
// the configuration: a change of it is a reload)
struct RouteTablesRoom {
    size_t state_zone_kilobytes = 0, body_kilobytes = 0;
    bool operator!=(const RouteTablesRoom &o) const
    {
        return state_zone_kilobytes != o.state_zone_kilobytes || body_kilobytes != o.body_kilobytes;
    }
};
RouteTablesRoom route_tables_room(size_t table_bytes);

// ---- shared by the files of render/ ----------------------------------------

extern const char *const kHeader;
// "12.50%": hundredths, rounded down, so that shares never pass 100%
std::string percent(long part, long total);
// The lines of a split_clients block over weighted backends, the last
// taking the rest ("*"); target names what each share goes to.
nginx::Fragment split_clients_body(const std::vector<WeightedUpstream> &backends,
                                   const std::function<nginx::Token(const WeightedUpstream &)> &target);
// Each item as one nginx value.
std::vector<nginx::Token> values(const std::vector<std::string> &items);
// ssl_verify_client, ssl_client_certificate and ssl_verify_client_pin of a
// TLS listener (GEP-91, GEP-4078), and proxy_ (and grpc_)
// ssl_certificate{,_key} for the gateway's client certificate to backends
// (GEP-3155).
void render_client_validation(nginx::Writer &w, const ClientValidation &client);
void render_backend_client(nginx::Writer &w, const BackendClientCertificate &client, bool grpc_too);
// The names of the certificates the upstream API replaces, by file
// (replaceable_certificates), and a server's ssl_certificate and
// ssl_certificate_key, with gateway_tls_certificate when it is one.
using CertificateNames = std::map<std::string, std::string>;
CertificateNames certificate_names(const Plan &plan, const Options &o);
void render_certificate(nginx::Writer &w, const std::string &certificate, const std::string &key,
                        const CertificateNames &names);
// The zones of replaceable upstreams, one per tenant (namespace), each
// sized from the servers in it: the upstream{} blocks that declare them
// are rendered, and the zone of each upstream is returned by name.
std::map<std::string, std::string> render_servers_zones(nginx::Writer &w, const std::string &prefix,
                                                        const std::vector<const Upstream *> &replaceable);
// What the skeleton of a configuration leaves out (run mode compares the
// rest): servers replaceable at run time, and the CA and pins of policies
// whose trust is
struct Skeleton {
    bool servers = false;
    bool trust = false;
    bool names = false;  // a spare's hostname and SANs (pushed when it holds a backend)
};
// The upstream{} blocks of `upstreams` (the plan's http or stream ones):
// with the upstream API, those `replaceable` says the API may replace keep
// their servers in a zone per namespace (`zone_prefix`_NAMESPACE) sized
// from them, and run mode's skeleton leaves out what a push changes
// (their servers, and the trust of `trusts`). Returns those in a zone.
std::vector<const Upstream *> render_upstreams(nginx::Writer &w, const std::vector<Upstream> &upstreams,
                                               bool (*replaceable)(const Upstream &), const char *zone_prefix,
                                               const std::map<std::string, const UpstreamPolicy *> &trusts,
                                               const Options &o);
// upstream{} with its servers and the module directives of its policy; in
// `zone` when its servers are replaceable at run time
void render_upstream(nginx::Writer &w, const Upstream &u, const char *zone = nullptr, Skeleton skeleton = {});
std::string render_status(const Plan &plan, const Options &options);
// The same, straight into a stream: status.yaml is the largest output.
void render_status(std::ostream &out, const Plan &plan, const Options &options);

}  // namespace g2n
