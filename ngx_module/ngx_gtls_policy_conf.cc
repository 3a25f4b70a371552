// The policy directives, shared by the http and stream modules: their
// argument checks, per-field merge, the operator gate, and the one build of
// a core policy per scope that sets anything.

#include "ngx_gtls_policy_conf.h"

char *ngx_gtls_invalid(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t *value,
                            const std::string &why)
{
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid value \"%V\" in \"%V\" directive: %s", value,
                       &cmd->name, why.c_str());
    return static_cast<char *>(NGX_CONF_ERROR);
}

ngx_array_t *ngx_gtls_spec_array(ngx_conf_t *cf, ngx_array_t **array)
{
    if (*array == NGX_CONF_UNSET_PTR) {
        *array = ngx_array_create(cf->pool, 4, sizeof(ngx_str_t));
    }
    return *array;
}

ngx_conf_enum_t ngx_gtls_verify_modes[] = {
    {ngx_string("off"), static_cast<ngx_uint_t>(gtls::Mode::Off)},
    {ngx_string("strict"), static_cast<ngx_uint_t>(gtls::Mode::Strict)},
    {ngx_string("allow_expired"), static_cast<ngx_uint_t>(gtls::Mode::AllowExpired)},
    {ngx_string("skip_san"), static_cast<ngx_uint_t>(gtls::Mode::SkipSan)},
    {ngx_string("skip"), static_cast<ngx_uint_t>(gtls::Mode::Skip)},
    {ngx_null_string, 0}};

ngx_conf_enum_t ngx_gtls_insecure_gates[] = {
    {ngx_string("allow"), NGX_GTLS_INSECURE_ALLOW},
    {ngx_string("deny"), NGX_GTLS_INSECURE_DENY},
    {ngx_null_string, 0}};

char *ngx_gtls_conf_keyword(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    bool known = false;
    std::string words;
    for (auto *e = static_cast<ngx_conf_enum_t *>(cmd->post); e->name.len != 0; e++) {
        known |= e->name.len == value[1].len && ngx_strncasecmp(e->name.data, value[1].data, value[1].len) == 0;
        words += (words.empty() ? "" : e[1].name.len != 0 ? ", " : " or ") + std::string(ngx_gtls_sv(e->name));
    }
    if (!known) {
        return ngx_gtls_invalid(cf, cmd, &value[1], "expected " + words);
    }
    return ngx_conf_set_enum_slot(cf, cmd, conf);
}

char *ngx_gtls_conf_verify_mode(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char *rv = ngx_gtls_conf_keyword(cf, cmd, conf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }
    auto *pc = ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset - offsetof(ngx_gtls_policy_conf_t, mode));
    pc->mode_file = cf->conf_file->file.name;
    pc->mode_line = cf->conf_file->line;
    return NGX_CONF_OK;
}

char *ngx_gtls_conf_verify_ca(ngx_conf_t *cf, ngx_command_t *cmd, ngx_gtls_policy_conf_t *pc,
                              ngx_gtls_registry_t &registry)
{
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->ca.data != nullptr) {
        return const_cast<char *>("is duplicate");
    }

    ngx_str_t source = value[1];
    if (ngx_gtls_sv(source) != "system" && ngx_conf_full_name(cf->cycle, &source, 1) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    // one store per file, however many scopes trust it
    std::string key(ngx_gtls_sv(source));
    if (registry.stores.find(key) == registry.stores.end()) {
        std::string error;
        gtls::X509StoreShared store = gtls::load_trust_store(key, &error);
        if (!store) {
            return ngx_gtls_invalid(cf, cmd, &value[1], error);
        }
        registry.stores.emplace(key, std::move(store));
    }

    pc->ca = source;
    return NGX_CONF_OK;
}

// Validates each argument as a SPEC and appends it to *array; the core
// objects are built from the merged lists.
template <typename Parse>
static char *ngx_gtls_add_specs(ngx_conf_t *cf, ngx_command_t *cmd, ngx_array_t **array,
                              Parse parse)
{
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    ngx_array_t *specs = ngx_gtls_spec_array(cf, array);
    if (specs == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        std::string error;
        if (!parse(ngx_gtls_sv(value[i]), &error)) {
            return ngx_gtls_invalid(cf, cmd, &value[i], error);
        }
        auto *spec = static_cast<ngx_str_t *>(ngx_array_push(specs));
        if (spec == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        *spec = value[i];
    }
    return NGX_CONF_OK;
}

char *ngx_gtls_conf_verify_san(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *pc = ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset);
    return ngx_gtls_add_specs(cf, cmd, &pc->sans, gtls::parse_san_spec);
}

char *ngx_gtls_conf_pin_specs(ngx_conf_t *cf, ngx_command_t *cmd, ngx_array_t **array)
{
    return ngx_gtls_add_specs(cf, cmd, array, gtls::parse_pin_spec);
}

char *ngx_gtls_conf_verify_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *pc = ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset);
    return ngx_gtls_conf_pin_specs(cf, cmd, &pc->pins);
}

char *ngx_gtls_conf_verify_pin_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *pc = ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset);
    return ngx_gtls_conf_pin_certificate_specs(cf, cmd, &pc->pin_certificates);
}

char *ngx_gtls_conf_pin_certificate_specs(ngx_conf_t *cf, ngx_command_t *cmd, ngx_array_t **array)
{
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    ngx_str_t path = value[1];
    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    std::vector<gtls::Pin> pins;
    std::string error;
    if (!gtls::load_pin_certificates(std::string(ngx_gtls_sv(path)), &pins, &error)) {
        return ngx_gtls_invalid(cf, cmd, &value[1], error);
    }

    ngx_array_t *specs = ngx_gtls_spec_array(cf, array);
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

char *ngx_gtls_conf_policy_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *pc = ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->name.data != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    if (value[1].len == 0) {
        return ngx_gtls_invalid(cf, cmd, &value[1], "empty name");
    }
    pc->name = value[1];
    return NGX_CONF_OK;
}

char *ngx_gtls_conf_policy_hostname(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *pc = ngx_gtls_field<ngx_gtls_policy_conf_t>(conf, cmd->offset);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->hostname.data != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    std::string error;
    if (!gtls::parse_san_spec("dns:" + std::string(ngx_gtls_sv(value[1])), &error)) {
        return ngx_gtls_invalid(cf, cmd, &value[1], error);
    }
    pc->hostname = value[1];
    return NGX_CONF_OK;
}

// Read and checked here, so that a bad file names its directive; one
// pair per pair of files, however many upstreams present it.
char *ngx_gtls_conf_policy_certificate(ngx_conf_t *cf, ngx_command_t *cmd, ngx_gtls_policy_conf_t *pc,
                                       ngx_gtls_registry_t &registry)
{
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (pc->certificate.data != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    ngx_str_t certificate = value[1];
    ngx_str_t key = value[2];
    if (ngx_conf_full_name(cf->cycle, &certificate, 1) != NGX_OK || ngx_conf_full_name(cf->cycle, &key, 1) != NGX_OK) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    std::string paths = std::string(ngx_gtls_sv(certificate)) + "\n" + std::string(ngx_gtls_sv(key));
    if (registry.client_certificates.find(paths) == registry.client_certificates.end()) {
        auto pair = std::make_shared<gtls::KeyPair>();
        std::string error;
        if (!gtls::key_pair_from_files(std::string(ngx_gtls_sv(certificate)), std::string(ngx_gtls_sv(key)),
                                       pair.get(), &error)) {
            return ngx_gtls_invalid(cf, cmd, &value[1], error);
        }
        registry.client_certificates.emplace(paths, std::move(pair));
    }
    pc->certificate = certificate;
    pc->certificate_key = key;
    return NGX_CONF_OK;
}

std::string_view ngx_gtls_policy_hostname(const ngx_gtls_policy_conf_t &pc)
{
    return pc.policy != nullptr ? std::string_view(pc.policy->hostname) : ngx_gtls_sv(pc.hostname);
}

void ngx_gtls_init_policy_conf(ngx_gtls_policy_conf_t *pc)
{
    pc->mode = NGX_CONF_UNSET_UINT;
    pc->sans = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
    pc->pins = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
    pc->pin_certificates = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
}

// Turns the directives of one scope into a core policy, once.
ngx_int_t ngx_gtls_build_policy(ngx_conf_t *cf, ngx_gtls_policy_conf_t *pc, const char *prefix,
                                ngx_gtls_registry_t &registry)
{
    if (pc->built) {
        return NGX_OK;
    }
    pc->built = 1;

    gtls::Mode mode = pc->mode == NGX_CONF_UNSET_UINT ? gtls::Mode::Off
                                                      : static_cast<gtls::Mode>(pc->mode);
    if (mode == gtls::Mode::Off) {
        if (pc->certificate.data != nullptr) {
            // a client certificate of no policy would go unsent, unnoticed
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "\"%s_ssl_policy_certificate \"%V\"\" needs \"%s_ssl_verify_mode\"",
                          prefix, &pc->certificate, prefix);
            return NGX_ERROR;
        }
        return NGX_OK;
    }

    gtls::Policy *policy = ngx_gtls_pool_new<gtls::Policy>(cf->pool);
    if (policy == nullptr) {
        return NGX_ERROR;
    }

    policy->mode = mode;
    policy->name = std::string(ngx_gtls_sv(pc->name));
    policy->hostname = std::string(ngx_gtls_sv(pc->hostname));
    if (pc->certificate.data != nullptr) {
        policy->client_certificate = registry.client_certificates.at(std::string(ngx_gtls_sv(pc->certificate)) + "\n"
                                                                     + std::string(ngx_gtls_sv(pc->certificate_key)));
    }
    if (pc->ca.data != nullptr) {
        policy->trust_source = std::string(ngx_gtls_sv(pc->ca));
        policy->store = registry.stores.at(policy->trust_source);
    }

    std::string error;
    for (ngx_array_t *specs : {pc->sans}) {
        if (specs == NGX_CONF_UNSET_PTR) continue;
        auto *spec = static_cast<ngx_str_t *>(specs->elts);
        for (ngx_uint_t i = 0; i < specs->nelts; i++) {
            policy->sans.push_back(*gtls::parse_san_spec(ngx_gtls_sv(spec[i]), &error));
        }
    }
    for (ngx_array_t *specs : {pc->pins, pc->pin_certificates}) {
        if (specs == NGX_CONF_UNSET_PTR) continue;
        auto *spec = static_cast<ngx_str_t *>(specs->elts);
        for (ngx_uint_t i = 0; i < specs->nelts; i++) {
            policy->pins.push_back(*gtls::parse_pin_spec(ngx_gtls_sv(spec[i]), &error));
        }
    }

    if (mode != gtls::Mode::Skip && !policy->has_trust()) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"%s_ssl_verify_mode %s\" in %V:%ui needs a trust source: "
                      "\"%s_ssl_verify_ca\", \"%s_ssl_verify_pin\" or "
                      "\"%s_ssl_verify_pin_certificate\"",
                      prefix, gtls::mode_name(mode), &pc->mode_file, pc->mode_line, prefix,
                      prefix, prefix);
        return NGX_ERROR;
    }

    const char *kind = registry.status.kind != nullptr ? registry.status.kind : prefix;
    registry.status.policies.push_back({policy, kind});
    if (gtls::mode_is_insecure(mode)) {
        // the audit trail GEP-4152 asks for: one line per degraded scope
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "gateway_tls: insecure backend verification \"%s_ssl_verify_mode %s\" "
                      "for policy \"%s\" in %V:%ui",
                      prefix, gtls::mode_name(mode), policy->name.c_str(), &pc->mode_file,
                      pc->mode_line);
        registry.status.audit.push_back({std::string(ngx_gtls_sv(pc->mode_file)), pc->mode_line, policy->name,
                                      gtls::mode_name(mode), kind});
    }

    pc->policy = policy;
    return NGX_OK;
}

bool ngx_gtls_policy_conf_set(const ngx_gtls_policy_conf_t *pc)
{
    return pc->mode != NGX_CONF_UNSET_UINT || pc->ca.data != nullptr
           || pc->sans != NGX_CONF_UNSET_PTR || pc->pins != NGX_CONF_UNSET_PTR
           || pc->pin_certificates != NGX_CONF_UNSET_PTR || pc->name.data != nullptr;
}

ngx_int_t ngx_gtls_merge_policy(ngx_conf_t *cf, ngx_gtls_policy_conf_t *conf,
                                ngx_gtls_policy_conf_t *prev, const char *prefix,
                                ngx_gtls_registry_t &registry)
{
    if (!ngx_gtls_policy_conf_set(conf)) {
        if (ngx_gtls_build_policy(cf, prev, prefix, registry) != NGX_OK) {
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
    for (ngx_array_t *ngx_gtls_policy_conf_t::*field :
         {&ngx_gtls_policy_conf_t::sans, &ngx_gtls_policy_conf_t::pins,
          &ngx_gtls_policy_conf_t::pin_certificates}) {
        if (conf->*field == NGX_CONF_UNSET_PTR) {
            conf->*field = prev->*field;
        }
    }
    if (conf->name.data == nullptr) {
        conf->name = prev->name;
    }
    return ngx_gtls_build_policy(cf, conf, prefix, registry);
}

// proxy_ssl_verify_insecure deny: no degraded policy below.
ngx_int_t ngx_gtls_check_gate(ngx_conf_t *cf, const ngx_gtls_policy_conf_t *pc,
                              ngx_uint_t insecure, const char *prefix)
{
    if (pc->policy == nullptr || !gtls::gate_refuses(insecure == NGX_GTLS_INSECURE_DENY, pc->policy->mode)) {
        return NGX_OK;
    }
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "\"%s_ssl_verify_mode %s\" in %V:%ui is not allowed by "
                  "\"proxy_ssl_verify_insecure deny\"",
                  prefix, gtls::mode_name(pc->policy->mode), &pc->mode_file,
                  pc->mode_line);
    return NGX_ERROR;
}

// The same gate where the peer is chosen: false (and why, in the log) when
// the server's gate refuses the policy the request or session reached.
bool ngx_gtls_gate_admits(ngx_log_t *log, ngx_uint_t insecure, const gtls::Policy &policy, ngx_str_t *upstream,
                          const char *prefix)
{
    if (!gtls::gate_refuses(insecure == NGX_GTLS_INSECURE_DENY, policy.mode)) {
        ngx_log_debug2(NGX_LOG_DEBUG_EVENT, log, 0, "gateway_tls: policy \"%s\" (%s) admitted by the gate",
                       policy.name.c_str(), gtls::mode_name(policy.mode));
        return true;
    }
    ngx_log_error(NGX_LOG_ERR, log, 0,
                  "gateway_tls: policy \"%s\" of upstream \"%V\" (\"%s_ssl_verify_mode %s\") is not allowed by "
                  "\"proxy_ssl_verify_insecure deny\" in this server",
                  policy.name.c_str(), upstream, prefix, gtls::mode_name(policy.mode));
    return false;
}
