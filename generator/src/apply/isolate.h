// apply: when nginx -t refuses what was rendered, the tenant objects at fault, so
// that the configuration is written without them and one tenant's object
// costs only that tenant (the Gateways and GatewayClasses are the
// operator's: a refusal without any tenant object is still fatal).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "model.h"
#include "plan.h"

namespace g2n {

// A tenant's object, by its kind and its place in Manifests.
struct TenantObject {
    enum class Kind {
        Secret, ConfigMap, ReferenceGrant, BackendTLSPolicy, Service, EndpointSlice, ListenerSet, StreamRoute, HTTPRoute
    };
    Kind kind;
    size_t index;  // in the Manifests vector of that kind
};

// Every tenant object, in the order they are added to a configuration
// nginx accepts: what routes refer to first, routes last, and in each kind
// the oldest first: the first met by gateway2nginx run (ObjectMeta::seen),
// then by creationTimestamp where the API server set it
// (Manifests::server_timestamps), then by namespace and name. An object that fails only beside another is blamed when
// it comes second: the newer of two, a route rather than the Service that
// other routes share (Gateway API's rule for conflicts: the oldest wins).
std::vector<TenantObject> tenant_objects(const Manifests &m);

// `m` with the given objects left out, each reported as rejected with its
// reason (FILE:LINE:COL: reason). A BackendTLSPolicy stays as an invalid
// policy: the traffic it was to protect fails closed, never plain.
struct Exclusion {
    TenantObject object;
    std::string why;
};
Manifests without(const Manifests &m, const std::vector<Exclusion> &excluded);

// Group testing over `count` objects. `refusal(included)` renders with
// exactly the included objects and says why nginx refuses it (nullopt
// when it accepts). Given that the configuration with every object is
// refused with `refusal_of_all` and the one with none is accepted, returns
// the objects at fault, each with the refusal that blamed it: every object
// not returned was included in a configuration nginx accepted, and all of
// those together are that configuration. About 2 d log2(count) checks for
// d objects at fault.
struct Refused {
    size_t index;
    std::string why;
};
std::vector<Refused> find_refused(size_t count, const std::string &refusal_of_all,
                                  const std::function<std::optional<std::string>(const std::vector<bool> &)> &refusal);

// gateway2nginx run's order of blame, which no tenant chooses: when it
// first met each tenant object (a creationTimestamp from a file is what
// its author wrote).
class FirstSeen {
public:
    // Sets meta.seen of every tenant object of *m: the number of the
    // configuration it first appeared in
    void stamp(Manifests *m);

private:
    struct Seen {
        uint64_t first = 0, last = 0;  // the configurations it was in first and last
    };
    // kept from one configuration to the next, not made again: the
    // objects of one that are not in the next go
    std::unordered_map<std::string, Seen> seen_;
    uint64_t configurations_ = 0;
};

// What nginx -t refused before, so that a change elsewhere costs no new
// search (gateway2nginx run). An object is known by what can change
// whether nginx takes it: its own document, every tenant object of its
// namespace and of the namespaces whose ReferenceGrants let it refer
// there, and the operator's objects (GatewayClasses, Gateways,
// Namespaces). While all of that is unchanged, an object refused is left
// out again without an nginx -t; after kRecheckRefused it is searched for
// again (an ExternalName may resolve by then).
class RefusalMemory {
public:
    static constexpr std::chrono::minutes kRecheckRefused{10};

    // The objects of `m` refused before and unchanged since, each with
    // the reason it was refused for
    std::vector<Exclusion> recall(const Manifests &m, std::chrono::steady_clock::time_point now) const;
    // What is refused now: recalled (known since it was found) and found
    // by a search (known from `now`); the rest is forgotten
    void remember(const Manifests &m, const std::vector<Exclusion> &recalled, const std::vector<Exclusion> &found,
                  std::chrono::steady_clock::time_point now);
    size_t size() const { return refused_.size(); }

private:
    struct Refusal {
        std::string why;
        std::chrono::steady_clock::time_point since;
    };
    std::map<std::string, Refusal> refused_;  // by refusal_keys()
};

// Each tenant object's key as RefusalMemory knows it, in tenant_objects() order.
std::vector<std::string> refusal_keys(const Manifests &m, const std::vector<TenantObject> &objects);

// Each tenant object's identity (kind, namespace, name) and content (its
// document's digest), in `objects`' order: an object of one configuration
// with the same identity and content in another is the same, unchanged.
struct ObjectVersion {
    std::string identity;
    size_t content;
};
std::vector<ObjectVersion> object_versions(const Manifests &m, const std::vector<TenantObject> &objects);

// Where the objects of `excluded` (and of `more`) are in Manifests
using ObjectPositions = std::set<std::pair<TenantObject::Kind, size_t>>;
ObjectPositions positions_of(const std::vector<Exclusion> &excluded, const std::vector<Exclusion> &more = {});

// Whether what is staged (resolved as `plan`) is taken: nullopt when it is,
// else why not. `last`: the configuration the search settles on, said
// aloud when refused.
using RefusalJudge = std::function<std::optional<std::string>(const Plan &plan, bool last)>;

// The judge refused the configuration of `manifests` without `left_out`
// (`refusal`): finds the tenant objects at fault among those `suspect`
// names (all when null; the others stay in every configuration judged),
// adds them to *found, each blamed as `refused_by` + " with it: " + the
// refusal that found it (the log counts the judge's `checks_of`: "nginx
// -t run(s)"), and stages the configuration without them and `left_out`.
// nullopt when the judge refuses even the configuration without any
// suspect (not a tenant's to fix). Every configuration judged holds all
// that an earlier one taken held: a judge that applies what it takes
// (a reload) moves only forward.
std::optional<Plan> stage_without_refused(const Manifests &manifests, const std::string &refusal,
                                          const Options &options, bool threads, const std::filesystem::path &staged,
                                          const std::vector<Exclusion> &left_out, std::vector<Exclusion> *found,
                                          const RefusalJudge &judge, const std::string &refused_by,
                                          const std::string &checks_of,
                                          const std::function<bool(const TenantObject &)> &suspect = nullptr);

// The search where the judge is `nginx` -t (with `running`, as
// nginx_refusal() checks it), `refused_by` "nginx -t refuses the
// configuration".
std::optional<Plan> stage_without_refused(const Manifests &manifests, const std::string &refusal,
                                          const Options &options, const std::string &nginx, bool threads,
                                          const std::filesystem::path &staged,
                                          const std::vector<Exclusion> &left_out = {},
                                          std::vector<Exclusion> *found = nullptr,
                                          const std::filesystem::path *running = nullptr);

}  // namespace g2n
