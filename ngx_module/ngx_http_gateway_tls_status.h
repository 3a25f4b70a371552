// gateway_tls_status_zone and gateway_tls_status: the http side of the
// status endpoint (ngx_gtls_status holds the counters it shows).
#pragma once

#include "ngx_gtls_status.h"

char *ngx_http_gtls_status_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_gtls_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
