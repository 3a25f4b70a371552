// Everything the modules assume about other modules' private configuration
// structs, and what one of our .so files reads from the other, in one
// place. Each assumption is taken from what the running nginx offers (a
// module's directive table gives the offset each of its directives writes)
// and checked against it at `nginx -t`; where a check fails, the
// configuration is refused with a line saying which assumption and which
// nginx, never guessed at.
#pragma once

#include <cstdint>

// A test build only (the Makefile's layout-fault modules, for t/190): 1
// makes the http module expect proxy's and grpc's upstream conf one field
// further, the stream module read the proxy's ngx_ssl_t one field too far
// and export another version of its status struct, so that nginx's
// refusals of each can be shown.
#ifndef NGX_GTLS_LAYOUT_FAULT
#define NGX_GTLS_LAYOUT_FAULT 0
#endif

#include "ngx_gtls_certificates.h"
#include "ngx_gtls_dynamic_upstream.h"
#include "ngx_gtls_nginx.h"
#include "ngx_gtls_status.h"

extern "C" {
#include <ngx_stream.h>
}

// ngx_stream_ssl_module's server conf (a public header): renamed in 1.25.5,
// when the module gained a main conf.
#if (nginx_version >= 1025005)
using ngx_gtls_stream_ssl_srv_conf_t = ngx_stream_ssl_srv_conf_t;
#else
using ngx_gtls_stream_ssl_srv_conf_t = ngx_stream_ssl_conf_t;
#endif

// ---- http: proxy and grpc ---------------------------------------------------

// ngx_http_proxy_module's and ngx_http_grpc_module's loc confs begin with
// their ngx_http_upstream_conf_t (both are private). Checked: the module's
// PREFIX_connect_timeout and PREFIX_ssl_verify write where those fields
// lie in an ngx_http_upstream_conf_t at offset 0. `ctx_index`: the
// module's, or -1 when nginx has no such module.
ngx_int_t ngx_gtls_find_http_upstream_conf(ngx_conf_t *cf, const char *module, const char *prefix,
                                           ngx_int_t *ctx_index);

#if (NGX_GTLS_SSL_SHARE)
// For the SSL context share module (nginx before 1.23.1): where proxy's or
// grpc's TLS client settings lie in its loc conf, and its private "create
// a context" flag (ngx_uint_t ssl, set by an https:// or grpcs:// pass),
// the field before PREFIX_ssl_protocols in 1.22. `found` only when the
// settings lie as in 1.22.1 (each directive's offset right after the
// previous field); otherwise each location keeps its own context.
struct ngx_gtls_upstream_ssl_layout_t {
    ngx_int_t  ctx_index = -1;
    bool       found = false;
    size_t     create = 0, protocols = 0, ciphers = 0, verify_depth = 0, trusted_certificate = 0, crl = 0,
               conf_commands = 0;
};
void ngx_gtls_find_upstream_ssl_layout(ngx_conf_t *cf, const char *module, const char *prefix,
                                       ngx_gtls_upstream_ssl_layout_t *layout);
#endif

// ---- http: cleartext connections (ngx_http_gateway_tls_h2c.cc) ------------

// gateway_tls_h2c_preface wraps the listening sockets whose handler is
// nginx's public ngx_http_init_connection, and replaces the first read
// handler it leaves on a cleartext connection (nginx's private HTTP/1.x
// reader, learnt from the first such connection; a connection with any
// other is left alone) with one that hands a connection beginning with the
// HTTP/2 preface to the public ngx_http_v2_init, as `listen ... http2`
// would. Checked by t/066-h2c-preface.t on every nginx tested.

// ---- stream proxy ---------------------------------------------------------

// Where ngx_stream_proxy_module keeps what the stream module reads, by
// offset into its (private) srv conf: the directives' own offsets, and the
// ngx_ssl_t pointer, which has no directive and follows
// proxy_ssl_conf_command's array in nginx 1.21 to 1.30.
struct ngx_gtls_stream_proxy_layout_t {
    ngx_int_t  ctx_index = -1;
    size_t     ssl_enable = 0, ssl_name = 0, ssl_verify = 0, ssl = 0, ssl_certificate = 0;
    ngx_int_t  ssl_module_ctx_index = -1;  // ngx_stream_ssl_module: the server's own TLS
};
// NGX_ERROR (logged) when the stream proxy or one of its directives is not there.
ngx_int_t ngx_gtls_find_stream_proxy_layout(ngx_conf_t *cf, ngx_gtls_stream_proxy_layout_t *layout);
// The ngx_ssl_t of a server's proxy conf, after the proxy merged it;
// NGX_ERROR (logged) where the field does not hold one the proxy made in
// this configuration (null, or one whose log is this configuration's).
ngx_int_t ngx_gtls_stream_proxy_ssl(ngx_conf_t *cf, const ngx_gtls_stream_proxy_layout_t &layout, void *pscf,
                                    ngx_ssl_t **ssl);

// ---- between our two .so files --------------------------------------------

// The first member of ngx_stream_gateway_tls_module's main conf: what the
// http module (another .so) reads and writes. Its status endpoint reads
// the counters; its upstream API replaces the servers of the stream
// upstreams (`init_upstreams` fills the set at init_module, before the
// workers start) and the trust of the stream policies (`status` lists
// them, `sessions` holds their TLS sessions) and the certificates of its
// servers (`certificates`: gateway_tls_certificate, by name), and gives
// the stream module `catch_up`, which each stream session calls before its
// balancer starts, and each handshake of a named certificate, so that it
// sees what another worker took. A new field, or a change to
// ngx_gtls_status_t, gtls::Policy, ngx_gtls_certificate_t or
// ngx_gtls_dynamic_upstream.h, takes a new version.
struct ngx_gtls_stream_export_t {
    static constexpr uint32_t kMagic = 0x67746c73;  // "gtls"
    static constexpr uint32_t kVersion = NGX_GTLS_LAYOUT_FAULT ? 1000 : 3;
    uint32_t                   magic = kMagic;
    uint32_t                   version = kVersion;
    size_t                     status_size = sizeof(ngx_gtls_status_t);
    // the other types one .so reads of the other's: a change to one that
    // forgets kVersion still refuses to load the pair
    size_t                     policy_size = sizeof(gtls::Policy);
    size_t                     upstream_set_size = sizeof(ngx_gtls_upstream_set_t);
    size_t                     sessions_size = sizeof(ngx_gtls_session_cache_t);
    size_t                     certificate_size = sizeof(ngx_gtls_certificate_t);
    ngx_gtls_status_t         *status = nullptr;
    ngx_int_t                (*init_upstreams)(ngx_cycle_t *cycle, ngx_gtls_upstream_set_t *set) = nullptr;
    ngx_gtls_session_cache_t  *sessions = nullptr;
    ngx_gtls_catch_up_t        catch_up;
    ngx_gtls_certificates_t   *certificates = nullptr;
};
// The stream module's export in `cycle` when that module is loaded and
// configured; null without it. `*mismatch` (and a log line at `log`): it
// is there, but of another build of this project.
ngx_gtls_stream_export_t *ngx_gtls_stream_export(ngx_cycle_t *cycle, ngx_log_t *log, bool *mismatch);
