// What EndpointSlice changes do to a Plan resolve made: the servers of the
// upstreams of the Services they name, recomputed as resolve computes them
// (service_port_servers), with nothing else read again. gateway2nginx run
// applies an endpoint change this way in time that does not grow with the
// routes; whatever would change more than servers the upstream API
// replaces is left to resolve.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "resolve/endpoints.h"
#include "resolve/kept_objects.h"

namespace g2n {

class ServiceEndpoints {
public:
    // `plan` is what resolve made of `manifests` with `options`; update()
    // is given that plan (or what update() made of it) and nothing else.
    // It views manifests' Services and EndpointSlices: they must stay, or
    // be followed (follow(), copy_objects()).
    ServiceEndpoints(const Manifests &manifests, const Plan &plan, const Options &options);

    // manifests' objects are where `moved` says now (given back to the
    // document cache); false when one went nowhere: it is not usable.
    bool follow(const MovedObjects &moved) { return services_kept_.follow(moved) && slices_.follow(moved); }
    // manifests' objects are about to go: it copies those it views.
    void copy_objects()
    {
        services_kept_.copy_viewed();
        slices_.copy_viewed();
    }
    // the slice it holds under `key`, null if none (for tests)
    const EndpointSlice *slice(const std::string &key) const { return slices_.find(key); }

    // False when the manifests cannot be followed by key (two
    // EndpointSlices of one name, as files may hold): resolve it is.
    bool usable() const { return usable_; }

    // The slice called `key` ("namespace/name") is now `slice`, or is gone
    // (null).
    void slice_changed(const std::string &key, const EndpointSlice *slice);
    // The Service `key` is now `service`, or is gone (null): an upstream
    // of it keeps its servers only if the Service gives it the same ones
    // (the routes naming it are RouteChanges')
    void service_changed(const std::string &key, const Service *service);

    struct Update {
        // the change needs resolve: an upstream whose servers changed is
        // rendered with them (not replaceable before or after), a zone
        // the servers fill would change size, or a Service of upstreams
        // gone or giving them other servers. *plan is left as it was.
        bool needs_resolve = false;
        std::vector<const Upstream *> changed, stream_changed;  // in *plan
        std::vector<std::string> warnings;  // endpoints left out, of the Services recomputed
    };
    // The servers of the upstreams of every Service a slice_changed() named
    // since the last update(), recomputed in *plan.
    Update update(Plan *plan);

    // Whether the servers' room stays as it is with each upstream of
    // `swaps` as it would be (a spare holding a backend)
    bool same_room(const std::vector<std::pair<const Upstream *, Upstream>> &swaps) const;
    // plan.upstreams[index], a spare that was `spare`, holds `held` now,
    // the servers of `service` (its `slices`): its slices' changes reach it
    void hold(size_t index, const Upstream &spare, const Upstream &held, const Service &service,
              const std::vector<const EndpointSlice *> &slices);

private:
    struct UpstreamRef {
        bool stream;
        size_t index;
    };
    struct ServiceEntry {
        std::set<std::string> slices;  // keys
        std::vector<UpstreamRef> upstreams;
    };
    // the servers' share of the skeleton: what render sizes by them
    struct Room {
        std::map<std::string, size_t> http_lines, stream_lines;  // by tenant, replaceable upstreams
        size_t upstreams = 0, server_lines = 0;

        void add(const Upstream &u, bool stream);
        void remove(const Upstream &u, bool stream);
    };
    bool replaceable(const Upstream &u, bool stream) const;
    bool same_sizes(const Room &a, const Room &b) const;

    bool usable_ = true;
    bool api_;
    Options options_;
    EndpointRules rules_;
    size_t trusts_ = 0, certificates_ = 0;  // that the API replaces
    std::unordered_map<std::string, ServiceEntry> services_;  // those the plan's upstreams use
    KeptObjects<Service> services_kept_;                      // the same, by key
    KeptObjects<EndpointSlice> slices_;                       // theirs, by key
    std::set<std::string> changed_;                           // Services
    std::map<std::string, std::optional<Service>> services_changed_;  // service_changed() since update()
    Room room_;
};

}  // namespace g2n
