// ngx_http_gateway_tls_ssl_share_module: one SSL context per distinct set
// of proxy TLS client settings instead of one per `proxy_pass https://`
// location.
//
// nginx 1.22's proxy creates an SSL_CTX for every such location while it
// merges (in OpenSSL 3.0 about 110 us and 13 KB each before any
// certificate is loaded: 10,000 locations cost 1.1 s and 137 MB); nginx
// 1.23.1 shares them itself. This module is ordered before the proxy
// module (ngx_module_order in `config`), so its merge runs first and clears
// the proxy's private "create a context" flag of each such location. The
// main module merges after the proxy, when the settings are final, and
// calls ngx_http_gtls_adopt_shared_ssl(), which gives the location the
// context for its settings, built as ngx_http_proxy_set_ssl() of 1.22.1
// builds it. At run time nginx 1.22 speaks TLS to a location's backend
// when the location has a context, so postconfiguration fails the
// configuration if any deferred location was left without one.
//
// The flag is private to the proxy; its directive table gives the offsets
// of the settings around it, and the flag is touched only where they lie
// as in 1.22 (the flag immediately before proxy_ssl_protocols' field).

#include "ngx_http_gateway_tls_ssl_share.h"

#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace {

// Where the proxy keeps its TLS client settings, by offset into its loc
// conf (which starts with ngx_http_upstream_conf_t).
struct ngx_http_gtls_proxy_ssl_layout_t {
    ngx_int_t  ctx_index = -1;
    size_t     create = 0;  // ngx_uint_t ssl: set by proxy_pass https:// or with variables
    size_t     protocols = 0, ciphers = 0, verify_depth = 0, trusted_certificate = 0, crl = 0,
               conf_commands = 0;
};

// Everything ngx_http_proxy_set_ssl() of 1.22.1 puts into the context.
// Password files and conf commands compare by identity (inherited values
// share the pointer), the rest by value.
struct ngx_http_gtls_ssl_settings_t {
    ngx_uint_t   protocols = 0;
    std::string  ciphers;
    std::string  certificate, certificate_key;
    const void  *passwords = nullptr;
    ngx_flag_t   verify = 0;
    std::string  trusted_certificate, crl;
    ngx_uint_t   verify_depth = 0;
    ngx_flag_t   session_reuse = 0;
    const void  *conf_commands = nullptr;

    auto tie() const
    {
        return std::tie(protocols, ciphers, certificate, certificate_key, passwords, verify,
                        trusted_certificate, crl, verify_depth, session_reuse, conf_commands);
    }
    bool operator<(const ngx_http_gtls_ssl_settings_t &other) const { return tie() < other.tie(); }
};

struct ngx_http_gtls_ssl_share_main_conf_t {
    bool                                                     enabled = false;
    ngx_http_gtls_proxy_ssl_layout_t                         proxy;
    std::map<ngx_http_gtls_ssl_settings_t, ngx_ssl_t *>      contexts;
    std::vector<ngx_http_upstream_conf_t *>                  deferred;
};

typedef struct {
    ngx_flag_t  deferred;  // the proxy's context for this location is ours to give
} ngx_http_gtls_ssl_share_loc_conf_t;

template <typename T>
T *ngx_http_gtls_proxy_field(void *plcf, size_t offset)
{
    return reinterpret_cast<T *>(static_cast<u_char *>(plcf) + offset);
}

std::string ngx_http_gtls_string(const ngx_str_t &s)
{
    return std::string(reinterpret_cast<const char *>(s.data), s.len);
}

ngx_http_gtls_ssl_share_main_conf_t *ngx_http_gtls_ssl_share(ngx_conf_t *cf)
{
    return static_cast<ngx_http_gtls_ssl_share_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_ssl_share_module));
}

void *ngx_http_gtls_ssl_share_create_main_conf(ngx_conf_t *cf)
{
    return ngx_gtls_pool_new<ngx_http_gtls_ssl_share_main_conf_t>(cf->pool);
}

// The proxy's layout, from its directive table; sharing stays off (every
// location gets its own context from the proxy, as in stock nginx) unless
// the settings lie exactly as in 1.22.
char *ngx_http_gtls_ssl_share_init_main_conf(ngx_conf_t *cf, void *conf)
{
    auto *share = static_cast<ngx_http_gtls_ssl_share_main_conf_t *>(conf);
#if (NGX_HTTP_SSL && nginx_version >= 1022000 && nginx_version < 1023000)
    ngx_http_gtls_proxy_ssl_layout_t &proxy = share->proxy;
    size_t offsets[6] = {0, 0, 0, 0, 0, 0};
    const char *const names[6] = {"proxy_ssl_protocols", "proxy_ssl_ciphers", "proxy_ssl_verify_depth",
                                  "proxy_ssl_trusted_certificate", "proxy_ssl_crl",
                                  "proxy_ssl_conf_command"};
    for (ngx_uint_t i = 0; cf->cycle->modules[i]; i++) {
        ngx_module_t *m = cf->cycle->modules[i];
        if (m->type != NGX_HTTP_MODULE || ngx_strcmp(m->name, "ngx_http_proxy_module") != 0) {
            continue;
        }
        proxy.ctx_index = m->ctx_index;
        for (ngx_command_t *cmd = m->commands; cmd->name.len; cmd++) {
            for (size_t k = 0; k < 6; k++) {
                if (std::string_view(reinterpret_cast<const char *>(cmd->name.data), cmd->name.len)
                    == names[k]) {
                    offsets[k] = cmd->offset;
                }
            }
        }
    }
    proxy.protocols = offsets[0];
    proxy.ciphers = offsets[1];
    proxy.verify_depth = offsets[2];
    proxy.trusted_certificate = offsets[3];
    proxy.crl = offsets[4];
    proxy.conf_commands = offsets[5];
    proxy.create = proxy.protocols - sizeof(ngx_uint_t);
    share->enabled = proxy.ctx_index >= 0 && proxy.protocols >= sizeof(ngx_http_upstream_conf_t) + sizeof(ngx_uint_t)
                     && proxy.ciphers == proxy.protocols + sizeof(ngx_uint_t)
                     && proxy.verify_depth == proxy.ciphers + sizeof(ngx_str_t)
                     && proxy.trusted_certificate == proxy.verify_depth + sizeof(ngx_uint_t)
                     && proxy.crl == proxy.trusted_certificate + sizeof(ngx_str_t)
                     && proxy.conf_commands == proxy.crl + sizeof(ngx_str_t);
    if (!share->enabled && proxy.ctx_index >= 0) {
        ngx_log_error(NGX_LOG_NOTICE, cf->log, 0,
                      "gateway_tls: the proxy's TLS settings are not laid out as in nginx 1.22, "
                      "every \"proxy_pass https://\" location keeps its own SSL context");
    }
#else
    (void) cf;
    share->enabled = false;
#endif
    return NGX_CONF_OK;
}

void *ngx_http_gtls_ssl_share_create_loc_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_ssl_share_loc_conf_t));
}

// if{} and limit_except{} blocks copy their location's context pointer
// while the proxy merges, before the location has one: such a location
// keeps the proxy's own context.
bool ngx_http_gtls_has_unnamed_block(ngx_http_core_loc_conf_t *clcf)
{
    if (clcf->locations == nullptr) {
        return false;
    }
    for (ngx_queue_t *q = ngx_queue_head(clcf->locations); q != ngx_queue_sentinel(clcf->locations);
         q = ngx_queue_next(q)) {
        auto *lq = reinterpret_cast<ngx_http_location_queue_t *>(q);
        ngx_http_core_loc_conf_t *child = lq->exact ? lq->exact : lq->inclusive;
        if (child->noname) {
            return true;
        }
    }
    return false;
}

// Runs before the proxy's merge of any location.
char *ngx_http_gtls_ssl_share_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    (void) parent;
    auto *conf = static_cast<ngx_http_gtls_ssl_share_loc_conf_t *>(child);
    ngx_http_gtls_ssl_share_main_conf_t *share = ngx_http_gtls_ssl_share(cf);
    if (!share->enabled) {
        return NGX_CONF_OK;
    }
    auto *ctx = static_cast<ngx_http_conf_ctx_t *>(cf->ctx);
    void *plcf = ctx->loc_conf[share->proxy.ctx_index];
    ngx_uint_t *create = ngx_http_gtls_proxy_field<ngx_uint_t>(plcf, share->proxy.create);
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(
        ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    if (*create != 1 || clcf->noname || ngx_http_gtls_has_unnamed_block(clcf)) {
        return NGX_CONF_OK;
    }
    try {
        share->deferred.push_back(static_cast<ngx_http_upstream_conf_t *>(plcf));
    } catch (const std::exception &) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    *create = 0;
    conf->deferred = 1;
    return NGX_CONF_OK;
}

// ucf: a merged proxy loc conf whose certificate, if any, has its key
ngx_http_gtls_ssl_settings_t ngx_http_gtls_ssl_settings(const ngx_http_gtls_proxy_ssl_layout_t &proxy,
                                                        ngx_http_upstream_conf_t *ucf)
{
    ngx_http_gtls_ssl_settings_t s;
    s.protocols = *ngx_http_gtls_proxy_field<ngx_uint_t>(ucf, proxy.protocols);
    s.ciphers = ngx_http_gtls_string(*ngx_http_gtls_proxy_field<ngx_str_t>(ucf, proxy.ciphers));
    // a certificate with variables is loaded per connection, not into the context
    if (ucf->ssl_certificate != nullptr && ucf->ssl_certificate->lengths == nullptr
        && ucf->ssl_certificate_key->lengths == nullptr) {
        s.certificate = ngx_http_gtls_string(ucf->ssl_certificate->value);
        s.certificate_key = ngx_http_gtls_string(ucf->ssl_certificate_key->value);
        s.passwords = ucf->ssl_passwords;
    }
    s.verify = ucf->ssl_verify;
    if (s.verify) {
        s.trusted_certificate = ngx_http_gtls_string(
            *ngx_http_gtls_proxy_field<ngx_str_t>(ucf, proxy.trusted_certificate));
        s.crl = ngx_http_gtls_string(*ngx_http_gtls_proxy_field<ngx_str_t>(ucf, proxy.crl));
        s.verify_depth = *ngx_http_gtls_proxy_field<ngx_uint_t>(ucf, proxy.verify_depth);
    }
    s.session_reuse = ucf->ssl_session_reuse;
    s.conf_commands = *ngx_http_gtls_proxy_field<ngx_array_t *>(ucf, proxy.conf_commands);
    return s;
}

// ngx_http_proxy_set_ssl() of nginx 1.22.1, into a new context, but for
// the passwords of certificates with variables, which stay per location.
ngx_ssl_t *ngx_http_gtls_create_proxy_ssl(ngx_conf_t *cf, const ngx_http_gtls_proxy_ssl_layout_t &proxy,
                                          ngx_http_upstream_conf_t *ucf)
{
    auto *ssl = static_cast<ngx_ssl_t *>(ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t)));
    if (ssl == nullptr) {
        return nullptr;
    }
    ssl->log = cf->log;
    if (ngx_ssl_create(ssl, *ngx_http_gtls_proxy_field<ngx_uint_t>(ucf, proxy.protocols), nullptr) != NGX_OK) {
        return nullptr;
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == nullptr) {
        ngx_ssl_cleanup_ctx(ssl);
        return nullptr;
    }
    cln->handler = ngx_ssl_cleanup_ctx;
    cln->data = ssl;

    if (ngx_ssl_ciphers(cf, ssl, ngx_http_gtls_proxy_field<ngx_str_t>(ucf, proxy.ciphers), 0) != NGX_OK) {
        return nullptr;
    }
    if (ucf->ssl_certificate != nullptr && ucf->ssl_certificate->lengths == nullptr
        && ucf->ssl_certificate_key->lengths == nullptr
        && ngx_ssl_certificate(cf, ssl, &ucf->ssl_certificate->value, &ucf->ssl_certificate_key->value,
                               ucf->ssl_passwords) != NGX_OK) {
        return nullptr;
    }
    if (ucf->ssl_verify) {
        ngx_str_t *trusted = ngx_http_gtls_proxy_field<ngx_str_t>(ucf, proxy.trusted_certificate);
        if (trusted->len == 0) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "no proxy_ssl_trusted_certificate for proxy_ssl_verify");
            return nullptr;
        }
        if (ngx_ssl_trusted_certificate(cf, ssl, trusted,
                                        *ngx_http_gtls_proxy_field<ngx_uint_t>(ucf, proxy.verify_depth)) != NGX_OK
            || ngx_ssl_crl(cf, ssl, ngx_http_gtls_proxy_field<ngx_str_t>(ucf, proxy.crl)) != NGX_OK) {
            return nullptr;
        }
    }
    if (ngx_ssl_client_session_cache(cf, ssl, ucf->ssl_session_reuse) != NGX_OK
        || ngx_ssl_conf_commands(cf, ssl, *ngx_http_gtls_proxy_field<ngx_array_t *>(ucf, proxy.conf_commands))
               != NGX_OK) {
        return nullptr;
    }
    return ssl;
}

// After every merge: a deferred location without a context would send
// its requests in plaintext.
ngx_int_t ngx_http_gtls_ssl_share_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_gtls_ssl_share_main_conf_t *share = ngx_http_gtls_ssl_share(cf);
    for (ngx_http_upstream_conf_t *ucf : share->deferred) {
        if (ucf->ssl == nullptr || ucf->ssl->ctx == nullptr) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "gateway_tls: a \"proxy_pass https://\" location was left without an SSL context");
            return NGX_ERROR;
        }
    }
    if (!share->deferred.empty()) {
        ngx_log_error(NGX_LOG_NOTICE, cf->log, 0,
                      "gateway_tls: %uz \"proxy_pass https://\" locations share %uz SSL contexts",
                      share->deferred.size(), share->contexts.size());
    }
    share->deferred = {};
    share->contexts = {};
    return NGX_OK;
}

ngx_http_module_t ngx_http_gtls_ssl_share_module_ctx = {
    nullptr,                                    // preconfiguration
    ngx_http_gtls_ssl_share_postconfiguration,  // postconfiguration
    ngx_http_gtls_ssl_share_create_main_conf,   // create main configuration
    ngx_http_gtls_ssl_share_init_main_conf,     // init main configuration
    nullptr,                                    // create server configuration
    nullptr,                                    // merge server configuration
    ngx_http_gtls_ssl_share_create_loc_conf,    // create location configuration
    ngx_http_gtls_ssl_share_merge_loc_conf      // merge location configuration
};

ngx_command_t ngx_http_gtls_ssl_share_commands[] = {ngx_null_command};

}  // namespace

ngx_int_t ngx_http_gtls_adopt_shared_ssl(ngx_conf_t *cf, ngx_http_upstream_conf_t *ucf)
{
    auto *lcf = static_cast<ngx_http_gtls_ssl_share_loc_conf_t *>(
        ngx_http_conf_get_module_loc_conf(cf, ngx_http_gateway_tls_ssl_share_module));
    if (!lcf->deferred) {
        return NGX_OK;
    }
    ngx_http_gtls_ssl_share_main_conf_t *share = ngx_http_gtls_ssl_share(cf);
    if (ucf->ssl != nullptr) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "gateway_tls: the proxy made an SSL context the module had deferred: "
                      "this nginx's proxy is not laid out as 1.22.1's");
        return NGX_ERROR;
    }
    if (ucf->ssl_certificate != nullptr && ucf->ssl_certificate_key == nullptr) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "no \"proxy_ssl_certificate_key\" is defined for certificate \"%V\"",
                      &ucf->ssl_certificate->value);
        return NGX_ERROR;
    }

    ngx_http_gtls_ssl_settings_t settings = ngx_http_gtls_ssl_settings(share->proxy, ucf);
    auto found = share->contexts.find(settings);
    if (found == share->contexts.end()) {
        ngx_ssl_t *ssl = ngx_http_gtls_create_proxy_ssl(cf, share->proxy, ucf);
        if (ssl == nullptr) {
            return NGX_ERROR;
        }
        found = share->contexts.emplace(std::move(settings), ssl).first;
    }
    ucf->ssl = found->second;

    if (ucf->ssl_certificate != nullptr
        && (ucf->ssl_certificate->lengths != nullptr || ucf->ssl_certificate_key->lengths != nullptr)) {
        ucf->ssl_passwords = ngx_ssl_preserve_passwords(cf, ucf->ssl_passwords);
        if (ucf->ssl_passwords == nullptr) {
            return NGX_ERROR;
        }
    }
    *ngx_http_gtls_proxy_field<ngx_uint_t>(ucf, share->proxy.create) = 1;
    return NGX_OK;
}

ngx_module_t ngx_http_gateway_tls_ssl_share_module = {
    NGX_MODULE_V1,
    &ngx_http_gtls_ssl_share_module_ctx,  // module context
    ngx_http_gtls_ssl_share_commands,     // module directives
    NGX_HTTP_MODULE,                      // module type
    nullptr,                              // init master
    nullptr,                              // init module
    nullptr,                              // init process
    nullptr,                              // init thread
    nullptr,                              // exit thread
    nullptr,                              // exit process
    nullptr,                              // exit master
    NGX_MODULE_V1_PADDING};
