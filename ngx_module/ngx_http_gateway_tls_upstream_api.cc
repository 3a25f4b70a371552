// gateway_tls_upstream_api: an upstream{} with a zone, in http{} or in
// stream{}, gets its servers replaced at run time (the generations of
// ngx_gtls_dynamic_upstream.h), and a named policy its trust. The
// endpoint (GET lists, PUT replaces) and the module's init live here; what
// a PUT changes is kept and followed by every worker through
// ngx_http_gateway_tls_upstream_state.cc.

#include "ngx_http_gateway_tls_upstream_api.h"

#include <optional>
#include <vector>

#include "gtls_routes_json.h"
#include "gtls_upstream_api.h"
#include "ngx_gtls_nginx_layout.h"
#include "ngx_http_gateway_tls_module.h"
#include "ngx_http_gateway_tls_upstream_state.h"

namespace {

const char *const kStateZoneName = "gateway_tls_upstream_state";

// ---- the endpoint ------------------------------------------------------

ngx_int_t ngx_http_gtls_api_reply(ngx_http_request_t *r, ngx_uint_t status, const std::string &body)
{
    return ngx_http_gtls_send(r, status, "application/json", body);
}

ngx_int_t ngx_http_gtls_api_refuse(ngx_http_request_t *r, ngx_uint_t status, const std::string &text)
{
    const ngx_uint_t level = status >= 500 ? NGX_LOG_ERR : NGX_LOG_INFO;
    ngx_log_error(level, r->connection->log, 0,
                  "gateway_tls: upstream API refused the request: %s", gtls::json_string(text).c_str());
    return ngx_http_gtls_api_reply(r, status, gtls::api_error_json(static_cast<int>(status), text));
}

std::vector<gtls::ListedUpstream> ngx_http_gtls_listed(const ngx_gtls_upstream_set_t &set)
{
    std::vector<gtls::ListedUpstream> listed;
    for (gtls_glue::DynamicUpstream *dyn : set.dynamic) {
        gtls::ListedUpstream &u = listed.emplace_back();
        u.name = dyn->name;
        ngx_uint_t generation;
        dyn->current(&u.servers, &generation, &u.pushed, nullptr);
        u.generation = generation;
    }
    return listed;
}

std::string ngx_http_gtls_list_json(ngx_http_gtls_main_conf_t *mcf)
{
    gtls::ApiList list;
    list.upstreams = ngx_http_gtls_listed(*mcf->upstreams);
    if (mcf->stream_upstreams != nullptr) {
        list.has_stream = true;
        list.stream_upstreams = ngx_http_gtls_listed(*mcf->stream_upstreams);
    }
    if (mcf->route_tables != nullptr) {
        for (const auto &[name, t] : *mcf->route_tables) {
            const size_t before = list.routes.size();
            for (const auto &[host, h] : t.hosts) {
                if (!h.removed) list.routes.push_back({name, host, h.sequence, h.matches, false});
            }
            if (list.routes.size() == before) list.routes.push_back({name, "", 0, 0, false});
        }
    }
    for (const ngx_gtls_certificates_t *certificates : {mcf->certificates, mcf->stream_certificates}) {
        if (certificates == nullptr) {
            continue;
        }
        for (const auto &[name, c] : *certificates) {
            list.certificates.push_back({name, c.sequence, c.pushed != nullptr,
                                         c.pushed != nullptr ? c.pushed->sha256 : c.configured_sha256});
        }
    }
    for (const auto &[name, t] : *mcf->trusted) {
        const gtls::Policy &p = *t.policies.front();
        gtls::ListedPolicy &listed = list.policies.emplace_back();
        listed.name = name;
        listed.generation = t.sequence;
        listed.pushed = t.pushed;
        listed.ca = p.trust_source;
        for (const gtls::Pin &pin : p.pins) listed.pins.push_back(pin.spec);
        listed.hostname = p.hostname;
        for (const gtls::SanMatcher &san : p.sans) listed.subject_alt_names.push_back(san.spec);
        listed.client_certificate = p.client_certificate ? p.client_certificate->sha256 : std::string();
    }
    return gtls::api_list_json(list);
}

// An upstream's new list, built and kept, not yet current.
struct ngx_http_gtls_pending_t {
    const gtls::UpstreamServers   *update = nullptr;
    ngx_http_gtls_entry_kind_e     kind = NGX_HTTP_GTLS_ENTRY_SERVERS;
    gtls_glue::DynamicUpstream   *dyn = nullptr;
    void                          *gen = nullptr;
    ngx_http_gtls_state_entry_t   *entry = nullptr;
};

// A policy's new trust, checked and kept, not yet in place.
struct ngx_http_gtls_pending_trust_t {
    ngx_http_gtls_trusted_t       *trusted = nullptr;
    gtls::Trust                    trust;
    bool                           configured = false;  // what it is configured with: back to that
    ngx_http_gtls_state_entry_t   *entry = nullptr;
};

// A listener's new certificate, read and kept, not yet in place.
struct ngx_http_gtls_pending_certificate_t {
    ngx_gtls_certificate_t            *certificate = nullptr;
    std::shared_ptr<const gtls::KeyPair>    pair;
    ngx_http_gtls_state_entry_t            *entry = nullptr;
};

// A hostname's new rules (null: removed), checked and kept, not yet in
// place.
struct ngx_http_gtls_pending_routes_t {
    ngx_http_gtls_route_table_t              *table = nullptr;
    const gtls::HostUpdate                   *update = nullptr;
    ngx_http_gtls_state_entry_t              *entry = nullptr;
};

// What a PUT has built and not yet put in place: the new lists and trust,
// and their kept copies in the state zone. Dropped when it goes out of
// scope uncommitted, so that a refusal at any point changes nothing.
class PendingChange {
public:
    explicit PendingChange(ngx_http_gtls_main_conf_t *mcf) : mcf_(mcf) {}
    ~PendingChange()
    {
        if (committed_) {
            return;
        }
        for (ngx_http_gtls_pending_trust_t &t : trusts) {
            if (t.entry != nullptr) ngx_http_gtls_drop_entry(mcf_->upstream_state, t.entry);
        }
        for (ngx_http_gtls_pending_t &p : upstreams) {
            if (p.gen != nullptr) p.dyn->free(p.gen);
            if (p.entry != nullptr) ngx_http_gtls_drop_entry(mcf_->upstream_state, p.entry);
        }
        for (ngx_http_gtls_pending_routes_t &p : routes) {
            if (p.entry != nullptr) ngx_http_gtls_drop_entry(mcf_->upstream_state, p.entry);
        }
        for (ngx_http_gtls_pending_certificate_t &p : certificates) {
            if (p.entry != nullptr) ngx_http_gtls_drop_entry(mcf_->upstream_state, p.entry);
        }
    }
    PendingChange(const PendingChange &) = delete;
    PendingChange &operator=(const PendingChange &) = delete;

    // from here on what was built is put in place, not dropped
    void commit() { committed_ = true; }

    std::vector<ngx_http_gtls_pending_trust_t>  trusts;
    std::vector<ngx_http_gtls_pending_t>        upstreams;
    std::vector<ngx_http_gtls_pending_routes_t> routes;
    std::vector<ngx_http_gtls_pending_certificate_t> certificates;

private:
    ngx_http_gtls_main_conf_t  *mcf_;
    bool                        committed_ = false;
};

// Why a PUT is refused: the status and what the reply and log say
struct ngx_http_gtls_refusal_t {
    ngx_uint_t   status;
    std::string  text;
};

using ngx_http_gtls_refused_t = std::optional<ngx_http_gtls_refusal_t>;

// Whether every scope of a policy sends the name it verifies (an
// upstream{} with proxy_ssl_policy_hostname): only there does a pushed
// hostname change both, the name sent and the name verified.
bool ngx_http_gtls_every_hostname_configured(const ngx_http_gtls_trusted_t *t)
{
    for (const gtls::Trust &configured : t->configured) {
        if (!configured.hostname || configured.hostname->empty()) return false;
    }
    return true;
}

// Each policy named verifies here; its new trust built and kept aside.
ngx_http_gtls_refused_t ngx_http_gtls_check_trusts(ngx_http_gtls_main_conf_t *mcf, const gtls::ApiUpdate &update,
                                                   PendingChange *change)
{
    for (const gtls::PolicyTrust &pushed : update.policies) {
        ngx_http_gtls_pending_trust_t &t = change->trusts.emplace_back();
        t.trusted = ngx_http_gtls_find_trusted(mcf, pushed.policy);
        if (t.trusted == nullptr) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_NOT_FOUND,
                                           "no policy " + gtls::json_string(pushed.policy)
                                               + " that verifies (proxy_ssl_policy_name of an http or stream scope"
                                                 " whose mode is not skip)"};
        }
        if (pushed.hostname && !ngx_http_gtls_every_hostname_configured(t.trusted)) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_CONFLICT,
                                           "policies[" + gtls::json_string(pushed.policy)
                                               + "].hostname: the policy is also set where the name sent is"
                                                 " proxy_ssl_name's; only a policy whose every upstream{} sets"
                                                 " proxy_ssl_policy_hostname takes one"};
        }
        std::string error;
        t.configured = ngx_http_gtls_pushed_fingerprint(t.trusted, pushed) == t.trusted->configured_fingerprint;
        if (!t.configured && !gtls::build_policy_trust(pushed, &t.trust, &error)) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_BAD_REQUEST,
                                           "policies[" + gtls::json_string(pushed.policy) + "]: " + error};
        }
        // an empty entry: the configured trust (what a reload would serve anyway)
        t.entry = ngx_http_gtls_new_entry(mcf->upstream_state, NGX_HTTP_GTLS_ENTRY_TRUST, pushed.policy,
                                          t.trusted->configured_fingerprint,
                                          t.configured ? std::string() : gtls::policy_trust_json(pushed));
        if (t.entry == nullptr) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_INSUFFICIENT_STORAGE,
                                           "gateway_tls_upstream_state_zone has no room to keep the trust of policy "
                                               + gtls::json_string(pushed.policy) + "; nothing was changed"};
        }
    }
    return std::nullopt;
}

// Each certificate named is a server's (gateway_tls_certificate), and
// its chain and key are read and belong together; kept aside.
ngx_http_gtls_refused_t ngx_http_gtls_check_certificates(ngx_http_gtls_main_conf_t *mcf, const gtls::ApiUpdate &update,
                                                         PendingChange *change)
{
    for (const gtls::ListenerCertificate &pushed : update.certificates) {
        const std::string field = "certificates[" + gtls::json_string(pushed.name) + "]";
        ngx_http_gtls_pending_certificate_t &p = change->certificates.emplace_back();
        p.certificate = ngx_http_gtls_find_certificate(mcf, pushed.name);
        if (p.certificate == nullptr) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_NOT_FOUND, "no certificate " + gtls::json_string(pushed.name)
                                                                   + " (gateway_tls_certificate of a server)"};
        }
        auto pair = std::make_shared<gtls::KeyPair>();
        std::string error;
        if (!gtls::key_pair_from_pem(pushed.certificate, pushed.key, pair.get(), &error)) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_BAD_REQUEST, field + "." + error};
        }
        p.pair = std::move(pair);
        p.entry = ngx_http_gtls_new_entry(mcf->upstream_state, NGX_HTTP_GTLS_ENTRY_CERTIFICATE, pushed.name,
                                          p.certificate->configured_fingerprint, gtls::listener_certificate_json(pushed));
        if (p.entry == nullptr) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_INSUFFICIENT_STORAGE,
                                           "gateway_tls_upstream_state_zone has no room to keep " + field
                                               + "; nothing was changed"};
        }
    }
    return std::nullopt;
}

// Each upstream named, of http{}, then of stream{}, is one the API may
// replace.
ngx_http_gtls_refused_t ngx_http_gtls_check_upstreams(ngx_http_gtls_main_conf_t *mcf, const gtls::ApiUpdate &update,
                                                      PendingChange *change)
{
    for (const std::vector<gtls::UpstreamServers> *list : {&update.upstreams, &update.stream_upstreams}) {
        const ngx_http_gtls_entry_kind_e kind =
            list == &update.stream_upstreams ? NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS : NGX_HTTP_GTLS_ENTRY_SERVERS;
        const ngx_gtls_upstream_set_t *set = ngx_http_gtls_set_of(mcf, kind);
        const std::string what = ngx_http_gtls_upstream_noun(kind);
        for (const gtls::UpstreamServers &u : *list) {
            gtls_glue::DynamicUpstream *dyn = set != nullptr ? set->find(u.upstream) : nullptr;
            if (dyn != nullptr) {
                change->upstreams.push_back({&u, kind, dyn, nullptr, nullptr});
                continue;
            }
            if (set == nullptr) {
                return ngx_http_gtls_refusal_t{NGX_HTTP_NOT_FOUND,
                                               "no stream upstream \"" + u.upstream
                                                   + "\": nginx runs no stream{} with ngx_stream_gateway_tls_module"};
            }
            auto refused = set->refused.find(u.upstream);
            if (refused != set->refused.end()) {
                return ngx_http_gtls_refusal_t{NGX_HTTP_CONFLICT, what + " \"" + u.upstream + "\" " + refused->second};
            }
            return ngx_http_gtls_refusal_t{NGX_HTTP_NOT_FOUND, "no " + what + " \"" + u.upstream + "\""};
        }
    }
    return std::nullopt;
}

// Each table named is one of this configuration's, each hostname's rules
// are what the module acts on, and their kept copies are written.
ngx_http_gtls_refused_t ngx_http_gtls_check_routes(ngx_http_gtls_main_conf_t *mcf,
                                                   const std::vector<gtls::TableUpdate> &updates, PendingChange *change)
{
    for (const gtls::TableUpdate &u : updates) {
        auto it = mcf->route_tables != nullptr ? mcf->route_tables->find(u.table) : ngx_http_gtls_route_tables_t::iterator();
        if (mcf->route_tables == nullptr || it == mcf->route_tables->end()) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_NOT_FOUND, "no route table " + gtls::json_string(u.table)
                                                                   + " (gateway_tls_routes of a location)"};
        }
        for (const gtls::HostUpdate &h : u.hosts) {
            const std::string field = "routes[" + gtls::json_string(u.table) + "][" + gtls::json_string(h.host) + "]";
            if (h.routes != nullptr) {
                const std::string unserved = ngx_http_gtls_unserved_route_field(*h.routes, mcf->route_support);
                if (!unserved.empty()) {
                    return ngx_http_gtls_refusal_t{NGX_HTTP_CONFLICT,
                                                   field + "." + unserved};
                }
            }
            ngx_http_gtls_pending_routes_t &p = change->routes.emplace_back();
            p.table = &it->second;
            p.update = &h;
            p.entry = ngx_http_gtls_new_entry(mcf->upstream_state, NGX_HTTP_GTLS_ENTRY_ROUTES,
                                              ngx_http_gtls_routes_entry_name(u.table, h.host), 0,
                                              h.routes != nullptr ? gtls::host_routes_json(*h.routes) : std::string());
            if (p.entry == nullptr) {
                return ngx_http_gtls_refusal_t{NGX_HTTP_INSUFFICIENT_STORAGE,
                                               "gateway_tls_upstream_state_zone has no room to keep " + field
                                                   + "; nothing was changed"};
            }
        }
    }
    return std::nullopt;
}

// Each upstream's new servers built in its zone and kept aside.
ngx_http_gtls_refused_t ngx_http_gtls_build_servers(ngx_http_gtls_main_conf_t *mcf, PendingChange *change)
{
    for (ngx_http_gtls_pending_t &p : change->upstreams) {
        const gtls::UpstreamServers &u = *p.update;
        const std::string what = ngx_http_gtls_upstream_noun(p.kind);
        p.gen = p.dyn->build(u.servers);
        if (p.gen == nullptr) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_INSUFFICIENT_STORAGE,
                                           what + " \"" + u.upstream + "\": its zone \"" + p.dyn->zone
                                               + "\" has no room for " + std::to_string(u.servers.size())
                                               + " servers; nothing was changed"};
        }
        p.entry = ngx_http_gtls_new_entry(mcf->upstream_state, p.kind, u.upstream, p.dyn->configured_fingerprint,
                                          gtls::upstream_servers_json(u.servers));
        if (p.entry == nullptr) {
            return ngx_http_gtls_refusal_t{NGX_HTTP_INSUFFICIENT_STORAGE,
                                           "gateway_tls_upstream_state_zone has no room to keep the servers of "
                                               + what + " \"" + u.upstream + "\"; nothing was changed"};
        }
    }
    return std::nullopt;
}

// What was built, kept in the state zone and put in place in this worker
// (the others catch up), each change logged.
gtls::ApiUpdated ngx_http_gtls_put_in_place(ngx_log_t *log, ngx_http_gtls_main_conf_t *mcf,
                                            const gtls::ApiUpdate &update, PendingChange *change)
{
    change->commit();
    gtls::ApiUpdated updated;
    updated.has_stream = !update.stream_upstreams.empty();
    for (ngx_http_gtls_pending_t &p : change->upstreams) {
        ngx_http_gtls_keep_entry(mcf->upstream_state, p.entry);
        if (!p.dyn->swap(p.gen, p.entry->sequence)) {
            p.dyn->free(p.gen);  // a newer push won meanwhile
        }
        p.gen = nullptr;
        const size_t servers = p.update->servers.size();
        ngx_log_error(NGX_LOG_NOTICE, log, 0, "gateway_tls: %s \"%s\" now has %uz servers (from the API, entry %uL)",
                      ngx_http_gtls_upstream_noun(p.kind), p.dyn->name.c_str(), servers, p.entry->sequence);
        (p.kind == NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS ? updated.stream_upstreams : updated.upstreams)
            .emplace_back(p.update->upstream, servers);
    }
    for (size_t i = 0; i < change->trusts.size(); i++) {
        ngx_http_gtls_pending_trust_t &t = change->trusts[i];
        const std::string &name = update.policies[i].policy;
        ngx_http_gtls_keep_entry(mcf->upstream_state, t.entry);
        if (t.configured) {
            const bool was_pushed = t.trusted->pushed;
            ngx_http_gtls_replace_trust(t.trusted, nullptr, t.entry->sequence);
            if (was_pushed) {
                ngx_log_error(NGX_LOG_NOTICE, log, 0,
                              "gateway_tls: policy %s trusts what it is configured with again (from the API, entry %uL)",
                              gtls::json_string(name).c_str(), t.entry->sequence);
            }
        } else {
            ngx_http_gtls_replace_trust(t.trusted, &t.trust, t.entry->sequence);
            std::string names;
            if (t.trust.hostname) names += ", hostname " + gtls::json_string(*t.trust.hostname);
            if (t.trust.sans) names += ", " + std::to_string(t.trust.sans->size()) + " subject alt names";
            ngx_log_error(NGX_LOG_NOTICE, log, 0,
                          "gateway_tls: policy %s now trusts %s and %uz pins%s (from the API, entry %uL)",
                          gtls::json_string(name).c_str(),
                          gtls::json_string(t.trust.source.empty() ? "no CA" : t.trust.source).c_str(), t.trust.pins.size(),
                          names.c_str(), t.entry->sequence);
        }
        updated.policies.emplace_back(name, t.entry->sequence);
    }
    for (ngx_http_gtls_pending_certificate_t &p : change->certificates) {
        ngx_http_gtls_keep_entry(mcf->upstream_state, p.entry);
        p.certificate->pushed = std::move(p.pair);
        p.certificate->sequence = p.entry->sequence;
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "gateway_tls: certificate \"%s\" now presents %s to new handshakes (from the API, entry %uL)",
                      p.certificate->name.c_str(), p.certificate->pushed->sha256.c_str(), p.entry->sequence);
        updated.certificates.emplace_back(p.certificate->name, p.entry->sequence);
    }
    for (ngx_http_gtls_pending_routes_t &p : change->routes) {
        ngx_http_gtls_keep_entry(mcf->upstream_state, p.entry);
        const gtls::HostUpdate &h = *p.update;
        ngx_http_gtls_take_routes(p.table, h.host, h.routes, p.entry->sequence);
        const size_t matches = h.routes != nullptr ? h.routes->matches().size() : 0;
        if (h.routes != nullptr) {
            ngx_log_error(NGX_LOG_NOTICE, log, 0, "gateway_tls: routes \"%s\" of %s now hold %uz matches (from the API, entry %uL)",
                          p.table->name.c_str(), gtls::json_string(h.host).c_str(), matches, p.entry->sequence);
        } else {
            ngx_log_error(NGX_LOG_NOTICE, log, 0, "gateway_tls: routes \"%s\" of %s removed (from the API, entry %uL)",
                          p.table->name.c_str(), gtls::json_string(h.host).c_str(), p.entry->sequence);
        }
        ngx_gtls_count_table(mcf->registry->status.zone, p.table->name,
                             h.routes != nullptr ? NGX_GTLS_TABLE_REPLACED : NGX_GTLS_TABLE_REMOVED, log);
        updated.routes.push_back({p.table->name, h.host, p.entry->sequence, matches, h.routes == nullptr});
    }
    return updated;
}

// A refused PUT counted for each table of this configuration it named
void ngx_http_gtls_count_refused(ngx_http_gtls_main_conf_t *mcf, const std::vector<std::string> &tables, ngx_log_t *log)
{
    for (const std::string &table : tables) {
        if (mcf->route_tables != nullptr && mcf->route_tables->count(table) != 0) {
            ngx_gtls_count_table(mcf->registry->status.zone, table, NGX_GTLS_TABLE_REFUSED, log);
        }
    }
}

// PUT: every upstream and policy named is checked, every new list and
// trust built and its kept copy written, and only then is anything put in
// place: one refusal changes nothing.
ngx_int_t ngx_http_gtls_api_update(ngx_http_request_t *r, ngx_http_gtls_main_conf_t *mcf, std::string_view body)
{
    gtls::ApiUpdate update;
    std::vector<gtls::TableUpdate> routes;
    try {
        update = gtls::parse_api_update(body);
        if (update.has_routes) {
            routes = gtls::parse_route_update(body);  // a tree: only for a body that has routes
        }
    } catch (const gtls::ApiError &e) {
        ngx_http_gtls_count_refused(mcf, {e.table()}, r->connection->log);
        return ngx_http_gtls_api_refuse(r, e.status(), e.what());
    }
    PendingChange change(mcf);
    ngx_http_gtls_refused_t refused = ngx_http_gtls_check_trusts(mcf, update, &change);
    if (!refused) {
        refused = ngx_http_gtls_check_certificates(mcf, update, &change);
    }
    if (!refused) {
        refused = ngx_http_gtls_check_routes(mcf, routes, &change);
    }
    if (!refused) {
        refused = ngx_http_gtls_check_upstreams(mcf, update, &change);
    }
    if (!refused) {
        refused = ngx_http_gtls_build_servers(mcf, &change);
    }
    if (refused) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls upstream api: PUT refused, %ui",
                       refused->status);
        std::vector<std::string> tables;
        for (const gtls::TableUpdate &u : routes) tables.push_back(u.table);
        ngx_http_gtls_count_refused(mcf, tables, r->connection->log);
        return ngx_http_gtls_api_refuse(r, refused->status, refused->text);
    }
    const gtls::ApiUpdated updated = ngx_http_gtls_put_in_place(r->connection->log, mcf, update, &change);
    ngx_http_gtls_notice_changes(static_cast<ngx_cycle_t *>(const_cast<ngx_cycle_t *>(ngx_cycle)));
    return ngx_http_gtls_api_reply(r, NGX_HTTP_OK, gtls::api_updated_json(updated));
}

void ngx_http_gtls_api_body(ngx_http_request_t *r)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
    ngx_int_t rc;
    try {
        std::string body;
        bool in_file = false;
        if (r->request_body != nullptr) {
            for (ngx_chain_t *cl = r->request_body->bufs; cl; cl = cl->next) {
                if (cl->buf->in_file || cl->buf->file != nullptr) {
                    in_file = true;
                    break;
                }
                body.append(reinterpret_cast<const char *>(cl->buf->pos), cl->buf->last - cl->buf->pos);
            }
        }
        if (in_file) {
            rc = ngx_http_gtls_api_refuse(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                          "the body is larger than client_body_buffer_size in this location");
        } else {
            rc = ngx_http_gtls_api_update(r, mcf, body);
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: %s", e.what());
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_http_finalize_request(r, rc);
}

ngx_int_t ngx_http_gtls_api_handler(ngx_http_request_t *r)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_get_module_main_conf(r, ngx_http_gateway_tls_module));
    auto *lcf = static_cast<ngx_http_gtls_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_gateway_tls_module));

    if (ngx_int_t refused = ngx_http_gtls_access_check(r, lcf->api, "upstream API", "gateway_tls_upstream_api_allow"); refused != NGX_OK) {
        if (ngx_http_discard_request_body(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return ngx_http_gtls_api_reply(r, refused,
                                       gtls::api_error_json(static_cast<int>(refused),
                                                            refused == NGX_HTTP_FORBIDDEN
                                                                ? "this address may not use the upstream API"
                                                                : "the upstream API needs its bearer token"));
    }

    try {
        if (ngx_exiting || ngx_quit || ngx_terminate || ngx_http_gtls_state_replaced(mcf)) {
            // a push here would not reach the configuration that replaces
            // this one, nor would a list say what that one holds
            if (ngx_http_discard_request_body(r) != NGX_OK) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }
            ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "gateway_tls upstream api: worker leaving, 503");
            return ngx_http_gtls_api_refuse(r, NGX_HTTP_SERVICE_UNAVAILABLE, "this worker is leaving after a reload; retry");
        }
        if (r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD)) {
            ngx_int_t rc = ngx_http_discard_request_body(r);
            if (rc != NGX_OK) {
                return rc;
            }
            ngx_http_gtls_catch_up(mcf);  // what other workers took: this one lists it too
            return ngx_http_gtls_api_reply(r, NGX_HTTP_OK, ngx_http_gtls_list_json(mcf));
        }
        if (r->method & NGX_HTTP_PUT) {
            r->request_body_in_single_buf = 1;
            ngx_int_t rc = ngx_http_read_client_request_body(r, ngx_http_gtls_api_body);
            if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
                return rc;
            }
            return NGX_DONE;
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "gateway_tls: %s", e.what());
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    return ngx_http_gtls_api_refuse(r, NGX_HTTP_NOT_ALLOWED, "use GET to read the servers, PUT to replace them");
}

}  // namespace

char *ngx_http_gtls_upstream_api(ngx_conf_t *cf, ngx_command_t *, void *conf)
{
    static_cast<ngx_http_gtls_loc_conf_t *>(conf)->api.serves = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_gateway_tls_module));
    clcf->handler = ngx_http_gtls_api_handler;
    mcf->upstream_api = 1;
    return NGX_CONF_OK;
}

char *ngx_http_gtls_upstream_state_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    auto *mcf = static_cast<ngx_http_gtls_main_conf_t *>(conf);
    if (mcf->upstream_state != nullptr) {
        return const_cast<char *>("is duplicate");
    }
    mcf->upstream_state = ngx_http_gtls_add_zone(cf, cmd, kStateZoneName, ngx_http_gtls_state_init_zone);
    return mcf->upstream_state != nullptr ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

ngx_gtls_certificate_t *ngx_http_gtls_find_certificate(ngx_http_gtls_main_conf_t *mcf, const std::string &name)
{
    ngx_gtls_certificate_t *c = ngx_gtls_find_certificate(mcf->certificates, name);
    return c != nullptr ? c : ngx_gtls_find_certificate(mcf->stream_certificates, name);
}

void ngx_http_gtls_catch_up_hook(void *mcf)
{
    try {
        ngx_http_gtls_catch_up(static_cast<ngx_http_gtls_main_conf_t *>(mcf));
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "gateway_tls: %s", e.what());
    }
}

ngx_int_t ngx_http_gtls_init_dynamic_upstreams(ngx_cycle_t *cycle, ngx_gtls_stream_export_t *stream)
{
    ngx_http_gtls_main_conf_t *mcf = ngx_http_gtls_cycle_main_conf(cycle);
    if (mcf == nullptr) {
        return NGX_OK;
    }
    try {
        mcf->upstreams = ngx_gtls_pool_new<ngx_gtls_upstream_set_t>(cycle->pool);
        if (mcf->upstreams == nullptr || ngx_http_gtls_collect_trusted(cycle, mcf, stream) != NGX_OK) {
            return NGX_ERROR;
        }
        auto *umcf = static_cast<ngx_http_upstream_main_conf_t *>(
            ngx_http_cycle_get_module_main_conf(cycle, ngx_http_upstream_module));
        auto **uscfp = static_cast<ngx_http_upstream_srv_conf_t **>(umcf->upstreams.elts);
        for (ngx_uint_t i = 0; i < umcf->upstreams.nelts; i++) {
            ngx_http_upstream_srv_conf_t *uscf = uscfp[i];
            std::string why = ngx_http_gtls_dynamic_t::not_dynamic(uscf);
            if (!why.empty()) {
                mcf->upstreams->refused.emplace(ngx_gtls_sv(uscf->host), std::move(why));
                continue;
            }
            ngx_http_gtls_dynamic_t *dyn = ngx_http_gtls_dynamic_t::create(cycle, uscf, &mcf->registry->sessions);
            if (dyn == nullptr) {
                return NGX_ERROR;
            }
            auto *ups = static_cast<ngx_http_gtls_srv_conf_t *>(ngx_http_conf_upstream_srv_conf(uscf, ngx_http_gateway_tls_module));
            ups->dynamic = dyn;
            mcf->upstreams->add(dyn);
        }
        // the stream module's, which it binds its sessions to itself; its
        // sessions catch up, as requests do, with what other workers took
        if (stream != nullptr) {
            mcf->stream_upstreams = ngx_gtls_pool_new<ngx_gtls_upstream_set_t>(cycle->pool);
            if (mcf->stream_upstreams == nullptr || stream->init_upstreams(cycle, mcf->stream_upstreams) != NGX_OK) {
                return NGX_ERROR;
            }
            stream->catch_up = mcf->catch_up;
            // one name, one certificate: a push names what it replaces
            if (stream->certificates != nullptr && mcf->certificates != nullptr) {
                for (const auto &[name, c] : *stream->certificates) {
                    if (mcf->certificates->count(name) != 0) {
                        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                                      "gateway_tls_certificate \"%s\" names both an http and a stream server",
                                      name.c_str());
                        return NGX_ERROR;
                    }
                }
            }
            mcf->stream_certificates = stream->certificates;
        }

        ngx_http_gtls_carry_resized_zone(cycle, mcf);
        ngx_http_gtls_take_kept_entries(cycle, mcf);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
    return NGX_OK;
}

ngx_int_t ngx_http_gtls_init_dynamic_process(ngx_cycle_t *cycle)
{
    ngx_http_gtls_main_conf_t *mcf = ngx_http_gtls_cycle_main_conf(cycle);
    if (mcf == nullptr || mcf->upstreams == nullptr) {
        return NGX_OK;
    }
    size_t dynamic = 0;
    try {
        for (ngx_gtls_upstream_set_t *set : {mcf->upstreams, mcf->stream_upstreams}) {
            if (set == nullptr) {
                continue;
            }
            for (gtls_glue::DynamicUpstream *dyn : set->dynamic) {
                bool pushed;
                dyn->current(nullptr, &dyn->seen_generation, &pushed, &dyn->seen_addresses);
                dynamic++;
            }
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "gateway_tls: %s", e.what());
        return NGX_ERROR;
    }
    if (dynamic == 0 && mcf->upstream_state == nullptr) {
        return NGX_OK;
    }
    ngx_http_gtls_start_noticing(cycle);
    return NGX_OK;
}
