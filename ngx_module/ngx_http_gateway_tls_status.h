// Counters and the audit list behind gateway_tls_status (DESIGN §2.4).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ngx_gtls_nginx.h"

#include "gtls_verify.h"

// One policy as configured: what the status shows beside its counters.
struct ngx_http_gtls_policy_record_t {
    const gtls::Policy *policy;
    std::string         kind;  // proxy or grpc
};

// A scope whose verification is degraded (allow_expired, skip_san, skip).
struct ngx_http_gtls_audit_t {
    std::string file;
    ngx_uint_t  line;
    std::string policy;
    std::string mode;
    std::string kind;
};

struct ngx_http_gtls_status_t {
    ngx_shm_zone_t                                   *zone = nullptr;
    std::vector<ngx_http_gtls_policy_record_t>        policies;
    std::vector<ngx_http_gtls_audit_t>                audit;
    // per worker: the shared counters of each policy, found once
    std::unordered_map<const gtls::Policy *, void *>  nodes;
};

char *ngx_http_gtls_status_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_gtls_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// Counts one verification decision; the single place counters move.
void ngx_http_gtls_count(ngx_http_gtls_status_t *status, const gtls::Policy *policy,
                         const gtls::Verdict &verdict, ngx_log_t *log);
