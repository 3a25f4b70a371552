// gateway_tls_routes at configuration: the directives (gateway_tls_routes,
// gateway_tls_routes_pass) and the upstream{} "gateway_tls_routes" that
// proxy_pass and grpc_pass name, whose peer init hands each request to the
// upstream{} its rule chose.

#include "ngx_http_gateway_tls_routes.h"

#include "gtls_upstream_api.h"
#include "ngx_http_gateway_tls_module.h"

namespace {

// `proxy_pass https://gateway_tls_routes`: the request goes on to the
// upstream{} its rule chose, through that upstream's own balancer,
// keepalive and TLS policy, as if proxy_pass had named it; no variable to
// evaluate, no URL to parse, no upstream{} looked for by name in a list
ngx_int_t ngx_http_gtls_route_peer_init(ngx_http_request_t *r, ngx_http_upstream_srv_conf_t *)
{
    const ngx_http_gtls_request_t *state = ngx_http_gtls_get_request(r, false);
    if (state == nullptr || state->route_backend.empty()) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gateway_tls: \"%s\" reached by a request no route table sent", kRouteUpstream);
        return NGX_ERROR;
    }
    ngx_http_upstream_srv_conf_t *chosen = state->route_upstream;
    if (chosen == nullptr) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: a route chose backend %s, which is no upstream{}",
                      gtls::json_string(state->route_backend).c_str());
        return NGX_ERROR;
    }
    r->upstream->upstream = chosen;
    return chosen->peer.init(r, chosen);
}

ngx_int_t ngx_http_gtls_route_upstream_init(ngx_conf_t *, ngx_http_upstream_srv_conf_t *uscf)
{
    uscf->peer.init = ngx_http_gtls_route_peer_init;
    return NGX_OK;
}

ngx_int_t ngx_http_gtls_add_route_upstream(ngx_conf_t *cf, ngx_http_gtls_main_conf_t *mcf)
{
    if (mcf->route_upstream != nullptr) {
        return NGX_OK;
    }
    ngx_url_t u{};
    u.host = {ngx_strlen(kRouteUpstream), reinterpret_cast<u_char *>(const_cast<char *>(kRouteUpstream))};
    u.no_resolve = 1;
    u.no_port = 1;
    // as an upstream{} block would: no DNS name, no servers of its own
    mcf->route_upstream = ngx_http_upstream_add(cf, &u, NGX_HTTP_UPSTREAM_CREATE);
    if (mcf->route_upstream == nullptr) {
        return NGX_ERROR;
    }
    mcf->route_upstream->peer.init_upstream = ngx_http_gtls_route_upstream_init;
    return NGX_OK;
}

}  // namespace

char *ngx_http_gtls_routes(ngx_conf_t *cf, ngx_command_t *, void *conf)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(conf);
    if (lcf->routes != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    const std::string_view name = ngx_gtls_sv(static_cast<ngx_str_t *>(cf->args->elts)[1]);
    if (!gtls::is_api_name(name)) {  // the API names it in its JSON
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "gateway_tls_routes: invalid table name \"%V\"",
                           &static_cast<ngx_str_t *>(cf->args->elts)[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (ngx_uint_t i = 2; i < cf->args->nelts; i++) {
        ngx_str_t &arg = static_cast<ngx_str_t *>(cf->args->elts)[i];
        if (arg.len > 5 && ngx_strncmp(arg.data, "port=", 5) == 0 && lcf->routes_port == 0) {
            // the Gateway listener's port, which a redirect keeps (nginx
            // may listen on another, behind a Service)
            const ngx_int_t port = ngx_atoi(arg.data + 5, arg.len - 5);
            if (port >= 1 && port <= 65535) {
                lcf->routes_port = static_cast<ngx_uint_t>(port);
                continue;
            }
        } else if (arg.len > 8 && ngx_strncmp(arg.data, "mirror=/", 8) == 0 && lcf->routes_mirror.len == 0) {
            // where a rule's mirror subrequests go: a location that
            // proxies to $gateway_tls_route_mirror
            lcf->routes_mirror = {arg.len - 7, arg.data + 7};
            mcf->route_support.mirrors = true;
            continue;
        }
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "gateway_tls_routes: invalid parameter \"%V\" (port=1..65535, mirror=/URI)",
                           &arg);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    try {
        if (mcf->route_tables == nullptr) {
            mcf->route_tables = ngx_gtls_pool_new<ngx_http_gtls_route_tables_t>(cf->pool);
            if (mcf->route_tables == nullptr) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        }
        auto it = mcf->route_tables->find(name);
        if (it == mcf->route_tables->end()) {
            it = mcf->route_tables->emplace(std::string(name), ngx_http_gtls_route_table_t{}).first;
            it->second.name = std::string(name);
        }
        lcf->routes = &it->second;
        if (ngx_http_gtls_add_route_upstream(cf, mcf) != NGX_OK) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    } catch (const std::exception &e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "gateway_tls: %s", e.what());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

int ngx_http_gtls_pass_index(gtls::BackendScheme scheme)
{
    switch (scheme) {
    case gtls::BackendScheme::Http: return NGX_HTTP_GTLS_PASS_HTTP;
    case gtls::BackendScheme::Grpcs: return NGX_HTTP_GTLS_PASS_GRPCS;
    case gtls::BackendScheme::Grpc: return NGX_HTTP_GTLS_PASS_GRPC;
    case gtls::BackendScheme::Https: break;
    }
    return -1;
}

char *ngx_http_gtls_routes_pass(ngx_conf_t *cf, ngx_command_t *, void *conf)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    const std::string_view name = ngx_gtls_sv(value[1]);
    int pass = -1;
    for (gtls::BackendScheme scheme : {gtls::BackendScheme::Http, gtls::BackendScheme::Grpcs, gtls::BackendScheme::Grpc}) {
        if (name == gtls::scheme_name(scheme)) pass = ngx_http_gtls_pass_index(scheme);
    }
    if (pass < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "gateway_tls_routes_pass: invalid scheme \"%V\" (http, grpcs or grpc; https is the location's own)",
                           &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (lcf->routes_pass[pass] != nullptr) {
        return const_cast<char *>("is duplicate");
    }

    // a location of its own, nested and nameless, as limit_except's
    auto *pctx = static_cast<ngx_http_conf_ctx_t *>(cf->ctx);
    auto *ctx = static_cast<ngx_http_conf_ctx_t *>(ngx_pcalloc(cf->pool, sizeof(ngx_http_conf_ctx_t)));
    if (ctx == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ctx->main_conf = pctx->main_conf;
    ctx->srv_conf = pctx->srv_conf;
    ctx->loc_conf = static_cast<void **>(ngx_pcalloc(cf->pool, sizeof(void *) * ngx_http_max_module));
    if (ctx->loc_conf == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (ngx_uint_t i = 0; cf->cycle->modules[i]; i++) {
        if (cf->cycle->modules[i]->type != NGX_HTTP_MODULE) {
            continue;
        }
        auto *module = static_cast<ngx_http_module_t *>(cf->cycle->modules[i]->ctx);
        if (module->create_loc_conf) {
            ctx->loc_conf[cf->cycle->modules[i]->ctx_index] = module->create_loc_conf(cf);
            if (ctx->loc_conf[cf->cycle->modules[i]->ctx_index] == nullptr) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        }
    }
    auto *pclcf = static_cast<ngx_http_core_loc_conf_t *>(pctx->loc_conf[ngx_http_core_module.ctx_index]);
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ctx->loc_conf[ngx_http_core_module.ctx_index]);
    clcf->loc_conf = ctx->loc_conf;
    clcf->name = pclcf->name;
    clcf->noname = 1;
    if (ngx_http_add_location(cf, &pclcf->locations, clcf) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    lcf->routes_pass[pass] = ctx->loc_conf;
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    mcf->route_support.passes |= 1u << pass;

    ngx_conf_t save = *cf;
    cf->ctx = ctx;
    cf->cmd_type = NGX_HTTP_LIF_CONF;
    char *rv = ngx_conf_parse(cf, nullptr);
    *cf = save;
    return rv;
}
