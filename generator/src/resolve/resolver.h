// The Resolver: one pass over the objects that makes the Plan. Its members
// are defined by concern in the files named below (resolve/ for Gateway
// API semantics, plan/ for the nginx shape they take); this header is
// private to those files.
#pragma once

#include <algorithm>
#include <cctype>
#include <utility>
#include <deque>
#include <set>
#include <mutex>
#include <unordered_set>
#include <optional>
#include <string>
#include <vector>

#include "resolve/conditions.h"
#include "resolve/endpoints.h"
#include "resolve/resolve.h"

namespace g2n {

// Whether hostname `name` (exact, or itself a wildcard) lies strictly below
// wildcard `wild` ("*.example.com" covers "a.example.com" and "*.a.example.com").
bool wildcard_covers(const std::string &wild, const std::string &name);
// A hostname "*.suffix"
inline bool is_wildcard(const std::string &host) { return !host.empty() && host[0] == '*'; }

// Gateway API hostname intersection: the more specific of the two, or
// nothing. An empty hostname matches anything.
bool intersect(const std::string &listener, const std::string &route, std::string *out);

// What an HTTPRoute rule's filters and its backendRefs' filters come to:
// the filters of its location and, per backendRef, the request headers of
// requests sent there. A filter on a rule's only backendRef acts as the
// rule's own; of several backendRefs', only RequestHeaderModifier is
// rendered (a map over the backend the split chose).
struct RuleFilters {
    std::vector<RouteFilter> location;
    std::vector<HeaderModifier> per_backend;  // by backendRef
    std::string unsupported;                  // why the rule cannot be served as written
};

// The header names H touches, lowercased (header names are case-insensitive).
std::vector<std::string> lowercase_header_names(const HeaderModifier &h);

// A CORS filter answers for the Access-Control-* response headers: a
// ResponseHeaderModifier of the same location may not name one.
void check_cors_headers(RuleFilters *out);

RuleFilters rule_filters(const RouteRule &rule);

RuleFilters rule_filters_of(const RouteRule &rule);

// Whether a rule sets anything on its location beyond where requests go:
// filters (its own or its backendRefs') or timeouts.
bool has_location_settings(const RouteRule &rule);
// The same of a location an unconditional rule made: what its rule's
// settings became (filters, a backend's own filter, timeouts, retries,
// mirrors), which would act on a conditional rule sharing its path
bool location_has_settings(const Location &l);

// Why a route cannot be served as written (a rule, a filter or a match
// this renders no way), else "".
std::string route_unsupported(const Route &r);

// Upstreams by name, in the order first used; handed to the plan sorted by
// name, without a second copy.
class UpstreamTable {
public:
    // the upstream called `name`, and whether it was just added
    std::pair<Upstream *, bool> get(const std::string &name)
    {
        auto [slot, added] = position_.try_emplace(name, list_.size());
        if (added) list_.emplace_back();
        return {&list_[slot->second], added};
    }

    // room for n: grown by doubling, 10,000 upstreams took room for 16,384
    void reserve(size_t n)
    {
        list_.reserve(n);
        position_.reserve(n);
    }

    // all of them, sorted by name; the table is left empty
    std::vector<Upstream> take_sorted()
    {
        position_ = {};
        sort_by_position(list_, [](const Upstream &a, const Upstream &b) { return a.name < b.name; });
        return std::exchange(list_, {});
    }

private:
    std::vector<Upstream> list_;
    std::unordered_map<std::string, size_t> position_;
};

// What a backendRef feeds: the upstream's block and whether a
// BackendTLSPolicy applies to it.
// Mirror: a RequestMirror's backend, which only proxy_pass can reach (a
// mirror's subrequest carries the request line by proxy_pass's URI, which
// grpc_pass has not)
enum class BackendTarget { Http, Mirror, Grpc, StreamTerminate, StreamPassthrough };

class Resolver {
public:
    Resolver(const Manifests &m, const Options &o, Plan *plan, ResolveReads *reads)
        : m_(m), o_(o), plan_(plan), objects_(m, reads), policies_(resolve_policies(m, objects_, plan)), endpoint_rules_(m, o) {}
    void run();

private:
    // Where a Gateway listens (spec.addresses): one IP address, given or
    // assigned (the --listen-address); other types are not supported, and
    // an address this host does not have cannot be listened on (nginx
    // would refuse the whole configuration).
    struct GatewayAddress {
        std::string address;
        std::optional<Condition> refused;  // Accepted=False or Programmed=False
    };

    // 127.254.0.1 .. 127.254.255.255
    static constexpr size_t kMaxTerminateHops = 65535;

    // resolve/gateways.cc
    void select_gateways();
    const GatewayAddress &gateway_address(const Gateway &gw);
    ListenerState resolve_listener(const Gateway &gw, const ListenerSet *set, const Listener &l);
    SecretFiles resolve_certificate(const Listener &l, ListenerState *s);
    bool claimed_by_a_more_specific_listener(const ListenerState &ls, const std::string &host) const;
    void isolate_listener_hostnames();
    bool namespace_allowed(const ListenerState &ls, const std::string &ns) const;
    bool namespace_admitted(const std::string &from, const LabelSelector &selector, const std::string &same,
                            const std::string &ns) const;
    void gateway_statuses();
    GatewayService gateway_service(const Gateway &gw) const;

    // resolve/listener_sets.cc
    void select_listener_sets();
    void resolve_listeners();
    void listener_set_statuses();

    // resolve/claims.cc
    void claim_hostnames(const std::vector<const Route *> &routes);
    // the Gateway whose listener has the best claim on HOST at LS's socket
    const Gateway *host_owner(const ListenerState &ls, const std::string &host) const;

    // resolve/attach.cc
    // the Gateway a parentRef names, if ours, and whether routes may
    // attach through it (a ListenerSet its Gateway admits)
    struct RouteParent {
        const Gateway *gateway = nullptr;
        const ListenerSet *set = nullptr;  // a ListenerSet parent
        bool allowed = false;
    };
    RouteParent route_parent(const Route &r, const ParentRef &ref) const;
    // the listeners of a parent a route attaches to, with each hostname
    // it would serve there; or why none
    struct RouteHosts {
        std::vector<Condition> refused;
        std::vector<std::pair<ListenerState *, std::string>> hosts;
        std::set<std::pair<ListenerState *, std::string>> isolated;  // a more specific listener's
    };
    RouteHosts route_hosts(const Route &r, const ParentRef &ref, const Gateway &gw, const ListenerSet *set);
    void rejected_statuses(std::vector<StatusList::Item> *route_statuses);
    ObjectStatus attach_route(const Route &r);
    std::vector<Condition> attach_to_gateway(const Route &r, const ParentRef &ref, const Gateway &gw,
                                             const ListenerSet *set, const std::string &unsupported);
    Server &server_for(const ListenerState &ls, const std::string &host);
    void add_stream_route(const ListenerState &ls, const Route &r, const std::string &host,
                       const Gateway &gw, Condition *refs);
    void add_rule(Server &server, const Route &r, const RouteRule &rule, size_t index,
                  const Gateway &gw, Condition *refs);

    // resolve/backends.cc
    const ServicePort *referenced_port(const Route &r, const BackendRef &b, const Service **svc_out,
                                       Condition *refs) const;
    bool resolve_backend(const Route &r, const BackendRef &b, const Gateway &gw, BackendTarget target,
                         WeightedUpstream *out, Condition *refs, int tries = 1);
    std::string upstream_for(const Service &svc, const ServicePort &port, const BoundPolicy *policy,
                             BackendTarget target, const Gateway *denied_by, int tries = 1);

    // plan/http_servers.cc
    void finish_servers();

    // plan/stream_servers.cc
    void finish_stream_servers();
    void put_behind(StreamServer *front, StreamServer *terminate, const std::set<std::string> &hostnames, size_t n);
    void drop_passthrough_of_terminate_hostnames(StreamServer *front);

    const Manifests &m_;
    const Options &o_;
    Plan *plan_;
    StatusList statuses_;  // the plan's, once all are made
    ObjectIndex objects_;
    PolicyIndex policies_;
    EndpointRules endpoint_rules_;
    std::set<std::string> endpoints_refused_;  // "slice address:port", warned once
    std::vector<const Gateway *> gateways_;
    std::vector<ListenerState> listeners_;
    // each Gateway's listeners: [first, last) of listeners_, where run()
    // adds them together (looked up per route and per listener: a scan of
    // every Gateway's listeners would grow with the number of Gateways)
    std::unordered_map<const Gateway *, std::pair<size_t, size_t>> listener_ranges_;

    template <typename T>
    struct ListenerRange {
        T *first, *last;
        T *begin() const { return first; }
        T *end() const { return last; }
    };
    ListenerRange<ListenerState> listeners_of(const Gateway &gw)
    {
        auto it = listener_ranges_.find(&gw);
        if (it == listener_ranges_.end()) return {nullptr, nullptr};
        return {listeners_.data() + it->second.first, listeners_.data() + it->second.second};
    }
    ListenerRange<const ListenerState> listeners_of(const Gateway &gw) const
    {
        auto it = listener_ranges_.find(&gw);
        if (it == listener_ranges_.end()) return {nullptr, nullptr};
        return {listeners_.data() + it->second.first, listeners_.data() + it->second.second};
    }
    // GEP-1713: the ListenerSets whose parent is one of our Gateways, by
    // Gateway and, of one Gateway, in precedence order (the oldest first)
    struct ListenerSetState {
        const ListenerSet *set = nullptr;
        const Gateway *gateway = nullptr;
        bool allowed = false;        // its Gateway's allowedListeners admits its namespace
        size_t first = 0, last = 0;  // its listeners in listeners_, when allowed
    };
    std::vector<ListenerSetState> listener_sets_;
    std::unordered_map<std::string, size_t> listener_set_by_key_;  // "ns/name" -> position in listener_sets_
    // its listeners served: none, and it is not accepted
    size_t served_listeners(const ListenerSetState &s) const
    {
        return static_cast<size_t>(std::count_if(listeners_.begin() + s.first, listeners_.begin() + s.last,
                                                 [](const ListenerState &ls) { return ls.usable; }));
    }
    const ListenerSetState *listener_set(const std::string &ns, const std::string &name) const
    {
        auto it = listener_set_by_key_.find(ns + "/" + name);
        return it == listener_set_by_key_.end() ? nullptr : &listener_sets_[it->second];
    }

    // hashed, not ordered: one per hostname, and looked up for every
    // route; finish_servers() hands them to the plan in key order
    std::unordered_map<std::string, Server> servers_;                // by "listen host"
    std::unordered_map<std::string, const ListenerState *> host_claims_;  // claim_key() -> best claim
    std::map<std::string, GatewayAddress> gateway_addresses_;       // Gateway key -> where it listens
    std::unordered_map<const Server *, std::unordered_map<std::string, size_t>> location_index_;
    UpstreamTable upstreams_;
    std::map<std::pair<std::string, bool>, StreamServer> stream_servers_;  // by listen and Terminate
    // each stream server's route hostnames, and the route that has each
    std::map<std::pair<std::string, bool>, std::unordered_map<std::string, std::string>> stream_route_sources_;
    // listen -> listener hostname -> (certificate, key) of its Terminate listeners
    std::map<std::string, std::map<std::string, std::pair<std::string, std::string>>> stream_certificates_;
    std::map<std::string, std::set<std::string>> terminate_hostnames_;  // by listen: Terminate listeners' hostnames
    UpstreamTable stream_upstreams_;
    std::set<std::string> written_;
    std::map<std::string, BackendClientCertificate> backend_clients_;  // by Gateway
    std::map<std::string, Condition> gateway_refs_;                    // ResolvedRefs, by Gateway
};

}  // namespace g2n
