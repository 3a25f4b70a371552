// Gateways: which are ours, where each listens, their listeners and the
// conditions of both.
#include "resolve/resolver.h"

#include <algorithm>
#include <tuple>

namespace g2n {

void Resolver::select_gateways()
{
    std::set<std::string> classes;
    for (const GatewayClass &gc : m_.gateway_classes) {
        if (gc.controller_name != o_.controller_name) continue;  // its controller writes its status
        ObjectStatus st;
        st.api_version = "gateway.networking.k8s.io/v1";
        st.kind = "GatewayClass";
        st.meta = status_meta(gc.meta);
        if (!gc.parameters_ref.empty()) {
            // its Gateways are not programmed: nothing says what the parameters would have changed
            st.conditions = {cond::gateway_class_invalid_parameters(gc.parameters_ref)};
        } else {
            st.conditions = {cond::gateway_class_accepted()};
            if (o_.gateway_class.empty() || gc.meta.name == o_.gateway_class) classes.insert(gc.meta.name);
        }
        statuses_.push_back(std::move(st));
    }
    for (const Gateway &gw : m_.gateways) {
        bool wanted = o_.gateways.empty()
                      || std::find(o_.gateways.begin(), o_.gateways.end(), gw.meta.key())
                             != o_.gateways.end();
        if (wanted && classes.count(gw.gateway_class_name)) {
            gateways_.push_back(&gw);
        }
    }
    std::sort(gateways_.begin(), gateways_.end(),
              [](const Gateway *a, const Gateway *b) { return key_less(a->meta, b->meta); });
}

const Resolver::GatewayAddress &Resolver::gateway_address(const Gateway &gw)
{
    auto [it, added] = gateway_addresses_.try_emplace(gw.meta.key());
    GatewayAddress &a = it->second;
    if (!added) return a;
    a.address = o_.listen_address;
    size_t ip_addresses = 0;
    for (const auto &[type, value] : gw.addresses) {
        if (type != "IPAddress") {
            a.refused = cond::gateway_unsupported_address("address type " + type + " is not supported (IPAddress only)");
            return a;
        }
        ip_addresses++;
        if (value.empty()) continue;
        if (!o_.address_is_local(value)) {
            a.refused = cond::gateway_address_not_usable("address " + value + " is not an address of this host");
            return a;
        }
        a.address = value;
    }
    if (ip_addresses > 1) {
        a.refused = cond::gateway_address_not_assigned("gateway2nginx listens on one address per Gateway");
    }
    return a;
}

ListenerState Resolver::resolve_listener(const Gateway &gw, const ListenerSet *set, const Listener &l)
{
    ListenerState s;
    s.gateway = &gw;
    s.listener_set = set;
    s.listener = &l;
    s.status.name = l.name;
    std::string address = gateway_address(gw).address;
    if (address.find(':') != std::string::npos) address = "[" + address + "]";
    s.listen = address + ":" + std::to_string(l.port + o_.port_offset);
    if (!gw.parameters_ref.empty() || gateway_address(gw).refused) {
        s.status.conditions = {cond::listener_not_programmed(gw.parameters_ref.empty() ? "the Gateway's address cannot be used"
                                                                                       : "the Gateway is not accepted")};
        return s;
    }

    // the operator interfaces' TCP ports are theirs: a listener there (a
    // tenant's ListenerSet) could take their requests; a UDP port is
    // another socket
    for (const OperatorPort &p : operator_ports(o_)) {
        if (l.protocol != ListenerProtocol::UDP && p.port == l.port + o_.port_offset) {
            const std::string why = "port " + std::to_string(l.port) + " is an operator interface's (" + p.flag + ")";
            s.status.conditions = {cond::listener_port_unavailable(why), cond::listener_not_programmed(why)};
            return s;
        }
    }

    static const std::map<ListenerProtocol, std::vector<std::string>> kinds_of_protocol = {
        {ListenerProtocol::HTTP, {"HTTPRoute", "GRPCRoute"}},
        {ListenerProtocol::HTTPS, {"HTTPRoute", "GRPCRoute"}},
        {ListenerProtocol::TLS, {"TLSRoute"}},
        {ListenerProtocol::TCP, {"TCPRoute"}},
        {ListenerProtocol::UDP, {"UDPRoute"}},
    };
    auto kinds = kinds_of_protocol.find(l.protocol);
    if (kinds == kinds_of_protocol.end()) {
        s.status.conditions.push_back(cond::listener_unsupported_protocol(l.protocol_name));
        return s;
    }
    const bool terminates = l.protocol == ListenerProtocol::HTTPS
                            || (l.protocol == ListenerProtocol::TLS && l.tls_mode == TlsMode::Terminate);
    s.category = l.protocol != ListenerProtocol::TLS ? l.protocol_name
                 : terminates                        ? "TLS/Terminate"
                                                     : "TLS/Passthrough";
    // allowedRoutes.kinds narrows what the protocol carries; a kind the
    // protocol cannot carry is reported, the others still attach
    std::string invalid_kinds;
    for (const std::string &kind : kinds->second) {
        if (l.allowed_kinds.empty()
            || std::find(l.allowed_kinds.begin(), l.allowed_kinds.end(), kind) != l.allowed_kinds.end()) {
            s.status.supported_kinds.push_back(kind);
        }
    }
    for (const std::string &kind : l.allowed_kinds) {
        if (std::find(kinds->second.begin(), kinds->second.end(), kind) == kinds->second.end()) {
            invalid_kinds += (invalid_kinds.empty() ? "" : ", ") + kind;
        }
    }
    if (terminates) {
        SecretFiles files = resolve_certificate(l, &s);
        if (!files.ok()) {
            // routes still attach (GatewayWithAttachedRoutes), nothing is served
            s.accepted = true;
            auto refs = files.reason == "RefNotPermitted" ? cond::listener_ref_not_permitted
                                                          : cond::listener_invalid_certificate_ref;
            s.status.conditions = {cond::listener_accepted(), cond::listener_not_programmed(files.why),
                                   refs(files.why)};
            return s;
        }
        std::vector<Condition> failure;
        if (!resolve_client_validation(objects_, gw, l, plan_, &s.client, &failure)) {
            s.status.conditions = failure;
            return s;
        }
    }
    s.accepted = s.usable = true;
    s.status.conditions = {cond::listener_accepted(), cond::listener_programmed(),
                           invalid_kinds.empty() ? cond::listener_refs_resolved()
                                                 : cond::listener_invalid_route_kinds(l.protocol_name, invalid_kinds)};
    return s;
}

SecretFiles Resolver::resolve_certificate(const Listener &l, ListenerState *s)
{
    SecretFiles files = tls_secret_files(objects_, s->owner_kind(), s->owner().namespace_, l.certificate_refs.front(),
                                         "listener", plan_, &written_);
    s->certificate = files.certificate;
    s->certificate_key = files.key;
    return files;
}

// Listener isolation (GEP-1713): a request goes to the most specific
// listener of its Gateway and port whose hostname matches it, so a
// route's hostname that such a listener claims whole is not served
// through a broader one (nginx would merge both into one server).
bool Resolver::claimed_by_a_more_specific_listener(const ListenerState &ls, const std::string &host) const
{
    auto specificity = [](const std::string &h) {
        return std::make_pair(h.empty() ? 0 : h[0] == '*' ? 1 : 2, h.size());
    };
    for (const ListenerState &other : listeners_of(*ls.gateway)) {
        if (&other == &ls || other.listen != ls.listen || !other.accepted) continue;
        const std::string &theirs = other.listener->hostname;
        if (theirs.empty() || host.empty() || specificity(theirs) <= specificity(ls.listener->hostname)) continue;
        if (host == theirs || (theirs[0] == '*' && wildcard_covers(theirs, host))) return true;
    }
    return false;
}

// A listener with a hostname beside a broader listener on its port owns
// its hostname even without routes: a server of its own answers 404,
// where nginx would otherwise pick the broader listener's server.
void Resolver::isolate_listener_hostnames()
{
    for (ListenerState &ls : listeners_) {
        const std::string &name = ls.listener->hostname;
        if (!ls.usable || name.empty() || (ls.category != "HTTP" && ls.category != "HTTPS")) continue;
        ListenerRange<ListenerState> mine = listeners_of(*ls.gateway);
        bool broader = std::any_of(mine.begin(), mine.end(), [&](const ListenerState &other) {
            return &other != &ls && other.listen == ls.listen && other.usable
                   && claimed_by_a_more_specific_listener(other, name);
        });
        if (!broader) continue;
        if (host_owner(ls, name) == ls.gateway) server_for(ls, name);
    }
}

// allowedRoutes.namespaces, and a Gateway's allowedListeners.namespaces:
// FROM All, Same (namespace `same`), Selector, or None. A namespace given
// no Namespace object has only the label the API server gives every
// namespace, its name.
bool Resolver::namespace_admitted(const std::string &from, const LabelSelector &selector, const std::string &same,
                                  const std::string &ns) const
{
    if (from == "All") return true;
    if (from == "Same") return ns == same;
    if (from != "Selector") return false;
    auto it = objects_.namespaces.find(ns);
    if (it != objects_.namespaces.end()) return selector.matches(it->second->labels);
    return selector.matches({{"kubernetes.io/metadata.name", ns}});
}

// "Same" is the namespace of the listener's holder (its Gateway, or its
// ListenerSet)
bool Resolver::namespace_allowed(const ListenerState &ls, const std::string &ns) const
{
    const Listener &l = *ls.listener;
    return namespace_admitted(l.allowed_namespaces_from, l.allowed_namespaces_selector, ls.owner().namespace_, ns);
}

void Resolver::gateway_statuses()
{
    for (const Gateway *gw : gateways_) {
        ObjectStatus st;
        st.api_version = "gateway.networking.k8s.io/v1";
        st.kind = "Gateway";
        st.meta = status_meta(gw->meta);
        bool insecure_frontend = false;
        size_t accepted = 0, programmed = 0;
        for (const ListenerState &ls : listeners_of(*gw)) {
            if (ls.listener_set != nullptr) continue;  // the ListenerSet's status has it
            st.listeners.push_back(ls.status);
            accepted += ls.accepted;
            programmed += ls.usable;
            insecure_frontend |= ls.usable && ls.client.verify == ClientVerify::Fallback;
        }
        const size_t listeners = st.listeners.size();
        const GatewayAddress &address = gateway_address(*gw);
        if (!gw->parameters_ref.empty()) {
            st.conditions = {cond::gateway_invalid_parameters(gw->parameters_ref),
                             cond::gateway_not_programmed("the Gateway is not accepted")};
        } else if (address.refused && address.refused->type == "Accepted") {
            st.conditions = {*address.refused, cond::gateway_not_programmed("the Gateway is not accepted")};
        } else if (address.refused) {
            st.conditions = {cond::gateway_accepted(), *address.refused};
        } else {
            // a listener that is not programmed makes the Gateway's
            // listeners not valid; none accepted, the Gateway is not
            st.conditions = {programmed == listeners ? cond::gateway_accepted()
                                                     : cond::gateway_listeners_not_valid(accepted > 0,
                                                                                         listeners - programmed),
                             programmed > 0 ? cond::gateway_programmed()
                                            : cond::gateway_not_programmed("no listener is programmed")};
        }
        // where clients reach it: the address it listens on, unless that is
        // every address, where the operator says (--status-address, or
        // the load balancer of --status-address-service)
        if (programmed > 0 && address.address != "0.0.0.0" && address.address != "::") {
            st.addresses.push_back({"IPAddress", address.address});
        } else if (programmed > 0 && !o_.status_addresses.empty()) {
            for (const std::string &a : o_.status_addresses) st.addresses.push_back({"IPAddress", a});
        } else if (programmed > 0 && !o_.status_address_service.empty()) {
            const std::string &key = o_.status_address_service;
            const size_t slash = key.find('/');
            if (const Service *svc = objects_.service(key.substr(0, slash), key.substr(slash + 1), Reader::Gateway)) {
                for (const LoadBalancerIngress &in : svc->load_balancer_ingress) {
                    if (!in.ip.empty()) st.addresses.push_back({"IPAddress", in.ip});
                    else if (!in.hostname.empty()) st.addresses.push_back({"Hostname", in.hostname});
                }
            }
        }
        // ListenerSets admitted with a listener served (GEP-1713)
        for (const ListenerSetState &set : listener_sets_) {
            st.attached_listener_sets += set.gateway == gw && set.allowed && served_listeners(set) > 0;
        }
        if (!gateway_refs_[gw->meta.key()].type.empty()) st.conditions.push_back(gateway_refs_[gw->meta.key()]);
        if (gw->allows_insecure_backends) st.conditions.push_back(cond::gateway_insecure_backends_allowed());
        if (insecure_frontend) st.conditions.push_back(cond::gateway_insecure_frontend());
        if (st.conditions.front().type == "Accepted" && st.conditions.front().status == "True") {
            plan_->gateway_services.push_back(gateway_service(*gw));
        }
        statuses_.push_back(std::move(st));
    }
    std::sort(plan_->gateway_services.begin(), plan_->gateway_services.end(),
              [](const GatewayService &a, const GatewayService &b) {
                  return std::tie(a.namespace_, a.gateway) < std::tie(b.namespace_, b.gateway);
              });
}

// What an accepted Gateway's own Service carries: its infrastructure
// labels and annotations, and the ports of the listeners it serves.
GatewayService Resolver::gateway_service(const Gateway &gw) const
{
    GatewayService svc{gw.meta.namespace_, gw.meta.name, gw.meta.uid, gw.gateway_class_name, {}, {}, {}};
    // keys the Gateway API reserves (GEP-1762) and gateway2nginx's own
    // marks, by which it knows the Service is its to change and delete
    auto reserved = [](const std::string &key) {
        return key.rfind("gateway.networking.k8s.io/", 0) == 0 || key.rfind("gateway2nginx.io/", 0) == 0
               || key == "app.kubernetes.io/managed-by";
    };
    for (const auto &[from, to, what] : {std::tuple{&gw.infrastructure_labels, &svc.labels, "labels"},
                                         std::tuple{&gw.infrastructure_annotations, &svc.annotations, "annotations"}}) {
        for (const auto &[key, value] : *from) {
            if (!reserved(key)) {
                to->emplace(key, value);
            } else {
                plan_->warnings.push_back("Gateway " + gw.meta.key() + ": spec.infrastructure." + what + "." + key
                                          + " is not propagated: the key is reserved");
            }
        }
    }
    for (const ListenerState &ls : listeners_of(gw)) {
        if (ls.accepted) svc.ports.emplace_back(ls.listener->port, ls.listener->protocol == ListenerProtocol::UDP ? "UDP" : "TCP");
    }
    std::sort(svc.ports.begin(), svc.ports.end());
    svc.ports.erase(std::unique(svc.ports.begin(), svc.ports.end()), svc.ports.end());
    return svc;
}

}  // namespace g2n
