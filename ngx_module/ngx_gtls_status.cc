// The counters and the audit list behind gateway_tls_status, shared by the
// http and stream modules: per-policy counters in one shared memory zone
// (across workers, kept across reloads: a zone of the same name and size is
// handed to the new cycle), rendered as JSON or Prometheus.

#include "ngx_gtls_status.h"

#include "gtls_json.h"

#include <cstdio>
#include <ctime>
#include <set>

const char *const ngx_gtls_status_zone_name = "gateway_tls_status";

namespace {

constexpr int kReasons = static_cast<int>(gtls::kReasonCount);

struct ngx_gtls_status_shctx_t {
    ngx_rbtree_t       rbtree;
    ngx_rbtree_node_t  sentinel;
};

// Counters of one policy, keyed by "kind name".
struct ngx_gtls_status_node_t {
    ngx_str_node_t  sn;
    ngx_atomic_t    verified;
    ngx_atomic_t    skipped;
    ngx_atomic_t    failed[kReasons];
    ngx_atomic_t    earliest_not_after;  // 0: no certificate seen yet
    u_char          data[1];
};

std::string ngx_gtls_status_key(const std::string &kind, const gtls::Policy &policy)
{
    return kind + " " + (policy.name.empty() ? "(unnamed)" : policy.name);
}

}  // namespace

ngx_int_t ngx_gtls_status_init_zone(ngx_shm_zone_t *zone, void *data)
{
    if (data != nullptr) {
        zone->data = data;  // a reload: the counters go on
        return NGX_OK;
    }
    auto *shpool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    if (zone->shm.exists) {
        zone->data = shpool->data;
        return NGX_OK;
    }
    auto *ctx = static_cast<ngx_gtls_status_shctx_t *>(ngx_slab_alloc(shpool, sizeof(ngx_gtls_status_shctx_t)));
    if (ctx == nullptr) {
        return NGX_ERROR;
    }
    ngx_rbtree_init(&ctx->rbtree, &ctx->sentinel, ngx_str_rbtree_insert_value);
    shpool->data = ctx;
    zone->data = ctx;
    return NGX_OK;
}

namespace {

// Counters of one route table, keyed "routes NAME" (no policy kind is
// "routes").
struct ngx_gtls_table_node_t {
    ngx_str_node_t  sn;
    ngx_atomic_t    count[NGX_GTLS_TABLE_COUNTERS];
    u_char          data[1];
};

// Finds (create: or makes) the counters of a key; takes the zone's lock.
template <typename Node = ngx_gtls_status_node_t>
Node *ngx_gtls_status_node(ngx_shm_zone_t *zone, const std::string &key, bool create)
{
    auto *shpool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    auto *ctx = static_cast<ngx_gtls_status_shctx_t *>(zone->data);
    ngx_str_t name = {key.size(), reinterpret_cast<u_char *>(const_cast<char *>(key.data()))};
    uint32_t hash = ngx_crc32_short(name.data, name.len);

    ngx_shmtx_lock(&shpool->mutex);
    auto *node = reinterpret_cast<Node *>(ngx_str_rbtree_lookup(&ctx->rbtree, &name, hash));
    if (node == nullptr && create) {
        node = static_cast<Node *>(ngx_slab_calloc_locked(shpool, sizeof(Node) + name.len));
        if (node != nullptr) {
            ngx_memcpy(node->data, name.data, name.len);
            node->sn.str.len = name.len;
            node->sn.str.data = node->data;
            node->sn.node.key = hash;
            ngx_rbtree_insert(&ctx->rbtree, &node->sn.node);
        }
    }
    ngx_shmtx_unlock(&shpool->mutex);
    return node;
}

// Prometheus label values escape backslash, quote and newline; any other
// control character (a name in nginx's text may hold "\r") is written as
// the text \xHH, so that no reader splits a line on it.
std::string label(const std::string &text)
{
    std::string out;
    for (char ch : text) {
        auto byte = static_cast<unsigned char>(ch);
        if (ch == '\\' || ch == '"') out += '\\';
        if (ch == '\n') {
            out += "\\n";
        } else if (byte < 0x20 || byte == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\\\x%02X", byte);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out;
}

// The policies (or audit entries) of every module, in module order.
template <typename T>
std::vector<T> concat(const std::vector<ngx_gtls_status_t *> &statuses, std::vector<T> ngx_gtls_status_t::*member)
{
    std::vector<T> out;
    for (const ngx_gtls_status_t *status : statuses) {
        out.insert(out.end(), (status->*member).begin(), (status->*member).end());
    }
    return out;
}

struct Row {
    std::string kind;
    const gtls::Policy *policy;
    ngx_atomic_uint_t verified = 0, skipped = 0, failed[kReasons] = {};
    long expiry_seconds = 0;
    bool expiry_known = false;

    long expiry_days() const
    {
        return expiry_seconds >= 0 ? expiry_seconds / 86400 : -((-expiry_seconds + 86399) / 86400);
    }
};

std::vector<Row> ngx_gtls_status_rows(const std::vector<ngx_gtls_status_t *> &statuses, ngx_shm_zone_t *zone)
{
    std::vector<Row> rows;
    std::set<std::string> seen;
    time_t now = ngx_time();
    for (const ngx_gtls_policy_record_t &rec : concat(statuses, &ngx_gtls_status_t::policies)) {
        std::string key = ngx_gtls_status_key(rec.kind, *rec.policy);
        if (!seen.insert(key).second) continue;
        Row row;
        row.kind = rec.kind;
        row.policy = rec.policy;
        if (ngx_gtls_status_node_t *node = ngx_gtls_status_node(zone, key, false)) {
            row.verified = node->verified;
            row.skipped = node->skipped;
            for (int i = 0; i < kReasons; i++) row.failed[i] = node->failed[i];
            if (node->earliest_not_after != 0) {
                row.expiry_known = true;
                row.expiry_seconds = static_cast<long>(node->earliest_not_after) - static_cast<long>(now);
            }
        }
        rows.push_back(row);
    }
    return rows;
}

}  // namespace

std::string ngx_gtls_status_json(const std::vector<ngx_gtls_status_t *> &statuses, ngx_shm_zone_t *zone,
                                 const std::string &more)
{
    std::string out = "{\"policies\":[";
    bool first = true;
    for (const Row &row : ngx_gtls_status_rows(statuses, zone)) {
        const gtls::Policy &p = *row.policy;
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":" + gtls::json_string(p.name) + ",\"kind\":" + gtls::json_string(row.kind)
               + ",\"mode\":" + gtls::json_string(gtls::mode_name(p.mode))
               + ",\"trust\":" + gtls::json_string(p.trust_source) + ",\"sans\":[";
        for (size_t i = 0; i < p.sans.size(); i++) out += (i ? "," : "") + gtls::json_string(p.sans[i].spec);
        out += "],\"pins\":" + std::to_string(p.pins.size());
        out += ",\"handshakes\":{\"verified\":" + std::to_string(row.verified)
               + ",\"skipped\":" + std::to_string(row.skipped) + ",\"failed\":{";
        for (int i = 1; i < kReasons; i++) {
            out += std::string(i > 1 ? "," : "") + "\"" + gtls::reason_name(static_cast<gtls::Reason>(i))
                   + "\":" + std::to_string(row.failed[i]);
        }
        out += "}},\"earliest_expiry_days\":" + (row.expiry_known ? std::to_string(row.expiry_days()) : "null");
        out += "}";
    }
    out += "],\"audit\":[";
    first = true;
    for (const ngx_gtls_audit_t &a : concat(statuses, &ngx_gtls_status_t::audit)) {
        out += std::string(first ? "" : ",") + "{\"file\":" + gtls::json_string(a.file) + ",\"line\":" + std::to_string(a.line)
               + ",\"policy\":" + gtls::json_string(a.policy) + ",\"kind\":" + gtls::json_string(a.kind)
               + ",\"mode\":" + gtls::json_string(a.mode) + "}";
        first = false;
    }
    return out + "]" + more + "}\n";
}

std::string ngx_gtls_status_prometheus(const std::vector<ngx_gtls_status_t *> &statuses, ngx_shm_zone_t *zone)
{
    std::vector<Row> rows = ngx_gtls_status_rows(statuses, zone);
    std::string out;
    out += "# HELP gateway_tls_policy_info A backend TLS policy and how it verifies.\n"
           "# TYPE gateway_tls_policy_info gauge\n";
    for (const Row &row : rows) {
        const gtls::Policy &p = *row.policy;
        out += "gateway_tls_policy_info{policy=\"" + label(p.name) + "\",kind=\"" + row.kind + "\",mode=\""
               + gtls::mode_name(p.mode) + "\",trust=\"" + label(p.trust_source) + "\",sans=\""
               + std::to_string(p.sans.size()) + "\",pins=\"" + std::to_string(p.pins.size()) + "\"} 1\n";
    }
    out += "# HELP gateway_tls_handshakes_total Backend TLS handshakes by verdict.\n"
           "# TYPE gateway_tls_handshakes_total counter\n";
    for (const Row &row : rows) {
        std::string id = "policy=\"" + label(row.policy->name) + "\",kind=\"" + row.kind + "\"";
        out += "gateway_tls_handshakes_total{" + id + ",result=\"verified\",reason=\"\"} "
               + std::to_string(row.verified) + "\n";
        out += "gateway_tls_handshakes_total{" + id + ",result=\"skipped\",reason=\"\"} "
               + std::to_string(row.skipped) + "\n";
        for (int i = 1; i < kReasons; i++) {
            out += "gateway_tls_handshakes_total{" + id + ",result=\"failed\",reason=\""
                   + gtls::reason_name(static_cast<gtls::Reason>(i)) + "\"} " + std::to_string(row.failed[i]) + "\n";
        }
    }
    // Prometheus wants base units: seconds (the JSON says days)
    out += "# HELP gateway_tls_certificate_expiry_seconds Seconds until the earliest expiry among backend certificates seen.\n"
           "# TYPE gateway_tls_certificate_expiry_seconds gauge\n";
    for (const Row &row : rows) {
        if (!row.expiry_known) continue;
        out += "gateway_tls_certificate_expiry_seconds{policy=\"" + label(row.policy->name) + "\",kind=\"" + row.kind
               + "\"} " + std::to_string(row.expiry_seconds) + "\n";
    }
    out += "# HELP gateway_tls_insecure_scope A configuration scope whose backend verification is degraded.\n"
           "# TYPE gateway_tls_insecure_scope gauge\n";
    for (const ngx_gtls_audit_t &a : concat(statuses, &ngx_gtls_status_t::audit)) {
        out += "gateway_tls_insecure_scope{policy=\"" + label(a.policy) + "\",kind=\"" + a.kind + "\",mode=\""
               + a.mode + "\",file=\"" + label(a.file) + "\",line=\"" + std::to_string(a.line) + "\"} 1\n";
    }
    return out;
}

void ngx_gtls_count(ngx_gtls_status_t *status, const gtls::Policy *policy, const gtls::Verdict &verdict,
                    ngx_log_t *log)
{
    if (status == nullptr || status->zone == nullptr || status->zone->data == nullptr) {
        return;
    }
    auto it = status->nodes.find(policy);
    if (it == status->nodes.end()) {
        std::string kind = "proxy";
        for (const ngx_gtls_policy_record_t &rec : status->policies) {
            if (rec.policy == policy) kind = rec.kind;
        }
        void *node = ngx_gtls_status_node(status->zone, ngx_gtls_status_key(kind, *policy), true);
        if (node == nullptr) {
            ngx_log_error(NGX_LOG_ERR, log, 0, "gateway_tls: \"%s\" zone is full", ngx_gtls_status_zone_name);
            return;
        }
        it = status->nodes.emplace(policy, node).first;
    }
    auto *node = static_cast<ngx_gtls_status_node_t *>(it->second);

    switch (verdict.status) {
    case gtls::Status::Success: ngx_atomic_fetch_add(&node->verified, 1); break;
    case gtls::Status::Skipped: ngx_atomic_fetch_add(&node->skipped, 1); break;
    case gtls::Status::Failed: ngx_atomic_fetch_add(&node->failed[static_cast<int>(verdict.reason)], 1); break;
    case gtls::Status::None: break;
    }

    ngx_atomic_uint_t not_after = static_cast<ngx_atomic_uint_t>(verdict.peer.not_after);
    for (;;) {  // keep the earliest, without a lock
        ngx_atomic_uint_t seen = node->earliest_not_after;
        if (not_after == 0 || (seen != 0 && seen <= not_after)) break;
        if (ngx_atomic_cmp_set(&node->earliest_not_after, seen, not_after)) break;
    }
}

void ngx_gtls_count_table(ngx_shm_zone_t *zone, const std::string &table, ngx_gtls_table_counter_e which, ngx_log_t *log)
{
    if (zone == nullptr || zone->data == nullptr) {
        return;
    }
    auto *node = ngx_gtls_status_node<ngx_gtls_table_node_t>(zone, "routes " + table, true);
    if (node == nullptr) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "gateway_tls: \"%s\" zone is full", ngx_gtls_status_zone_name);
        return;
    }
    ngx_atomic_fetch_add(&node->count[which], 1);
}

std::array<uint64_t, NGX_GTLS_TABLE_COUNTERS> ngx_gtls_table_counts(ngx_shm_zone_t *zone, const std::string &table)
{
    std::array<uint64_t, NGX_GTLS_TABLE_COUNTERS> counts{};
    if (zone == nullptr || zone->data == nullptr) {
        return counts;
    }
    if (const auto *node = ngx_gtls_status_node<ngx_gtls_table_node_t>(zone, "routes " + table, false)) {
        for (int i = 0; i < NGX_GTLS_TABLE_COUNTERS; i++) counts[i] = node->count[i];
    }
    return counts;
}

ngx_shm_zone_t *ngx_gtls_status_find_zone(ngx_cycle_t *cycle)
{
    ngx_list_part_t *part = &cycle->shared_memory.part;
    auto *zone = static_cast<ngx_shm_zone_t *>(part->elts);
    for (ngx_uint_t i = 0;; i++) {
        if (i >= part->nelts) {
            if (part->next == nullptr) {
                return nullptr;
            }
            part = part->next;
            zone = static_cast<ngx_shm_zone_t *>(part->elts);
            i = 0;
        }
        if (zone[i].shm.name.len == ngx_strlen(ngx_gtls_status_zone_name)
            && ngx_strncmp(zone[i].shm.name.data, ngx_gtls_status_zone_name, zone[i].shm.name.len) == 0) {
            return &zone[i];
        }
    }
}
