// RouteChanges::splice(): what two resolves of the routes of some hostnames
// differ by, applied to the plan nginx runs (resolve/route_changes.h).
#include "resolve/route_changes.h"

#include <algorithm>
#include <array>

#include "plan/upstreams.h"
#include "resolve/policy_trust.h"
#include "resolve/resolver.h"

namespace g2n {

namespace {

bool same_conditions(const std::vector<Condition> &a, const std::vector<Condition> &b)
{
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const Condition &x, const Condition &y) {
               return x.type == y.type && x.status == y.status && x.reason == y.reason && x.message == y.message;
           });
}

// Two statuses of one object alike (their listeners' attachedRoutes
// aside, unless `attached`)
bool same_status(const ObjectStatus &a, const ObjectStatus &b, bool attached)
{
    if (a.kind != b.kind || a.api_version != b.api_version || a.meta.name != b.meta.name
        || a.meta.namespace_ != b.meta.namespace_ || a.meta.generation != b.meta.generation
        || a.meta.creation_timestamp != b.meta.creation_timestamp || a.meta.uid != b.meta.uid
        || !same_conditions(a.conditions, b.conditions) || a.listeners.size() != b.listeners.size()
        || !(a.addresses == b.addresses) || a.attached_listener_sets != b.attached_listener_sets
        || a.refs.size() != b.refs.size() || a.refs_key != b.refs_key) {
        return false;
    }
    for (size_t i = 0; i < a.listeners.size(); i++) {
        const auto &x = a.listeners[i], &y = b.listeners[i];
        if (x.name != y.name || x.supported_kinds != y.supported_kinds || !same_conditions(x.conditions, y.conditions)
            || (attached && x.attached_routes != y.attached_routes)) {
            return false;
        }
    }
    for (size_t i = 0; i < a.refs.size(); i++) {
        const auto &x = a.refs[i], &y = b.refs[i];
        if (x.group != y.group || x.kind != y.kind || x.namespace_ != y.namespace_ || x.name != y.name
            || x.section_name != y.section_name || !same_conditions(x.conditions, y.conditions)) {
            return false;
        }
    }
    return true;
}

bool route_status(const ObjectStatus &st) { return st.refs_key == "parents"; }


// `st`'s texts in `texts`: it outlives the plan it was made in
ObjectStatus interned(ObjectStatus st, TextTable &texts)
{
    auto conditions = [&](std::vector<Condition> &list) {
        for (Condition &c : list) {
            c = {texts.intern(c.type), texts.intern(c.status), texts.intern(c.reason), texts.intern(c.message)};
        }
    };
    st.api_version = texts.intern(st.api_version);
    st.kind = texts.intern(st.kind);
    st.refs_key = texts.intern(st.refs_key);
    conditions(st.conditions);
    for (auto &l : st.listeners) conditions(l.conditions);
    for (auto &r : st.refs) {
        r.group = texts.intern(r.group);
        r.kind = texts.intern(r.kind);
        conditions(r.conditions);
    }
    return st;
}

std::string server_key(const Server &s) { return s.listen + " " + s.server_name; }

// What a server{} of its own renders, its routes aside (a table serves them)
bool same_own_server(const Server &a, const Server &b)
{
    return a.listen == b.listen && a.listener_port == b.listener_port && a.ssl == b.ssl
           && a.insecure_allowed == b.insecure_allowed && a.server_name == b.server_name
           && a.listener_hostname == b.listener_hostname && a.certificate == b.certificate
           && a.certificate_key == b.certificate_key && a.client.verify == b.client.verify && a.client.ca == b.client.ca
           && a.client.pins == b.client.pins && a.backend_client.certificate == b.backend_client.certificate
           && a.backend_client.key == b.backend_client.key && a.served_by_listener == b.served_by_listener
           && a.in_table() == b.in_table();
}

// What two resolves of one upstream agree on, when the change leaves it as it is
bool same_upstream(const Upstream &a, const Upstream &b)
{
    return a.service == b.service && a.service_port == b.service_port && a.tries == b.tries && a.for_http == b.for_http
           && a.for_grpc == b.for_grpc && a.unusable == b.unusable && a.tenant == b.tenant
           && (a.policy ? a.policy->name : "") == (b.policy ? b.policy->name : "") && a.servers == b.servers;
}

// What BackendTLSPolicy changes do to the plan: the policy of their
// upstreams replaced (and the spares' copies where they hold a backend of
// one), their CA bundles written
struct PolicySplice {
    std::map<const UpstreamPolicy *, std::shared_ptr<const UpstreamPolicy>> replaced;  // the plan's, by what replaces it
    std::vector<std::pair<size_t, std::shared_ptr<const UpstreamPolicy>>> spares;      // by plan->upstreams position
    std::set<std::string> bundles;  // the plan's CA bundles replaced, which may be named no more
    std::set<std::string> files;    // the CA bundles the policies name now
};

// Why policy `name`, `was` in the plan and `now` as resolved now, cannot
// be pushed in its place ("" when it can): the API replaces trust and
// names, not the mode, and names only where the skeleton leaves them out
std::string policy_not_replaceable(const std::string &name, const UpstreamPolicy &was, const UpstreamPolicy &now,
                                   bool names_pushed)
{
    if (now.mode != was.mode) return "BackendTLSPolicy " + name + " changes its mode";
    // the files nginx reads it from are the configuration's
    if (now.client_certificate != was.client_certificate || now.client_key != was.client_key) {
        return "BackendTLSPolicy " + name + " changes its client certificate";
    }
    if (!trust_replaceable(was) || !trust_replaceable(now)) {
        return "BackendTLSPolicy " + name + " skips verification or verifies with neither a CA nor pins";
    }
    if (!names_pushed && (was.hostname != now.hostname || was.sans != now.sans)) {
        return "BackendTLSPolicy " + name + " changes names nginx's configuration holds";
    }
    return "";
}

// The policies `changed` (targeting the Services `targets`, before or
// after) as `is` resolved them, put in the plan's upstreams and the
// spares holding backends of them: "", or why they cannot be
std::string prepare_policy_splice(const std::set<std::string> &changed, const std::set<std::string> &targets,
                                  const Plan &is, const Plan &plan, const SpareAssignment *spares,
                                  const std::unordered_map<std::string, size_t> &upstream_at, PolicySplice *out)
{
    std::map<std::string, const UpstreamPolicy *> now;  // by policy name
    std::map<std::string, const Upstream *> backends;  // of the targets, by name
    for (const Upstream &u : is.upstreams) {
        if (!targets.count(u.service)) continue;
        backends.emplace(u.name, &u);
        if (u.tls() && changed.count(u.policy->name) && now.emplace(u.policy->name, u.policy.get()).second) {
            out->files.insert(u.policy->ca);
        }
    }
    auto replace = [&](const UpstreamPolicy &was, std::shared_ptr<UpstreamPolicy> policy) {
        if (was.ca != policy->ca) out->bundles.insert(was.ca);
        return std::shared_ptr<const UpstreamPolicy>(std::move(policy));
    };
    for (const std::vector<Upstream> *upstreams : {&plan.upstreams, &plan.stream_upstreams}) {
        for (const Upstream &u : *upstreams) {
            if (!u.tls() || u.tenant == kSpareTenant || !changed.count(u.policy->name) || out->replaced.count(u.policy.get())) {
                continue;
            }
            auto it = now.find(u.policy->name);
            if (it == now.end()) continue;  // no route reaches it: nginx runs those upstreams, serving nothing
            if (upstreams == &plan.stream_upstreams || !(u.for_http || u.for_grpc)) {
                return "BackendTLSPolicy " + u.policy->name + " applies in stream{}";
            }
            // (the API holds no trust of a backend rendered down)
            if (!u.unusable.empty()) return "BackendTLSPolicy " + u.policy->name + " cannot be honoured for " + u.name;
            std::string why = policy_not_replaceable(u.policy->name, *u.policy, *it->second, u.policy->names_pushed);
            if (!why.empty()) return why;
            auto policy = std::make_shared<UpstreamPolicy>(*it->second);
            policy->names_pushed = u.policy->names_pushed;
            out->replaced.emplace(u.policy.get(), replace(*u.policy, std::move(policy)));
        }
    }
    static const SpareAssignment none;
    for (const auto &[backend, spare] : spares != nullptr ? *spares : none) {
        auto at = upstream_at.find(spare);
        if (at == upstream_at.end()) continue;
        const Upstream &held = plan.upstreams[at->second];
        if (!held.tls() || !targets.count(held.service)) continue;
        auto b = backends.find(backend);
        if (b == backends.end()) return "a spare holds backend " + backend + ", which no route names now";
        if (!b->second->tls()) continue;  // (its TLS turned off: the spare cannot hold it, below)
        const UpstreamPolicy &policy_now = *b->second->policy;
        if (!changed.count(policy_now.name)) continue;
        std::string why = policy_not_replaceable(policy_now.name, *held.policy, policy_now, true);
        if (!why.empty()) return why;
        auto policy = std::make_shared<UpstreamPolicy>(policy_now);
        policy->name = held.policy->name;
        policy->names_pushed = true;
        out->spares.emplace_back(at->second, replace(*held.policy, std::move(policy)));
    }
    return "";
}

}  // namespace

// `was` and `is`: the routes `keys` of `hosts` resolved as they were and
// as they are. What differs between them is the change: applied to *plan
// when it is no more than route table entries of `hosts`, the routes'
// statuses and the listeners' attachedRoutes.
RouteChanges::Update RouteChanges::splice(Plan was, Plan is, const ResolveReads &read_was, const ResolveReads &read_is,
                                          const std::set<std::string> &hosts, const std::set<std::string> &keys,
                                          Plan *plan, SpareAssignment *spares, const SpareRoom &room)
{
    Update out;
    auto fail = [&](std::string why) {
        out.needs_resolve = std::move(why);
        return out;
    };
    // every Service port with a BackendTLSPolicy a Gateway's routes
    // reached, they still reach (and no other): the policies' ancestors
    // and their CA bundles stay as they are. One of no policy reached
    // now or no longer changes no status: its upstream is the plan's
    // (below), kept while no route names it as the whole way keeps it
    std::map<std::string, long> reached;  // "ns/name:port gateway"
    for (const auto &[key, n] : read_was.reached) reached[key] -= n;
    for (const auto &[key, n] : read_is.reached) reached[key] += n;
    for (auto &[key, delta] : reached) {
        auto it = reached_.find(key);
        const long before = it == reached_.end() ? 0 : it->second;
        const std::string service = key.substr(0, key.find(':'));
        if ((before > 0) != (before + delta > 0) && policies_of_.count(service)) {
            return fail("it changes which Gateways reach " + key.substr(0, key.find(' ')));
        }
        delta += before;
    }
    // the policies changed, pushed where the API can replace them
    PolicySplice policy_splice;
    if (!pending_policies_.empty()) {
        std::set<std::string> changed, targets;
        for (const auto &[key, now] : pending_policies_) {
            changed.insert(key);
            for (const BackendTLSPolicy *p : {policies_.find(key), policy_now(key)}) {
                if (p == nullptr) continue;
                for (const std::string &service : policy_target_services(*p)) targets.insert(service);
            }
        }
        std::string why = prepare_policy_splice(changed, targets, is, *plan, spares, upstream_at_, &policy_splice);
        if (!why.empty()) return fail(why);
    }
    // (a CA bundle is written while a route reaches its policy: the
    // plan has those of `is`, and keeps those of `was` while others reach
    // it; a changed policy's, written now)
    std::map<std::string_view, const OutputFile *> files;
    for (const OutputFile &f : plan->files) files.emplace(f.path, &f);
    std::vector<const OutputFile *> new_files;
    for (const OutputFile &f : is.files) {
        auto it = files.find(f.path);
        if (it == files.end() && policy_splice.files.count(f.path)) {
            new_files.push_back(&f);
        } else if (it == files.end() || it->second->content != f.content || it->second->mode != f.mode) {
            return fail("it writes " + f.path);
        }
    }

    std::sort(was.warnings.begin(), was.warnings.end());
    std::sort(is.warnings.begin(), is.warnings.end());
    if (was.warnings != is.warnings) return fail("it changes what is warned of");

    // Gateways and ListenerSets: alike but for attachedRoutes (policies:
    // their ancestors are as they were, above)
    std::vector<const ObjectStatus *> others_was, others_is;
    for (const ObjectStatus &st : *was.statuses) {
        if (!route_status(st) && st.refs_key != "ancestors") others_was.push_back(&st);
    }
    for (const ObjectStatus &st : *is.statuses) {
        if (!route_status(st) && st.refs_key != "ancestors") others_is.push_back(&st);
    }
    if (others_was.size() != others_is.size()) return fail("it changes which objects have a status");
    // a changed policy's status as it is now, every route naming its
    // targets resolved (another policy's is as it was: it reaches what it did)
    std::map<std::pair<std::string_view, std::string_view>, const ObjectStatus *> policies_is;
    if (!pending_policies_.empty()) {
        for (const ObjectStatus &st : *is.statuses) {
            if (st.refs_key == "ancestors") policies_is.emplace(std::pair{std::string_view(st.meta.namespace_), std::string_view(st.meta.name)}, &st);
        }
        for (const auto &[key, now] : pending_policies_) {
            const size_t slash = key.find('/');
            const std::string_view k = key;
            if (now && !policies_is.count({k.substr(0, slash), k.substr(slash + 1)})) return fail("BackendTLSPolicy " + key + " has no status");
        }
    }
    std::map<std::pair<std::string_view, std::string>, std::map<std::string, int>> attached;  // (kind, key) -> listener -> delta
    for (size_t i = 0; i < others_was.size(); i++) {
        const ObjectStatus &a = *others_was[i], &b = *others_is[i];
        if (!same_status(a, b, false)) {
            return fail("it changes the status of " + std::string(a.kind) + " " + a.meta.namespace_ + "/" + a.meta.name);
        }
        for (size_t l = 0; l < a.listeners.size(); l++) {
            if (const int delta = b.listeners[l].attached_routes - a.listeners[l].attached_routes) {
                auto &deltas = attached[{a.kind, a.meta.namespace_ + "/" + a.meta.name}];
                if ((deltas[a.listeners[l].name] += delta) == 0) deltas.erase(a.listeners[l].name);
                if (deltas.empty()) attached.erase({a.kind, a.meta.namespace_ + "/" + a.meta.name});
            }
        }
    }

    // the servers of other hostnames alike; those of these, table entries alone
    auto of_hosts = [&](const Server &s) { return !s.server_name.empty() && !is_wildcard(s.server_name) && hosts.count(s.server_name) > 0; };
    std::vector<const Server *> rest_was, rest_is;
    // a hostname's server{} of its own (where a wildcard route's server
    // would take its requests): as it was, before and after, its table
    // entry alone changing
    std::map<std::string, std::array<const Server *, 3>> own;  // by server_key(): was, is, the plan's
    size_t which = 0;
    for (const auto &[servers, rest] : {std::pair{&was.servers, &rest_was}, std::pair{&is.servers, &rest_is},
                                        std::pair{&plan->servers, (std::vector<const Server *> *)nullptr}}) {
        for (const Server &s : *servers) {
            if (!of_hosts(s)) {
                if (rest != nullptr) rest->push_back(&s);
            } else if (!s.in_table()) {
                return fail(s.server_name + " on " + s.listen + " is served by locations");
            } else if (!s.served_by_listener) {
                own[server_key(s)][which] = &s;
            }
        }
        which++;
    }
    for (const auto &[key, servers] : own) {
        const auto &[before, after, planned] = servers;
        if (before == nullptr || after == nullptr || planned == nullptr || !same_own_server(*before, *after)
            || !same_own_server(*after, *planned)) {
            return fail(key + ": a server{} of its own made, changed or gone");
        }
    }
    if (!std::equal(rest_was.begin(), rest_was.end(), rest_is.begin(), rest_is.end(), [](const Server *a, const Server *b) {
            return a->listen == b->listen && a->server_name == b->server_name && a->table_json == b->table_json
                   && a->served_by_listener == b->served_by_listener && a->locations.size() == b->locations.size();
        })) {
        return fail("it changes the servers of other hostnames");
    }

    // backends nginx runs, as it runs them (one a spare holds, as the
    // spare holds it, its rules naming the spare); one new to it (as the
    // routes are now) in a free spare's place, as assign_spares would put it
    std::vector<const Upstream *> new_backends;
    std::set<std::string> tls_turned;               // of them, nginx runs in another mode
    std::map<std::string, std::string> held_names;  // backend, its spare: named now
    std::set<std::string> held_before;              // named before
    for (const Plan *p : {&is, &was}) {
        for (const Upstream &u : p->upstreams) {
            if (u.tenant == kSpareTenant) continue;
            // (a spare's before nginx's own upstream{} of the name, which
            // it may still run in another mode, serving nothing)
            auto at = upstream_at_.find(u.name);
            if (spares != nullptr && spares->count(u.name)) {
                auto spare = upstream_at_.find(spares->at(u.name));
                if (spare == upstream_at_.end()
                    || !same_upstream(plan->upstreams[spare->second], holding(u, plan->upstreams[spare->second]))) {
                    return fail("it changes backend " + u.name + ", held by a spare");
                }
                if (p == &is) {
                    held_names.emplace(u.name, spare->first);
                } else {
                    held_before.insert(u.name);
                }
                continue;
            }
            if (at == upstream_at_.end() && p == &is && spares != nullptr) {
                new_backends.push_back(&u);
                continue;
            }
            if (at == upstream_at_.end()) return fail("backend " + u.name + " is new to nginx");
            // (a policy made or deleted turns its TLS on or off: a spare of
            // that kind holds it, as assign_spares would give it one)
            if (p == &is && spares != nullptr && !pending_policies_.empty()
                && plan->upstreams[at->second].tls() != u.tls()) {
                new_backends.push_back(&u);
                tls_turned.insert(u.name);
                continue;
            }
            if (!same_upstream(plan->upstreams[at->second], u)) return fail("it changes backend " + u.name);
        }
    }
    // (its own upstream{} stays, in its old mode: no rule of another
    // hostname may still name it)
    for (const Server &s : plan->servers) {
        if (of_hosts(s) || !s.in_table()) continue;
        for (const std::string &backend : tls_turned) {
            if (names_backend(s.table_json, backend)) {
                return fail("backend " + backend + " turns TLS on or off, and " + s.server_name + "'s rules name it");
            }
        }
    }
    // (one these routes no longer name may be no route's: the whole way
    // would give its spare back, unless another hostname's rules name it)
    for (const std::string &backend : held_before) {
        if (held_names.count(backend)) continue;
        if (std::none_of(plan->servers.begin(), plan->servers.end(), [&](const Server &s) {
                return !of_hosts(s) && s.in_table() && names_backend(s.table_json, spares->at(backend));
            })) {
            return fail("a spare holds backend " + backend + ", which it may no longer need");
        }
    }
    std::vector<std::pair<size_t, const Upstream *>> to_hold;  // spare position, backend
    if (!new_backends.empty()) {
        std::map<std::string, size_t> free = free_spares(*plan, *spares);
        std::vector<std::pair<const Upstream *, Upstream>> swaps;
        for (const Upstream *u : new_backends) {
            auto spare = std::find_if(free.begin(), free.end(),
                                      [&](const auto &s) { return spare_can_hold(*u, plan->upstreams[s.second]); });
            if (spare == free.end()) {
                return fail("backend " + u->name + (tls_turned.count(u->name) ? " turns TLS on or off" : " is new to nginx")
                            + ", and no spare can hold it");
            }
            const Upstream &was_spare = plan->upstreams[spare->second];
            swaps.emplace_back(&was_spare, holding(*u, was_spare));
            to_hold.emplace_back(spare->second, u);
            free.erase(spare);
        }
        if (!room || !room(swaps)) return fail("a spare holding a backend new to nginx changes the servers' room");
    }

    // the servers of the hostnames replaced, in the plan's order
    std::vector<Server> kept, added;
    kept.reserve(plan->servers.size());
    for (Server &s : plan->servers) (of_hosts(s) ? out.replaced : kept).push_back(std::move(s));
    for (Server &s : is.servers) {
        if (of_hosts(s)) added.push_back(std::move(s));
    }
    // the backends spares hold, and those new to nginx in the spares'
    // places: their rules name the spares
    for (const auto &[backend, spare] : held_names) {
        for (Server &s : added) rename_backend(&s.table_json, backend, spare);
    }
    for (const auto &[index, u] : to_hold) {
        Upstream &spare = plan->upstreams[index];
        for (Server &s : added) rename_backend(&s.table_json, u->name, spare.name);
        (*spares)[u->name] = spare.name;
        out.held.push_back({index, spare, u->name, service_now(u->service), slices_of(u->service), tls_turned.count(u->name) > 0});
        spare = holding(*u, spare);
        if (spare.tls()) out.trust.push_back(spare.policy.get());
    }
    plan->servers.clear();
    std::merge(std::make_move_iterator(kept.begin()), std::make_move_iterator(kept.end()),
               std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()),
               std::back_inserter(plan->servers),
               [](const Server &a, const Server &b) { return server_key(a) < server_key(b); });
    for (const Server &s : plan->servers) {
        if (of_hosts(s)) out.servers.push_back(&s);
    }
    // the policies changed in their upstreams' and spares' places
    if (!pending_policies_.empty()) {
        for (const OutputFile *f : new_files) plan->files.push_back(*f);
        for (std::vector<Upstream> *upstreams : {&plan->upstreams, &plan->stream_upstreams}) {
            for (Upstream &u : *upstreams) {
                if (!u.policy) continue;
                if (auto it = policy_splice.replaced.find(u.policy.get()); it != policy_splice.replaced.end()) u.policy = it->second;
            }
        }
        for (const auto &[index, policy] : policy_splice.spares) plan->upstreams[index].policy = policy;
        if (!policy_splice.bundles.empty()) drop_unnamed_bundles(plan, std::move(policy_splice.bundles));
        for (const auto &[was, now] : policy_splice.replaced) out.trust.push_back(now.get());
        for (const auto &[index, policy] : policy_splice.spares) out.trust.push_back(policy.get());
    }

    // the statuses: the routes' replaced in their place, attachedRoutes
    // moved; every other status shared with the plan before
    std::vector<StatusList::Item> routes_now;
    for (const ObjectStatus &st : *is.statuses) {
        if (route_status(st)) routes_now.push_back(std::make_shared<const ObjectStatus>(interned(st, *plan->texts)));
    }
    const StatusList &old = *plan->statuses;
    StatusList statuses;
    statuses.reserve(old.size() + routes_now.size());
    out.status_from.reserve(old.size() + routes_now.size());
    size_t next = 0;
    bool in_routes = false;
    auto insert_routes = [&](const ObjectStatus *before) {
        for (; next < routes_now.size() && (before == nullptr || key_less(routes_now[next]->meta, before->meta)); next++) {
            out.status_from.push_back(-1);
            statuses.push_back(std::move(routes_now[next]));
        }
    };
    // the statuses of the policies made, among the policies' (the last)
    std::vector<const ObjectStatus *> made;
    for (const auto &[key, now] : pending_policies_) {
        const size_t slash = key.find('/');
        const std::string_view k = key;
        if (now && policies_.find(key) == nullptr) made.push_back(policies_is.at({k.substr(0, slash), k.substr(slash + 1)}));
    }
    std::sort(made.begin(), made.end(), [](const ObjectStatus *a, const ObjectStatus *b) { return key_less(a->meta, b->meta); });
    size_t next_made = 0;
    auto insert_made = [&](const ObjectStatus *before) {
        for (; next_made < made.size() && (before == nullptr || key_less(made[next_made]->meta, before->meta)); next_made++) {
            out.status_from.push_back(-1);
            statuses.push_back(std::make_shared<const ObjectStatus>(interned(*made[next_made], *plan->texts)));
        }
    };
    std::set<std::pair<std::string_view, std::string_view>> route_keys;  // (namespace, name) of the routes resolved
    for (const std::string &key : keys) {
        const std::string_view k = key;
        const size_t space = k.find(' '), slash = k.find('/', space);
        route_keys.emplace(k.substr(space + 1, slash - space - 1), k.substr(slash + 1));
    }
    for (size_t i = 0; i < old.size(); i++) {
        const ObjectStatus &st = old[i];
        if (route_status(st)) {
            in_routes = true;
            insert_routes(&st);
            if ((st.kind == "HTTPRoute" || st.kind == "GRPCRoute")
                && route_keys.count({std::string_view(st.meta.namespace_), std::string_view(st.meta.name)})
                && keys.count(std::string(st.kind) + " " + st.meta.namespace_ + "/" + st.meta.name)) {
                // resolved again: the same status stays what it was (and is
                // not offered as changed)
                if (next < routes_now.size() && same_status(*routes_now[next], st, true)) {
                    next++;
                    out.status_from.push_back(static_cast<int64_t>(i));
                    statuses.push_back(old.item(i));
                }
                continue;
            }
            out.status_from.push_back(static_cast<int64_t>(i));
            statuses.push_back(old.item(i));
            continue;
        }
        if (in_routes || st.refs_key == "ancestors") insert_routes(nullptr);
        if (st.refs_key == "ancestors") insert_made(&st);
        auto pending = st.refs_key == "ancestors" && !pending_policies_.empty()
                           ? pending_policies_.find(st.meta.namespace_ + "/" + st.meta.name)
                           : pending_policies_.end();
        if (pending != pending_policies_.end()) {
            if (!pending->second) continue;  // deleted: no status
            const ObjectStatus &now = *policies_is.at({std::string_view(st.meta.namespace_), std::string_view(st.meta.name)});
            if (same_status(now, st, true)) {
                out.status_from.push_back(static_cast<int64_t>(i));
                statuses.push_back(old.item(i));
            } else {
                out.status_from.push_back(-1);
                statuses.push_back(std::make_shared<const ObjectStatus>(interned(now, *plan->texts)));
            }
            continue;
        }
        auto delta = attached.empty() ? attached.end() : attached.find({st.kind, st.meta.namespace_ + "/" + st.meta.name});
        if (delta == attached.end()) {
            out.status_from.push_back(static_cast<int64_t>(i));
            statuses.push_back(old.item(i));
            continue;
        }
        ObjectStatus moved = st;
        for (auto &l : moved.listeners) {
            if (auto d = delta->second.find(l.name); d != delta->second.end()) l.attached_routes += d->second;
        }
        out.status_from.push_back(-1);
        statuses.push_back(std::make_shared<const ObjectStatus>(std::move(moved)));
    }
    insert_routes(nullptr);
    insert_made(nullptr);
    plan->statuses = std::make_shared<const StatusList>(std::move(statuses));

    // and the routes kept as they are now, and what they reach
    for (const auto &[key, n] : reached) {
        if (n > 0) {
            reached_[key] = static_cast<unsigned>(n);
        } else {
            reached_.erase(key);
        }
    }
    for (const auto &[key, now] : pending_) {
        routes_.replace(key, now, [&](const Route &r, bool add) { index_route(key, r, add); });
    }
    return out;
}

}  // namespace g2n
