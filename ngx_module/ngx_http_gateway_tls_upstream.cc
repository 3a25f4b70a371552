// ngx_http_gateway_tls_module: the connection half. The certificate is
// judged in OpenSSL's cert_verify_callback (during the handshake, so a
// rejected backend never sees the request), and the balancer is wrapped so
// that neither a TLS session nor a keepalive connection crosses policies.

#include "ngx_http_gateway_tls_module.h"

namespace {

// The policy for this request's upstream: the upstream{} one if its
// upstream has one, else the location's. Null: stock nginx behaviour.
const gtls::Policy *ngx_http_gtls_effective_policy(ngx_http_request_t *r,
                                                   ngx_http_gtls_kind_e *kind)
{
    ngx_http_upstream_t *u = r->upstream;
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));

    for (ngx_http_gtls_kind_e k : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
        if (mcf->ctx_index[k] < 0 || u->conf != r->loc_conf[mcf->ctx_index[k]]) {
            continue;
        }
        *kind = k;
        if (u->upstream != nullptr && u->upstream->srv_conf != nullptr) {
            auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
                ngx_http_conf_upstream_srv_conf(u->upstream, ngx_http_gateway_tls_module));
            if (ups->policy[k].policy != nullptr) {
                return ups->policy[k].policy;
            }
        }
        auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(
            ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
        return lcf->policy[k].policy;
    }
    return nullptr;
}

// The name checked when the policy lists no SANs: the upstream{}-level
// hostname, else the SNI name as nginx computes it (proxy_ssl_name, else
// the proxied host), without its port. nginx computes it only when
// proxy_ssl_server_name or stock proxy_ssl_verify is on, so we do it here.
std::string_view ngx_http_gtls_reference_name(ngx_http_request_t *r, const gtls::Policy *policy)
{
    if (!policy->hostname.empty()) {
        return policy->hostname;
    }

    ngx_http_upstream_t *u = r->upstream;
    ngx_str_t value = u->ssl_name;
    if (u->conf->ssl_name != nullptr
        && ngx_http_complex_value(r, u->conf->ssl_name, &value) != NGX_OK) {
        return {};
    }

    return gtls::host_of_server_name(ngx_gtls_sv(value));
}

// What this request's backend connection is made under (gtls::Binding):
// the name is the one verified and sent, or where nginx takes it from;
// the client certificate counts apart from the TLS context only when
// proxy_ssl_certificate names it through variables. None on failure.
std::optional<gtls::Binding> ngx_http_gtls_binding(ngx_http_request_t *r, const gtls::Policy *policy, ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_upstream_t *u = r->upstream;
    ngx_http_complex_value_t *certificate = u->conf->ssl_certificate;
    ngx_str_t path;
    if (certificate != nullptr && certificate->lengths != nullptr) {
        if (ngx_http_complex_value(r, certificate, &path) != NGX_OK) {
            return std::nullopt;
        }
    }
    return ngx_gtls_binding(policy, u->conf->ssl, ngx_http_gtls_reference_name(r, policy), us->host,
                                certificate != nullptr && certificate->lengths != nullptr ? &path : nullptr);
}

int ngx_http_gtls_decide(X509_STORE_CTX *x509_ctx, ngx_connection_t *c)
{
    auto *r = static_cast<ngx_http_request_t *>(c->data);
    if (c->idle || r == nullptr || r->upstream == nullptr) {
        X509_STORE_CTX_set_error(x509_ctx, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    ngx_http_upstream_t *u = r->upstream;
    ngx_http_gtls_kind_e kind = NGX_HTTP_GTLS_PROXY;
    const gtls::Policy *policy = ngx_http_gtls_effective_policy(r, &kind);
    ngx_http_gtls_request_t *state = policy != nullptr ? ngx_http_gtls_get_request(r, true) : nullptr;
    if (state != nullptr) {
        state->kind = kind;
    }
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
    return ngx_gtls_decide(
        x509_ctx, c, state, policy, u->conf->ssl_verify,
        [](void *owner, const gtls::Policy *p) {
            return ngx_http_gtls_reference_name(static_cast<ngx_http_request_t *>(owner), p);
        },
        r, u->peer.name, &mcf->registry->status);
}

void ngx_http_gtls_handshake_done(ngx_connection_t *c, ngx_gtls_connection_t *conn)
{
    ngx_gtls_resumed_verdict(ngx_http_gtls_get_request(static_cast<ngx_http_request_t *>(c->data), false), conn);
}

const gtls::Policy *ngx_http_gtls_connection_policy(ngx_connection_t *c)
{
    auto *r = static_cast<ngx_http_request_t *>(c->data);
    if (r == nullptr || r->upstream == nullptr) {
        return nullptr;
    }
    ngx_http_gtls_kind_e kind = NGX_HTTP_GTLS_PROXY;
    return ngx_http_gtls_effective_policy(r, &kind);
}

// gateway_tls_request_timeout expired: a request its backends have not
// answered is given the answer of a backend that timed out with no try
// left, 504 (the upstream module closes the backend connection and
// answers); one answered already keeps its answer.
void ngx_http_gtls_request_deadline(ngx_event_t *ev)
{
    auto *state = static_cast<ngx_http_gtls_request_t *>(ev->data);
    ngx_http_request_t *r = state->request;
    ngx_connection_t *c = r->connection;
    ngx_http_upstream_t *u = r->upstream;
    ngx_http_set_log_request(c->log, r);

    if (r->header_sent || u == nullptr || u->peer.connection == nullptr) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0, "gateway_tls request timeout: answered in time");
        return;
    }

    ngx_log_error(NGX_LOG_ERR, c->log, 0, "gateway_tls: no answer within the request timeout of %Mms",
                  state->deadline_ms);
    u->peer.tries = 0;
    u->peer.connection->read->timedout = 1;
    u->read_event_handler(r, u);
    ngx_http_run_posted_requests(c);
}

ngx_http_output_header_filter_pt ngx_http_gtls_deadline_next_header_filter;

// A backend's answer read after the deadline but before its timer ran
// (nginx handles a loop's events before its expired timers, and a worker
// busy past the deadline reads the answer first) is late all the same:
// answered as the timer would have, 504
ngx_int_t ngx_http_gtls_deadline_header_filter(ngx_http_request_t *r)
{
    ngx_http_gtls_request_t *state =
        r == r->main && r->upstream != nullptr ? ngx_http_gtls_get_request(r, false) : nullptr;
    if (state == nullptr || !state->deadline.timer_set
        || static_cast<ngx_msec_int_t>(state->deadline.timer.key - ngx_current_msec) > 0) {
        return ngx_http_gtls_deadline_next_header_filter(r);
    }
    ngx_del_timer(&state->deadline);
    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "gateway_tls: no answer within the request timeout of %Mms (the answer came late)",
                  state->deadline_ms);
    return ngx_http_filter_finalize_request(r, &ngx_http_gateway_tls_module, NGX_HTTP_GATEWAY_TIME_OUT);
}

// Arms gateway_tls_request_timeout (or the request timeout of the rule a
// route table gave the request) once a request (its main request), when
// its first backend try starts: the request has been read, where an
// HTTPRoute's request timeout may start.
ngx_int_t ngx_http_gtls_arm_deadline(ngx_http_request_t *r)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));
    ngx_msec_t timeout = lcf->request_timeout;
    if (lcf->routes != nullptr) {
        // a routed request: its rule's request timeout, where it gives one (0: none)
        const ngx_http_gtls_request_t *routed = ngx_http_gtls_get_request(r, false);
        if (routed != nullptr && routed->route_match != nullptr) {
            const int64_t ms = routed->route_entry->actions()[routed->route_match->action].request_timeout_ms;
            if (ms >= 0) timeout = static_cast<ngx_msec_t>(ms);
        }
    }
    if (timeout == 0 || r != r->main) {
        return NGX_OK;
    }
    ngx_http_gtls_request_t *state = ngx_http_gtls_get_request(r, true);
    if (state == nullptr) {
        return NGX_ERROR;
    }
    if (state->deadline_ms != 0) {
        return NGX_OK;  // an internal redirect's try: the deadline stands
    }
    state->deadline_ms = timeout;
    state->deadline.handler = ngx_http_gtls_request_deadline;
    state->deadline.data = state;
    state->deadline.log = r->connection->log;
    ngx_add_timer(&state->deadline, timeout);
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls request timeout: %Mms", timeout);
    return NGX_OK;
}

}  // namespace

ngx_int_t ngx_http_gtls_init_deadline_filter(ngx_conf_t *)
{
    ngx_http_gtls_deadline_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_gtls_deadline_header_filter;
    return NGX_OK;
}

ngx_http_gtls_request_t *ngx_http_gtls_get_request(ngx_http_request_t *r, bool create)
{
    auto *state = static_cast<ngx_http_gtls_request_t *>(
        ngx_http_get_module_ctx(r, ngx_http_gateway_tls_module));
    if (state != nullptr) {
        return state;
    }

    // an internal redirect (error_page) clears module contexts; the pool
    // cleanup keeps our state findable for the variables
    for (ngx_pool_cleanup_t *cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == gtls_glue::Recycled<ngx_http_gtls_request_t>::release
            && static_cast<ngx_http_gtls_request_t *>(cln->data)->request == r) {
            state = static_cast<ngx_http_gtls_request_t *>(cln->data);
            ngx_http_set_ctx(r, state, ngx_http_gateway_tls_module);
            return state;
        }
    }

    if (!create) {
        return nullptr;
    }

    state = gtls_glue::Recycled<ngx_http_gtls_request_t>::make(r->pool);
    if (state == nullptr) {
        return nullptr;
    }
    state->request = r;
    ngx_http_set_ctx(r, state, ngx_http_gateway_tls_module);
    return state;
}

ngx_int_t ngx_http_gtls_init_peer(ngx_http_request_t *r, ngx_http_upstream_srv_conf_t *us)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
    ngx_http_upstream_init_peer_pt original = mcf->implicit_init_peer;
    ngx_http_gtls_dynamic_t *dynamic = nullptr;
    if (us->srv_conf != nullptr) {
        auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(ngx_http_conf_upstream_srv_conf(us, ngx_http_gateway_tls_module));
        original = ups->original_init_peer;
        dynamic = ups->dynamic;
    }

    if (ngx_http_gtls_arm_deadline(r) != NGX_OK || ngx_http_gtls_route_upstream_conf(r) != NGX_OK) {
        return NGX_ERROR;
    }
    // servers and trust pushed through another worker count from now here too
    ngx_http_gtls_catch_up(mcf);
    // the balancer starts on the servers current now, and keeps them
    if (gtls_glue::init_on_current_servers(dynamic, r->pool, r->connection->log,
                                           [&] { return original(r, us); }) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_gtls_kind_e kind = NGX_HTTP_GTLS_PROXY;
    const gtls::Policy *policy = ngx_http_gtls_effective_policy(r, &kind);
    ngx_http_upstream_t *u = r->upstream;

    try {
        ngx_http_gtls_request_t *state = ngx_http_gtls_get_request(r, policy != nullptr);
        if (state != nullptr) {
            state->policy = policy;
            state->kind = kind;
            state->verdict.reset();
        }
        if (policy == nullptr) {
            return NGX_OK;
        }
        if (state == nullptr) {
            return NGX_ERROR;
        }

        if (!u->ssl) {
            // fail closed: a policy never lets a request go out in plaintext
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "gateway_tls: policy \"%s\" requires TLS, but upstream \"%V\" is "
                          "proxied in plaintext",
                          policy->name.c_str(), &us->host);
            return NGX_ERROR;
        }

        auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(ngx_http_get_module_srv_conf(r, ngx_http_gateway_tls_module));
        if (!ngx_gtls_gate_admits(r->connection->log, scf->insecure, *policy, &us->host,
                                  kind == NGX_HTTP_GTLS_GRPC ? "grpc" : "proxy")) {
            return NGX_ERROR;
        }

        return ngx_gtls_start_backend(r->connection->log, state, policy, ngx_http_gtls_binding(r, policy, us),
                                      &mcf->registry->sessions, &u->peer);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
}

// OpenSSL's cert_verify_callback replaces X509_verify_cert for the whole
// handshake, so the decision is ours and is made before any byte of the
// request is sent.
void ngx_http_gtls_install_ssl_hooks(SSL_CTX *ctx)
{
    static const ngx_gtls_hooks_t hooks = {ngx_http_gtls_decide, ngx_http_gtls_handshake_done,
                                            ngx_http_gtls_connection_policy};
    ngx_gtls_install_ssl_hooks(ctx, &hooks);
}

ngx_int_t ngx_http_gtls_init_ssl_indexes(ngx_log_t *log)
{
    return ngx_gtls_init_connection_index(log);
}
