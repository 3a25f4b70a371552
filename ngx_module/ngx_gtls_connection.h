// What both modules keep about backend connections: the verdict a TLS
// connection was verified under, and TLS sessions cached per policy and
// peer so that a session never carries a verdict to another policy.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ngx_gtls_nginx.h"

#include "gtls_verify.h"

// Hung on the SSL object, owned by the connection's pool.
struct ngx_gtls_connection_t {
    const gtls::Policy                    *policy = nullptr;
    std::shared_ptr<const gtls::Verdict>   verdict;
};

struct ngx_gtls_session_entry_t {
    SSL_SESSION                           *session = nullptr;
    std::shared_ptr<const gtls::Verdict>   verdict;
};

using ngx_gtls_session_cache_t = std::map<std::string, ngx_gtls_session_entry_t>;

// The SSL ex_data index (one per module .so), made once.
ngx_int_t ngx_gtls_init_connection_index(ngx_log_t *log);
ngx_gtls_connection_t *ngx_gtls_connection(ngx_connection_t *c, bool create);
ngx_gtls_connection_t *ngx_gtls_connection(const SSL *ssl);

// peer.set_session / peer.save_session for a policy's connections.
ngx_int_t ngx_gtls_set_session(ngx_gtls_session_cache_t *cache, const gtls::Policy *policy,
                               ngx_peer_connection_t *pc);
void ngx_gtls_save_session(ngx_gtls_session_cache_t *cache, const gtls::Policy *policy,
                           ngx_peer_connection_t *pc);
void ngx_gtls_free_session_cache(ngx_gtls_session_cache_t *cache);
