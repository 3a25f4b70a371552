// Who has a port and a hostname on an address that Gateways share
// (resolve.h, "resolve/claims.cc"): by the age of the listener's claim,
// never by a route's.
#include <algorithm>
#include <map>
#include <set>

#include "resolve/conditions.h"
#include "resolve/resolver.h"

namespace g2n {

namespace {

// When the claim began: "" when a creationTimestamp is unknown
const std::string &claim_time(const ListenerState &ls)
{
    const std::string &gateway = ls.gateway->meta.creation_timestamp;
    if (ls.listener_set == nullptr) return gateway;
    const std::string &set = ls.listener_set->meta.creation_timestamp;
    if (gateway.empty()) return gateway;
    if (set.empty()) return set;
    return std::max(gateway, set);
}

// TCP and UDP listeners have no hostname: they claim the whole port, as
// does a listener that names one hostname
bool claims_whole_name(const ListenerState &ls)
{
    const std::string &h = ls.listener->hostname;
    return ls.category == "TCP" || ls.category == "UDP" || (!h.empty() && h[0] != '*');
}

// The listeners in claim order (the vector is in each Gateway's own order)
std::vector<ListenerState *> in_claim_order(std::vector<ListenerState> &listeners)
{
    std::vector<ListenerState *> order;
    order.reserve(listeners.size());
    for (ListenerState &ls : listeners) order.push_back(&ls);
    std::stable_sort(order.begin(), order.end(),
                     [](const ListenerState *a, const ListenerState *b) { return claims_before(*a, *b); });
    return order;
}

}  // namespace

bool claims_before(const ListenerState &a, const ListenerState &b)
{
    const std::string &ta = claim_time(a), &tb = claim_time(b);
    if (ta != tb) {
        if (ta.empty()) return false;
        if (tb.empty()) return true;
        return ta < tb;
    }
    if (a.gateway != b.gateway) return key_less(a.gateway->meta, b.gateway->meta);
    return false;  // the Gateway's own order (stable sorts keep it)
}

std::string claim_key(const ListenerState &ls, const std::string &host) { return listen_socket(ls) + " " + host; }

bool claim_outranks(const ListenerState &a, const ListenerState &b)
{
    // 0: names one hostname; 1: a wildcard, the longer the more specific; 2: none
    auto rank = [](const ListenerState &ls) {
        const std::string &h = ls.listener->hostname;
        return std::make_pair(h.empty() ? 2 : h[0] == '*' ? 1 : 0, -static_cast<long>(h.size()));
    };
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (a.gateway == b.gateway) return false;  // one server: the Gateway's own order
    return claims_before(a, b);
}

// The listeners of one Gateway that disagree on a port's protocol all lose
// it; otherwise the first claim's protocol keeps the socket. A ListenerSet's
// listener (GEP-1713) comes after its Gateway's own.
void settle_protocol_conflicts(std::vector<ListenerState> &listeners)
{
    std::map<std::string, std::set<std::string>> protocols;  // "gateway socket" -> its own listeners' protocols
    for (const ListenerState &ls : listeners) {
        if (ls.listener_set == nullptr && !ls.category.empty()) {
            protocols[ls.gateway->meta.key() + " " + listen_socket(ls)].insert(socket_protocol(ls.category));
        }
    }
    std::map<std::string, const ListenerState *> owner;  // socket -> first claim
    for (ListenerState *ls : in_claim_order(listeners)) {
        if (ls->category.empty()) continue;
        std::string why;
        const std::string port = std::to_string(ls->listener->port);
        if (ls->listener_set == nullptr && protocols[ls->gateway->meta.key() + " " + listen_socket(*ls)].size() > 1) {
            why = "listeners of this Gateway on port " + port + " disagree on protocol";
        } else {
            auto [it, first] = owner.emplace(listen_socket(*ls), ls);
            const ListenerState &theirs = *it->second;
            // another tenant's Gateway or ListenerSet is not named to this one
            if (!first && socket_protocol(theirs.category) != socket_protocol(ls->category)) {
                why = "port " + port + " is served as " + socket_protocol(theirs.category)
                      + (theirs.gateway != ls->gateway      ? " by an older listener on this address"
                         : theirs.listener_set == nullptr ? " by the Gateway's own listeners"
                                                          : " by a listener of an earlier ListenerSet");
            }
        }
        if (why.empty()) continue;
        ls->accepted = ls->usable = false;
        ls->status.conditions = cond::listener_conflicted("ProtocolConflict", why);
    }
}

void settle_hostname_conflicts(std::vector<ListenerState> &listeners)
{
    std::set<std::string> of_gateway;                     // "gateway socket protocol hostname"
    std::map<std::string, const ListenerState *> named;   // "socket protocol hostname" -> first claim
    for (ListenerState *ls : in_claim_order(listeners)) {
        if (!ls->accepted) continue;
        const std::string what = listen_socket(*ls) + " " + socket_protocol(ls->category) + " " + ls->listener->hostname;
        const std::string port = std::to_string(ls->listener->port);
        std::string why;
        if (!of_gateway.insert(ls->gateway->meta.key() + " " + what).second) {
            // a Gateway's own are unique already (parse)
            why = "an earlier listener of the Gateway has port " + port + ", its protocol and hostname \""
                  + ls->listener->hostname + "\"";
        } else if (claims_whole_name(*ls)) {
            auto [it, first] = named.emplace(what, ls);
            if (!first && it->second->gateway != ls->gateway) {
                why = ls->listener->hostname.empty()
                          ? "port " + port + " is claimed by an older listener on this address"
                          : "port " + port + " and hostname \"" + ls->listener->hostname
                                + "\" are claimed by an older listener on this address";
            }
        }
        if (why.empty()) continue;
        ls->accepted = ls->usable = false;
        ls->status.conditions = cond::listener_conflicted("HostnameConflict", why);
    }
}

// Every hostname a listener will serve, claimed before any route is
// attached: the hostname a listener names, and each hostname a route
// brings to a listener with a wildcard or none.
void Resolver::claim_hostnames(const std::vector<const Route *> &routes)
{
    auto offer = [&](const ListenerState &ls, const std::string &host) {
        auto [it, first] = host_claims_.emplace(claim_key(ls, host), &ls);
        if (!first && claim_outranks(ls, *it->second)) it->second = &ls;
    };
    for (const ListenerState &ls : listeners_) {
        if (ls.usable && claims_whole_name(ls)) offer(ls, ls.listener->hostname);
    }
    for (const Route *r : routes) {
        if (!route_unsupported(*r).empty()) continue;  // serves nothing
        for (const ParentRef &ref : r->parent_refs) {
            const RouteParent parent = route_parent(*r, ref);
            if (parent.gateway == nullptr || !parent.allowed) continue;
            const RouteHosts hosts = route_hosts(*r, ref, *parent.gateway, parent.set);
            for (const auto &[ls, host] : hosts.hosts) {
                if (ls->usable && !hosts.isolated.count({ls, host})) offer(*ls, host);
            }
        }
    }
}

const Gateway *Resolver::host_owner(const ListenerState &ls, const std::string &host) const
{
    auto it = host_claims_.find(claim_key(ls, host));
    return it == host_claims_.end() ? nullptr : it->second->gateway;
}

}  // namespace g2n
