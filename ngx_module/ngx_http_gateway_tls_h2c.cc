// gateway_tls_h2c_preface: HTTP/2 by prior knowledge beside HTTP/1.x on a
// cleartext port, for nginx before 1.25.1, where a cleartext `listen ...
// http2` takes HTTP/2 alone (from 1.25.1 nginx does it with `http2 on`,
// and refuses HTTP/2 requests to servers without it: the directive is
// refused there). Each new connection of a server that asks for it is
// looked at before nginx reads it: a client whose first bytes are the
// HTTP/2 connection preface goes to nginx's HTTP/2 (ngx_http_v2_init, as
// `listen ... http2` would), any other to nginx's HTTP/1.x reading,
// untouched (the bytes are peeked, not read).

#include "ngx_http_gateway_tls_h2c.h"
#include "ngx_http_gateway_tls_module.h"

#include <sys/socket.h>

#if (NGX_HTTP_V2 && nginx_version < 1025001)

namespace {

// RFC 9113 3.4
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLength = sizeof kPreface - 1;

// nginx's first read handler of a cleartext HTTP connection (its private
// ngx_http_wait_request_handler), as ngx_http_init_connection left it
ngx_event_handler_pt ngx_http_gtls_http1_handler = nullptr;

void ngx_http_gtls_sniff_preface(ngx_event_t *rev)
{
    auto *c = static_cast<ngx_connection_t *>(rev->data);
    if (!rev->timedout && !c->close) {
        u_char head[kPrefaceLength];
        ssize_t n = recv(c->fd, head, kPrefaceLength, MSG_PEEK);
        if (n == -1 && ngx_socket_errno == NGX_EAGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_close_connection(c);
            }
            return;
        }
        if (n > 0 && ngx_memcmp(head, kPreface, static_cast<size_t>(n)) == 0) {
            if (static_cast<size_t>(n) == kPrefaceLength) {
                ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0, "gateway_tls h2c preface: HTTP/2");
                rev->handler = ngx_http_v2_init;
                ngx_http_v2_init(rev);
                return;
            }
            // the rest of the preface comes with the next read event where
            // events are edge-triggered (epoll); level-triggered ones would
            // fire again at once for the bytes left unread
            if (ngx_event_flags & NGX_USE_CLEAR_EVENT) {
                return;
            }
        }
    }
    // HTTP/1.x, a timeout, an error or the peer gone: nginx's own handling
    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0, "gateway_tls h2c preface: HTTP/1");
    rev->handler = ngx_http_gtls_http1_handler;
    rev->handler(rev);
}

// The listening sockets' handler: nginx's, then the sniffing first read
// handler where the connection's default server asks for it and nginx
// would read HTTP/1.x in cleartext.
void ngx_http_gtls_init_connection(ngx_connection_t *c)
{
    // with data at hand (a deferred accept) nginx reads it at once, and the
    // connection may be gone when it returns
    const bool reads_at_once = c->read->ready;
    ngx_http_init_connection(c);
    if (reads_at_once || c->fd == (ngx_socket_t) -1) {
        return;
    }
    auto *hc = static_cast<ngx_http_connection_t *>(c->data);
    auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(ngx_http_get_module_srv_conf(hc->conf_ctx, ngx_http_gateway_tls_module));
    if (scf->h2c_preface != 1 || hc->ssl || hc->proxy_protocol || hc->addr_conf->http2) {
        return;
    }
    if (ngx_http_gtls_http1_handler == nullptr) {
        ngx_http_gtls_http1_handler = c->read->handler;
    }
    if (c->read->handler == ngx_http_gtls_http1_handler) {
        c->read->handler = ngx_http_gtls_sniff_preface;
    }
}

}  // namespace

#endif

char *ngx_http_gtls_h2c_preface(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
#if (nginx_version >= 1025001)
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"gateway_tls_h2c_preface\" is for nginx before 1.25.1; this one does it with \"http2 on\"");
    return static_cast<char *>(NGX_CONF_ERROR);
#elif !(NGX_HTTP_V2)
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"gateway_tls_h2c_preface\" needs nginx built with HTTP/2");
    return static_cast<char *>(NGX_CONF_ERROR);
#else
    return ngx_conf_set_flag_slot(cf, cmd, conf);
#endif
}

ngx_int_t ngx_http_gtls_init_h2c_preface(ngx_cycle_t *cycle)
{
#if (NGX_HTTP_V2 && nginx_version < 1025001)
    auto *ls = static_cast<ngx_listening_t *>(cycle->listening.elts);
    for (ngx_uint_t i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].handler == ngx_http_init_connection) {
            ls[i].handler = ngx_http_gtls_init_connection;
        }
    }
#else
    (void) cycle;
#endif
    return NGX_OK;
}
