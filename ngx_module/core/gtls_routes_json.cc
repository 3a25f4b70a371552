#include "gtls_routes_json.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <set>

#include "gtls_http_fields.h"
#include "gtls_json.h"

namespace gtls {

namespace {

using rapidjson::Value;

[[noreturn]] void refuse(const std::string &field, const std::string &what)
{
    throw ApiError(400, field + ": " + what);
}

const char *type_name(const Value &v)
{
    switch (v.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return "a boolean";
    case rapidjson::kNumberType: return "a number";
    case rapidjson::kStringType: return "a string";
    case rapidjson::kArrayType: return "an array";
    case rapidjson::kObjectType: return "an object";
    }
    return "a value";
}

std::string_view view(const Value &v) { return {v.GetString(), v.GetStringLength()}; }

// The members of one JSON object, each a known name given at most once
// (RapidJSON keeps duplicates; the first would win unseen)
class Fields {
public:
    Fields(const Value &object, const std::string &field, std::initializer_list<const char *> known)
        : Fields(object, field, std::vector<const char *>(known))
    {
    }
    Fields(const Value &object, const std::string &field, std::vector<const char *> known)
        : field_(field), known_(std::move(known)), values_(known_.size(), nullptr)
    {
        if (!object.IsObject()) refuse(field, std::string("must be an object, not ") + type_name(object));
        for (auto m = object.MemberBegin(); m != object.MemberEnd(); ++m) {
            const std::string_view name = view(m->name);
            auto it = std::find(known_.begin(), known_.end(), name);
            if (it == known_.end()) {
                std::string list;
                for (const char *k : known_) list += (list.empty() ? "" : ", ") + std::string(k);
                refuse(field, "unknown field " + json_string(name) + " (known: " + list + ")");
            }
            const Value *&slot = values_[it - known_.begin()];
            if (slot != nullptr) refuse(field, "the key " + json_string(name) + " appears twice");
            slot = &m->value;
        }
    }

    const Value *get(std::string_view name) const
    {
        return values_[std::find(known_.begin(), known_.end(), name) - known_.begin()];
    }
    std::string at(std::string_view name) const { return field_ + "." + std::string(name); }

    std::string string(std::string_view name, size_t max, bool required = false) const
    {
        const Value *v = get(name);
        if (v == nullptr) {
            if (required) refuse(field_, "needs " + json_string(name));
            return {};
        }
        if (!v->IsString()) refuse(at(name), std::string("must be a string, not ") + type_name(*v));
        const std::string_view text = view(*v);
        if (text.size() > max) refuse(at(name), "longer than " + std::to_string(max) + " bytes");
        for (unsigned char c : text) {
            if (c < 0x20 || c == 0x7f) refuse(at(name), "holds a control character");
        }
        return std::string(text);
    }

    // absent: `absent`
    int64_t number(std::string_view name, int64_t low, int64_t high, int64_t absent) const
    {
        const Value *v = get(name);
        if (v == nullptr) return absent;
        if (!v->IsInt64() || v->GetInt64() < low || v->GetInt64() > high) {
            refuse(at(name), "must be a whole number from " + std::to_string(low) + " to " + std::to_string(high));
        }
        return v->GetInt64();
    }

    // absent: false
    bool flag(std::string_view name) const
    {
        const Value *v = get(name);
        if (v == nullptr) return false;
        if (!v->IsBool()) refuse(at(name), std::string("must be true or false, not ") + type_name(*v));
        return v->GetBool();
    }

    const Value *array(std::string_view name, size_t max) const
    {
        const Value *v = get(name);
        if (v == nullptr) return nullptr;
        if (!v->IsArray()) refuse(at(name), std::string("must be an array, not ") + type_name(*v));
        if (v->Size() > max) refuse(at(name), std::to_string(v->Size()) + " items, more than " + std::to_string(max));
        return v;
    }

private:
    std::string                        field_;
    std::vector<const char *>          known_;
    std::vector<const Value *>         values_;
};

std::string item(const std::string &field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

template <typename T>
T one_of(const std::string &field, std::string_view text, std::initializer_list<std::pair<const char *, T>> names)
{
    std::string list;
    for (const auto &[name, value] : names) {
        if (text == name) return value;
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    refuse(field, json_string(text) + " is not one of " + list);
}

// Gateway API's path characters (the CRDs' pattern): what a request line
// carries as it is, or %-escaped
bool is_route_path(std::string_view path)
{
    static constexpr std::string_view kAllowed = "-/._~!$&'()*+,;=:@";
    if (path.empty() || path[0] != '/') return false;
    for (size_t i = 0; i < path.size(); i++) {
        const unsigned char c = path[i];
        if (c == '%') {
            if (i + 2 >= path.size() || !std::isxdigit(static_cast<unsigned char>(path[i + 1]))
                || !std::isxdigit(static_cast<unsigned char>(path[i + 2]))) {
                return false;
            }
            i += 2;
        } else if (!std::isalnum(c) && kAllowed.find(static_cast<char>(c)) == std::string_view::npos) {
            return false;
        }
    }
    return true;
}

// RFC 1123 names, lower case; `wildcard`: "*." ahead allowed
bool is_hostname(std::string_view name, bool wildcard)
{
    if (wildcard && name.size() > 2 && name.substr(0, 2) == "*.") name.remove_prefix(2);
    if (name.empty() || name.size() > 253) return false;
    size_t label = 0;
    for (size_t i = 0; i <= name.size(); i++) {
        if (i == name.size() || name[i] == '.') {
            if (label == 0 || label > 63 || name[i - 1] == '-' || name[i - label] == '-') return false;
            label = 0;
            continue;
        }
        const char c = name[i];
        if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
            return false;
        }
        label++;
    }
    return true;
}

std::shared_ptr<Regex> pattern(const std::string &field, const std::string &text)
{
    std::string error;
    std::shared_ptr<Regex> re = Regex::compile(text, &error, false);
    if (re == nullptr) refuse(field, "does not compile: " + error);
    return re;
}

std::string header_name(const Fields &f, std::string_view key)
{
    std::string name = f.string(key, kMaxHeaderNameBytes, true);
    if (!is_header_name(name)) refuse(f.at(key), json_string(name) + " is not a header name");
    if (is_connection_header(name)) refuse(f.at(key), name + " frames the message or belongs to the connection");
    return name;
}

std::vector<ValueMatch> value_matches(const Fields &f, std::string_view key, bool header,
                                      size_t *patterns)
{
    std::vector<ValueMatch> out;
    const Value *list = f.array(key, kMaxMatchValues);
    if (list == nullptr) return out;
    for (rapidjson::SizeType i = 0; i < list->Size(); i++) {
        const std::string field = item(f.at(key), i);
        Fields v((*list)[i], field, {"name", "type", "value"});
        ValueMatch m;
        m.name = v.string("name", kMaxHeaderNameBytes, true);
        if (!is_header_name(m.name)) refuse(v.at("name"), json_string(m.name) + " is not a valid name");
        if (header) std::transform(m.name.begin(), m.name.end(), m.name.begin(), [](unsigned char c) { return std::tolower(c); });
        m.kind = one_of<ValueMatchKind>(v.at("type"), v.get("type") ? v.string("type", 32) : "Exact",
                                        {{"Exact", ValueMatchKind::Exact},
                                         {"RegularExpression", ValueMatchKind::RegularExpression}});
        m.value = v.string("value", kMaxHeaderValueBytes, true);
        if (m.kind == ValueMatchKind::RegularExpression) {
            m.regex = pattern(v.at("value"), m.value);
            ++*patterns;
        }
        // the first of a name counts (Gateway API): later ones are refused
        for (const ValueMatch &other : out) {
            if (other.name == m.name) refuse(field, json_string(m.name) + " is matched twice");
        }
        out.push_back(std::move(m));
    }
    return out;
}

RouteMatch route_match(const Value &value, const std::string &field, size_t actions, size_t *patterns)
{
    Fields f(value, field, {"path", "method", "headers", "query", "action"});
    RouteMatch m;
    if (const Value *path = f.get("path")) {
        Fields p(*path, f.at("path"), {"type", "value"});
        m.path_kind = one_of<PathMatchKind>(p.at("type"), p.get("type") ? p.string("type", 32) : "PathPrefix",
                                            {{"Exact", PathMatchKind::Exact},
                                             {"PathPrefix", PathMatchKind::PathPrefix},
                                             {"RegularExpression", PathMatchKind::RegularExpression}});
        m.path = p.string("value", kMaxRoutePath, true);
        if (m.path_kind == PathMatchKind::RegularExpression) {
            m.path_regex = pattern(p.at("value"), m.path);
            ++*patterns;
        } else {
            if (!is_route_path(m.path)) refuse(p.at("value"), json_string(m.path) + " is not a path");
            if (m.path_kind == PathMatchKind::PathPrefix) {
                while (m.path.size() > 1 && m.path.back() == '/') m.path.pop_back();
            }
        }
    }
    if (f.get("method")) {
        m.method = f.string("method", 16);
        one_of<int>(f.at("method"), m.method,
                    {{"GET", 0}, {"HEAD", 0}, {"POST", 0}, {"PUT", 0}, {"DELETE", 0}, {"CONNECT", 0},
                     {"OPTIONS", 0}, {"TRACE", 0}, {"PATCH", 0}});
    }
    m.headers = value_matches(f, "headers", true, patterns);
    m.query = value_matches(f, "query", false, patterns);
    const Value *action = f.get("action");
    if (action == nullptr) refuse(field, "needs \"action\"");
    m.action = static_cast<uint32_t>(f.number("action", 0, static_cast<int64_t>(actions) - 1, 0));
    return m;
}

// `request`: a modifier of the request, which may not touch what the
// gateway sets there either
HeaderModifier header_modifier(const Value &value, const std::string &field, bool request)
{
    auto gateways = [&](const std::string &at, std::string_view name) {
        if (request && is_gateway_request_header(name)) refuse(at, std::string(name) + " is set by the gateway");
    };
    Fields f(value, field, {"set", "add", "remove"});
    HeaderModifier mod;
    for (const char *key : {"set", "add"}) {
        const Value *list = f.array(key, kMaxHeaderEdits);
        if (list == nullptr) continue;
        for (rapidjson::SizeType i = 0; i < list->Size(); i++) {
            Fields h((*list)[i], item(f.at(key), i), {"name", "value"});
            HeaderValue edit{header_name(h, "name"), h.string("value", kMaxHeaderValueBytes, true)};
            gateways(h.at("name"), edit.name);
            if (!is_header_value(edit.value)) refuse(h.at("value"), "holds a control character");
            (std::string_view(key) == "set" ? mod.set : mod.add).push_back(std::move(edit));
        }
    }
    if (const Value *list = f.array("remove", kMaxHeaderEdits)) {
        for (rapidjson::SizeType i = 0; i < list->Size(); i++) {
            const std::string at = item(f.at("remove"), i);
            const Value &name = (*list)[i];
            if (!name.IsString() || !is_header_name(view(name))) refuse(at, "is not a header name");
            if (is_connection_header(view(name))) refuse(at, "frames the message or belongs to the connection");
            gateways(at, view(name));
            mod.remove.emplace_back(view(name));
        }
    }
    return mod;
}

PathRewrite path_rewrite(const Value &value, const std::string &field)
{
    Fields f(value, field, {"type", "value"});
    PathRewrite p;
    p.kind = one_of<PathRewriteKind>(f.at("type"), f.string("type", 32, true),
                                     {{"ReplaceFullPath", PathRewriteKind::ReplaceFullPath},
                                      {"ReplacePrefixMatch", PathRewriteKind::ReplacePrefixMatch}});
    p.value = f.string("value", kMaxRoutePath, true);
    if (!is_route_path(p.value)) refuse(f.at("value"), json_string(p.value) + " is not a path");
    return p;
}

std::string backend_name(const Fields &f, std::string_view key, bool empty_allowed)
{
    std::string name = f.string(key, kMaxApiUpstreamName, true);
    if (name.empty() ? !empty_allowed : !is_api_name(name)) {
        refuse(f.at(key), json_string(name) + " is not a backend name");
    }
    return name;
}

std::string rewrite_hostname(const Fields &f)
{
    std::string host = f.string("hostname", 253);
    if (!host.empty() && !is_hostname(host, false)) refuse(f.at("hostname"), json_string(host) + " is not a hostname");
    return host;
}

RouteAction route_action(const Value &value, const std::string &field)
{
    Fields f(value, field, {"backends", "status", "request_headers", "response_headers", "redirect", "rewrite",
                            "mirrors", "timeouts", "retry"});
    RouteAction a;
    if (const Value *list = f.array("backends", kMaxActionBackends)) {
        for (rapidjson::SizeType i = 0; i < list->Size(); i++) {
            Fields b((*list)[i], item(f.at("backends"), i), {"backend", "weight", "request_headers", "websocket", "scheme"});
            WeightedBackend wb;
            wb.backend = backend_name(b, "backend", true);
            wb.weight = static_cast<unsigned>(b.number("weight", 0, kMaxRouteWeight, 1));
            wb.websocket = b.flag("websocket");
            if (b.get("scheme")) {
                wb.scheme = one_of<BackendScheme>(b.at("scheme"), b.string("scheme", 8),
                                                  {{"https", BackendScheme::Https}, {"http", BackendScheme::Http},
                                                   {"grpcs", BackendScheme::Grpcs}, {"grpc", BackendScheme::Grpc}});
            }
            if (const Value *mod = b.get("request_headers")) wb.request_headers = header_modifier(*mod, b.at("request_headers"), true);
            a.backends.push_back(std::move(wb));
        }
    }
    a.status = static_cast<unsigned>(f.number("status", 400, 599, 0));
    if (const Value *mod = f.get("request_headers")) a.request_headers = header_modifier(*mod, f.at("request_headers"), true);
    if (const Value *mod = f.get("response_headers")) a.response_headers = header_modifier(*mod, f.at("response_headers"), false);
    if (const Value *redirect = f.get("redirect")) {
        Fields r(*redirect, f.at("redirect"), {"scheme", "hostname", "port", "path", "status"});
        Redirect to;
        to.scheme = r.string("scheme", 8);
        if (!to.scheme.empty()) one_of<int>(r.at("scheme"), to.scheme, {{"http", 0}, {"https", 0}});
        to.hostname = rewrite_hostname(r);
        to.port = static_cast<unsigned>(r.number("port", 1, 65535, 0));
        if (const Value *path = r.get("path")) to.path = path_rewrite(*path, r.at("path"));
        to.status = static_cast<unsigned>(r.number("status", 301, 308, 302));
        one_of<int>(r.at("status"), std::to_string(to.status), {{"301", 0}, {"302", 0}, {"303", 0}, {"307", 0}, {"308", 0}});
        a.redirect = std::move(to);
    }
    if (const Value *rewrite = f.get("rewrite")) {
        Fields r(*rewrite, f.at("rewrite"), {"hostname", "path"});
        UrlRewrite to;
        to.hostname = rewrite_hostname(r);
        if (const Value *path = r.get("path")) to.path = path_rewrite(*path, r.at("path"));
        a.rewrite = std::move(to);
    }
    if (const Value *list = f.array("mirrors", kMaxActionMirrors)) {
        for (rapidjson::SizeType i = 0; i < list->Size(); i++) {
            const std::string at = item(f.at("mirrors"), i);
            Fields m((*list)[i], at, {"backend", "numerator", "denominator"});
            Mirror mirror;
            mirror.backend = backend_name(m, "backend", false);
            mirror.denominator = static_cast<unsigned>(m.number("denominator", 1, kMaxRouteWeight, 100));
            mirror.numerator = static_cast<unsigned>(m.number("numerator", 0, mirror.denominator, mirror.denominator));
            a.mirrors.push_back(std::move(mirror));
        }
    }
    if (const Value *timeouts = f.get("timeouts")) {
        Fields t(*timeouts, f.at("timeouts"), {"request_ms", "backend_ms"});
        a.request_timeout_ms = t.number("request_ms", 0, kMaxRouteTimeoutMs, -1);
        a.backend_timeout_ms = t.number("backend_ms", 0, kMaxRouteTimeoutMs, -1);
    }
    if (const Value *retry = f.get("retry")) {
        Fields r(*retry, f.at("retry"), {"attempts", "codes", "backoff_ms"});
        a.retry_attempts = static_cast<unsigned>(r.number("attempts", 0, kMaxRetryAttempts, 0));
        a.retry_backoff_ms = r.number("backoff_ms", 0, kMaxRouteTimeoutMs, -1);
        if (const Value *codes = r.array("codes", kMaxRetryCodes)) {
            for (rapidjson::SizeType i = 0; i < codes->Size(); i++) {
                const Value &code = (*codes)[i];
                if (!code.IsInt() || code.GetInt() < 400 || code.GetInt() > 599) {
                    refuse(item(r.at("codes"), i), "must be a status from 400 to 599");
                }
                a.retry_codes.push_back(static_cast<unsigned>(code.GetInt()));
            }
        }
    }
    const int outcomes = !a.backends.empty() + (a.status != 0) + a.redirect.has_value();
    if (outcomes != 1) refuse(field, "needs exactly one of \"backends\", \"status\" and \"redirect\"");
    if (a.redirect && a.rewrite) refuse(field, "redirects and rewrites at once");
    return a;
}

std::shared_ptr<const HostRoutes> host_routes(const Value &value, const std::string &field, const std::string &host)
{
    Fields f(value, field, {"actions", "matches"});
    std::vector<RouteAction> actions;
    std::vector<RouteMatch> matches;
    if (const Value *list = f.array("actions", kMaxHostActions)) {
        for (rapidjson::SizeType i = 0; i < list->Size(); i++) {
            actions.push_back(route_action((*list)[i], item(f.at("actions"), i)));
        }
    }
    size_t patterns = 0;
    if (const Value *list = f.array("matches", kMaxHostMatches)) {
        for (rapidjson::SizeType i = 0; i < list->Size(); i++) {
            const std::string at = item(f.at("matches"), i);
            matches.push_back(route_match((*list)[i], at, actions.size(), &patterns));
            if (patterns > kMaxHostPatterns) refuse(at, "more than " + std::to_string(kMaxHostPatterns) + " regular expressions");
            const RouteAction &a = actions[matches.back().action];
            const bool prefix_rewrite = (a.redirect && a.redirect->path.kind == PathRewriteKind::ReplacePrefixMatch)
                                        || (a.rewrite && a.rewrite->path.kind == PathRewriteKind::ReplacePrefixMatch);
            if (prefix_rewrite && matches.back().path_kind != PathMatchKind::PathPrefix) {
                refuse(at, "its action replaces a prefix, and it matches no PathPrefix");
            }
        }
    }
    return std::make_shared<const HostRoutes>(host, std::move(actions), std::move(matches));
}

// The text as a DOM: RapidJSON reads it without recursion (iterative),
// checking UTF-8 and that nothing but white space follows the value. It
// takes a NUL for the end of the text: one is refused where it stands.
rapidjson::Document read_json(std::string_view text)
{
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
        throw ApiError(400, json_position(text, nul) + ": a NUL byte");
    }
    rapidjson::Document doc;
    constexpr unsigned kFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;
    doc.Parse<kFlags>(text.data(), text.size());
    if (doc.HasParseError()) {
        throw ApiError(400, json_position(text, doc.GetErrorOffset()) + ": " + rapidjson::GetParseError_En(doc.GetParseError()));
    }
    return doc;
}

}  // namespace

std::vector<TableUpdate> parse_route_update(std::string_view body)
{
    rapidjson::Document doc = read_json(body);
    // the other sections are parse_api_update's
    Fields root(doc, "the body", std::vector<const char *>(std::begin(kApiBodySections), std::end(kApiBodySections)));
    std::vector<TableUpdate> out;
    const Value *routes = root.get("routes");
    if (routes == nullptr) return out;
    if (!routes->IsObject()) refuse("routes", std::string("must be an object, not ") + type_name(*routes));
    if (routes->MemberCount() > kMaxRouteTables) refuse("routes", "more than " + std::to_string(kMaxRouteTables) + " tables");
    size_t hosts = 0;
    for (auto t = routes->MemberBegin(); t != routes->MemberEnd(); ++t) {
        const std::string table(view(t->name));
        const std::string tfield = "routes[" + json_string(table) + "]";
        if (!is_api_name(table)) refuse(tfield, "is not a table name");
        if (std::any_of(out.begin(), out.end(), [&](const TableUpdate &u) { return u.table == table; })) {
            refuse("routes", "the key " + json_string(table) + " appears twice");
        }
        TableUpdate update{table, {}};
        try {
            if (!t->value.IsObject()) refuse(tfield, std::string("must be an object, not ") + type_name(t->value));
            std::set<std::string_view> seen;
            for (auto h = t->value.MemberBegin(); h != t->value.MemberEnd(); ++h) {
                const std::string host(view(h->name));
                const std::string field = tfield + "[" + json_string(host) + "]";
                if (host != "*" && !is_hostname(host, true)) refuse(field, "is not a hostname, \"*.\" and one, or \"*\"");
                if (!seen.insert(view(h->name)).second) refuse(tfield, "the key " + json_string(host) + " appears twice");
                if (++hosts > kMaxRouteHosts) refuse(field, "more than " + std::to_string(kMaxRouteHosts) + " hostnames");
                update.hosts.push_back({host, h->value.IsNull() ? nullptr : host_routes(h->value, field, host)});
            }
        } catch (const ApiError &e) {
            throw ApiError(e.status(), e.what(), table);  // counted as the table's refusal
        }
        out.push_back(std::move(update));
    }
    return out;
}

std::shared_ptr<const HostRoutes> parse_host_routes(std::string_view json, const std::string &host)
{
    rapidjson::Document doc = read_json(json);
    return host_routes(doc, "routes of " + host, host);
}

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void write_string(JsonWriter &w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }

void write_modifier(JsonWriter &w, const HeaderModifier &mod)
{
    w.StartObject();
    for (const auto &[key, list] : {std::pair{"set", &mod.set}, std::pair{"add", &mod.add}}) {
        w.Key(key);
        w.StartArray();
        for (const HeaderValue &h : *list) {
            w.StartObject();
            w.Key("name");
            write_string(w, h.name);
            w.Key("value");
            write_string(w, h.value);
            w.EndObject();
        }
        w.EndArray();
    }
    w.Key("remove");
    w.StartArray();
    for (const std::string &name : mod.remove) write_string(w, name);
    w.EndArray();
    w.EndObject();
}

void write_rewrite(JsonWriter &w, const PathRewrite &p)
{
    if (p.kind == PathRewriteKind::None) return;
    w.Key("path");
    w.StartObject();
    w.Key("type");
    w.String(p.kind == PathRewriteKind::ReplaceFullPath ? "ReplaceFullPath" : "ReplacePrefixMatch");
    w.Key("value");
    write_string(w, p.value);
    w.EndObject();
}

void write_values(JsonWriter &w, const char *key, const std::vector<ValueMatch> &values)
{
    w.Key(key);
    w.StartArray();
    for (const ValueMatch &v : values) {
        w.StartObject();
        w.Key("name");
        write_string(w, v.name);
        w.Key("type");
        w.String(v.kind == ValueMatchKind::Exact ? "Exact" : "RegularExpression");
        w.Key("value");
        write_string(w, v.value);
        w.EndObject();
    }
    w.EndArray();
}

void write_action(JsonWriter &w, const RouteAction &a)
{
    w.StartObject();
    if (!a.backends.empty()) {
        w.Key("backends");
        w.StartArray();
        for (const WeightedBackend &b : a.backends) {
            w.StartObject();
            w.Key("backend");
            write_string(w, b.backend);
            w.Key("weight");
            w.Uint(b.weight);
            w.Key("request_headers");
            write_modifier(w, b.request_headers);
            if (b.websocket) {
                w.Key("websocket");
                w.Bool(true);
            }
            if (b.scheme != BackendScheme::Https) {
                w.Key("scheme");
                write_string(w, scheme_name(b.scheme));
            }
            w.EndObject();
        }
        w.EndArray();
    }
    if (a.status != 0) {
        w.Key("status");
        w.Uint(a.status);
    }
    w.Key("request_headers");
    write_modifier(w, a.request_headers);
    w.Key("response_headers");
    write_modifier(w, a.response_headers);
    if (a.redirect) {
        w.Key("redirect");
        w.StartObject();
        if (!a.redirect->scheme.empty()) {
            w.Key("scheme");
            write_string(w, a.redirect->scheme);
        }
        if (!a.redirect->hostname.empty()) {
            w.Key("hostname");
            write_string(w, a.redirect->hostname);
        }
        if (a.redirect->port != 0) {
            w.Key("port");
            w.Uint(a.redirect->port);
        }
        write_rewrite(w, a.redirect->path);
        w.Key("status");
        w.Uint(a.redirect->status);
        w.EndObject();
    }
    if (a.rewrite) {
        w.Key("rewrite");
        w.StartObject();
        if (!a.rewrite->hostname.empty()) {
            w.Key("hostname");
            write_string(w, a.rewrite->hostname);
        }
        write_rewrite(w, a.rewrite->path);
        w.EndObject();
    }
    w.Key("mirrors");
    w.StartArray();
    for (const Mirror &m : a.mirrors) {
        w.StartObject();
        w.Key("backend");
        write_string(w, m.backend);
        w.Key("numerator");
        w.Uint(m.numerator);
        w.Key("denominator");
        w.Uint(m.denominator);
        w.EndObject();
    }
    w.EndArray();
    w.Key("timeouts");
    w.StartObject();
    if (a.request_timeout_ms >= 0) {
        w.Key("request_ms");
        w.Int64(a.request_timeout_ms);
    }
    if (a.backend_timeout_ms >= 0) {
        w.Key("backend_ms");
        w.Int64(a.backend_timeout_ms);
    }
    w.EndObject();
    w.Key("retry");
    w.StartObject();
    w.Key("attempts");
    w.Uint(a.retry_attempts);
    w.Key("codes");
    w.StartArray();
    for (unsigned code : a.retry_codes) w.Uint(code);
    w.EndArray();
    if (a.retry_backoff_ms >= 0) {
        w.Key("backoff_ms");
        w.Int64(a.retry_backoff_ms);
    }
    w.EndObject();
    w.EndObject();
}

const char *path_kind_name(PathMatchKind kind)
{
    switch (kind) {
    case PathMatchKind::Exact: return "Exact";
    case PathMatchKind::PathPrefix: return "PathPrefix";
    case PathMatchKind::RegularExpression: return "RegularExpression";
    }
    return "";
}

}  // namespace

std::string host_routes_json(const HostRoutes &routes)
{
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("actions");
    w.StartArray();
    for (const RouteAction &a : routes.actions()) write_action(w, a);
    w.EndArray();
    w.Key("matches");
    w.StartArray();
    for (const RouteMatch &m : routes.matches()) {
        w.StartObject();
        w.Key("path");
        w.StartObject();
        w.Key("type");
        w.String(path_kind_name(m.path_kind));
        w.Key("value");
        write_string(w, m.path);
        w.EndObject();
        if (!m.method.empty()) {
            w.Key("method");
            write_string(w, m.method);
        }
        write_values(w, "headers", m.headers);
        write_values(w, "query", m.query);
        w.Key("action");
        w.Uint(m.action);
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace gtls
