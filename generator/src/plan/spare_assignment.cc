#include "plan/spare_assignment.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "plan/upstreams.h"

namespace g2n {

namespace {

// how a route table rule (render/route_tables.cc) names its backend
std::string backend_member(const std::string &name) { return "\"backend\":\"" + name + "\""; }

// The upstreams rendered locations name: they would need a reload anyway
std::set<std::string> named_by_locations(const Plan &plan)
{
    std::set<std::string> names;
    auto add = [&](const std::vector<WeightedUpstream> &backends) {
        for (const WeightedUpstream &b : backends) names.insert(b.upstream);
    };
    for (const Server &s : plan.servers) {
        if (s.in_table()) continue;
        for (const Location &l : s.locations) {
            add(l.backends);
            for (const ConditionalTarget &t : l.conditional) add(t.backends);
            for (const Mirror &m : l.mirrors) names.insert(m.backend.upstream);
        }
    }
    return names;
}

void rename_in_tables(Plan *plan, const std::string &from, const std::string &to)
{
    for (Server &s : plan->servers) {
        if (s.in_table()) rename_backend(&s.table_json, from, to);
    }
}

}  // namespace

bool names_backend(const std::string &table_json, const std::string &name)
{
    return table_json.find(backend_member(name)) != std::string::npos;
}

void rename_backend(std::string *table_json, const std::string &from, const std::string &to)
{
    const std::string was = backend_member(from), now = backend_member(to);
    for (size_t at = table_json->find(was); at != std::string::npos; at = table_json->find(was, at + now.size())) {
        table_json->replace(at, was.size(), now);
    }
}

bool spare_can_hold(const Upstream &u, const Upstream &spare)
{
    if (u.tls() != spare.tls() || !api_replaceable(u)) return false;
    if (!u.tls()) return true;
    // the mode is the spare's (strict): the API sets trust and names, never
    // a mode nor a client certificate
    return u.policy->mode == spare.policy->mode && trust_replaceable(*u.policy)
           && u.policy->client_certificate.empty();
}

Upstream holding(const Upstream &u, const Upstream &spare)
{
    Upstream held = u;
    held.name = spare.name;
    held.comment = spare.comment;
    held.tenant = spare.tenant;
    held.for_http = spare.for_http;
    held.for_grpc = spare.for_grpc;
    if (u.tls()) {
        auto policy = std::make_shared<UpstreamPolicy>(*u.policy);
        policy->name = spare.policy->name;
        policy->names_pushed = true;
        held.policy = std::move(policy);
    }
    return held;
}

std::map<std::string, size_t> free_spares(const Plan &plan, const SpareAssignment &held)
{
    std::set<std::string> holding;
    for (const auto &[upstream, spare] : held) holding.insert(spare);
    std::map<std::string, size_t> spares;
    for (size_t i = 0; i < plan.upstreams.size(); i++) {
        const Upstream &u = plan.upstreams[i];
        if (u.tenant == kSpareTenant && !holding.count(u.name)) spares.emplace(u.name, i);
    }
    return spares;
}

SpareAssignment assign_spares(Plan *plan, const std::set<std::string> &running, const SpareAssignment &kept,
                              const std::vector<Upstream> *running_upstreams)
{
    std::vector<Upstream> &upstreams = plan->upstreams;
    // (as resolve made it, no spare holds anything yet)
    std::map<std::string, size_t> free = free_spares(*plan, {});
    if (free.empty()) return {};
    const std::set<std::string> rendered = named_by_locations(*plan);
    std::map<std::string, const Upstream *> runs;  // nginx's own upstream{} of that name
    if (running_upstreams != nullptr) {
        for (const Upstream &r : *running_upstreams) {
            if (r.tenant != kSpareTenant) runs.emplace(r.name, &r);
        }
    }
    // those kept first, in their spares; then the new ones, and those
    // whose TLS the plan turns on or off, in name order
    std::vector<std::pair<size_t, std::string>> wanted;  // upstream index, its spare ("": any)
    for (size_t i = 0; i < upstreams.size(); i++) {
        const Upstream &u = upstreams[i];
        if (u.tenant == kSpareTenant || rendered.count(u.name)) continue;
        auto k = kept.find(u.name);
        auto r = runs.find(u.name);
        if (k != kept.end()) {
            wanted.emplace(wanted.begin(), i, k->second);
        } else if (!running.count(u.name) || (r != runs.end() && r->second->tls() != u.tls())) {
            wanted.emplace_back(i, "");
        }
    }
    SpareAssignment assigned;
    std::vector<size_t> taken;  // upstreams now held by spares
    for (const auto &[index, spare_name] : wanted) {
        const Upstream &u = upstreams[index];
        auto spare = free.end();
        if (!spare_name.empty()) {
            spare = free.find(spare_name);
        } else {
            spare = std::find_if(free.begin(), free.end(),
                                 [&](const auto &s) { return spare_can_hold(u, upstreams[s.second]); });
        }
        if (spare == free.end() || !spare_can_hold(u, upstreams[spare->second])) continue;
        assigned.emplace(u.name, spare->first);
        rename_in_tables(plan, u.name, spare->first);
        upstreams[spare->second] = holding(u, upstreams[spare->second]);
        taken.push_back(index);
        free.erase(spare);
    }
    // (one nginx runs an upstream{} of stays as it runs it, serving nothing)
    std::sort(taken.begin(), taken.end());
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
        auto r = runs.find(upstreams[*it].name);
        if (r != runs.end()) {
            upstreams[*it] = *r->second;
        } else {
            upstreams.erase(upstreams.begin() + static_cast<long>(*it));
        }
    }
    return assigned;
}

size_t retain_upstreams(Plan *plan, const std::vector<Upstream> &running)
{
    std::vector<Upstream> &upstreams = plan->upstreams;
    // resolve's upstreams in name order, the spares after them
    const auto own_end = std::find_if(upstreams.begin(), upstreams.end(),
                                      [](const Upstream &u) { return u.tenant == kSpareTenant; });
    std::set<std::string> names;
    for (auto it = upstreams.begin(); it != own_end; ++it) names.insert(it->name);
    // one whose CA bundle the plan no longer writes cannot stay: OUTDIR
    // would name a file it lacks
    std::set<std::string> files;
    for (const OutputFile &f : plan->files) files.insert(f.path);
    auto files_written = [&](const Upstream &u) {
        return !u.tls() || u.policy->ca.empty() || u.policy->ca == "system" || files.count(u.policy->ca) > 0;
    };
    std::vector<Upstream> dropped;
    for (const Upstream &u : running) {
        if (u.tenant != kSpareTenant && !names.count(u.name) && files_written(u)) dropped.push_back(u);
    }
    if (dropped.empty()) return 0;
    std::vector<Upstream> merged;
    merged.reserve(upstreams.size() + dropped.size());
    std::merge(std::make_move_iterator(upstreams.begin()), std::make_move_iterator(own_end),
               std::make_move_iterator(dropped.begin()), std::make_move_iterator(dropped.end()),
               std::back_inserter(merged), [](const Upstream &a, const Upstream &b) { return a.name < b.name; });
    const size_t kept = dropped.size();
    for (auto it = own_end; it != upstreams.end(); ++it) merged.push_back(std::move(*it));
    upstreams = std::move(merged);
    return kept;
}

}  // namespace g2n
