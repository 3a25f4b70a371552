#include "resolve/service_endpoints.h"

#include "plan/upstreams.h"

#include <algorithm>

namespace g2n {

ServiceEndpoints::ServiceEndpoints(const Manifests &manifests, const Plan &plan, const Options &options)
    : api_(options.upstream_api != "off"), options_(options), rules_(manifests, options),
      trusts_(trust_replaceable_policies(plan, options).size()),
      certificates_(replaceable_certificates(plan, options).size())
{
    std::unordered_map<std::string, const Service *> by_key;
    for (const Service &s : manifests.services) by_key.emplace(s.meta.key(), &s);  // the first wins, as in resolve
    for (const std::vector<Upstream> *upstreams : {&plan.upstreams, &plan.stream_upstreams}) {
        const bool stream = upstreams == &plan.stream_upstreams;
        for (size_t i = 0; i < upstreams->size(); i++) {
            const Upstream &u = (*upstreams)[i];
            if (replaceable(u, stream)) room_.add(u, stream);
            const auto svc = by_key.find(u.service);
            if (svc == by_key.end()) continue;
            auto [entry, added] = services_.try_emplace(u.service);
            if (added) services_kept_.view(u.service, *svc->second);
            entry->second.upstreams.push_back({stream, i});
        }
    }
    for (const EndpointSlice &es : manifests.endpoint_slices) {
        auto entry = services_.find(es.meta.namespace_ + "/" + es.service_name);
        if (entry == services_.end()) continue;
        if (!slices_.view(es.meta.key(), es)) usable_ = false;
        entry->second.slices.insert(es.meta.key());
    }
}

void ServiceEndpoints::slice_changed(const std::string &key, const EndpointSlice *slice)
{
    if (const EndpointSlice *old = slices_.find(key)) {
        const std::string service = old->meta.namespace_ + "/" + old->service_name;
        services_.at(service).slices.erase(key);
        changed_.insert(service);
        slices_.erase(key);
    }
    if (slice == nullptr) return;
    const std::string service = slice->meta.namespace_ + "/" + slice->service_name;
    auto entry = services_.find(service);
    if (entry == services_.end()) return;  // no upstream of the plan reads it
    slices_.copy(key, *slice);
    entry->second.slices.insert(key);
    changed_.insert(service);
}

void ServiceEndpoints::service_changed(const std::string &key, const Service *service)
{
    if (!services_.count(key)) return;  // no upstream of the plan reads it
    if (service == nullptr) {
        services_changed_.insert_or_assign(key, std::nullopt);
    } else {
        services_changed_.insert_or_assign(key, *service);
    }
}

ServiceEndpoints::Update ServiceEndpoints::update(Plan *plan)
{
    Update update;
    // a Service changed: its upstreams' servers, with the slices as they
    // are, the same by its new ports as by its old
    for (auto &[key, now] : services_changed_) {
        if (!now) {
            update.needs_resolve = true;
            break;
        }
        const ServiceEntry &entry = services_.at(key);
        std::vector<const EndpointSlice *> slices;
        for (const std::string &slice : entry.slices) slices.push_back(slices_.find(slice));
        auto servers = [&](const Service &service, const Upstream &u) -> std::optional<std::vector<std::string>> {
            const auto port = std::find_if(service.ports.begin(), service.ports.end(),
                                           [&](const ServicePort &p) { return p.port == u.service_port; });
            if (port == service.ports.end()) return std::nullopt;
            return service_port_servers(service, *port, slices, rules_, options_,
                                        [](const std::string &, const std::string &, const std::string &) {});
        };
        for (const UpstreamRef &ref : entry.upstreams) {
            const Upstream &u = (ref.stream ? plan->stream_upstreams : plan->upstreams).at(ref.index);
            const auto after = servers(*now, u);
            if (!after || after != servers(*services_kept_.find(key), u)) update.needs_resolve = true;
        }
    }
    if (update.needs_resolve) {
        services_changed_.clear();
        changed_.clear();
        return update;
    }
    for (auto &[key, now] : services_changed_) services_kept_.copy(key, *now);
    services_changed_.clear();
    struct NewServers {
        Upstream *upstream;
        bool stream;
        std::vector<std::string> servers;
    };
    std::vector<NewServers> news;
    Room room = room_;
    for (const std::string &key : changed_) {
        const ServiceEntry &entry = services_.at(key);
        const Service &service = *services_kept_.find(key);
        std::vector<const EndpointSlice *> slices;
        for (const std::string &slice : entry.slices) slices.push_back(slices_.find(slice));
        for (const UpstreamRef &ref : entry.upstreams) {
            Upstream &u = (ref.stream ? plan->stream_upstreams : plan->upstreams).at(ref.index);
            const auto port = std::find_if(service.ports.begin(), service.ports.end(),
                                           [&](const ServicePort &p) { return p.port == u.service_port; });
            if (port == service.ports.end()) {
                update.needs_resolve = true;
                continue;
            }
            std::vector<std::string> servers = service_port_servers(
                service, *port, slices, rules_, options_,
                [&](const std::string &owner, const std::string &endpoint, const std::string &why) {
                    update.warnings.push_back(owner + ": endpoint " + endpoint + " is not served: it " + why);
                });
            if (servers == u.servers) continue;
            Upstream after = u;
            after.servers = servers;
            if (!replaceable(u, ref.stream) || !replaceable(after, ref.stream)) update.needs_resolve = true;
            room.remove(u, ref.stream);
            room.add(after, ref.stream);
            news.push_back({&u, ref.stream, std::move(servers)});
        }
    }
    changed_.clear();
    std::sort(update.warnings.begin(), update.warnings.end());
    update.warnings.erase(std::unique(update.warnings.begin(), update.warnings.end()), update.warnings.end());
    if (update.needs_resolve || !same_sizes(room, room_)) {
        update.needs_resolve = true;
        return update;
    }
    room_ = std::move(room);
    for (NewServers &n : news) {
        n.upstream->servers = std::move(n.servers);
        (n.stream ? update.stream_changed : update.changed).push_back(n.upstream);
    }
    return update;
}

bool ServiceEndpoints::same_room(const std::vector<std::pair<const Upstream *, Upstream>> &swaps) const
{
    Room room = room_;
    for (const auto &[before, after] : swaps) {
        if (!replaceable(*before, false) || !replaceable(after, false)) return false;
        room.remove(*before, false);
        room.add(after, false);
    }
    return same_sizes(room, room_);
}

void ServiceEndpoints::hold(size_t index, const Upstream &spare, const Upstream &held, const Service &service,
                            const std::vector<const EndpointSlice *> &slices)
{
    room_.remove(spare, false);
    room_.add(held, false);
    const std::string key = service.meta.key();
    auto [entry, added] = services_.try_emplace(key);
    if (added) services_kept_.copy(key, service);
    entry->second.upstreams.push_back({false, index});
    for (const EndpointSlice *slice : slices) {
        if (slice == nullptr || slices_.find(slice->meta.key()) != nullptr) continue;
        slices_.copy(slice->meta.key(), *slice);
        entry->second.slices.insert(slice->meta.key());
    }
}

bool ServiceEndpoints::replaceable(const Upstream &u, bool stream) const
{
    return api_ && (stream ? stream_api_replaceable(u) : api_replaceable(u));
}

void ServiceEndpoints::Room::add(const Upstream &u, bool stream)
{
    const size_t lines = zone_server_lines(u);
    (stream ? stream_lines : http_lines)[u.tenant] += lines;
    upstreams++;
    server_lines += lines;
}

void ServiceEndpoints::Room::remove(const Upstream &u, bool stream)
{
    const size_t lines = zone_server_lines(u);
    (stream ? stream_lines : http_lines)[u.tenant] -= lines;
    upstreams--;
    server_lines -= lines;
}

bool ServiceEndpoints::same_sizes(const Room &a, const Room &b) const
{
    // each tenant's zone: sized by its server lines, rounded
    auto same_zones = [](const std::map<std::string, size_t> &x, const std::map<std::string, size_t> &y) {
        return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto &p, const auto &q) {
            return p.first == q.first && servers_zone_kilobytes(p.second) == servers_zone_kilobytes(q.second);
        });
    };
    return same_zones(a.http_lines, b.http_lines) && same_zones(a.stream_lines, b.stream_lines)
           && upstream_api_room(a.upstreams, a.server_lines, trusts_, certificates_)
                  == upstream_api_room(b.upstreams, b.server_lines, trusts_, certificates_);
}

}  // namespace g2n
