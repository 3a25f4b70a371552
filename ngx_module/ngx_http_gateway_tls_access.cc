// The allow lists and bearer tokens of the http module's operator
// interfaces (ngx_http_gateway_tls_access.h).

#include "ngx_http_gateway_tls_access.h"

#include <stdexcept>
#include <string>

char *ngx_http_gtls_access_allow(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *access = ngx_gtls_field<ngx_http_gtls_access_t>(conf, cmd->offset);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    if (access->allow != nullptr || access->allow_unix) {
        return const_cast<char *>("is duplicate");
    }
    access->allow = ngx_array_create(cf->pool, cf->args->nelts, sizeof(ngx_cidr_t));
    if (access->allow == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        if (value[i].len == 5 && ngx_strncmp(value[i].data, "unix:", 5) == 0) {
            access->allow_unix = 1;
            continue;
        }
        auto *cidr = static_cast<ngx_cidr_t *>(ngx_array_push(access->allow));
        if (cidr == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        ngx_int_t rc = ngx_ptocidr(&value[i], cidr);
        if (rc == NGX_ERROR || (value[i].len == 3 && ngx_strncmp(value[i].data, "all", 3) == 0)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid value \"%V\" in \"%V\": an address, ADDRESS/PREFIX or \"unix:\" was expected",
                               &value[i], &cmd->name);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        if (rc == NGX_DONE) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0, "low address bits of %V are meaningless", &value[i]);
        }
    }
    return NGX_CONF_OK;
}

char *ngx_http_gtls_access_token_file(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *access = ngx_gtls_field<ngx_http_gtls_access_t>(conf, cmd->offset);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    if (access->token != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    ngx_str_t file = value[1];
    if (ngx_conf_full_name(cf->cycle, &file, 1) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    access->token = static_cast<gtls::AccessTokenDigest *>(ngx_pcalloc(cf->pool, sizeof(gtls::AccessTokenDigest)));
    if (access->token == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    // "group": nginx and the caller are users of one group, apart
    bool group_may_read = false;
    if (cf->args->nelts == 3) {
        if (value[2].len != 5 || ngx_strncmp(value[2].data, "group", 5) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\": \"group\" or nothing was expected",
                               &value[2]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        group_may_read = true;
    }
    try {
        *access->token = gtls::read_access_token_file(std::string(ngx_gtls_sv(file)), group_may_read);
    } catch (const std::exception &e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"%V\": %s", &cmd->name, e.what());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

char *ngx_http_gtls_merge_access(ngx_conf_t *cf, ngx_http_gtls_access_t *conf, const ngx_http_gtls_access_t *prev,
                                 const char *directive, const char *token_directive)
{
    if (conf->allow == nullptr && !conf->allow_unix) {
        conf->allow = prev->allow;
        conf->allow_unix = prev->allow_unix;
    }
    if (conf->token == nullptr) {
        conf->token = prev->token;
    }
    if (conf->serves && conf->token == nullptr) {
        auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"%s\" in location \"%V\" needs \"%s\": an address is no credential, nginx proxies "
                      "requests from its own",
                      directive, &clcf->name, token_directive);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

ngx_int_t ngx_http_gtls_access_check(ngx_http_request_t *r, const ngx_http_gtls_access_t &access, const char *what,
                                     const char *allow_directive)
{
    struct sockaddr *sa = r->connection->sockaddr;
    const bool address_allowed = sa->sa_family == AF_UNIX
                                     ? access.allow_unix
                                     : access.allow != nullptr && ngx_cidr_match(sa, access.allow) == NGX_OK;
    if (!address_allowed) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0, "gateway_tls: %s refused to %V: not in %s", what,
                      &r->connection->addr_text, allow_directive);
        return NGX_HTTP_FORBIDDEN;
    }
    ngx_table_elt_t *authorization = r->headers_in.authorization;
    if (access.token == nullptr || authorization == nullptr
        || !gtls::bearer_token_matches(ngx_gtls_sv(authorization->value), *access.token)) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0, "gateway_tls: %s refused to %V: %s", what,
                      &r->connection->addr_text,
                      authorization == nullptr ? "no bearer token" : "not its bearer token");
        ngx_table_elt_t *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&r->headers_out.headers));
        if (h == nullptr) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        ngx_memzero(h, sizeof(ngx_table_elt_t));
        h->hash = 1;
        ngx_str_set(&h->key, "WWW-Authenticate");
        ngx_str_set(&h->value, "Bearer");
        r->headers_out.www_authenticate = h;
        return NGX_HTTP_UNAUTHORIZED;
    }
    return NGX_OK;
}
