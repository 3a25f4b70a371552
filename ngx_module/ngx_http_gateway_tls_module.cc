// ngx_http_gateway_tls_module: directives, configuration merge and
// variables. The verification itself is gtls::verify (ngx_module/core);
// the connection hooks are in ngx_http_gateway_tls_upstream.cc.

#include "ngx_http_gateway_tls_module.h"

#include <new>

namespace {

const char *const kPrefix[2] = {"proxy", "grpc"};
const char *const kUpstreamModule[2] = {"ngx_http_proxy_module", "ngx_http_grpc_module"};

enum { NGX_HTTP_GTLS_INSECURE_ALLOW = 0, NGX_HTTP_GTLS_INSECURE_DENY = 1 };

std::string_view sv(const ngx_str_t &s)
{
    return std::string_view(reinterpret_cast<const char *>(s.data), s.len);
}

// Every directive takes its kind (proxy or grpc) from cmd->offset, and
// writes the upstream{}-level conf when it stands in an upstream block.
ngx_http_gtls_policy_conf_t *ngx_http_gtls_policy_conf(ngx_conf_t *cf, ngx_command_t *cmd,
                                                       void *conf)
{
    if (cf->cmd_type == NGX_HTTP_UPS_CONF) {
        auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(
            ngx_http_conf_get_module_srv_conf(cf, ngx_http_gateway_tls_module));
        return &scf->policy[cmd->offset];
    }
    return &static_cast<ngx_http_gtls_loc_conf_t *>(conf)->policy[cmd->offset];
}

char *ngx_http_gtls_invalid(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t *value,
                            const std::string &why)
{
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid value \"%V\" in \"%V\" directive: %s", value,
                       &cmd->name, why.c_str());
    return static_cast<char *>(NGX_CONF_ERROR);
}

ngx_array_t *ngx_http_gtls_spec_array(ngx_conf_t *cf, ngx_array_t **array)
{
    if (*array == NGX_CONF_UNSET_PTR) {
        *array = ngx_array_create(cf->pool, 4, sizeof(ngx_str_t));
    }
    return *array;
}

char *ngx_http_gtls_verify_mode(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gtls_policy_conf_t *pc = ngx_http_gtls_policy_conf(cf, cmd, conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->mode != NGX_CONF_UNSET_UINT) {
        return const_cast<char *>("is duplicate");
    }

    auto mode = gtls::parse_mode(sv(value[1]));
    if (!mode) {
        return ngx_http_gtls_invalid(cf, cmd, &value[1],
                                     "expected off, strict, allow_expired, skip_san or skip");
    }

    pc->mode = static_cast<ngx_uint_t>(*mode);
    pc->mode_file = cf->conf_file->file.name;
    pc->mode_line = cf->conf_file->line;
    return NGX_CONF_OK;
}

char *ngx_http_gtls_verify_ca(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gtls_policy_conf_t *pc = ngx_http_gtls_policy_conf(cf, cmd, conf);
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->ca.data != nullptr) {
        return const_cast<char *>("is duplicate");
    }

    ngx_str_t source = value[1];
    if (sv(source) != "system" && ngx_conf_full_name(cf->cycle, &source, 1) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    // one store per file, however many scopes trust it
    std::string key(sv(source));
    if (mcf->stores->find(key) == mcf->stores->end()) {
        std::string error;
        gtls::X509StoreShared store = gtls::load_trust_store(key, &error);
        if (!store) {
            return ngx_http_gtls_invalid(cf, cmd, &value[1], error);
        }
        mcf->stores->emplace(key, std::move(store));
    }

    pc->ca = source;
    return NGX_CONF_OK;
}

// Validates each argument as a SPEC and appends it to *array; the core
// objects are built from the merged lists.
template <typename Parse>
char *ngx_http_gtls_add_specs(ngx_conf_t *cf, ngx_command_t *cmd, ngx_array_t **array,
                              Parse parse)
{
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    ngx_array_t *specs = ngx_http_gtls_spec_array(cf, array);
    if (specs == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        std::string error;
        if (!parse(sv(value[i]), &error)) {
            return ngx_http_gtls_invalid(cf, cmd, &value[i], error);
        }
        auto *spec = static_cast<ngx_str_t *>(ngx_array_push(specs));
        if (spec == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        *spec = value[i];
    }
    return NGX_CONF_OK;
}

char *ngx_http_gtls_verify_san(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_gtls_add_specs(cf, cmd, &ngx_http_gtls_policy_conf(cf, cmd, conf)->sans,
                                   gtls::parse_san_spec);
}

char *ngx_http_gtls_verify_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_gtls_add_specs(cf, cmd, &ngx_http_gtls_policy_conf(cf, cmd, conf)->pins,
                                   gtls::parse_pin_spec);
}

char *ngx_http_gtls_verify_pin_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gtls_policy_conf_t *pc = ngx_http_gtls_policy_conf(cf, cmd, conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    ngx_str_t path = value[1];
    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    std::vector<gtls::Pin> pins;
    std::string error;
    if (!gtls::load_pin_certificates(std::string(sv(path)), &pins, &error)) {
        return ngx_http_gtls_invalid(cf, cmd, &value[1], error);
    }

    ngx_array_t *specs = ngx_http_gtls_spec_array(cf, &pc->pin_certificates);
    if (specs == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (const gtls::Pin &pin : pins) {
        auto *spec = static_cast<ngx_str_t *>(ngx_array_push(specs));
        if (spec == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        spec->len = pin.spec.size();
        spec->data = static_cast<u_char *>(ngx_pnalloc(cf->pool, spec->len));
        if (spec->data == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        ngx_memcpy(spec->data, pin.spec.data(), spec->len);
    }
    return NGX_CONF_OK;
}

char *ngx_http_gtls_policy_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gtls_policy_conf_t *pc = ngx_http_gtls_policy_conf(cf, cmd, conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->name.data != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    if (value[1].len == 0) {
        return ngx_http_gtls_invalid(cf, cmd, &value[1], "empty name");
    }
    pc->name = value[1];
    return NGX_CONF_OK;
}

char *ngx_http_gtls_policy_hostname(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gtls_policy_conf_t *pc = ngx_http_gtls_policy_conf(cf, cmd, conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->hostname.data != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    std::string error;
    if (!gtls::parse_san_spec("dns:" + std::string(sv(value[1])), &error)) {
        return ngx_http_gtls_invalid(cf, cmd, &value[1], error);
    }
    pc->hostname = value[1];
    return NGX_CONF_OK;
}

char *ngx_http_gtls_verify_insecure(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (scf->insecure != NGX_CONF_UNSET_UINT) {
        return const_cast<char *>("is duplicate");
    }
    if (sv(value[1]) == "allow") {
        scf->insecure = NGX_HTTP_GTLS_INSECURE_ALLOW;
    } else if (sv(value[1]) == "deny") {
        scf->insecure = NGX_HTTP_GTLS_INSECURE_DENY;
    } else {
        return ngx_http_gtls_invalid(cf, cmd, &value[1], "expected allow or deny");
    }
    return NGX_CONF_OK;
}

#define NGX_HTTP_GTLS_ANY_CONF \
    (NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_HTTP_UPS_CONF)

#define NGX_HTTP_GTLS_COMMANDS(prefix, kind)                                                     \
    {ngx_string(prefix "_ssl_verify_mode"), NGX_HTTP_GTLS_ANY_CONF | NGX_CONF_TAKE1,            \
     ngx_http_gtls_verify_mode, NGX_HTTP_LOC_CONF_OFFSET, kind, nullptr},                        \
    {ngx_string(prefix "_ssl_verify_ca"), NGX_HTTP_GTLS_ANY_CONF | NGX_CONF_TAKE1,              \
     ngx_http_gtls_verify_ca, NGX_HTTP_LOC_CONF_OFFSET, kind, nullptr},                          \
    {ngx_string(prefix "_ssl_verify_san"), NGX_HTTP_GTLS_ANY_CONF | NGX_CONF_1MORE,             \
     ngx_http_gtls_verify_san, NGX_HTTP_LOC_CONF_OFFSET, kind, nullptr},                         \
    {ngx_string(prefix "_ssl_verify_pin"), NGX_HTTP_GTLS_ANY_CONF | NGX_CONF_1MORE,             \
     ngx_http_gtls_verify_pin, NGX_HTTP_LOC_CONF_OFFSET, kind, nullptr},                         \
    {ngx_string(prefix "_ssl_verify_pin_certificate"), NGX_HTTP_GTLS_ANY_CONF | NGX_CONF_TAKE1, \
     ngx_http_gtls_verify_pin_certificate, NGX_HTTP_LOC_CONF_OFFSET, kind, nullptr},             \
    {ngx_string(prefix "_ssl_policy_name"), NGX_HTTP_GTLS_ANY_CONF | NGX_CONF_TAKE1,            \
     ngx_http_gtls_policy_name, NGX_HTTP_LOC_CONF_OFFSET, kind, nullptr},                        \
    {ngx_string(prefix "_ssl_policy_hostname"), NGX_HTTP_UPS_CONF | NGX_CONF_TAKE1,             \
     ngx_http_gtls_policy_hostname, NGX_HTTP_LOC_CONF_OFFSET, kind, nullptr}

ngx_command_t ngx_http_gtls_commands[] = {
    NGX_HTTP_GTLS_COMMANDS("proxy", NGX_HTTP_GTLS_PROXY),
    NGX_HTTP_GTLS_COMMANDS("grpc", NGX_HTTP_GTLS_GRPC),

    {ngx_string("proxy_ssl_verify_insecure"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_CONF_TAKE1, ngx_http_gtls_verify_insecure,
     NGX_HTTP_SRV_CONF_OFFSET, 0, nullptr},

    {ngx_string("gateway_tls_status_zone"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     ngx_http_gtls_status_zone, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},

    {ngx_string("gateway_tls_status"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, ngx_http_gtls_status,
     NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},

    ngx_null_command};

// ---- configuration objects ----------------------------------------------

void ngx_http_gtls_init_policy_conf(ngx_http_gtls_policy_conf_t *pc)
{
    pc->mode = NGX_CONF_UNSET_UINT;
    pc->sans = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
    pc->pins = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
    pc->pin_certificates = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
}

void ngx_http_gtls_delete_main(void *data)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(data);
    if (mcf->sessions != nullptr) {
        for (auto &entry : *mcf->sessions) {
            SSL_SESSION_free(entry.second.session);
        }
    }
    delete mcf->sessions;
    delete mcf->stores;
    delete mcf->status;
}

void *ngx_http_gtls_create_main_conf(ngx_conf_t *cf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_main_conf_t)));
    if (mcf == nullptr) {
        return nullptr;
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == nullptr) {
        return nullptr;
    }
    try {
        mcf->stores = new std::map<std::string, gtls::X509StoreShared>();
        mcf->sessions = new std::map<std::string, ngx_http_gtls_session_entry_t>();
        mcf->status = new ngx_http_gtls_status_t();
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
    cln->handler = ngx_http_gtls_delete_main;
    cln->data = mcf;
    return mcf;
}

void *ngx_http_gtls_create_srv_conf(ngx_conf_t *cf)
{
    auto *scf = static_cast<ngx_http_gtls_srv_conf_t *>(
        ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_srv_conf_t)));
    if (scf == nullptr) {
        return nullptr;
    }
    scf->insecure = NGX_CONF_UNSET_UINT;
    ngx_http_gtls_init_policy_conf(&scf->policy[NGX_HTTP_GTLS_PROXY]);
    ngx_http_gtls_init_policy_conf(&scf->policy[NGX_HTTP_GTLS_GRPC]);
    return scf;
}

char *ngx_http_gtls_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    auto *prev = static_cast<ngx_http_gtls_srv_conf_t *>(parent);
    auto *conf = static_cast<ngx_http_gtls_srv_conf_t *>(child);

    ngx_conf_merge_uint_value(conf->insecure, prev->insecure,
                              static_cast<ngx_uint_t>(NGX_HTTP_GTLS_INSECURE_ALLOW));
    return NGX_CONF_OK;
}

void *ngx_http_gtls_create_loc_conf(ngx_conf_t *cf)
{
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(
        ngx_pcalloc(cf->pool, sizeof(ngx_http_gtls_loc_conf_t)));
    if (lcf == nullptr) {
        return nullptr;
    }
    ngx_http_gtls_init_policy_conf(&lcf->policy[NGX_HTTP_GTLS_PROXY]);
    ngx_http_gtls_init_policy_conf(&lcf->policy[NGX_HTTP_GTLS_GRPC]);
    return lcf;
}

// Turns the directives of one scope into a core policy, once.
ngx_int_t ngx_http_gtls_build_policy(ngx_conf_t *cf, ngx_http_gtls_policy_conf_t *pc,
                                     ngx_uint_t kind)
{
    if (pc->built) {
        return NGX_OK;
    }
    pc->built = 1;

    gtls::Mode mode = pc->mode == NGX_CONF_UNSET_UINT ? gtls::Mode::Off
                                                      : static_cast<gtls::Mode>(pc->mode);
    if (mode == gtls::Mode::Off) {
        return NGX_OK;
    }

    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    gtls::Policy *policy = ngx_http_gtls_pool_new<gtls::Policy>(cf->pool);
    if (policy == nullptr) {
        return NGX_ERROR;
    }

    policy->mode = mode;
    policy->name = std::string(sv(pc->name));
    policy->hostname = std::string(sv(pc->hostname));
    if (pc->ca.data != nullptr) {
        policy->trust_source = std::string(sv(pc->ca));
        policy->store = mcf->stores->at(policy->trust_source);
    }

    std::string error;
    for (ngx_array_t *specs : {pc->sans}) {
        if (specs == NGX_CONF_UNSET_PTR) continue;
        auto *spec = static_cast<ngx_str_t *>(specs->elts);
        for (ngx_uint_t i = 0; i < specs->nelts; i++) {
            policy->sans.push_back(*gtls::parse_san_spec(sv(spec[i]), &error));
        }
    }
    for (ngx_array_t *specs : {pc->pins, pc->pin_certificates}) {
        if (specs == NGX_CONF_UNSET_PTR) continue;
        auto *spec = static_cast<ngx_str_t *>(specs->elts);
        for (ngx_uint_t i = 0; i < specs->nelts; i++) {
            policy->pins.push_back(*gtls::parse_pin_spec(sv(spec[i]), &error));
        }
    }

    const char *prefix = kPrefix[kind];
    if (mode != gtls::Mode::Skip && !policy->has_trust()) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"%s_ssl_verify_mode %s\" in %V:%ui needs a trust source: "
                      "\"%s_ssl_verify_ca\", \"%s_ssl_verify_pin\" or "
                      "\"%s_ssl_verify_pin_certificate\"",
                      prefix, gtls::mode_name(mode), &pc->mode_file, pc->mode_line, prefix,
                      prefix, prefix);
        return NGX_ERROR;
    }

    mcf->status->policies.push_back({policy, prefix});
    if (gtls::mode_is_insecure(mode)) {
        // the audit trail GEP-4152 asks for: one line per degraded scope
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "gateway_tls: insecure backend verification \"%s_ssl_verify_mode %s\" "
                      "for policy \"%s\" in %V:%ui",
                      prefix, gtls::mode_name(mode), policy->name.c_str(), &pc->mode_file,
                      pc->mode_line);
        mcf->status->audit.push_back({std::string(sv(pc->mode_file)), pc->mode_line, policy->name,
                                      gtls::mode_name(mode), prefix});
    }

    pc->policy = policy;
    return NGX_OK;
}

bool ngx_http_gtls_policy_conf_set(const ngx_http_gtls_policy_conf_t *pc)
{
    return pc->mode != NGX_CONF_UNSET_UINT || pc->ca.data != nullptr
           || pc->sans != NGX_CONF_UNSET_PTR || pc->pins != NGX_CONF_UNSET_PTR
           || pc->pin_certificates != NGX_CONF_UNSET_PTR || pc->name.data != nullptr;
}

ngx_int_t ngx_http_gtls_merge_policy(ngx_conf_t *cf, ngx_http_gtls_policy_conf_t *conf,
                                     ngx_http_gtls_policy_conf_t *prev, ngx_uint_t kind)
{
    if (!ngx_http_gtls_policy_conf_set(conf)) {
        if (ngx_http_gtls_build_policy(cf, prev, kind) != NGX_OK) {
            return NGX_ERROR;
        }
        *conf = *prev;  // the same policy object: one identity for sessions
        return NGX_OK;
    }

    if (conf->mode == NGX_CONF_UNSET_UINT) {
        conf->mode = prev->mode;
        conf->mode_file = prev->mode_file;
        conf->mode_line = prev->mode_line;
    }
    ngx_conf_merge_str_value(conf->ca, prev->ca, "");
    if (conf->ca.len == 0) {
        conf->ca.data = nullptr;
    }
    // ngx_conf_merge_ptr_value, without its void * conversion C++ refuses
    for (ngx_array_t *ngx_http_gtls_policy_conf_t::*field :
         {&ngx_http_gtls_policy_conf_t::sans, &ngx_http_gtls_policy_conf_t::pins,
          &ngx_http_gtls_policy_conf_t::pin_certificates}) {
        if (conf->*field == NGX_CONF_UNSET_PTR) {
            conf->*field = prev->*field;
        }
    }
    if (conf->name.data == nullptr) {
        conf->name = prev->name;
    }
    return ngx_http_gtls_build_policy(cf, conf, kind);
}

// proxy_ssl_verify_insecure deny: no degraded policy below.
ngx_int_t ngx_http_gtls_check_gate(ngx_conf_t *cf, const ngx_http_gtls_policy_conf_t *pc,
                                   ngx_uint_t insecure, ngx_uint_t kind)
{
    if (pc->policy == nullptr || insecure != NGX_HTTP_GTLS_INSECURE_DENY
        || !gtls::mode_is_insecure(pc->policy->mode)) {
        return NGX_OK;
    }
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "\"%s_ssl_verify_mode %s\" in %V:%ui is not allowed by "
                  "\"proxy_ssl_verify_insecure deny\"",
                  kPrefix[kind], gtls::mode_name(pc->policy->mode), &pc->mode_file,
                  pc->mode_line);
    return NGX_ERROR;
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

    try {
        for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
            ngx_http_gtls_policy_conf_t *pc = &conf->policy[kind];

            if (ngx_http_gtls_merge_policy(cf, pc, &prev->policy[kind], kind) != NGX_OK
                || ngx_http_gtls_check_gate(cf, pc, scf->insecure, kind) != NGX_OK) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }

            if (mcf->ctx_index[kind] < 0) {
                continue;
            }

            // proxy's and grpc's loc confs start with ngx_http_upstream_conf_t,
            // and they merge before us
            auto *ucf = static_cast<ngx_http_upstream_conf_t *>(
                ctx->loc_conf[mcf->ctx_index[kind]]);

            if (ucf->ssl != nullptr && ucf->ssl->ctx != nullptr) {
                ngx_http_gtls_install_ssl_hooks(ucf->ssl->ctx);
            }
            ngx_http_gtls_supersede_stock_verify(cf, ucf, pc, kind);

            ngx_http_upstream_srv_conf_t *uscf = ucf->upstream;
            if (uscf != nullptr && uscf->srv_conf != nullptr) {
                auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
                    ngx_http_conf_upstream_srv_conf(uscf, ngx_http_gateway_tls_module));
                if (ngx_http_gtls_check_gate(cf, &ups->policy[kind], scf->insecure, kind)
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
// after proxy and grpc have merged (dynamic modules come last): builds
// upstream{}-level policies and puts our balancer wrapper in front.
char *ngx_http_gtls_init_main_conf(ngx_conf_t *cf, void *conf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(conf);
    auto *http_scf = static_cast<ngx_http_gtls_srv_conf_t *>(
        ngx_http_conf_get_module_srv_conf(cf, ngx_http_gateway_tls_module));

    for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
        mcf->ctx_index[kind] = -1;
        for (ngx_uint_t i = 0; cf->cycle->modules[i]; i++) {
            if (ngx_strcmp(cf->cycle->modules[i]->name, kUpstreamModule[kind]) == 0) {
                mcf->ctx_index[kind] = cf->cycle->modules[i]->ctx_index;
            }
        }
    }

    if (ngx_http_gtls_init_ssl_indexes(cf->log) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    auto *umcf = static_cast<ngx_http_upstream_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module));
    auto **uscfp = static_cast<ngx_http_upstream_srv_conf_t **>(umcf->upstreams.elts);

    try {
        for (ngx_uint_t i = 0; i < umcf->upstreams.nelts; i++) {
            ngx_http_upstream_srv_conf_t *uscf = uscfp[i];

            if (uscf->srv_conf == nullptr) {
                // implicit upstreams (proxy_pass https://host:port) all use
                // round robin, so one saved pointer serves them all
                mcf->implicit_init_peer = uscf->peer.init;
            } else {
                auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
                    ngx_http_conf_upstream_srv_conf(uscf, ngx_http_gateway_tls_module));
                ups->original_init_peer = uscf->peer.init;
                for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
                    if (ngx_http_gtls_build_policy(cf, &ups->policy[kind], kind) != NGX_OK
                        || ngx_http_gtls_check_gate(cf, &ups->policy[kind], http_scf->insecure,
                                                    kind) != NGX_OK) {
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

enum ngx_http_gtls_field_e {
    NGX_HTTP_GTLS_VERIFY,
    NGX_HTTP_GTLS_VERIFY_MODE,
    NGX_HTTP_GTLS_POLICY,
    NGX_HTTP_GTLS_CERT_SHA256,
    NGX_HTTP_GTLS_SPKI_SHA256,
    NGX_HTTP_GTLS_PEER_SAN,
    NGX_HTTP_GTLS_VERIFIED_BY,
};

ngx_int_t ngx_http_gtls_set_value(ngx_http_request_t *r, ngx_http_variable_value_t *v,
                                  const std::string &text)
{
    v->data = static_cast<u_char *>(ngx_pnalloc(r->pool, text.size() + 1));
    if (v->data == nullptr) {
        return NGX_ERROR;
    }
    ngx_memcpy(v->data, text.data(), text.size());
    v->len = text.size();
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    return NGX_OK;
}

ngx_int_t ngx_http_gtls_verdict_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
                                         uintptr_t data)
{
    try {
        ngx_http_gtls_request_t *state = ngx_http_gtls_get_request(r, false);
        const gtls::Verdict *verdict = state && state->verdict ? state->verdict.get() : nullptr;
        const gtls::Policy *policy = state ? state->policy : nullptr;

        switch (data) {
        case NGX_HTTP_GTLS_VERIFY:
            return ngx_http_gtls_set_value(r, v, verdict ? verdict->text() : "NONE");
        case NGX_HTTP_GTLS_VERIFY_MODE:
            return ngx_http_gtls_set_value(r, v, gtls::mode_name(policy ? policy->mode
                                                                        : gtls::Mode::Off));
        case NGX_HTTP_GTLS_POLICY:
            return ngx_http_gtls_set_value(r, v, policy ? policy->name : "");
        }

        if (verdict == nullptr) {
            v->not_found = 1;
            return NGX_OK;
        }
        switch (data) {
        case NGX_HTTP_GTLS_CERT_SHA256:
            return ngx_http_gtls_set_value(r, v, verdict->peer.cert_sha256_hex);
        case NGX_HTTP_GTLS_SPKI_SHA256:
            return ngx_http_gtls_set_value(r, v, verdict->peer.spki_sha256_base64);
        case NGX_HTTP_GTLS_PEER_SAN:
            return ngx_http_gtls_set_value(r, v, verdict->peer.sans_text());
        case NGX_HTTP_GTLS_VERIFIED_BY:
            return ngx_http_gtls_set_value(r, v, verdict->verified_by);
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
    v->not_found = 1;
    return NGX_OK;
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

    if (uscf != nullptr && uscf->srv_conf != nullptr) {
        auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(
            ngx_http_conf_upstream_srv_conf(uscf, ngx_http_gateway_tls_module));
        for (ngx_uint_t kind : {NGX_HTTP_GTLS_PROXY, NGX_HTTP_GTLS_GRPC}) {
            if (mcf->ctx_index[kind] >= 0 && u->conf == r->loc_conf[mcf->ctx_index[kind]]
                && ups->policy[kind].hostname.len) {
                host = &ups->policy[kind].hostname;
            }
        }
    }

    if (host == nullptr) {
        v->not_found = 1;
        return NGX_OK;
    }
    v->data = host->data;
    v->len = host->len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    return NGX_OK;
}

ngx_http_variable_t ngx_http_gtls_vars[] = {
    {ngx_string("upstream_ssl_verify"), nullptr, ngx_http_gtls_verdict_variable,
     NGX_HTTP_GTLS_VERIFY, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("upstream_ssl_verify_mode"), nullptr, ngx_http_gtls_verdict_variable,
     NGX_HTTP_GTLS_VERIFY_MODE, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("upstream_ssl_policy"), nullptr, ngx_http_gtls_verdict_variable,
     NGX_HTTP_GTLS_POLICY, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("upstream_ssl_peer_cert_sha256"), nullptr, ngx_http_gtls_verdict_variable,
     NGX_HTTP_GTLS_CERT_SHA256, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("upstream_ssl_peer_spki_sha256"), nullptr, ngx_http_gtls_verdict_variable,
     NGX_HTTP_GTLS_SPKI_SHA256, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("upstream_ssl_peer_san"), nullptr, ngx_http_gtls_verdict_variable,
     NGX_HTTP_GTLS_PEER_SAN, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("upstream_ssl_verified_by"), nullptr, ngx_http_gtls_verdict_variable,
     NGX_HTTP_GTLS_VERIFIED_BY, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("upstream_ssl_policy_hostname"), nullptr,
     ngx_http_gtls_policy_hostname_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0},
    ngx_http_null_variable};

ngx_int_t ngx_http_gtls_add_variables(ngx_conf_t *cf)
{
    for (ngx_http_variable_t *v = ngx_http_gtls_vars; v->name.len; v++) {
        ngx_http_variable_t *var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == nullptr) {
            return NGX_ERROR;
        }
        var->get_handler = v->get_handler;
        var->data = v->data;
    }
    return NGX_OK;
}

ngx_http_module_t ngx_http_gtls_module_ctx = {
    ngx_http_gtls_add_variables,     // preconfiguration
    nullptr,                         // postconfiguration
    ngx_http_gtls_create_main_conf,  // create main configuration
    ngx_http_gtls_init_main_conf,    // init main configuration
    ngx_http_gtls_create_srv_conf,   // create server configuration
    ngx_http_gtls_merge_srv_conf,    // merge server configuration
    ngx_http_gtls_create_loc_conf,   // create location configuration
    ngx_http_gtls_merge_loc_conf     // merge location configuration
};

}  // namespace

ngx_module_t ngx_http_gateway_tls_module = {
    NGX_MODULE_V1,
    &ngx_http_gtls_module_ctx,  // module context
    ngx_http_gtls_commands,     // module directives
    NGX_HTTP_MODULE,            // module type
    nullptr,                    // init master
    nullptr,                    // init module
    nullptr,                    // init process
    nullptr,                    // init thread
    nullptr,                    // exit thread
    nullptr,                    // exit process
    nullptr,                    // exit master
    NGX_MODULE_V1_PADDING};
