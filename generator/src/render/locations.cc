// One location per route rule and match: where its requests go (upstream,
// weighted split, conditional target) and what its filters add.
#include "render/locations.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include "gtls_match.h"

namespace g2n {

nginx::Script scheme(const WeightedUpstream &b)
{
    nginx::Script s(b.grpc ? (b.tls ? nginx::Word("grpcs://") : nginx::Word("grpc://"))
                           : (b.tls ? nginx::Word("https://") : nginx::Word("http://")));
    return s.name(nginx::Name(b.upstream));
}

// The split_clients variable choosing among several BACKENDS by weight
// (each choice the proxy_pass URL; *failed: one is "", an invalid share).
nginx::Name backend_split(Splits &splits, const std::vector<WeightedUpstream> &backends, bool *failed)
{
    nginx::Fragment body = split_clients_body(backends, [&](const WeightedUpstream &b) {
        *failed |= b.upstream.empty();
        return b.upstream.empty() ? nginx::Token::value("") : nginx::Token(scheme(b));
    });
    return splits.variable("backend_split", "split_clients", "${request_id}", body);
}

nginx::Script proxy_target(Splits &splits, const std::vector<WeightedUpstream> &backends,
                           std::optional<nginx::Name> *failed_split)
{
    if (backends.size() == 1 && !backends[0].upstream.empty()) {
        return scheme(backends[0]);
    }
    bool failed = false;
    nginx::Name split = backend_split(splits, backends, &failed);
    if (failed && failed_split != nullptr) *failed_split = split;
    return nginx::Script().variable(split);
}

// A query parameter as Gateway API reads it, as the route table's
// gtls::query_value reads $args: its name with case (nginx's $arg_NAME has
// none), its first occurrence, its value ("name" alone: empty). `present`
// gives 1 where it is there, 0 where not; else its value, "" where not.
nginx::Name query_parameter(Splits &splits, const std::string &name, bool present)
{
    const std::string first = "^(?:[^&]*&)*?" + nginx::regex_quote(name);
    nginx::Fragment body = nginx::Writer::capture(1, [&](nginx::Writer &m) {
        if (present) {
            m.entry(nginx::Token::map_regex(first + "(?:=[^&]*)?(?:&|$)"), {"1"});
            m.directive("default", {"0"});
        } else {
            m.entry(nginx::Token::map_regex(first + "(?:=([^&]*))?(?:&|$)"), {nginx::Script().variable(nginx::Name("1"))});
            m.directive("default", {nginx::Token::value("")});
        }
    });
    return splits.variable(present ? "query_present" : "query", "map", nginx::Token::variable(nginx::Name("args")), body);
}

// A header field's name as $http_NAME writes it: lower case, "-" as "_"
std::string header_variable_suffix(const std::string &field)
{
    std::string suffix;
    for (char ch : field) suffix += ch == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return suffix;
}

// The nginx variable holding what a condition tests: $request_method,
// $http_NAME (lower case, "-" as "_"), a query parameter's value.
nginx::Name condition_variable(Splits &splits, const MatchCondition &c)
{
    switch (c.subject) {
    case MatchCondition::Subject::Method: return nginx::Name("request_method");
    case MatchCondition::Subject::QueryParam: return query_parameter(splits, c.name, false);
    case MatchCondition::Subject::Header: break;
    }
    return nginx::Name("http_" + header_variable_suffix(c.name));
}

// One condition's tests appended to `key`, each a 1 or a 0; how many.
// nginx's map tries no pattern on an empty value: where the condition's
// pattern takes one, the empty value is a key of its own, and whether the
// field or parameter is there at all a test of its own (the route table's
// gtls::HostRoutes tells an empty value from none).
size_t add_condition(Splits &splits, const MatchCondition &c, nginx::Script *key)
{
    std::string error;
    std::shared_ptr<gtls::Regex> compiled = c.regex ? gtls::Regex::compile(c.value, &error, false) : nullptr;
    const bool takes_empty = compiled != nullptr && compiled->matches("");
    size_t tests = 1;
    if (takes_empty && c.subject == MatchCondition::Subject::QueryParam) {
        key->variable(query_parameter(splits, c.name, true));
        tests++;
    } else if (takes_empty && c.subject == MatchCondition::Subject::Header) {
        key->variable(nginx::Name("gateway_tls_has_http_" + header_variable_suffix(c.name)));
        tests++;
    }
    const std::string regex = c.regex ? "^(?:" + c.value + ")$" : "^" + nginx::regex_quote(c.value) + "$";
    nginx::Fragment body = nginx::Writer::capture(1, [&](nginx::Writer &m) {
        if (takes_empty) m.entry(nginx::Token::map_key(""), {"1"});
        m.entry(nginx::Token::map_regex(regex), {"1"});
        m.directive("default", {"0"});
    });
    key->variable(splits.variable("match", "map", nginx::Token::variable(condition_variable(splits, c)), body));
    return tests;
}

// Header, query and method matches: one map per condition gives 1 or 0,
// and a map over all of them picks the first rule whose conditions all
// hold, in precedence order; "404" and "500" stand for answers.
nginx::Name conditional_target(Splits &splits, const Location &l)
{
    nginx::Script key;
    std::vector<std::pair<std::string, nginx::Token>> select;
    for (size_t i = 0; i < l.conditional.size(); i++) {
        const ConditionalTarget &t = l.conditional[i];
        size_t tests = 0;
        for (const MatchCondition &c : t.conditions) tests += add_condition(splits, c, &key);
        key.word(":");
        nginx::Token value = t.return_code ? nginx::Token::number(t.return_code)
                                           : nginx::Token(proxy_target(splits, t.backends));
        select.emplace_back("^([01]*:){" + std::to_string(i) + "}1{" + std::to_string(tests) + "}:",
                            value);
    }
    nginx::Token fallback = nginx::Token::number(404);
    if (l.unconditional) {
        fallback = l.return_code ? nginx::Token::number(l.return_code)
                                 : nginx::Token(proxy_target(splits, l.backends));
    }
    nginx::Fragment body = nginx::Writer::capture(1, [&](nginx::Writer &m) {
        for (const auto &[regex, value] : select) m.entry(nginx::Token::map_regex(regex), {value});
        m.directive("default", {fallback});
    });
    return splits.variable("route_target", "map", key, body);
}

void render_location_match(nginx::Writer &w, const LocationMatch &match)
{
    switch (match.kind) {
    case LocationMatch::Kind::Exact:
        w.open("location", {"=", nginx::Token::value(match.path)});
        return;
    case LocationMatch::Kind::Regex:
        w.open("location", {"~", nginx::Token::value(match.path)});
        return;
    case LocationMatch::Kind::Prefix:
        // one argument: a leading "=", "~", "^~" or "@" would be a modifier
        if (match.path.empty() || match.path[0] != '/') {
            throw nginx::RenderError("a location prefix must begin with /");
        }
        w.open("location", {nginx::Token::value(match.path)});
        return;
    }
}

void render_location(nginx::Writer &w, Splits &splits, const Server &s, const Location &l,
                     std::vector<const Mirror *> *mirrors)
{
    w.comment("route", {nginx::Token::value(l.source)});
    render_location_match(w, l.match);
    for (const Mirror &m : l.mirrors) {
        // one location per target, however many routes mirror all of
        // their requests there; a share counts one location's requests
        auto same = std::find_if(mirrors->begin(), mirrors->end(), [&](const Mirror *o) {
            return o->backend.upstream == m.backend.upstream && o->backend.tls == m.backend.tls
                   && o->numerator == o->denominator && m.numerator == m.denominator;
        });
        if (same == mirrors->end()) same = mirrors->insert(mirrors->end(), &m);
        w.directive("mirror", {nginx::Token::value(mirror_uri(same - mirrors->begin() + 1))});
    }
    // before any rewrite or return: a preflight is answered whatever follows
    const PassModules modules = pass_modules(l);
    render_cors(w, splits, l, modules);
    render_response_headers(w, l, modules);
    if (const RouteFilter *redirect = filter_of(l, FilterType::RequestRedirect)) {
        render_redirect(w, s, l, *redirect);
        w.close();
        return;
    }
    const RouteFilter *rewrite = filter_of(l, FilterType::URLRewrite);
    if (rewrite && rewrite->path.type != PathModifierType::None && l.return_code == 0) {
        render_path_rewrite(w, l, rewrite->path, true);
    }
    render_request_headers(w, splits, l, modules);
    auto pass = [&](const nginx::Script &target) {
        if (modules.grpc && modules.proxy) {
            // the backend chosen says the module: proxy_pass refuses grpc://
            nginx::Fragment grpc_scheme = nginx::Writer::capture(1, [](nginx::Writer &m) {
                m.entry(nginx::Token::map_regex("^grpcs?://"), {"1"});
                m.directive("default", {nginx::Token::value("")});
            });
            w.open_if_equals(splits.variable("grpc_backend", "map", target, grpc_scheme), nginx::Token::value("1"));
            w.directive("grpc_pass", {target});
            w.close();
            w.directive("proxy_pass", {target});
        } else if (modules.grpc) {
            w.directive("grpc_pass", {target});
        } else {
            w.directive("proxy_pass", {target});
        }
    };
    auto answer_when = [&](const nginx::Name &variable, const nginx::Token &value, int code) {
        w.open_if_equals(variable, value);
        w.directive("return", {nginx::Token::number(code)});
        w.close();
    };
    render_timeouts(w, l, modules);
    render_retry(w, l, modules);
    if (!l.conditional.empty()) {
        nginx::Name target = conditional_target(splits, l);
        answer_when(target, nginx::Token::number(404), 404);
        answer_when(target, nginx::Token::number(500), 500);
        pass(nginx::Script().variable(target));
    } else if (l.return_code != 0) {
        w.directive("return", {nginx::Token::number(l.return_code)});
    } else {
        std::optional<nginx::Name> failed_split;
        nginx::Script target = proxy_target(splits, l.backends, &failed_split);
        if (failed_split) answer_when(*failed_split, nginx::Token::value(""), 500);
        pass(target);
    }
    w.close();
}

}  // namespace g2n
