// gateway_tls_h2c_preface (ngx_http_gateway_tls_h2c.cc).
#pragma once

#include "ngx_gtls_nginx.h"

// The directive's setter: ngx_conf_set_flag_slot, on an nginx that needs it.
char *ngx_http_gtls_h2c_preface(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// Puts the preface check in front of nginx's handler of every HTTP
// listening socket of `cycle` (init_module: the sockets are the cycle's).
ngx_int_t ngx_http_gtls_init_h2c_preface(ngx_cycle_t *cycle);
