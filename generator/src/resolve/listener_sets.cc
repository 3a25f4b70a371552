// ListenerSets (GEP-1713): which attach to our Gateways, their listeners
// merged into their Gateway's after its own, and their status.
#include "resolve/resolver.h"

namespace g2n {

// Of every ListenerSet naming one of our Gateways: whether the Gateway
// admits it, in the order its listeners merge (the Gateway's own first,
// then the oldest ListenerSet, then namespace/name).
void Resolver::select_listener_sets()
{
    std::unordered_map<std::string, const Gateway *> ours;
    for (const Gateway *gw : gateways_) ours.emplace(gw->meta.key(), gw);
    for (const ListenerSet &set : m_.listener_sets) {
        auto gw = ours.find(set.parent_ns() + "/" + set.parent_name);
        if (gw == ours.end()) continue;  // not a parent of ours
        ListenerSetState state;
        state.set = &set;
        state.gateway = gw->second;
        state.allowed = namespace_admitted(gw->second->allowed_listeners_from, gw->second->allowed_listeners_selector,
                                           gw->second->meta.namespace_, set.meta.namespace_);
        listener_sets_.push_back(state);
    }
    std::stable_sort(listener_sets_.begin(), listener_sets_.end(),
                     [](const ListenerSetState &a, const ListenerSetState &b) {
                         if (a.gateway != b.gateway) return key_less(a.gateway->meta, b.gateway->meta);
                         return older_first(a.set->meta, b.set->meta);
                     });
    for (size_t i = 0; i < listener_sets_.size(); i++) listener_set_by_key_.emplace(listener_sets_[i].set->meta.key(), i);
}

// Each Gateway's listeners: its own, then those of the ListenerSets it
// admits, in precedence order; then conflicts are settled in that order.
void Resolver::resolve_listeners()
{
    size_t next_set = 0;
    for (const Gateway *gw : gateways_) {
        size_t first = listeners_.size();
        for (const Listener &l : gw->listeners) listeners_.push_back(resolve_listener(*gw, nullptr, l));
        for (; next_set < listener_sets_.size() && listener_sets_[next_set].gateway == gw; next_set++) {
            ListenerSetState &state = listener_sets_[next_set];
            state.first = listeners_.size();
            if (state.allowed) {
                for (const Listener &l : state.set->listeners) listeners_.push_back(resolve_listener(*gw, state.set, l));
            }
            state.last = listeners_.size();
        }
        listener_ranges_[gw] = {first, listeners_.size()};
    }
    settle_protocol_conflicts(listeners_);
    settle_hostname_conflicts(listeners_);
}

void Resolver::listener_set_statuses()
{
    for (const ListenerSetState &state : listener_sets_) {
        ObjectStatus st;
        st.api_version = "gateway.networking.k8s.io/v1";
        st.kind = "ListenerSet";
        st.meta = status_meta(state.set->meta);
        const std::string parent = "Gateway " + state.gateway->meta.key();
        if (!state.allowed) {
            const std::string why = parent + " does not allow ListenerSets from namespace " + state.set->meta.namespace_
                                    + " (spec.allowedListeners)";
            st.conditions = {cond::listener_set_not_allowed(why), cond::listener_set_not_programmed("NotAllowed", why)};
            statuses_.push_back(std::move(st));
            continue;
        }
        for (size_t i = state.first; i < state.last; i++) st.listeners.push_back(listeners_[i].status);
        const GatewayAddress &address = gateway_address(*state.gateway);
        if (!state.gateway->parameters_ref.empty() || (address.refused && address.refused->type == "Accepted")) {
            const std::string why = parent + " is not accepted";
            st.conditions = {cond::listener_set_parent_not_accepted(why),
                             cond::listener_set_not_programmed("ParentNotAccepted", why)};
        } else if (served_listeners(state) == 0) {
            const std::string why = "no listener is valid; see the listeners' conditions";
            st.conditions = {cond::listener_set_listeners_not_valid(why),
                             cond::listener_set_not_programmed("ListenersNotValid", why)};
        } else {
            st.conditions = {cond::listener_set_accepted(), cond::listener_set_programmed()};
        }
        statuses_.push_back(std::move(st));
    }
}

}  // namespace g2n
