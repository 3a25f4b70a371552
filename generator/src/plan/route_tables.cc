// A server's rendered locations as the entry of the module's route table
// that serves the same requests the same way (route_tables.h).
#include "plan/route_tables.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "digest.h"
#include "recent_memo.h"
#include "gtls_routes_json.h"
#include "gtls_upstream_api.h"

namespace g2n {

namespace {

gtls::HeaderModifier header_modifier(const HeaderModifier &h)
{
    gtls::HeaderModifier m;
    for (const auto &[name, value] : h.set) m.set.push_back({name, value});
    for (const auto &[name, value] : h.add) m.add.push_back({name, value});
    m.remove = h.remove;
    return m;
}

// On an exact location (a PathPrefix's own path), replacing the prefix is
// replacing the whole path, as its rendered rewrite does
gtls::PathRewrite path_rewrite(const PathModifier &p, bool exact)
{
    switch (p.type) {
    case PathModifierType::None: return {};
    case PathModifierType::ReplaceFullPath: return {gtls::PathRewriteKind::ReplaceFullPath, p.value};
    case PathModifierType::ReplacePrefixMatch:
        return {exact ? gtls::PathRewriteKind::ReplaceFullPath : gtls::PathRewriteKind::ReplacePrefixMatch, p.value};
    }
    return {};
}

// The table names upstream{} blocks, each with the scheme the rendered
// location would pass it by: HTTP/1.1 (WebSocket upgrades included) or
// HTTP/2 (gRPC, h2c), over TLS where a policy applies
void table_backends(const std::vector<WeightedUpstream> &in, std::vector<gtls::WeightedBackend> *out)
{
    for (const WeightedUpstream &b : in) {
        gtls::BackendScheme scheme = gtls::BackendScheme::Https;
        if (!b.upstream.empty()) {
            scheme = b.grpc ? (b.tls ? gtls::BackendScheme::Grpcs : gtls::BackendScheme::Grpc)
                            : (b.tls ? gtls::BackendScheme::Https : gtls::BackendScheme::Http);
        }
        out->push_back({b.upstream, static_cast<unsigned>(b.weight), header_modifier(b.request_headers), b.websocket, scheme});
    }
}

bool location_action(const Location &l, gtls::RouteAction *a, std::string *why)
{
    for (const Mirror &m : l.mirrors) {
        if (!m.backend.tls || m.backend.grpc) *why = "a RequestMirror to a plaintext or gRPC backend";
        a->mirrors.push_back({m.backend.upstream, static_cast<unsigned>(m.numerator), static_cast<unsigned>(m.denominator)});
    }
    const bool exact = l.match.kind == LocationMatch::Kind::Exact;
    for (const RouteFilter &f : l.filters) {
        switch (f.type) {
        case FilterType::RequestHeaderModifier: a->request_headers = header_modifier(f.headers); break;
        case FilterType::ResponseHeaderModifier: a->response_headers = header_modifier(f.headers); break;
        case FilterType::RequestRedirect:
            a->redirect = gtls::Redirect{f.scheme, f.hostname, static_cast<unsigned>(f.port), path_rewrite(f.path, exact),
                                         static_cast<unsigned>(f.status_code)};
            break;
        case FilterType::URLRewrite: a->rewrite = gtls::UrlRewrite{f.hostname, path_rewrite(f.path, exact)}; break;
        case FilterType::RequestMirror: break;  // the location's mirrors, above
        default: *why = "a " + f.type_name + " filter"; break;
        }
    }
    if (!why->empty()) return false;
    a->request_timeout_ms = l.request_timeout_ms;
    a->backend_timeout_ms = l.backend_timeout_ms;
    a->retry_attempts = static_cast<unsigned>(std::max(l.retry_tries - 1, 0));
    for (int code : l.retry_codes) a->retry_codes.push_back(static_cast<unsigned>(code));
    if (a->redirect) return true;
    if (l.return_code != 0) {
        a->status = static_cast<unsigned>(l.return_code);
        return true;
    }
    table_backends(l.backends, &a->backends);
    return true;
}

bool compiled(const std::string &pattern, std::shared_ptr<gtls::Regex> *to, std::string *why)
{
    std::string error;
    *to = gtls::Regex::compile(pattern, &error, false);
    if (*to == nullptr) *why = "a pattern the table does not compile (" + error + ")";
    return *to != nullptr;
}

// What a location matches, as a table's match
bool path_match(const Location &l, gtls::RouteMatch *m, std::string *why)
{
    switch (l.match.kind) {
    case LocationMatch::Kind::Exact:
        m->path_kind = gtls::PathMatchKind::Exact;
        m->path = l.match.path;
        return true;
    case LocationMatch::Kind::Prefix:
        // "/x/" and "= /x" come together: the prefix without its "/"
        m->path_kind = gtls::PathMatchKind::PathPrefix;
        m->path = l.match.path.size() > 1 ? l.match.path.substr(0, l.match.path.size() - 1) : l.match.path;
        return true;
    case LocationMatch::Kind::Regex: {
        m->path_kind = gtls::PathMatchKind::RegularExpression;
        // "^(?:P)$" (plan/match.cc): the table matches P against the whole path
        const std::string &p = l.match.path;
        const bool wrapped = p.size() >= 6 && p.compare(0, 4, "^(?:") == 0 && p.compare(p.size() - 2, 2, ")$") == 0;
        m->path = wrapped ? p.substr(4, p.size() - 6) : p;
        return compiled(m->path, &m->path_regex, why);
    }
    }
    return false;
}

bool conditions(const std::vector<MatchCondition> &in, gtls::RouteMatch *m, std::string *why)
{
    for (const MatchCondition &c : in) {
        if (c.subject == MatchCondition::Subject::Method) {
            m->method = c.value;
            continue;
        }
        gtls::ValueMatch v;
        v.name = c.name;
        v.value = c.value;
        if (c.regex) {
            v.kind = gtls::ValueMatchKind::RegularExpression;
            if (!compiled(c.value, &v.regex, why)) return false;
        }
        (c.subject == MatchCondition::Subject::Header ? m->headers : m->query).push_back(std::move(v));
    }
    return true;
}

// nginx's choice among locations: exact, then regular expressions in
// order, then the longest prefix
std::vector<const Location *> nginx_order(const Server &s)
{
    std::vector<const Location *> out;
    for (const Location &l : s.locations) out.push_back(&l);
    auto group = [](const Location *l) {
        return l->match.kind == LocationMatch::Kind::Exact ? 0 : l->match.kind == LocationMatch::Kind::Regex ? 1 : 2;
    };
    std::stable_sort(out.begin(), out.end(), [&](const Location *a, const Location *b) {
        if (group(a) != group(b)) return group(a) < group(b);
        return group(a) == 2 && a->match.path.size() > b->match.path.size();
    });
    return out;
}

}  // namespace

std::string route_table_name(const Server &s)
{
    return "port_" + std::to_string(s.listener_port);
}

std::string route_table_host(const Server &s)
{
    return s.server_name.empty() ? "*" : s.server_name;
}

namespace {

// A server's rules as the table's JSON, before the module reads it
// back; "" and *why where the table cannot serve them
std::string entry_rules_json(const Server &s, std::string *why)
{
    std::vector<gtls::RouteAction> actions;
    std::vector<gtls::RouteMatch> matches;
    auto add = [&](gtls::RouteMatch m, gtls::RouteAction a) {
        m.action = static_cast<uint32_t>(actions.size());
        actions.push_back(std::move(a));
        matches.push_back(std::move(m));
    };
    why->clear();
    for (const Location *l : nginx_order(s)) {
        gtls::RouteMatch path;
        if (!path_match(*l, &path, why)) return "";
        for (const ConditionalTarget &t : l->conditional) {
            gtls::RouteMatch m = path;
            gtls::RouteAction a;
            if (!conditions(t.conditions, &m, why)) return "";
            if (t.return_code != 0) {
                a.status = static_cast<unsigned>(t.return_code);
            } else {
                table_backends(t.backends, &a.backends);
            }
            add(std::move(m), std::move(a));
        }
        gtls::RouteAction a;
        if (!l->unconditional) {
            a.status = 404;  // a rendered location answers what its conditions do not take
        } else if (!location_action(*l, &a, why)) {
            return "";
        }
        add(std::move(path), std::move(a));
        // more than the module takes: not written out and read back to learn it
        if (matches.size() > gtls::kMaxHostMatches || actions.size() > gtls::kMaxHostActions) {
            *why = "the table refuses it: more than " + std::to_string(gtls::kMaxHostMatches) + " rules for "
                   + route_table_host(s);
            return "";
        }
    }
    try {
        return gtls::host_routes_json(gtls::HostRoutes(route_table_host(s), std::move(actions), std::move(matches)));
    } catch (const std::exception &e) {
        *why = std::string("the table refuses it: ") + e.what();
        return "";
    }
}

// Read back as the module reads it: what it would refuse stays rendered
std::shared_ptr<const gtls::HostRoutes> read_back(const std::string &rules, const std::string &host, std::string *why)
{
    try {
        return gtls::parse_host_routes(rules, host);
    } catch (const std::exception &e) {
        *why = std::string("the table refuses it: ") + e.what();
        return nullptr;
    }
}

// Entries read back before, by the digest of the rules they were read
// from: a hostname whose rules are unchanged is not read back again at
// each route change (at 10,000 rules, most of its CPU). What the last two
// plans used is kept, no more.
struct ReadBack {
    std::string table_json, refusal;
};

RecentMemo<ReadBack> &read_back_entries()
{
    static RecentMemo<ReadBack> entries;
    return entries;
}

}  // namespace

std::shared_ptr<const gtls::HostRoutes> table_entry(const Server &s, std::string *why)
{
    const std::string rules = entry_rules_json(s, why);
    return rules.empty() ? nullptr : read_back(rules, route_table_host(s), why);
}

void plan_table_entries_begin() { read_back_entries().next_round(); }

void plan_table_entry(Server *s)
{
    s->table_json.clear();
    const std::string rules = entry_rules_json(*s, &s->table_refusal);
    if (rules.empty()) return;
    const std::string digest = sha256(rules);
    if (const ReadBack *kept = read_back_entries().find(digest)) {
        s->table_json = kept->table_json;
        s->table_refusal = kept->refusal;
        return;
    }
    std::shared_ptr<const gtls::HostRoutes> entry = read_back(rules, route_table_host(*s), &s->table_refusal);
    if (entry != nullptr) s->table_json = gtls::host_routes_json(*entry);
    read_back_entries().keep(digest, {s->table_json, s->table_refusal});
}

namespace {

bool same_listener(const Server &a, const Server &b)
{
    return a.listen == b.listen && a.listener_port == b.listener_port && a.ssl == b.ssl
           && a.insecure_allowed == b.insecure_allowed && a.listener_hostname == b.listener_hostname
           && a.certificate == b.certificate && a.certificate_key == b.certificate_key
           && a.client.verify == b.client.verify && a.client.ca == b.client.ca && a.client.pins == b.client.pins
           && a.backend_client.certificate == b.backend_client.certificate
           && a.backend_client.key == b.backend_client.key;
}

bool is_wildcard(const std::string &name) { return name.size() > 2 && name.compare(0, 2, "*.") == 0; }

}  // namespace

void plan_listener_routing(std::vector<Server> *servers)
{
    std::map<std::string, std::vector<Server *>> by_listen;
    for (Server &s : *servers) by_listen[s.listen].push_back(&s);
    for (auto &[listen, on_listen] : by_listen) {
        // what stays rendered whatever is decided here: every name but
        // exact route hostnames, which decide nothing for one another
        const Server *catch_all = nullptr;
        std::vector<const Server *> wildcards;
        for (const Server *s : on_listen) {
            if (s->server_name.empty()) catch_all = s;
            if (is_wildcard(s->server_name)) wildcards.push_back(s);
        }
        for (Server *s : on_listen) {
            if (!s->in_table() || s->server_name.empty() || is_wildcard(s->server_name)
                || s->server_name == s->listener_hostname) {
                continue;
            }
            // nginx's choice without it: the longest wildcard that matches
            const Server *taker = catch_all;
            size_t longest = 0;
            for (const Server *w : wildcards) {
                const std::string suffix = w->server_name.substr(1);  // ".example.com"
                if (s->server_name.size() > suffix.size() && suffix.size() > longest
                    && s->server_name.compare(s->server_name.size() - suffix.size(), suffix.size(), suffix) == 0) {
                    taker = w;
                    longest = suffix.size();
                }
            }
            s->served_by_listener = taker != nullptr && taker->in_table()
                                    && taker->server_name == s->listener_hostname && same_listener(*taker, *s);
        }
    }
}

}  // namespace g2n
