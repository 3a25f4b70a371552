// gateway_tls_routes: a location whose requests are routed by a listener's
// route table (gtls_routes.h), which the upstream API replaces hostname by
// hostname at run time, with no reload. The table is this worker's; the
// state zone keeps what was pushed, for the other workers and across
// reloads (ngx_http_gateway_tls_upstream_state.cc).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gtls_routes.h"
#include "ngx_gtls_nginx.h"

// One hostname of a table: the state entry its rules came from (or its
// removal did), and how many matches it holds.
struct ngx_http_gtls_route_host_t {
    uint64_t  sequence = 0;
    size_t    matches = 0;
    bool      removed = false;
};

struct ngx_http_gtls_route_table_t {
    std::string                                        name;
    gtls::RouteTable                                   table;
    std::map<std::string, ngx_http_gtls_route_host_t>  hosts;
};

using ngx_http_gtls_route_tables_t = std::map<std::string, ngx_http_gtls_route_table_t, std::less<>>;

// A state entry's name for a hostname of a table: "TABLE HOST" (neither
// holds a space), and back
std::string ngx_http_gtls_routes_entry_name(std::string_view table, std::string_view host);
bool ngx_http_gtls_split_routes_entry_name(std::string_view name, std::string_view *table, std::string_view *host);

// A hostname's rules put in place in this worker (null: removed), from
// state entry `sequence`; false when the table holds a newer one
bool ngx_http_gtls_take_routes(ngx_http_gtls_route_table_t *t, const std::string &host,
                               std::shared_ptr<const gtls::HostRoutes> routes, uint64_t sequence);

// What the configuration lets a table's rules do: edit the Host (a
// location sends $gateway_tls_route_host as the Host), mirror (a location
// says where mirrors go, mirror=), speak to a backend otherwise than
// HTTP/1.1 over TLS (a location passes that scheme), and which backends
// they may name
// gateway_tls_routes_pass SCHEME { ... }: the block of a routed location
// that a backend of that scheme is passed by (https: the location itself)
enum { NGX_HTTP_GTLS_PASS_HTTP, NGX_HTTP_GTLS_PASS_GRPCS, NGX_HTTP_GTLS_PASS_GRPC, NGX_HTTP_GTLS_PASSES };
// its index, or -1 for https
int ngx_http_gtls_pass_index(gtls::BackendScheme scheme);

struct ngx_http_gtls_route_support_t {
    bool host_sent = false;
    bool mirrors = false;
    unsigned passes = 0;  // the schemes a location has a gateway_tls_routes_pass block for (1 << index)
    // the upstream{} blocks a backend or mirror may name (null: any)
    const std::unordered_map<std::string_view, ngx_http_upstream_srv_conf_t *> *upstreams = nullptr;
};

// What this configuration cannot serve of an entry's actions: the first
// such field and why ("actions[2].mirrors: no location says where ..."),
// or empty. Such rules are refused (409) rather than served without it.
std::string ngx_http_gtls_unserved_route_field(const gtls::HostRoutes &routes, ngx_http_gtls_route_support_t support);

// The tries of a routed request's backend as its rule says: the rule's
// backend timeout (else its request timeout) bounds each wait of a try,
// its retry sends error, timeout and its codes to the next server, up to
// its attempts. nginx reads these from u->conf at each try, so the request
// gets a copy of the location's in its pool. Called when its first try
// starts.
ngx_int_t ngx_http_gtls_route_upstream_conf(ngx_http_request_t *r);

// What gateway_tls_status shows of the route tables (null: none): each
// table's generation (its newest state entry), hostnames and matches as
// this worker holds them (caught up by the caller), and the counters every
// worker shares in the status zone (ngx_gtls_count_table). JSON: members
// for the status object.
std::string ngx_http_gtls_route_tables_json(const ngx_http_gtls_route_tables_t *tables, ngx_shm_zone_t *status_zone);
std::string ngx_http_gtls_route_tables_prometheus(const ngx_http_gtls_route_tables_t *tables,
                                                  ngx_shm_zone_t *status_zone);

// The upstream `proxy_pass https://gateway_tls_routes` names, made with
// the first gateway_tls_routes: each request goes on to the upstream{}
// its rule chose (mcf->route_upstreams, by name)
inline constexpr const char *kRouteUpstream = "gateway_tls_routes";

char *ngx_http_gtls_routes(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
// gateway_tls_routes_pass SCHEME { ... }: a block of the location, made
// as limit_except makes its own (what "if" takes may stand in it)
char *ngx_http_gtls_routes_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_gtls_init_routes(ngx_conf_t *cf);
ngx_int_t ngx_http_gtls_add_route_variables(ngx_conf_t *cf);
