// The state the upstream API changes, and how each worker follows it
// (ngx_http_gateway_tls_upstream_state.h).
//
// The trust of named policies (their CA and pins) is replaced as servers
// are: each worker puts the pushed trust in place of its own copies of the
// policies, and a new trust generation in every binding keeps TLS sessions
// and keepalive connections made under the old trust from carrying over.

#include "ngx_http_gateway_tls_upstream_state.h"

#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <vector>

#include "gtls_routes_json.h"

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

// ---- the state zone ----------------------------------------------------

struct ngx_http_gtls_state_t {
    ngx_http_gtls_state_entry_t  *entries;
    uint64_t                      sequence;  // of the last entry written
    ngx_uint_t                    replaced;  // a reload made a zone of another size
};

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
    if (!gtls::build_policy_trust(pushed, &trust, &error)) {
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

// A hostname's rules from a state entry (empty: removed) put in place;
// false when the table holds newer ones. Entries were checked when pushed:
// one that does not read back is logged and left out; one this
// configuration cannot serve as pushed (a reload took away what it
// needs) answers every request 500 until pushed again.
bool ngx_http_gtls_take_kept_routes(ngx_log_t *log, ngx_http_gtls_main_conf_t *mcf, ngx_http_gtls_route_table_t *t,
                                    const std::string &host, const std::string &json, uint64_t sequence)
{
    auto known = t->hosts.find(host);
    if (known != t->hosts.end() && known->second.sequence >= sequence) {
        return false;  // taken already (this worker's own push, or a newer one)
    }
    std::shared_ptr<const gtls::HostRoutes> routes;
    if (!json.empty()) {
        try {
            routes = gtls::parse_host_routes(json, host);
        } catch (const gtls::ApiError &e) {
            ngx_log_error(NGX_LOG_ALERT, log, 0, "gateway_tls: routes \"%s\" of %s: the state entry does not read: %s",
                          t->name.c_str(), gtls::json_string(host).c_str(), gtls::json_string(e.what()).c_str());
            return false;
        }
        const std::string unserved = ngx_http_gtls_unserved_route_field(*routes, mcf->route_support);
        if (!unserved.empty()) {
            ngx_log_error(NGX_LOG_ALERT, log, 0,
                          "gateway_tls: routes \"%s\" of %s: %s; its requests are answered 500 until it is pushed again",
                          t->name.c_str(), gtls::json_string(host).c_str(), unserved.c_str());
            gtls::RouteAction refused;
            refused.status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            routes = std::make_shared<const gtls::HostRoutes>(host, std::vector<gtls::RouteAction>{refused},
                                                              std::vector<gtls::RouteMatch>{gtls::RouteMatch{}});
        }
    }
    return ngx_http_gtls_take_routes(t, host, std::move(routes), sequence);
}

// An entry as read under the zone's lock, to be applied after it.
struct ngx_http_gtls_entry_copy_t {
    ngx_uint_t   kind;
    std::string  name, json;
    uint64_t     sequence;
};

// Servers pushed through another worker made current here.
void ngx_http_gtls_take_newer_servers(ngx_log_t *log, gtls_glue::DynamicUpstream *dyn,
                                      const ngx_http_gtls_entry_copy_t &e)
{
    void *gen = dyn->build(gtls::parse_server_list(e.json));
    if (gen == nullptr) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "gateway_tls: %s \"%s\": zone \"%s\" has no room for the servers pushed",
                      ngx_http_gtls_upstream_noun(e.kind), dyn->name.c_str(), dyn->zone.c_str());
        return;
    }
    if (!dyn->swap(gen, e.sequence)) {
        dyn->free(gen);  // another worker of this configuration did
        return;
    }
    ngx_log_error(NGX_LOG_NOTICE, log, 0, "gateway_tls: %s \"%s\" takes the servers pushed through another worker (entry %uL)",
                  ngx_http_gtls_upstream_noun(e.kind), dyn->name.c_str(), e.sequence);
}

// What was pushed since this worker last looked, through whichever worker
// (of this configuration or of one a reload replaced), made current here
// when this configuration does not run it yet.
void ngx_http_gtls_apply_newer_entries(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf)
{
    if (mcf->upstream_state == nullptr) {
        return;
    }
    auto *state = static_cast<ngx_http_gtls_state_t *>(mcf->upstream_state->data);
    ngx_slab_pool_t *state_pool = ngx_http_gtls_state_pool(mcf->upstream_state);
    std::vector<ngx_http_gtls_entry_copy_t> newer;
    {
        MutexLock locked(&state_pool->mutex);
        if (state->sequence == mcf->state_sequence) {
            return;
        }
        for (ngx_http_gtls_state_entry_t *e = state->entries; e; e = e->next) {
            if (e->sequence > mcf->state_sequence) {
                newer.push_back({e->kind, std::string(ngx_http_gtls_entry_name(e)), ngx_http_gtls_entry_json(e), e->sequence});
            }
        }
        mcf->state_sequence = state->sequence;
    }

    for (const ngx_http_gtls_entry_copy_t &e : newer) {
        if (e.kind == NGX_HTTP_GTLS_ENTRY_ROUTES) {
            std::string host;
            if (ngx_http_gtls_route_table_t *t = ngx_http_gtls_routes_of_entry(mcf, e.name, &host)) {
                ngx_http_gtls_take_kept_routes(cycle->log, mcf, t, host, e.json, e.sequence);
            }
        } else if (e.kind == NGX_HTTP_GTLS_ENTRY_CERTIFICATE) {
            ngx_gtls_certificate_t *c = ngx_http_gtls_find_certificate(mcf, e.name);
            if (c != nullptr && e.sequence > c->sequence && ngx_gtls_take_certificate(cycle->log, c, e.json, e.sequence)) {
                ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                               "gateway_tls: certificate \"%s\" taken as pushed through another worker (entry %uL)",
                               e.name.c_str(), e.sequence);
            }
        } else if (e.kind == NGX_HTTP_GTLS_ENTRY_TRUST) {
            ngx_http_gtls_trusted_t *t = ngx_http_gtls_find_trusted(mcf, e.name);
            if (t != nullptr && e.sequence > t->sequence
                && ngx_http_gtls_take_trust(cycle->log, t, e.name, e.json, e.sequence)) {
                ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                               "gateway_tls: policy \"%s\" takes the trust pushed through another worker (entry %uL)",
                               e.name.c_str(), e.sequence);
            }
        } else {
            gtls_glue::DynamicUpstream *dyn = ngx_http_gtls_find_dynamic(mcf, e.kind, e.name);
            if (dyn != nullptr && e.sequence > dyn->sequence()) {
                ngx_http_gtls_take_newer_servers(cycle->log, dyn, e);
            }
        }
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

}  // namespace

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

void ngx_http_gtls_drop_entry(ngx_shm_zone_t *zone, ngx_http_gtls_state_entry_t *entry)
{
    ngx_slab_free(ngx_http_gtls_state_pool(zone), entry);
}

namespace {

// Whether a kept entry still applies after a reload: its upstream or
// policy is configured as it was when the entry replaced that (trust that
// is the configured one again is kept nowhere); its table still exists (a
// table starts empty: a removal applies to nothing)
bool ngx_http_gtls_entry_applies(ngx_http_gtls_main_conf_t *mcf, const ngx_http_gtls_state_entry_t *e,
                                 const std::string &name)
{
    if (e->kind == NGX_HTTP_GTLS_ENTRY_ROUTES) {
        std::string host;
        return e->json_len != 0 && ngx_http_gtls_routes_of_entry(mcf, name, &host) != nullptr;
    }
    if (e->kind == NGX_HTTP_GTLS_ENTRY_TRUST) {
        ngx_http_gtls_trusted_t *t = ngx_http_gtls_find_trusted(mcf, name);
        return t != nullptr && t->configured_fingerprint == e->fingerprint && e->json_len != 0;
    }
    if (e->kind == NGX_HTTP_GTLS_ENTRY_CERTIFICATE) {
        ngx_gtls_certificate_t *c = ngx_http_gtls_find_certificate(mcf, name);
        return c != nullptr && c->configured_fingerprint == e->fingerprint && e->json_len != 0;
    }
    gtls_glue::DynamicUpstream *dyn = ngx_http_gtls_find_dynamic(mcf, e->kind, name);
    return dyn != nullptr && dyn->configured_fingerprint == e->fingerprint;
}

}  // namespace

void ngx_http_gtls_carry_resized_zone(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf)
{
    ngx_shm_zone_t *zone = mcf->upstream_state;
    if (zone == nullptr || cycle->old_cycle == nullptr) {
        return;
    }
    ngx_list_part_t *part = &cycle->old_cycle->shared_memory.part;
    auto *old = static_cast<ngx_shm_zone_t *>(part->elts);
    for (ngx_uint_t i = 0; /* void */; i++) {
        if (i >= part->nelts) {
            if (part->next == nullptr) {
                return;
            }
            part = part->next;
            old = static_cast<ngx_shm_zone_t *>(part->elts);
            i = 0;
        }
        if (old[i].tag != zone->tag || old[i].shm.name.len != zone->shm.name.len
            || ngx_strncmp(old[i].shm.name.data, zone->shm.name.data, zone->shm.name.len) != 0) {
            continue;
        }
        if (old[i].shm.addr == zone->shm.addr || old[i].data == nullptr) {
            return;  // the same zone, kept
        }
        ngx_slab_pool_t *old_pool = ngx_http_gtls_state_pool(&old[i]);
        auto *old_state = static_cast<ngx_http_gtls_state_t *>(old[i].data);
        MutexLock locked(&old_pool->mutex);
        old_state->replaced = 1;
        // oldest first, so that they keep their order
        std::vector<const ngx_http_gtls_state_entry_t *> entries;
        for (const ngx_http_gtls_state_entry_t *e = old_state->entries; e; e = e->next) entries.push_back(e);
        for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
            const ngx_http_gtls_state_entry_t *e = *it;
            ngx_http_gtls_state_entry_t *copy =
                ngx_http_gtls_new_entry(zone, static_cast<ngx_http_gtls_entry_kind_e>(e->kind), ngx_http_gtls_entry_name(e),
                                        e->fingerprint, ngx_http_gtls_entry_json(e));
            if (copy == nullptr) {
                ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                              "gateway_tls: the resized gateway_tls_upstream_state_zone has no room for what was "
                              "pushed before; the configured servers, trust and routes apply until pushed again");
                return;
            }
            ngx_http_gtls_keep_entry(zone, copy);
        }
        return;
    }
}

bool ngx_http_gtls_state_replaced(ngx_http_gtls_main_conf_t *mcf)
{
    if (mcf->upstream_state == nullptr || mcf->upstream_state->data == nullptr) {
        return false;
    }
    auto *state = static_cast<ngx_http_gtls_state_t *>(mcf->upstream_state->data);
    return __atomic_load_n(&state->replaced, __ATOMIC_ACQUIRE) != 0;
}

void ngx_http_gtls_take_kept_entries(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf)
{
    if (mcf->upstream_state == nullptr) {
        return;
    }
    // the servers (and trust) last pushed, where the configured ones are
    // still those they replaced, and the tables' hostnames
    auto *state = static_cast<ngx_http_gtls_state_t *>(mcf->upstream_state->data);
    ngx_slab_pool_t *state_pool = ngx_http_gtls_state_pool(mcf->upstream_state);
    struct Kept {
        std::string name, json;
        uint64_t sequence;
        ngx_uint_t kind;
    };
    std::vector<Kept> kept, kept_trust, kept_routes, kept_certificates;
    {
        MutexLock locked(&state_pool->mutex);
        for (ngx_http_gtls_state_entry_t **link = &state->entries; *link;) {
            ngx_http_gtls_state_entry_t *e = *link;
            const std::string name(ngx_http_gtls_entry_name(e));
            if (!ngx_http_gtls_entry_applies(mcf, e, name)) {
                *link = e->next;  // the configuration now says otherwise, or says the same
                ngx_slab_free_locked(state_pool, e);
                continue;
            }
            std::vector<Kept> &to = e->kind == NGX_HTTP_GTLS_ENTRY_ROUTES        ? kept_routes
                                    : e->kind == NGX_HTTP_GTLS_ENTRY_TRUST       ? kept_trust
                                    : e->kind == NGX_HTTP_GTLS_ENTRY_CERTIFICATE ? kept_certificates
                                                                                 : kept;
            to.push_back({name, ngx_http_gtls_entry_json(e), e->sequence, e->kind});
            link = &e->next;
        }
        mcf->state_sequence = state->sequence;  // the workers apply what comes after
    }

    // before the workers start: they inherit it
    for (const Kept &k : kept_routes) {
        std::string host;
        ngx_http_gtls_route_table_t *t = ngx_http_gtls_routes_of_entry(mcf, k.name, &host);
        if (ngx_http_gtls_take_kept_routes(cycle->log, mcf, t, host, k.json, k.sequence)) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0, "gateway_tls: routes \"%s\" of %s kept as last pushed through the API",
                          t->name.c_str(), gtls::json_string(host).c_str());
        }
    }
    for (const Kept &k : kept_trust) {
        if (ngx_http_gtls_take_trust(cycle->log, ngx_http_gtls_find_trusted(mcf, k.name), k.name, k.json, k.sequence)) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "gateway_tls: policy %s keeps the trust last pushed through the API",
                          gtls::json_string(k.name).c_str());
        }
    }
    for (const Kept &k : kept_certificates) {
        if (ngx_gtls_take_certificate(cycle->log, ngx_http_gtls_find_certificate(mcf, k.name), k.json, k.sequence)) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "gateway_tls: certificate \"%s\" keeps the one last pushed through the API", k.name.c_str());
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
}

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
            t.configured.push_back(gtls::configured_trust(*rec.policy));
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

// The configured trust of a group, as pushed trust would fingerprint it
// (names and client certificate not pushed: each policy's configured
// ones): pushing what is configured takes the group back to its
// configuration.
uint64_t ngx_http_gtls_pushed_fingerprint(const ngx_http_gtls_trusted_t *t, const gtls::PolicyTrust &pushed)
{
    uint64_t all = 0;
    for (const gtls::Trust &configured : t->configured) {
        std::vector<std::string> sans;
        if (pushed.subject_alt_names) {
            sans = *pushed.subject_alt_names;
        } else {
            for (const gtls::SanMatcher &san : *configured.sans) sans.push_back(san.spec);
        }
        const std::string &hostname = pushed.hostname ? *pushed.hostname : *configured.hostname;
        const std::shared_ptr<const gtls::KeyPair> &own = *configured.client_certificate;
        const std::string client = pushed.client_certificate ? gtls::leaf_sha256(pushed.client_certificate->certificate)
                                   : own ? own->sha256 : std::string();
        all = all * 0x100000001b3ull ^ gtls::trust_fingerprint(pushed.ca, pushed.pins, hostname, sans, client);
    }
    return all;
}

// Puts `trust` in place in this process's copies of the policies (or,
// `trust` null, each one's configured trust again), and frees the TLS
// sessions made under what they trusted before (the new trust generation
// would never offer them again).
void ngx_http_gtls_replace_trust(ngx_http_gtls_trusted_t *t, const gtls::Trust *trust, uint64_t sequence)
{
    for (size_t i = 0; i < t->policies.size(); i++) {
        gtls::replace_trust(t->policies[i], trust != nullptr ? *trust : t->configured[i], t->configured[i], sequence);
    }
    t->sequence = sequence;
    t->pushed = trust != nullptr;
    for (ngx_gtls_session_cache_t *sessions : t->sessions) {
        ngx_http_gtls_forget_sessions(*sessions, t->policies);
    }
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

ngx_http_gtls_route_table_t *ngx_http_gtls_routes_of_entry(ngx_http_gtls_main_conf_t *mcf, std::string_view name,
                                                           std::string *host)
{
    std::string_view table, entry_host;
    if (mcf->route_tables == nullptr || !ngx_http_gtls_split_routes_entry_name(name, &table, &entry_host)) {
        return nullptr;
    }
    auto it = mcf->route_tables->find(table);
    if (it == mcf->route_tables->end()) {
        return nullptr;
    }
    *host = std::string(entry_host);
    return &it->second;
}

gtls_glue::DynamicUpstream *ngx_http_gtls_find_dynamic(ngx_http_gtls_main_conf_t *mcf, ngx_uint_t kind,
                                                        std::string_view name)
{
    ngx_gtls_upstream_set_t *set = ngx_http_gtls_set_of(mcf, kind);
    return set != nullptr ? set->find(name) : nullptr;
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

void ngx_http_gtls_start_noticing(ngx_cycle_t *cycle)
{
    ngx_http_gtls_notice_connection.fd = (ngx_socket_t) -1;
    ngx_http_gtls_notice_event.handler = ngx_http_gtls_notice_handler;
    ngx_http_gtls_notice_event.log = cycle->log;
    ngx_http_gtls_notice_event.data = &ngx_http_gtls_notice_connection;
    ngx_http_gtls_notice_event.cancelable = 1;
    ngx_add_timer(&ngx_http_gtls_notice_event, 1000);
}

void ngx_http_gtls_catch_up(ngx_http_gtls_main_conf_t *mcf)
{
    if (mcf->upstream_state == nullptr || mcf->trusted == nullptr
        || ngx_http_gtls_state_sequence(static_cast<ngx_http_gtls_state_t *>(mcf->upstream_state->data)) == mcf->state_sequence) {
        return;
    }
    ngx_http_gtls_notice_changes(static_cast<ngx_cycle_t *>(const_cast<ngx_cycle_t *>(ngx_cycle)));
}

