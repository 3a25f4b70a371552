// Zone upstreams whose servers gateway_tls_upstream_api replaces at run
// time, the same for http's upstream{} and stream's: nginx's round robin
// of both takes an ngx_*_upstream_rr_peers_t of the same shape.
//
// Each push builds a new, complete list (a "generation") in the upstream's
// zone and makes it current; every request (or stream session) binds to
// the generation current when its balancer starts and keeps it,
// reference-counted, until its pool goes. So a balancer never sees a list
// change under it (nginx's round robin sizes its per-request `tried`
// bitmap from the list it starts with, and nginx before 1.27.3 counts no
// references to peers), in-flight requests finish on the servers they
// picked, and a replaced generation is freed by the last request that held
// it. Only round robin's family (round robin, least_conn: the balancers
// that take `backup`) work on the list handed to them at each request;
// hash, ip_hash and random precompute from the configured one, and are
// refused.
//
// The API lives in the http module; the stream module hands it its
// upstreams through ngx_gtls_stream_export_t, as this interface.
#pragma once

#include <sys/socket.h>

#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "gtls_upstream_api.h"
#include "ngx_gtls_connection.h"
#include "ngx_gtls_nginx.h"

// The C++ classes of the glue: C++ names, in a namespace of their own.
namespace gtls_glue {

// An upstream's lock (an ngx_rwlock) held shared for a scope: C++ work
// under it may throw.
class ReadLock {
public:
    explicit ReadLock(ngx_atomic_t *lock) : lock_(lock) { ngx_rwlock_rlock(lock_); }
    ~ReadLock() { ngx_rwlock_unlock(lock_); }
    ReadLock(const ReadLock &) = delete;
    ReadLock &operator=(const ReadLock &) = delete;

private:
    ngx_atomic_t *lock_;
};

// One upstream{} whose servers the API may replace, in process memory.
class DynamicUpstream {
public:
    virtual ~DynamicUpstream() = default;

    // A generation of `servers` in the upstream's zone, not current yet;
    // null when the zone has no room.
    virtual void *build(const std::vector<gtls::UpstreamServer> &servers) = 0;
    // Makes `generation` current, unless it comes from a state entry
    // (`sequence`) no newer than the current list's: then false, and the
    // caller frees it.
    virtual bool swap(void *generation, uint64_t sequence) = 0;
    virtual void free(void *generation) = 0;
    // The current servers (null: not wanted), the generation's number,
    // whether the API pushed them, and their struct sockaddr bytes.
    virtual void current(std::vector<gtls::UpstreamServer> *servers, ngx_uint_t *generation, bool *pushed,
                         std::set<std::string> *addresses) = 0;
    // Counts swaps; read without the upstream's lock.
    virtual ngx_uint_t generation() const = 0;
    // The state entry the current list came from; 0: the configured one.
    virtual uint64_t sequence() const = 0;

    std::string                name;  // of the upstream{}
    std::string                zone;
    uint64_t                   configured_fingerprint = 0;  // of the servers written (gtls::server_list_fingerprint)
    ngx_gtls_session_cache_t  *sessions = nullptr;          // the TLS sessions its module caches

    // this worker's view, for closing what removed servers leave behind
    ngx_uint_t                 seen_generation = 0;
    std::set<std::string>      seen_addresses;
};

}  // namespace gtls_glue

// One module's upstream{} blocks, as the API sees them.
struct ngx_gtls_upstream_set_t {
    std::vector<gtls_glue::DynamicUpstream *>                       dynamic;
    std::unordered_map<std::string, gtls_glue::DynamicUpstream *>  by_name;
    std::unordered_map<std::string, std::string>                     refused;  // name: why the API cannot replace its servers

    gtls_glue::DynamicUpstream *find(std::string_view name) const
    {
        auto it = by_name.find(std::string(name));
        return it != by_name.end() ? it->second : nullptr;
    }
    void add(gtls_glue::DynamicUpstream *u)
    {
        dynamic.push_back(u);
        by_name[u->name] = u;
    }
};

namespace gtls_glue {

// The implementation over one module's types: SrvConf is its
// ngx_*_upstream_srv_conf_t, Peers its ngx_*_upstream_rr_peers_t,
// kBackup its NGX_*_UPSTREAM_BACKUP flag (set by round robin's family).
template <typename SrvConf, typename Peers, ngx_uint_t kBackup>
class DynamicUpstreamOf final : public DynamicUpstream {
    using Peer = std::remove_pointer_t<decltype(Peers::peer)>;

    // In the upstream's zone. `refs` counts requests bound to the
    // generation; binding takes the upstream's lock shared, everything
    // else exclusive.
    struct generation_t {
        Peers          *peers;
        ngx_atomic_t    refs;
        ngx_uint_t      generation;
        unsigned        retired:1;
        unsigned        configured:1;  // the zone module's copy: never ours to free
        generation_t   *next;          // every generation still alive
    };

    struct shared_t {
        ngx_atomic_t    lock;  // ngx_rwlock
        generation_t   *current;
        generation_t   *alive;
        ngx_atomic_t    generation;
        uint64_t        sequence;
    };

    struct hold_t {
        DynamicUpstreamOf  *dyn;
        generation_t                  *gen;
    };

public:
    // Why the API cannot replace this upstream's servers; empty when it can.
    static std::string not_dynamic(SrvConf *uscf)
    {
        if (uscf->srv_conf == nullptr) {
            return "is implicit (proxy_pass to a host name), not an upstream{} block";
        }
        if (uscf->shm_zone == nullptr) {
            return "has no zone (servers change at run time only in shared memory)";
        }
        if (!(uscf->flags & kBackup)) {
            return "balances by hash, ip_hash or random, which work out their choices from the configured servers";
        }
        auto *peers = static_cast<Peers *>(uscf->peer.data);
        if (peers == nullptr || peers->shpool == nullptr) {
            return "has no servers in its zone";
        }
#if (nginx_version >= 1027003)
        if (peers->resolve != nullptr) {
            return "has servers with \"resolve\", which nginx changes itself";
        }
#endif
        return {};
    }

    // At init_module, for an upstream not_dynamic() accepts: its shared
    // state in its zone. Null (logged) when the zone has no room.
    static DynamicUpstreamOf *create(ngx_cycle_t *cycle, SrvConf *uscf, ngx_gtls_session_cache_t *sessions)
    {
        auto *dyn = ngx_gtls_pool_new<DynamicUpstreamOf>(cycle->pool);
        if (dyn == nullptr) {
            return nullptr;
        }
        dyn->uscf_ = uscf;
        dyn->configured_ = static_cast<Peers *>(uscf->peer.data);
        dyn->name = std::string(ngx_gtls_sv(uscf->host));
        dyn->zone = std::string(ngx_gtls_sv(uscf->shm_zone->shm.name));
        dyn->sessions = sessions;
        dyn->configured_fingerprint = gtls::server_list_fingerprint(servers_of(dyn->configured_));

        ngx_slab_pool_t *shpool = dyn->configured_->shpool;
        ngx_shmtx_lock(&shpool->mutex);
        dyn->sh_ = static_cast<shared_t *>(ngx_slab_calloc_locked(shpool, sizeof(shared_t)));
        auto *gen = static_cast<generation_t *>(ngx_slab_calloc_locked(shpool, sizeof(generation_t)));
        ngx_shmtx_unlock(&shpool->mutex);
        if (dyn->sh_ == nullptr || gen == nullptr) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "gateway_tls: upstream \"%V\": no room in zone \"%V\"",
                          &uscf->host, &uscf->shm_zone->shm.name);
            return nullptr;
        }
        gen->peers = dyn->configured_;
        gen->configured = 1;
        dyn->sh_->current = gen;
        dyn->sh_->alive = gen;
        return dyn;
    }

    // Binds a request to the current servers (uscf->peer.data, for the
    // balancer's init_peer) until `pool` goes; restore() after that
    // init_peer puts the configured servers back.
    ngx_int_t bind(ngx_pool_t *pool, ngx_log_t *log)
    {
        ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(pool, sizeof(hold_t));
        if (cln == nullptr) {
            return NGX_ERROR;
        }
        auto *hold = static_cast<hold_t *>(cln->data);
        ngx_rwlock_rlock(&sh_->lock);
        generation_t *gen = sh_->current;
        ngx_atomic_fetch_add(&gen->refs, 1);
        ngx_rwlock_unlock(&sh_->lock);
        hold->dyn = this;
        hold->gen = gen;
        cln->handler = release;
        uscf_->peer.data = gen->peers;
        ngx_log_debug2(NGX_LOG_DEBUG_CORE, log, 0, "gateway_tls: upstream \"%V\" servers of generation %ui",
                       &uscf_->host, gen->generation);
        return NGX_OK;
    }

    void restore() { uscf_->peer.data = configured_; }

    void *build(const std::vector<gtls::UpstreamServer> &servers) override
    {
        const size_t head = align(sizeof(generation_t)) + align(sizeof(Peers));
        auto sockaddr_size = [](const gtls::UpstreamServer &s) {
            return align(s.family == 6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
        };
        size_t size = head;
        for (const gtls::UpstreamServer &s : servers) {
            size += align(sizeof(Peer)) + sockaddr_size(s) + align(s.address.size());
        }
        ngx_slab_pool_t *shpool = configured_->shpool;

        ngx_shmtx_lock(&shpool->mutex);
        const ngx_uint_t log_nomem = shpool->log_nomem;
        shpool->log_nomem = 0;  // the API says it, naming the upstream
        auto *block = static_cast<u_char *>(ngx_slab_calloc_locked(shpool, size));
        shpool->log_nomem = log_nomem;
        ngx_shmtx_unlock(&shpool->mutex);
        if (block == nullptr) {
            return nullptr;
        }

        auto *gen = reinterpret_cast<generation_t *>(block);
        auto *peers = reinterpret_cast<Peers *>(block + align(sizeof(*gen)));
        // the configured list's name, zone and backup servers; a list and lock of its own
        *peers = *configured_;
        peers->rwlock = 0;
        peers->zone_next = nullptr;
#if (nginx_version >= 1027003)
        peers->config = nullptr;
        peers->resolve = nullptr;
#endif
        peers->peer = nullptr;

        ngx_uint_t total_weight = 0, tries = 0;
        Peer **link = &peers->peer;
        u_char *p = block + head;
        for (const gtls::UpstreamServer &s : servers) {
            auto *peer = reinterpret_cast<Peer *>(p);
            p += align(sizeof(*peer));
            ngx_sockaddr_t sa;
            peer->socklen = sockaddr_of(s, &sa);
            ngx_memcpy(p, &sa, peer->socklen);
            peer->sockaddr = reinterpret_cast<struct sockaddr *>(p);
            p += sockaddr_size(s);
            peer->name.len = s.address.size();
            peer->name.data = p;
            ngx_memcpy(p, s.address.data(), s.address.size());
            p += align(s.address.size());
            peer->server = peer->name;
            peer->weight = s.weight;
            peer->effective_weight = s.weight;
            peer->current_weight = 0;
            peer->max_conns = s.max_conns;
            peer->max_fails = s.max_fails;
            peer->fail_timeout = s.fail_timeout;
            peer->down = s.down;

            total_weight += s.weight;
            tries += s.down ? 0 : 1;
            *link = peer;
            link = &peer->next;
        }
        peers->number = servers.size();
        peers->total_weight = total_weight;
        peers->tries = tries;
        peers->single = servers.size() == 1;
        peers->weighted = total_weight != servers.size();

        gen->peers = peers;
        return gen;
    }

    bool swap(void *generation, uint64_t sequence) override
    {
        auto *gen = static_cast<generation_t *>(generation);
        ngx_rwlock_wlock(&sh_->lock);
        if (sequence != 0 && sequence <= sh_->sequence) {
            ngx_rwlock_unlock(&sh_->lock);
            return false;
        }
        generation_t *old = sh_->current;
        gen->generation = sh_->generation + 1;
        gen->next = sh_->alive;
        sh_->alive = gen;
        sh_->current = gen;
        sh_->sequence = sequence;
        old->retired = 1;
        collect(old);
        ngx_atomic_fetch_add(&sh_->generation, 1);
        ngx_rwlock_unlock(&sh_->lock);
        return true;
    }

    void free(void *generation) override
    {
        ngx_slab_pool_t *shpool = configured_->shpool;
        ngx_shmtx_lock(&shpool->mutex);
        free_locked(shpool, static_cast<generation_t *>(generation));
        ngx_shmtx_unlock(&shpool->mutex);
    }

    void current(std::vector<gtls::UpstreamServer> *servers, ngx_uint_t *generation, bool *pushed,
                 std::set<std::string> *addresses) override
    {
        ReadLock locked(&sh_->lock);
        *generation = sh_->generation;
        *pushed = sh_->sequence != 0;
        if (servers != nullptr) {
            *servers = servers_of(sh_->current->peers);
        }
        if (addresses != nullptr) {
            for (Peer *peer = sh_->current->peers->peer; peer; peer = peer->next) {
                addresses->emplace(reinterpret_cast<const char *>(peer->sockaddr), peer->socklen);
            }
        }
    }

    ngx_uint_t generation() const override { return sh_->generation; }
    uint64_t sequence() const override { return sh_->sequence; }

private:
    static size_t align(size_t n) { return (n + sizeof(void *) - 1) & ~(sizeof(void *) - 1); }

    static socklen_t sockaddr_of(const gtls::UpstreamServer &s, ngx_sockaddr_t *sa)
    {
        ngx_memzero(sa, sizeof(*sa));
        if (s.family == 6) {
            sa->sockaddr_in6.sin6_family = AF_INET6;
            sa->sockaddr_in6.sin6_port = htons(s.port);
            std::memcpy(&sa->sockaddr_in6.sin6_addr, s.ip.data(), 16);
            return sizeof(struct sockaddr_in6);
        }
        sa->sockaddr_in.sin_family = AF_INET;
        sa->sockaddr_in.sin_port = htons(s.port);
        std::memcpy(&sa->sockaddr_in.sin_addr, s.ip.data(), 4);
        return sizeof(struct sockaddr_in);
    }

    static std::vector<gtls::UpstreamServer> servers_of(const Peers *peers)
    {
        std::vector<gtls::UpstreamServer> servers;
        for (const Peer *peer = peers->peer; peer; peer = peer->next) {
            gtls::UpstreamServer s;
            s.address = std::string(ngx_gtls_sv(peer->name));
            s.weight = peer->weight;
            s.max_conns = peer->max_conns;
            s.max_fails = peer->max_fails;
            s.fail_timeout = peer->fail_timeout;
            s.down = peer->down;
            servers.push_back(std::move(s));
        }
        return servers;
    }

    // A generation the API built, and the TLS sessions nginx's round robin
    // saved in its peers. The zone's mutex is held.
    static void free_locked(ngx_slab_pool_t *shpool, generation_t *gen)
    {
        for (Peer *peer = gen->peers->peer; peer; peer = peer->next) {
            if (peer->ssl_session != nullptr) {
                ngx_slab_free_locked(shpool, peer->ssl_session);
            }
        }
        ngx_slab_free_locked(shpool, gen);
    }

    // Unlinks and frees `gen` when nothing holds it any more; the
    // upstream's lock is held exclusively.
    void collect(generation_t *gen)
    {
        if (!gen->retired || gen->configured || gen->refs != 0) {
            return;
        }
        for (generation_t **link = &sh_->alive; *link; link = &(*link)->next) {
            if (*link == gen) {
                *link = gen->next;
                break;
            }
        }
        free(gen);
    }

    static void release(void *data)
    {
        auto *hold = static_cast<hold_t *>(data);
        if (hold->gen == nullptr) {
            return;
        }
        shared_t *sh = hold->dyn->sh_;
        ngx_rwlock_wlock(&sh->lock);
        ngx_atomic_fetch_add(&hold->gen->refs, -1);
        hold->dyn->collect(hold->gen);
        ngx_rwlock_unlock(&sh->lock);
        hold->gen = nullptr;
    }

    SrvConf   *uscf_ = nullptr;
    Peers     *configured_ = nullptr;  // the zone's copy of the servers written
    shared_t  *sh_ = nullptr;
};

// The protocol's own init_peer (`original`), run on the servers current
// now: where the upstream's servers are replaceable (`dynamic`), the
// request or session is bound to the current generation until `pool`
// goes, and uscf->peer.data points there only while `original` runs.
template <typename Dynamic, typename Original>
ngx_int_t init_on_current_servers(Dynamic *dynamic, ngx_pool_t *pool, ngx_log_t *log, Original original)
{
    if (dynamic != nullptr && dynamic->bind(pool, log) != NGX_OK) {
        return NGX_ERROR;
    }
    ngx_int_t rc = original();
    if (dynamic != nullptr) {
        dynamic->restore();
    }
    return rc == NGX_OK ? NGX_OK : NGX_ERROR;
}

}  // namespace gtls_glue
