// What the modules assume about other nginx modules' configuration that
// differs between nginx versions, in one place.
#pragma once

#include "ngx_gtls_nginx.h"

extern "C" {
#include <ngx_stream.h>
}

// ngx_stream_ssl_module's server conf (public header): renamed in 1.25.5
// when the module gained a main conf.
#if (nginx_version >= 1025005)
using ngx_gtls_stream_ssl_srv_conf_t = ngx_stream_ssl_srv_conf_t;
#else
using ngx_gtls_stream_ssl_srv_conf_t = ngx_stream_ssl_conf_t;
#endif
