// ngx_http_gateway_tls_module: shared between the configuration half
// (ngx_http_gateway_tls_module.cc) and the connection half
// (ngx_http_gateway_tls_upstream.cc).
#pragma once

#include <map>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "ngx_gtls_nginx.h"

#include "gtls_verify.h"
#include "ngx_gtls_client_pins.h"
#include "ngx_gtls_connection.h"
#include "ngx_gtls_policy_conf.h"
#include "ngx_http_gateway_tls_access.h"
#include "ngx_gtls_certificates.h"
#include "ngx_http_gateway_tls_routes.h"
#include "ngx_http_gateway_tls_status.h"
#include "ngx_http_gateway_tls_upstream_api.h"

// Which upstream module a policy is for: proxy_pass or grpc_pass.
enum ngx_http_gtls_kind_e { NGX_HTTP_GTLS_PROXY = 0, NGX_HTTP_GTLS_GRPC = 1, NGX_HTTP_GTLS_KINDS = 2 };

typedef ngx_gtls_policy_conf_t ngx_http_gtls_policy_conf_t;

// The proxy_ssl_* and grpc_ssl_* policy directives of one scope (the
// directive table gives each its field by offsetof), and either by kind.
struct ngx_http_gtls_policies_t {
    ngx_http_gtls_policy_conf_t  proxy;
    ngx_http_gtls_policy_conf_t  grpc;

    ngx_http_gtls_policy_conf_t &operator[](ngx_uint_t kind) { return kind == NGX_HTTP_GTLS_GRPC ? grpc : proxy; }
};

typedef struct {
    ngx_http_gtls_policies_t  policy;
    ngx_http_gtls_access_t    api;              // gateway_tls_upstream_api_allow, _token_file
    ngx_http_gtls_access_t    status;           // gateway_tls_status_allow, _token_file
    ngx_msec_t                request_timeout;  // gateway_tls_request_timeout; 0: none
    ngx_http_gtls_route_table_t  *routes;       // gateway_tls_routes (this location's own)
    ngx_uint_t                routes_port;      // its port=: what a redirect keeps; 0: the local port
    ngx_str_t                 routes_mirror;    // its mirror=: where mirror subrequests go
    // its gateway_tls_routes_pass blocks' loc_conf, by NGX_HTTP_GTLS_PASS_*
    void                    **routes_pass[NGX_HTTP_GTLS_PASSES];
} ngx_http_gtls_loc_conf_t;

typedef struct {
    ngx_gtls_client_pin_conf_t      client_pins;  // ssl_verify_client_pin*
    ngx_uint_t                      insecure;     // proxy_ssl_verify_insecure
    ngx_http_gtls_policies_t        policy;       // upstream{} level
    ngx_http_upstream_init_peer_pt  original_init_peer;
    ngx_http_gtls_dynamic_t        *dynamic;      // servers the upstream API may replace
    ngx_flag_t                      h2c_preface;  // gateway_tls_h2c_preface
    ngx_str_t                       certificate;  // gateway_tls_certificate
} ngx_http_gtls_srv_conf_t;

// Per-cycle state that is not configuration: trust stores shared by path,
// and the TLS sessions of module-verified connections.

struct ngx_http_gtls_main_conf_t {
    ngx_int_t                        ctx_index[NGX_HTTP_GTLS_KINDS];  // -1 where nginx has no such module
    ngx_http_upstream_init_peer_pt   implicit_init_peer;
    ngx_gtls_registry_t                                         *registry;
    ngx_shm_zone_t                                              *upstream_state;  // gateway_tls_upstream_state_zone
    ngx_flag_t                                                   upstream_api;    // a location serves it
    ngx_gtls_upstream_set_t                                     *upstreams;        // per cycle, from init_module
    ngx_gtls_upstream_set_t                                     *stream_upstreams; // the stream module's, when loaded
    uint64_t                                                     state_sequence;  // state entries up to it are applied
    std::map<std::string, ngx_http_gtls_trusted_t>              *trusted;         // named policies, per cycle
    ngx_gtls_certificates_t                                     *certificates;    // gateway_tls_certificate, by name
    ngx_gtls_certificates_t                                     *stream_certificates;  // the stream module's, per cycle
    ngx_gtls_catch_up_t                                          catch_up;        // ngx_http_gtls_catch_up_hook
    ngx_http_gtls_route_tables_t                                *route_tables;    // gateway_tls_routes, by name
    ngx_http_gtls_route_support_t                                route_support;   // what its locations let rules do
    ngx_http_upstream_srv_conf_t                                *route_upstream;  // kRouteUpstream, with the tables
    // the upstream{} blocks by name, for route_upstream: per cycle
    std::unordered_map<std::string_view, ngx_http_upstream_srv_conf_t *>  *route_upstreams;
};

// What one request learnt about its backend connection; lives in the
// request pool so that it survives the upstream and internal redirects.
struct ngx_http_gtls_request_t : ngx_gtls_backend_t {
    ngx_http_request_t                     *request = nullptr;
    ngx_http_gtls_kind_e                    kind = NGX_HTTP_GTLS_PROXY;
    // gateway_tls_request_timeout: armed once a request, at its first
    // backend try
    ngx_event_t                             deadline{};
    ngx_msec_t                              deadline_ms = 0;
    // gateway_tls_routes: the entry the request matched, held (a
    // replacement never changes it under the request), its match, the
    // backend chosen, the Host its filters send (when they edit headers)
    std::shared_ptr<const gtls::HostRoutes>  route_entry;
    const gtls::RouteMatch                 *route_match = nullptr;
    std::string_view                        route_backend;
    ngx_http_upstream_srv_conf_t           *route_upstream = nullptr;  // the upstream{} route_backend names
    std::string_view                        route_upgrade;  // the Upgrade sent ("websocket" or none)
    std::string_view                        route_scheme;   // how the backend is spoken to ("https", ...)
    bool                                    route_headers_edited = false;
    ngx_str_t                               route_host{};
    // a rule's mirrors: NGX_AGAIN until sent; a mirror subrequest's backend
    ngx_int_t                               route_mirror_status = NGX_AGAIN;
    std::string_view                        route_mirror;

    ~ngx_http_gtls_request_t()
    {
        if (deadline.timer_set) {
            ngx_del_timer(&deadline);
        }
    }
};

extern "C" ngx_module_t  ngx_http_gateway_tls_module;

// ngx_http_gateway_tls_upstream_api.cc: what another worker took through
// the API since this one last looked (servers, trust), taken here too; one
// atomic read when nothing changed.
void ngx_http_gtls_catch_up(ngx_http_gtls_main_conf_t *mcf);
// The same as an ngx_gtls_catch_up_t's `run` (`mcf` its data): what the
// stream module and every named certificate's handshake call.
void ngx_http_gtls_catch_up_hook(void *mcf);
// The certificate NAME of an http or a stream server (gateway_tls_certificate).
ngx_gtls_certificate_t *ngx_http_gtls_find_certificate(ngx_http_gtls_main_conf_t *mcf, const std::string &name);

// ngx_http_gateway_tls_upstream.cc
ngx_int_t ngx_http_gtls_init_peer(ngx_http_request_t *r, ngx_http_upstream_srv_conf_t *us);
// The header filter that answers 504 for a backend's answer past the request deadline.
ngx_int_t ngx_http_gtls_init_deadline_filter(ngx_conf_t *cf);
void ngx_http_gtls_install_ssl_hooks(SSL_CTX *ctx);
ngx_http_gtls_request_t *ngx_http_gtls_get_request(ngx_http_request_t *r, bool create);
ngx_int_t ngx_http_gtls_init_ssl_indexes(ngx_log_t *log);
