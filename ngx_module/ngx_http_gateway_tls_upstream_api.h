// gateway_tls_upstream_api: the servers of zone upstreams replaced at run
// time, for every worker at once, without a reload.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "gtls_verify.h"

#include "ngx_gtls_dynamic_upstream.h"
#include "ngx_gtls_nginx.h"

// An http upstream{} whose servers the API may replace.
using ngx_http_gtls_dynamic_t =
    gtls_glue::DynamicUpstreamOf<ngx_http_upstream_srv_conf_t, ngx_http_upstream_rr_peers_t, NGX_HTTP_UPSTREAM_BACKUP>;

// The scopes of one policy name (proxy_ssl_policy_name) whose trust the
// API may replace: the policies of that name that verify, of the http
// module and of the stream module. Each worker changes its own copies of
// them, the same way.
struct ngx_http_gtls_trusted_t {
    std::vector<gtls::Policy *>  policies;
    std::vector<ngx_gtls_session_cache_t *> sessions;         // their modules' TLS sessions
    std::vector<gtls::Trust>     configured;                  // each policy's, to go back to
    uint64_t                     configured_fingerprint = 0;  // of their configured trust and names
    uint64_t                     sequence = 0;                // of the state entry applied last
    bool                         pushed = false;              // trusts what the API gave
};

char *ngx_http_gtls_upstream_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_gtls_upstream_state_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// init_module: every eligible zone upstream, of http{} and of stream{},
// gets its shared state, and the servers last pushed for it before a
// reload if its configured servers did not change since.
ngx_int_t ngx_http_gtls_init_dynamic_upstreams(ngx_cycle_t *cycle, struct ngx_gtls_stream_export_t *stream);
// init_process: each worker closes idle connections and drops TLS sessions
// of servers the API removed.
ngx_int_t ngx_http_gtls_init_dynamic_process(ngx_cycle_t *cycle);
