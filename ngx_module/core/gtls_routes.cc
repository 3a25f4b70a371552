#include "gtls_routes.h"

#include <strings.h>

#include <algorithm>
#include <stdexcept>

namespace gtls {

namespace {

// Whether `m`'s value condition holds for `value`; a pattern that gave up
// sets *limit and does not hold.
bool value_holds(const ValueMatch &m, std::string_view value, bool *limit)
{
    if (m.kind == ValueMatchKind::Exact) return value == m.value;
    const Regex::Outcome outcome = m.regex->match(value);
    if (outcome == Regex::Outcome::Limit) *limit = true;
    return outcome == Regex::Outcome::Match;
}

// The scratch list of candidate ranks: a request must not allocate to be
// matched. One per process: nginx workers are single-threaded (a
// thread_local would cost a TLS lookup per request in a shared object).
std::vector<uint32_t> &candidates()
{
    static std::vector<uint32_t> list;
    return list;
}

}  // namespace

std::optional<std::string_view> query_value(std::string_view args, std::string_view name)
{
    size_t at = 0;
    while (at <= args.size()) {
        size_t end = args.find('&', at);
        if (end == std::string_view::npos) end = args.size();
        std::string_view param = args.substr(at, end - at);
        if (param.size() >= name.size() && param.compare(0, name.size(), name) == 0) {
            if (param.size() == name.size()) return std::string_view();
            if (param[name.size()] == '=') return param.substr(name.size() + 1);
        }
        at = end + 1;
    }
    return std::nullopt;
}

HostRoutes::HostRoutes(std::string host, std::vector<RouteAction> actions, std::vector<RouteMatch> matches)
    : host_(std::move(host)), actions_(std::move(actions)), matches_(std::move(matches))
{
    for (size_t rank = 0; rank < matches_.size(); rank++) {
        const RouteMatch &m = matches_[rank];
        const std::string where = "host " + host_ + " match " + std::to_string(rank);
        if (m.action >= actions_.size()) throw std::invalid_argument(where + ": no action " + std::to_string(m.action));
        auto compiled = [&](const ValueMatch &v) { return v.kind == ValueMatchKind::Exact || v.regex != nullptr; };
        if (!std::all_of(m.headers.begin(), m.headers.end(), compiled)
            || !std::all_of(m.query.begin(), m.query.end(), compiled)) {
            throw std::invalid_argument(where + ": a regular expression is not compiled");
        }
        switch (m.path_kind) {
        case PathMatchKind::Exact: by_path_[m.path].exact.push_back(rank); break;
        case PathMatchKind::PathPrefix: by_path_[m.path].prefix.push_back(rank); break;
        case PathMatchKind::RegularExpression:
            if (m.path_regex == nullptr) throw std::invalid_argument(where + ": the path's pattern is not compiled");
            regex_ranks_.push_back(rank);
            break;
        }
    }
    // found once: every request's path has it (elements of the map stay put)
    auto root = by_path_.find(std::string_view("/", 1));
    if (root != by_path_.end() && !root->second.prefix.empty()) root_prefix_ = &root->second.prefix;
}

bool HostRoutes::conditions_hold(const RouteMatch &m, const RouteRequest &request, bool *limit) const
{
    if (!m.method.empty() && m.method != request.method) return false;
    for (const ValueMatch &h : m.headers) {
        std::optional<std::string_view> value = request.header(h.name);
        if (!value || !value_holds(h, *value, limit)) return false;
    }
    for (const ValueMatch &q : m.query) {
        std::optional<std::string_view> value = query_value(request.args, q.name);
        if (!value || !value_holds(q, *value, limit)) return false;
    }
    return true;
}

RouteChoice HostRoutes::match(const RouteRequest &request) const
{
    // the looked-up candidates: Exact on the whole path, PathPrefix on it
    // and at each "/" ahead of a segment ("/a/b": "/a/b", "/a", "/")
    std::vector<uint32_t> &found = candidates();
    found.clear();
    const std::string_view path = request.path;
    if (!by_path_.empty() && !path.empty() && path[0] == '/') {
        auto whole = by_path_.find(path);
        if (whole != by_path_.end()) {
            found.insert(found.end(), whole->second.exact.begin(), whole->second.exact.end());
        }
        // each boundary but the root: "/a/" is one of itself ("/a" matches it)
        for (size_t end = path.size(); end > 1; end = path.rfind('/', end - 1)) {
            auto it = end == path.size() ? whole : by_path_.find(path.substr(0, end));
            if (it != by_path_.end()) found.insert(found.end(), it->second.prefix.begin(), it->second.prefix.end());
        }
        if (root_prefix_ != nullptr) found.insert(found.end(), root_prefix_->begin(), root_prefix_->end());
        if (found.size() > 1) std::sort(found.begin(), found.end());
    }

    RouteChoice choice;
    auto take = [&](uint32_t rank) {
        choice.match = &matches_[rank];
        choice.action = &actions_[choice.match->action];
    };
    // in rank order over both lists: a pattern is tried only while it
    // ranks ahead of the next looked-up candidate
    auto candidate = found.begin();
    auto regex = regex_ranks_.begin();
    while (candidate != found.end() || regex != regex_ranks_.end()) {
        if (regex == regex_ranks_.end() || (candidate != found.end() && *candidate < *regex)) {
            const uint32_t rank = *candidate++;
            if (conditions_hold(matches_[rank], request, &choice.regex_limit)) {
                take(rank);
                return choice;
            }
            continue;
        }
        const RouteMatch &m = matches_[*regex];
        const Regex::Outcome outcome = m.path_regex->match(path);
        if (outcome == Regex::Outcome::Limit) choice.regex_limit = true;
        if (outcome == Regex::Outcome::Match && conditions_hold(m, request, &choice.regex_limit)) {
            take(*regex);
            return choice;
        }
        ++regex;
    }
    return choice;
}

namespace {

// "*.example" is kept by ".example"; "*" alone is the listener's any
bool is_wildcard(std::string_view host) { return host.size() > 1 && host[0] == '*'; }

}  // namespace

void RouteTable::replace(std::shared_ptr<const HostRoutes> routes)
{
    const std::string &host = routes->host();
    remove(host);
    matches_ += routes->matches().size();
    if (host == "*") {
        any_ = std::move(routes);
    } else if (is_wildcard(host)) {
        std::string_view suffix = std::string_view(routes->host()).substr(1);
        wildcard_.emplace(suffix, std::move(routes));
    } else {
        std::string_view name = routes->host();
        exact_.emplace(name, std::move(routes));
    }
}

bool RouteTable::remove(std::string_view host)
{
    if (host == "*") {
        if (!any_) return false;
        matches_ -= any_->matches().size();
        any_.reset();
        return true;
    }
    auto &map = is_wildcard(host) ? wildcard_ : exact_;
    auto it = map.find(is_wildcard(host) ? host.substr(1) : host);
    if (it == map.end()) return false;
    matches_ -= it->second->matches().size();
    map.erase(it);  // its key points into the entry: both go together
    return true;
}

std::shared_ptr<const HostRoutes> RouteTable::find(std::string_view host) const
{
    if (auto it = exact_.find(host); it != exact_.end()) return it->second;
    if (!wildcard_.empty()) {
        // the longest suffix first: "a.b.example" tries ".b.example", ".example"
        for (size_t dot = host.find('.'); dot != std::string_view::npos; dot = host.find('.', dot + 1)) {
            if (auto it = wildcard_.find(host.substr(dot)); it != wildcard_.end()) return it->second;
        }
    }
    return any_;
}

uint64_t total_weight(const std::vector<WeightedBackend> &backends)
{
    uint64_t total = 0;
    for (const WeightedBackend &b : backends) total += b.weight;
    return total;
}

size_t choose_backend(const std::vector<WeightedBackend> &backends, uint64_t random)
{
    for (size_t i = 0; i < backends.size(); i++) {
        if (random < backends[i].weight) return i;
        random -= backends[i].weight;
    }
    return backends.size();
}

namespace {

// `text` with each byte `unsafe` says a path or query may not hold as it
// is %-escaped
std::string percent_escaped(std::string_view text, bool (*unsafe)(unsigned char))
{
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (unsigned char c : text) {
        if (unsafe(c)) {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

bool unsafe_in_query(unsigned char c) { return c <= 0x20 || c >= 0x7f || c == '"'; }

bool unsafe_in_path(unsigned char c)
{
    return unsafe_in_query(c) || std::string_view("%<>\\^`{|}#?").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string escaped_path(std::string_view text) { return percent_escaped(text, unsafe_in_path); }

std::string location_query(std::string_view args)
{
    return args.empty() ? std::string() : "?" + percent_escaped(args, unsafe_in_query);
}

}  // namespace

std::string rewritten_path(const PathRewrite &rewrite, const RouteMatch &match, std::string_view path, bool escape)
{
    auto from_request = [&](std::string_view part) { return escape ? escaped_path(part) : std::string(part); };
    if (rewrite.kind == PathRewriteKind::None) return from_request(path);
    if (rewrite.kind == PathRewriteKind::ReplaceFullPath || match.path_kind != PathMatchKind::PathPrefix) {
        return rewrite.value;
    }
    std::string_view base = rewrite.value;
    while (!base.empty() && base.back() == '/') base.remove_suffix(1);
    if (match.path == "/") return std::string(base) + from_request(path);
    if (path.size() == match.path.size()) return rewrite.value;
    // the path is the prefix, then "/" and the rest
    return std::string(base) + from_request(path.substr(match.path.size()));
}

const char *scheme_name(BackendScheme scheme)
{
    switch (scheme) {
    case BackendScheme::Https: return "https";
    case BackendScheme::Http: return "http";
    case BackendScheme::Grpcs: return "grpcs";
    case BackendScheme::Grpc: return "grpc";
    }
    return "https";
}

std::string_view upgrade_sent(const WeightedBackend &backend, std::optional<std::string_view> client_upgrade)
{
    const bool websocket = client_upgrade && client_upgrade->size() == 9
                           && strncasecmp(client_upgrade->data(), "websocket", 9) == 0;
    return backend.websocket && websocket ? "websocket" : "";
}

bool mirror_takes(const Mirror &mirror, uint64_t random)
{
    return mirror.denominator != 0 && random % mirror.denominator < mirror.numerator;
}

namespace {

bool same_name(std::string_view a, std::string_view b)
{
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The fields a request sends while filters are applied in turn
class HeaderEditor {
public:
    explicit HeaderEditor(const std::vector<HeaderField> &fields) : fields_(fields)
    {
        edits_.dropped.assign(fields.size(), false);
    }

    void apply(const HeaderModifier &m)
    {
        for (const HeaderValue &h : m.set) set(h.name, h.value);
        for (const HeaderValue &h : m.add) add(h.name, h.value);
        for (const std::string &name : m.remove) remove(name);
    }

    void set(std::string_view name, std::string_view value)
    {
        remove(name);
        if (!value.empty()) edits_.appended.push_back({std::string(name), std::string(value)});
    }

    void add(std::string_view name, std::string_view value)
    {
        std::string joined;
        for (size_t i = 0; i < fields_.size(); i++) {
            if (!edits_.dropped[i] && same_name(fields_[i].name, name)) {
                joined += (joined.empty() ? "" : ", ") + std::string(fields_[i].value);
            }
        }
        for (const HeaderValue &h : edits_.appended) {
            if (same_name(h.name, name)) joined += (joined.empty() ? "" : ", ") + h.value;
        }
        set(name, joined.empty() ? std::string(value) : joined + "," + std::string(value));
    }

    void remove(std::string_view name)
    {
        for (size_t i = 0; i < fields_.size(); i++) {
            if (same_name(fields_[i].name, name)) edits_.dropped[i] = true;
        }
        auto &a = edits_.appended;
        a.erase(std::remove_if(a.begin(), a.end(), [&](const HeaderValue &h) { return same_name(h.name, name); }),
                a.end());
    }

    HeaderEdits take() { return std::move(edits_); }

private:
    const std::vector<HeaderField> &fields_;
    HeaderEdits                     edits_;
};

}  // namespace

bool edits_request_headers(const RouteAction &action, const WeightedBackend *backend)
{
    return !action.request_headers.empty() || (action.rewrite && !action.rewrite->hostname.empty())
           || (backend != nullptr && !backend->request_headers.empty());
}

HeaderEdits edit_request_headers(const std::vector<HeaderField> &fields, const RouteAction &action,
                                 const WeightedBackend *backend)
{
    HeaderEditor editor(fields);
    if (action.rewrite && !action.rewrite->hostname.empty()) editor.set("Host", action.rewrite->hostname);
    editor.apply(action.request_headers);
    if (backend != nullptr) editor.apply(backend->request_headers);
    return editor.take();
}

std::string redirect_location(const Redirect &redirect, const RouteMatch &match, const RequestTarget &request)
{
    const std::string_view scheme = redirect.scheme.empty() ? request.scheme : std::string_view(redirect.scheme);
    std::string location = std::string(scheme) + "://";
    // what the request gave is escaped where it holds what a header may not
    if (redirect.hostname.empty() && redirect.port == 0 && redirect.scheme.empty() && !request.host_header.empty()) {
        location += percent_escaped(request.host_header, unsafe_in_query);  // as the client named the listener
    } else {
        unsigned port = redirect.port;
        if (port == 0) port = redirect.scheme.empty() ? request.port : scheme == "https" ? 443 : 80;
        const bool implied = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
        location += redirect.hostname.empty() ? percent_escaped(request.host, unsafe_in_query) : redirect.hostname;
        if (!implied && port != 0) location += ":" + std::to_string(port);
    }
    if (redirect.path.kind == PathRewriteKind::None && !request.request_uri.empty()) {
        return location + percent_escaped(request.request_uri, unsafe_in_query);  // as the client sent it
    }
    location += rewritten_path(redirect.path, match, request.path, true);
    return location + location_query(request.args);
}

std::string location_path(std::string_view path, std::string_view args)
{
    return escaped_path(path) + location_query(args);
}

}  // namespace gtls
