// The counters and the audit list behind gateway_tls_status (docs/security.md),
// shared by the http and stream modules: both count into the one zone the
// http block declares, and the http endpoint shows the policies of both.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ngx_gtls_nginx.h"

#include "gtls_verify.h"

extern const char *const ngx_gtls_status_zone_name;  // "gateway_tls_status"

// One policy as configured: what the status shows beside its counters.
struct ngx_gtls_policy_record_t {
    const gtls::Policy *policy;
    std::string         kind;  // proxy or grpc (http), stream
};

// A scope whose verification is degraded (allow_expired, skip_san, skip).
struct ngx_gtls_audit_t {
    std::string file;
    ngx_uint_t  line;
    std::string policy;
    std::string mode;
    std::string kind;
};

// What one module's configuration shows and counts.
struct ngx_gtls_status_t {
    ngx_shm_zone_t                                   *zone = nullptr;
    const char                                       *kind = nullptr;  // every policy's kind, else the prefix
    std::vector<ngx_gtls_policy_record_t>             policies;
    std::vector<ngx_gtls_audit_t>                     audit;
    // per worker: the shared counters of each policy, found once
    std::unordered_map<const gtls::Policy *, void *>  nodes;
};

ngx_int_t ngx_gtls_status_init_zone(ngx_shm_zone_t *zone, void *data);

// The zone named ngx_gtls_status_zone_name in a cycle, or null.
ngx_shm_zone_t *ngx_gtls_status_find_zone(ngx_cycle_t *cycle);

// Counts one verification decision; the single place counters move.
void ngx_gtls_count(ngx_gtls_status_t *status, const gtls::Policy *policy, const gtls::Verdict &verdict,
                    ngx_log_t *log);

// What a route table (gateway_tls_routes) counts, in the same zone: its
// hostnames' rules replaced or removed through the API, and the PUTs
// naming it that were refused.
enum ngx_gtls_table_counter_e {
    NGX_GTLS_TABLE_REPLACED,
    NGX_GTLS_TABLE_REMOVED,
    NGX_GTLS_TABLE_REFUSED,
    NGX_GTLS_TABLE_COUNTERS
};
void ngx_gtls_count_table(ngx_shm_zone_t *zone, const std::string &table, ngx_gtls_table_counter_e which,
                          ngx_log_t *log);
std::array<uint64_t, NGX_GTLS_TABLE_COUNTERS> ngx_gtls_table_counts(ngx_shm_zone_t *zone, const std::string &table);

// The policies, counters and audit entries of several modules (may throw).
// `more`: members the http module adds to the JSON object (",\"route_tables\":[...]").
std::string ngx_gtls_status_json(const std::vector<ngx_gtls_status_t *> &statuses, ngx_shm_zone_t *zone,
                                 const std::string &more = {});
std::string ngx_gtls_status_prometheus(const std::vector<ngx_gtls_status_t *> &statuses, ngx_shm_zone_t *zone);
