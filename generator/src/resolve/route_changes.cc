#include "resolve/route_changes.h"

#include <algorithm>

#include "plan/upstreams.h"
#include "resolve/policy_trust.h"
#include "resolve/resolver.h"

namespace g2n {

namespace {

// The Services a route's backendRefs and mirrors name, "ns/name"
std::set<std::string> backend_services(const Route &r)
{
    std::set<std::string> keys;
    auto add = [&](const BackendRef &b) {
        if (b.refers_to() == RefKind::Service) keys.insert((b.namespace_.empty() ? r.meta.namespace_ : b.namespace_) + "/" + b.name);
    };
    auto mirrors = [&](const std::vector<RouteFilter> &filters) {
        for (const RouteFilter &f : filters) {
            if (f.type == FilterType::RequestMirror) add(f.mirror);
        }
    };
    for (const RouteRule &rule : r.rules) {
        mirrors(rule.filters);
        for (const BackendRef &b : rule.backend_refs) {
            add(b);
            mirrors(b.filters);
        }
    }
    return keys;
}

// `value` filed under `at` in `index`, or (not `add`) taken out; true when
// nothing is left under `at`
bool file_under(std::unordered_map<std::string, std::set<std::string>> *index, const std::string &at,
                const std::string &value, bool add)
{
    if (add) {
        (*index)[at].insert(value);
        return false;
    }
    auto it = index->find(at);
    if (it == index->end()) return true;
    it->second.erase(value);
    if (!it->second.empty()) return false;
    index->erase(it);
    return true;
}

// `key` is now `object`, or gone (null), until the next update()
template <typename T>
void pend(std::map<std::string, std::optional<T>> *pending, const std::string &key, const T *object)
{
    if (object == nullptr) {
        pending->insert_or_assign(key, std::nullopt);
    } else {
        pending->insert_or_assign(key, *object);
    }
}

}  // namespace

std::string RouteChanges::route_key(const Route &r) { return std::string(route_kind_name(r.kind)) + " " + r.meta.key(); }

RouteChanges::RouteChanges(const Manifests &m, const Plan &plan, const Options &options, const ResolveReads &reads)
    : options_(options), reads_(reads.readers), reached_(reads.reached), server_timestamps_(m.server_timestamps)
{
    if (options.routes != "table" || options.upstream_api == "off") {
        usable_ = false;
        return;
    }
    base_.namespaces = m.namespaces;
    base_.gateway_classes = m.gateway_classes;
    base_.gateways = m.gateways;
    base_.listener_sets = m.listener_sets;
    base_.reference_grants = m.reference_grants;
    std::set<std::string> grants;
    for (const ReferenceGrant &g : m.reference_grants) {
        if (!grants.insert(g.meta.key()).second) usable_ = false;
    }
    for (const Route &r : m.http_routes) {
        const std::string key = route_key(r);
        if (!routes_.view(key, r)) usable_ = false;
        index_route(key, r, true);
    }
    for (size_t i = 0; i < plan.upstreams.size(); i++) upstream_at_.emplace(plan.upstreams[i].name, i);
    for (const Service &s : m.services) {
        if (!services_.view(s.meta.key(), s)) usable_ = false;
    }
    for (const EndpointSlice &es : m.endpoint_slices) {
        if (!slices_.view(es.meta.key(), es)) usable_ = false;
        slices_of_[es.meta.namespace_ + "/" + es.service_name].insert(es.meta.key());
    }
    for (const BackendTLSPolicy &p : m.backend_tls_policies) {
        if (!policies_.view(p.meta.key(), p)) usable_ = false;
        index_policy(p.meta.key(), p, true);
    }
    for (const auto &[key, readers] : reads_) {
        // (a Service or the grants they read are no object sub_manifests() adds)
        if (is_trust_read_key(key) && (readers & static_cast<unsigned>(Reader::Gateway))) gateway_reads_.push_back(key);
    }
    auto read = [&](const std::string &key) { return reads_.count(key) > 0; };
    if (!trust_objects_.view(m, read, read)) usable_ = false;
}

bool RouteChanges::follow(const MovedObjects &moved)
{
    return routes_.follow(moved) && services_.follow(moved) && slices_.follow(moved) && policies_.follow(moved)
           && trust_objects_.follow(moved);
}

void RouteChanges::copy_objects()
{
    routes_.copy_viewed();
    services_.copy_viewed();
    slices_.copy_viewed();
    policies_.copy_viewed();
    trust_objects_.copy_viewed();
}

void RouteChanges::index_route(const std::string &key, const Route &r, bool add)
{
    for (const std::string &service : backend_services(r)) file_under(&routes_naming_, service, key, add);
    if (r.hostnames.empty()) {
        if (add) {
            no_hostname_.insert(key);
        } else {
            no_hostname_.erase(key);
        }
    }
    for (const std::string &h : r.hostnames) {
        if (add && is_wildcard(h)) wildcards_.insert(h);
        if (file_under(&routes_of_, h, key, add)) wildcards_.erase(h);
    }
}

void RouteChanges::index_policy(const std::string &key, const BackendTLSPolicy &p, bool add)
{
    for (const std::string &service : policy_target_services(p)) file_under(&policies_of_, service, key, add);
}

void RouteChanges::slice_changed(const std::string &key, const EndpointSlice *slice)
{
    if (const EndpointSlice *old = slices_.find(key)) {
        slices_of_[old->meta.namespace_ + "/" + old->service_name].erase(key);
        slices_.erase(key);
    }
    if (slice == nullptr) return;
    slices_.copy(key, *slice);
    slices_of_[slice->meta.namespace_ + "/" + slice->service_name].insert(key);
}

void RouteChanges::trust_object_changed(const std::string &kind, const std::string &key, const Manifests *now)
{
    const std::string read = read_key_of(kind, key);
    trust_objects_.changed(read, now, reads_.count(read) > 0);
}

void RouteChanges::route_changed(const std::string &key, const Route *route)
{
    pend(&pending_, key, route);
}

void RouteChanges::service_changed(const std::string &key, const Service *service)
{
    pend(&pending_services_, key, service);
}

void RouteChanges::reference_grant_changed(const std::string &key, const ReferenceGrant *grant)
{
    pend(&pending_grants_, key, grant);
}

void RouteChanges::policy_changed(const std::string &key, const BackendTLSPolicy *policy)
{
    pend(&pending_policies_, key, policy);
}

std::vector<const EndpointSlice *> RouteChanges::slices_of(const std::string &service) const
{
    std::vector<const EndpointSlice *> slices;
    if (auto it = slices_of_.find(service); it != slices_of_.end()) {
        for (const std::string &key : it->second) slices.push_back(slices_.find(key));
    }
    return slices;
}

const Service *RouteChanges::service_now(const std::string &key) const
{
    auto it = pending_services_.find(key);
    if (it != pending_services_.end()) return it->second ? &*it->second : nullptr;
    return services_.find(key);
}

const BackendTLSPolicy *RouteChanges::policy_now(const std::string &key) const
{
    auto it = pending_policies_.find(key);
    if (it != pending_policies_.end()) return it->second ? &*it->second : nullptr;
    return policies_.find(key);
}

const Route *RouteChanges::route_now(const std::string &key) const
{
    auto it = pending_.find(key);
    if (it != pending_.end()) return it->second ? &*it->second : nullptr;
    return routes_.find(key);
}

// The objects the routes of `keys` are resolved with, beside the Services
// `targets` (a policy changed targets them): as they were (kept) or,
// `now`, with the routes, Services, grants and policies changed since.
Manifests RouteChanges::sub_manifests(const std::set<std::string> &keys, const std::set<std::string> &targets,
                                      bool now) const
{
    Manifests sub = base_;
    sub.server_timestamps = server_timestamps_;
    if (now && !pending_grants_.empty()) with_grants(&sub.reference_grants);
    std::set<std::string> services = targets, policies, reads;
    for (const std::string &key : keys) {
        const Route *r = now ? route_now(key) : routes_.find(key);
        if (r == nullptr) continue;
        sub.http_routes.push_back(*r);
        for (const std::string &s : backend_services(*r)) services.insert(s);
    }
    for (const std::string &key : services) {
        if (auto it = policies_of_.find(key); it != policies_of_.end()) policies.insert(it->second.begin(), it->second.end());
        const Service *s = now ? service_now(key) : services_.find(key);
        if (s == nullptr) continue;  // none: BackendNotFound, as the whole way says
        sub.services.push_back(*s);
        if (auto it = slices_of_.find(key); it != slices_of_.end()) {
            for (const std::string &slice : it->second) sub.endpoint_slices.push_back(*slices_.find(slice));
        }
    }
    if (now) {
        // (one made is in no index yet)
        for (const auto &[key, p] : pending_policies_) {
            if (!p) continue;
            const std::set<std::string> of = policy_target_services(*p);
            if (std::any_of(of.begin(), of.end(), [&](const std::string &s) { return services.count(s) > 0; })) policies.insert(key);
        }
    }
    for (const std::string &key : policies) {
        const BackendTLSPolicy *p = now ? policy_now(key) : policies_.find(key);
        if (p == nullptr) continue;
        sub.backend_tls_policies.push_back(*p);
        for (std::string &read : policy_read_keys(*p)) reads.insert(std::move(read));
    }
    reads.insert(gateway_reads_.begin(), gateway_reads_.end());
    for (const std::string &key : reads) trust_objects_.add_to(key, &sub);
    return sub;
}

RouteChanges::Update RouteChanges::update(Plan *plan, SpareAssignment *spares, const SpareRoom &room)
{
    Update out = update_pending(plan, spares, room);
    pending_.clear();
    pending_services_.clear();
    pending_grants_.clear();
    pending_policies_.clear();
    return out;
}

// `grants` as reference_grant_changed() has changed them since update()
void RouteChanges::with_grants(std::vector<ReferenceGrant> *grants) const
{
    grants->erase(std::remove_if(grants->begin(), grants->end(),
                                 [&](const ReferenceGrant &g) { return pending_grants_.count(g.meta.key()) > 0; }),
                  grants->end());
    for (const auto &[key, now] : pending_grants_) {
        if (now) grants->push_back(*now);
    }
}

RouteChanges::Update RouteChanges::update_pending(Plan *plan, SpareAssignment *spares, const SpareRoom &room)
{
    Update out;
    auto fail = [&](std::string why) {
        out.needs_resolve = std::move(why);
        return out;
    };
    // the Services and ReferenceGrants changed, kept as they are now
    auto commit_changes = [&] {
        for (const auto &[service, now] : pending_services_) {
            if (now) {
                services_.copy(service, *now);
            } else {
                services_.erase(service);
            }
        }
        with_grants(&base_.reference_grants);
        for (const auto &[key, now] : pending_policies_) {
            policies_.replace(key, now, [&](const BackendTLSPolicy &p, bool add) { index_policy(key, p, add); });
        }
    };
    // a Service changed is a change of the routes naming it, where no
    // policy, other route or Gateway reads it
    std::set<std::string> changed;  // the routes resolved again
    for (const auto &[key, route] : pending_) changed.insert(key);
    for (const auto &[service, now] : pending_services_) {
        auto read = reads_.find(read_key_of("Service", service));
        if (read != reads_.end() && (read->second & ~static_cast<unsigned>(Reader::Route))) {
            return fail("Service " + service + " is read by "
                        + (read->second & static_cast<unsigned>(Reader::BackendTLSPolicy) ? "a BackendTLSPolicy"
                           : read->second & static_cast<unsigned>(Reader::StreamRoute)
                               ? "a TLSRoute, TCPRoute or UDPRoute"
                               : "the Gateways' status"));
        }
        if (auto it = routes_naming_.find(service); it != routes_naming_.end()) changed.insert(it->second.begin(), it->second.end());
    }
    // a ReferenceGrant changed, a change of the routes naming a Service of
    // its namespace from another, where nothing else reads its grants
    std::set<std::string> granting;  // namespaces
    for (const auto &[key, now] : pending_grants_) {
        const std::string ns = key.substr(0, key.find('/'));
        auto read = reads_.find(read_key("ReferenceGrant", ns, "*"));
        if (read != reads_.end() && (read->second & ~static_cast<unsigned>(Reader::Route))) {
            return fail("the ReferenceGrants of " + ns + " are read by a Gateway, a ListenerSet or a TLSRoute, TCPRoute or UDPRoute");
        }
        granting.insert(ns);
    }
    if (!granting.empty()) {
        for (const auto &[service, routes] : routes_naming_) {
            const std::string ns = service.substr(0, service.find('/'));
            if (!granting.count(ns)) continue;
            for (const std::string &key : routes) {
                const size_t space = key.find(' ');
                if (key.compare(space + 1, ns.size() + 1, ns + "/") != 0) changed.insert(key);
            }
        }
    }
    // a BackendTLSPolicy changed, a change of the routes naming the
    // Services it targeted and targets, where no other kind reads them
    std::set<std::string> targets;  // Services
    bool trust_reads_changed = false;
    for (const auto &[key, now] : pending_policies_) {
        const BackendTLSPolicy *before = policies_.find(key);
        if (before == nullptr || !now || policy_read_keys(*before) != policy_read_keys(*now)) trust_reads_changed = true;
        for (const BackendTLSPolicy *p : {before, now ? &*now : nullptr}) {
            if (p == nullptr) continue;
            for (const std::string &service : policy_target_services(*p)) targets.insert(service);
        }
    }
    for (const std::string &service : targets) {
        // (one policy's conditions may change another's of the same target)
        auto others = policies_of_.find(service);
        if (others != policies_of_.end() && std::any_of(others->second.begin(), others->second.end(), [&](const std::string &p) {
                return !pending_policies_.count(p);
            })) {
            return fail("Service " + service + ", which a changed BackendTLSPolicy targets, is another BackendTLSPolicy's target too");
        }
        auto read = reads_.find(read_key_of("Service", service));
        const unsigned alone = static_cast<unsigned>(Reader::Route) | static_cast<unsigned>(Reader::BackendTLSPolicy);
        if (read != reads_.end() && (read->second & ~alone)) {
            return fail("Service " + service + ", which a changed BackendTLSPolicy targets, is read by "
                        + (read->second & static_cast<unsigned>(Reader::StreamRoute) ? "a TLSRoute, TCPRoute or UDPRoute"
                                                                                    : "the Gateways' status"));
        }
        if (auto it = routes_naming_.find(service); it != routes_naming_.end()) changed.insert(it->second.begin(), it->second.end());
    }
    if (changed.empty() && pending_policies_.empty()) {
        // nothing resolved: every status as it was
        commit_changes();
        for (size_t i = 0; plan->statuses && i < plan->statuses->size(); i++) out.status_from.push_back(static_cast<int64_t>(i));
        return out;
    }
    // the hostnames the changed routes had and have: exact ones alone
    // (a wildcard's, or no hostname's, is a server{} of its own)
    std::set<std::string> hosts;
    for (const std::string &key : changed) {
        auto pending = pending_.find(key);
        const Route *now = pending == pending_.end() ? routes_.find(key)
                                                     : pending->second ? &*pending->second : nullptr;
        for (const Route *r : {routes_.find(key), now}) {
            if (r == nullptr) continue;
            if (r->hostnames.empty()) return fail(key + " has no hostname");
            for (const std::string &h : r->hostnames) {
                if (is_wildcard(h)) return fail(key + " has a wildcard hostname");
                hosts.insert(h);
            }
        }
    }
    // and every route that may serve one of them, until the hostnames of
    // those routes are all in: each hostname's routes whole, and whoever
    // else claims the same names
    std::set<std::string> keys;
    std::vector<std::string> todo(hosts.begin(), hosts.end());
    auto add_host = [&](const std::string &h) {
        if (hosts.insert(h).second) todo.push_back(h);
    };
    auto add_route = [&](const std::string &key) {
        if (!keys.insert(key).second) return;
        if (const Route *r = route_now(key)) {
            for (const std::string &h : r->hostnames) add_host(h);
        }
    };
    for (const std::string &key : changed) add_route(key);
    if (!no_hostname_.empty() && !changed.empty()) {
        // they serve their listeners' hostnames
        for (const std::string &key : no_hostname_) add_route(key);
        for (const Gateway &g : base_.gateways) {
            for (const Listener &l : g.listeners) add_host(l.hostname);
        }
        for (const ListenerSet &set : base_.listener_sets) {
            for (const Listener &l : set.listeners) add_host(l.hostname);
        }
    }
    while (!todo.empty()) {
        const std::string host = std::move(todo.back());
        todo.pop_back();
        if (auto it = routes_of_.find(host); it != routes_of_.end()) {
            for (const std::string &key : it->second) add_route(key);
        }
        if (!is_wildcard(host)) {
            for (const std::string &w : wildcards_) {
                if (wildcard_covers(w, host)) add_host(w);
            }
        }
        if (keys.size() > 64 && keys.size() * 4 > routes_.size()) return fail("it touches a quarter of the routes");
    }

    const Manifests before = sub_manifests(keys, targets, false);
    const Manifests after = sub_manifests(keys, targets, true);
    ResolveReads read_before, read_after;
    Plan was = resolve(before, options_, &read_before);
    Plan is = resolve(after, options_, &read_after);
    std::string unread;
    for (const auto &[key, readers] : read_after.readers) {
        // (a Service routes alone read may be one the plan never looked
        // up: routes_naming_ follows those)
        if (!reads_.count(key) && readers != static_cast<unsigned>(Reader::Route)) {
            out.wants.readers.emplace(key, readers);
            if (unread.empty() || key < unread) unread = key;
        }
    }
    if (!unread.empty()) {
        out.wants.readers.insert(reads_.begin(), reads_.end());
        return fail("it refers to " + unread + ", which the plan does not read");
    }
    out = splice(std::move(was), std::move(is), read_before, read_after, hosts, keys, plan, spares, room);
    if (!out.needs_resolve.empty()) return out;
    out.trust_reads_changed = trust_reads_changed;
    commit_changes();
    for (Update::Held &h : out.held) h.service = services_.find(h.service->meta.key());  // kept now
    return out;
}

}  // namespace g2n
