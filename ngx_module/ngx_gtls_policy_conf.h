// The policy directives of one scope, shared by the http and stream
// modules (proxy_ssl_verify_* and grpc_ssl_verify_*): conf struct, setters,
// merge, the operator gate, and building the core policy.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ngx_gtls_nginx.h"

#include "gtls_verify.h"
#include "ngx_gtls_connection.h"
#include "ngx_gtls_status.h"

// The directives of one scope for one prefix (proxy_ or grpc_). Every
// field is merged on its own, as nginx does; the core policy is built once
// per scope that sets anything, and shared by the scopes that inherit it.
typedef struct {
    ngx_uint_t        mode;              // gtls::Mode, NGX_CONF_UNSET_UINT
    ngx_str_t         ca;                // full path or "system"
    ngx_array_t      *sans;              // ngx_str_t SPECs
    ngx_array_t      *pins;              // ngx_str_t SPECs
    ngx_array_t      *pin_certificates;  // ngx_str_t "sha256-cert:" SPECs
    ngx_str_t         name;
    ngx_str_t         hostname;          // upstream{} only
    ngx_str_t         certificate;       // upstream{} only: full paths of the
    ngx_str_t         certificate_key;   // client certificate and its key

    ngx_str_t         mode_file;         // where the mode was set
    ngx_uint_t        mode_line;

    gtls::Policy     *policy;            // null while mode is off
    unsigned          built:1;
} ngx_gtls_policy_conf_t;

// What a module keeps for the life of a configuration: the trust stores
// shared by path, the TLS sessions of its policies, and the registry of
// policies and degraded scopes the status endpoint shows. Built in the
// configuration pool (ngx_gtls_pool_new), freed with it.
struct ngx_gtls_registry_t {
    std::map<std::string, gtls::X509StoreShared>  stores;
    // client certificates by their files' paths ("CERT\nKEY"), shared
    std::map<std::string, std::shared_ptr<const gtls::KeyPair>>  client_certificates;
    ngx_gtls_session_cache_t                      sessions;
    ngx_gtls_status_t                             status;

    ~ngx_gtls_registry_t()
    {
        for (auto &entry : sessions) SSL_SESSION_free(entry.second.session);
    }
};

enum { NGX_GTLS_INSECURE_ALLOW = 0, NGX_GTLS_INSECURE_DENY = 1 };

// The name an upstream{} policy sends and verifies: its policy's, which the
// upstream API may replace, else proxy_ssl_policy_hostname as configured
// (mode off); empty: none.
std::string_view ngx_gtls_policy_hostname(const ngx_gtls_policy_conf_t &pc);

char *ngx_gtls_invalid(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t *value, const std::string &why);
void ngx_gtls_init_policy_conf(ngx_gtls_policy_conf_t *pc);

// The words of the keyword directives, as ngx_conf_set_enum_slot takes
// them (the command's post): *_ssl_verify_mode (gtls::Mode), and
// proxy_ssl_verify_insecure (NGX_GTLS_INSECURE_*).
extern ngx_conf_enum_t ngx_gtls_verify_modes[];
extern ngx_conf_enum_t ngx_gtls_insecure_gates[];

// A keyword directive: ngx_conf_set_enum_slot sets the ngx_uint_t at
// cmd->offset of conf from the table in cmd->post, once a word outside the
// table has been refused with the words it takes.
char *ngx_gtls_conf_keyword(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// Directive handlers, as nginx's ngx_conf_set_*_slot: each sets the field
// at cmd->offset of conf (for the mode, the policy conf's mode).
char *ngx_gtls_conf_verify_mode(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_gtls_conf_verify_ca(ngx_conf_t *cf, ngx_command_t *cmd, ngx_gtls_policy_conf_t *pc,
                              ngx_gtls_registry_t &registry);
char *ngx_gtls_conf_verify_san(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_gtls_conf_verify_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_gtls_conf_verify_pin_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
// Pin SPECs, and the sha256-cert SPECs of a PEM file's certificates,
// appended to *array (for backend policies and client pins alike).
char *ngx_gtls_conf_pin_specs(ngx_conf_t *cf, ngx_command_t *cmd, ngx_array_t **array);
char *ngx_gtls_conf_pin_certificate_specs(ngx_conf_t *cf, ngx_command_t *cmd, ngx_array_t **array);
char *ngx_gtls_conf_policy_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_gtls_conf_policy_hostname(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_gtls_conf_policy_certificate(ngx_conf_t *cf, ngx_command_t *cmd, ngx_gtls_policy_conf_t *pc,
                                       ngx_gtls_registry_t &registry);

ngx_int_t ngx_gtls_build_policy(ngx_conf_t *cf, ngx_gtls_policy_conf_t *pc, const char *prefix,
                                ngx_gtls_registry_t &registry);
ngx_int_t ngx_gtls_merge_policy(ngx_conf_t *cf, ngx_gtls_policy_conf_t *conf,
                                ngx_gtls_policy_conf_t *prev, const char *prefix,
                                ngx_gtls_registry_t &registry);
ngx_int_t ngx_gtls_check_gate(ngx_conf_t *cf, const ngx_gtls_policy_conf_t *pc,
                              ngx_uint_t insecure, const char *prefix);
bool ngx_gtls_gate_admits(ngx_log_t *log, ngx_uint_t insecure, const gtls::Policy &policy, ngx_str_t *upstream,
                          const char *prefix);
