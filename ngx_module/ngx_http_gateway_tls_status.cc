// gateway_tls_status_zone and gateway_tls_status: the zone, and the
// endpoint that serves the counters of the http and stream policies as JSON
// or Prometheus.

#include "ngx_http_gateway_tls_status.h"

extern "C" {
#include <ngx_stream.h>
}

#include "ngx_gtls_nginx_layout.h"
#include "ngx_http_gateway_tls_module.h"
#include "ngx_http_gateway_tls_routes.h"

namespace {

// The stream module's status when it is loaded and configured (another
// .so: ngx_gtls_nginx_layout.h), checked at init_module.
ngx_gtls_status_t *ngx_http_gtls_stream_status(ngx_cycle_t *cycle)
{
    bool mismatch = false;
    const ngx_gtls_stream_export_t *exported = ngx_gtls_stream_export(cycle, cycle->log, &mismatch);
    return exported != nullptr ? exported->status : nullptr;
}

ngx_int_t ngx_http_gtls_status_handler(ngx_http_request_t *r)
{
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    if (ngx_int_t refused = ngx_http_gtls_access_check(r, lcf->status, "status endpoint", "gateway_tls_status_allow"); refused != NGX_OK) {
        return refused;
    }
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
    if (mcf->registry->status.zone == nullptr) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gateway_tls_status needs \"gateway_tls_status_zone\" in the http block");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_str_t format = ngx_null_string;
    bool prometheus = ngx_http_arg(r, (u_char *) "format", 6, &format) == NGX_OK && format.len == 10
                      && ngx_strncmp(format.data, "prometheus", 10) == 0;
    std::vector<ngx_gtls_status_t *> statuses = {&mcf->registry->status};
    if (ngx_gtls_status_t *stream = ngx_http_gtls_stream_status(const_cast<ngx_cycle_t *>(ngx_cycle))) {
        statuses.push_back(stream);
    }
    std::string body;
    try {
        ngx_shm_zone_t *zone = mcf->registry->status.zone;
        // the route tables where the configuration has them, as caught up
        // with what another worker took
        std::string tables;
        if (mcf->route_tables != nullptr) {
            ngx_http_gtls_catch_up(mcf);
            tables = prometheus ? ngx_http_gtls_route_tables_prometheus(mcf->route_tables, zone)
                                : ngx_http_gtls_route_tables_json(mcf->route_tables, zone);
        }
        body = prometheus ? ngx_gtls_status_prometheus(statuses, zone) + tables
                          : ngx_gtls_status_json(statuses, zone, tables);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: %s", e.what());
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_gtls_send(r, NGX_HTTP_OK, prometheus ? "text/plain; version=0.0.4" : "application/json", body);
}

}  // namespace

char *ngx_http_gtls_status_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(conf);

    if (mcf->registry->status.zone != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    ngx_shm_zone_t *zone = ngx_http_gtls_add_zone(cf, cmd, ngx_gtls_status_zone_name, ngx_gtls_status_init_zone);
    if (zone == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    mcf->registry->status.zone = zone;
    return NGX_CONF_OK;
}

char *ngx_http_gtls_status(ngx_conf_t *cf, ngx_command_t *, void *conf)
{
    static_cast<ngx_http_gtls_loc_conf_t *>(conf)->status.serves = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(
        ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = ngx_http_gtls_status_handler;
    return NGX_CONF_OK;
}


ngx_shm_zone_t *ngx_http_gtls_add_zone(ngx_conf_t *cf, ngx_command_t *cmd, const char *name, ngx_shm_zone_init_pt init)
{
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    ssize_t size = ngx_parse_size(&value[1]);
    if (size == NGX_ERROR || size < static_cast<ssize_t>(8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"%V\" directive: expected a size of at least %uz",
                           &value[1], &cmd->name, 8 * ngx_pagesize);
        return nullptr;
    }
    ngx_str_t zone_name = {ngx_strlen(name), (u_char *) name};
    ngx_shm_zone_t *zone = ngx_shared_memory_add(cf, &zone_name, static_cast<size_t>(size), &ngx_http_gateway_tls_module);
    if (zone != nullptr) {
        zone->init = init;
    }
    return zone;
}

ngx_int_t ngx_http_gtls_send(ngx_http_request_t *r, ngx_uint_t status, const char *content_type, const std::string &body)
{
    r->headers_out.status = status;
    r->headers_out.content_length_n = static_cast<off_t>(body.size());
    r->headers_out.content_type.len = ngx_strlen(content_type);
    r->headers_out.content_type.data = (u_char *) content_type;
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }
    ngx_buf_t *b = ngx_create_temp_buf(r->pool, body.size());
    if (b == nullptr) {
        return NGX_ERROR;
    }
    b->last = ngx_cpymem(b->pos, body.data(), body.size());
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}
