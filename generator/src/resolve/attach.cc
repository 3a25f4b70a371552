// Route attachment: each HTTPRoute, GRPCRoute and stream route against the
// listeners its parentRefs name, and its rules as locations of servers.
#include "resolve/resolver.h"

namespace g2n {

// Objects rejected at parse: a warning each, and a route's parents on
// our Gateways say why (a policy reports through its own status, as
// an invalid policy).
void Resolver::rejected_statuses(std::vector<StatusList::Item> *route_statuses)
{
    for (const RejectedObject &x : m_.rejected) {
        const std::string name = x.meta.namespace_.empty() ? x.meta.name : x.meta.key();  // cluster-wide
        plan_->warnings.push_back(x.kind + " " + (x.meta.name.empty() ? "with an invalid name" : name)
                                  + " is rejected: " + x.message);
        if (x.meta.name.empty() || x.kind == "BackendTLSPolicy") continue;
        ObjectStatus st;
        st.api_version = intern(x.api_version);
        st.kind = intern(x.kind);
        st.meta = status_meta(x.meta);
        st.refs_key = "parents";
        auto ours = [&](const ParentRef &p, const std::string &ns) {
            if (p.refers_to() == RefKind::ListenerSet) return listener_set(ns, p.name) != nullptr;
            return std::any_of(gateways_.begin(), gateways_.end(), [&](const Gateway *g) {
                return g->meta.namespace_ == ns && g->meta.name == p.name;
            });
        };
        if (x.kind == "ListenerSet") {
            // a ListenerSet of one of our Gateways that could not be read
            for (const ParentRef &p : x.parent_refs) {
                if (!ours(p, p.namespace_.empty() ? x.meta.namespace_ : p.namespace_)) continue;
                st.conditions = {cond::listener_set_listeners_not_valid(x.message),
                                 cond::listener_set_not_programmed("ListenersNotValid", x.message)};
                statuses_.push_back(std::move(st));
                break;
            }
            continue;
        }
        for (const ParentRef &p : x.parent_refs) {
            std::string ns = p.namespace_.empty() ? x.meta.namespace_ : p.namespace_;
            if (!ours(p, ns)) continue;
            ObjectStatus::RefStatus rs;
            rs.kind = p.refers_to() == RefKind::ListenerSet ? "ListenerSet" : "Gateway";
            rs.namespace_ = ns;
            rs.name = p.name;
            rs.section_name = p.section_name;
            rs.conditions = {cond::route_unsupported(x.message)};
            st.refs.push_back(std::move(rs));
        }
        if (!st.refs.empty()) route_statuses->push_back(std::make_shared<const ObjectStatus>(std::move(st)));
    }
}

std::string route_unsupported(const Route &r)
{
    std::string unsupported;
    for (const RouteRule &rule : r.rules) {
        if (!rule.unsupported.empty()) {
            unsupported = rule.unsupported;
        }
        std::string filters_why = rule_filters(rule).unsupported;
        if (!filters_why.empty()) unsupported = filters_why;
        for (const RouteMatch &match : rule.matches) {
            std::string why = match_conditions(match, nullptr);
            if (!why.empty()) unsupported = why;
            if (is_conditional(match) && has_location_settings(rule)) {
                unsupported = "filters, timeouts or retries on a rule with header, query or method matches are not rendered yet";
            }
        }
    }
    return unsupported;
}

Resolver::RouteParent Resolver::route_parent(const Route &r, const ParentRef &ref) const
{
    RouteParent parent;
    const std::string ns = ref.namespace_.empty() ? r.meta.namespace_ : ref.namespace_;
    if (ref.refers_to() == RefKind::Gateway) {
        auto gw_it = std::find_if(gateways_.begin(), gateways_.end(), [&](const Gateway *g) {
            return g->meta.namespace_ == ns && g->meta.name == ref.name;
        });
        if (gw_it == gateways_.end()) return parent;  // not a parent of ours: its controller writes that status
        parent.gateway = *gw_it;
        parent.allowed = true;
    } else if (ref.refers_to() == RefKind::ListenerSet) {
        const ListenerSetState *set = listener_set(ns, ref.name);
        if (set == nullptr) return parent;  // its Gateway is not ours
        parent.gateway = set->gateway;
        parent.set = set->set;
        parent.allowed = set->allowed;
    }
    return parent;
}

ObjectStatus Resolver::attach_route(const Route &r)
{
    ObjectStatus st;
    st.api_version = intern(r.api_version);
    st.kind = route_kind_name(r.kind);
    st.meta = status_meta(r.meta);
    st.refs_key = "parents";

    const std::string unsupported = route_unsupported(r);
    for (const ParentRef &ref : r.parent_refs) {
        const RouteParent parent = route_parent(r, ref);
        if (parent.gateway == nullptr) continue;
        ObjectStatus::RefStatus rs;
        rs.kind = ref.refers_to() == RefKind::ListenerSet ? "ListenerSet" : "Gateway";
        rs.namespace_ = ref.namespace_.empty() ? r.meta.namespace_ : ref.namespace_;
        rs.name = ref.name;
        rs.section_name = ref.section_name;
        rs.conditions = parent.allowed ? attach_to_gateway(r, ref, *parent.gateway, parent.set, unsupported)
                                       : std::vector<Condition>{cond::route_not_allowed(
                                                                    "ListenerSet " + parent.set->meta.key()
                                                                    + " is not allowed by its Gateway"),
                                                                cond::route_refs_resolved()};
        st.refs.push_back(std::move(rs));
    }
    return st;
}

// A parentRef's listeners are those of the object it names (GEP-1713):
// a Gateway's own (set null), or one ListenerSet's merged into it.
Resolver::RouteHosts Resolver::route_hosts(const Route &r, const ParentRef &ref, const Gateway &gw,
                                           const ListenerSet *set)
{
    RouteHosts out;
    const std::string parent = set != nullptr ? "ListenerSet " + set->meta.key() : "Gateway " + gw.meta.key();
    std::vector<ListenerState *> candidates;
    for (ListenerState &ls : listeners_of(gw)) {
        if (ls.listener_set != set) continue;
        if (!ref.section_name.empty() && ls.listener->name != ref.section_name) continue;
        if (ref.port != 0 && ls.listener->port != ref.port) continue;
        candidates.push_back(&ls);
    }
    if (candidates.empty()) {
        out.refused = {cond::route_no_matching_parent("no listener of " + parent + " matches sectionName/port"),
                       cond::route_refs_resolved()};
        return out;
    }

    std::vector<ListenerState *> allowed;
    for (ListenerState *ls : candidates) {
        bool ns_ok = namespace_allowed(*ls, r.meta.namespace_);
        const std::vector<std::string> &kinds = ls->status.supported_kinds;
        bool kind_ok = std::find(kinds.begin(), kinds.end(), route_kind_name(r.kind)) != kinds.end();
        if (ls->accepted && ns_ok && kind_ok) allowed.push_back(ls);
    }
    if (allowed.empty()) {
        out.refused = {cond::route_not_allowed("no listener of " + parent
                                               + " allows this route (namespace, kind or protocol)"),
                       cond::route_refs_resolved()};
        return out;
    }

    for (ListenerState *ls : allowed) {
        std::vector<std::string> route_hosts = r.hostnames;
        if (route_hosts.empty()) route_hosts.push_back("");
        for (const std::string &h : route_hosts) {
            std::string host;
            if (!intersect(ls->listener->hostname, h, &host)) continue;
            out.hosts.emplace_back(ls, host);
            if (claimed_by_a_more_specific_listener(*ls, host)) out.isolated.emplace(ls, host);
        }
    }
    if (out.hosts.empty()) out.refused = {cond::route_no_matching_hostname(), cond::route_refs_resolved()};
    return out;
}

std::vector<Condition> Resolver::attach_to_gateway(const Route &r, const ParentRef &ref, const Gateway &gw,
                                                   const ListenerSet *set, const std::string &unsupported)
{
    RouteHosts route = route_hosts(r, ref, gw, set);
    if (!route.refused.empty()) return route.refused;
    if (!unsupported.empty()) {
        return {cond::route_unsupported(unsupported), cond::route_refs_resolved()};
    }

    Condition refs = cond::route_refs_resolved();
    std::set<ListenerState *> attached;
    std::string taken_by;
    bool served = false;
    for (auto &[ls, host] : route.hosts) {
        if (!ls->usable || route.isolated.count({ls, host})) {
            attached.insert(ls);
            continue;
        }
        served = true;
        // Gateways that share an address and port share the nginx
        // listener; a hostname there is the best claim's (claims.cc)
        if (host_owner(*ls, host) != &gw) {
            taken_by = "hostname \"" + host + "\" on " + ls->listen
                       + " is claimed by an older or more specific listener on this address";
            continue;
        }
        if (r.kind == RouteKind::TLSRoute || r.kind == RouteKind::TCPRoute || r.kind == RouteKind::UDPRoute) {
            add_stream_route(*ls, r, host, gw, &refs);
            attached.insert(ls);
            continue;
        }
        Server &server = server_for(*ls, host);
        for (size_t i = 0; i < r.rules.size(); i++) {
            add_rule(server, r, r.rules[i], i, gw, &refs);
        }
        attached.insert(ls);
    }
    if (attached.empty()) {
        return {cond::route_not_allowed(taken_by), refs};
    }
    if (!served) {
        // attached to listeners that serve nothing: its references are
        // still reported
        for (const RouteRule &rule : r.rules) {
            for (const BackendRef &b : rule.backend_refs) {
                const Service *svc = nullptr;
                referenced_port(r, b, &svc, &refs);
            }
        }
    }
    for (ListenerState *ls : attached) ls->status.attached_routes++;
    return {cond::route_accepted(), refs};
}

Server &Resolver::server_for(const ListenerState &ls, const std::string &host)
{
    std::string key = ls.listen + " " + host;
    auto it = servers_.find(key);
    if (it != servers_.end()) return it->second;
    Server &s = servers_[key];
    s.listen = ls.listen;
    s.listener_port = ls.listener->port;
    s.insecure_allowed = ls.gateway->allows_insecure_backends;
    s.ssl = ls.listener->protocol == ListenerProtocol::HTTPS;
    s.server_name = host;
    s.listener_hostname = ls.listener->hostname;
    s.certificate = ls.certificate;
    s.certificate_key = ls.certificate_key;
    s.client = ls.client;
    s.backend_client = backend_clients_[ls.gateway->meta.key()];
    return s;
}

// A TLSRoute hostname on a TLS listener: its connections go to the
// route's backends by SNI. A TCPRoute on a TCP listener, a UDPRoute on a
// UDP one: every connection (datagram session) goes to its backends, bytes
// untouched as behind a Passthrough listener (a BackendTLSPolicy has no
// say). The oldest route keeps a hostname, and a TCP or UDP listener.
void Resolver::add_stream_route(const ListenerState &ls, const Route &r, const std::string &host,
                   const Gateway &gw, Condition *refs)
{
    const bool terminate =
        ls.listener->protocol == ListenerProtocol::TLS && ls.listener->tls_mode == TlsMode::Terminate;
    const StreamProtocol protocol = ls.listener->protocol == ListenerProtocol::TCP   ? StreamProtocol::TCP
                                    : ls.listener->protocol == ListenerProtocol::UDP ? StreamProtocol::UDP
                                                                                     : StreamProtocol::TLS;
    const std::string socket = listen_socket(ls);
    StreamServer &server = stream_servers_[{socket, terminate}];
    if (terminate) terminate_hostnames_[ls.listen].insert(ls.listener->hostname);
    if (server.listen.empty()) {
        server.listen = ls.listen;
        server.protocol = protocol;
        server.terminate = terminate;
        server.insecure_allowed = gw.allows_insecure_backends;
        server.client = ls.client;
        server.backend_client = backend_clients_[gw.meta.key()];
    }
    if (server.terminate && !ls.certificate.empty()) {
        stream_certificates_[ls.listen].emplace(ls.listener->hostname,
                                               std::make_pair(ls.certificate, ls.certificate_key));
    }
    StreamRoute route;
    route.hostname = host;
    route.source = r.meta.key();
    if (server.terminate) {  // a usable Terminate listener's certificate resolved
        route.certificate = ls.certificate;
        route.certificate_key = ls.certificate_key;
    }
    const BackendTarget target = server.terminate ? BackendTarget::StreamTerminate
                                                  : BackendTarget::StreamPassthrough;
    for (const RouteRule &rule : r.rules) {
        for (const BackendRef &b : rule.backend_refs) {
            WeightedUpstream wu;
            if (!resolve_backend(r, b, gw, target, &wu, refs)) wu = refused_share(b.weight);
            if (wu.weight > 0) route.backends.push_back(wu);
        }
    }
    // (looked up, not scanned: a port may have tens of thousands)
    auto [taken, added] = stream_route_sources_[{socket, terminate}].emplace(host, route.source);
    if (!added) {
        const std::string kind = route_kind_name(r.kind);
        const std::string where = protocol == StreamProtocol::TCP   ? "TCP listener "
                                  : protocol == StreamProtocol::UDP ? "UDP listener "
                                                                    : "hostname \"" + host + "\" on ";
        plan_->warnings.push_back(kind + " " + r.meta.key() + ": " + where + ls.listen + " is served by the older "
                                  + kind + " " + taken->second);
        return;
    }
    server.routes.push_back(std::move(route));
}

void Resolver::add_rule(Server &server, const Route &r, const RouteRule &rule, size_t index,
              const Gateway &gw, Condition *refs)
{
    // an invalid backendRef keeps its share of the traffic, answered 500
    RuleFilters filters = rule_filters(rule);
    std::vector<WeightedUpstream> backends;
    for (size_t i = 0; i < rule.backend_refs.size(); i++) {
        const BackendRef &b = rule.backend_refs[i];
        WeightedUpstream wu;
        BackendTarget target = r.kind == RouteKind::GRPCRoute ? BackendTarget::Grpc : BackendTarget::Http;
        if (!resolve_backend(r, b, gw, target, &wu, refs, 1 + rule.retry_attempts)) {
            wu = refused_share(b.weight);
        }
        wu.request_headers = filters.per_backend[i];
        if (wu.weight > 0) backends.push_back(wu);
    }

    // a mirror that cannot be resolved is left out (ResolvedRefs says why)
    std::vector<Mirror> mirrors;
    for (const RouteFilter &f : filters.location) {
        if (f.type != FilterType::RequestMirror) continue;
        Mirror m{{}, f.mirror_numerator, f.mirror_denominator};
        if (m.numerator > 0 && resolve_backend(r, f.mirror, gw, BackendTarget::Mirror, &m.backend, refs)) {
            mirrors.push_back(std::move(m));
        }
    }

    static const std::vector<RouteMatch> kWholePath{RouteMatch{}};  // no match: PathPrefix "/"
    const std::vector<RouteMatch> &matches = rule.matches.empty() ? kWholePath : rule.matches;
    bool redirects = std::any_of(filters.location.begin(), filters.location.end(),
                                 [](const RouteFilter &f) { return f.type == FilterType::RequestRedirect; });
    bool forwards = std::any_of(backends.begin(), backends.end(),
                                [](const WeightedUpstream &b) { return !b.upstream.empty(); });
    std::string source = r.meta.key() + " rule " + std::to_string(index);

    std::unordered_map<std::string, size_t> &index_of = location_index_[&server];
    for (const RouteMatch &match : matches) {
        for (const LocationMatch &loc_match : location_matches(match)) {
            const std::string loc = loc_match.describe();
            // one lookup: a path seen for the first time gets the next slot
            auto [found, first_seen] = index_of.try_emplace(loc, server.locations.size());
            auto it = first_seen ? server.locations.end() : server.locations.begin() + found->second;
            if (is_conditional(match)) {
                if (it == server.locations.end()) {
                    Location l;
                    l.match = loc_match;
                    l.grpc = r.kind == RouteKind::GRPCRoute;
                    l.source = source;
                    l.unconditional = false;
                    server.locations.push_back(std::move(l));
                    it = server.locations.end() - 1;
                } else if (it->unconditional && location_has_settings(*it)) {
                    plan_->warnings.push_back(source + ": its header, query or method match on " + loc
                                              + " is dropped: the path's other rule has filters, timeouts or retries");
                    continue;
                }
                ConditionalTarget t;
                match_conditions(match, &t.conditions);
                t.backends = forwards ? backends : std::vector<WeightedUpstream>{};
                t.return_code = forwards ? 0 : 500;
                t.source = source;
                it->conditional.push_back(t);
                continue;
            }
            if (it != server.locations.end() && it->unconditional) {
                continue;  // an older route or earlier rule has it
            }
            if (it != server.locations.end() && has_location_settings(rule)) {
                plan_->warnings.push_back(source + ": dropped on " + loc
                                          + ": filters cannot share a path with header, query or method matches");
                continue;
            }
            if (it == server.locations.end()) {
                server.locations.push_back(Location{});
                it = server.locations.end() - 1;
            }
            Location &l = *it;
            l.match = loc_match;
            l.grpc = r.kind == RouteKind::GRPCRoute;
            l.source = source;
            l.unconditional = true;
            l.filters = filters.location;
            if (match.path_type == PathMatchType::PathPrefix) {
                l.path_prefix = match.path;
                while (l.path_prefix.size() > 1 && l.path_prefix.back() == '/') l.path_prefix.pop_back();
            }
            l.backends = backends;
            l.mirrors = mirrors;
            l.request_timeout_ms = rule.request_timeout_ms;
            l.backend_timeout_ms = rule.backend_timeout_ms;
            l.retry_tries = 1 + rule.retry_attempts;
            l.retry_codes = rule.retry_codes;
            if (redirects) {
                l.backends.clear();  // answered by the gateway itself
            } else if (!forwards) {
                l.backends.clear();
                l.return_code = 500;  // no forwarding: Gateway API says 500
            }
        }
    }
}

}  // namespace g2n
