// ngx_http_gateway_tls_ssl_share_module: one SSL context per distinct set
// of TLS client settings instead of one per `proxy_pass https://` or
// `grpc_pass grpcs://` location.
//
// nginx 1.22's proxy and grpc modules create an SSL_CTX for every such
// location while they merge (in OpenSSL 3.0 about 110 us and 13 KB each
// before any certificate is loaded: 10,000 locations cost 1.1 s and
// 137 MB); nginx 1.23.1 shares them itself. This module is ordered before
// both (ngx_module_order in `config`), so its merge runs first and clears
// their private "create a context" flag of each such location. The main
// module merges after them, when the settings are final, and calls
// ngx_http_gtls_adopt_shared_ssl(), which gives the location the context
// for its settings, built as ngx_http_proxy_set_ssl() and
// ngx_http_grpc_set_ssl() of 1.22.1 build it. At run time nginx 1.22
// speaks TLS to a location's backend when the location has a context, so
// postconfiguration fails the configuration if a deferred location was
// left without one.
//
// The flag is private; where it and the settings lie is found and checked
// in ngx_gtls_nginx_layout.cc, and the flag is touched only where they lie
// as in 1.22.

#include "ngx_http_gateway_tls_ssl_share.h"

#include "ngx_http_gateway_tls_module.h"  // ngx_http_gtls_kind_e

#include "ngx_gtls_nginx_layout.h"
#include "ngx_gtls_policy_conf.h"  // ngx_gtls_sv

// `config` builds this file for nginx before 1.23.1 alone, with SSL.
#if !(NGX_GTLS_SSL_SHARE && NGX_HTTP_SSL && nginx_version < 1023001)
#error "the SSL context share module is for nginx 1.22 and 1.23.0 with SSL"
#endif

#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace {

// Everything the modules' set_ssl() of 1.22.1 puts into the context.
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

// One upstream module's TLS client settings, by offset into its loc conf
// (which starts with ngx_http_upstream_conf_t), and the contexts made so far.
struct ngx_http_gtls_ssl_share_kind_t {
    ngx_http_gtls_ssl_share_kind_t(const char *p, const char *m, bool h2) : prefix(p), module(m), alpn_h2(h2) {}

    const char  *prefix;  // "proxy", "grpc"
    const char  *module;
    bool         alpn_h2;  // grpc offers h2 by ALPN

    ngx_gtls_upstream_ssl_layout_t  layout;

    std::map<ngx_http_gtls_ssl_settings_t, ngx_ssl_t *>  contexts;
    std::vector<ngx_http_upstream_conf_t *>              deferred;
};

struct ngx_http_gtls_ssl_share_main_conf_t {
    ngx_http_gtls_ssl_share_kind_t  kinds[NGX_HTTP_GTLS_KINDS] = {{"proxy", "ngx_http_proxy_module", false},
                                                {"grpc", "ngx_http_grpc_module", true}};
};

typedef struct {
    ngx_flag_t  deferred[NGX_HTTP_GTLS_KINDS];  // the context for this location is ours to give, by kind
} ngx_http_gtls_ssl_share_loc_conf_t;

// A client certificate without variables goes into the context; one with
// variables is loaded per connection. ucf's certificate, if any, has a key.
bool ngx_http_gtls_static_certificate(const ngx_http_upstream_conf_t *ucf)
{
    return ucf->ssl_certificate != nullptr && ucf->ssl_certificate->lengths == nullptr
           && ucf->ssl_certificate_key->lengths == nullptr;
}

std::string ngx_http_gtls_string(const ngx_str_t &s)
{
    return std::string(ngx_gtls_sv(s));
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

char *ngx_http_gtls_ssl_share_init_main_conf(ngx_conf_t *cf, void *conf)
{
    for (ngx_http_gtls_ssl_share_kind_t &kind : static_cast<ngx_http_gtls_ssl_share_main_conf_t *>(conf)->kinds) {
        ngx_gtls_find_upstream_ssl_layout(cf, kind.module, kind.prefix, &kind.layout);
    }
    return NGX_CONF_OK;
}

void *ngx_http_gtls_ssl_share_create_loc_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_ssl_share_loc_conf_t));
}

// if{} and limit_except{} blocks copy their location's context pointer
// while the proxy merges, before the location has one: such a location
// keeps the module's own context.
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

// Runs before the proxy's and grpc's merge of any location.
char *ngx_http_gtls_ssl_share_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    (void) parent;
    auto *conf = static_cast<ngx_http_gtls_ssl_share_loc_conf_t *>(child);
    auto *ctx = static_cast<ngx_http_conf_ctx_t *>(cf->ctx);
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(
        ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    if (clcf->noname || ngx_http_gtls_has_unnamed_block(clcf)) {
        return NGX_CONF_OK;
    }
    ngx_http_gtls_ssl_share_kind_t *kinds = ngx_http_gtls_ssl_share(cf)->kinds;
    for (size_t k = 0; k < NGX_HTTP_GTLS_KINDS; k++) {
        if (!kinds[k].layout.found) {
            continue;
        }
        void *mcf = ctx->loc_conf[kinds[k].layout.ctx_index];
        ngx_uint_t *create = ngx_gtls_field<ngx_uint_t>(mcf, kinds[k].layout.create);
        if (*create != 1) {
            continue;
        }
        try {
            kinds[k].deferred.push_back(static_cast<ngx_http_upstream_conf_t *>(mcf));
        } catch (const std::exception &) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        *create = 0;
        conf->deferred[k] = 1;
    }
    return NGX_CONF_OK;
}

// ucf: a merged loc conf whose certificate, if any, has its key
ngx_http_gtls_ssl_settings_t ngx_http_gtls_ssl_settings(const ngx_http_gtls_ssl_share_kind_t &kind,
                                                        ngx_http_upstream_conf_t *ucf)
{
    ngx_http_gtls_ssl_settings_t s;
    s.protocols = *ngx_gtls_field<ngx_uint_t>(ucf, kind.layout.protocols);
    s.ciphers = ngx_http_gtls_string(*ngx_gtls_field<ngx_str_t>(ucf, kind.layout.ciphers));
    if (ngx_http_gtls_static_certificate(ucf)) {
        s.certificate = ngx_http_gtls_string(ucf->ssl_certificate->value);
        s.certificate_key = ngx_http_gtls_string(ucf->ssl_certificate_key->value);
        s.passwords = ucf->ssl_passwords;
    }
    s.verify = ucf->ssl_verify;
    if (s.verify) {
        s.trusted_certificate = ngx_http_gtls_string(*ngx_gtls_field<ngx_str_t>(ucf, kind.layout.trusted_certificate));
        s.crl = ngx_http_gtls_string(*ngx_gtls_field<ngx_str_t>(ucf, kind.layout.crl));
        s.verify_depth = *ngx_gtls_field<ngx_uint_t>(ucf, kind.layout.verify_depth);
    }
    s.session_reuse = ucf->ssl_session_reuse;
    s.conf_commands = *ngx_gtls_field<ngx_array_t *>(ucf, kind.layout.conf_commands);
    return s;
}

// The modules' set_ssl() of nginx 1.22.1, into a new context, but for the
// passwords of certificates with variables, which stay per location.
ngx_ssl_t *ngx_http_gtls_create_ssl(ngx_conf_t *cf, const ngx_http_gtls_ssl_share_kind_t &kind,
                                    ngx_http_upstream_conf_t *ucf)
{
    auto *ssl = static_cast<ngx_ssl_t *>(ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t)));
    if (ssl == nullptr) {
        return nullptr;
    }
    ssl->log = cf->log;
    if (ngx_ssl_create(ssl, *ngx_gtls_field<ngx_uint_t>(ucf, kind.layout.protocols), nullptr) != NGX_OK) {
        return nullptr;
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == nullptr) {
        ngx_ssl_cleanup_ctx(ssl);
        return nullptr;
    }
    cln->handler = ngx_ssl_cleanup_ctx;
    cln->data = ssl;

    if (ngx_ssl_ciphers(cf, ssl, ngx_gtls_field<ngx_str_t>(ucf, kind.layout.ciphers), 0) != NGX_OK) {
        return nullptr;
    }
    if (ngx_http_gtls_static_certificate(ucf)
        && ngx_ssl_certificate(cf, ssl, &ucf->ssl_certificate->value, &ucf->ssl_certificate_key->value,
                               ucf->ssl_passwords) != NGX_OK) {
        return nullptr;
    }
    if (ucf->ssl_verify) {
        ngx_str_t *trusted = ngx_gtls_field<ngx_str_t>(ucf, kind.layout.trusted_certificate);
        if (trusted->len == 0) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "no %s_ssl_trusted_certificate for %s_ssl_verify",
                          kind.prefix, kind.prefix);
            return nullptr;
        }
        if (ngx_ssl_trusted_certificate(cf, ssl, trusted,
                                        *ngx_gtls_field<ngx_uint_t>(ucf, kind.layout.verify_depth)) != NGX_OK
            || ngx_ssl_crl(cf, ssl, ngx_gtls_field<ngx_str_t>(ucf, kind.layout.crl)) != NGX_OK) {
            return nullptr;
        }
    }
    if (ngx_ssl_client_session_cache(cf, ssl, ucf->ssl_session_reuse) != NGX_OK) {
        return nullptr;
    }
    static const unsigned char h2[] = "\x02h2";
    if (kind.alpn_h2 && SSL_CTX_set_alpn_protos(ssl->ctx, h2, sizeof(h2) - 1) != 0) {
        ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0, const_cast<char *>("SSL_CTX_set_alpn_protos() failed"));
        return nullptr;
    }
    if (ngx_ssl_conf_commands(cf, ssl, *ngx_gtls_field<ngx_array_t *>(ucf, kind.layout.conf_commands)) != NGX_OK) {
        return nullptr;
    }
    return ssl;
}

// After every merge: a deferred location without a context would send
// its requests in plaintext.
ngx_int_t ngx_http_gtls_ssl_share_postconfiguration(ngx_conf_t *cf)
{
    for (ngx_http_gtls_ssl_share_kind_t &kind : ngx_http_gtls_ssl_share(cf)->kinds) {
        for (ngx_http_upstream_conf_t *ucf : kind.deferred) {
            if (ucf->ssl == nullptr || ucf->ssl->ctx == nullptr) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "gateway_tls: a %s location was left without an SSL context", kind.prefix);
                return NGX_ERROR;
            }
        }
        if (!kind.deferred.empty()) {
            size_t locations = kind.deferred.size(), contexts = kind.contexts.size();
            ngx_log_error(NGX_LOG_NOTICE, cf->log, 0, "gateway_tls: %uz %s TLS location%s use%s %uz SSL context%s",
                          locations, kind.prefix, locations == 1 ? "" : "s", locations == 1 ? "s" : "",
                          contexts, contexts == 1 ? "" : "s");
        }
        kind.deferred = {};
        kind.contexts = {};
    }
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

ngx_int_t ngx_http_gtls_adopt_shared_ssl(ngx_conf_t *cf, ngx_http_upstream_conf_t *ucf, ngx_uint_t kind_index)
{
    auto *lcf = static_cast<ngx_http_gtls_ssl_share_loc_conf_t *>(
        ngx_http_conf_get_module_loc_conf(cf, ngx_http_gateway_tls_ssl_share_module));
    if (kind_index >= NGX_HTTP_GTLS_KINDS || !lcf->deferred[kind_index]) {
        return NGX_OK;
    }
    ngx_http_gtls_ssl_share_kind_t &kind = ngx_http_gtls_ssl_share(cf)->kinds[kind_index];
    if (ucf->ssl != nullptr) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "gateway_tls: %s made an SSL context the module had deferred: "
                      "it is not laid out as in nginx 1.22.1", kind.module);
        return NGX_ERROR;
    }
    if (ucf->ssl_certificate != nullptr && ucf->ssl_certificate_key == nullptr) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "no \"%s_ssl_certificate_key\" is defined for certificate \"%V\"", kind.prefix,
                      &ucf->ssl_certificate->value);
        return NGX_ERROR;
    }

    try {
        ngx_http_gtls_ssl_settings_t settings = ngx_http_gtls_ssl_settings(kind, ucf);
        auto found = kind.contexts.find(settings);
        if (found == kind.contexts.end()) {
            ngx_ssl_t *ssl = ngx_http_gtls_create_ssl(cf, kind, ucf);
            if (ssl == nullptr) {
                return NGX_ERROR;
            }
            found = kind.contexts.emplace(std::move(settings), ssl).first;
        }
        ucf->ssl = found->second;
    } catch (const std::exception &) {
        return NGX_ERROR;
    }

    if (ucf->ssl_certificate != nullptr && !ngx_http_gtls_static_certificate(ucf)) {
        ucf->ssl_passwords = ngx_ssl_preserve_passwords(cf, ucf->ssl_passwords);
        if (ucf->ssl_passwords == nullptr) {
            return NGX_ERROR;
        }
    }
    *ngx_gtls_field<ngx_uint_t>(ucf, kind.layout.create) = 1;
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
