// resolve: attaches routes to listeners and policies to Services, resolves
// references, settles conflicts, and computes every condition.
#pragma once

#include <map>
#include <set>
#include <string>

#include "model.h"
#include "plan.h"

namespace g2n {

Plan resolve(const Manifests &manifests, const Options &options);

// ---- shared between resolve.cc and resolve_policy.cc ----------------------

// Objects by "namespace/name" (EndpointSlices by "namespace/service"), so
// that resolving stays linear in the size of the input.
struct ObjectIndex {
    std::map<std::string, const Service *> services;
    std::map<std::string, const ConfigMap *> config_maps;
    std::map<std::string, const Secret *> secrets;
    std::map<std::string, std::vector<const EndpointSlice *>> endpoint_slices;

    explicit ObjectIndex(const Manifests &m);

    template <typename T>
    static const T *find(const std::map<std::string, const T *> &by_key, const std::string &ns,
                         const std::string &name)
    {
        auto it = by_key.find(ns + "/" + name);
        return it == by_key.end() ? nullptr : it->second;
    }
};

// The policy that governs one Service port, after conflicts.
struct BoundPolicy {
    const BackendTLSPolicy *policy = nullptr;
    bool usable = false;            // false: its traffic gets a 5xx
    UpstreamPolicy upstream;        // the module directives
    std::set<std::string> ancestors;  // gateways "ns/name" whose routes reach it
};

struct PolicyIndex {
    // "ns/service/portName" for a port policy, "ns/service/" for a whole one
    std::map<std::string, BoundPolicy *> by_target;
    std::map<std::string, BoundPolicy> by_policy;  // "ns/name"
    std::map<std::string, std::vector<Condition>> conditions;  // "ns/name"
    // Gateways whose spec.tls.backend.validation.mode is AllowInsecureVerification
    std::set<std::string> insecure_allowed;
    // every policy that names a Service, conflicts included: (section, policy)
    std::map<std::string, std::vector<std::pair<std::string, BoundPolicy *>>> naming;

    // Records that a route of `gateway` reaches this Service port: the
    // Gateway becomes an ancestor of each policy naming it.
    void reached(const std::string &ns, const std::string &service, const std::string &port_name,
                 const std::string &gateway);

    // The policy for a Service port: the port's own, else the Service's.
    BoundPolicy *find(const std::string &ns, const std::string &service,
                      const std::string &port_name);
};

PolicyIndex resolve_policies(const Manifests &manifests, const ObjectIndex &objects, Plan *plan);
void policy_statuses(const Manifests &manifests, PolicyIndex &index, Plan *plan);

// Conflict order of Gateway API: the oldest creationTimestamp first (an
// object without one last), then namespace/name.
bool older_first(const ObjectMeta &a, const ObjectMeta &b);

// A file name made only of safe characters, for certs/ and upstream names.
std::string safe_name(const std::string &text);

}  // namespace g2n
