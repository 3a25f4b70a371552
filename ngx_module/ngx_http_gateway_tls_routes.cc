// gateway_tls_routes at run time: the rewrite-phase handler that matches a
// request against its location's table and acts on the rule it takes
// (answers, redirects, or names the backend and passes it by its scheme),
// its mirrors, the header filter of its response header modifier, and
// what the API and a reload check of a table's rules (the directives:
// ngx_http_gateway_tls_routes_conf.cc; the variables:
// ngx_http_gateway_tls_route_variables.cc).

#include "ngx_http_gateway_tls_routes.h"

#include <algorithm>
#include <array>

#include "gtls_http_fields.h"
#include "gtls_routes_json.h"
#include "ngx_gtls_status.h"
#include "ngx_http_gateway_tls_module.h"

namespace {

// What the matcher reads of an nginx request.
class NgxRouteRequest final : public gtls::RouteRequest {
public:
    explicit NgxRouteRequest(ngx_http_request_t *r) : r_(r)
    {
        method = ngx_gtls_sv(r->method_name);
        path = ngx_gtls_sv(r->uri);
        args = ngx_gtls_sv(r->args);
    }

    std::optional<std::string_view> header(std::string_view lowercase_name) const override
    {
        for (ngx_list_part_t *part = &r_->headers_in.headers.part; part; part = part->next) {
            auto *h = static_cast<ngx_table_elt_t *>(part->elts);
            for (ngx_uint_t i = 0; i < part->nelts; i++) {
                if (h[i].key.len == lowercase_name.size()
                    && ngx_strncasecmp(h[i].key.data, reinterpret_cast<u_char *>(const_cast<char *>(lowercase_name.data())),
                                       lowercase_name.size()) == 0) {
                    return ngx_gtls_sv(h[i].value);
                }
            }
        }
        return std::nullopt;
    }

private:
    ngx_http_request_t *r_;
};

// The port the request came to, for a redirect that keeps it
unsigned ngx_http_gtls_local_port(ngx_http_request_t *r)
{
    if (ngx_connection_local_sockaddr(r->connection, nullptr, 0) != NGX_OK) {
        return 0;
    }
    return ngx_inet_get_port(r->connection->local_sockaddr);
}

ngx_int_t ngx_http_gtls_redirect(ngx_http_request_t *r, const gtls::RouteChoice &choice)
{
    gtls::RequestTarget target;
#if (NGX_HTTP_SSL)
    target.scheme = r->connection->ssl != nullptr ? "https" : "http";
#else
    target.scheme = "http";
#endif
    target.host = ngx_gtls_sv(r->headers_in.server);
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    target.port = lcf->routes_port != 0 ? static_cast<unsigned>(lcf->routes_port) : ngx_http_gtls_local_port(r);
    target.path = ngx_gtls_sv(r->uri);
    target.args = ngx_gtls_sv(r->args);
    if (r->headers_in.host != nullptr) {
        target.host_header = ngx_gtls_sv(r->headers_in.host->value);
    }
    target.request_uri = ngx_gtls_sv(r->unparsed_uri);
    const gtls::Redirect &redirect = *choice.action->redirect;
    const std::string location = gtls::redirect_location(redirect, *choice.match, target);

    auto *value = static_cast<u_char *>(ngx_pnalloc(r->pool, location.size()));
    if (value == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_memcpy(value, location.data(), location.size());
    ngx_http_clear_location(r);
    r->headers_out.location = static_cast<ngx_table_elt_t *>(ngx_list_push(&r->headers_out.headers));
    if (r->headers_out.location == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    r->headers_out.location->hash = 1;
#if (nginx_version >= 1023000)
    r->headers_out.location->next = nullptr;
#endif
    ngx_str_set(&r->headers_out.location->key, "Location");
    r->headers_out.location->value.data = value;
    r->headers_out.location->value.len = location.size();
    return static_cast<ngx_int_t>(redirect.status);
}

// A copy of `text` in the request's pool
u_char *ngx_http_gtls_pool_copy(ngx_http_request_t *r, std::string_view text)
{
    auto *data = static_cast<u_char *>(ngx_pnalloc(r->pool, text.size() + 1));
    if (data != nullptr) {
        ngx_memcpy(data, text.data(), text.size());
        data[text.size()] = '\0';
    }
    return data;
}

bool ngx_http_gtls_is_host(const ngx_table_elt_t &h)
{
    return h.key.len == 4 && ngx_strncasecmp(h.key.data, const_cast<u_char *>(reinterpret_cast<const u_char *>("host")), 4) == 0;
}

// The header fields the rule's filters send: headers_in's list, which the
// proxy sends from, rebuilt; the Host kept for $gateway_tls_route_host
// (the proxy sends the list's own Host never). What nginx parsed
// (headers_in.host, .cookie, ...) stays the client's, as the $http_
// variables of those names do with proxy_set_header.
ngx_int_t ngx_http_gtls_edit_request_headers(ngx_http_request_t *r, ngx_http_gtls_request_t *state,
                                             const gtls::RouteAction &action, const gtls::WeightedBackend *backend)
{
    std::vector<gtls::HeaderField> fields;
    std::vector<ngx_table_elt_t *> elts;
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            fields.push_back({ngx_gtls_sv(h[i].key), ngx_gtls_sv(h[i].value)});
            elts.push_back(&h[i]);
        }
    }
    const gtls::HeaderEdits edits = gtls::edit_request_headers(fields, action, backend);
    ngx_list_t sent;
    if (ngx_list_init(&sent, r->pool, fields.size() + edits.appended.size() + 1, sizeof(ngx_table_elt_t)) != NGX_OK) {
        return NGX_ERROR;
    }
    state->route_headers_edited = true;
    state->route_host = {0, nullptr};
    for (size_t i = 0; i < elts.size(); i++) {
        if (!edits.dropped[i]) {
            auto *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&sent));
            *h = *elts[i];
        }
    }
    for (const gtls::HeaderValue &field : edits.appended) {
        auto *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&sent));
        u_char *name = ngx_http_gtls_pool_copy(r, field.name);
        u_char *value = ngx_http_gtls_pool_copy(r, field.value);
        auto *lowcase = static_cast<u_char *>(ngx_pnalloc(r->pool, field.name.size()));
        if (name == nullptr || value == nullptr || lowcase == nullptr) {
            return NGX_ERROR;
        }
        h->key = {field.name.size(), name};
        h->value = {field.value.size(), value};
        // the proxy skips a name it sets itself by this hash
        h->hash = ngx_hash_strlow(lowcase, name, field.name.size());
        h->lowcase_key = lowcase;
#if (nginx_version >= 1023000)
        h->next = nullptr;
#endif
    }
    r->headers_in.headers = sent;
    for (ngx_list_part_t *part = &sent.part; part && state->route_host.data == nullptr; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            if (ngx_http_gtls_is_host(h[i])) {
                state->route_host = h[i].value;
                break;
            }
        }
    }
    return NGX_OK;
}

// URLRewrite's path: $uri becomes it and the proxy sends it as a rewrite's
// (escaped, with the request's $args)
ngx_int_t ngx_http_gtls_rewrite_uri(ngx_http_request_t *r, const gtls::PathRewrite &rewrite,
                                    const gtls::RouteMatch &match)
{
    const std::string path = gtls::rewritten_path(rewrite, match, ngx_gtls_sv(r->uri));
    u_char *data = ngx_http_gtls_pool_copy(r, path);
    if (data == nullptr) {
        return NGX_ERROR;
    }
    r->uri = {path.size(), data};
    r->valid_unparsed_uri = 0;
    r->quoted_uri = 1;
    return NGX_OK;
}

// The upstream{} a rule's backend names, looked up at the first request
// that takes it in this worker and kept beside it; null: none
ngx_http_upstream_srv_conf_t *ngx_http_gtls_backend_upstream(ngx_http_request_t *r, const gtls::WeightedBackend &backend)
{
    if (backend.resolved == nullptr) {
        auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
        if (mcf->route_upstreams == nullptr) {
            return nullptr;
        }
        auto it = mcf->route_upstreams->find(backend.backend);
        if (it == mcf->route_upstreams->end()) {
            return nullptr;
        }
        backend.resolved = it->second;
    }
    return static_cast<ngx_http_upstream_srv_conf_t *>(const_cast<void *>(backend.resolved));
}

// A backend of another scheme than https is passed by the location's
// gateway_tls_routes_pass block for it, as an "if" block takes a request
// over: the block is the location from here on
ngx_int_t ngx_http_gtls_pass_by_scheme(ngx_http_request_t *r, const ngx_http_gtls_loc_conf_t *lcf,
                                       gtls::BackendScheme scheme)
{
    const int pass = ngx_http_gtls_pass_index(scheme);
    if (pass < 0) {
        return NGX_DECLINED;
    }
    if (lcf->routes_pass[pass] == nullptr) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gateway_tls: the rule's backend is spoken to by %s, and this location has no "
                      "\"gateway_tls_routes_pass %s\" block",
                      gtls::scheme_name(scheme), gtls::scheme_name(scheme));
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls: passed by its %s block",
                   gtls::scheme_name(scheme));
    r->loc_conf = lcf->routes_pass[pass];
    ngx_http_update_location_config(r);
    return NGX_DECLINED;
}

// The rewrite phase: where the location has a table, the request takes a
// rule or is answered.
ngx_int_t ngx_http_gtls_route_handler(ngx_http_request_t *r)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    if (lcf->routes == nullptr) {
        return NGX_DECLINED;
    }
    try {
        ngx_http_gtls_request_t *state = ngx_http_gtls_get_request(r, true);
        if (state == nullptr) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        if (state->route_entry != nullptr) {
            return NGX_DECLINED;  // taken before an internal redirect back here
        }
        auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
        ngx_http_gtls_catch_up(mcf);  // what another worker took: served here too

        const ngx_http_gtls_route_table_t &t = *lcf->routes;
        state->route_entry = t.table.find(ngx_gtls_sv(r->headers_in.server));
        if (state->route_entry == nullptr) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls routes \"%s\": no entry for the host",
                           t.name.c_str());
            return NGX_HTTP_NOT_FOUND;
        }
        const gtls::RouteChoice choice = state->route_entry->match(NgxRouteRequest(r));
        if (choice.regex_limit) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "gateway_tls: routes \"%s\" of \"%s\": a regular expression gave up at its match limit "
                          "and was taken as not matching",
                          t.name.c_str(), state->route_entry->host().c_str());
        }
        if (choice.match == nullptr) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls routes \"%s\": no match",
                           t.name.c_str());
            return NGX_HTTP_NOT_FOUND;
        }
        state->route_match = choice.match;
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls routes \"%s\": \"%s\" match %uz",
                       t.name.c_str(), state->route_entry->host().c_str(),
                       static_cast<size_t>(choice.match - state->route_entry->matches().data()));
        const gtls::RouteAction &action = *choice.action;
        if (action.redirect) {
            return ngx_http_gtls_redirect(r, choice);
        }
        if (action.status != 0) {
            return static_cast<ngx_int_t>(action.status);
        }
        const uint64_t total = gtls::total_weight(action.backends);
        const size_t share = total == 0 ? action.backends.size()
                                        : gtls::choose_backend(action.backends, static_cast<uint64_t>(ngx_random()) % total);
        if (share >= action.backends.size() || action.backends[share].backend.empty()) {
            // Gateway API: a share that cannot be served is answered 500
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "gateway_tls: routes \"%s\" of \"%s\": the request fell to a backend that cannot be served",
                          t.name.c_str(), state->route_entry->host().c_str());
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        const gtls::WeightedBackend &backend = action.backends[share];
        state->route_backend = backend.backend;
        state->route_upstream = ngx_http_gtls_backend_upstream(r, backend);
        state->route_scheme = gtls::scheme_name(backend.scheme);
        if (ngx_int_t rc = ngx_http_gtls_pass_by_scheme(r, lcf, backend.scheme); rc != NGX_DECLINED) {
            return rc;
        }
        if (backend.websocket) {
            state->route_upgrade = gtls::upgrade_sent(
                backend, r->headers_in.upgrade ? std::optional(ngx_gtls_sv(r->headers_in.upgrade->value)) : std::nullopt);
        }
        if (gtls::edits_request_headers(action, &backend)
            && ngx_http_gtls_edit_request_headers(r, state, action, &backend) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        if (action.rewrite && action.rewrite->path.kind != gtls::PathRewriteKind::None
            && ngx_http_gtls_rewrite_uri(r, action.rewrite->path, *choice.match) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return NGX_DECLINED;
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: %s", e.what());
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}

// Where a rule retries: its backend answered none of its tries (nginx's
// own 502) is 503, no backend available (GEP-1731), as the rendered
// error_page 502 =503 gives it; a backend's own 502 passes
ngx_int_t ngx_http_gtls_retries_exhausted(ngx_http_request_t *r, const gtls::RouteAction &action)
{
    if (action.retry_attempts == 0 || r->err_status != NGX_HTTP_BAD_GATEWAY || action.backends.empty()) {
        return NGX_DECLINED;
    }
    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls routes: every try failed: 503");
    return ngx_http_filter_finalize_request(r, &ngx_http_gateway_tls_module, NGX_HTTP_SERVICE_UNAVAILABLE);
}

// A rule's mirrors: a background subrequest each, for its share of the
// requests, to the location the table's location names (mirror=), which
// proxies to $gateway_tls_route_mirror; the answer is discarded, as
// ngx_http_mirror_module's
ngx_int_t ngx_http_gtls_send_mirrors(ngx_http_request_t *r, const ngx_http_gtls_request_t *state)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    const gtls::RouteAction &action = state->route_entry->actions()[state->route_match->action];
    for (const gtls::Mirror &m : action.mirrors) {
        if (!gtls::mirror_takes(m, static_cast<uint64_t>(ngx_random()))) {
            continue;
        }
        ngx_http_request_t *sr;
        if (ngx_http_subrequest(r, &lcf->routes_mirror, &r->args, &sr, nullptr, NGX_HTTP_SUBREQUEST_BACKGROUND) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        sr->header_only = 1;
        sr->method = r->method;
        sr->method_name = r->method_name;
        ngx_http_gtls_request_t *mirrored = ngx_http_gtls_get_request(sr, true);
        if (mirrored == nullptr) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        mirrored->route_entry = state->route_entry;  // holds the name
        mirrored->route_mirror = m.backend;
    }
    return NGX_DECLINED;
}

void ngx_http_gtls_mirror_body_read(ngx_http_request_t *r)
{
    ngx_http_gtls_request_t *state = ngx_http_gtls_get_request(r, false);
    state->route_mirror_status = ngx_http_gtls_send_mirrors(r, state);
    r->preserve_body = 1;
    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
}

// The precontent phase: the body read first, which the mirrors send too
ngx_int_t ngx_http_gtls_route_mirror_handler(ngx_http_request_t *r)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    ngx_http_gtls_request_t *state = r == r->main && lcf->routes != nullptr ? ngx_http_gtls_get_request(r, false) : nullptr;
    if (state == nullptr || state->route_match == nullptr
        || state->route_entry->actions()[state->route_match->action].mirrors.empty()) {
        return NGX_DECLINED;
    }
    if (state->route_mirror_status != NGX_AGAIN) {
        return state->route_mirror_status;  // sent once the body was read
    }
    state->route_mirror_status = NGX_DONE;  // until the body is read
    const ngx_int_t rc = ngx_http_read_client_request_body(r, ngx_http_gtls_mirror_body_read);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }
    ngx_http_finalize_request(r, NGX_DONE);
    return NGX_DONE;
}

ngx_http_output_header_filter_pt ngx_http_gtls_next_header_filter;

// The response's headers named `name` (any case) removed, as nginx
// removes one: hash 0, which the header filters skip
void ngx_http_gtls_hide_headers(ngx_list_t *headers, std::string_view name)
{
    for (ngx_list_part_t *part = &headers->part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            if (h[i].hash != 0 && h[i].key.len == name.size()
                && ngx_strncasecmp(h[i].key.data, reinterpret_cast<u_char *>(const_cast<char *>(name.data())), name.size()) == 0) {
                h[i].hash = 0;
            }
        }
    }
}

// A header added to the response; its name and value live in the entry
// the request holds
ngx_int_t ngx_http_gtls_add_header(ngx_http_request_t *r, const gtls::HeaderValue &header)
{
    auto *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&r->headers_out.headers));
    auto *lowcase = static_cast<u_char *>(ngx_pnalloc(r->pool, header.name.size()));
    if (h == nullptr || lowcase == nullptr) {
        return NGX_ERROR;
    }
    auto *name = reinterpret_cast<u_char *>(const_cast<char *>(header.name.data()));
    ngx_strlow(lowcase, name, header.name.size());
    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = nullptr;
#endif
    h->key = {header.name.size(), name};
    h->value = {header.value.size(), reinterpret_cast<u_char *>(const_cast<char *>(header.value.data()))};
    h->lowcase_key = lowcase;
    return NGX_OK;
}

// ResponseHeaderModifier of the rule a request took, on the headers its
// backend (or nginx) gave: as proxy_hide_header and add_header would
ngx_int_t ngx_http_gtls_route_header_filter(ngx_http_request_t *r)
{
    // only where a table routes (a response of another location, an
    // error_page's included, is that location's, as add_header's would be)
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    ngx_http_gtls_request_t *state = r == r->main && lcf->routes != nullptr ? ngx_http_gtls_get_request(r, false) : nullptr;
    if (state == nullptr || state->route_match == nullptr) {
        return ngx_http_gtls_next_header_filter(r);
    }
    const gtls::RouteAction &action = state->route_entry->actions()[state->route_match->action];
    if (ngx_int_t rc = ngx_http_gtls_retries_exhausted(r, action); rc != NGX_DECLINED) {
        return rc;
    }
    const gtls::HeaderModifier &m = action.response_headers;
    for (const std::string &name : m.remove) {
        ngx_http_gtls_hide_headers(&r->headers_out.headers, name);
    }
    for (const gtls::HeaderValue &h : m.set) {
        ngx_http_gtls_hide_headers(&r->headers_out.headers, h.name);
        if (ngx_http_gtls_add_header(r, h) != NGX_OK) {
            return NGX_ERROR;
        }
    }
    for (const gtls::HeaderValue &h : m.add) {
        if (ngx_http_gtls_add_header(r, h) != NGX_OK) {
            return NGX_ERROR;
        }
    }
    return ngx_http_gtls_next_header_filter(r);
}

}  // namespace

ngx_int_t ngx_http_gtls_route_upstream_conf(ngx_http_request_t *r)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    const ngx_http_gtls_request_t *state = lcf->routes != nullptr ? ngx_http_gtls_get_request(r, false) : nullptr;
    if (state == nullptr || state->route_match == nullptr || r->upstream == nullptr) {
        return NGX_OK;
    }
    const gtls::RouteAction &action = state->route_entry->actions()[state->route_match->action];
    const int64_t each = action.backend_timeout_ms >= 0 ? action.backend_timeout_ms : action.request_timeout_ms;
    if (each < 0 && action.retry_attempts == 0) {
        return NGX_OK;
    }
    auto *conf = static_cast<ngx_http_upstream_conf_t *>(ngx_palloc(r->pool, sizeof(ngx_http_upstream_conf_t)));
    if (conf == nullptr) {
        return NGX_ERROR;
    }
    *conf = *r->upstream->conf;
    if (each >= 0) {
        // each wait of a try, as the rendered proxy_*_timeout (0: a day)
        const ngx_msec_t ms = each == 0 ? 86400000 : static_cast<ngx_msec_t>(each);
        conf->connect_timeout = conf->send_timeout = conf->read_timeout = ms;
    }
    if (action.request_timeout_ms > 0) {
        conf->next_upstream_timeout = static_cast<ngx_msec_t>(action.request_timeout_ms);
    }
    if (action.retry_attempts > 0) {
        static const std::pair<unsigned, ngx_uint_t> kStatusCases[] = {
            {403, NGX_HTTP_UPSTREAM_FT_HTTP_403}, {404, NGX_HTTP_UPSTREAM_FT_HTTP_404},
            {429, NGX_HTTP_UPSTREAM_FT_HTTP_429}, {500, NGX_HTTP_UPSTREAM_FT_HTTP_500},
            {502, NGX_HTTP_UPSTREAM_FT_HTTP_502}, {503, NGX_HTTP_UPSTREAM_FT_HTTP_503},
            {504, NGX_HTTP_UPSTREAM_FT_HTTP_504}};
        conf->next_upstream = NGX_HTTP_UPSTREAM_FT_ERROR | NGX_HTTP_UPSTREAM_FT_TIMEOUT;
        for (unsigned code : action.retry_codes) {
            for (const auto &[status, ft] : kStatusCases) {
                if (code == status) conf->next_upstream |= ft;
            }
        }
        conf->next_upstream_tries = action.retry_attempts + 1;
    }
    r->upstream->conf = conf;
    return NGX_OK;
}

namespace {

struct ngx_http_gtls_table_row_t {
    const ngx_http_gtls_route_table_t             *table;
    uint64_t                                       generation = 0;
    std::array<uint64_t, NGX_GTLS_TABLE_COUNTERS>  counts{};
};

std::vector<ngx_http_gtls_table_row_t> ngx_http_gtls_table_rows(const ngx_http_gtls_route_tables_t *tables,
                                                                ngx_shm_zone_t *status_zone)
{
    std::vector<ngx_http_gtls_table_row_t> rows;
    if (tables == nullptr) {
        return rows;
    }
    for (const auto &[name, table] : *tables) {
        ngx_http_gtls_table_row_t &row = rows.emplace_back();
        row.table = &table;
        for (const auto &[host, h] : table.hosts) row.generation = std::max(row.generation, h.sequence);
        row.counts = ngx_gtls_table_counts(status_zone, name);
    }
    return rows;
}

}  // namespace

std::string ngx_http_gtls_route_tables_json(const ngx_http_gtls_route_tables_t *tables, ngx_shm_zone_t *status_zone)
{
    std::string out = ",\"route_tables\":[";
    bool first = true;
    for (const ngx_http_gtls_table_row_t &row : ngx_http_gtls_table_rows(tables, status_zone)) {
        const gtls::RouteTable &t = row.table->table;
        out += std::string(first ? "" : ",") + "{\"name\":" + gtls::json_string(row.table->name)
               + ",\"generation\":" + std::to_string(row.generation) + ",\"hostnames\":" + std::to_string(t.hosts())
               + ",\"matches\":" + std::to_string(t.matches())
               + ",\"replaced\":" + std::to_string(row.counts[NGX_GTLS_TABLE_REPLACED])
               + ",\"removed\":" + std::to_string(row.counts[NGX_GTLS_TABLE_REMOVED])
               + ",\"refused\":" + std::to_string(row.counts[NGX_GTLS_TABLE_REFUSED]) + "}";
        first = false;
    }
    return out + "]";
}

std::string ngx_http_gtls_route_tables_prometheus(const ngx_http_gtls_route_tables_t *tables,
                                                  ngx_shm_zone_t *status_zone)
{
    const std::vector<ngx_http_gtls_table_row_t> rows = ngx_http_gtls_table_rows(tables, status_zone);
    std::string out;
    auto family = [&](const char *name, const char *type, const char *help, auto value) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
        for (const ngx_http_gtls_table_row_t &row : rows) {
            value(name, "table=\"" + row.table->name + "\"", row);  // a table name is an API name: no escaping
        }
    };
    auto line = [&](const char *name, const std::string &labels, uint64_t v) {
        out += std::string(name) + "{" + labels + "} " + std::to_string(v) + "\n";
    };
    family("gateway_tls_route_table_generation", "gauge", "The newest state entry a route table holds.",
           [&](const char *n, const std::string &l, const ngx_http_gtls_table_row_t &row) { line(n, l, row.generation); });
    family("gateway_tls_route_table_hostnames", "gauge", "Hostnames a route table serves.",
           [&](const char *n, const std::string &l, const ngx_http_gtls_table_row_t &row) { line(n, l, row.table->table.hosts()); });
    family("gateway_tls_route_table_matches", "gauge", "Matches a route table holds.",
           [&](const char *n, const std::string &l, const ngx_http_gtls_table_row_t &row) { line(n, l, row.table->table.matches()); });
    family("gateway_tls_route_table_changes_total", "counter",
           "Hostnames' rules replaced or removed in a route table through the API.",
           [&](const char *n, const std::string &l, const ngx_http_gtls_table_row_t &row) {
               line(n, l + ",change=\"replaced\"", row.counts[NGX_GTLS_TABLE_REPLACED]);
               line(n, l + ",change=\"removed\"", row.counts[NGX_GTLS_TABLE_REMOVED]);
           });
    family("gateway_tls_route_table_refusals_total", "counter", "Upstream API PUTs naming a route table that were refused.",
           [&](const char *n, const std::string &l, const ngx_http_gtls_table_row_t &row) {
               line(n, l, row.counts[NGX_GTLS_TABLE_REFUSED]);
           });
    return out;
}

std::string ngx_http_gtls_routes_entry_name(std::string_view table, std::string_view host)
{
    return std::string(table) + " " + std::string(host);
}

bool ngx_http_gtls_split_routes_entry_name(std::string_view name, std::string_view *table, std::string_view *host)
{
    const size_t space = name.find(' ');
    if (space == std::string_view::npos) {
        return false;
    }
    *table = name.substr(0, space);
    *host = name.substr(space + 1);
    return true;
}

bool ngx_http_gtls_take_routes(ngx_http_gtls_route_table_t *t, const std::string &host,
                               std::shared_ptr<const gtls::HostRoutes> routes, uint64_t sequence)
{
    ngx_http_gtls_route_host_t &h = t->hosts[host];
    if (h.sequence >= sequence) {
        return false;
    }
    h.sequence = sequence;
    h.removed = routes == nullptr;
    h.matches = routes != nullptr ? routes->matches().size() : 0;
    if (routes != nullptr) {
        t->table.replace(std::move(routes));
    } else {
        t->table.remove(host);
    }
    return true;
}

namespace {

bool ngx_http_gtls_names_host(const gtls::HeaderModifier &m)
{
    auto host = [](std::string_view name) { return name.size() == 4 && ngx_strncasecmp(
        reinterpret_cast<u_char *>(const_cast<char *>(name.data())), const_cast<u_char *>(reinterpret_cast<const u_char *>("host")), 4) == 0; };
    return std::any_of(m.set.begin(), m.set.end(), [&](const gtls::HeaderValue &h) { return host(h.name); })
           || std::any_of(m.add.begin(), m.add.end(), [&](const gtls::HeaderValue &h) { return host(h.name); })
           || std::any_of(m.remove.begin(), m.remove.end(), host);
}

// Why a backend cannot be spoken to as it says (empty: it can): no
// location passes by its scheme, or plaintext to an upstream{} whose
// policy verifies TLS (never plaintext where TLS is asked)
std::string ngx_http_gtls_unserved_scheme(const gtls::WeightedBackend &b, ngx_http_gtls_route_support_t support)
{
    const int pass = ngx_http_gtls_pass_index(b.scheme);
    if (pass < 0) return {};
    if ((support.passes & (1u << pass)) == 0) {
        return std::string("no location passes it (gateway_tls_routes_pass ") + gtls::scheme_name(b.scheme) + ")";
    }
    if (!gtls::scheme_is_plaintext(b.scheme) || support.upstreams == nullptr || b.backend.empty()) return {};
    auto it = support.upstreams->find(b.backend);
    if (it == support.upstreams->end() || it->second->srv_conf == nullptr) return {};
    auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
        ngx_http_conf_upstream_srv_conf(it->second, ngx_http_gateway_tls_module));
    const ngx_uint_t kind = b.scheme == gtls::BackendScheme::Grpc ? NGX_HTTP_GTLS_GRPC : NGX_HTTP_GTLS_PROXY;
    if (ups->policy[kind].policy == nullptr) return {};
    return std::string(gtls::scheme_name(b.scheme)) + " is plaintext, and upstream{} " + gtls::json_string(b.backend)
           + " verifies its backends' TLS";
}

}  // namespace

std::string ngx_http_gtls_unserved_route_field(const gtls::HostRoutes &routes, ngx_http_gtls_route_support_t support)
{
    static const std::string kNoHost = ": no location sends $gateway_tls_route_host as the Host";
    for (size_t i = 0; i < routes.actions().size(); i++) {
        const gtls::RouteAction &a = routes.actions()[i];
        const std::string at = "actions[" + std::to_string(i) + "].";
        if (!a.mirrors.empty() && !support.mirrors) {
            return at + "mirrors: no location says where mirrors go (gateway_tls_routes ... mirror=/URI)";
        }
        auto unknown = [&](const std::string &name) {
            return support.upstreams != nullptr && !name.empty() && support.upstreams->count(name) == 0;
        };
        for (size_t b = 0; b < a.backends.size(); b++) {
            const std::string field = at + "backends[" + std::to_string(b) + "].";
            if (unknown(a.backends[b].backend)) {
                return field + "backend: no upstream{} " + gtls::json_string(a.backends[b].backend);
            }
            const std::string scheme = ngx_http_gtls_unserved_scheme(a.backends[b], support);
            if (!scheme.empty()) return field + "scheme: " + scheme;
        }
        for (size_t m = 0; m < a.mirrors.size(); m++) {
            if (unknown(a.mirrors[m].backend)) {
                return at + "mirrors[" + std::to_string(m) + "].backend: no upstream{} " + gtls::json_string(a.mirrors[m].backend);
            }
        }
        for (size_t c = 0; c < a.retry_codes.size(); c++) {
            if (!gtls::is_retryable_status(a.retry_codes[c])) {
                return at + "retry.codes[" + std::to_string(c) + "]: " + std::to_string(a.retry_codes[c])
                       + " is not retried: nginx retries on 403, 404, 429, 500, 502, 503 and 504";
            }
        }
        if (a.retry_backoff_ms > 0) return at + "retry.backoff_ms: nginx retries at once, without waiting between tries";
        if (support.host_sent) continue;
        if (a.rewrite && !a.rewrite->hostname.empty()) return at + "rewrite.hostname" + kNoHost;
        if (ngx_http_gtls_names_host(a.request_headers)) return at + "request_headers" + kNoHost;
        for (size_t b = 0; b < a.backends.size(); b++) {
            if (ngx_http_gtls_names_host(a.backends[b].request_headers)) {
                return at + "backends[" + std::to_string(b) + "].request_headers" + kNoHost;
            }
        }
    }
    return {};
}

ngx_int_t ngx_http_gtls_init_routes(ngx_conf_t *cf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    if (mcf->route_tables == nullptr) {
        return NGX_OK;
    }
    if (mcf->upstream_state == nullptr) {
        // each worker's table follows the others' through it, and a reload keeps it
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "gateway_tls_routes needs \"gateway_tls_upstream_state_zone\" in the http block");
        return NGX_ERROR;
    }
    auto *cmcf = static_cast<ngx_http_core_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module));
    // a rule may edit the Host only where it is sent (an index is what a
    // proxy_set_header's script took)
    auto *vars = static_cast<ngx_http_variable_t *>(cmcf->variables.elts);
    for (ngx_uint_t i = 0; i < cmcf->variables.nelts; i++) {
        if (ngx_gtls_sv(vars[i].name) == "gateway_tls_route_host") {
            mcf->route_support.host_sent = true;
        }
    }
    auto *h = static_cast<ngx_http_handler_pt *>(ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers));
    if (h == nullptr) {
        return NGX_ERROR;
    }
    *h = ngx_http_gtls_route_handler;
    h = static_cast<ngx_http_handler_pt *>(ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers));
    if (h == nullptr) {
        return NGX_ERROR;
    }
    *h = ngx_http_gtls_route_mirror_handler;
    ngx_http_gtls_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_gtls_route_header_filter;
    return NGX_OK;
}
