#include "ngx_gtls_connection.h"

namespace {

int ngx_gtls_connection_index = -1;

std::string ngx_gtls_session_key(const gtls::Policy *policy, ngx_peer_connection_t *pc)
{
    std::string key(reinterpret_cast<const char *>(&policy), sizeof(policy));
    key.append(reinterpret_cast<const char *>(pc->sockaddr), pc->socklen);
    return key;
}

}  // namespace

ngx_int_t ngx_gtls_init_connection_index(ngx_log_t *log)
{
    if (ngx_gtls_connection_index == -1) {
        ngx_gtls_connection_index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
        if (ngx_gtls_connection_index == -1) {
            ngx_ssl_error(NGX_LOG_EMERG, log, 0, const_cast<char *>("SSL_get_ex_new_index() failed"));
            return NGX_ERROR;
        }
    }
    return NGX_OK;
}

ngx_gtls_connection_t *ngx_gtls_connection(const SSL *ssl)
{
    return static_cast<ngx_gtls_connection_t *>(SSL_get_ex_data(ssl, ngx_gtls_connection_index));
}

ngx_gtls_connection_t *ngx_gtls_connection(ngx_connection_t *c, bool create)
{
    ngx_gtls_connection_t *conn = ngx_gtls_connection(c->ssl->connection);
    if (conn != nullptr || !create || c->pool == nullptr) {
        return conn;
    }
    conn = ngx_gtls_pool_new<ngx_gtls_connection_t>(c->pool);
    if (conn == nullptr || SSL_set_ex_data(c->ssl->connection, ngx_gtls_connection_index, conn) == 0) {
        return nullptr;
    }
    return conn;
}

ngx_int_t ngx_gtls_set_session(ngx_gtls_session_cache_t *cache, const gtls::Policy *policy,
                               ngx_peer_connection_t *pc)
{
    try {
        auto it = cache->find(ngx_gtls_session_key(policy, pc));
        if (it == cache->end()) {
            return NGX_OK;
        }
        ngx_gtls_connection_t *conn = ngx_gtls_connection(pc->connection, true);
        if (conn == nullptr) {
            return NGX_ERROR;
        }
        // provisional: a full handshake replaces it with its own verdict
        conn->policy = policy;
        conn->verdict = it->second.verdict;
        return ngx_ssl_set_session(pc->connection, it->second.session);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, pc->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
}

void ngx_gtls_save_session(ngx_gtls_session_cache_t *cache, const gtls::Policy *policy,
                           ngx_peer_connection_t *pc)
{
    ngx_gtls_connection_t *conn = ngx_gtls_connection(pc->connection, false);
    if (conn == nullptr || conn->policy != policy || !conn->verdict
        || conn->verdict->status == gtls::Status::Failed) {
        return;
    }
    SSL_SESSION *session = ngx_ssl_get_session(pc->connection);
    if (session == nullptr) {
        return;
    }
    try {
        ngx_gtls_session_entry_t &entry = (*cache)[ngx_gtls_session_key(policy, pc)];
        if (entry.session != nullptr) {
            SSL_SESSION_free(entry.session);
        }
        entry.session = session;
        entry.verdict = conn->verdict;
    } catch (const std::exception &e) {
        SSL_SESSION_free(session);
        ngx_log_error(NGX_LOG_ERR, pc->log, 0, "gateway_tls: %s", e.what());
    }
}

void ngx_gtls_free_session_cache(ngx_gtls_session_cache_t *cache)
{
    if (cache == nullptr) {
        return;
    }
    for (auto &entry : *cache) {
        SSL_SESSION_free(entry.second.session);
    }
    delete cache;
}
