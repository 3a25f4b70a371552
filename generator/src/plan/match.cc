// HTTPRoute matches as nginx locations: path matches as location
// arguments, header, query and method matches as typed conditions (render
// writes them as variables and anchored regexes), and the order Gateway
// API gives them.
#include <algorithm>
#include <regex>
#include <tuple>

#include "resolve/resolve.h"

namespace g2n {

bool is_conditional(const RouteMatch &m)
{
    return !m.headers.empty() || !m.query_params.empty() || !m.method.empty();
}

// The conditions of a match, or why they cannot be served: nginx reaches
// a header or query parameter through a variable, so the name must be one
// a variable can carry.
std::string match_conditions(const RouteMatch &m, std::vector<MatchCondition> *out)
{
    using Subject = MatchCondition::Subject;
    static const std::regex variable_safe("^[A-Za-z0-9_-]+$");
    // values were checked at parse (no control characters; regexes compile)
    auto add = [&](Subject subject, const std::string &name, const HeaderMatch &h) -> std::string {
        if (h.type == HeaderMatchType::Other) {
            return "match type " + h.type_name + " is not supported";
        }
        if (out != nullptr) out->push_back({subject, name, h.type == HeaderMatchType::RegularExpression, h.value});
        return "";
    };
    if (!m.method.empty()) {
        HeaderMatch method;
        method.value = m.method;
        std::string why = add(Subject::Method, "", method);
        if (!why.empty()) return why;
    }
    for (const HeaderMatch &h : m.headers) {
        if (!std::regex_match(h.name, variable_safe)) return "header name " + h.name + " cannot be matched";
        std::string why = add(Subject::Header, h.name, h);
        if (!why.empty()) return why;
    }
    for (const HeaderMatch &q : m.query_params) {
        if (q.name.find('-') != std::string::npos || !std::regex_match(q.name, variable_safe)) {
            return "query parameter " + q.name + " cannot be matched";
        }
        std::string why = add(Subject::QueryParam, q.name, q);
        if (!why.empty()) return why;
    }
    return "";
}

std::vector<LocationMatch> location_matches(const RouteMatch &m)
{
    using Kind = LocationMatch::Kind;
    if (m.path_type == PathMatchType::Exact) return {{Kind::Exact, m.path}};
    // whole-path PCRE; nginx tries regex locations before prefixes, in order
    if (m.path_type == PathMatchType::RegularExpression) return {{Kind::Regex, "^(?:" + m.path + ")$"}};
    std::string prefix = m.path;
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (prefix == "/") return {{Kind::Prefix, "/"}};
    // path-element prefix: /foo matches /foo and /foo/..., not /foobar
    return {{Kind::Exact, prefix}, {Kind::Prefix, prefix + "/"}};
}

void order_locations(Server *server)
{
    // Gateway API precedence among rules of one path: a method match,
    // then more header matches, then more query matches, then age
    for (Location &l : server->locations) {
        std::stable_sort(l.conditional.begin(), l.conditional.end(),
                         [](const ConditionalTarget &a, const ConditionalTarget &b) {
                             auto rank = [](const ConditionalTarget &t) {
                                 int method = 0, headers = 0, query = 0;
                                 for (const MatchCondition &c : t.conditions) {
                                     switch (c.subject) {
                                     case MatchCondition::Subject::Method: method++; break;
                                     case MatchCondition::Subject::Header: headers++; break;
                                     case MatchCondition::Subject::QueryParam: query++; break;
                                     }
                                 }
                                 return std::make_tuple(method, headers, query);
                             };
                             return rank(a) > rank(b);
                         });
    }
    // sorted for stable output; regex locations keep route precedence order
    sort_by_position(server->locations, [](const Location &a, const Location &b) {
        bool ra = a.match.kind == LocationMatch::Kind::Regex, rb = b.match.kind == LocationMatch::Kind::Regex;
        if (ra || rb) return !ra && rb;
        return a.match.describe() < b.match.describe();
    });
}

}  // namespace g2n
