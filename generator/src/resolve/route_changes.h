// What HTTPRoute and GRPCRoute changes do to a Plan resolve made (--routes
// table): the hostnames they touch resolved again with only the routes
// that serve those hostnames, and spliced into the plan as route table
// entries and statuses. A Service change is a change of the routes naming
// it (none: nothing to resolve); a ReferenceGrant's, of the routes naming
// a Service of its namespace from another; a BackendTLSPolicy's, of the
// routes naming the Services it targets, its trust and names pushed and
// its status written. gateway2nginx run applies a route change this way
// in time that grows with the routes of its hostnames, not with every
// route; whatever it would change beyond table entries, route statuses and
// attachedRoutes is left to resolve.
//
// The routes of a hostname are resolved twice, as they were and as they
// are, beside the Gateways, ListenerSets, Namespaces and ReferenceGrants
// and the Services, EndpointSlices, policies, ConfigMaps and Secrets those
// routes reach: what differs between the two is what the change does.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "plan/spare_assignment.h"
#include "resolve/kept_objects.h"
#include "resolve/trust_objects.h"
#include "resolve/resolve.h"

namespace g2n {

class RouteChanges {
public:
    // `plan` is what resolve made of `manifests` with `options`, looking up
    // `reads`; update() is given that plan (or what update() or another
    // follower made of it) and nothing else. It views manifests' routes,
    // Services, EndpointSlices, policies, ConfigMaps and Secrets: they
    // must stay, or be followed (follow(), copy_objects()).
    RouteChanges(const Manifests &manifests, const Plan &plan, const Options &options, const ResolveReads &reads);

    // False where route changes cannot be applied alone: not --routes
    // table with the upstream API, or objects of one key twice (files)
    bool usable() const { return usable_; }
    bool follow(const MovedObjects &moved);
    void copy_objects();

    // The other objects applied without resolve, kept in step
    void slice_changed(const std::string &key, const EndpointSlice *slice);
    // (an object of a kind holds_trust() says, as PolicyTrust::object_changed())
    void trust_object_changed(const std::string &kind, const std::string &key, const Manifests *now);
    // The HTTPRoute or GRPCRoute `key` ("HTTPRoute ns/name") is now
    // `route`, or is gone (null)
    void route_changed(const std::string &key, const Route *route);
    // The Service `key` ("ns/name") is now `service`, or is gone (null):
    // the routes naming it are resolved again, unless something other
    // than an HTTPRoute or GRPCRoute reads it (resolve then)
    void service_changed(const std::string &key, const Service *service);
    // The ReferenceGrant `key` ("ns/name") is now `grant`, or is gone
    // (null): the routes naming a Service of its namespace from another
    // are resolved again, unless a Gateway, a ListenerSet or a TLSRoute,
    // TCPRoute or UDPRoute reads that namespace's grants (resolve then)
    void reference_grant_changed(const std::string &key, const ReferenceGrant *grant);
    // The BackendTLSPolicy `key` ("ns/name") is now `policy`, or is gone
    // (null): the routes naming the Services it targeted or targets are
    // resolved again. Applied alone when only its trust (CA bundle, pins),
    // names (hostname, SANs, where pushed) and status change, or (with
    // spares) when one made or deleted turns a backend's TLS on or off
    // (a spare of that kind holds it). Another mode, ConfigMaps or Secrets
    // the plan never read, a target another policy shares or something
    // other than an HTTPRoute or GRPCRoute reads, is resolve's.
    void policy_changed(const std::string &key, const BackendTLSPolicy *policy);
    static std::string route_key(const Route &r);

    struct Update {
        // why the change needs resolve; *plan is left as it was
        std::string needs_resolve;
        // the servers of the hostnames changed: as they are now (in
        // *plan) and as they were (taken out of it), whose route table
        // entries are replaced
        std::vector<const Server *> servers;
        std::vector<Server> replaced;
        // for each of *plan's statuses, its position in the plan's before,
        // unchanged, or -1: new or changed
        std::vector<int64_t> status_from;
        // backends new to nginx now held by spares: the spare's position
        // in plan->upstreams and what it was, the backend's name, its
        // Service and slices
        struct Held {
            size_t index;
            Upstream spare;
            std::string upstream;
            const Service *service;
            std::vector<const EndpointSlice *> slices;
            bool tls_turned = false;  // nginx runs it; a policy made or deleted turns its TLS on or off
        };
        std::vector<Held> held;
        // in *plan: the policies whose trust or names changed, and the
        // spares' copies of them where they hold a backend of one (or
        // are given one)
        std::vector<const UpstreamPolicy *> trust;
        // a policy made or deleted, or reading other ConfigMaps or Secrets:
        // PolicyTrust, which knows who reads what, no longer follows
        bool trust_reads_changed = false;
        // with needs_resolve because the change refers to ConfigMaps or
        // Secrets the plan does not read (held as digests until wanted):
        // those, and what the plan reads, to be wanted before the whole
        // way, which then resolves once
        ResolveReads wants;
    };
    // Whether spares holding backends (each: the spare, as it is and as
    // it would be) leave the configuration's room as it is
    using SpareRoom = std::function<bool(const std::vector<std::pair<const Upstream *, Upstream>> &)>;
    // Every route_changed(), service_changed(), reference_grant_changed()
    // and policy_changed() since the last update(), applied to *plan.
    // With `spares` (--spare-backends: what they hold, kept up to date),
    // a backend new to nginx is put in a free spare's place as the whole
    // way's assign_spares would, where `room` says it fits.
    Update update(Plan *plan, SpareAssignment *spares = nullptr, const SpareRoom &room = {});

private:
    Update update_pending(Plan *plan, SpareAssignment *spares, const SpareRoom &room);
    Manifests sub_manifests(const std::set<std::string> &routes, const std::set<std::string> &targets, bool now) const;
    Update splice(Plan was, Plan is, const ResolveReads &read_was, const ResolveReads &read_is,
                  const std::set<std::string> &hosts, const std::set<std::string> &routes, Plan *plan,
                  SpareAssignment *spares, const SpareRoom &room);
    const Route *route_now(const std::string &key) const;
    const Service *service_now(const std::string &key) const;
    const BackendTLSPolicy *policy_now(const std::string &key) const;
    void index_policy(const std::string &key, const BackendTLSPolicy &p, bool add);
    void with_grants(std::vector<ReferenceGrant> *grants) const;
    std::vector<const EndpointSlice *> slices_of(const std::string &service) const;
    void index_route(const std::string &key, const Route &r, bool add);

    bool usable_ = true;
    Options options_;
    std::unordered_map<std::string, unsigned> reads_;  // of the plan's resolve
    std::unordered_map<std::string, unsigned> reached_;  // ResolveReads::reached, of the plan
    std::vector<std::string> gateway_reads_;  // the trust objects Gateways read, by read_key()
    Manifests base_;  // Namespaces, GatewayClasses, Gateways, ListenerSets, ReferenceGrants: copies
    bool server_timestamps_ = false;
    KeptObjects<Route> routes_;  // HTTPRoutes and GRPCRoutes, by route_key()
    KeptObjects<Service> services_;  // every one: a route may name one new to nginx
    KeptObjects<EndpointSlice> slices_;  // every one: a Service may be made for them
    KeptObjects<BackendTLSPolicy> policies_;
    KeptTrustObjects trust_objects_;  // by read_key(), those resolve looked up
    std::unordered_map<std::string, std::set<std::string>> slices_of_;    // Service -> slices
    std::unordered_map<std::string, std::set<std::string>> policies_of_;  // Service -> policies
    std::unordered_map<std::string, std::set<std::string>> routes_of_;    // hostname -> routes
    std::unordered_map<std::string, std::set<std::string>> routes_naming_;  // Service -> routes
    std::set<std::string> wildcards_;     // the wildcard hostnames of routes_of_
    std::set<std::string> no_hostname_;   // routes of no hostname
    std::unordered_map<std::string, size_t> upstream_at_;  // the plan's, by name
    std::map<std::string, std::optional<Route>> pending_;  // route_changed() since update()
    std::map<std::string, std::optional<Service>> pending_services_;  // service_changed() since update()
    std::map<std::string, std::optional<ReferenceGrant>> pending_grants_;  // reference_grant_changed() likewise
    std::map<std::string, std::optional<BackendTLSPolicy>> pending_policies_;  // policy_changed() likewise
};

}  // namespace g2n
