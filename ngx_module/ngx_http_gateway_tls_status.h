// gateway_tls_status_zone and gateway_tls_status: the http side of the
// status endpoint (ngx_gtls_status holds the counters it shows).
#pragma once

#include "ngx_gtls_status.h"

#include <string>

char *ngx_http_gtls_status_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_gtls_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// A shared zone NAME of the size a directive's argument gives (at least 8
// pages, else the directive's error), for the http module's zones;
// nullptr (logged) when it cannot be had.
ngx_shm_zone_t *ngx_http_gtls_add_zone(ngx_conf_t *cf, ngx_command_t *cmd, const char *name,
                                       ngx_shm_zone_init_pt init);
// A whole response of `body`, for the module's endpoints.
ngx_int_t ngx_http_gtls_send(ngx_http_request_t *r, ngx_uint_t status, const char *content_type,
                             const std::string &body);
