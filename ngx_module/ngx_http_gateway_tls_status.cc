// gateway_tls_status_zone and gateway_tls_status: per-policy counters in
// shared memory (across workers, kept across reloads: a zone of the same
// name and size is handed to the new cycle), served as JSON or Prometheus.

#include "ngx_http_gateway_tls_status.h"

#include <cstdio>
#include <ctime>
#include <set>

#include "ngx_http_gateway_tls_module.h"

namespace {

constexpr int kReasons = 7;  // gtls::Reason values, None included

const char *const kZoneName = "gateway_tls_status";

struct ngx_http_gtls_shctx_t {
    ngx_rbtree_t       rbtree;
    ngx_rbtree_node_t  sentinel;
};

// Counters of one policy, keyed by "kind name".
struct ngx_http_gtls_shnode_t {
    ngx_str_node_t  sn;
    ngx_atomic_t    verified;
    ngx_atomic_t    skipped;
    ngx_atomic_t    failed[kReasons];
    ngx_atomic_t    earliest_not_after;  // 0: no certificate seen yet
    u_char          data[1];
};

std::string ngx_http_gtls_key(const std::string &kind, const gtls::Policy &policy)
{
    return kind + " " + (policy.name.empty() ? "(unnamed)" : policy.name);
}

ngx_int_t ngx_http_gtls_init_zone(ngx_shm_zone_t *zone, void *data)
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
    auto *ctx = static_cast<ngx_http_gtls_shctx_t *>(ngx_slab_alloc(shpool, sizeof(ngx_http_gtls_shctx_t)));
    if (ctx == nullptr) {
        return NGX_ERROR;
    }
    ngx_rbtree_init(&ctx->rbtree, &ctx->sentinel, ngx_str_rbtree_insert_value);
    shpool->data = ctx;
    zone->data = ctx;
    return NGX_OK;
}

// Finds (create: or makes) the counters of a key; takes the zone's lock.
ngx_http_gtls_shnode_t *ngx_http_gtls_node(ngx_shm_zone_t *zone, const std::string &key, bool create)
{
    auto *shpool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    auto *ctx = static_cast<ngx_http_gtls_shctx_t *>(zone->data);
    ngx_str_t name = {key.size(), reinterpret_cast<u_char *>(const_cast<char *>(key.data()))};
    uint32_t hash = ngx_crc32_short(name.data, name.len);

    ngx_shmtx_lock(&shpool->mutex);
    auto *node = reinterpret_cast<ngx_http_gtls_shnode_t *>(ngx_str_rbtree_lookup(&ctx->rbtree, &name, hash));
    if (node == nullptr && create) {
        node = static_cast<ngx_http_gtls_shnode_t *>(
            ngx_slab_calloc_locked(shpool, sizeof(ngx_http_gtls_shnode_t) + name.len));
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

std::string json_string(const std::string &text)
{
    std::string out = "\"";
    for (unsigned char ch : text) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += static_cast<char>(ch);
        } else if (ch < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
            out += buf;
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out + "\"";
}

// Prometheus label values escape backslash, quote and newline.
std::string label(const std::string &text)
{
    std::string out;
    for (char ch : text) {
        if (ch == '\\' || ch == '"') out += '\\';
        if (ch == '\n') {
            out += "\\n";
            continue;
        }
        out += ch;
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

std::vector<Row> ngx_http_gtls_rows(ngx_http_gtls_status_t *status)
{
    std::vector<Row> rows;
    std::set<std::string> seen;
    time_t now = ngx_time();
    for (const ngx_http_gtls_policy_record_t &rec : status->policies) {
        std::string key = ngx_http_gtls_key(rec.kind, *rec.policy);
        if (!seen.insert(key).second) continue;
        Row row;
        row.kind = rec.kind;
        row.policy = rec.policy;
        if (ngx_http_gtls_shnode_t *node = ngx_http_gtls_node(status->zone, key, false)) {
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

std::string ngx_http_gtls_json(ngx_http_gtls_status_t *status)
{
    std::string out = "{\"policies\":[";
    bool first = true;
    for (const Row &row : ngx_http_gtls_rows(status)) {
        const gtls::Policy &p = *row.policy;
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":" + json_string(p.name) + ",\"kind\":" + json_string(row.kind)
               + ",\"mode\":" + json_string(gtls::mode_name(p.mode))
               + ",\"trust\":" + json_string(p.trust_source) + ",\"sans\":[";
        for (size_t i = 0; i < p.sans.size(); i++) out += (i ? "," : "") + json_string(p.sans[i].spec);
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
    for (size_t i = 0; i < status->audit.size(); i++) {
        const ngx_http_gtls_audit_t &a = status->audit[i];
        out += std::string(i ? "," : "") + "{\"file\":" + json_string(a.file) + ",\"line\":" + std::to_string(a.line)
               + ",\"policy\":" + json_string(a.policy) + ",\"kind\":" + json_string(a.kind)
               + ",\"mode\":" + json_string(a.mode) + "}";
    }
    return out + "]}\n";
}

std::string ngx_http_gtls_prometheus(ngx_http_gtls_status_t *status)
{
    std::vector<Row> rows = ngx_http_gtls_rows(status);
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
    for (const ngx_http_gtls_audit_t &a : status->audit) {
        out += "gateway_tls_insecure_scope{policy=\"" + label(a.policy) + "\",kind=\"" + a.kind + "\",mode=\""
               + a.mode + "\",file=\"" + label(a.file) + "\",line=\"" + std::to_string(a.line) + "\"} 1\n";
    }
    return out;
}

ngx_int_t ngx_http_gtls_status_handler(ngx_http_request_t *r)
{
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
    if (mcf->registry->status.zone == nullptr) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "gateway_tls_status needs \"gateway_tls_status_zone\" in the http block");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_str_t format = ngx_null_string;
    bool prometheus = ngx_http_arg(r, (u_char *) "format", 6, &format) == NGX_OK && format.len == 10
                      && ngx_strncmp(format.data, "prometheus", 10) == 0;
    std::string body;
    try {
        body = prometheus ? ngx_http_gtls_prometheus(&mcf->registry->status) : ngx_http_gtls_json(&mcf->registry->status);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: %s", e.what());
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = static_cast<off_t>(body.size());
    if (prometheus) {
        ngx_str_set(&r->headers_out.content_type, "text/plain; version=0.0.4");
    } else {
        ngx_str_set(&r->headers_out.content_type, "application/json");
    }
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }
    ngx_buf_t *b = ngx_create_temp_buf(r->pool, body.size());
    if (b == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    b->last = ngx_cpymem(b->pos, body.data(), body.size());
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}

}  // namespace

char *ngx_http_gtls_status_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);

    if (mcf->registry->status.zone != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    ssize_t size = ngx_parse_size(&value[1]);
    if (size == NGX_ERROR || size < static_cast<ssize_t>(8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"%V\" directive: expected a size of at least %uz",
                           &value[1], &cmd->name, 8 * ngx_pagesize);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_str_t name = {ngx_strlen(kZoneName), (u_char *) kZoneName};
    ngx_shm_zone_t *zone = ngx_shared_memory_add(cf, &name, static_cast<size_t>(size), &ngx_http_gateway_tls_module);
    if (zone == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    zone->init = ngx_http_gtls_init_zone;
    mcf->registry->status.zone = zone;
    return NGX_CONF_OK;
}

char *ngx_http_gtls_status(ngx_conf_t *cf, ngx_command_t *, void *)
{
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(
        ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = ngx_http_gtls_status_handler;
    return NGX_CONF_OK;
}

void ngx_http_gtls_count(ngx_http_gtls_status_t *status, const gtls::Policy *policy,
                         const gtls::Verdict &verdict, ngx_log_t *log)
{
    if (status == nullptr || status->zone == nullptr || status->zone->data == nullptr) {
        return;
    }
    auto it = status->nodes.find(policy);
    if (it == status->nodes.end()) {
        std::string kind = "proxy";
        for (const ngx_http_gtls_policy_record_t &rec : status->policies) {
            if (rec.policy == policy) kind = rec.kind;
        }
        void *node = ngx_http_gtls_node(status->zone, ngx_http_gtls_key(kind, *policy), true);
        if (node == nullptr) {
            ngx_log_error(NGX_LOG_ERR, log, 0, "gateway_tls: \"%s\" zone is full", kZoneName);
            return;
        }
        it = status->nodes.emplace(policy, node).first;
    }
    auto *node = static_cast<ngx_http_gtls_shnode_t *>(it->second);

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
