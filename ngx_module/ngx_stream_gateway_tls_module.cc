// ngx_stream_gateway_tls_module: backend certificate verification for the
// stream proxy (`proxy_ssl on`), with the directives and variables of the
// http module and the same invariants: the decision is made in the
// handshake, TLS sessions are cached per policy, nothing goes out in
// plaintext under a policy.
//
// The stream proxy's configuration struct is private to nginx; where its
// fields lie is found and checked in ngx_gtls_nginx_layout.cc.

#include <cstddef>

extern "C" {
#include <ngx_stream.h>
}

#include "ngx_gtls_client_pins.h"
#include "ngx_gtls_connection.h"
#include "ngx_gtls_nginx_layout.h"
#include "ngx_gtls_policy_conf.h"

namespace {

// The export comes first: the http module reads it (its status endpoint,
// its upstream API; ngx_gtls_nginx_layout.h).
typedef struct {
    ngx_gtls_stream_export_t                                     exported;
    ngx_gtls_registry_t                                         *registry;
    ngx_gtls_stream_proxy_layout_t                              *proxy;
    ngx_stream_upstream_init_peer_pt                             implicit_init_peer;
} ngx_stream_gtls_main_conf_t;
static_assert(offsetof(ngx_stream_gtls_main_conf_t, exported) == 0,
              "the http .so reads the export at the start of the main conf");

// A stream upstream{} whose servers the http module's upstream API may
// replace (ngx_gtls_dynamic_upstream.h).
using ngx_stream_gtls_dynamic_t = gtls_glue::DynamicUpstreamOf<ngx_stream_upstream_srv_conf_t,
                                                               ngx_stream_upstream_rr_peers_t, NGX_STREAM_UPSTREAM_BACKUP>;

typedef struct {
    ngx_gtls_client_pin_conf_t        client_pins;  // ssl_verify_client_pin*
    ngx_gtls_policy_conf_t            policy;
    ngx_uint_t                        insecure;
    ngx_stream_upstream_init_peer_pt  original_init_peer;
    ngx_stream_gtls_dynamic_t        *dynamic;      // servers the upstream API may replace
    ngx_str_t                         certificate;  // gateway_tls_certificate
} ngx_stream_gtls_srv_conf_t;

// What one stream session learnt about its backend connection.
using ngx_stream_gtls_state_t = ngx_gtls_backend_t;


}  // namespace

extern "C" ngx_module_t ngx_stream_gateway_tls_module;

namespace {


ngx_stream_gtls_main_conf_t *ngx_stream_gtls_main(ngx_stream_session_t *s)
{
    return static_cast<ngx_stream_gtls_main_conf_t *>(
        ngx_stream_get_module_main_conf(s, ngx_stream_gateway_tls_module));
}

ngx_stream_gtls_state_t *ngx_stream_gtls_state(ngx_stream_session_t *s, bool create)
{
    auto *state = static_cast<ngx_stream_gtls_state_t *>(
        ngx_stream_get_module_ctx(s, ngx_stream_gateway_tls_module));
    if (state != nullptr || !create) {
        return state;
    }
    state = ngx_gtls_pool_new<ngx_stream_gtls_state_t>(s->connection->pool);
    if (state != nullptr) {
        ngx_stream_set_ctx(s, state, ngx_stream_gateway_tls_module);
    }
    return state;
}

// The upstream{}'s policy when its upstream has one, else the server's.
const gtls::Policy *ngx_stream_gtls_policy(ngx_stream_session_t *s)
{
    ngx_stream_upstream_t *u = s->upstream;
    if (u != nullptr && u->upstream != nullptr && u->upstream->srv_conf != nullptr) {
        auto *ups = static_cast<ngx_stream_gtls_srv_conf_t *>(
            ngx_stream_conf_upstream_srv_conf(u->upstream, ngx_stream_gateway_tls_module));
        if (ups->policy.policy != nullptr) {
            return ups->policy.policy;
        }
    }
    auto *scf = static_cast<ngx_stream_gtls_srv_conf_t *>(
        ngx_stream_get_module_srv_conf(s, ngx_stream_gateway_tls_module));
    return scf->policy.policy;
}

// The SNI name as the stream proxy computes it: proxy_ssl_name, else the
// proxied host, without a port.
std::string_view ngx_stream_gtls_reference_name(ngx_stream_session_t *s, const gtls::Policy *policy)
{
    if (!policy->hostname.empty()) {
        return policy->hostname;
    }
    ngx_stream_gtls_main_conf_t *mcf = ngx_stream_gtls_main(s);
    void *pscf = s->srv_conf[mcf->proxy->ctx_index];
    auto *cv = *ngx_gtls_field<ngx_stream_complex_value_t *>(pscf, mcf->proxy->ssl_name);
    ngx_str_t value = s->upstream->ssl_name;
    if (cv != nullptr && ngx_stream_complex_value(s, cv, &value) != NGX_OK) {
        return {};
    }
    return gtls::host_of_server_name(ngx_gtls_sv(value));
}

// What this session's backend connection is made under (gtls::Binding),
// as for http. None on failure.
std::optional<gtls::Binding> ngx_stream_gtls_binding(ngx_stream_session_t *s, const gtls::Policy *policy,
                                    ngx_stream_upstream_srv_conf_t *us)
{
    ngx_stream_gtls_main_conf_t *mcf = ngx_stream_gtls_main(s);
    void *pscf = s->srv_conf[mcf->proxy->ctx_index];
    auto *certificate = *ngx_gtls_field<ngx_stream_complex_value_t *>(pscf, mcf->proxy->ssl_certificate);
    ngx_str_t path;
    if (certificate != nullptr && certificate->lengths != nullptr) {
        if (ngx_stream_complex_value(s, certificate, &path) != NGX_OK) {
            return std::nullopt;
        }
    }
    return ngx_gtls_binding(policy, *ngx_gtls_field<ngx_ssl_t *>(pscf, mcf->proxy->ssl),
                            ngx_stream_gtls_reference_name(s, policy), us->host,
                            certificate != nullptr && certificate->lengths != nullptr ? &path : nullptr);
}

int ngx_stream_gtls_decide(X509_STORE_CTX *x509_ctx, ngx_connection_t *c)
{
    auto *s = static_cast<ngx_stream_session_t *>(c->data);
    if (s == nullptr || s->upstream == nullptr) {
        X509_STORE_CTX_set_error(x509_ctx, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    ngx_stream_gtls_main_conf_t *mcf = ngx_stream_gtls_main(s);
    const gtls::Policy *policy = ngx_stream_gtls_policy(s);
    ngx_stream_gtls_state_t *state = policy != nullptr ? ngx_stream_gtls_state(s, true) : nullptr;
    void *pscf = s->srv_conf[mcf->proxy->ctx_index];
    return ngx_gtls_decide(
        x509_ctx, c, state, policy, *ngx_gtls_field<ngx_flag_t>(pscf, mcf->proxy->ssl_verify) == 1,
        [](void *owner, const gtls::Policy *p) {
            return ngx_stream_gtls_reference_name(static_cast<ngx_stream_session_t *>(owner), p);
        },
        s, s->upstream->peer.name, &mcf->registry->status);
}

void ngx_stream_gtls_handshake_done(ngx_connection_t *c, ngx_gtls_connection_t *conn)
{
    ngx_gtls_resumed_verdict(ngx_stream_gtls_state(static_cast<ngx_stream_session_t *>(c->data), false), conn);
}

const gtls::Policy *ngx_stream_gtls_connection_policy(ngx_connection_t *c)
{
    auto *s = static_cast<ngx_stream_session_t *>(c->data);
    return s != nullptr && s->upstream != nullptr ? ngx_stream_gtls_policy(s) : nullptr;
}

const ngx_gtls_hooks_t ngx_stream_gtls_hooks = {ngx_stream_gtls_decide, ngx_stream_gtls_handshake_done,
                                                ngx_stream_gtls_connection_policy};

ngx_int_t ngx_stream_gtls_init_peer(ngx_stream_session_t *s, ngx_stream_upstream_srv_conf_t *us)
{
    ngx_stream_gtls_main_conf_t *mcf = ngx_stream_gtls_main(s);
    ngx_stream_upstream_init_peer_pt original = mcf->implicit_init_peer;
    ngx_stream_gtls_dynamic_t *dynamic = nullptr;
    if (us->srv_conf != nullptr) {
        auto *ups = static_cast<ngx_stream_gtls_srv_conf_t *>(
            ngx_stream_conf_upstream_srv_conf(us, ngx_stream_gateway_tls_module));
        original = ups->original_init_peer;
        dynamic = ups->dynamic;
    }
    // servers and trust pushed through another worker count from now here too
    if (mcf->exported.catch_up.run != nullptr) {
        mcf->exported.catch_up.run(mcf->exported.catch_up.data);
    }
    // the balancer starts on the servers current now, and the session keeps them
    if (gtls_glue::init_on_current_servers(dynamic, s->connection->pool, s->connection->log,
                                           [&] { return original(s, us); }) != NGX_OK) {
        return NGX_ERROR;
    }
    const gtls::Policy *policy = ngx_stream_gtls_policy(s);
    if (policy == nullptr) {
        return NGX_OK;
    }
    void *pscf = s->srv_conf[mcf->proxy->ctx_index];
    if (*ngx_gtls_field<ngx_flag_t>(pscf, mcf->proxy->ssl_enable) != 1) {
        // an upstream{} policy behind a server without proxy_ssl: fail closed
        ngx_log_error(NGX_LOG_ERR, s->connection->log, 0,
                      "gateway_tls: policy \"%s\" requires TLS, but upstream \"%V\" is proxied "
                      "without \"proxy_ssl on\"", policy->name.c_str(), &us->host);
        return NGX_ERROR;
    }
    auto *scf = static_cast<ngx_stream_gtls_srv_conf_t *>(
        ngx_stream_get_module_srv_conf(s, ngx_stream_gateway_tls_module));
    if (!ngx_gtls_gate_admits(s->connection->log, scf->insecure, *policy, &us->host, "proxy")) {
        return NGX_ERROR;
    }
    try {
        ngx_stream_gtls_state_t *state = ngx_stream_gtls_state(s, true);
        if (state == nullptr) {
            return NGX_ERROR;
        }
        return ngx_gtls_start_backend(s->connection->log, state, policy, ngx_stream_gtls_binding(s, policy, us),
                                      &mcf->registry->sessions, &s->upstream->peer);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, s->connection->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
}

// ---- configuration ---------------------------------------------------------

ngx_gtls_registry_t &ngx_stream_gtls_registry(ngx_conf_t *cf)
{
    auto *mcf = static_cast<ngx_stream_gtls_main_conf_t *>(
        ngx_stream_conf_get_module_main_conf(cf, ngx_stream_gateway_tls_module));
    return *mcf->registry;
}

// Each directive's field is at cmd->offset of the srv conf; in upstream{}
// the conf nginx hands a directive is the upstream's srv conf already
// (stream upstream blocks have no other level). verify_ca loads into the
// module's registry of trust stores; the others are the shared handlers.
char *ngx_stream_gtls_verify_ca(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_verify_ca(cf, cmd, ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset),
                                   ngx_stream_gtls_registry(cf));
}

char *ngx_stream_gtls_policy_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_policy_certificate(cf, cmd, ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset),
                                            ngx_stream_gtls_registry(cf));
}

ngx_command_t ngx_stream_gtls_commands[] = {
    {ngx_string("proxy_ssl_verify_mode"),
     NGX_STREAM_MAIN_CONF | NGX_STREAM_SRV_CONF | NGX_STREAM_UPS_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_verify_mode,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy.mode),
     ngx_gtls_verify_modes},

    {ngx_string("proxy_ssl_verify_ca"),
     NGX_STREAM_MAIN_CONF | NGX_STREAM_SRV_CONF | NGX_STREAM_UPS_CONF | NGX_CONF_TAKE1,
     ngx_stream_gtls_verify_ca,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy),
     nullptr},

    {ngx_string("proxy_ssl_verify_san"),
     NGX_STREAM_MAIN_CONF | NGX_STREAM_SRV_CONF | NGX_STREAM_UPS_CONF | NGX_CONF_1MORE,
     ngx_gtls_conf_verify_san,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy),
     nullptr},

    {ngx_string("proxy_ssl_verify_pin"),
     NGX_STREAM_MAIN_CONF | NGX_STREAM_SRV_CONF | NGX_STREAM_UPS_CONF | NGX_CONF_1MORE,
     ngx_gtls_conf_verify_pin,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy),
     nullptr},

    {ngx_string("proxy_ssl_verify_pin_certificate"),
     NGX_STREAM_MAIN_CONF | NGX_STREAM_SRV_CONF | NGX_STREAM_UPS_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_verify_pin_certificate,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy),
     nullptr},

    {ngx_string("proxy_ssl_policy_name"),
     NGX_STREAM_MAIN_CONF | NGX_STREAM_SRV_CONF | NGX_STREAM_UPS_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_policy_name,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy),
     nullptr},

    {ngx_string("proxy_ssl_policy_hostname"),
     NGX_STREAM_UPS_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_policy_hostname,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy),
     nullptr},

    {ngx_string("proxy_ssl_policy_certificate"),
     NGX_STREAM_UPS_CONF | NGX_CONF_TAKE2,
     ngx_stream_gtls_policy_certificate,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, policy),
     nullptr},

    {ngx_string("proxy_ssl_verify_insecure"),
     NGX_STREAM_MAIN_CONF | NGX_STREAM_SRV_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_keyword,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, insecure),
     ngx_gtls_insecure_gates},

    {ngx_string("ssl_verify_client_pin"),
     NGX_STREAM_SRV_CONF | NGX_CONF_1MORE,
     ngx_gtls_conf_client_pin,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, client_pins),
     nullptr},

    {ngx_string("ssl_verify_client_pin_certificate"),
     NGX_STREAM_SRV_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_client_pin_certificate,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, client_pins),
     nullptr},

    {ngx_string("ssl_verify_client_handshake"),
     NGX_STREAM_SRV_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_client_handshake,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, client_pins.handshake),
     ngx_gtls_client_handshakes},

    {ngx_string("gateway_tls_certificate"),
     NGX_STREAM_SRV_CONF | NGX_CONF_TAKE1,
     ngx_conf_set_str_slot,
     NGX_STREAM_SRV_CONF_OFFSET,
     offsetof(ngx_stream_gtls_srv_conf_t, certificate),
     nullptr},

    ngx_null_command};

// For the http module's upstream API, at its init_module: every stream
// upstream{} with a zone and a balancer of round robin's family gets its
// shared state; the others are listed with the reason.
ngx_int_t ngx_stream_gtls_init_upstreams(ngx_cycle_t *cycle, ngx_gtls_upstream_set_t *set)
{
    auto *mcf = static_cast<ngx_stream_gtls_main_conf_t *>(
        ngx_stream_cycle_get_module_main_conf(cycle, ngx_stream_gateway_tls_module));
    auto *umcf = static_cast<ngx_stream_upstream_main_conf_t *>(
        ngx_stream_cycle_get_module_main_conf(cycle, ngx_stream_upstream_module));
    try {
        auto **uscfp = static_cast<ngx_stream_upstream_srv_conf_t **>(umcf->upstreams.elts);
        for (ngx_uint_t i = 0; i < umcf->upstreams.nelts; i++) {
            ngx_stream_upstream_srv_conf_t *uscf = uscfp[i];
            std::string why = ngx_stream_gtls_dynamic_t::not_dynamic(uscf);
            if (!why.empty()) {
                set->refused.emplace(ngx_gtls_sv(uscf->host), std::move(why));
                continue;
            }
            ngx_stream_gtls_dynamic_t *dyn = ngx_stream_gtls_dynamic_t::create(cycle, uscf, &mcf->registry->sessions);
            if (dyn == nullptr) {
                return NGX_ERROR;
            }
            static_cast<ngx_stream_gtls_srv_conf_t *>(ngx_stream_conf_upstream_srv_conf(uscf, ngx_stream_gateway_tls_module))
                ->dynamic = dyn;
            set->add(dyn);
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
    return NGX_OK;
}

void *ngx_stream_gtls_create_main_conf(ngx_conf_t *cf)
{
    auto *mcf = static_cast<ngx_stream_gtls_main_conf_t *>(ngx_pcalloc(cf->pool, sizeof(ngx_stream_gtls_main_conf_t)));
    if (mcf == nullptr) {
        return nullptr;
    }
    try {
        mcf->registry = ngx_gtls_pool_new<ngx_gtls_registry_t>(cf->pool);
        mcf->proxy = ngx_gtls_pool_new<ngx_gtls_stream_proxy_layout_t>(cf->pool);
    } catch (const std::exception &) {
        return nullptr;
    }
    if (mcf->registry == nullptr || mcf->proxy == nullptr) {
        return nullptr;
    }
    mcf->registry->status.kind = "stream";
    mcf->exported = ngx_gtls_stream_export_t{};
    mcf->exported.status = &mcf->registry->status;
    mcf->exported.init_upstreams = ngx_stream_gtls_init_upstreams;
    mcf->exported.sessions = &mcf->registry->sessions;
    return mcf;
}

// The stream proxy's srv conf fields (ngx_gtls_nginx_layout.cc).
char *ngx_stream_gtls_init_main_conf(ngx_conf_t *cf, void *conf)
{
    try {
        auto *mcf = static_cast<ngx_stream_gtls_main_conf_t *>(conf);
        if (ngx_gtls_find_stream_proxy_layout(cf, mcf->proxy) != NGX_OK) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }

        if (ngx_gtls_init_connection_index(cf->log) != NGX_OK) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }

        auto *umcf = static_cast<ngx_stream_upstream_main_conf_t *>(
            ngx_stream_conf_get_module_main_conf(cf, ngx_stream_upstream_module));
        auto **uscfp = static_cast<ngx_stream_upstream_srv_conf_t **>(umcf->upstreams.elts);
        for (ngx_uint_t i = 0; i < umcf->upstreams.nelts; i++) {
            ngx_stream_upstream_srv_conf_t *uscf = uscfp[i];
            if (uscf->srv_conf == nullptr) {
                mcf->implicit_init_peer = uscf->peer.init;
            } else {
                auto *ups = static_cast<ngx_stream_gtls_srv_conf_t *>(
                    ngx_stream_conf_upstream_srv_conf(uscf, ngx_stream_gateway_tls_module));
                ups->original_init_peer = uscf->peer.init;
                auto *top = static_cast<ngx_stream_gtls_srv_conf_t *>(
                    ngx_stream_conf_get_module_srv_conf(cf, ngx_stream_gateway_tls_module));
                if (ngx_gtls_build_policy(cf, &ups->policy, "proxy", ngx_stream_gtls_registry(cf)) != NGX_OK
                    || ngx_gtls_check_gate(cf, &ups->policy, top->insecure, "proxy") != NGX_OK) {
                    return static_cast<char *>(NGX_CONF_ERROR);
                }
            }
            uscf->peer.init = ngx_stream_gtls_init_peer;
        }
        return NGX_CONF_OK;
    } catch (const std::exception &e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "gateway_tls: %s", e.what());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
}

void *ngx_stream_gtls_create_srv_conf(ngx_conf_t *cf)
{
    auto *scf = static_cast<ngx_stream_gtls_srv_conf_t *>(ngx_pcalloc(cf->pool, sizeof(ngx_stream_gtls_srv_conf_t)));
    if (scf == nullptr) {
        return nullptr;
    }
    ngx_gtls_init_client_pin_conf(&scf->client_pins);
    ngx_gtls_init_policy_conf(&scf->policy);
    scf->insecure = NGX_CONF_UNSET_UINT;
    return scf;
}

char *ngx_stream_gtls_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    auto *prev = static_cast<ngx_stream_gtls_srv_conf_t *>(parent);
    auto *conf = static_cast<ngx_stream_gtls_srv_conf_t *>(child);
    auto *mcf = static_cast<ngx_stream_gtls_main_conf_t *>(
        ngx_stream_conf_get_module_main_conf(cf, ngx_stream_gateway_tls_module));
    auto *ctx = static_cast<ngx_stream_conf_ctx_t *>(cf->ctx);

    ngx_conf_merge_uint_value(conf->insecure, prev->insecure, static_cast<ngx_uint_t>(NGX_GTLS_INSECURE_ALLOW));
    try {
        if (ngx_gtls_merge_policy(cf, &conf->policy, &prev->policy, "proxy", ngx_stream_gtls_registry(cf)) != NGX_OK
            || ngx_gtls_check_gate(cf, &conf->policy, conf->insecure, "proxy") != NGX_OK) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "gateway_tls: %s", e.what());
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    const ngx_gtls_stream_proxy_layout_t &proxy = *mcf->proxy;

    // the server's own TLS (ngx_stream_ssl_module, merged before us)
    auto *sslcf = proxy.ssl_module_ctx_index >= 0
                      ? static_cast<ngx_gtls_stream_ssl_srv_conf_t *>(ctx->srv_conf[proxy.ssl_module_ctx_index])
                      : nullptr;
    if (ngx_gtls_install_client_pins(cf, &conf->client_pins, sslcf ? &sslcf->ssl : nullptr,
                                     sslcf ? sslcf->verify : 0, &mcf->registry->status) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    // replaced through the http module's upstream API, which finds it in the export
    if (conf->certificate.len != 0
        && ngx_gtls_name_certificate(cf, &mcf->exported.certificates, &mcf->exported.catch_up, conf->certificate,
                                     sslcf ? &sslcf->ssl : nullptr,
                                     sslcf != nullptr && sslcf->certificate_values != nullptr)
               != NGX_CONF_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
#if (nginx_version >= 1025005)
    // stream servers picked by SNI: sessions marked with theirs as tickets are made
    if (sslcf != nullptr && sslcf->ssl.ctx != nullptr
        && ngx_gtls_client_session_ticket_marks(cf, sslcf->ssl.ctx) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
#endif

    void *pscf = ctx->srv_conf[proxy.ctx_index];
    ngx_ssl_t *ssl = nullptr;
    if (ngx_gtls_stream_proxy_ssl(cf, proxy, pscf, &ssl) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (ssl != nullptr && ssl->ctx != nullptr) {
        ngx_gtls_install_ssl_hooks(ssl->ctx, &ngx_stream_gtls_hooks);
    }

    const ngx_gtls_policy_conf_t &pc = conf->policy;
    if (pc.policy == nullptr) {
        return NGX_CONF_OK;
    }
    // fail closed: a policy never lets a stream go out in plaintext
    if (*ngx_gtls_field<ngx_flag_t>(pscf, proxy.ssl_enable) != 1 || ssl == nullptr || ssl->ctx == nullptr) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"proxy_ssl_verify_mode %s\" in %V:%ui needs \"proxy_ssl on\"",
                      gtls::mode_name(pc.policy->mode), &pc.mode_file, pc.mode_line);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_flag_t *stock_verify = ngx_gtls_field<ngx_flag_t>(pscf, proxy.ssl_verify);
    if (*stock_verify == 1) {
        ngx_log_error(NGX_LOG_NOTICE, cf->log, 0,
                      "\"proxy_ssl_verify_mode %s\" in %V:%ui supersedes \"proxy_ssl_verify on\"",
                      gtls::mode_name(pc.policy->mode), &pc.mode_file, pc.mode_line);
        *stock_verify = 0;
    }
    return NGX_CONF_OK;
}

// ---- variables ---------------------------------------------------------------

// $upstream_ssl_* and $ssl_client_* (ngx_gtls_variables)
ngx_int_t ngx_stream_gtls_variable(ngx_stream_session_t *s, ngx_stream_variable_value_t *v, uintptr_t data)
{
    auto *scf = static_cast<ngx_stream_gtls_srv_conf_t *>(
        ngx_stream_get_module_srv_conf(s, ngx_stream_gateway_tls_module));
    return ngx_gtls_variable(s->connection->pool, v, static_cast<ngx_gtls_variable_e>(data),
                             ngx_stream_gtls_state(s, false), s->connection, scf->client_pins.built);
}

// For proxy_ssl_name: the upstream{} policy's hostname, else the
// upstream's own host name.
ngx_int_t ngx_stream_gtls_policy_hostname_variable(ngx_stream_session_t *s, ngx_stream_variable_value_t *v,
                                                   uintptr_t)
{
    ngx_stream_upstream_t *u = s->upstream;
    ngx_stream_upstream_srv_conf_t *uscf = u ? u->upstream : nullptr;
    if (uscf == nullptr) {
        v->not_found = 1;
        return NGX_OK;
    }
    std::string_view host = ngx_gtls_sv(uscf->host);
    if (uscf->srv_conf != nullptr) {
        auto *ups = static_cast<ngx_stream_gtls_srv_conf_t *>(
            ngx_stream_conf_upstream_srv_conf(uscf, ngx_stream_gateway_tls_module));
        std::string_view configured = ngx_gtls_policy_hostname(ups->policy);
        if (!configured.empty()) host = configured;
    }
    return ngx_gtls_variable_bytes(v, host.data(), host.size());
}

ngx_int_t ngx_stream_gtls_add_variables(ngx_conf_t *cf)
{
    for (const ngx_gtls_variable_t *gv = ngx_gtls_variables; gv->name.len; gv++) {
        ngx_str_t name = gv->name;
        ngx_stream_variable_t *var = ngx_stream_add_variable(cf, &name, NGX_STREAM_VAR_NOCACHEABLE);
        if (var == nullptr) {
            return NGX_ERROR;
        }
        var->get_handler = ngx_stream_gtls_variable;
        var->data = gv->which;
    }
    ngx_str_t hostname = ngx_string("upstream_ssl_policy_hostname");
    ngx_stream_variable_t *var = ngx_stream_add_variable(cf, &hostname, NGX_STREAM_VAR_NOCACHEABLE);
    if (var == nullptr) {
        return NGX_ERROR;
    }
    var->get_handler = ngx_stream_gtls_policy_hostname_variable;
    return NGX_OK;
}

// The counters go to the http block's gateway_tls_status_zone, when there
// is one: found once the cycle has made its shared memory.
ngx_int_t ngx_stream_gtls_init_module(ngx_cycle_t *cycle)
{
    if (cycle->conf_ctx[ngx_stream_module.index] == nullptr) {
        return NGX_OK;  // no stream block
    }
    auto *mcf = static_cast<ngx_stream_gtls_main_conf_t *>(
        ngx_stream_cycle_get_module_main_conf(cycle, ngx_stream_gateway_tls_module));
    if (mcf != nullptr && mcf->registry != nullptr) {
        mcf->registry->status.zone = ngx_gtls_status_find_zone(cycle);
    }
    return NGX_OK;
}

// After the handshake (the SSL phase): a session resumed from another
// server of the listener (nginx 1.25.5 picks stream servers by SNI) never
// reaches a server with client pins; the stream SSL module's SNI step is
// private, so the check comes here rather than in the handshake.
ngx_int_t ngx_stream_gtls_client_session_handler(ngx_stream_session_t *s)
{
    ngx_connection_t *c = s->connection;
    if (c->ssl == nullptr || c->ssl->connection == nullptr) {
        return NGX_DECLINED;
    }
    int alert = 0;
    if (ngx_gtls_client_session_check(c->ssl->connection, &alert) != SSL_TLSEXT_ERR_OK) {
        return NGX_ERROR;
    }
    return NGX_DECLINED;
}

ngx_int_t ngx_stream_gtls_postconfiguration(ngx_conf_t *cf)
{
    auto *cmcf = static_cast<ngx_stream_core_main_conf_t *>(
        ngx_stream_conf_get_module_main_conf(cf, ngx_stream_core_module));
    auto *h = static_cast<ngx_stream_handler_pt *>(ngx_array_push(&cmcf->phases[NGX_STREAM_PREREAD_PHASE].handlers));
    if (h == nullptr) {
        return NGX_ERROR;
    }
    *h = ngx_stream_gtls_client_session_handler;
    return NGX_OK;
}

ngx_stream_module_t ngx_stream_gtls_module_ctx = {
    ngx_stream_gtls_add_variables,     // preconfiguration
    ngx_stream_gtls_postconfiguration, // postconfiguration
    ngx_stream_gtls_create_main_conf,  // create main configuration
    ngx_stream_gtls_init_main_conf,    // init main configuration
    ngx_stream_gtls_create_srv_conf,   // create server configuration
    ngx_stream_gtls_merge_srv_conf     // merge server configuration
};

}  // namespace

ngx_module_t ngx_stream_gateway_tls_module = {
    NGX_MODULE_V1,
    &ngx_stream_gtls_module_ctx,  // module context
    ngx_stream_gtls_commands,     // module directives
    NGX_STREAM_MODULE,            // module type
    nullptr,                      // init master
    ngx_stream_gtls_init_module,  // init module
    nullptr,                      // init process
    nullptr,                      // init thread
    nullptr,                      // exit thread
    nullptr,                      // exit process
    nullptr,                      // exit master
    NGX_MODULE_V1_PADDING};
