#include "ngx_gtls_nginx_layout.h"

#include <cstddef>
#include <string>
#include <string_view>

#include "ngx_gtls_policy_conf.h"  // ngx_gtls_sv

namespace {

ngx_module_t *ngx_gtls_module_named(ngx_cycle_t *cycle, const char *name)
{
    for (ngx_uint_t i = 0; cycle->modules[i] != nullptr; i++) {
        if (cycle->modules[i]->name != nullptr && ngx_strcmp(cycle->modules[i]->name, name) == 0) {
            return cycle->modules[i];
        }
    }
    return nullptr;
}

// The offset directive `prefix` + `suffix` of `module` writes, or -1.
ssize_t ngx_gtls_directive_offset(const ngx_module_t *module, std::string_view prefix, std::string_view suffix)
{
    for (const ngx_command_t *cmd = module->commands; cmd != nullptr && cmd->name.len; cmd++) {
        std::string_view name = ngx_gtls_sv(cmd->name);
        if (name.size() == prefix.size() + suffix.size() && name.substr(0, prefix.size()) == prefix
            && name.substr(prefix.size()) == suffix) {
            return static_cast<ssize_t>(cmd->offset);
        }
    }
    return -1;
}

ngx_int_t ngx_gtls_layout_refused(ngx_conf_t *cf, const char *what)
{
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "gateway_tls: this nginx (" NGINX_VER ") is not laid out as the module was built to read: %s",
                  what);
    return NGX_ERROR;
}

}  // namespace

ngx_int_t ngx_gtls_find_http_upstream_conf(ngx_conf_t *cf, const char *module, const char *prefix,
                                           ngx_int_t *ctx_index)
{
    *ctx_index = -1;
    ngx_module_t *m = ngx_gtls_module_named(cf->cycle, module);
    if (m == nullptr) {
        return NGX_OK;
    }
    const ssize_t fault = NGX_GTLS_LAYOUT_FAULT ? sizeof(void *) : 0;
    if (ngx_gtls_directive_offset(m, prefix, "_connect_timeout")
            != static_cast<ssize_t>(offsetof(ngx_http_upstream_conf_t, connect_timeout)) + fault
#if (NGX_HTTP_SSL)
        || ngx_gtls_directive_offset(m, prefix, "_ssl_verify")
               != static_cast<ssize_t>(offsetof(ngx_http_upstream_conf_t, ssl_verify)) + fault
#endif
    ) {
        std::string what = std::string(module) + "'s loc conf does not begin with its ngx_http_upstream_conf_t";
        return ngx_gtls_layout_refused(cf, what.c_str());
    }
    *ctx_index = m->ctx_index;
    return NGX_OK;
}

#if (NGX_GTLS_SSL_SHARE)
void ngx_gtls_find_upstream_ssl_layout(ngx_conf_t *cf, const char *module, const char *prefix,
                                       ngx_gtls_upstream_ssl_layout_t *layout)
{
    *layout = {};
    ngx_module_t *m = ngx_gtls_module_named(cf->cycle, module);
    if (m == nullptr) {
        return;
    }
    layout->ctx_index = m->ctx_index;
    ssize_t protocols = ngx_gtls_directive_offset(m, prefix, "_ssl_protocols"),
            ciphers = ngx_gtls_directive_offset(m, prefix, "_ssl_ciphers"),
            verify_depth = ngx_gtls_directive_offset(m, prefix, "_ssl_verify_depth"),
            trusted = ngx_gtls_directive_offset(m, prefix, "_ssl_trusted_certificate"),
            crl = ngx_gtls_directive_offset(m, prefix, "_ssl_crl"),
            commands = ngx_gtls_directive_offset(m, prefix, "_ssl_conf_command");
    // 1.22.1: ngx_uint_t ssl; ngx_uint_t ssl_protocols; ngx_str_t ssl_ciphers;
    // ngx_uint_t ssl_verify_depth; ngx_str_t ssl_trusted_certificate, ssl_crl;
    // ngx_array_t *ssl_conf_commands
    layout->found = protocols >= static_cast<ssize_t>(sizeof(ngx_http_upstream_conf_t) + sizeof(ngx_uint_t))
                    && ciphers == protocols + static_cast<ssize_t>(sizeof(ngx_uint_t))
                    && verify_depth == ciphers + static_cast<ssize_t>(sizeof(ngx_str_t))
                    && trusted == verify_depth + static_cast<ssize_t>(sizeof(ngx_uint_t))
                    && crl == trusted + static_cast<ssize_t>(sizeof(ngx_str_t))
                    && commands == crl + static_cast<ssize_t>(sizeof(ngx_str_t));
    if (!layout->found) {
        ngx_log_error(NGX_LOG_NOTICE, cf->log, 0,
                      "gateway_tls: %s's TLS settings are not laid out as in nginx 1.22, each of its "
                      "locations keeps its own SSL context", module);
        return;
    }
    layout->protocols = protocols;
    layout->ciphers = ciphers;
    layout->verify_depth = verify_depth;
    layout->trusted_certificate = trusted;
    layout->crl = crl;
    layout->conf_commands = commands;
    layout->create = protocols - sizeof(ngx_uint_t);
}
#endif

ngx_int_t ngx_gtls_find_stream_proxy_layout(ngx_conf_t *cf, ngx_gtls_stream_proxy_layout_t *layout)
{
    *layout = {};
    if (ngx_module_t *ssl = ngx_gtls_module_named(cf->cycle, "ngx_stream_ssl_module")) {
        layout->ssl_module_ctx_index = ssl->ctx_index;
    }
    ngx_module_t *m = ngx_gtls_module_named(cf->cycle, "ngx_stream_proxy_module");
    ssize_t enable = -1, name = -1, verify = -1, certificate = -1, commands = -1;
    if (m != nullptr) {
        enable = ngx_gtls_directive_offset(m, "proxy_ssl", "");
        name = ngx_gtls_directive_offset(m, "proxy_ssl", "_name");
        verify = ngx_gtls_directive_offset(m, "proxy_ssl", "_verify");
        certificate = ngx_gtls_directive_offset(m, "proxy_ssl", "_certificate");
        commands = ngx_gtls_directive_offset(m, "proxy_ssl", "_conf_command");
    }
    if (m == nullptr || enable < 0 || name < 0 || verify < 0 || certificate < 0 || commands < 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "gateway_tls: cannot find the stream proxy's TLS settings in this nginx "
                      "(load ngx_stream_module.so, built with the stream SSL module)");
        return NGX_ERROR;
    }
    layout->ctx_index = m->ctx_index;
    layout->ssl_enable = enable;
    layout->ssl_name = name;
    layout->ssl_verify = verify;
    layout->ssl_certificate = certificate;
    layout->ssl = commands + sizeof(ngx_array_t *) * (NGX_GTLS_LAYOUT_FAULT ? 2 : 1);
    return NGX_OK;
}

ngx_int_t ngx_gtls_stream_proxy_ssl(ngx_conf_t *cf, const ngx_gtls_stream_proxy_layout_t &layout, void *pscf,
                                    ngx_ssl_t **ssl)
{
    ngx_ssl_t *found = *ngx_gtls_field<ngx_ssl_t *>(pscf, layout.ssl);
    *ssl = nullptr;
    if (found == nullptr) {
        if (*ngx_gtls_field<ngx_flag_t>(pscf, layout.ssl_enable) == 1) {
            // the proxy makes its ngx_ssl_t wherever proxy_ssl is on
            return ngx_gtls_layout_refused(cf, "no ngx_ssl_t after proxy_ssl_conf_command in the stream proxy's "
                                               "conf of a server with \"proxy_ssl on\"");
        }
        return NGX_OK;
    }
    // an ngx_ssl_t the proxy allocated in this configuration's pool has this
    // configuration's log; anything else there is not one (a flag or a
    // small number would not be a pointer at all)
    auto address = reinterpret_cast<uintptr_t>(found);
    if (address < 65536 || address % alignof(ngx_ssl_t) != 0 || found->log != cf->log) {
        return ngx_gtls_layout_refused(cf, "the field after proxy_ssl_conf_command in the stream proxy's conf "
                                           "is not its ngx_ssl_t");
    }
    *ssl = found;
    return NGX_OK;
}

ngx_gtls_stream_export_t *ngx_gtls_stream_export(ngx_cycle_t *cycle, ngx_log_t *log, bool *mismatch)
{
    *mismatch = false;
    ngx_module_t *stream = ngx_gtls_module_named(cycle, "ngx_stream_module");
    ngx_module_t *ours = ngx_gtls_module_named(cycle, "ngx_stream_gateway_tls_module");
    if (stream == nullptr || ours == nullptr || cycle->conf_ctx[stream->index] == nullptr) {
        return nullptr;
    }
    auto *ctx = reinterpret_cast<ngx_stream_conf_ctx_t *>(cycle->conf_ctx[stream->index]);
    auto *exported = static_cast<ngx_gtls_stream_export_t *>(ctx->main_conf[ours->ctx_index]);
    if (exported == nullptr) {
        return nullptr;
    }
    if (exported->magic != ngx_gtls_stream_export_t::kMagic
        || exported->version != ngx_gtls_stream_export_t::kVersion
        || exported->status_size != sizeof(ngx_gtls_status_t) || exported->policy_size != sizeof(gtls::Policy)
        || exported->upstream_set_size != sizeof(ngx_gtls_upstream_set_t)
        || exported->sessions_size != sizeof(ngx_gtls_session_cache_t)
        || exported->certificate_size != sizeof(ngx_gtls_certificate_t)) {
        ngx_log_error(NGX_LOG_EMERG, log, 0,
                      "gateway_tls: ngx_stream_gateway_tls_module.so is of another build than "
                      "ngx_http_gateway_tls_module.so (export version %uD, this one reads %uD): "
                      "install both from one build",
                      exported->magic == ngx_gtls_stream_export_t::kMagic ? exported->version : 0,
                      ngx_gtls_stream_export_t::kVersion);
        *mismatch = true;
        return nullptr;
    }
    return exported;
}
