// Who may use an operator's interface of the http module (the upstream
// API, the status endpoint): an address in its allow list, and its bearer
// token (gtls_access.h). Neither is enough alone: nginx proxies a tenant's
// request from nginx's own address.
#pragma once

#include "ngx_gtls_nginx.h"

#include "gtls_access.h"

// gateway_tls_upstream_api_allow / gateway_tls_status_allow, and
// gateway_tls_upstream_api_token_file / gateway_tls_status_token_file.
struct ngx_http_gtls_access_t {
    ngx_array_t               *allow;       // ngx_cidr_t; no one by default
    ngx_flag_t                 allow_unix;  // "unix:"
    gtls::AccessTokenDigest   *token;       // no token: the interface is not served
    ngx_flag_t                 serves;      // this location serves the interface
};

char *ngx_http_gtls_access_allow(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_gtls_access_token_file(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// Inherits what a location does not set; a location serving the interface
// (`directive`) without a token (`token_directive`) fails the configuration.
char *ngx_http_gtls_merge_access(ngx_conf_t *cf, ngx_http_gtls_access_t *conf, const ngx_http_gtls_access_t *prev,
                                 const char *directive, const char *token_directive);

// NGX_OK when the request may use the interface `what`; else the status to
// answer (403 for an address not in `allow_directive`, 401 for the token,
// with WWW-Authenticate), the reason logged.
ngx_int_t ngx_http_gtls_access_check(ngx_http_request_t *r, const ngx_http_gtls_access_t &access, const char *what,
                                     const char *allow_directive);
