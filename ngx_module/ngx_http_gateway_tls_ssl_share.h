// ngx_http_gateway_tls_ssl_share_module: one SSL context per distinct set
// of TLS client settings instead of one per `proxy_pass https://` or
// `grpc_pass grpcs://` location (see ngx_http_gateway_tls_ssl_share.cc).
#pragma once

#include "ngx_gtls_nginx.h"

extern "C" ngx_module_t  ngx_http_gateway_tls_ssl_share_module;

// Gives the current location the shared SSL context for its TLS settings
// if the share module deferred the upstream module's own. Call it from a
// merge_loc_conf that runs after the proxy's and grpc's (the settings are
// final then) with the location's conf of that module, kind 0 for proxy
// and 1 for grpc; NGX_OK when nothing was deferred.
ngx_int_t ngx_http_gtls_adopt_shared_ssl(ngx_conf_t *cf, ngx_http_upstream_conf_t *ucf, ngx_uint_t kind);
