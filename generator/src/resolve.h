// resolve: attaches routes to listeners and policies to Services, resolves
// references, settles conflicts, and computes every condition.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

// One Gateway listener as resolve sees it.
struct ListenerState {
    const Gateway *gateway = nullptr;
    const Listener *listener = nullptr;
    bool usable = false;
    std::string listen;
    std::string category;  // what the listen socket speaks: HTTP, HTTPS, TLS/Passthrough, TLS/Terminate
    std::string certificate, certificate_key;
    ObjectStatus::ListenerStatus status;
};

// ---- resolve_match.cc: HTTPRoute matches as nginx locations ----------------

bool is_conditional(const RouteMatch &m);
// The conditions of a match as nginx variables and anchored regexes (into
// *out when not null), or why they cannot be rendered.
std::string match_conditions(const RouteMatch &m, std::vector<MatchCondition> *out);
std::string regex_quote(const std::string &text);
// What follows `location` for a path match.
std::vector<std::string> location_matches(const RouteMatch &m);
// Gateway API precedence among a path's rules, and a stable location order.
void order_locations(Server *server);

// ---- resolve_stream.cc: TLS listeners ----------------------------------------

// One listen socket speaks one protocol (and, for TLS, one mode).
void settle_protocol_conflicts(std::vector<ListenerState> &listeners);
// The certificate, proxy_ssl and route order of one stream server, once
// every route is in; certificates: listener hostname -> (certificate, key).
void finish_stream_server(StreamServer *server,
                          const std::map<std::string, std::pair<std::string, std::string>> &certificates,
                          std::vector<std::string> *warnings);

}  // namespace g2n
