// ngx_http_gateway_tls_module: directives, configuration merge and
// variables. The verification itself is gtls::verify (ngx_module/core);
// the connection hooks are in ngx_http_gateway_tls_upstream.cc.

#include "ngx_http_gateway_tls_module.h"

#include "ngx_gtls_nginx_layout.h"
#include "ngx_http_gateway_tls_h2c.h"
#include "ngx_http_gateway_tls_ssl_share.h"
#include "gtls_share.h"

#include <algorithm>
#include <cstddef>
#include <new>

namespace {

// by ngx_http_gtls_kind_e
const char *const kPrefix[] = {"proxy", "grpc"};
const char *const kUpstreamModule[] = {"ngx_http_proxy_module", "ngx_http_grpc_module"};
static_assert(sizeof kPrefix / sizeof kPrefix[0] == NGX_HTTP_GTLS_KINDS, "a prefix per kind");
static_assert(sizeof kUpstreamModule / sizeof kUpstreamModule[0] == NGX_HTTP_GTLS_KINDS, "a module per kind");

// The policies a policy directive sets (the field at cmd->offset of them):
// a location's, or in upstream{} the upstream's.
void *ngx_http_gtls_policies(ngx_conf_t *cf, void *conf)
{
    if (cf->cmd_type == NGX_HTTP_UPS_CONF) {
        auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(
            ngx_http_conf_get_module_srv_conf(cf, ngx_http_gateway_tls_module));
        return &scf->policy;
    }
    return &static_cast<ngx_http_gtls_loc_conf_t *>(conf)->policy;
}

ngx_gtls_registry_t &ngx_http_gtls_registry(ngx_conf_t *cf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    return *mcf->registry;
}

char *ngx_http_gtls_verify_mode(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_verify_mode(cf, cmd, ngx_http_gtls_policies(cf, conf));
}

char *ngx_http_gtls_verify_san(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_verify_san(cf, cmd, ngx_http_gtls_policies(cf, conf));
}

char *ngx_http_gtls_verify_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_verify_pin(cf, cmd, ngx_http_gtls_policies(cf, conf));
}

char *ngx_http_gtls_verify_pin_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_verify_pin_certificate(cf, cmd, ngx_http_gtls_policies(cf, conf));
}

char *ngx_http_gtls_policy_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_policy_name(cf, cmd, ngx_http_gtls_policies(cf, conf));
}

char *ngx_http_gtls_policy_hostname(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_policy_hostname(cf, cmd, ngx_http_gtls_policies(cf, conf));
}

char *ngx_http_gtls_verify_ca(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_verify_ca(cf, cmd,
                                   ngx_gtls_field<ngx_gtls_policy_conf_t>(ngx_http_gtls_policies(cf, conf), cmd->offset),
                                   ngx_http_gtls_registry(cf));
}

char *ngx_http_gtls_policy_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_gtls_conf_policy_certificate(
        cf, cmd, ngx_gtls_field<ngx_gtls_policy_conf_t>(ngx_http_gtls_policies(cf, conf), cmd->offset),
        ngx_http_gtls_registry(cf));
}

// $VARIABLE of `gateway_tls_share $VARIABLE N/D`: "1" for N of every D
// requests that read it in this worker, evenly spread, else "".
ngx_int_t ngx_http_gtls_share_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    const bool taken = reinterpret_cast<gtls::EvenShare *>(data)->next();
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls share: %s", taken ? "taken" : "passed");
    v->data = const_cast<u_char *>(reinterpret_cast<const u_char *>("1"));
    v->len = taken ? 1 : 0;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    return NGX_OK;
}

char *ngx_http_gtls_share(ngx_conf_t *cf, ngx_command_t *, void *)
{
    ngx_str_t *value = static_cast<ngx_str_t *>(cf->args->elts);
    if (value[1].len < 2 || value[1].data[0] != '$') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid variable name \"%V\"", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_str_t name = {value[1].len - 1, value[1].data + 1};
    std::optional<gtls::Fraction> fraction = gtls::parse_fraction(ngx_gtls_sv(value[2]));
    if (!fraction) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid share \"%V\": NUMERATOR/DENOMINATOR, "
                           "0 <= NUMERATOR <= DENOMINATOR <= 2147483647", &value[2]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    // trivially destructible: the pool's memory is all it needs; each
    // worker counts in its own copy
    void *memory = ngx_palloc(cf->pool, sizeof(gtls::EvenShare));
    if (memory == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    // not changeable: a second definition of the name is refused
    ngx_http_variable_t *var = ngx_http_add_variable(cf, &name, 0);
    if (var == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    var->get_handler = ngx_http_gtls_share_variable;
    var->data = reinterpret_cast<uintptr_t>(new (memory) gtls::EvenShare(*fraction));
    return NGX_CONF_OK;
}

ngx_command_t ngx_http_gtls_commands[] = {
    {ngx_string("proxy_ssl_verify_mode"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_verify_mode,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy.mode),
     ngx_gtls_verify_modes},

    {ngx_string("proxy_ssl_verify_ca"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_verify_ca,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy),
     nullptr},

    {ngx_string("proxy_ssl_verify_san"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_1MORE,
     ngx_http_gtls_verify_san,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy),
     nullptr},

    {ngx_string("proxy_ssl_verify_pin"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_1MORE,
     ngx_http_gtls_verify_pin,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy),
     nullptr},

    {ngx_string("proxy_ssl_verify_pin_certificate"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_verify_pin_certificate,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy),
     nullptr},

    {ngx_string("proxy_ssl_policy_name"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_policy_name,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy),
     nullptr},

    {ngx_string("proxy_ssl_policy_hostname"),
     NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_policy_hostname,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy),
     nullptr},

    {ngx_string("proxy_ssl_policy_certificate"),
     NGX_HTTP_UPS_CONF | NGX_CONF_TAKE2,
     ngx_http_gtls_policy_certificate,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, proxy),
     nullptr},

    {ngx_string("grpc_ssl_verify_mode"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_verify_mode,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc.mode),
     ngx_gtls_verify_modes},

    {ngx_string("grpc_ssl_verify_ca"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_verify_ca,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc),
     nullptr},

    {ngx_string("grpc_ssl_verify_san"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_1MORE,
     ngx_http_gtls_verify_san,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc),
     nullptr},

    {ngx_string("grpc_ssl_verify_pin"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_1MORE,
     ngx_http_gtls_verify_pin,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc),
     nullptr},

    {ngx_string("grpc_ssl_verify_pin_certificate"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_verify_pin_certificate,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc),
     nullptr},

    {ngx_string("grpc_ssl_policy_name"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_policy_name,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc),
     nullptr},

    {ngx_string("grpc_ssl_policy_hostname"),
     NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_policy_hostname,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc),
     nullptr},

    {ngx_string("grpc_ssl_policy_certificate"),
     NGX_HTTP_UPS_CONF | NGX_CONF_TAKE2,
     ngx_http_gtls_policy_certificate,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_policies_t, grpc),
     nullptr},

    {ngx_string("proxy_ssl_verify_insecure"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_keyword,
     NGX_HTTP_SRV_CONF_OFFSET,
     offsetof(ngx_http_gtls_srv_conf_t, insecure),
     ngx_gtls_insecure_gates},

    {ngx_string("ssl_verify_client_pin"),
     NGX_HTTP_SRV_CONF | NGX_CONF_1MORE,
     ngx_gtls_conf_client_pin,
     NGX_HTTP_SRV_CONF_OFFSET,
     offsetof(ngx_http_gtls_srv_conf_t, client_pins),
     nullptr},

    {ngx_string("ssl_verify_client_pin_certificate"),
     NGX_HTTP_SRV_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_client_pin_certificate,
     NGX_HTTP_SRV_CONF_OFFSET,
     offsetof(ngx_http_gtls_srv_conf_t, client_pins),
     nullptr},

    {ngx_string("ssl_verify_client_handshake"),
     NGX_HTTP_SRV_CONF | NGX_CONF_TAKE1,
     ngx_gtls_conf_client_handshake,
     NGX_HTTP_SRV_CONF_OFFSET,
     offsetof(ngx_http_gtls_srv_conf_t, client_pins.handshake),
     ngx_gtls_client_handshakes},

    {ngx_string("gateway_tls_certificate"),
     NGX_HTTP_SRV_CONF | NGX_CONF_TAKE1,
     ngx_conf_set_str_slot,
     NGX_HTTP_SRV_CONF_OFFSET,
     offsetof(ngx_http_gtls_srv_conf_t, certificate),
     nullptr},

    {ngx_string("gateway_tls_upstream_state_zone"),
     NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_upstream_state_zone,
     NGX_HTTP_MAIN_CONF_OFFSET,
     0,
     nullptr},

    {ngx_string("gateway_tls_upstream_api"),
     NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
     ngx_http_gtls_upstream_api,
     NGX_HTTP_LOC_CONF_OFFSET,
     0,
     nullptr},

    {ngx_string("gateway_tls_upstream_api_allow"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_1MORE,
     ngx_http_gtls_access_allow,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_loc_conf_t, api),
     nullptr},

    {ngx_string("gateway_tls_upstream_api_token_file"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE12,
     ngx_http_gtls_access_token_file,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_loc_conf_t, api),
     nullptr},

    {ngx_string("gateway_tls_status_zone"),
     NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_status_zone,
     NGX_HTTP_MAIN_CONF_OFFSET,
     0,
     nullptr},

    {ngx_string("gateway_tls_status"),
     NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
     ngx_http_gtls_status,
     NGX_HTTP_LOC_CONF_OFFSET,
     0,
     nullptr},

    {ngx_string("gateway_tls_status_allow"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_1MORE,
     ngx_http_gtls_access_allow,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_loc_conf_t, status),
     nullptr},

    {ngx_string("gateway_tls_status_token_file"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE12,
     ngx_http_gtls_access_token_file,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_loc_conf_t, status),
     nullptr},

    {ngx_string("gateway_tls_h2c_preface"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_CONF_FLAG,
     ngx_http_gtls_h2c_preface,
     NGX_HTTP_SRV_CONF_OFFSET,
     offsetof(ngx_http_gtls_srv_conf_t, h2c_preface),
     nullptr},

    {ngx_string("gateway_tls_request_timeout"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     ngx_conf_set_msec_slot,
     NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_gtls_loc_conf_t, request_timeout),
     nullptr},

    {ngx_string("gateway_tls_routes"),
     NGX_HTTP_LOC_CONF | NGX_CONF_TAKE123,
     ngx_http_gtls_routes,
     NGX_HTTP_LOC_CONF_OFFSET,
     0,
     nullptr},

    {ngx_string("gateway_tls_routes_pass"),
     NGX_HTTP_LOC_CONF | NGX_CONF_BLOCK | NGX_CONF_TAKE1,
     ngx_http_gtls_routes_pass,
     NGX_HTTP_LOC_CONF_OFFSET,
     0,
     nullptr},

    {ngx_string("gateway_tls_share"),
     NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE2,
     ngx_http_gtls_share,
     NGX_HTTP_MAIN_CONF_OFFSET,
     0,
     nullptr},

    ngx_null_command};

// ---- configuration objects ----------------------------------------------

void *ngx_http_gtls_create_main_conf(ngx_conf_t *cf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_main_conf_t)));
    if (mcf == nullptr) {
        return nullptr;
    }
    try {
        mcf->registry = ngx_gtls_pool_new<ngx_gtls_registry_t>(cf->pool);
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
    mcf->catch_up = {ngx_http_gtls_catch_up_hook, mcf};
    return mcf->registry ? mcf : nullptr;
}

void *ngx_http_gtls_create_srv_conf(ngx_conf_t *cf)
{
    auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(
        ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_srv_conf_t)));
    if (scf == nullptr) {
        return nullptr;
    }
    scf->insecure = NGX_CONF_UNSET_UINT;
    scf->h2c_preface = NGX_CONF_UNSET;
    ngx_gtls_init_client_pin_conf(&scf->client_pins);
    ngx_gtls_init_policy_conf(&scf->policy[NGX_HTTP_GTLS_PROXY]);
    ngx_gtls_init_policy_conf(&scf->policy[NGX_HTTP_GTLS_GRPC]);
    return scf;
}

#ifdef SSL_CTRL_SET_TLSEXT_HOSTNAME
// nginx's SNI step (the public ngx_http_ssl_servername, which picks the
// server and switches to its SSL_CTX), then the client pins' session step:
// a new session is marked with the server picked, a resumed one must have
// been made for it.
int ngx_http_gtls_servername(ngx_ssl_conn_t *ssl_conn, int *ad, void *arg)
{
    int rc = ngx_http_ssl_servername(ssl_conn, ad, arg);
    if (rc == SSL_TLSEXT_ERR_ALERT_FATAL) {
        return rc;
    }
    if (!SSL_session_reused(ssl_conn)) {
        ngx_gtls_client_session_mark(ssl_conn);
        return rc;
    }
    return ngx_gtls_client_session_check(ssl_conn, ad) == SSL_TLSEXT_ERR_OK ? rc : SSL_TLSEXT_ERR_ALERT_FATAL;
}
#endif

char *ngx_http_gtls_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    auto *prev = static_cast<ngx_http_gtls_srv_conf_t *>(parent);
    auto *conf = static_cast<ngx_http_gtls_srv_conf_t *>(child);

    ngx_conf_merge_uint_value(conf->insecure, prev->insecure,
                              static_cast<ngx_uint_t>(NGX_GTLS_INSECURE_ALLOW));
    ngx_conf_merge_value(conf->h2c_preface, prev->h2c_preface, 0);

    // the ssl module has merged this server already: its SSL_CTX exists
    auto *sscf = static_cast<ngx_http_ssl_srv_conf_t *>(ngx_http_conf_get_module_srv_conf(cf, ngx_http_ssl_module));
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    if (ngx_gtls_install_client_pins(cf, &conf->client_pins, sscf ? &sscf->ssl : nullptr, sscf ? sscf->verify : 0,
                                     &mcf->registry->status) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (conf->certificate.len != 0
        && ngx_gtls_name_certificate(cf, &mcf->certificates, &mcf->catch_up, conf->certificate,
                                     sscf ? &sscf->ssl : nullptr,
                                     sscf != nullptr && sscf->certificate_values != nullptr)
               != NGX_CONF_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
#ifdef SSL_CTRL_SET_TLSEXT_HOSTNAME
    // every TLS server: a handshake begins in the listener's default server,
    // whatever server its SNI then picks
    if (sscf != nullptr && sscf->ssl.ctx != nullptr) {
        SSL_CTX_set_tlsext_servername_callback(sscf->ssl.ctx, ngx_http_gtls_servername);
    }
#endif
    return NGX_CONF_OK;
}

void *ngx_http_gtls_create_loc_conf(ngx_conf_t *cf)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(
        ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_loc_conf_t)));
    if (lcf == nullptr) {
        return nullptr;
    }
    ngx_gtls_init_policy_conf(&lcf->policy[NGX_HTTP_GTLS_PROXY]);
    ngx_gtls_init_policy_conf(&lcf->policy[NGX_HTTP_GTLS_GRPC]);
    lcf->request_timeout = NGX_CONF_UNSET_MSEC;
    return lcf;
}

// The module owns verification where a policy applies: stock
// proxy_ssl_verify would check the SNI name again after the handshake.
void ngx_http_gtls_supersede_stock_verify(ngx_conf_t *cf, ngx_http_upstream_conf_t *ucf,
                                          const ngx_http_gtls_policy_conf_t *pc, ngx_uint_t kind)
{
    if (pc->policy == nullptr || ucf->ssl_verify != 1) {
        return;
    }
    ngx_log_error(NGX_LOG_NOTICE, cf->log, 0,
                  "\"%s_ssl_verify_mode %s\" in %V:%ui supersedes \"%s_ssl_verify on\"",
                  kPrefix[kind], gtls::mode_name(pc->policy->mode), &pc->mode_file,
                  pc->mode_line, kPrefix[kind]);
    ucf->ssl_verify = 0;
}

char *ngx_http_gtls_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    auto *prev = static_cast<ngx_http_gtls_loc_conf_t *>(parent);
    auto *conf = static_cast<ngx_http_gtls_loc_conf_t *>(child);
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(
        ngx_http_conf_get_module_srv_conf(cf, ngx_http_gateway_tls_module));
    auto *ctx = static_cast<ngx_http_conf_ctx_t *>(cf->ctx);

    ngx_conf_merge_msec_value(conf->request_timeout, prev->request_timeout, 0);

    // an "if" (or limit_except) block of a routed location is that location:
    // the rule its request took is served there (its response headers,
    // mirrors, timeouts), whichever scheme the block passes by
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ctx->loc_conf[ngx_http_core_module.ctx_index]);
    if (conf->routes == nullptr && clcf->noname) {
        conf->routes = prev->routes;
        conf->routes_port = prev->routes_port;
        conf->routes_mirror = prev->routes_mirror;
    }
    if (!clcf->noname && conf->routes == nullptr
        && std::any_of(std::begin(conf->routes_pass), std::end(conf->routes_pass), [](void **p) { return p != nullptr; })) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "gateway_tls_routes_pass in a location without gateway_tls_routes: nothing would choose it");
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    if (ngx_http_gtls_merge_access(cf, &conf->api, &prev->api, "gateway_tls_upstream_api",
                                   "gateway_tls_upstream_api_token_file") != NGX_CONF_OK
        || ngx_http_gtls_merge_access(cf, &conf->status, &prev->status, "gateway_tls_status",
                                      "gateway_tls_status_token_file") != NGX_CONF_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    try {
        for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
            ngx_http_gtls_policy_conf_t *pc = &conf->policy[kind];

            if (ngx_gtls_merge_policy(cf, pc, &prev->policy[kind], kPrefix[kind], ngx_http_gtls_registry(cf)) != NGX_OK
                || ngx_gtls_check_gate(cf, pc, scf->insecure, kPrefix[kind]) != NGX_OK) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }

            if (mcf->ctx_index[kind] < 0) {
                continue;
            }

            // proxy's and grpc's loc confs start with ngx_http_upstream_conf_t,
            // and they merge before us
            auto *ucf = static_cast<ngx_http_upstream_conf_t *>(
                ctx->loc_conf[mcf->ctx_index[kind]]);

#if (NGX_GTLS_SSL_SHARE)
            if (ngx_http_gtls_adopt_shared_ssl(cf, ucf, kind) != NGX_OK) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }
#endif
            if (ucf->ssl != nullptr && ucf->ssl->ctx != nullptr) {
                ngx_http_gtls_install_ssl_hooks(ucf->ssl->ctx);
            }
            ngx_http_gtls_supersede_stock_verify(cf, ucf, pc, kind);

            ngx_http_upstream_srv_conf_t *uscf = ucf->upstream;
            if (uscf != nullptr && uscf->srv_conf != nullptr) {
                auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
                    ngx_http_conf_upstream_srv_conf(uscf, ngx_http_gateway_tls_module));
                if (ngx_gtls_check_gate(cf, &ups->policy[kind], scf->insecure, kPrefix[kind])
                    != NGX_OK) {
                    return static_cast<char *>(NGX_CONF_ERROR);
                }
                ngx_http_gtls_supersede_stock_verify(cf, ucf, &ups->policy[kind], kind);
            }
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "gateway_tls: %s", e.what());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

// Runs after the upstream module has set every upstream's peer.init and
// after proxy and grpc have merged (this module is appended last; only the
// share module in the same .so is ordered before them): builds
// upstream{}-level policies and puts our balancer wrapper in front.
char *ngx_http_gtls_init_main_conf(ngx_conf_t *cf, void *conf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(conf);
    auto *http_scf = static_cast<ngx_http_gtls_srv_conf_t *>(
        ngx_http_conf_get_module_srv_conf(cf, ngx_http_gateway_tls_module));

    for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
        if (ngx_gtls_find_http_upstream_conf(cf, kUpstreamModule[kind], kPrefix[kind], &mcf->ctx_index[kind])
            != NGX_OK) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    }

    if (ngx_http_gtls_init_ssl_indexes(cf->log) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    if (mcf->upstream_api && mcf->upstream_state == nullptr) {
        // without it a reload would silently bring back the configured servers
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "gateway_tls_upstream_api needs \"gateway_tls_upstream_state_zone\" in the http block");
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    auto *umcf = static_cast<ngx_http_upstream_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module));
    auto **uscfp = static_cast<ngx_http_upstream_srv_conf_t **>(umcf->upstreams.elts);

    try {
        if (mcf->route_upstream != nullptr) {
            mcf->route_upstreams = ngx_gtls_pool_new<std::unordered_map<std::string_view, ngx_http_upstream_srv_conf_t *>>(cf->pool);
            if (mcf->route_upstreams == nullptr) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            mcf->route_support.upstreams = mcf->route_upstreams;
        }
        for (ngx_uint_t i = 0; i < umcf->upstreams.nelts; i++) {
            ngx_http_upstream_srv_conf_t *uscf = uscfp[i];
            if (uscf == mcf->route_upstream) {
                continue;  // it hands each request on to another, whose own wrapper acts
            }
            if (mcf->route_upstreams != nullptr && uscf->srv_conf != nullptr) {
                mcf->route_upstreams->emplace(ngx_gtls_sv(uscf->host), uscf);
            }

            if (uscf->srv_conf == nullptr) {
                // implicit upstreams (proxy_pass https://host:port) all use
                // round robin, so one saved pointer serves them all
                mcf->implicit_init_peer = uscf->peer.init;
            } else {
                auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
                    ngx_http_conf_upstream_srv_conf(uscf, ngx_http_gateway_tls_module));
                ups->original_init_peer = uscf->peer.init;
                for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
                    if (ngx_gtls_build_policy(cf, &ups->policy[kind], kPrefix[kind], ngx_http_gtls_registry(cf)) != NGX_OK
                        || ngx_gtls_check_gate(cf, &ups->policy[kind], http_scf->insecure,
                                               kPrefix[kind]) != NGX_OK) {
                        return static_cast<char *>(NGX_CONF_ERROR);
                    }
                }
            }
            uscf->peer.init = ngx_http_gtls_init_peer;
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "gateway_tls: %s", e.what());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

// ---- variables -------------------------------------------------------------

// $upstream_ssl_* and $ssl_client_* (ngx_gtls_variables)
ngx_int_t ngx_http_gtls_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
    auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(ngx_http_get_module_srv_conf(r, ngx_http_gateway_tls_module));
    return ngx_gtls_variable(r->pool, v, static_cast<ngx_gtls_variable_e>(data), ngx_http_gtls_get_request(r, false),
                             r->connection, scf->client_pins.built);
}

// The name for proxy_ssl_name when a policy is bound to an upstream{}: its
// proxy_ssl_policy_hostname, else the upstream's own host name.
ngx_int_t ngx_http_gtls_policy_hostname_variable(ngx_http_request_t *r,
                                                 ngx_http_variable_value_t *v, uintptr_t)
{
    ngx_http_upstream_t *u = r->upstream;
    if (u == nullptr) {
        v->not_found = 1;
        return NGX_OK;
    }

    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
    ngx_http_upstream_srv_conf_t *uscf = u->upstream;
    ngx_str_t *host = uscf ? &uscf->host : u->resolved ? &u->resolved->host : nullptr;
    if (host == nullptr) {
        v->not_found = 1;
        return NGX_OK;
    }
    std::string_view name = ngx_gtls_sv(*host);

    if (uscf != nullptr && uscf->srv_conf != nullptr) {
        auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
            ngx_http_conf_upstream_srv_conf(uscf, ngx_http_gateway_tls_module));
        for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
            std::string_view configured = ngx_gtls_policy_hostname(ups->policy[kind]);
            if (mcf->ctx_index[kind] >= 0 && u->conf == r->loc_conf[mcf->ctx_index[kind]] && !configured.empty()) {
                name = configured;
            }
        }
    }
    return ngx_gtls_variable_bytes(v, name.data(), name.size());
}

ngx_int_t ngx_http_gtls_add_variables(ngx_conf_t *cf)
{
    for (const ngx_gtls_variable_t *gv = ngx_gtls_variables; gv->name.len; gv++) {
        ngx_str_t name = gv->name;
        ngx_http_variable_t *var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOCACHEABLE);
        if (var == nullptr) {
            return NGX_ERROR;
        }
        var->get_handler = ngx_http_gtls_variable;
        var->data = gv->which;
    }
    ngx_str_t hostname = ngx_string("upstream_ssl_policy_hostname");
    ngx_http_variable_t *var = ngx_http_add_variable(cf, &hostname, NGX_HTTP_VAR_NOCACHEABLE);
    if (var == nullptr) {
        return NGX_ERROR;
    }
    var->get_handler = ngx_http_gtls_policy_hostname_variable;
    return ngx_http_gtls_add_route_variables(cf);
}

// nginx picks the server by Host after the handshake picked one by SNI,
// and checks only that a verified handshake is not used for another name:
// a handshake that verified nothing (an unknown SNI, or none, landing in a
// default server without client validation) must not reach a server that
// verifies its clients either.
ngx_int_t ngx_http_gtls_client_handshake_handler(ngx_http_request_t *r)
{
    auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(ngx_http_get_module_srv_conf(r, ngx_http_gateway_tls_module));
    if (r->connection->ssl == nullptr) {
        return NGX_DECLINED;
    }
    auto *sscf = static_cast<ngx_http_ssl_srv_conf_t *>(ngx_http_get_module_srv_conf(r, ngx_http_ssl_module));
    const SSL_CTX *handshake = SSL_get_SSL_CTX(r->connection->ssl->connection);
    if (gtls::client_verified_for_server(scf->client_pins.built != nullptr, handshake, sscf->ssl.ctx)) {
        return NGX_DECLINED;
    }
    const char *sni = SSL_get_servername(r->connection->ssl->connection, TLSEXT_NAMETYPE_host_name);
    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "gateway_tls: client certificate pins \"%s\": the handshake was made for another server "
                  "(SNI \"%s\"), the request is misdirected",
                  scf->client_pins.built->record.name.c_str(),
                  gtls::escaped_text(sni != nullptr ? sni : "", gtls::kMaxNameText).c_str());
    return NGX_HTTP_MISDIRECTED_REQUEST;
}

ngx_int_t ngx_http_gtls_postconfiguration(ngx_conf_t *cf)
{
    auto *cmcf = static_cast<ngx_http_core_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module));
    auto *h = static_cast<ngx_http_handler_pt *>(ngx_array_push(&cmcf->phases[NGX_HTTP_POST_READ_PHASE].handlers));
    if (h == nullptr) {
        return NGX_ERROR;
    }
    *h = ngx_http_gtls_client_handshake_handler;
    if (ngx_http_gtls_init_deadline_filter(cf) != NGX_OK) {
        return NGX_ERROR;
    }
    return ngx_http_gtls_init_routes(cf);
}

ngx_http_module_t ngx_http_gtls_module_ctx = {
    ngx_http_gtls_add_variables,     // preconfiguration
    ngx_http_gtls_postconfiguration, // postconfiguration
    ngx_http_gtls_create_main_conf,  // create main configuration
    ngx_http_gtls_init_main_conf,    // init main configuration
    ngx_http_gtls_create_srv_conf,   // create server configuration
    ngx_http_gtls_merge_srv_conf,    // merge server configuration
    ngx_http_gtls_create_loc_conf,   // create location configuration
    ngx_http_gtls_merge_loc_conf     // merge location configuration
};

// Both .so files are configured now: the stream module's export, if it
// is loaded, must be of this build; the upstream API takes its upstreams.
ngx_int_t ngx_http_gtls_init_module(ngx_cycle_t *cycle)
{
    bool mismatch = false;
    ngx_gtls_stream_export_t *stream = ngx_gtls_stream_export(cycle, cycle->log, &mismatch);
    if (mismatch) {
        return NGX_ERROR;
    }
    if (ngx_http_gtls_init_h2c_preface(cycle) != NGX_OK) {
        return NGX_ERROR;
    }
    return ngx_http_gtls_init_dynamic_upstreams(cycle, stream);
}

}  // namespace

ngx_module_t ngx_http_gateway_tls_module = {
    NGX_MODULE_V1,
    &ngx_http_gtls_module_ctx,  // module context
    ngx_http_gtls_commands,     // module directives
    NGX_HTTP_MODULE,            // module type
    nullptr,                    // init master
    ngx_http_gtls_init_module,  // init module
    ngx_http_gtls_init_dynamic_process,  // init process
    nullptr,                    // init thread
    nullptr,                    // exit thread
    nullptr,                    // exit process
    nullptr,                    // exit master
    NGX_MODULE_V1_PADDING};
