// Gateways, listeners, route attachment (HTTPRoute, GRPCRoute, TLSRoute) and backends.
#include "resolve.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <deque>
#include <set>
#include <mutex>
#include <unordered_set>

#include "conditions.h"
#include "endpoints.h"
#include "nginx_check.h"

namespace g2n {

std::string_view intern(std::string_view text)
{
    // node-stable storage, and an index of views into it: a lookup builds no string
    static std::mutex mutex;
    static std::deque<std::string> storage;
    static std::unordered_set<std::string_view> index;
    std::lock_guard<std::mutex> lock(mutex);
    auto known = index.find(text);
    if (known != index.end()) return *known;
    return *index.insert(storage.emplace_back(text)).first;
}

bool granted(const Manifests &m, const std::string &from_kind, const std::string &from_ns,
             const std::string &to_kind, const std::string &to_ns, const std::string &to_name)
{
    const std::string from_group = "gateway.networking.k8s.io";  // Gateway and every route kind
    for (const ReferenceGrant &g : m.reference_grants) {
        if (g.meta.namespace_ != to_ns) continue;
        bool from = std::any_of(g.from.begin(), g.from.end(), [&](const ReferenceGrantFrom &f) {
            return f.group == from_group && f.kind == from_kind && f.namespace_ == from_ns;
        });
        bool to = std::any_of(g.to.begin(), g.to.end(), [&](const ReferenceGrantTo &t) {
            return t.group.empty() && t.kind == to_kind && (t.name.empty() || t.name == to_name);
        });
        if (from && to) return true;
    }
    return false;
}

bool LabelSelector::matches(const std::map<std::string, std::string> &labels) const
{
    for (const auto &[key, value] : match_labels) {
        auto it = labels.find(key);
        if (it == labels.end() || it->second != value) return false;
    }
    for (const LabelRequirement &r : match_expressions) {
        auto it = labels.find(r.key);
        bool has = it != labels.end();
        bool listed = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
        bool holds = r.op == "In" ? listed : r.op == "NotIn" ? !listed : r.op == "Exists" ? has : !has;
        if (!holds) return false;
    }
    return true;
}

namespace {

// Whether hostname `name` (exact, or itself a wildcard) lies strictly below
// wildcard `wild` ("*.example.com" covers "a.example.com" and "*.a.example.com").
bool wildcard_covers(const std::string &wild, const std::string &name)
{
    std::string suffix = wild.substr(1);  // ".example.com"
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Gateway API hostname intersection: the more specific of the two, or
// nothing. An empty hostname matches anything.
bool intersect(const std::string &listener, const std::string &route, std::string *out)
{
    if (listener.empty()) { *out = route; return true; }
    if (route.empty() || route == listener) { *out = listener; return true; }
    if (listener[0] == '*' && wildcard_covers(listener, route)) { *out = route; return true; }
    if (route[0] == '*' && wildcard_covers(route, listener)) { *out = listener; return true; }
    return false;
}

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
std::vector<std::string> lowercase_header_names(const HeaderModifier &h)
{
    std::vector<std::string> names = h.names();
    for (std::string &n : names) {
        for (char &ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return names;
}

// A CORS filter answers for the Access-Control-* response headers: a
// ResponseHeaderModifier of the same location may not name one.
void check_cors_headers(RuleFilters *out)
{
    auto cors = std::find_if(out->location.begin(), out->location.end(), [](const RouteFilter &f) { return f.type == "CORS"; });
    if (cors == out->location.end()) return;
    for (const RouteFilter &f : out->location) {
        if (f.type != "ResponseHeaderModifier") continue;
        for (const std::string &n : lowercase_header_names(f.headers)) {
            if (n.rfind("access-control-", 0) == 0) out->unsupported = "header " + n + " is the CORS filter's to set";
        }
    }
}

RuleFilters rule_filters_of(const RouteRule &rule);

RuleFilters rule_filters(const RouteRule &rule)
{
    RuleFilters out = rule_filters_of(rule);
    if (out.unsupported.empty()) check_cors_headers(&out);
    return out;
}

RuleFilters rule_filters_of(const RouteRule &rule)
{
    RuleFilters out;
    out.location = rule.filters;
    out.per_backend.resize(rule.backend_refs.size());
    auto has_type = [&](const std::string &type) {
        return std::any_of(out.location.begin(), out.location.end(),
                           [&](const RouteFilter &f) { return f.type == type; });
    };
    if (rule.backend_refs.size() == 1) {
        for (const RouteFilter &f : rule.backend_refs[0].filters) {
            bool clash = has_type(f.type) || (f.type == "RequestRedirect" && has_type("URLRewrite"))
                         || (f.type == "URLRewrite" && has_type("RequestRedirect"));
            if (clash) {
                out.unsupported = "a " + f.type + " filter on the backendRef beside the rule's own filters";
                return out;
            }
            out.location.push_back(f);
        }
        return out;
    }
    std::set<std::string> rule_headers;
    for (const RouteFilter &f : rule.filters) {
        if (f.type != "RequestHeaderModifier") continue;
        for (const std::string &n : lowercase_header_names(f.headers)) rule_headers.insert(n);
    }
    std::set<std::string> refs_with_filters;
    for (size_t i = 0; i < rule.backend_refs.size(); i++) {
        const BackendRef &b = rule.backend_refs[i];
        if (b.filters.empty()) continue;
        // the map over the chosen backend is keyed by upstream
        std::string ref = b.namespace_ + "/" + b.name + ":" + std::to_string(b.port);
        if (!refs_with_filters.insert(ref).second) {
            out.unsupported = "two backendRefs to " + b.name + " with filters";
        }
        for (const RouteFilter &f : b.filters) {
            if (f.type != "RequestHeaderModifier") {
                out.unsupported = "a " + f.type + " filter on one of several backendRefs is not rendered yet";
                continue;
            }
            for (const std::string &n : lowercase_header_names(f.headers)) {
                if (rule_headers.count(n)) {
                    out.unsupported = "header " + n + " is modified by both the rule and a backendRef";
                }
                // the backends that leave it alone pass on $http_NAME
                if (n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string::npos) {
                    out.unsupported = "header " + n + " cannot be modified per backendRef: only letters, digits, '-' and '_'";
                }
            }
            out.per_backend[i] = f.headers;
        }
    }
    return out;
}

// Whether a rule sets anything on its location beyond where requests go:
// filters (its own or its backendRefs') or timeouts.
bool has_location_settings(const RouteRule &rule)
{
    return !rule.filters.empty() || rule.request_timeout_ms >= 0 || rule.backend_timeout_ms >= 0
           || rule.retry_attempts > 0
           || std::any_of(rule.backend_refs.begin(), rule.backend_refs.end(),
                          [](const BackendRef &b) { return !b.filters.empty(); });
}

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
    Resolver(const Manifests &m, const Options &o, Plan *plan)
        : m_(m), o_(o), plan_(plan), objects_(m), policies_(resolve_policies(m, objects_, plan)), endpoint_rules_(m, o) {}

    void run()
    {
        select_gateways();
        for (const Gateway *gw : gateways_) {
            if (gw->allows_insecure_backends) policies_.insecure_allowed.insert(gw->meta.key());
            gateway_refs_[gw->meta.key()] = resolve_backend_client_certificate(
                m_, objects_, *gw, plan_, &written_, &backend_clients_[gw->meta.key()]);
        }
        for (const Gateway *gw : gateways_) {
            size_t first = listeners_.size();
            for (const Listener &l : gw->listeners) {
                listeners_.push_back(resolve_listener(*gw, l));
            }
            listener_ranges_[gw] = {first, listeners_.size()};
        }

        settle_protocol_conflicts(listeners_);

        std::vector<const HTTPRoute *> routes;
        for (const HTTPRoute &r : m_.http_routes) routes.push_back(&r);
        for (const HTTPRoute &r : m_.tls_routes) routes.push_back(&r);
        // precedence: the oldest route, then namespace/name
        std::stable_sort(routes.begin(), routes.end(), [](const HTTPRoute *a, const HTTPRoute *b) {
            return older_first(a->meta, b->meta);
        });
        // every status is known up front: no vector doubling on the way
        plan_->statuses.reserve(plan_->statuses.size() + gateways_.size() + routes.size()
                                + m_.backend_tls_policies.size());
        std::vector<ObjectStatus> route_statuses;
        route_statuses.reserve(routes.size());
        servers_.reserve(routes.size());
        server_owner_.reserve(routes.size());
        for (const HTTPRoute *r : routes) {
            route_statuses.push_back(attach_route(*r));
        }

        rejected_statuses(&route_statuses);

        gateway_statuses();
        std::sort(route_statuses.begin(), route_statuses.end(),
                  [](const ObjectStatus &a, const ObjectStatus &b) { return key_less(a.meta, b.meta); });
        for (ObjectStatus &st : route_statuses) {
            if (!st.refs.empty()) plan_->statuses.push_back(std::move(st));
        }
        route_statuses = std::vector<ObjectStatus>();  // moved out: free before the peak
        policy_statuses(policies_, plan_);
        isolate_listener_hostnames();
        finish_servers();
    }

private:
    void select_gateways()
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
            plan_->statuses.push_back(std::move(st));
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

    // Where a Gateway listens (spec.addresses): one IP address, given or
    // assigned (the --listen-address); other types are not supported, and
    // an address this host does not have cannot be listened on (nginx
    // would refuse the whole configuration).
    struct GatewayAddress {
        std::string address;
        std::optional<Condition> refused;  // Accepted=False or Programmed=False
    };
    const GatewayAddress &gateway_address(const Gateway &gw)
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
            if (!address_is_local(value)) {
                a.refused = cond::gateway_address_not_programmed("AddressNotUsable", "address " + value + " is not an address of this host");
                return a;
            }
            a.address = value;
        }
        if (ip_addresses > 1) {
            a.refused = cond::gateway_address_not_programmed("AddressNotAssigned", "gateway2nginx listens on one address per Gateway");
        }
        return a;
    }

    ListenerState resolve_listener(const Gateway &gw, const Listener &l)
    {
        ListenerState s;
        s.gateway = &gw;
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

        static const std::map<std::string, std::vector<std::string>> kinds_of_protocol = {
            {"HTTP", {"HTTPRoute", "GRPCRoute"}},
            {"HTTPS", {"HTTPRoute", "GRPCRoute"}},
            {"TLS", {"TLSRoute"}},
        };
        auto kinds = kinds_of_protocol.find(l.protocol);
        if (kinds == kinds_of_protocol.end()) {
            s.status.conditions.push_back(cond::listener_unsupported_protocol(l.protocol));
            return s;
        }
        s.category = l.protocol == "TLS" ? "TLS/" + l.tls_mode : l.protocol;
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
        if (l.protocol == "HTTPS" || (l.protocol == "TLS" && l.tls_mode == "Terminate")) {
            SecretFiles files = resolve_certificate(gw, l, &s);
            if (!files.ok()) {
                // routes still attach (GatewayWithAttachedRoutes), nothing is served
                s.accepted = true;
                s.status.conditions = {cond::listener_accepted(), cond::listener_not_programmed(files.why),
                                       cond::listener_invalid_certificate(files.reason == "RefNotPermitted", files.why)};
                return s;
            }
            std::vector<Condition> failure;
            if (!resolve_client_validation(m_, objects_, gw, l, plan_, &s.client, &failure)) {
                s.status.conditions = failure;
                return s;
            }
        }
        s.accepted = s.usable = true;
        s.status.conditions = {cond::listener_accepted(), cond::listener_programmed(),
                               invalid_kinds.empty() ? cond::listener_refs_resolved()
                                                     : cond::listener_invalid_route_kinds(l.protocol, invalid_kinds)};
        return s;
    }

    SecretFiles resolve_certificate(const Gateway &gw, const Listener &l, ListenerState *s)
    {
        SecretFiles files = tls_secret_files(m_, objects_, gw, l.certificate_refs.front(), "listener", plan_, &written_);
        s->certificate = files.certificate;
        s->certificate_key = files.key;
        return files;
    }

    // Objects rejected at parse: a warning each, and a route's parents on
    // our Gateways say why (a policy reports through its own status, as
    // an invalid policy).
    void rejected_statuses(std::vector<ObjectStatus> *route_statuses)
    {
        for (const RejectedObject &x : m_.rejected) {
            plan_->warnings.push_back(x.kind + " " + (x.meta.name.empty() ? "with an invalid name" : x.meta.key())
                                      + " is rejected: " + x.message);
            if (x.meta.name.empty() || x.kind == "BackendTLSPolicy") continue;
            ObjectStatus st;
            st.api_version = intern(x.api_version);
            st.kind = intern(x.kind);
            st.meta = status_meta(x.meta);
            st.refs_key = "parents";
            for (const ParentRef &p : x.parent_refs) {
                std::string ns = p.namespace_.empty() ? x.meta.namespace_ : p.namespace_;
                bool ours = std::any_of(gateways_.begin(), gateways_.end(), [&](const Gateway *g) {
                    return g->meta.namespace_ == ns && g->meta.name == p.name;
                });
                if (!ours) continue;
                ObjectStatus::RefStatus rs;
                rs.namespace_ = ns;
                rs.name = p.name;
                rs.section_name = p.section_name;
                rs.conditions = {cond::route_unsupported(x.message)};
                st.refs.push_back(std::move(rs));
            }
            if (!st.refs.empty()) route_statuses->push_back(std::move(st));
        }
    }

    ObjectStatus attach_route(const HTTPRoute &r)
    {
        ObjectStatus st;
        st.api_version = intern(r.api_version);
        st.kind = intern(r.kind);
        st.meta = status_meta(r.meta);
        st.refs_key = "parents";

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

        for (const ParentRef &ref : r.parent_refs) {
            std::string gw_ns = ref.namespace_.empty() ? r.meta.namespace_ : ref.namespace_;
            auto gw_it = std::find_if(gateways_.begin(), gateways_.end(), [&](const Gateway *g) {
                return g->meta.namespace_ == gw_ns && g->meta.name == ref.name;
            });
            if (ref.kind != "Gateway" || gw_it == gateways_.end()) {
                continue;  // not a parent of ours: its controller writes that status
            }
            ObjectStatus::RefStatus rs;
            rs.namespace_ = gw_ns;
            rs.name = ref.name;
            rs.section_name = ref.section_name;
            rs.conditions = attach_to_gateway(r, ref, **gw_it, unsupported);
            st.refs.push_back(std::move(rs));
        }
        return st;
    }

    std::vector<Condition> attach_to_gateway(const HTTPRoute &r, const ParentRef &ref,
                                             const Gateway &gw, const std::string &unsupported)
    {
        std::vector<ListenerState *> candidates;
        for (ListenerState &ls : listeners_of(gw)) {
            if (!ref.section_name.empty() && ls.listener->name != ref.section_name) continue;
            if (ref.port != 0 && ls.listener->port != ref.port) continue;
            candidates.push_back(&ls);
        }
        if (candidates.empty()) {
            return {cond::route_no_matching_parent("no listener of Gateway " + gw.meta.key()
                                                   + " matches sectionName/port"),
                    cond::route_refs_resolved()};
        }

        std::vector<ListenerState *> allowed;
        for (ListenerState *ls : candidates) {
            const Listener &l = *ls->listener;
            bool ns_ok = namespace_allowed(l, gw, r.meta.namespace_);
            const std::vector<std::string> &kinds = ls->status.supported_kinds;
            bool kind_ok = std::find(kinds.begin(), kinds.end(), r.kind) != kinds.end();
            if (ls->accepted && ns_ok && kind_ok) allowed.push_back(ls);
        }
        if (allowed.empty()) {
            return {cond::route_not_allowed("no listener of Gateway " + gw.meta.key()
                                            + " allows this route (namespace, kind or protocol)"),
                    cond::route_refs_resolved()};
        }

        std::vector<std::pair<ListenerState *, std::string>> hosts;
        std::set<std::pair<ListenerState *, std::string>> isolated;
        for (ListenerState *ls : allowed) {
            std::vector<std::string> route_hosts = r.hostnames;
            if (route_hosts.empty()) route_hosts.push_back("");
            for (const std::string &h : route_hosts) {
                std::string out;
                if (!intersect(ls->listener->hostname, h, &out)) continue;
                hosts.emplace_back(ls, out);
                if (claimed_by_a_more_specific_listener(*ls, out)) isolated.emplace(ls, out);
            }
        }
        if (hosts.empty()) {
            return {cond::route_no_matching_hostname(), cond::route_refs_resolved()};
        }
        if (!unsupported.empty()) {
            return {cond::route_unsupported(unsupported), cond::route_refs_resolved()};
        }

        Condition refs = cond::route_refs_resolved();
        std::set<ListenerState *> attached;
        std::string taken_by;
        bool served = false;
        for (auto &[ls, host] : hosts) {
            if (!ls->usable || isolated.count({ls, host})) {
                attached.insert(ls);
                continue;
            }
            served = true;
            // Gateways that share an address and port share the nginx
            // listener; a hostname there belongs to the oldest route's Gateway
            std::string &owner = server_owner_[ls->listen + " " + host];
            if (owner.empty()) owner = gw.meta.key();
            if (owner != gw.meta.key()) {
                taken_by = "hostname \"" + host + "\" on " + ls->listen + " is served by Gateway " + owner
                           + ", whose route is older";
                continue;
            }
            if (r.kind == "TLSRoute") {
                add_tls_route(*ls, r, host, gw, &refs);
                attached.insert(ls);
                continue;
            }
            Server &server = server_for(*ls, host);
            server.http2 |= r.kind == "GRPCRoute";
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

    // Listener isolation (GEP-1713): a request goes to the most specific
    // listener of its Gateway and port whose hostname matches it, so a
    // route's hostname that such a listener claims whole is not served
    // through a broader one (nginx would merge both into one server).
    bool claimed_by_a_more_specific_listener(const ListenerState &ls, const std::string &host) const
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
    void isolate_listener_hostnames()
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
            std::string &owner = server_owner_[ls.listen + " " + name];
            if (owner.empty()) owner = ls.gateway->meta.key();
            if (owner == ls.gateway->meta.key()) server_for(ls, name);
        }
    }

    // allowedRoutes.namespaces: a namespace given no Namespace object has
    // only the label the API server gives every namespace, its name
    bool namespace_allowed(const Listener &l, const Gateway &gw, const std::string &ns) const
    {
        if (l.allowed_namespaces_from == "All") return true;
        if (l.allowed_namespaces_from == "Same") return ns == gw.meta.namespace_;
        auto it = objects_.namespaces.find(ns);
        if (it != objects_.namespaces.end()) return l.allowed_namespaces_selector.matches(it->second->meta.labels);
        return l.allowed_namespaces_selector.matches({{"kubernetes.io/metadata.name", ns}});
    }

    Server &server_for(const ListenerState &ls, const std::string &host)
    {
        std::string key = ls.listen + " " + host;
        auto it = servers_.find(key);
        if (it != servers_.end()) return it->second;
        Server &s = servers_[key];
        s.listen = ls.listen;
        s.listener_port = ls.listener->port;
        s.insecure_allowed = ls.gateway->allows_insecure_backends;
        s.ssl = ls.listener->protocol == "HTTPS";
        s.server_name = host;
        s.listener_hostname = ls.listener->hostname;
        s.certificate = ls.certificate;
        s.certificate_key = ls.certificate_key;
        s.client = ls.client;
        s.backend_client = backend_clients_[ls.gateway->meta.key()];
        return s;
    }

    // A TLSRoute hostname on a TLS listener: its connections go to the
    // route's backends by SNI. The oldest route keeps a hostname.
    void add_tls_route(const ListenerState &ls, const HTTPRoute &r, const std::string &host,
                       const Gateway &gw, Condition *refs)
    {
        const bool terminate = ls.listener->tls_mode == "Terminate";
        StreamServer &server = stream_servers_[{ls.listen, terminate}];
        if (terminate) terminate_hostnames_[ls.listen].insert(ls.listener->hostname);
        if (server.listen.empty()) {
            server.listen = ls.listen;
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
        auto [taken, added] = stream_route_sources_[{ls.listen, terminate}].emplace(host, route.source);
        if (!added) {
            plan_->warnings.push_back("TLSRoute " + r.meta.key() + ": hostname \"" + host + "\" on " + ls.listen
                                      + " is served by the older TLSRoute " + taken->second);
            return;
        }
        server.routes.push_back(std::move(route));
    }

    void add_rule(Server &server, const HTTPRoute &r, const RouteRule &rule, size_t index,
                  const Gateway &gw, Condition *refs)
    {
        // an invalid backendRef keeps its share of the traffic, answered 500
        RuleFilters filters = rule_filters(rule);
        std::vector<WeightedUpstream> backends;
        for (size_t i = 0; i < rule.backend_refs.size(); i++) {
            const BackendRef &b = rule.backend_refs[i];
            WeightedUpstream wu;
            BackendTarget target = r.kind == "GRPCRoute" ? BackendTarget::Grpc : BackendTarget::Http;
            if (!resolve_backend(r, b, gw, target, &wu, refs, 1 + rule.retry_attempts)) {
                wu = refused_share(b.weight);
            }
            wu.request_headers = filters.per_backend[i];
            if (wu.weight > 0) backends.push_back(wu);
        }

        // a mirror that cannot be resolved is left out (ResolvedRefs says why)
        std::vector<Mirror> mirrors;
        for (const RouteFilter &f : filters.location) {
            if (f.type != "RequestMirror") continue;
            Mirror m{{}, f.mirror_numerator, f.mirror_denominator};
            if (m.numerator > 0 && resolve_backend(r, f.mirror, gw, BackendTarget::Mirror, &m.backend, refs)) {
                mirrors.push_back(std::move(m));
            }
        }

        static const std::vector<RouteMatch> kWholePath{RouteMatch{}};  // no match: PathPrefix "/"
        const std::vector<RouteMatch> &matches = rule.matches.empty() ? kWholePath : rule.matches;
        bool redirects = std::any_of(filters.location.begin(), filters.location.end(),
                                     [](const RouteFilter &f) { return f.type == "RequestRedirect"; });
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
                        l.grpc = r.kind == "GRPCRoute";
                        l.source = source;
                        l.unconditional = false;
                        server.locations.push_back(std::move(l));
                        it = server.locations.end() - 1;
                    } else if (it->unconditional && !it->filters.empty()) {
                        plan_->warnings.push_back(source + ": its header, query or method match on " + loc
                                                  + " is dropped: the path's other rule has filters");
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
                l.grpc = r.kind == "GRPCRoute";
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

    // The Service and port a backendRef names; null, and why in *refs,
    // when the route may not or cannot refer to it.
    const ServicePort *referenced_port(const HTTPRoute &r, const BackendRef &b, const Service **svc_out,
                                       Condition *refs) const
    {
        std::string ns = b.namespace_.empty() ? r.meta.namespace_ : b.namespace_;
        if (!b.group.empty() || b.kind != "Service") {
            *refs = cond::route_invalid_kind("backendRef " + b.name + ": kind " + b.kind + " is not supported");
            return nullptr;
        }
        if (ns != r.meta.namespace_ && !granted(m_, r.kind, r.meta.namespace_, "Service", ns, b.name)) {
            *refs = cond::route_ref_not_permitted("backendRef Service " + ns + "/" + b.name
                                                  + " is in another namespace and no ReferenceGrant allows it");
            return nullptr;
        }
        const Service *svc = ObjectIndex::find(objects_.services, ns, b.name);
        if (svc == nullptr) {
            *refs = cond::route_backend_not_found("Service " + ns + "/" + b.name + " does not exist");
            return nullptr;
        }
        auto port = std::find_if(svc->ports.begin(), svc->ports.end(),
                                 [&](const ServicePort &p) { return p.port == b.port; });
        if (port == svc->ports.end()) {
            *refs = cond::route_backend_not_found("Service " + ns + "/" + b.name + " has no port "
                                                  + std::to_string(b.port));
            return nullptr;
        }
        *svc_out = svc;
        return &*port;
    }

    // tries: how many tries a request may make (a rule's retries and the
    // first), each to a peer of its own in nginx
    bool resolve_backend(const HTTPRoute &r, const BackendRef &b, const Gateway &gw, BackendTarget target,
                         WeightedUpstream *out, Condition *refs, int tries = 1)
    {
        const Service *svc = nullptr;
        const ServicePort *port = referenced_port(r, b, &svc, refs);
        if (port == nullptr) return false;

        // behind a Passthrough listener the client's TLS reaches the backend
        // untouched: a BackendTLSPolicy has nothing to act on (GEP-1897)
        BoundPolicy *policy = nullptr;
        if (target != BackendTarget::StreamPassthrough) {
            policy = policies_.find(objects_.position(*svc), port->name);
            policies_.reached(objects_.position(*svc), port->name, gw.meta.key());
        }
        out->grpc = target == BackendTarget::Grpc;
        // GEP-1911: the port's appProtocol says what the backend speaks;
        // kubernetes.io/h2c is HTTP/2 by prior knowledge (over TLS where a
        // BackendTLSPolicy applies), which nginx speaks by grpc_pass
        if (target == BackendTarget::Http || target == BackendTarget::Mirror) {
            const std::string &protocol = port->app_protocol;
            out->websocket = protocol == "kubernetes.io/ws" || (protocol == "kubernetes.io/wss" && policy != nullptr);
            out->grpc = protocol == "kubernetes.io/h2c";
            const std::string service_port = "Service " + svc->meta.key() + " port " + std::to_string(port->port);
            if (protocol == "kubernetes.io/wss" && policy == nullptr) {
                *refs = cond::route_unsupported_protocol(service_port + ": appProtocol " + protocol
                                                         + " needs a BackendTLSPolicy to verify the backend");
                return false;
            }
            if (out->grpc && target == BackendTarget::Mirror) {
                *refs = cond::route_unsupported_protocol("RequestMirror to " + service_port
                                                         + ": appProtocol kubernetes.io/h2c is not supported for mirrors");
                return false;
            }
            target = out->grpc ? BackendTarget::Grpc : BackendTarget::Http;
        }
        bool denied = policy && policy->policy->insecure() && !gw.allows_insecure_backends;
        out->upstream = upstream_for(*svc, *port, policy, target, denied ? &gw : nullptr, tries);
        out->tls = policy != nullptr;
        out->weight = b.weight;
        return true;
    }

    // denied_by: a Gateway whose gate refuses the policy's insecure mode; its
    // routes get an upstream of their own that is never reached (a 5xx)
    std::string upstream_for(const Service &svc, const ServicePort &port, const BoundPolicy *policy,
                             BackendTarget target, const Gateway *denied_by, int tries = 1)
    {
        const bool stream = target == BackendTarget::StreamTerminate || target == BackendTarget::StreamPassthrough;
        std::string name = "backend_" + safe_name(svc.meta.namespace_) + "_" + safe_name(svc.meta.name)
                           + "_" + std::to_string(port.port) + (denied_by ? "_insecure_denied" : "")
                           + (target == BackendTarget::StreamPassthrough ? "_passthrough" : "")
                           + (tries > 1 ? "_tries" + std::to_string(tries) : "");
        auto [upstream, added] = (stream ? stream_upstreams_ : upstreams_).get(name);
        Upstream &u = *upstream;
        if (target == BackendTarget::Grpc) u.for_grpc = true;
        if (target == BackendTarget::Http || target == BackendTarget::StreamTerminate) u.for_http = true;
        if (!added) return name;

        u.name = name;
        u.comment = "Service " + svc.meta.key() + " port " + std::to_string(port.port);
        u.tenant = safe_name(svc.meta.namespace_);
        u.tries = tries;
        for (const EndpointSlice *es_ptr : objects_.slices_of_service[objects_.position(svc)]) {
            const EndpointSlice &es = *es_ptr;
            for (const EndpointPort &ep : es.ports) {
                if (ep.name != port.name) continue;
                for (const std::string &addr : es.ready_addresses) {
                    std::string host = addr.find(':') != std::string::npos ? "[" + addr + "]" : addr;
                    if (!endpoint_allowed(host, addr, ep.port, "EndpointSlice " + es.meta.key())) continue;
                    u.servers.push_back(host + ":" + std::to_string(ep.port));
                }
            }
        }
        if (u.servers.empty() && svc.type == "ExternalName"
            && endpoint_allowed(svc.external_name, svc.external_name, port.port,
                                "Service " + svc.meta.key() + " (externalName)")) {
            u.servers.push_back(svc.external_name + ":" + std::to_string(port.port));
        }
        if (u.servers.empty() && !o_.resolver.empty()) {
            // inside the cluster: the Service's stable ClusterIP through its DNS
            // name, resolved when nginx loads the configuration
            u.servers.push_back(svc.meta.name + "." + svc.meta.namespace_ + ".svc.cluster.local:"
                                + std::to_string(port.port));
        }
        std::sort(u.servers.begin(), u.servers.end());
        u.servers.erase(std::unique(u.servers.begin(), u.servers.end()), u.servers.end());
        if (policy != nullptr) {
            u.policy = policy->upstream;
            u.comment += ", BackendTLSPolicy " + policy->policy->meta.key();
            if (!policy->usable) {
                u.unusable = "BackendTLSPolicy " + policy->policy->meta.key() + " cannot be honoured";
            } else if (denied_by != nullptr) {
                u.unusable = "BackendTLSPolicy " + policy->policy->meta.key() + " uses an insecure mode that Gateway "
                             + denied_by->meta.key() + " does not allow";
            }
        }
        return name;
    }

    // whether a tenant's endpoint may be served (endpoints.h); a refused
    // one is left out, with a warning naming its object
    bool endpoint_allowed(const std::string &host, const std::string &address, int port, const std::string &owner)
    {
        const std::string why = endpoint_rules_.refusal(address, port);
        if (why.empty()) return true;
        const std::string endpoint = host + ":" + std::to_string(port);
        if (endpoints_refused_.insert(owner + " " + endpoint).second) {
            plan_->warnings.push_back(owner + ": endpoint " + endpoint + " is not served: it " + why);
        }
        return false;
    }

    void gateway_statuses()
    {
        for (const Gateway *gw : gateways_) {
            ObjectStatus st;
            st.api_version = "gateway.networking.k8s.io/v1";
            st.kind = "Gateway";
            st.meta = status_meta(gw->meta);
            bool insecure_frontend = false;
            size_t accepted = 0, programmed = 0;
            for (const ListenerState &ls : listeners_of(*gw)) {
                st.listeners.push_back(ls.status);
                accepted += ls.accepted;
                programmed += ls.usable;
                insecure_frontend |= ls.usable && ls.client.verify == "optional_no_ca" && !ls.client.ca.empty();
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
            // where clients reach it: the address it listens on, unless that is every address
            if (programmed > 0 && address.address != "0.0.0.0" && address.address != "::") {
                st.addresses.push_back(address.address);
            }
            if (!gateway_refs_[gw->meta.key()].type.empty()) st.conditions.push_back(gateway_refs_[gw->meta.key()]);
            if (gw->allows_insecure_backends) st.conditions.push_back(cond::gateway_insecure_backends_allowed());
            if (insecure_frontend) st.conditions.push_back(cond::gateway_insecure_frontend());
            plan_->statuses.push_back(std::move(st));
        }
    }

    void finish_servers()
    {
        // nginx 1.22 speaks h2c by prior knowledge only: HTTP/1 clients of a
        // cleartext port that also carries gRPC cannot be served (from
        // 1.25.1 nginx tells the two apart by the HTTP/2 preface)
        std::set<std::string> h2c, http1;
        for (const auto &[key, server] : servers_) {
            if (server.http2 && !server.ssl && o_.nginx_version < kNginxHttp2Directive) h2c.insert(server.listen);
            for (const Location &l : server.locations) {
                if (!l.grpc) http1.insert(server.listen);
            }
        }
        for (const std::string &listen : h2c) {
            if (http1.count(listen)) {
                plan_->warnings.push_back("listener " + listen + " carries GRPCRoutes and HTTPRoutes without TLS: "
                                          "it speaks HTTP/2 only, so HTTP/1 clients of its HTTPRoutes fail");
            }
        }
        // the plan takes them over in key order: no second copy, no
        // doubling at the peak
        std::vector<std::pair<const std::string, Server> *> by_key;
        by_key.reserve(servers_.size());
        for (auto &entry : servers_) by_key.push_back(&entry);
        std::sort(by_key.begin(), by_key.end(), [](const auto *a, const auto *b) { return a->first < b->first; });
        plan_->servers.reserve(plan_->servers.size() + servers_.size());
        for (auto *entry : by_key) {
            order_locations(&entry->second);
            plan_->servers.push_back(std::move(entry->second));
        }
        servers_.clear();
        plan_->upstreams = upstreams_.take_sorted();
        finish_stream_servers();
    }

    void finish_stream_servers()
    {
        const bool by_name = o_.nginx_version >= kNginxStreamServerName;
        size_t hops = 0;
        // terminating servers on loopback addresses, by the port they serve
        std::map<std::string, std::vector<StreamServer>> behind;
        for (auto it = stream_servers_.begin(); it != stream_servers_.end();) {
            const std::string listen = it->first.first;
            if (!it->first.second) {
                ++it;
                continue;
            }
            StreamServer &terminate = it->second;
            const auto &certificates = stream_certificates_[listen];
            const bool mixed = stream_servers_.count({listen, false}) > 0;
            bool split = !by_name && needs_server_per_hostname(terminate, certificates);
            if (split && hops + terminate.routes.size() > kMaxTerminateHops) {
                plan_->warnings.push_back("stream listener " + listen + ": more Terminate hostnames than loopback "
                                          "addresses for them; the port is one server");
                split = false;
            }
            if (!mixed && !split) {
                ++it;
                continue;
            }
            if (mixed && hops + 1 > kMaxTerminateHops) {
                plan_->warnings.push_back("stream listener " + listen + ": no loopback address is left for its "
                                          "Terminate listeners; their hostnames are refused");
                it = stream_servers_.erase(it);
                continue;
            }
            StreamServer &front = stream_servers_[{listen, false}];
            if (front.listen.empty()) {  // no Passthrough listener: a front of its own
                front.listen = listen;
                front.insecure_allowed = terminate.insecure_allowed;
            }
            if (!split) {
                finish_stream_server(&terminate, certificates, by_name, &plan_->warnings);
                put_behind(&front, &terminate, terminate_hostnames_[listen], ++hops);
                behind[listen].push_back(std::move(terminate));
            } else {
                // nginx before 1.25.5 has one certificate and one proxy_ssl
                // per stream server: a server for each hostname, as nginx
                // from 1.25.5 picks by SNI itself
                std::vector<StreamRoute> routes = std::move(terminate.routes);
                terminate.routes.clear();
                std::sort(routes.begin(), routes.end(),
                          [](const StreamRoute &a, const StreamRoute &b) { return a.hostname < b.hostname; });
                for (StreamRoute &route : routes) {
                    StreamServer one = terminate;
                    const std::string hostname = route.hostname;
                    // its listener's certificate alone
                    std::map<std::string, std::pair<std::string, std::string>> own;
                    own[""] = {route.certificate, route.certificate_key};
                    one.routes.push_back(std::move(route));
                    finish_stream_server(&one, own, by_name, &plan_->warnings);
                    put_behind(&front, &one, {hostname}, ++hops);
                    behind[listen].push_back(std::move(one));
                }
            }
            drop_passthrough_of_terminate_hostnames(&front);
            it = stream_servers_.erase(it);
        }
        for (auto &[key, server] : stream_servers_) {
            finish_stream_server(&server, stream_certificates_[key.first], by_name, &plan_->warnings);
            plan_->stream_servers.push_back(std::move(server));
            for (StreamServer &terminating : behind[key.first]) plan_->stream_servers.push_back(std::move(terminating));
        }
        stream_servers_.clear();
        plan_->stream_upstreams = stream_upstreams_.take_sorted();
    }

    // 127.254.0.1 .. 127.254.255.255
    static constexpr size_t kMaxTerminateHops = 65535;

    // A terminating server behind the port's front (TLSRouteModeMixed, or a
    // server per hostname): the front reads the SNI (ssl_preread) and
    // forwards `hostnames`, still encrypted, to the terminating server,
    // which listens on loopback address 127.254.0.N of the same port
    // instead.
    void put_behind(StreamServer *front, StreamServer *terminate, const std::set<std::string> &hostnames, size_t n)
    {
        const std::string port = front->listen.substr(front->listen.rfind(':') + 1);
        terminate->listen = "127.254." + std::to_string(n / 256) + "." + std::to_string(n % 256) + ":" + port;
        WeightedUpstream hop;
        hop.upstream = "tls_terminate_" + std::to_string(n);
        Upstream *upstream = stream_upstreams_.get(hop.upstream).first;
        upstream->name = hop.upstream;
        upstream->comment = "the Terminate listeners of " + front->listen;
        upstream->servers = {terminate->listen};
        for (const std::string &hostname : hostnames) {
            StreamRoute route;
            route.hostname = hostname;
            route.backends = {hop};
            route.source = front->listen;
            route.to_terminate = true;
            front->routes.push_back(std::move(route));
        }
    }

    // A Passthrough route of a hostname the port sends to a terminating
    // server loses it.
    void drop_passthrough_of_terminate_hostnames(StreamServer *front)
    {
        std::unordered_set<std::string> terminated;
        for (const StreamRoute &r : front->routes) {
            if (r.to_terminate) terminated.insert(r.hostname);
        }
        auto lost = [&](const StreamRoute &r) {
            if (r.to_terminate || !terminated.count(r.hostname)) return false;
            plan_->warnings.push_back("hostname \"" + r.hostname + "\" on " + front->listen
                                      + " is a Terminate listener's; the Passthrough TLSRoute " + r.source
                                      + " does not get it");
            return true;
        };
        front->routes.erase(std::remove_if(front->routes.begin(), front->routes.end(), lost), front->routes.end());
    }

    const Manifests &m_;
    const Options &o_;
    Plan *plan_;
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
    // hashed, not ordered: one per hostname, and looked up for every
    // route; finish_servers() hands them to the plan in key order
    std::unordered_map<std::string, Server> servers_;                // by "listen host"
    std::unordered_map<std::string, std::string> server_owner_;     // "listen host" -> Gateway
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

}  // namespace

Plan resolve(const Manifests &manifests, const Options &options)
{
    Plan plan;
    Resolver(manifests, options, &plan).run();
    return plan;
}

}  // namespace g2n
