#include "run/applier.h"

#include "render/render.h"
#include "run/process.h"

namespace g2n {

namespace {

// `one`, parsed from the JSON `change` names, holds that object alone, of
// a kind applied without resolve
bool holds_only(const Manifests &one, const kube::ObjectChange &change)
{
    std::vector<std::pair<std::string_view, const ObjectMeta *>> held;
    each_object(one, [&](std::string_view kind, const ObjectMeta &meta) { held.emplace_back(kind, &meta); });
    return held.size() == 1 && held[0].first == change.kind && held[0].second->key() == change.name_key;
}

// What each object of `changes` is now, parsed alone into (*now)[i] (none:
// gone); false when one is not that object alone, of its kind, valid
bool parse_alone(const ChangeSet &changes, std::vector<std::optional<Manifests>> *now)
{
    now->assign(changes.objects.size(), std::nullopt);
    for (size_t i = 0; i < changes.objects.size(); i++) {
        const kube::ObjectChange &c = changes.objects[i];
        const std::optional<std::string> json = changes.json_of(c);
        if (!json) continue;
        Manifests &one = (*now)[i].emplace();
        try {
            parse_texts({{c.name, *json}}, &one);
        } catch (const InputError &) {
            return false;  // said by the whole pipeline
        }
        if (!one.rejected.empty() || !one.ignored.empty() || !holds_only(one, c)) return false;
    }
    return true;
}

struct RouteChangeKinds {
    bool services = false, slices = false;
    std::vector<const BackendTLSPolicy *> policies;  // as they are now
};

// Each object of `changes`, as it is now (`now`, parsed alone), handed to
// what follows its kind; which kinds there were
RouteChangeKinds hand_over(const ChangeSet &changes, const std::vector<std::optional<Manifests>> &now,
                           RouteChanges *routes, ServiceEndpoints *endpoints)
{
    RouteChangeKinds kinds;
    for (size_t i = 0; i < changes.objects.size(); i++) {
        const kube::ObjectChange &c = changes.objects[i];
        if (c.kind == "Service") {
            const Service *service = now[i] ? &now[i]->services[0] : nullptr;
            routes->service_changed(c.name_key, service);
            endpoints->service_changed(c.name_key, service);
            kinds.services = true;
        } else if (c.kind == "BackendTLSPolicy") {
            const BackendTLSPolicy *policy = now[i] ? &now[i]->backend_tls_policies[0] : nullptr;
            routes->policy_changed(c.name_key, policy);
            if (policy != nullptr) kinds.policies.push_back(policy);
        } else if (c.kind == "ReferenceGrant") {
            routes->reference_grant_changed(c.name_key, now[i] ? &now[i]->reference_grants[0] : nullptr);
        } else if (change_of(c) == KindChange::Endpoints) {
            const EndpointSlice *slice = now[i] ? &now[i]->endpoint_slices[0] : nullptr;
            endpoints->slice_changed(c.name_key, slice);
            routes->slice_changed(c.name_key, slice);
            kinds.slices = true;
        } else {
            const Route *route = now[i] ? &now[i]->http_routes[0] : nullptr;
            routes->route_changed(c.kind + " " + c.name_key, route);
        }
    }
    return kinds;
}

}  // namespace

KindChange change_of(const kube::ObjectChange &change)
{
    const KindRow *row = find_kind(change.group, change.kind);
    return row != nullptr ? row->change : KindChange::Whole;
}

// Only EndpointSlices, ConfigMaps, Secrets and ClusterTrustBundles changed: the servers of
// the Services they name (ServiceEndpoints) and the trust of the
// policies reading them (PolicyTrust), recomputed and pushed, OUTDIR
// written later. False when the change needs the whole pipeline,
// which then applies it.
bool Applier::apply_object_changes(const ChangeSet &changes)
{
    for (const kube::ObjectChange &c : changes.objects) {
        const KindChange how = change_of(c);
        if (how == KindChange::Whole || how == KindChange::Routes || (how == KindChange::Trust && trust_ == nullptr)) {
            return false;
        }
        // a spare's policy holds a copy of a BackendTLSPolicy's: resolved again
        if (how == KindChange::Trust && !spares_.empty()) return false;
    }
    std::vector<std::optional<Manifests>> now;
    if (!parse_alone(changes, &now)) return false;
    for (size_t i = 0; i < changes.objects.size(); i++) {
        const kube::ObjectChange &c = changes.objects[i];
        const Manifests *one = now[i] ? &*now[i] : nullptr;
        if (change_of(c) == KindChange::Endpoints) {
            const EndpointSlice *slice = one ? &one->endpoint_slices[0] : nullptr;
            endpoints_->slice_changed(c.name_key, slice);
            if (routes_) routes_->slice_changed(c.name_key, slice);
        } else {
            trust_->object_changed(c.kind, c.name_key, one);
            if (routes_) routes_->trust_object_changed(c.kind, c.name_key, one);
        }
    }
    // trust first: it leaves the plan as it was when it needs resolve
    const PolicyTrust::Update trust = trust_ ? trust_->update(&*plan_) : PolicyTrust::Update{};
    if (trust.needs_resolve) return false;
    const ServiceEndpoints::Update update = endpoints_->update(&*plan_);
    if (update.needs_resolve) return false;
    for (const std::string &w : update.warnings) {
        if (warned_.insert(w).second) say("warning: " + w);
    }
    bool slices = false, trust_objects = false;
    for (const kube::ObjectChange &c : changes.objects) {
        (change_of(c) == KindChange::Endpoints ? slices : trust_objects) = true;
    }
    if (slices) metrics_->endpoint_updates++;
    if (trust_objects) metrics_->trust_updates++;
    ApiContent changed;
    for (const Upstream *u : update.changed) changed.servers[u->name] = upstream_servers_api_json(*u);
    for (const Upstream *u : update.stream_changed) changed.stream_servers[u->name] = upstream_servers_api_json(*u);
    for (const UpstreamPolicy *p : trust.changed) changed.trust[p->name] = policy_trust_api_json(*p, *plan_);
    changed = changed.changed_since(pushed_);
    if (changed.empty()) {
        say("no change to the servers nginx holds");
        serving(nginx_runs_now());
        return true;
    }
    if (!push(changed)) {
        applied_ = false;  // the whole way reloads
        return false;
    }
    pushed_alone();
    return true;
}

// What was pushed alone is served; OUTDIR catches up later
void Applier::pushed_alone()
{
    last_push_ = std::chrono::steady_clock::now();
    if (!behind_since_) behind_since_ = last_push_;
    serving(true);  // the push was answered
}

// Only HTTPRoutes, GRPCRoutes, Services, ReferenceGrants and
// BackendTLSPolicies changed (and EndpointSlices beside them): the
// hostnames the routes (and those naming the Services, a Service of a
// grant's namespace from another, or a policy's targets) had and have
// resolved again with the routes of those hostnames alone (RouteChanges),
// their route table entries and the policies' trust pushed and their
// statuses offered, OUTDIR written later. False when the change needs the whole
// pipeline, which then applies it. A backend new to nginx takes a free
// spare's place (--spare-backends) as the whole way would give it one; a
// backend a spare holds already is named by the spare's name.
bool Applier::apply_route_changes(const ChangeSet &changes)
{
    if (routes_ == nullptr) return false;
    std::vector<std::optional<Manifests>> now;
    if (!parse_alone(changes, &now)) return false;
    const RouteChangeKinds kinds = hand_over(changes, now, routes_.get(), endpoints_.get());
    const bool services = kinds.services, slices = kinds.slices;
    // the servers first: a Service's upstreams keep theirs, or it is the
    // whole way; the routes are resolved with them as they are now
    ServiceEndpoints::Update servers;
    if (services || slices) {
        servers = endpoints_->update(&*plan_);
        if (servers.needs_resolve) {
            say(services ? "a Service change applied the whole way: it changes or removes its backends' servers, or their room"
                         : "an EndpointSlice change applied the whole way: it changes the servers' room");
            return false;
        }
        for (const std::string &w : servers.warnings) {
            if (warned_.insert(w).second) say("warning: " + w);
        }
    }
    const bool spares = args_.options.spare_backends > 0;
    SpareAssignment held = spares_;
    RouteChanges::Update update = routes_->update(
        &*plan_, spares ? &held : nullptr,
        [&](const std::vector<std::pair<const Upstream *, Upstream>> &swaps) { return endpoints_->same_room(swaps); });
    if (!update.needs_resolve.empty()) {
        say("a route change applied the whole way: " + update.needs_resolve);
        // what it refers to, fetched now: the whole way reads it at once
        // rather than resolving twice
        if (!update.wants.readers.empty()) input_.want(update.wants);
        return false;
    }
    // the route tables' room, sized by what they hold, is the skeleton's
    size_t bytes = route_table_bytes_;
    for (const Server &s : update.replaced) bytes -= route_table_entry_bytes(s);
    for (const Server *s : update.servers) bytes += route_table_entry_bytes(*s);
    if (route_tables_room(bytes) != route_tables_room(route_table_bytes_)) {
        say("a route change applied the whole way: the route tables' room changes");
        return false;
    }
    route_table_bytes_ = bytes;
    metrics_->route_updates++;
    if (slices) metrics_->endpoint_updates++;
    status_.clear();  // not digested whole again: the next whole way compares none
    ApiContent entries = route_entries(update.servers, update.replaced);
    for (const Upstream *u : servers.changed) entries.servers[u->name] = upstream_servers_api_json(*u);
    for (const Upstream *u : servers.stream_changed) entries.stream_servers[u->name] = upstream_servers_api_json(*u);
    for (const UpstreamPolicy *p : update.trust) entries.trust[p->name] = policy_trust_api_json(*p, *plan_);
    if (update.trust_reads_changed) {
        trust_.reset();  // ConfigMap and Secret changes the whole way, until it is made again
    } else if (trust_) {
        for (const BackendTLSPolicy *p : kinds.policies) trust_->policy_changed(p->meta.key(), *p);
    }
    for (const RouteChanges::Update::Held &h : update.held) {
        const Upstream &spare = plan_->upstreams[h.index];
        endpoints_->hold(h.index, h.spare, spare, *h.service, h.slices);
        entries.servers[spare.name] = upstream_servers_api_json(spare);
        say("backend " + h.upstream + (h.tls_turned ? " turns TLS on or off" : " new to nginx") + ": held by spare " + spare.name);
    }
    spares_ = std::move(held);
    const ApiContent changed = entries.changed_since(pushed_);
    if (!changed.empty() && !push(changed)) {
        applied_ = false;  // the whole way reloads
        return false;
    }
    input_.offer_status(*plan_, args_.options, nginx_runs_now(), &update.status_from);
    if (changed.empty()) {
        say("no change to the route tables nginx holds");
        serving(nginx_runs_now());
        return true;
    }
    pushed_alone();
    return true;
}

}  // namespace g2n
