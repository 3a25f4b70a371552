#include "ngx_gtls_connection.h"

#include "ngx_gtls_client_pins.h"

namespace {

int ngx_gtls_connection_index = -1;
const ngx_gtls_hooks_t *ngx_gtls_hooks;
void (*ngx_gtls_stock_info_callback)(const SSL *, int, int);

int ngx_gtls_cert_verify_callback(X509_STORE_CTX *x509_ctx, void *arg)
{
    auto *ssl = static_cast<SSL *>(X509_STORE_CTX_get_ex_data(x509_ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
    auto *c = static_cast<ngx_connection_t *>(ngx_ssl_get_connection(ssl));
    try {
        return static_cast<const ngx_gtls_hooks_t *>(arg)->decide(x509_ctx, c);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0, "gateway_tls: %s", e.what());
    }
    X509_STORE_CTX_set_error(x509_ctx, X509_V_ERR_UNSPECIFIED);
    return 0;
}

// Called when the backend asks for a client certificate, whether or not
// sessions are reused: the policy's pair, else what nginx set (the scope's
// proxy_ssl_certificate, or none). 0 ends the handshake: a pair that
// cannot be set is never replaced by another silently.
int ngx_gtls_client_certificate_callback(SSL *ssl, void *arg)
{
    auto *c = static_cast<ngx_connection_t *>(ngx_ssl_get_connection(ssl));
    if (c == nullptr || c->idle || c->data == nullptr) {
        return 1;
    }
    try {
        const gtls::Policy *policy = static_cast<const ngx_gtls_hooks_t *>(arg)->policy(c);
        if (policy == nullptr || !policy->client_certificate) {
            return 1;
        }
        const gtls::KeyPair &pair = *policy->client_certificate;
        if (SSL_use_cert_and_key(ssl, pair.leaf.get(), pair.key.get(), pair.chain.get(), 1) != 1) {
            ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                          const_cast<char *>("gateway_tls: the client certificate of policy \"%s\" cannot be used"),
                          policy->name.c_str());
            return 0;
        }
        ngx_log_debug2(NGX_LOG_DEBUG_EVENT, c->log, 0, "gateway_tls: client certificate %s of policy \"%s\"",
                       pair.sha256.c_str(), policy->name.c_str());
        return 1;
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0, "gateway_tls: %s", e.what());
    }
    return 0;
}

void ngx_gtls_info_callback(const SSL *ssl, int where, int ret)
{
    if (ngx_gtls_stock_info_callback != nullptr) {
        ngx_gtls_stock_info_callback(ssl, where, ret);
    }
    if (!(where & SSL_CB_HANDSHAKE_DONE)) {
        return;
    }
    auto *c = static_cast<ngx_connection_t *>(ngx_ssl_get_connection(ssl));
    ngx_gtls_connection_t *conn = ngx_gtls_connection(ssl);
    // an idle keepalive connection's data is not its owner's
    if (c == nullptr || c->idle || c->data == nullptr || conn == nullptr || !conn->verdict) {
        return;
    }
    try {
        ngx_gtls_hooks->handshake_done(c, conn);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0, "gateway_tls: %s", e.what());
    }
}

int ngx_gtls_x509_error(gtls::Reason reason)
{
    switch (reason) {
    case gtls::Reason::Expired: return X509_V_ERR_CERT_HAS_EXPIRED;
    case gtls::Reason::Name:
    case gtls::Reason::San: return X509_V_ERR_HOSTNAME_MISMATCH;
    case gtls::Reason::NoCertificate: return X509_V_ERR_UNSPECIFIED;
    case gtls::Reason::Chain: return X509_V_ERR_CERT_UNTRUSTED;
    default: return X509_V_ERR_APPLICATION_VERIFICATION;
    }
}

std::string ngx_gtls_session_key(const ngx_gtls_balancer_t *b, ngx_peer_connection_t *pc)
{
    std::string key = b->binding.key();
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

namespace {

ngx_int_t ngx_gtls_set_session(ngx_peer_connection_t *pc, void *data)
{
    auto *b = static_cast<ngx_gtls_balancer_t *>(data);
    ngx_gtls_session_cache_t *cache = b->sessions;
    const gtls::Policy *policy = b->policy;
    try {
        auto it = cache->find(ngx_gtls_session_key(b, pc));
        ngx_log_debug3(NGX_LOG_DEBUG_EVENT, pc->log, 0, "gateway_tls: %s TLS session for \"%V\" under policy \"%s\"",
                       it == cache->end() ? "no" : "offering the", pc->name, policy->name.c_str());
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
        conn->binding = b->binding.key();
        return ngx_ssl_set_session(pc->connection, it->second.session);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, pc->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
}

void ngx_gtls_save_session(ngx_peer_connection_t *pc, void *data)
{
    auto *b = static_cast<ngx_gtls_balancer_t *>(data);
    ngx_gtls_session_cache_t *cache = b->sessions;
    const gtls::Policy *policy = b->policy;
    ngx_gtls_connection_t *conn = ngx_gtls_connection(pc->connection, false);
    if (conn == nullptr || conn->policy != policy || !b->binding.has_key(conn->binding) || !conn->verdict
        || conn->verdict->status == gtls::Status::Failed) {
        ngx_log_debug1(NGX_LOG_DEBUG_EVENT, pc->log, 0,
                       "gateway_tls: TLS session for \"%V\" not kept: not verified under this binding", pc->name);
        return;
    }
    SSL_SESSION *session = ngx_ssl_get_session(pc->connection);
    if (session == nullptr) {
        return;
    }
    try {
        ngx_gtls_session_entry_t &entry = (*cache)[ngx_gtls_session_key(b, pc)];
        if (entry.session != nullptr) {
            SSL_SESSION_free(entry.session);
        }
        entry.session = session;
        entry.verdict = conn->verdict;
        entry.policy = policy;
    } catch (const std::exception &e) {
        SSL_SESSION_free(session);
        ngx_log_error(NGX_LOG_ERR, pc->log, 0, "gateway_tls: %s", e.what());
    }
}

void ngx_gtls_close_cached(ngx_connection_t *c)
{
    if (c->ssl) {
        c->ssl->no_wait_shutdown = 1;
        c->ssl->no_send_shutdown = 1;
        (void) ngx_ssl_shutdown(c);
    }
    ngx_destroy_pool(c->pool);
    ngx_close_connection(c);
}

ngx_int_t ngx_gtls_get_peer(ngx_peer_connection_t *pc, void *data)
{
    auto *b = static_cast<ngx_gtls_balancer_t *>(data);

    ngx_int_t rc = b->get(pc, b->data);
    if (rc != NGX_DONE || pc->connection == nullptr) {
        return rc;
    }

    // a cached keepalive connection: nginx matched it by address only
    ngx_connection_t *c = pc->connection;
    ngx_gtls_connection_t *conn = c->ssl ? ngx_gtls_connection(c, false) : nullptr;
    if (conn != nullptr && conn->policy == b->policy && b->binding.has_key(conn->binding) && conn->verdict
        && conn->verdict->status != gtls::Status::Failed) {
        ngx_log_debug1(NGX_LOG_DEBUG_EVENT, pc->log, 0,
                       "gateway_tls: keepalive connection to \"%V\" reused under its binding", pc->name);
        *b->verdict = conn->verdict;
        return NGX_DONE;
    }

    ngx_log_error(NGX_LOG_INFO, pc->log, 0,
                  "gateway_tls: not reusing a keepalive connection to \"%V\" made under another "
                  "policy, client certificate or name",
                  pc->name);
    ngx_gtls_close_cached(c);
    pc->connection = nullptr;
    pc->cached = 0;
    return NGX_OK;  // the balancer's choice stands: connect afresh
}

void ngx_gtls_free_peer(ngx_peer_connection_t *pc, void *data, ngx_uint_t state)
{
    auto *b = static_cast<ngx_gtls_balancer_t *>(data);
    b->free(pc, b->data, state);
}

void ngx_gtls_notify_peer(ngx_peer_connection_t *pc, void *data, ngx_uint_t type)
{
    auto *b = static_cast<ngx_gtls_balancer_t *>(data);
    b->notify(pc, b->data, type);
}

}  // namespace

void ngx_gtls_wrap_balancer(ngx_peer_connection_t *peer, ngx_gtls_balancer_t *b)
{
    b->data = peer->data;
    b->get = peer->get;
    b->free = peer->free;
    b->notify = peer->notify;
    b->set_session = peer->set_session;
    b->save_session = peer->save_session;

    peer->data = b;
    peer->get = ngx_gtls_get_peer;
    peer->free = ngx_gtls_free_peer;
    peer->notify = b->notify ? ngx_gtls_notify_peer : nullptr;
    peer->set_session = ngx_gtls_set_session;
    peer->save_session = ngx_gtls_save_session;
}

void ngx_gtls_install_ssl_hooks(SSL_CTX *ctx, const ngx_gtls_hooks_t *hooks)
{
    ngx_gtls_hooks = hooks;
    SSL_CTX_set_cert_verify_callback(ctx, ngx_gtls_cert_verify_callback, const_cast<ngx_gtls_hooks_t *>(hooks));
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, SSL_CTX_get_verify_callback(ctx));
    SSL_CTX_set_cert_cb(ctx, ngx_gtls_client_certificate_callback, const_cast<ngx_gtls_hooks_t *>(hooks));
    auto *info = SSL_CTX_get_info_callback(ctx);
    if (info != ngx_gtls_info_callback) {
        ngx_gtls_stock_info_callback = info;
        SSL_CTX_set_info_callback(ctx, ngx_gtls_info_callback);
    }
}

gtls::Binding ngx_gtls_binding(const gtls::Policy *policy, const ngx_ssl_t *ssl, std::string_view reference_name,
                               const ngx_str_t &host, const ngx_str_t *client_certificate)
{
    gtls::Binding binding;
    binding.policy = policy;
    binding.tls_context = ssl != nullptr ? ssl->ctx : nullptr;
    binding.trust_generation = policy->trust_generation;
    binding.reference_name = reference_name;
    binding.upstream = ngx_gtls_sv(host);
    if (client_certificate != nullptr) {
        binding.client_certificate = ngx_gtls_sv(*client_certificate);
    }
    return binding;
}

ngx_int_t ngx_gtls_start_backend(ngx_log_t *log, ngx_gtls_backend_t *backend, const gtls::Policy *policy,
                                 std::optional<gtls::Binding> binding, ngx_gtls_session_cache_t *sessions,
                                 ngx_peer_connection_t *peer)
{
    if (!binding) {
        return NGX_ERROR;
    }
    backend->policy = policy;
    backend->verdict.reset();
    backend->balancer.policy = policy;
    backend->balancer.binding = std::move(*binding);
    backend->balancer.sessions = sessions;
    backend->balancer.verdict = &backend->verdict;
    ngx_gtls_wrap_balancer(peer, &backend->balancer);
    ngx_log_debug1(NGX_LOG_DEBUG_EVENT, log, 0, "gateway_tls: backend goes out under policy \"%s\"",
                   policy->name.c_str());
    return NGX_OK;
}

int ngx_gtls_decide(X509_STORE_CTX *x509_ctx, ngx_connection_t *c, ngx_gtls_backend_t *backend,
                    const gtls::Policy *policy, bool stock_verify, ngx_gtls_reference_name_pt reference_name,
                    void *owner, ngx_str_t *peer_name, ngx_gtls_status_t *status)
{
    if (policy == nullptr) {
        int rc = X509_verify_cert(x509_ctx);
        return stock_verify ? rc : 1;
    }
    ngx_gtls_connection_t *conn = ngx_gtls_connection(c, true);
    if (backend == nullptr || conn == nullptr) {
        X509_STORE_CTX_set_error(x509_ctx, X509_V_ERR_OUT_OF_MEM);
        return 0;
    }
    try {
        auto verdict = std::make_shared<gtls::Verdict>(gtls::verify(
            *policy, X509_STORE_CTX_get0_cert(x509_ctx), X509_STORE_CTX_get0_untrusted(x509_ctx),
            reference_name(owner, policy)));
        backend->policy = policy;
        backend->verdict = verdict;
        conn->policy = policy;
        conn->verdict = verdict;
        conn->binding = backend->balancer.binding.key();
        ngx_gtls_count(status, policy, *verdict, c->log);
        ngx_log_debug2(NGX_LOG_DEBUG_EVENT, c->log, 0, "gateway_tls: policy \"%s\" verdict %s",
                       policy->name.c_str(), verdict->text().c_str());
        if (verdict->status == gtls::Status::Failed) {
            return ngx_gtls_reject(x509_ctx, c->log, *policy, peer_name, *verdict);
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0, "gateway_tls: %s", e.what());
        X509_STORE_CTX_set_error(x509_ctx, X509_V_ERR_OUT_OF_MEM);
        return 0;
    }
    X509_STORE_CTX_set_error(x509_ctx, X509_V_OK);
    return 1;
}

void ngx_gtls_resumed_verdict(ngx_gtls_backend_t *backend, const ngx_gtls_connection_t *conn)
{
    if (backend != nullptr && backend->policy == conn->policy) {
        backend->verdict = conn->verdict;
    }
}

int ngx_gtls_reject(X509_STORE_CTX *x509_ctx, ngx_log_t *log, const gtls::Policy &policy,
                    ngx_str_t *upstream, const gtls::Verdict &verdict)
{
    ngx_log_error(NGX_LOG_ERR, log, 0,
                  "gateway_tls: backend certificate rejected: policy \"%s\", upstream \"%V\", "
                  "reason \"%s\" (%s), peer SANs \"%s\", peer SPKI sha256 \"%s\"",
                  policy.name.c_str(), upstream, gtls::reason_name(verdict.reason), verdict.detail.c_str(),
                  verdict.peer.sans_text().c_str(), verdict.peer.spki_sha256_base64().c_str());
    X509_STORE_CTX_set_error(x509_ctx, ngx_gtls_x509_error(verdict.reason));
    return 0;
}

const ngx_gtls_variable_t ngx_gtls_variables[] = {
    {ngx_string("upstream_ssl_verify"), NGX_GTLS_VAR_VERIFY},
    {ngx_string("upstream_ssl_verify_mode"), NGX_GTLS_VAR_VERIFY_MODE},
    {ngx_string("upstream_ssl_policy"), NGX_GTLS_VAR_POLICY},
    {ngx_string("upstream_ssl_peer_cert_sha256"), NGX_GTLS_VAR_PEER_CERT_SHA256},
    {ngx_string("upstream_ssl_peer_spki_sha256"), NGX_GTLS_VAR_PEER_SPKI_SHA256},
    {ngx_string("upstream_ssl_peer_san"), NGX_GTLS_VAR_PEER_SAN},
    {ngx_string("upstream_ssl_verified_by"), NGX_GTLS_VAR_VERIFIED_BY},
    {ngx_string("ssl_client_spki_sha256"), NGX_GTLS_VAR_CLIENT_SPKI_SHA256},
    {ngx_string("ssl_client_cert_sha256"), NGX_GTLS_VAR_CLIENT_CERT_SHA256},
    {ngx_string("ssl_client_pin"), NGX_GTLS_VAR_CLIENT_PIN},
    {ngx_null_string, NGX_GTLS_VAR_VERIFY}};

ngx_int_t ngx_gtls_variable(ngx_pool_t *pool, ngx_variable_value_t *v, ngx_gtls_variable_e which,
                            const ngx_gtls_backend_t *backend, ngx_connection_t *c,
                            const ngx_gtls_client_pins_t *pins)
{
    const gtls::Policy *policy = backend ? backend->policy : nullptr;
    const gtls::Verdict *verdict = backend && backend->verdict ? backend->verdict.get() : nullptr;
    try {
        switch (which) {
        case NGX_GTLS_VAR_VERIFY:
            return ngx_gtls_variable_text(pool, v, verdict ? verdict->text() : "NONE");
        case NGX_GTLS_VAR_VERIFY_MODE:
            return ngx_gtls_variable_text(pool, v, gtls::mode_name(policy ? policy->mode : gtls::Mode::Off));
        case NGX_GTLS_VAR_POLICY:
            return ngx_gtls_variable_text(pool, v, policy ? policy->name : "");
        case NGX_GTLS_VAR_CLIENT_SPKI_SHA256:
            return ngx_gtls_variable_text(pool, v, ngx_gtls_client_variable(c, pins, NGX_GTLS_CLIENT_SPKI));
        case NGX_GTLS_VAR_CLIENT_CERT_SHA256:
            return ngx_gtls_variable_text(pool, v, ngx_gtls_client_variable(c, pins, NGX_GTLS_CLIENT_CERT));
        case NGX_GTLS_VAR_CLIENT_PIN:
            return ngx_gtls_variable_text(pool, v, ngx_gtls_client_variable(c, pins, NGX_GTLS_CLIENT_PIN));
        default:
            break;
        }
        if (verdict == nullptr) {
            v->not_found = 1;
            return NGX_OK;
        }
        switch (which) {
        case NGX_GTLS_VAR_PEER_CERT_SHA256:
            return ngx_gtls_variable_text(pool, v, verdict->peer.cert_sha256_hex());
        case NGX_GTLS_VAR_PEER_SPKI_SHA256:
            return ngx_gtls_variable_text(pool, v, verdict->peer.spki_sha256_base64());
        case NGX_GTLS_VAR_PEER_SAN:
            return ngx_gtls_variable_text(pool, v, verdict->peer.sans_text());
        case NGX_GTLS_VAR_VERIFIED_BY:
            return ngx_gtls_variable_text(pool, v, verdict->verified_by);
        default:
            break;
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
    v->not_found = 1;
    return NGX_OK;
}

ngx_int_t ngx_gtls_variable_text(ngx_pool_t *pool, ngx_variable_value_t *v, const std::string &text)
{
    auto *data = static_cast<u_char *>(ngx_pnalloc(pool, text.size() + 1));
    if (data == nullptr) {
        return NGX_ERROR;
    }
    ngx_memcpy(data, text.data(), text.size());
    return ngx_gtls_variable_bytes(v, data, text.size());
}
