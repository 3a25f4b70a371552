// The variables of gateway_tls_routes: what the rule a request took
// chose ($gateway_tls_route_backend, _host, _scheme, ...), and what the
// rendered routes need of nginx's request that no stock variable gives
// ($gateway_tls_redirect_path, $gateway_tls_has_http_NAME).

#include "ngx_http_gateway_tls_routes.h"

#include "gtls_http_fields.h"
#include "gtls_routes.h"
#include "ngx_http_gateway_tls_module.h"

namespace {

enum ngx_http_gtls_route_variable_e {
    NGX_HTTP_GTLS_ROUTE_BACKEND,
    NGX_HTTP_GTLS_ROUTE_MATCH,
    NGX_HTTP_GTLS_ROUTE_HOST,
    NGX_HTTP_GTLS_ROUTE_MIRROR,
    NGX_HTTP_GTLS_ROUTE_UPGRADE,
    NGX_HTTP_GTLS_ROUTE_CONNECTION,
    NGX_HTTP_GTLS_ROUTE_SCHEME,
    NGX_HTTP_GTLS_REDIRECT_PATH
};

// $gateway_tls_route_host: the Host the rule's filters send, else the
// client's ($http_host); not found (not sent) where they removed it
ngx_int_t ngx_http_gtls_route_host_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
                                            ngx_http_gtls_request_t *state)
{
    const ngx_str_t *host = state != nullptr && state->route_headers_edited ? &state->route_host
                            : r->headers_in.host != nullptr                ? &r->headers_in.host->value
                                                                           : nullptr;
    if (host == nullptr || host->data == nullptr) {
        return NGX_OK;
    }
    return ngx_gtls_variable_bytes(v, host->data, host->len);
}

// $gateway_tls_route_backend: the backend the request's rule chose;
// $gateway_tls_route: "HOST match N", the rule it took;
// $gateway_tls_redirect_path: $uri$is_args$args as a Location holds them
ngx_int_t ngx_http_gtls_route_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    if (data == NGX_HTTP_GTLS_REDIRECT_PATH) {
        return ngx_gtls_variable_text(r->pool, v, gtls::location_path(ngx_gtls_sv(r->uri), ngx_gtls_sv(r->args)));
    }
    ngx_http_gtls_request_t *state = ngx_http_gtls_get_request(r, false);
    v->not_found = 1;
    if (data == NGX_HTTP_GTLS_ROUTE_HOST) {
        return ngx_http_gtls_route_host_variable(r, v, state);
    }
    if (data == NGX_HTTP_GTLS_ROUTE_UPGRADE || data == NGX_HTTP_GTLS_ROUTE_CONNECTION) {
        // as the rendered maps: Upgrade only to a WebSocket backend, and
        // Connection "upgrade" with it, "close" otherwise
        const std::string_view upgrade = state != nullptr ? state->route_upgrade : std::string_view();
        const std::string_view value = data == NGX_HTTP_GTLS_ROUTE_UPGRADE ? upgrade
                                       : upgrade.empty()                  ? std::string_view("close")
                                                                          : std::string_view("upgrade");
        return ngx_gtls_variable_bytes(v, value.data(), value.size());
    }
    if (data == NGX_HTTP_GTLS_ROUTE_MIRROR) {
        if (state == nullptr || state->route_mirror.empty()) {
            return NGX_OK;
        }
        // the subrequest holds the entry the name lives in
        return ngx_gtls_variable_bytes(v, state->route_mirror.data(), state->route_mirror.size());
    }
    if (state == nullptr || state->route_match == nullptr) {
        return NGX_OK;
    }
    if (data == NGX_HTTP_GTLS_ROUTE_SCHEME) {
        if (state->route_scheme.empty()) {
            return NGX_OK;
        }
        return ngx_gtls_variable_bytes(v, state->route_scheme.data(), state->route_scheme.size());
    }
    if (data == NGX_HTTP_GTLS_ROUTE_BACKEND) {
        if (state->route_backend.empty()) {
            return NGX_OK;
        }
        // the request holds the entry the name lives in
        return ngx_gtls_variable_bytes(v, state->route_backend.data(), state->route_backend.size());
    }
    return ngx_gtls_variable_text(r->pool, v,
                                  state->route_entry->host() + " match "
                                      + std::to_string(state->route_match - state->route_entry->matches().data()));
}

// $gateway_tls_has_http_NAME: "1" where the request has a field that
// $http_NAME reads, else "0": a rendered header match tells a field that
// is not there from an empty one, as the route table does
constexpr std::string_view kHasHeaderPrefix = "gateway_tls_has_http_";

ngx_int_t ngx_http_gtls_has_header_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    const std::string_view suffix = ngx_gtls_sv(*reinterpret_cast<ngx_str_t *>(data)).substr(kHasHeaderPrefix.size());
    bool found = false;
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part != nullptr && !found; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts && !found; i++) {
            found = gtls::variable_names_field(suffix, ngx_gtls_sv(h[i].key));
        }
    }
    return ngx_gtls_variable_bytes(v, found ? "1" : "0", 1);
}

}  // namespace

ngx_int_t ngx_http_gtls_add_route_variables(ngx_conf_t *cf)
{
    ngx_str_t has_header{kHasHeaderPrefix.size(), reinterpret_cast<u_char *>(const_cast<char *>(kHasHeaderPrefix.data()))};
    ngx_http_variable_t *has = ngx_http_add_variable(cf, &has_header, NGX_HTTP_VAR_PREFIX | NGX_HTTP_VAR_NOCACHEABLE);
    if (has == nullptr) {
        return NGX_ERROR;
    }
    has->get_handler = ngx_http_gtls_has_header_variable;

    static const std::pair<const char *, uintptr_t> kVariables[] = {
        {"gateway_tls_route_backend", NGX_HTTP_GTLS_ROUTE_BACKEND},
        {"gateway_tls_route", NGX_HTTP_GTLS_ROUTE_MATCH},
        {"gateway_tls_route_host", NGX_HTTP_GTLS_ROUTE_HOST},
        {"gateway_tls_route_mirror", NGX_HTTP_GTLS_ROUTE_MIRROR},
        {"gateway_tls_route_upgrade", NGX_HTTP_GTLS_ROUTE_UPGRADE},
        {"gateway_tls_route_connection", NGX_HTTP_GTLS_ROUTE_CONNECTION},
        {"gateway_tls_route_scheme", NGX_HTTP_GTLS_ROUTE_SCHEME},
        {"gateway_tls_redirect_path", NGX_HTTP_GTLS_REDIRECT_PATH}};
    for (const auto &[text, which] : kVariables) {
        ngx_str_t name{ngx_strlen(text), reinterpret_cast<u_char *>(const_cast<char *>(text))};
        ngx_http_variable_t *var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOCACHEABLE);
        if (var == nullptr) {
            return NGX_ERROR;
        }
        var->get_handler = ngx_http_gtls_route_variable;
        var->data = which;
    }
    return NGX_OK;
}
