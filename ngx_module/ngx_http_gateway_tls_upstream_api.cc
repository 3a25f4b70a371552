// gateway_tls_upstream_api: an upstream{} with a zone, in http{} or in
// stream{}, gets its servers replaced at run time (the generations of
// ngx_gtls_dynamic_upstream.h); the endpoint, the list kept across
// reloads, and each worker's catching up live here.
//
// The trust of named policies (their CA and pins) is replaced the same
// way: each worker puts the pushed trust in place of its own copies of the
// policies, and a new trust generation in every binding keeps TLS sessions
// and keepalive connections made under the old trust from carrying over.

#include "ngx_http_gateway_tls_upstream_api.h"

#include <sys/socket.h>

#include <algorithm>
#include <vector>

#include "gtls_upstream_api.h"
#include "ngx_gtls_nginx_layout.h"
#include "ngx_http_gateway_tls_module.h"

namespace {

// A shared mutex held for a scope: C++ work under it may throw.
class MutexLock {
public:
    explicit MutexLock(ngx_shmtx_t *mutex) : mutex_(mutex) { ngx_shmtx_lock(mutex_); }
    ~MutexLock() { ngx_shmtx_unlock(mutex_); }
    MutexLock(const MutexLock &) = delete;
    MutexLock &operator=(const MutexLock &) = delete;

private:
    ngx_shmtx_t *mutex_;
};

// ---- the list kept across reloads (gateway_tls_upstream_state_zone) ------

// One entry per upstream (of http{} or of stream{}: their names are apart),
// the list last pushed, and per policy its trust. Entries are numbered as
// they are written: a push that a worker of a replaced configuration
// handled (a reload's race) reaches the workers of the new one, whose
// timers look for entries newer than what they run.
enum ngx_http_gtls_entry_kind_e {
    NGX_HTTP_GTLS_ENTRY_SERVERS,
    NGX_HTTP_GTLS_ENTRY_TRUST,
    NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS
};

struct ngx_http_gtls_state_entry_t {
    ngx_http_gtls_state_entry_t  *next;
    uint64_t                      sequence;
    uint64_t                      fingerprint;  // of the configured servers (or trust) it replaced
    ngx_uint_t                    kind;         // ngx_http_gtls_entry_kind_e
    size_t                        name_len, json_len;
    u_char                        data[1];      // name, then the servers' JSON
};

struct ngx_http_gtls_state_t {
    ngx_http_gtls_state_entry_t  *entries;
    uint64_t                      sequence;  // of the last entry written
};

const char *const kStateZoneName = "gateway_tls_upstream_state";

ngx_int_t ngx_http_gtls_state_init_zone(ngx_shm_zone_t *zone, void *data)
{
    if (data != nullptr) {  // a reload with the same size keeps what was pushed
        zone->data = data;
        return NGX_OK;
    }
    auto *shpool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    auto *state = static_cast<ngx_http_gtls_state_t *>(ngx_slab_calloc(shpool, sizeof(ngx_http_gtls_state_t)));
    if (state == nullptr) {
        return NGX_ERROR;
    }
    shpool->data = state;
    zone->data = state;
    return NGX_OK;
}

ngx_slab_pool_t *ngx_http_gtls_state_pool(ngx_shm_zone_t *zone)
{
    return reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
}

std::string_view ngx_http_gtls_entry_name(const ngx_http_gtls_state_entry_t *e)
{
    return {reinterpret_cast<const char *>(e->data), e->name_len};
}

std::string ngx_http_gtls_entry_json(const ngx_http_gtls_state_entry_t *e)
{
    return {reinterpret_cast<const char *>(e->data + e->name_len), e->json_len};
}

uint64_t ngx_http_gtls_state_sequence(const ngx_http_gtls_state_t *state)
{
    return __atomic_load_n(&state->sequence, __ATOMIC_ACQUIRE);  // read without the zone's mutex
}

// ---- policies' trust -----------------------------------------------------

// The policies of each name, of this module and of the stream module
// (`stream`, when it is loaded), and what they trust as configured; every
// worker inherits them from init_module and changes its own copies.
ngx_int_t ngx_http_gtls_collect_trusted(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf,
                                        const ngx_gtls_stream_export_t *stream)
{
    mcf->trusted = ngx_gtls_pool_new<std::map<std::string, ngx_http_gtls_trusted_t>>(cycle->pool);
    if (mcf->trusted == nullptr) {
        return NGX_ERROR;
    }
    std::map<std::string, std::string> ca_files;  // policies share bundles: each read once
    auto collect = [&](const ngx_gtls_status_t &status, ngx_gtls_session_cache_t *sessions) {
        for (const ngx_gtls_policy_record_t &rec : status.policies) {
            if (rec.policy->name.empty() || rec.policy->mode == gtls::Mode::Skip) {
                continue;  // nothing to name it by, or no trust to replace
            }
            ngx_http_gtls_trusted_t &t = (*mcf->trusted)[rec.policy->name];
            // built by ngx_gtls_build_policy in the configuration pool, not const there
            t.policies.push_back(const_cast<gtls::Policy *>(rec.policy));
            t.configured.push_back({rec.policy->store, rec.policy->trust_source, rec.policy->pins});
            t.configured_fingerprint = t.configured_fingerprint * 0x100000001b3ull ^ gtls::trust_fingerprint(*rec.policy, &ca_files);
            if (std::find(t.sessions.begin(), t.sessions.end(), sessions) == t.sessions.end()) {
                t.sessions.push_back(sessions);
            }
        }
    };
    collect(mcf->registry->status, &mcf->registry->sessions);
    if (stream != nullptr) {
        collect(*stream->status, stream->sessions);
    }
    return NGX_OK;
}

ngx_http_gtls_trusted_t *ngx_http_gtls_find_trusted(ngx_http_gtls_main_conf_t *mcf, const std::string &name)
{
    auto it = mcf->trusted->find(name);
    return it != mcf->trusted->end() ? &it->second : nullptr;
}

// The configured trust of a group, as pushed trust would fingerprint it:
// pushing what is configured takes the group back to its configuration.
uint64_t ngx_http_gtls_pushed_fingerprint(const ngx_http_gtls_trusted_t *t, const gtls::PolicyTrust &pushed)
{
    uint64_t one = gtls::trust_fingerprint(pushed.ca, pushed.pins), all = 0;
    for (size_t i = 0; i < t->policies.size(); i++) all = all * 0x100000001b3ull ^ one;
    return all;
}

// Frees the TLS sessions `sessions` holds for `policies`.
void ngx_http_gtls_forget_sessions(ngx_gtls_session_cache_t &sessions, const std::vector<gtls::Policy *> &policies)
{
    for (auto it = sessions.begin(); it != sessions.end();) {
        if (std::find(policies.begin(), policies.end(), it->second.policy) != policies.end()) {
            SSL_SESSION_free(it->second.session);
            it = sessions.erase(it);
        } else {
            ++it;
        }
    }
}

// Puts `trust` in place in this process's copies of the policies (or,
// `trust` null, each one's configured trust again), and frees the TLS
// sessions made under what they trusted before (the new trust generation
// would never offer them again).
void ngx_http_gtls_replace_trust(ngx_http_gtls_trusted_t *t, const gtls::Trust *trust, uint64_t sequence)
{
    for (size_t i = 0; i < t->policies.size(); i++) {
        gtls::replace_trust(t->policies[i], trust != nullptr ? *trust : t->configured[i], sequence);
    }
    t->sequence = sequence;
    t->pushed = trust != nullptr;
    for (ngx_gtls_session_cache_t *sessions : t->sessions) {
        ngx_http_gtls_forget_sessions(*sessions, t->policies);
    }
}

// A kept entry's trust made current here; false (a log line, and a policy
// that trusts nothing) when it cannot be read here.
bool ngx_http_gtls_take_trust(ngx_log_t *log, ngx_http_gtls_trusted_t *t,
                              const std::string &name, const std::string &json, uint64_t sequence)
{
    if (json.empty()) {  // the configured trust, pushed: back to it
        ngx_http_gtls_replace_trust(t, nullptr, sequence);
        return true;
    }
    gtls::PolicyTrust pushed = gtls::parse_policy_trust(json, name);
    gtls::Trust trust;
    std::string error;
    if (!gtls::build_trust(pushed.ca, pushed.pins, &trust, &error)) {
        // fail closed: neither the trust replaced nor none at all
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "gateway_tls: policy %s trusts nothing until the next push: the trust pushed cannot be read here: %s",
                      gtls::json_string(name).c_str(), gtls::json_string(error).c_str());
        const gtls::Trust nothing;
        ngx_http_gtls_replace_trust(t, &nothing, sequence);
        return false;
    }
    ngx_http_gtls_replace_trust(t, &trust, sequence);
    return true;
}

ngx_http_gtls_main_conf_t *ngx_http_gtls_cycle_main_conf(ngx_cycle_t *cycle)
{
    if (cycle->conf_ctx[ngx_http_module.index] == nullptr) {
        return nullptr;
    }
    return static_cast<ngx_http_gtls_main_conf_t *>(
        ngx_http_cycle_get_module_main_conf(cycle, ngx_http_gateway_tls_module));
}

// The upstreams an entry of `kind` names: http's, or stream's (null
// when the stream module is not loaded).
ngx_gtls_upstream_set_t *ngx_http_gtls_set_of(ngx_http_gtls_main_conf_t *mcf, ngx_uint_t kind)
{
    return kind == NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS ? mcf->stream_upstreams : mcf->upstreams;
}

// How replies and log lines name an upstream of `kind`.
const char *ngx_http_gtls_upstream_noun(ngx_uint_t kind)
{
    return kind == NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS ? "stream upstream" : "upstream";
}

gtls_glue::DynamicUpstream *ngx_http_gtls_find_dynamic(ngx_http_gtls_main_conf_t *mcf, ngx_uint_t kind,
                                                        std::string_view name)
{
    ngx_gtls_upstream_set_t *set = ngx_http_gtls_set_of(mcf, kind);
    return set != nullptr ? set->find(name) : nullptr;
}

// ---- closing what removed servers leave behind -------------------------

// Idle keepalive connections to `removed` are closed the way nginx closes
// idle connections at shutdown (close, then the read handler: keepalive's
// own, which frees its cache slot), and TLS sessions the upstream's module
// cached for them dropped.
void ngx_http_gtls_forget_servers(ngx_cycle_t *cycle, ngx_gtls_session_cache_t &sessions,
                                  const std::set<std::string> &removed)
{
    if (removed.empty()) {
        return;
    }
    ngx_connection_t *c = cycle->connections;
    for (ngx_uint_t i = 0; c != nullptr && i < cycle->connection_n; i++) {
        // an upstream connection (no listening socket) kept idle
        if (c[i].fd == (ngx_socket_t) -1 || !c[i].idle || c[i].listening != nullptr || c[i].close) {
            continue;
        }
        ngx_sockaddr_t sa;
        socklen_t len = sizeof(sa);
        if (getpeername(c[i].fd, &sa.sockaddr, &len) != 0
            || removed.find(std::string(reinterpret_cast<const char *>(&sa), len)) == removed.end()) {
            continue;
        }
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0, "gateway_tls: closing idle connection %d to a removed server",
                       c[i].fd);
        c[i].close = 1;
        c[i].read->handler(c[i].read);
    }

    for (auto it = sessions.begin(); it != sessions.end();) {
        bool gone = false;
        for (const std::string &address : removed) {
            gone = gone || (it->first.size() >= address.size()
                            && it->first.compare(it->first.size() - address.size(), address.size(), address) == 0);
        }
        if (gone) {
            SSL_SESSION_free(it->second.session);
            it = sessions.erase(it);
        } else {
            ++it;
        }
    }
}

// Lists pushed since this worker last looked, through whichever worker
// (of this configuration or of one a reload replaced), made current here
// when this configuration does not run them yet.
void ngx_http_gtls_apply_newer_entries(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf)
{
    if (mcf->upstream_state == nullptr) {
        return;
    }
    auto *state = static_cast<ngx_http_gtls_state_t *>(mcf->upstream_state->data);
    ngx_slab_pool_t *state_pool = ngx_http_gtls_state_pool(mcf->upstream_state);
    struct Newer {
        gtls_glue::DynamicUpstream *dyn;
        std::string json;
        uint64_t sequence;
        ngx_uint_t kind;
    };
    struct NewerTrust {
        ngx_http_gtls_trusted_t *trusted;
        std::string name, json;
        uint64_t sequence;
    };
    std::vector<Newer> newer;
    std::vector<NewerTrust> Newerrust;
    {
        MutexLock locked(&state_pool->mutex);
        if (state->sequence != mcf->state_sequence) {
            for (ngx_http_gtls_state_entry_t *e = state->entries; e; e = e->next) {
                if (e->sequence <= mcf->state_sequence) {
                    continue;
                }
                const std::string name(ngx_http_gtls_entry_name(e));
                if (e->kind == NGX_HTTP_GTLS_ENTRY_TRUST) {
                    ngx_http_gtls_trusted_t *t = ngx_http_gtls_find_trusted(mcf, name);
                    if (t != nullptr && e->sequence > t->sequence) {
                        Newerrust.push_back({t, name, ngx_http_gtls_entry_json(e), e->sequence});
                    }
                    continue;
                }
                gtls_glue::DynamicUpstream *dyn = ngx_http_gtls_find_dynamic(mcf, e->kind, name);
                if (dyn != nullptr && e->sequence > dyn->sequence()) {
                    newer.push_back({dyn, ngx_http_gtls_entry_json(e), e->sequence, e->kind});
                }
            }
            mcf->state_sequence = state->sequence;
        }
    }

    for (const NewerTrust &n : Newerrust) {
        if (ngx_http_gtls_take_trust(cycle->log, n.trusted, n.name, n.json, n.sequence)) {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                           "gateway_tls: policy \"%s\" takes the trust pushed through another worker (entry %uL)",
                           n.name.c_str(), n.sequence);
        }
    }

    for (const Newer &n : newer) {
        void *gen = n.dyn->build(gtls::parse_server_list(n.json));
        if (gen == nullptr) {
            ngx_log_error(NGX_LOG_ERR, cycle->log, 0, "gateway_tls: %s \"%s\": zone \"%s\" has no room for the servers pushed",
                          ngx_http_gtls_upstream_noun(n.kind), n.dyn->name.c_str(), n.dyn->zone.c_str());
            continue;
        }
        if (!n.dyn->swap(gen, n.sequence)) {
            n.dyn->free(gen);  // another worker of this configuration did
        } else {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "gateway_tls: %s \"%s\" takes the servers pushed through another worker (entry %uL)",
                          ngx_http_gtls_upstream_noun(n.kind), n.dyn->name.c_str(), n.sequence);
        }
    }
}

void ngx_http_gtls_notice_changes(ngx_cycle_t *cycle)
{
    ngx_http_gtls_main_conf_t *mcf = ngx_http_gtls_cycle_main_conf(cycle);
    if (mcf == nullptr || mcf->upstreams == nullptr || mcf->trusted == nullptr) {
        return;
    }
    try {
        ngx_http_gtls_apply_newer_entries(cycle, mcf);
        for (ngx_gtls_upstream_set_t *set : {mcf->upstreams, mcf->stream_upstreams}) {
            if (set == nullptr) {
                continue;
            }
            for (gtls_glue::DynamicUpstream *dyn : set->dynamic) {
                if (dyn->generation() == dyn->seen_generation) {
                    continue;
                }
                std::set<std::string> now;
                bool pushed;
                dyn->current(nullptr, &dyn->seen_generation, &pushed, &now);
                std::set<std::string> removed;
                std::set_difference(dyn->seen_addresses.begin(), dyn->seen_addresses.end(), now.begin(), now.end(),
                                    std::inserter(removed, removed.end()));
                dyn->seen_addresses = std::move(now);
                ngx_http_gtls_forget_servers(cycle, *dyn->sessions, removed);
            }
        }
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, 0, "gateway_tls: %s", e.what());
    }
}

ngx_event_t ngx_http_gtls_notice_event;
ngx_connection_t ngx_http_gtls_notice_connection;

void ngx_http_gtls_notice_handler(ngx_event_t *ev)
{
    ngx_http_gtls_notice_changes(static_cast<ngx_cycle_t *>(const_cast<ngx_cycle_t *>(ngx_cycle)));
    if (!ngx_exiting && !ngx_quit && !ngx_terminate) {
        ngx_add_timer(ev, 1000);
    }
}

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
    for (const auto &[name, t] : *mcf->trusted) {
        const gtls::Policy &p = *t.policies.front();
        gtls::ListedPolicy &listed = list.policies.emplace_back();
        listed.name = name;
        listed.generation = t.sequence;
        listed.pushed = t.pushed;
        listed.ca = p.trust_source;
        for (const gtls::Pin &pin : p.pins) listed.pins.push_back(pin.spec);
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

ngx_http_gtls_state_entry_t *ngx_http_gtls_new_entry(ngx_shm_zone_t *zone, ngx_http_gtls_entry_kind_e kind,
                                                     std::string_view name, uint64_t fingerprint, const std::string &json)
{
    ngx_slab_pool_t *shpool = ngx_http_gtls_state_pool(zone);
    ngx_shmtx_lock(&shpool->mutex);
    const ngx_uint_t log_nomem = shpool->log_nomem;
    shpool->log_nomem = 0;
    auto *e = static_cast<ngx_http_gtls_state_entry_t *>(
        ngx_slab_alloc_locked(shpool, sizeof(ngx_http_gtls_state_entry_t) + name.size() + json.size()));
    shpool->log_nomem = log_nomem;
    ngx_shmtx_unlock(&shpool->mutex);
    if (e == nullptr) {
        return nullptr;
    }
    e->next = nullptr;
    e->kind = kind;
    e->fingerprint = fingerprint;
    e->name_len = name.size();
    e->json_len = json.size();
    ngx_memcpy(e->data, name.data(), name.size());
    ngx_memcpy(e->data + name.size(), json.data(), json.size());
    return e;
}

// Replaces (or adds) the state zone's entry for the entry's upstream or policy.
void ngx_http_gtls_keep_entry(ngx_shm_zone_t *zone, ngx_http_gtls_state_entry_t *entry)
{
    ngx_slab_pool_t *shpool = ngx_http_gtls_state_pool(zone);
    auto *state = static_cast<ngx_http_gtls_state_t *>(zone->data);
    ngx_shmtx_lock(&shpool->mutex);
    for (ngx_http_gtls_state_entry_t **link = &state->entries; *link; link = &(*link)->next) {
        if ((*link)->kind == entry->kind && ngx_http_gtls_entry_name(*link) == ngx_http_gtls_entry_name(entry)) {
            ngx_http_gtls_state_entry_t *old = *link;
            *link = old->next;
            ngx_slab_free_locked(shpool, old);
            break;
        }
    }
    entry->sequence = state->sequence + 1;
    __atomic_store_n(&state->sequence, entry->sequence, __ATOMIC_RELEASE);
    entry->next = state->entries;
    state->entries = entry;
    ngx_shmtx_unlock(&shpool->mutex);
}

// A policy's new trust, checked and kept, not yet in place.
struct ngx_http_gtls_pending_trust_t {
    ngx_http_gtls_trusted_t       *trusted = nullptr;
    gtls::Trust                    trust;
    bool                           configured = false;  // what it is configured with: back to that
    ngx_http_gtls_state_entry_t   *entry = nullptr;
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
        ngx_slab_pool_t *shpool = ngx_http_gtls_state_pool(mcf_->upstream_state);
        for (ngx_http_gtls_pending_trust_t &t : trusts) {
            if (t.entry != nullptr) ngx_slab_free(shpool, t.entry);
        }
        for (ngx_http_gtls_pending_t &p : upstreams) {
            if (p.gen != nullptr) p.dyn->free(p.gen);
            if (p.entry != nullptr) ngx_slab_free(shpool, p.entry);
        }
    }
    PendingChange(const PendingChange &) = delete;
    PendingChange &operator=(const PendingChange &) = delete;

    // from here on what was built is put in place, not dropped
    void commit() { committed_ = true; }

    std::vector<ngx_http_gtls_pending_trust_t>  trusts;
    std::vector<ngx_http_gtls_pending_t>        upstreams;

private:
    ngx_http_gtls_main_conf_t  *mcf_;
    bool                        committed_ = false;
};

// PUT: every upstream and policy named is checked, every new list and
// trust built and its kept copy written, and only then is anything put in
// place: one refusal changes nothing.
ngx_int_t ngx_http_gtls_api_update(ngx_http_request_t *r, ngx_http_gtls_main_conf_t *mcf, std::string_view body)
{
    gtls::ApiUpdate update;
    try {
        update = gtls::parse_api_update(body);
    } catch (const gtls::ApiError &e) {
        return ngx_http_gtls_api_refuse(r, e.status(), e.what());
    }
    PendingChange change(mcf);
    std::vector<ngx_http_gtls_pending_trust_t> &trusts = change.trusts;
    std::vector<ngx_http_gtls_pending_t> &pending = change.upstreams;
    for (const gtls::PolicyTrust &pushed : update.policies) {
        ngx_http_gtls_pending_trust_t t;
        t.trusted = ngx_http_gtls_find_trusted(mcf, pushed.policy);
        if (t.trusted == nullptr) {
            return ngx_http_gtls_api_refuse(r, NGX_HTTP_NOT_FOUND,
                                            "no policy " + gtls::json_string(pushed.policy)
                                                + " that verifies (proxy_ssl_policy_name of an http or stream scope whose mode is not skip)");
        }
        std::string error;
        t.configured = ngx_http_gtls_pushed_fingerprint(t.trusted, pushed) == t.trusted->configured_fingerprint;
        if (!t.configured && !gtls::build_trust(pushed.ca, pushed.pins, &t.trust, &error)) {
            return ngx_http_gtls_api_refuse(r, NGX_HTTP_BAD_REQUEST,
                                            "policies[" + gtls::json_string(pushed.policy) + "]: " + error);
        }
        // an empty entry: the configured trust (what a reload would serve anyway)
        t.entry = ngx_http_gtls_new_entry(mcf->upstream_state, NGX_HTTP_GTLS_ENTRY_TRUST, pushed.policy,
                                          t.trusted->configured_fingerprint,
                                          t.configured ? std::string() : gtls::policy_trust_json(pushed));
        if (t.entry == nullptr) {
            return ngx_http_gtls_api_refuse(r, NGX_HTTP_INSUFFICIENT_STORAGE,
                                            "gateway_tls_upstream_state_zone has no room to keep the trust of policy "
                                                + gtls::json_string(pushed.policy) + "; nothing was changed");
        }
        trusts.push_back(std::move(t));
    }

    // the upstreams of http{}, then of stream{}
    for (const std::vector<gtls::UpstreamServers> *list : {&update.upstreams, &update.stream_upstreams}) {
        const ngx_http_gtls_entry_kind_e kind =
            list == &update.stream_upstreams ? NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS : NGX_HTTP_GTLS_ENTRY_SERVERS;
        const ngx_gtls_upstream_set_t *set = ngx_http_gtls_set_of(mcf, kind);
        const std::string what = ngx_http_gtls_upstream_noun(kind);
        for (const gtls::UpstreamServers &u : *list) {
            ngx_http_gtls_pending_t p;
            p.update = &u;
            p.kind = kind;
            p.dyn = set != nullptr ? set->find(u.upstream) : nullptr;
            if (p.dyn == nullptr) {
                if (set == nullptr) {
                    return ngx_http_gtls_api_refuse(r, NGX_HTTP_NOT_FOUND,
                                                    "no stream upstream \"" + u.upstream
                                                        + "\": nginx runs no stream{} with ngx_stream_gateway_tls_module");
                }
                auto refused = set->refused.find(u.upstream);
                if (refused != set->refused.end()) {
                    return ngx_http_gtls_api_refuse(r, NGX_HTTP_CONFLICT,
                                                    what + " \"" + u.upstream + "\" " + refused->second);
                }
                return ngx_http_gtls_api_refuse(r, NGX_HTTP_NOT_FOUND, "no " + what + " \"" + u.upstream + "\"");
            }
            pending.push_back(p);
        }
    }

    for (ngx_http_gtls_pending_t &p : pending) {
        const gtls::UpstreamServers &u = *p.update;
        const std::string what = ngx_http_gtls_upstream_noun(p.kind);
        p.gen = p.dyn->build(u.servers);
        if (p.gen == nullptr) {
            return ngx_http_gtls_api_refuse(r, NGX_HTTP_INSUFFICIENT_STORAGE,
                                            what + " \"" + u.upstream + "\": its zone \"" + p.dyn->zone + "\" has no room for "
                                                + std::to_string(u.servers.size()) + " servers; nothing was changed");
        }
        p.entry = ngx_http_gtls_new_entry(mcf->upstream_state, p.kind, u.upstream, p.dyn->configured_fingerprint,
                                          gtls::upstream_servers_json(u.servers));
        if (p.entry == nullptr) {
            return ngx_http_gtls_api_refuse(r, NGX_HTTP_INSUFFICIENT_STORAGE,
                                            "gateway_tls_upstream_state_zone has no room to keep the servers of " + what
                                                + " \"" + u.upstream + "\"; nothing was changed");
        }
    }

    change.commit();
    gtls::ApiUpdated updated;
    updated.has_stream = !update.stream_upstreams.empty();
    for (ngx_http_gtls_pending_t &p : pending) {
        ngx_http_gtls_keep_entry(mcf->upstream_state, p.entry);
        if (!p.dyn->swap(p.gen, p.entry->sequence)) {
            p.dyn->free(p.gen);  // a newer push won meanwhile
        }
        p.gen = nullptr;
        const size_t servers = p.update->servers.size();
        ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                      "gateway_tls: %s \"%s\" now has %uz servers (from the API, entry %uL)",
                      ngx_http_gtls_upstream_noun(p.kind), p.dyn->name.c_str(), servers, p.entry->sequence);
        (p.kind == NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS ? updated.stream_upstreams : updated.upstreams)
            .emplace_back(p.update->upstream, servers);
    }
    for (size_t i = 0; i < trusts.size(); i++) {
        ngx_http_gtls_pending_trust_t &t = trusts[i];
        const std::string &name = update.policies[i].policy;
        ngx_http_gtls_keep_entry(mcf->upstream_state, t.entry);
        if (t.configured) {
            const bool was_pushed = t.trusted->pushed;
            ngx_http_gtls_replace_trust(t.trusted, nullptr, t.entry->sequence);
            if (was_pushed) {
                ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                              "gateway_tls: policy %s trusts what it is configured with again (from the API, entry %uL)",
                              gtls::json_string(name).c_str(), t.entry->sequence);
            }
        } else {
            ngx_http_gtls_replace_trust(t.trusted, &t.trust, t.entry->sequence);
            ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                          "gateway_tls: policy %s now trusts %s and %uz pins (from the API, entry %uL)",
                          gtls::json_string(name).c_str(),
                          gtls::json_string(t.trust.source.empty() ? "no CA" : t.trust.source).c_str(), t.trust.pins.size(),
                          t.entry->sequence);
        }
        updated.policies.emplace_back(name, t.entry->sequence);
    }
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
        if (ngx_exiting || ngx_quit || ngx_terminate) {
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

void ngx_http_gtls_catch_up(ngx_http_gtls_main_conf_t *mcf)
{
    if (mcf->upstream_state == nullptr || mcf->trusted == nullptr
        || ngx_http_gtls_state_sequence(static_cast<ngx_http_gtls_state_t *>(mcf->upstream_state->data)) == mcf->state_sequence) {
        return;
    }
    ngx_http_gtls_notice_changes(static_cast<ngx_cycle_t *>(const_cast<ngx_cycle_t *>(ngx_cycle)));
}

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

// ngx_gtls_stream_export_t's catch_up
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
            stream->catch_up = ngx_http_gtls_catch_up_hook;
            stream->catch_up_data = mcf;
        }

        if (mcf->upstream_state == nullptr) {
            return NGX_OK;
        }
        // the servers (and trust) last pushed, where the configured ones are
        // still those they replaced
        auto *state = static_cast<ngx_http_gtls_state_t *>(mcf->upstream_state->data);
        ngx_slab_pool_t *state_pool = ngx_http_gtls_state_pool(mcf->upstream_state);
        struct Kept {
            std::string name, json;
            uint64_t sequence;
            ngx_uint_t kind;
        };
        std::vector<Kept> kept, Keptrust;
        {
            MutexLock locked(&state_pool->mutex);
            for (ngx_http_gtls_state_entry_t **link = &state->entries; *link;) {
                ngx_http_gtls_state_entry_t *e = *link;
                const std::string name(ngx_http_gtls_entry_name(e));
                uint64_t configured;
                if (e->kind == NGX_HTTP_GTLS_ENTRY_TRUST) {
                    ngx_http_gtls_trusted_t *t = ngx_http_gtls_find_trusted(mcf, name);
                    configured = t != nullptr ? t->configured_fingerprint : ~e->fingerprint;
                } else {
                    gtls_glue::DynamicUpstream *dyn = ngx_http_gtls_find_dynamic(mcf, e->kind, name);
                    configured = dyn != nullptr ? dyn->configured_fingerprint : ~e->fingerprint;
                }
                if (configured != e->fingerprint || (e->kind == NGX_HTTP_GTLS_ENTRY_TRUST && e->json_len == 0)) {
                    *link = e->next;  // the configuration now says otherwise, or says the same
                    ngx_slab_free_locked(state_pool, e);
                    continue;
                }
                (e->kind == NGX_HTTP_GTLS_ENTRY_TRUST ? Keptrust : kept).push_back({name, ngx_http_gtls_entry_json(e), e->sequence, e->kind});
                link = &e->next;
            }
            mcf->state_sequence = state->sequence;  // the workers apply what comes after
        }

        // before the workers start: they inherit it
        for (const Kept &k : Keptrust) {
            if (ngx_http_gtls_take_trust(cycle->log, ngx_http_gtls_find_trusted(mcf, k.name), k.name, k.json, k.sequence)) {
                ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                              "gateway_tls: policy %s keeps the trust last pushed through the API",
                              gtls::json_string(k.name).c_str());
            }
        }
        for (const Kept &k : kept) {
            gtls_glue::DynamicUpstream *dyn = ngx_http_gtls_find_dynamic(mcf, k.kind, k.name);
            const char *what = ngx_http_gtls_upstream_noun(k.kind);
            void *gen = dyn->build(gtls::parse_server_list(k.json));
            if (gen == nullptr) {
                ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                              "gateway_tls: %s \"%s\": zone \"%s\" has no room for the servers last pushed; "
                              "it serves its configured servers",
                              what, dyn->name.c_str(), dyn->zone.c_str());
                continue;
            }
            dyn->swap(gen, k.sequence);
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0, "gateway_tls: %s \"%s\" keeps the servers last pushed through the API",
                          what, dyn->name.c_str());
        }
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
    ngx_http_gtls_notice_connection.fd = (ngx_socket_t) -1;
    ngx_http_gtls_notice_event.handler = ngx_http_gtls_notice_handler;
    ngx_http_gtls_notice_event.log = cycle->log;
    ngx_http_gtls_notice_event.data = &ngx_http_gtls_notice_connection;
    ngx_http_gtls_notice_event.cancelable = 1;
    ngx_add_timer(&ngx_http_gtls_notice_event, 1000);
    return NGX_OK;
}
