// gateway_tls_certificate: the server side of a listener's certificate
// replaced through the upstream API (ngx_http_gateway_tls_upstream_api.cc
// takes the PUT and keeps it in the state zone), in both modules.

#include "ngx_gtls_certificates.h"

#include <cstdlib>

#include "gtls_upstream_api.h"

namespace {

// OpenSSL's certificate step, after the SNI step has switched to the
// server's context: the key pair pushed last, in place of every
// certificate the context holds; the handshake holds its own references.
int ngx_gtls_certificate_handshake(ngx_ssl_conn_t *ssl_conn, void *arg)
{
    auto *c = static_cast<ngx_gtls_certificate_t *>(arg);
    if (c->catch_up->run != nullptr) {
        c->catch_up->run(c->catch_up->data);
    }
    const std::shared_ptr<const gtls::KeyPair> pair = c->pushed;
    auto *conn = static_cast<ngx_connection_t *>(SSL_get_ex_data(ssl_conn, ngx_ssl_connection_index));
    if (pair == nullptr) {
        ngx_log_debug1(NGX_LOG_DEBUG_EVENT, conn->log, 0, "gateway_tls: certificate \"%s\" as configured",
                       c->name.c_str());
        return 1;
    }
    SSL_certs_clear(ssl_conn);
    // (it takes references of its own to all three)
    if (SSL_use_cert_and_key(ssl_conn, pair->leaf.get(), pair->key.get(), pair->chain.get(), 1) != 1) {
        // fail closed: no handshake with a certificate other than the one pushed
        ngx_ssl_error(NGX_LOG_ERR, conn->log, 0, const_cast<char *>("gateway_tls: certificate \"%s\" pushed cannot be used"),
                      c->name.c_str());
        return 0;
    }
    ngx_log_debug2(NGX_LOG_DEBUG_EVENT, conn->log, 0, "gateway_tls: certificate \"%s\" from the API (entry %uL)",
                   c->name.c_str(), c->sequence);
    return 1;
}

}  // namespace

char *ngx_gtls_name_certificate(ngx_conf_t *cf, ngx_gtls_certificates_t **certificates,
                                const ngx_gtls_catch_up_t *catch_up, const ngx_str_t &name, ngx_ssl_t *ssl,
                                bool variables)
{
    const std::string text(reinterpret_cast<const char *>(name.data), name.len);
    if (!gtls::is_api_name(text)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "gateway_tls_certificate \"%V\": not a name the upstream API takes",
                           &name);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    X509 *leaf = ssl != nullptr && ssl->ctx != nullptr ? SSL_CTX_get0_certificate(ssl->ctx) : nullptr;
    if (leaf == nullptr || variables) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "gateway_tls_certificate \"%V\" is for a server with ssl_certificate (without variables)",
                           &name);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    try {
        if (*certificates == nullptr) {
            *certificates = ngx_gtls_pool_new<ngx_gtls_certificates_t>(cf->pool);
            if (*certificates == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        }
        const std::string sha256 = gtls::certificate_sha256(leaf);
        auto [it, added] = (*certificates)->try_emplace(text);
        ngx_gtls_certificate_t &c = it->second;
        if (added) {
            c.name = text;
            c.catch_up = catch_up;
            c.configured_sha256 = sha256;
            c.configured_fingerprint = std::strtoull(sha256.substr(0, 16).c_str(), nullptr, 16);
        } else if (c.configured_sha256 != sha256) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "gateway_tls_certificate \"%V\" names servers whose ssl_certificate differ", &name);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        SSL_CTX_set_cert_cb(ssl->ctx, ngx_gtls_certificate_handshake, &c);
    } catch (const std::bad_alloc &) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

ngx_gtls_certificate_t *ngx_gtls_find_certificate(ngx_gtls_certificates_t *certificates, const std::string &name)
{
    if (certificates == nullptr) return nullptr;
    auto it = certificates->find(name);
    return it != certificates->end() ? &it->second : nullptr;
}

bool ngx_gtls_take_certificate(ngx_log_t *log, ngx_gtls_certificate_t *c, const std::string &json,
                               uint64_t sequence)
{
    auto pair = std::make_shared<gtls::KeyPair>();
    std::string error;
    try {
        const gtls::ListenerCertificate pushed = gtls::parse_listener_certificate(json, c->name);
        gtls::key_pair_from_pem(pushed.certificate, pushed.key, pair.get(), &error);
    } catch (const gtls::ApiError &e) {
        error = e.what();
    }
    if (!error.empty()) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "gateway_tls: certificate \"%s\" serves its configured certificate: the one pushed cannot be read here: %s",
                      c->name.c_str(), error.c_str());
        return false;
    }
    c->pushed = std::move(pair);
    c->sequence = sequence;
    return true;
}
