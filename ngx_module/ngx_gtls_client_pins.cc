#include "ngx_gtls_client_pins.h"

#include <openssl/evp.h>

#include <string_view>

#include "ngx_gtls_policy_conf.h"

namespace {

// The pins of an SSL_CTX (SSL_CTX ex_data), for the SNI step.
int ngx_gtls_client_pins_index = -1;

ngx_int_t ngx_gtls_collect_pins(ngx_conf_t *cf, ngx_array_t *specs, std::vector<gtls::Pin> *pins)
{
    if (specs == NGX_CONF_UNSET_PTR || specs == nullptr) {
        return NGX_OK;
    }
    auto *spec = static_cast<ngx_str_t *>(specs->elts);
    for (ngx_uint_t i = 0; i < specs->nelts; i++) {
        std::string error;
        auto pin = gtls::parse_pin_spec(ngx_gtls_sv(spec[i]), &error);
        if (!pin) {  // validated by the directive already
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "gateway_tls: %s", error.c_str());
            return NGX_ERROR;
        }
        pins->push_back(*pin);
    }
    return NGX_OK;
}

void ngx_gtls_count_client(const ngx_gtls_client_pins_t *pins, gtls::Verdict verdict, ngx_log_t *log)
{
    ngx_gtls_count(pins->status, &pins->record, verdict, log);
}

// The server side of the handshake: OpenSSL's chain check (with nginx's
// verify callback and the server's ssl_client_certificate), then the pins.
// Returning 0 ends the handshake with an alert.
int ngx_gtls_client_verify_callback(X509_STORE_CTX *x509_ctx, void *arg)
{
    const auto *pins = static_cast<const ngx_gtls_client_pins_t *>(arg);
    auto *ssl = static_cast<SSL *>(X509_STORE_CTX_get_ex_data(x509_ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
    auto *c = static_cast<ngx_connection_t *>(ngx_ssl_get_connection(ssl));
    ngx_log_t *log = c != nullptr ? c->log : ngx_cycle->log;

    // nginx's verify callback admits everything and leaves the error in the
    // context, for $ssl_client_verify; the chain passed if none is left
    int chain = X509_verify_cert(x509_ctx);
    bool chain_ok = chain > 0 && X509_STORE_CTX_get_error(x509_ctx) == X509_V_OK;
    X509 *leaf = X509_STORE_CTX_get0_cert(x509_ctx);

    if (pins->handshake == NGX_GTLS_CLIENT_HANDSHAKE_FALLBACK) {
        if (!chain_ok) {
            // optional_no_ca forgives an unknown issuer only: a certificate
            // whose issuer's name is trusted but whose signature is not
            // (another CA of the same name) would get nginx's 400. Its
            // verdict stays a failure, one that optional_no_ca admits.
            int error = X509_STORE_CTX_get_error(x509_ctx);
            ngx_log_debug2(NGX_LOG_DEBUG_EVENT, log, 0,
                           "gateway_tls: client certificate admitted by fallback: %s (%d)",
                           X509_verify_cert_error_string(error), error);
            X509_STORE_CTX_set_error(x509_ctx, gtls::fallback_chain_error(error));
        }
        return 1;
    }

    try {
        const gtls::Verdict verdict = gtls::verify_client(
            pins->record.pins, leaf,
            pins->verify == NGX_GTLS_VERIFY_CLIENT_OPTIONAL_NO_CA ? gtls::ClientCa::NotRequired : gtls::ClientCa::Required,
            chain_ok ? std::string() : X509_verify_cert_error_string(X509_STORE_CTX_get_error(x509_ctx)));
        ngx_gtls_count_client(pins, verdict, log);
        if (verdict.status == gtls::Status::Success) {
            X509_STORE_CTX_set_error(x509_ctx, X509_V_OK);
            return 1;
        }
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "gateway_tls: client certificate rejected: pins \"%s\", reason \"%s\" (%s), "
                      "client SANs \"%s\", SPKI sha256 \"%s\"",
                      pins->record.name.c_str(), gtls::reason_name(verdict.reason), verdict.detail.c_str(),
                      verdict.peer.sans_text().c_str(), verdict.peer.spki_sha256_base64().c_str());
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "gateway_tls: %s", e.what());
    }
    if (chain_ok) {
        X509_STORE_CTX_set_error(x509_ctx, X509_V_ERR_CERT_REJECTED);
    }
    return 0;
}

// A session ID context of the server's certificate, its client CA names,
// its ssl_verify_client and its pins: OpenSSL resumes a session only where
// the context of the server the handshake began in matches. Behind an SNI
// switch that is the port's default server's, so the session marks
// (ngx_gtls_client_session_check) decide there.
ngx_int_t ngx_gtls_pin_session_context(ngx_conf_t *cf, SSL_CTX *ctx, ngx_gtls_client_pins_t *pins)
{
    gtls::EvpMdCtxPtr md(EVP_MD_CTX_new());
    if (!md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1) {
        return NGX_ERROR;
    }
    auto update = [&](const void *data, size_t len) { return EVP_DigestUpdate(md.get(), data, len) == 1; };
    bool ok = update("gateway_tls client pins", 23) && update(&pins->verify, sizeof(pins->verify));
    for (const gtls::Pin &pin : pins->record.pins) {
        ok = ok && update(pin.spec.data(), pin.spec.size());
    }
    if (X509 *cert = SSL_CTX_get0_certificate(ctx)) {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        ok = ok && X509_digest(cert, EVP_sha256(), digest, &len) == 1 && update(digest, len);
    }
    STACK_OF(X509_NAME) *names = SSL_CTX_get_client_CA_list(ctx);
    for (int i = 0; names != nullptr && i < sk_X509_NAME_num(names); i++) {
        unsigned char *der = nullptr;
        int n = i2d_X509_NAME(sk_X509_NAME_value(names, i), &der);
        ok = ok && n > 0 && update(der, static_cast<size_t>(n));
        OPENSSL_free(der);
    }
    unsigned char sid_ctx[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!ok || EVP_DigestFinal_ex(md.get(), sid_ctx, &len) != 1
        || SSL_CTX_set_session_id_context(ctx, sid_ctx, len) != 1) {
        ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0, const_cast<char *>("SSL_CTX_set_session_id_context() failed"));
        return NGX_ERROR;
    }
    pins->session_context.assign(reinterpret_cast<const char *>(sid_ctx), len);
    return NGX_OK;
}

}  // namespace

void ngx_gtls_init_client_pin_conf(ngx_gtls_client_pin_conf_t *conf)
{
    conf->pins = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
    conf->pin_certificates = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
    conf->handshake = NGX_CONF_UNSET_UINT;
}

namespace {

void ngx_gtls_client_pin_where(ngx_conf_t *cf, ngx_gtls_client_pin_conf_t *conf)
{
    if (conf->file.len == 0) {
        conf->file = cf->conf_file->file.name;
        conf->line = cf->conf_file->line;
    }
}

}  // namespace

char *ngx_gtls_conf_client_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *srv_conf)
{
    auto *conf = ngx_gtls_field<ngx_gtls_client_pin_conf_t>(srv_conf, cmd->offset);
    ngx_gtls_client_pin_where(cf, conf);
    return ngx_gtls_conf_pin_specs(cf, cmd, &conf->pins);
}

char *ngx_gtls_conf_client_pin_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *srv_conf)
{
    auto *conf = ngx_gtls_field<ngx_gtls_client_pin_conf_t>(srv_conf, cmd->offset);
    ngx_gtls_client_pin_where(cf, conf);
    return ngx_gtls_conf_pin_certificate_specs(cf, cmd, &conf->pin_certificates);
}

ngx_conf_enum_t ngx_gtls_client_handshakes[] = {
    {ngx_string("on"), NGX_GTLS_CLIENT_HANDSHAKE_ON},
    {ngx_string("off"), NGX_GTLS_CLIENT_HANDSHAKE_OFF},
    {ngx_string("fallback"), NGX_GTLS_CLIENT_HANDSHAKE_FALLBACK},
    {ngx_null_string, 0}};

char *ngx_gtls_conf_client_handshake(ngx_conf_t *cf, ngx_command_t *cmd, void *srv_conf)
{
    char *rv = ngx_gtls_conf_keyword(cf, cmd, srv_conf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }
    auto *conf = ngx_gtls_field<ngx_gtls_client_pin_conf_t>(
        srv_conf, cmd->offset - offsetof(ngx_gtls_client_pin_conf_t, handshake));
    if (conf->handshake != NGX_GTLS_CLIENT_HANDSHAKE_OFF) {
        ngx_gtls_client_pin_where(cf, conf);
    }
    return NGX_CONF_OK;
}

ngx_int_t ngx_gtls_install_client_pins(ngx_conf_t *cf, ngx_gtls_client_pin_conf_t *conf, ngx_ssl_t *ssl,
                                       ngx_uint_t verify, ngx_gtls_status_t *status)
{
    if (conf->file.len == 0) {
        return NGX_OK;  // neither pins nor ssl_verify_client_handshake on
    }
    const char *directive = conf->pins != NGX_CONF_UNSET_PTR || conf->pin_certificates != NGX_CONF_UNSET_PTR
                                ? "ssl_verify_client_pin" : "ssl_verify_client_handshake";
    if (ssl == nullptr || ssl->ctx == nullptr) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"%s\" in %V:%ui needs TLS in its server (\"ssl_certificate\")", directive,
                      &conf->file, conf->line);
        return NGX_ERROR;
    }
    if (verify == NGX_GTLS_VERIFY_CLIENT_OFF) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"%s\" in %V:%ui needs \"ssl_verify_client on\", \"optional\" "
                      "or \"optional_no_ca\" in its server",
                      directive, &conf->file, conf->line);
        return NGX_ERROR;
    }

    const bool has_pins = conf->pins != NGX_CONF_UNSET_PTR || conf->pin_certificates != NGX_CONF_UNSET_PTR;
    if (conf->handshake == NGX_GTLS_CLIENT_HANDSHAKE_FALLBACK
        && (verify != NGX_GTLS_VERIFY_CLIENT_OPTIONAL_NO_CA || has_pins)) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"ssl_verify_client_handshake fallback\" in %V:%ui needs \"ssl_verify_client "
                      "optional_no_ca\" and no \"ssl_verify_client_pin\" in its server: it admits every client",
                      &conf->file, conf->line);
        return NGX_ERROR;
    }

    try {
        auto *pins = ngx_gtls_pool_new<ngx_gtls_client_pins_t>(cf->pool);
        if (pins == nullptr) {
            return NGX_ERROR;
        }
        pins->verify = verify;
        pins->handshake = conf->handshake == NGX_CONF_UNSET_UINT ? static_cast<ngx_uint_t>(NGX_GTLS_CLIENT_HANDSHAKE_OFF)
                                                                 : conf->handshake;
        pins->status = status;
        pins->record.mode = gtls::Mode::Strict;
        pins->record.name = "client@" + std::string(ngx_gtls_sv(conf->file)) + ":" + std::to_string(conf->line);
        if (ngx_gtls_collect_pins(cf, conf->pins, &pins->record.pins) != NGX_OK
            || ngx_gtls_collect_pins(cf, conf->pin_certificates, &pins->record.pins) != NGX_OK) {
            return NGX_ERROR;
        }
        if (ngx_gtls_pin_session_context(cf, ssl->ctx, pins) != NGX_OK) {
            return NGX_ERROR;
        }
        if (ngx_gtls_client_pins_index == -1) {
            ngx_gtls_client_pins_index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
        }
        if (ngx_gtls_client_pins_index == -1 || SSL_CTX_set_ex_data(ssl->ctx, ngx_gtls_client_pins_index, pins) == 0) {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0, const_cast<char *>("SSL_CTX_set_ex_data() failed"));
            return NGX_ERROR;
        }
        SSL_CTX_set_cert_verify_callback(ssl->ctx, ngx_gtls_client_verify_callback, pins);
        if ((verify == NGX_GTLS_VERIFY_CLIENT_ON || verify == NGX_GTLS_VERIFY_CLIENT_OPTIONAL_NO_CA)
            && pins->handshake != NGX_GTLS_CLIENT_HANDSHAKE_FALLBACK) {
            // "on": a client without a certificate is refused in the handshake
            // too, rather than by the 400 nginx answers after it;
            // "optional_no_ca": the pins are all that authenticates a client
            SSL_CTX_set_verify(ssl->ctx, SSL_CTX_get_verify_mode(ssl->ctx) | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                               SSL_CTX_get_verify_callback(ssl->ctx));
        }
        status->policies.push_back({&pins->record, "client"});
        conf->built = pins;
    } catch (const std::bad_alloc &) {
        return NGX_ERROR;
    }
    return NGX_OK;
}

namespace {

std::string_view ngx_gtls_server_mark(SSL_CTX *ctx)
{
    const auto *pins = static_cast<const ngx_gtls_client_pins_t *>(SSL_CTX_get_ex_data(ctx, ngx_gtls_client_pins_index));
    return pins != nullptr ? std::string_view(pins->session_context) : gtls::kUnpinnedServer;
}

// A resumed session's new tickets keep the mark of the server it was made
// for, which is checked after the handshake.
int ngx_gtls_ticket_mark(SSL *ssl, void *)
{
    if (!SSL_session_reused(ssl)) {
        ngx_gtls_client_session_mark(ssl);
    }
    return 1;
}

// OpenSSL's own decisions on the tickets it decrypted
SSL_TICKET_RETURN ngx_gtls_ticket_use(SSL *, SSL_SESSION *, const unsigned char *, size_t, SSL_TICKET_STATUS status,
                                      void *)
{
    switch (status) {
    case SSL_TICKET_EMPTY:
    case SSL_TICKET_NO_DECRYPT: return SSL_TICKET_RETURN_IGNORE_RENEW;
    case SSL_TICKET_SUCCESS: return SSL_TICKET_RETURN_USE;
    case SSL_TICKET_SUCCESS_RENEW: return SSL_TICKET_RETURN_USE_RENEW;
    default: return SSL_TICKET_RETURN_ABORT;
    }
}

}  // namespace

void ngx_gtls_client_session_mark(ngx_ssl_conn_t *ssl)
{
    if (ngx_gtls_client_pins_index == -1) {
        return;  // no pins in any configuration of this process
    }
    SSL_SESSION *session = SSL_get_session(ssl);
    auto *c = static_cast<ngx_connection_t *>(ngx_ssl_get_connection(ssl));
    ngx_log_t *log = c != nullptr ? c->log : ngx_cycle->log;
    std::string_view mark = ngx_gtls_server_mark(SSL_get_SSL_CTX(ssl));
    ngx_log_debug1(NGX_LOG_DEBUG_EVENT, log, 0, "gateway_tls: session marked for %s server",
                   mark == gtls::kUnpinnedServer ? "an unpinned" : "a pinned");
    if (session != nullptr && !gtls::mark_session_for(session, mark)) {
        ngx_ssl_error(NGX_LOG_ALERT, log, 0, const_cast<char *>("SSL_SESSION_set1_ticket_appdata() failed"));
    }
}

int ngx_gtls_client_session_check(ngx_ssl_conn_t *ssl, int *ad)
{
    if (ngx_gtls_client_pins_index == -1 || !SSL_session_reused(ssl)) {
        return SSL_TLSEXT_ERR_OK;
    }
    const auto *pins = static_cast<const ngx_gtls_client_pins_t *>(
        SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ngx_gtls_client_pins_index));
    auto *c = static_cast<ngx_connection_t *>(ngx_ssl_get_connection(ssl));
    const bool resumable = pins == nullptr || gtls::session_resumable_in(SSL_get0_session(ssl), pins->session_context);
    ngx_log_debug2(NGX_LOG_DEBUG_EVENT, c != nullptr ? c->log : ngx_cycle->log, 0,
                   "gateway_tls: resumed session in a%s server: %s", pins != nullptr ? " pinned" : "n unpinned",
                   resumable ? "goes on" : "refused");
    if (resumable) {
        return SSL_TLSEXT_ERR_OK;
    }
    const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    ngx_log_error(NGX_LOG_ERR, c != nullptr ? c->log : ngx_cycle->log, 0,
                  "gateway_tls: TLS session made under other client pins refused for pins \"%s\" (SNI \"%s\")",
                  pins->record.name.c_str(), gtls::escaped_text(sni != nullptr ? sni : "", gtls::kMaxNameText).c_str());
    *ad = SSL_AD_ACCESS_DENIED;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

ngx_int_t ngx_gtls_client_session_ticket_marks(ngx_conf_t *cf, SSL_CTX *ctx)
{
    if (SSL_CTX_set_session_ticket_cb(ctx, ngx_gtls_ticket_mark, ngx_gtls_ticket_use, nullptr) != 1) {
        ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0, const_cast<char *>("SSL_CTX_set_session_ticket_cb() failed"));
        return NGX_ERROR;
    }
    return NGX_OK;
}

std::string ngx_gtls_client_variable(ngx_connection_t *c, const ngx_gtls_client_pins_t *pins,
                                     ngx_gtls_client_variable_e which)
{
    if (c->ssl == nullptr) {
        return {};
    }
    // a resumed session keeps the peer certificate it was made with
    X509 *leaf = SSL_get0_peer_certificate(c->ssl->connection);
    if (leaf == nullptr) {
        return {};
    }
    switch (which) {
    case NGX_GTLS_CLIENT_SPKI: return gtls::describe_peer(leaf).spki_sha256_base64();
    case NGX_GTLS_CLIENT_CERT: return gtls::describe_peer(leaf).cert_sha256_hex();
    case NGX_GTLS_CLIENT_PIN:
        if (pins != nullptr) {
            if (const gtls::Pin *pin = gtls::match_pins(pins->record.pins, leaf)) return pin->spec;
        }
        return {};
    }
    return {};
}
