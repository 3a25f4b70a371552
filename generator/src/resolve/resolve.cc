// resolve(): the Resolver's run over every Gateway and route, and the
// helpers its files share (resolve/resolver.h).
#include "resolve/resolver.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <deque>
#include <set>
#include <stdexcept>
#include <mutex>
#include <unordered_set>

#include "resolve/conditions.h"
#include "resolve/endpoints.h"

namespace g2n {

std::string_view TextTable::intern(std::string_view text)
{
    // a lookup builds no string
    auto known = index_.find(text);
    if (known != index_.end()) return *known;
    return *index_.insert(storage_.emplace_back(text)).first;
}

namespace {

thread_local ResolveScope *current_scope = nullptr;

}  // namespace

ResolveScope::ResolveScope(TextTable *texts) : texts(texts), outer_(current_scope) { current_scope = this; }

ResolveScope::~ResolveScope() { current_scope = outer_; }

ResolveScope &ResolveScope::current()
{
    if (current_scope == nullptr) throw std::logic_error("intern() outside resolve()");
    return *current_scope;
}

std::string_view intern(std::string_view text) { return ResolveScope::current().texts->intern(text); }

StatusList::StatusList(std::vector<ObjectStatus> &&statuses)
{
    items_.reserve(statuses.size());
    for (ObjectStatus &st : statuses) items_.push_back(std::make_shared<const ObjectStatus>(std::move(st)));
    statuses = std::vector<ObjectStatus>();
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

bool wildcard_covers(const std::string &wild, const std::string &name)
{
    std::string suffix = wild.substr(1);  // ".example.com"
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool intersect(const std::string &listener, const std::string &route, std::string *out)
{
    if (listener.empty()) { *out = route; return true; }
    if (route.empty() || route == listener) { *out = listener; return true; }
    if (listener[0] == '*' && wildcard_covers(listener, route)) { *out = route; return true; }
    if (route[0] == '*' && wildcard_covers(route, listener)) { *out = listener; return true; }
    return false;
}

std::vector<std::string> lowercase_header_names(const HeaderModifier &h)
{
    std::vector<std::string> names = h.names();
    for (std::string &n : names) {
        for (char &ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return names;
}

void check_cors_headers(RuleFilters *out)
{
    auto cors = std::find_if(out->location.begin(), out->location.end(),
                             [](const RouteFilter &f) { return f.type == FilterType::CORS; });
    if (cors == out->location.end()) return;
    for (const RouteFilter &f : out->location) {
        if (f.type != FilterType::ResponseHeaderModifier) continue;
        for (const std::string &n : lowercase_header_names(f.headers)) {
            if (n.rfind("access-control-", 0) == 0) out->unsupported = "header " + n + " is the CORS filter's to set";
        }
    }
}

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
    auto has_type = [&](FilterType type, const std::string &name) {
        return std::any_of(out.location.begin(), out.location.end(), [&](const RouteFilter &f) {
            return f.type == type && (type != FilterType::Other || f.type_name == name);
        });
    };
    if (rule.backend_refs.size() == 1) {
        for (const RouteFilter &f : rule.backend_refs[0].filters) {
            bool clash = has_type(f.type, f.type_name)
                         || (f.type == FilterType::RequestRedirect && has_type(FilterType::URLRewrite, ""))
                         || (f.type == FilterType::URLRewrite && has_type(FilterType::RequestRedirect, ""));
            if (clash) {
                out.unsupported = "a " + f.type_name + " filter on the backendRef beside the rule's own filters";
                return out;
            }
            out.location.push_back(f);
        }
        return out;
    }
    std::set<std::string> rule_headers;
    for (const RouteFilter &f : rule.filters) {
        if (f.type != FilterType::RequestHeaderModifier) continue;
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
            if (f.type != FilterType::RequestHeaderModifier) {
                out.unsupported = "a " + f.type_name + " filter on one of several backendRefs is not rendered yet";
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

bool has_location_settings(const RouteRule &rule)
{
    return !rule.filters.empty() || rule.request_timeout_ms >= 0 || rule.backend_timeout_ms >= 0
           || rule.retry_attempts > 0
           || std::any_of(rule.backend_refs.begin(), rule.backend_refs.end(),
                          [](const BackendRef &b) { return !b.filters.empty(); });
}

bool location_has_settings(const Location &l)
{
    return !l.filters.empty() || !l.mirrors.empty() || l.request_timeout_ms >= 0 || l.backend_timeout_ms >= 0
           || l.retry_tries > 1
           || std::any_of(l.backends.begin(), l.backends.end(),
                          [](const WeightedUpstream &b) { return !b.request_headers.empty(); });
}

void Resolver::run()
{
    select_gateways();
    for (const Gateway *gw : gateways_) {
        if (gw->allows_insecure_backends) policies_.insecure_allowed.insert(gw->meta.key());
        gateway_refs_[gw->meta.key()] = resolve_backend_client_certificate(
            objects_, *gw, plan_, &written_, &backend_clients_[gw->meta.key()]);
    }
    select_listener_sets();
    resolve_listeners();

    std::vector<const Route *> routes;
    for (const Route &r : m_.http_routes) routes.push_back(&r);
    for (const Route &r : m_.stream_routes) routes.push_back(&r);
    // precedence: the oldest route, then namespace/name
    std::stable_sort(routes.begin(), routes.end(), [](const Route *a, const Route *b) {
        return older_first(a->meta, b->meta);
    });
    // every status is known up front: no vector doubling on the way
    statuses_.reserve(statuses_.size() + gateways_.size() + listener_sets_.size() + routes.size()
                            + m_.backend_tls_policies.size());
    // each made where it ends: sorting a vector of them and moving them
    // into the list held 10,000 twice at the peak
    std::vector<StatusList::Item> route_statuses;
    route_statuses.reserve(routes.size());
    servers_.reserve(routes.size());
    // an upstream a Service port, as nearly all are: at most one a
    // backendRef and one a Service port
    size_t backend_refs = 0, service_ports = 0;
    for (const Route &r : m_.http_routes) {
        for (const RouteRule &rule : r.rules) backend_refs += rule.backend_refs.size();
    }
    for (const Service &s : m_.services) service_ports += s.ports.size();
    upstreams_.reserve(std::min(backend_refs, service_ports));
    claim_hostnames(routes);
    for (const Route *r : routes) {
        route_statuses.push_back(std::make_shared<const ObjectStatus>(attach_route(*r)));
    }
    location_index_ = {};  // every rule is placed: 1.4 MB at 10,000 routes, freed before the peak

    rejected_statuses(&route_statuses);

    gateway_statuses();
    listener_set_statuses();
    std::sort(route_statuses.begin(), route_statuses.end(),
              [](const StatusList::Item &a, const StatusList::Item &b) { return key_less(a->meta, b->meta); });
    for (StatusList::Item &st : route_statuses) {
        if (!st->refs.empty()) statuses_.push_back(std::move(st));
    }
    route_statuses = std::vector<StatusList::Item>();
    policy_statuses(policies_, plan_, &statuses_);
    plan_->statuses = std::make_shared<const StatusList>(std::move(statuses_));
    isolate_listener_hostnames();
    finish_servers();
}


Plan resolve(const Manifests &manifests, const Options &options, ResolveReads *reads)
{
    Plan plan;
    ResolveScope scope(plan.texts.get());
    Resolver(manifests, options, &plan, reads).run();
    drop_unnamed_bundles(&plan);
    return plan;
}

}  // namespace g2n
