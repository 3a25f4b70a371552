#include "apply/isolate.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

#include "apply/nginx_check.h"
#include "apply/output.h"
#include "parse/parse.h"
#include "resolve/resolve.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

using Kind = TenantObject::Kind;

const ObjectMeta &meta_of(const Manifests &m, const TenantObject &o)
{
    switch (o.kind) {
    case Kind::Secret: return m.secrets[o.index].meta;
    case Kind::ConfigMap: return m.config_maps[o.index].meta;
    case Kind::ReferenceGrant: return m.reference_grants[o.index].meta;
    case Kind::BackendTLSPolicy: return m.backend_tls_policies[o.index].meta;
    case Kind::Service: return m.services[o.index].meta;
    case Kind::EndpointSlice: return m.endpoint_slices[o.index].meta;
    case Kind::ListenerSet: return m.listener_sets[o.index].meta;
    case Kind::StreamRoute: return m.stream_routes[o.index].meta;
    case Kind::HTTPRoute: return m.http_routes[o.index].meta;
    }
    return m.secrets[o.index].meta;  // not reached
}

ObjectMeta &meta_of(Manifests &m, const TenantObject &o)
{
    return const_cast<ObjectMeta &>(meta_of(static_cast<const Manifests &>(m), o));
}

// The object's own kind: a list of routes holds more than one
const char *kind_name(const Manifests &m, const TenantObject &o)
{
    if (o.kind == Kind::StreamRoute) return route_kind_name(m.stream_routes[o.index].kind);
    if (o.kind == Kind::HTTPRoute) return route_kind_name(m.http_routes[o.index].kind);
    static const char *const names[] = {"Secret", "ConfigMap", "ReferenceGrant", "BackendTLSPolicy",
                                        "Service", "EndpointSlice", "ListenerSet"};
    return names[static_cast<size_t>(o.kind)];
}

// What RefusalMemory and FirstSeen know an object by: kind, namespace, name
std::string identity_of(const Manifests &m, const TenantObject &o)
{
    const ObjectMeta &meta = meta_of(m, o);
    return std::string(kind_name(m, o)) + '\0' + meta.namespace_ + '\0' + meta.name;
}

template <typename T>
void add_all(const std::vector<T> &objects, Kind kind, std::vector<TenantObject> *out)
{
    for (size_t i = 0; i < objects.size(); i++) out->push_back({kind, i});
}

// Erases the objects at `positions` (in any order) from `objects`.
template <typename T>
void erase_at(std::vector<T> *objects, std::vector<size_t> positions)
{
    std::sort(positions.begin(), positions.end());
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    for (auto it = positions.rbegin(); it != positions.rend(); ++it) objects->erase(objects->begin() + *it);
}

RejectedObject rejected(const std::string &api_version, const std::string &kind, const ObjectMeta &meta,
                        const std::string &why)
{
    RejectedObject r;
    r.api_version = api_version;
    r.kind = kind;
    r.meta = meta;
    r.message = meta.pos.text() + ": " + why;
    return r;
}

}  // namespace

std::vector<TenantObject> tenant_objects(const Manifests &m)
{
    std::vector<TenantObject> all;
    add_all(m.secrets, Kind::Secret, &all);
    add_all(m.config_maps, Kind::ConfigMap, &all);
    add_all(m.reference_grants, Kind::ReferenceGrant, &all);
    // policies rejected at parse are invalid already: nothing to gain
    for (size_t i = 0; i < m.backend_tls_policies.size(); i++) {
        if (m.backend_tls_policies[i].invalid_reasons.empty()) all.push_back({Kind::BackendTLSPolicy, i});
    }
    add_all(m.services, Kind::Service, &all);
    add_all(m.endpoint_slices, Kind::EndpointSlice, &all);
    add_all(m.listener_sets, Kind::ListenerSet, &all);
    add_all(m.stream_routes, Kind::StreamRoute, &all);
    add_all(m.http_routes, Kind::HTTPRoute, &all);
    static const std::string kUntrusted;
    std::stable_sort(all.begin(), all.end(), [&m](const TenantObject &a, const TenantObject &b) {
        const ObjectMeta &x = meta_of(m, a);
        const ObjectMeta &y = meta_of(m, b);
        const std::string &x_created = m.server_timestamps ? x.creation_timestamp : kUntrusted;
        const std::string &y_created = m.server_timestamps ? y.creation_timestamp : kUntrusted;
        return std::tie(a.kind, x.seen, x_created, x.namespace_, x.name)
               < std::tie(b.kind, y.seen, y_created, y.namespace_, y.name);
    });
    return all;
}

Manifests without(const Manifests &m, const std::vector<Exclusion> &excluded)
{
    Manifests out = m;
    std::vector<size_t> positions[static_cast<size_t>(Kind::HTTPRoute) + 1];
    for (const Exclusion &e : excluded) {
        const TenantObject &o = e.object;
        if (o.kind != Kind::BackendTLSPolicy) positions[static_cast<size_t>(o.kind)].push_back(o.index);
        switch (o.kind) {
        case Kind::Secret: out.rejected.push_back(rejected("v1", "Secret", m.secrets[o.index].meta, e.why)); break;
        case Kind::ConfigMap:
            out.rejected.push_back(rejected("v1", "ConfigMap", m.config_maps[o.index].meta, e.why));
            break;
        case Kind::ReferenceGrant:
            out.rejected.push_back(rejected("gateway.networking.k8s.io/v1beta1", "ReferenceGrant",
                                            m.reference_grants[o.index].meta, e.why));
            break;
        case Kind::BackendTLSPolicy: {
            // kept, invalid: its targets fail closed
            BackendTLSPolicy &p = out.backend_tls_policies[o.index];
            p.invalid_reasons.push_back(e.why);
            out.rejected.push_back(rejected(p.api_version, "BackendTLSPolicy", p.meta, e.why));
            break;
        }
        case Kind::Service: out.rejected.push_back(rejected("v1", "Service", m.services[o.index].meta, e.why)); break;
        case Kind::EndpointSlice:
            out.rejected.push_back(
                rejected("discovery.k8s.io/v1", "EndpointSlice", m.endpoint_slices[o.index].meta, e.why));
            break;
        case Kind::ListenerSet: {
            const ListenerSet &set = m.listener_sets[o.index];
            RejectedObject x = rejected("gateway.networking.k8s.io/v1", "ListenerSet", set.meta, e.why);
            ParentRef parent;
            parent.name = set.parent_name;
            parent.namespace_ = set.parent_namespace;
            x.parent_refs = {parent};
            out.rejected.push_back(std::move(x));
            break;
        }
        case Kind::StreamRoute:
        case Kind::HTTPRoute: {
            const Route &r = o.kind == Kind::StreamRoute ? m.stream_routes[o.index] : m.http_routes[o.index];
            RejectedObject x = rejected(r.api_version, route_kind_name(r.kind), r.meta, e.why);
            x.parent_refs = r.parent_refs;
            out.rejected.push_back(std::move(x));
            break;
        }
        }
    }
    erase_at(&out.secrets, positions[static_cast<size_t>(Kind::Secret)]);
    erase_at(&out.config_maps, positions[static_cast<size_t>(Kind::ConfigMap)]);
    erase_at(&out.reference_grants, positions[static_cast<size_t>(Kind::ReferenceGrant)]);
    erase_at(&out.services, positions[static_cast<size_t>(Kind::Service)]);
    erase_at(&out.endpoint_slices, positions[static_cast<size_t>(Kind::EndpointSlice)]);
    erase_at(&out.listener_sets, positions[static_cast<size_t>(Kind::ListenerSet)]);
    erase_at(&out.stream_routes, positions[static_cast<size_t>(Kind::StreamRoute)]);
    erase_at(&out.http_routes, positions[static_cast<size_t>(Kind::HTTPRoute)]);
    return out;
}

std::vector<std::string> refusal_keys(const Manifests &m, const std::vector<TenantObject> &objects)
{
    auto mix = [](size_t seed, size_t value) { return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); };
    auto with_content = [](std::string identity, const ObjectMeta &meta) {
        return identity + '\0' + std::to_string(meta.content);
    };
    auto operator_object = [&](const char *kind, const ObjectMeta &meta) {
        return with_content(std::string(kind) + '\0' + meta.namespace_ + '\0' + meta.name, meta);
    };
    // the operator's objects
    std::vector<std::string> operators;
    for (const Namespace &n : m.namespaces) operators.push_back(operator_object("Namespace", n.meta));
    for (const GatewayClass &c : m.gateway_classes) operators.push_back(operator_object("GatewayClass", c.meta));
    for (const Gateway &g : m.gateways) operators.push_back(operator_object("Gateway", g.meta));
    std::sort(operators.begin(), operators.end());
    size_t environment = 0;
    for (const std::string &o : operators) environment = mix(environment, std::hash<std::string>{}(o));
    // each namespace's tenant objects, in any order
    std::vector<TenantObject> all = tenant_objects(m);
    std::map<std::string, size_t> namespace_content;
    for (const TenantObject &o : all) {
        const ObjectMeta &meta = meta_of(m, o);
        // a sum: the same whatever the order the objects come in
        namespace_content[meta.namespace_] += std::hash<std::string>{}(with_content(identity_of(m, o), meta));
    }
    // the namespaces each namespace may refer into
    std::map<std::string, std::set<std::string>> granted;
    for (const ReferenceGrant &g : m.reference_grants) {
        for (const ReferenceGrantFrom &from : g.from) granted[from.namespace_].insert(g.meta.namespace_);
    }
    std::vector<std::string> keys;
    keys.reserve(objects.size());
    for (const TenantObject &o : objects) {
        const ObjectMeta &meta = meta_of(m, o);
        size_t scope = mix(environment, namespace_content[meta.namespace_]);
        for (const std::string &to : granted[meta.namespace_]) {
            scope = mix(mix(scope, std::hash<std::string>{}(to)), namespace_content[to]);
        }
        keys.push_back(with_content(identity_of(m, o), meta) + '\0' + std::to_string(scope));
    }
    return keys;
}

std::vector<Exclusion> RefusalMemory::recall(const Manifests &m, std::chrono::steady_clock::time_point now) const
{
    std::vector<Exclusion> out;
    if (refused_.empty()) return out;
    const std::vector<TenantObject> objects = tenant_objects(m);
    const std::vector<std::string> keys = refusal_keys(m, objects);
    for (size_t i = 0; i < objects.size(); i++) {
        auto known = refused_.find(keys[i]);
        if (known != refused_.end() && now - known->second.since < kRecheckRefused) {
            out.push_back({objects[i], known->second.why});
        }
    }
    return out;
}

void RefusalMemory::remember(const Manifests &m, const std::vector<Exclusion> &recalled,
                             const std::vector<Exclusion> &found, std::chrono::steady_clock::time_point now)
{
    std::vector<TenantObject> objects;
    for (const Exclusion &e : recalled) objects.push_back(e.object);
    for (const Exclusion &e : found) objects.push_back(e.object);
    const std::vector<std::string> keys = refusal_keys(m, objects);
    std::map<std::string, Refusal> kept;
    for (size_t i = 0; i < objects.size(); i++) {
        auto before = refused_.find(keys[i]);
        const bool was_recalled = i < recalled.size() && before != refused_.end();
        kept[keys[i]] = {i < recalled.size() ? recalled[i].why : found[i - recalled.size()].why,
                         was_recalled ? before->second.since : now};
    }
    refused_ = std::move(kept);
}

void FirstSeen::stamp(Manifests *m)
{
    for (const TenantObject &o : tenant_objects(*m)) {
        auto [it, added] = seen_.try_emplace(identity_of(*m, o), Seen{configurations_, configurations_});
        it->second.last = configurations_;
        meta_of(*m, o).seen = it->second.first;
    }
    // one deleted and made again is met anew
    for (auto it = seen_.begin(); it != seen_.end();) {
        it = it->second.last != configurations_ ? seen_.erase(it) : std::next(it);
    }
    configurations_++;
}

std::vector<Refused> find_refused(size_t count, const std::string &refusal_of_all,
                                  const std::function<std::optional<std::string>(const std::vector<bool> &)> &refusal)
{
    std::vector<bool> included(count, false);
    std::vector<Refused> refused;
    // Adds [begin, end) to what is included if nginx accepts that, else
    // looks into its halves. `known` is the refusal of exactly that
    // configuration when it was seen already. Returns whether anything in
    // the range was refused.
    std::function<bool(size_t, size_t, std::optional<std::string>)> add = [&](size_t begin, size_t end,
                                                                             std::optional<std::string> known) {
        if (begin == end) return false;
        if (!known) {
            std::fill(included.begin() + begin, included.begin() + end, true);
            known = refusal(included);
            if (!known) return false;
            std::fill(included.begin() + begin, included.begin() + end, false);
        }
        if (end - begin == 1) {
            refused.push_back({begin, *known});
            return true;
        }
        size_t middle = begin + (end - begin) / 2;
        // if nginx takes all of the first half, the configuration with the
        // second half is the one refused already
        if (!add(begin, middle, std::nullopt)) {
            add(middle, end, known);
        } else {
            add(middle, end, std::nullopt);
        }
        return true;
    };
    add(0, count, refusal_of_all);
    return refused;
}

std::vector<ObjectVersion> object_versions(const Manifests &m, const std::vector<TenantObject> &objects)
{
    std::vector<ObjectVersion> versions;
    versions.reserve(objects.size());
    for (const TenantObject &o : objects) versions.push_back({identity_of(m, o), meta_of(m, o).content});
    return versions;
}

ObjectPositions positions_of(const std::vector<Exclusion> &excluded, const std::vector<Exclusion> &more)
{
    ObjectPositions positions;
    for (const auto *list : {&excluded, &more}) {
        for (const Exclusion &e : *list) positions.insert({e.object.kind, e.object.index});
    }
    return positions;
}

std::optional<Plan> stage_without_refused(const Manifests &manifests, const std::string &refusal,
                                          const Options &options, bool threads, const fs::path &staged,
                                          const std::vector<Exclusion> &left_out, std::vector<Exclusion> *found,
                                          const RefusalJudge &judge, const std::string &refused_by,
                                          const std::string &checks_of,
                                          const std::function<bool(const TenantObject &)> &suspect)
{
    std::cerr << "gateway2nginx: " << refused_by << " (" << printable(refusal) << "); looking for the objects at fault\n";
    // the objects searched: the suspects but those left out already; the
    // rest is in every configuration judged
    std::vector<TenantObject> objects;
    const ObjectPositions out = positions_of(left_out);
    for (const TenantObject &o : tenant_objects(manifests)) {
        if (!out.count({o.kind, o.index}) && (!suspect || suspect(o))) objects.push_back(o);
    }
    size_t checks = 0;
    auto stage_with = [&](const std::vector<bool> &included, const std::function<std::string(size_t)> &why) {
        std::vector<Exclusion> excluded = left_out;
        for (size_t i = 0; i < objects.size(); i++) {
            if (!included[i]) excluded.push_back({objects[i], why(i)});
        }
        Plan plan = resolve(without(manifests, excluded), options);
        write_configuration(plan, options, staged, threads);
        return plan;
    };
    auto refusal_with = [&](const std::vector<bool> &included) {
        const Plan plan = stage_with(included, [](size_t) { return "left out while looking for what nginx refuses"; });
        checks++;
        return judge(plan, false);
    };
    if (std::optional<std::string> r = refusal_with(std::vector<bool>(objects.size(), false))) {
        std::cerr << "gateway2nginx: " << refused_by << " even without any "
                  << (suspect ? "of the " + std::to_string(objects.size()) + " object(s) searched"
                              : std::string("route, policy or object of theirs"))
                  << ": " << printable(*r) << "\n";
        return std::nullopt;
    }
    std::vector<Refused> refused = find_refused(objects.size(), refusal, refusal_with);
    std::vector<bool> included(objects.size(), true);
    std::map<size_t, std::string> why;
    for (const Refused &r : refused) {
        included[r.index] = false;
        why[r.index] = refused_by + " with it: " + r.why;
        if (found != nullptr) found->push_back({objects[r.index], why[r.index]});
    }
    Plan plan = stage_with(included, [&](size_t i) { return why[i]; });
    checks++;
    if (std::optional<std::string> r = judge(plan, true)) {
        std::cerr << "gateway2nginx: without the objects at fault, still: " << printable(*r) << "\n";
        return std::nullopt;
    }
    std::cerr << "gateway2nginx: " << refused.size() << " object(s) at fault among " << objects.size() << ", found in "
              << checks << " " << checks_of << "\n";
    return plan;
}

std::optional<Plan> stage_without_refused(const Manifests &manifests, const std::string &refusal,
                                          const Options &options, const std::string &nginx, bool threads,
                                          const fs::path &staged, const std::vector<Exclusion> &left_out,
                                          std::vector<Exclusion> *found, const fs::path *running)
{
    const RefusalJudge nginx_t = [&](const Plan &, bool last) {
        return nginx_refusal(nginx, staged, !last, running);
    };
    return stage_without_refused(manifests, refusal, options, threads, staged, left_out, found, nginx_t,
                                 "nginx -t refuses the configuration", "nginx -t run(s)");
}

}  // namespace g2n
