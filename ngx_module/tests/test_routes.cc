// Unit tests of the run-time route tables: Gateway API matching over the
// indexes (against a linear reference, on random route sets), hostnames,
// replacement, what actions decide, and the API's JSON for them.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtls_routes.h"
#include "gtls_routes_json.h"

using namespace gtls;

namespace {

struct Request : RouteRequest {
    Request(std::string_view m, std::string_view p, std::string_view a = "") { method = m, path = p, args = a; }
    std::optional<std::string_view> header(std::string_view name) const override
    {
        auto it = headers.find(std::string(name));
        if (it == headers.end()) return std::nullopt;
        return std::string_view(it->second);
    }
    Request &with(const std::string &name, const std::string &value)
    {
        headers[name] = value;
        return *this;
    }
    std::map<std::string, std::string> headers;  // lower-case names
};

// A host's routes from the API's JSON for it
std::shared_ptr<const HostRoutes> routes(const std::string &host, const std::string &json)
{
    auto update = parse_route_update(R"({"routes": {"main": {")" + host + "\": " + json + "}}}");
    BOOST_TEST_REQUIRE(update.size() == 1u);
    BOOST_TEST_REQUIRE(update[0].hosts.size() == 1u);
    return update[0].hosts[0].routes;
}

// One action per match, each answering its own status: which match a
// request took, by its status (0: none)
std::shared_ptr<const HostRoutes> numbered(const std::string &host, const std::vector<std::string> &matches)
{
    std::string actions, list;
    for (size_t i = 0; i < matches.size(); i++) {
        actions += std::string(i ? "," : "") + R"({"status": )" + std::to_string(400 + i) + "}";
        list += std::string(i ? "," : "") + "{" + matches[i] + (matches[i].empty() ? "" : ",") + "\"action\": "
                + std::to_string(i) + "}";
    }
    return routes(host, R"({"actions": [)" + actions + R"(], "matches": [)" + list + "]}");
}

int taken(const HostRoutes &h, const RouteRequest &r)
{
    RouteChoice c = h.match(r);
    return c.action ? static_cast<int>(c.action->status) - 400 : -1;
}

std::string refusal(const std::string &body)
{
    try {
        parse_route_update(body);
    } catch (const ApiError &e) {
        BOOST_TEST(e.status() == 400);
        return e.what();
    }
    return "";
}

std::string host_refusal(const std::string &json) { return refusal(R"({"routes": {"main": {"a.example": )" + json + "}}}"); }

bool holds(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(routes)

BOOST_AUTO_TEST_CASE(path_prefixes_match_whole_segments)
{
    auto h = numbered("a.example", {R"("path": {"type": "PathPrefix", "value": "/foo/"})"});
    for (const char *path : {"/foo", "/foo/", "/foo/bar", "/foo/bar/baz"}) BOOST_TEST(taken(*h, Request("GET", path)) == 0, path);
    for (const char *path : {"/foobar", "/fo", "/", "/bar/foo"}) BOOST_TEST(taken(*h, Request("GET", path)) == -1, path);
    auto root = numbered("a.example", {R"("path": {"type": "PathPrefix", "value": "/"})"});
    for (const char *path : {"/", "/x", "/x/y/"}) BOOST_TEST(taken(*root, Request("GET", path)) == 0, path);
    auto absent = numbered("a.example", {""});  // no path: PathPrefix "/"
    BOOST_TEST(taken(*absent, Request("GET", "/anything")) == 0);
}

BOOST_AUTO_TEST_CASE(the_order_given_is_the_precedence)
{
    // gateway2nginx decides the order: the module takes the first that holds
    auto h = numbered("a.example", {R"("path": {"type": "Exact", "value": "/a/b"})",
                                    R"("path": {"type": "PathPrefix", "value": "/a/b"})",
                                    R"("path": {"type": "PathPrefix", "value": "/a"})",
                                    R"("path": {"type": "RegularExpression", "value": "/a/[0-9]+"})",
                                    R"("path": {"type": "PathPrefix", "value": "/"})"});
    BOOST_TEST(taken(*h, Request("GET", "/a/b")) == 0);
    BOOST_TEST(taken(*h, Request("GET", "/a/b/c")) == 1);
    BOOST_TEST(taken(*h, Request("GET", "/a/12")) == 2);  // the prefix ranks ahead of the pattern
    BOOST_TEST(taken(*h, Request("GET", "/b")) == 4);
    auto regex_first = numbered("a.example", {R"("path": {"type": "RegularExpression", "value": "/a/[0-9]+"})",
                                              R"("path": {"type": "PathPrefix", "value": "/a"})"});
    BOOST_TEST(taken(*regex_first, Request("GET", "/a/12")) == 0);
    BOOST_TEST(taken(*regex_first, Request("GET", "/a/12/x")) == 1);  // the whole path must match
}

BOOST_AUTO_TEST_CASE(conditions_fall_through_to_the_next_match)
{
    auto h = numbered("a.example", {R"("path": {"value": "/api"}, "method": "POST", "headers": [{"name": "X-Env", "value": "canary"}])",
                                    R"("path": {"value": "/api"}, "query": [{"name": "v", "type": "RegularExpression", "value": "[0-9]+"}])",
                                    R"("path": {"value": "/"}, "headers": [{"name": "x-env", "type": "RegularExpression", "value": "can.*"}])",
                                    R"("path": {"value": "/"}, "method": "GET")"});
    BOOST_TEST(taken(*h, Request("POST", "/api/x").with("x-env", "canary")) == 0);
    BOOST_TEST(taken(*h, Request("POST", "/api/x").with("x-env", "Canary")) == -1);  // values are exact
    BOOST_TEST(taken(*h, Request("GET", "/api/x", "a=1&v=12").with("x-env", "canary")) == 1);
    BOOST_TEST(taken(*h, Request("GET", "/api/x", "v=12x").with("x-env", "canary")) == 2);
    BOOST_TEST(taken(*h, Request("GET", "/api/x", "V=12")) == 3);  // parameter names keep their case
    BOOST_TEST(taken(*h, Request("GET", "/api/x", "v=x&v=1")) == 3);  // the first value counts
    BOOST_TEST(taken(*h, Request("PUT", "/other")) == -1);
}

BOOST_AUTO_TEST_CASE(query_parameters_are_read_raw_and_first)
{
    BOOST_TEST(*query_value("a=1&b=2", "b") == "2");
    BOOST_TEST(*query_value("ab=1&a=2&a=3", "a") == "2");
    BOOST_TEST(query_value("a=1", "b").has_value() == false);
    BOOST_TEST(query_value("flag&x=1", "flag")->empty());
    BOOST_TEST(*query_value("&&a=%20", "a") == "%20");
    BOOST_TEST(query_value("", "a").has_value() == false);
}

BOOST_AUTO_TEST_CASE(hosts_are_exact_then_the_longest_wildcard_then_any)
{
    RouteTable t;
    t.replace(numbered("a.example", {""}));
    t.replace(numbered("*.example", {""}));
    t.replace(numbered("*.b.example", {""}));
    t.replace(numbered("*", {""}));
    BOOST_TEST(t.hosts() == 4u);
    BOOST_TEST(t.find("a.example")->host() == "a.example");
    BOOST_TEST(t.find("x.example")->host() == "*.example");
    BOOST_TEST(t.find("x.y.example")->host() == "*.example");  // a suffix of any number of labels
    BOOST_TEST(t.find("x.b.example")->host() == "*.b.example");
    BOOST_TEST(t.find("b.example")->host() == "*.example");
    BOOST_TEST(t.find("example")->host() == "*");
    BOOST_TEST(t.find("other.test")->host() == "*");
    BOOST_TEST(t.remove("*"));
    BOOST_TEST(t.find("other.test") == nullptr);
    BOOST_TEST(!t.remove("*"));
    // an exact entry whose rules do not hold does not fall through
    t.replace(numbered("a.example", {R"("path": {"type": "Exact", "value": "/only"})"}));
    BOOST_TEST(taken(*t.find("a.example"), Request("GET", "/other")) == -1);
}

BOOST_AUTO_TEST_CASE(a_replaced_entry_lives_on_for_the_requests_holding_it)
{
    RouteTable t;
    t.replace(numbered("a.example", {R"("path": {"value": "/old"})", R"("path": {"value": "/"})"}));
    BOOST_TEST(t.matches() == 2u);
    std::shared_ptr<const HostRoutes> held = t.find("a.example");
    t.replace(numbered("a.example", {R"("path": {"value": "/new"})"}));
    BOOST_TEST(t.matches() == 1u);
    BOOST_TEST(t.hosts() == 1u);
    BOOST_TEST(taken(*held, Request("GET", "/old/x")) == 0);
    BOOST_TEST(taken(*t.find("a.example"), Request("GET", "/old/x")) == -1);
    BOOST_TEST(held.use_count() == 1);  // the table let it go
    BOOST_TEST(t.remove("a.example"));
    BOOST_TEST(t.matches() == 0u);
    BOOST_TEST(t.hosts() == 0u);
}

BOOST_AUTO_TEST_CASE(a_catastrophic_pattern_gives_up_within_its_limit)
{
    auto h = numbered("a.example", {R"("path": {"type": "RegularExpression", "value": "/(a+)+"})",
                                    R"("path": {"value": "/"})"});
    const std::string path = "/" + std::string(40, 'a') + "!";
    const auto start = std::chrono::steady_clock::now();
    RouteChoice c = h->match(Request("GET", path));
    const auto spent = std::chrono::steady_clock::now() - start;
    BOOST_TEST(c.regex_limit);
    BOOST_TEST(c.action->status == 401u);  // as if it had not matched
    // unbounded, 2^40 steps: years; bounded, well under a second even under valgrind
    BOOST_TEST(std::chrono::duration_cast<std::chrono::seconds>(spent).count() < 5);
    // a pattern ranked behind a looked-up match is never run
    auto behind = numbered("a.example", {R"("path": {"value": "/"})",
                                         R"("path": {"type": "RegularExpression", "value": "/(a+)+"})"});
    BOOST_TEST(!behind->match(Request("GET", path)).regex_limit);
}

BOOST_AUTO_TEST_CASE(weights_share_the_range_in_order)
{
    std::vector<WeightedBackend> b{{"a", 1, {}}, {"zero", 0, {}}, {"b", 3, {}}};
    BOOST_TEST(total_weight(b) == 4u);
    std::vector<size_t> got;
    for (uint64_t r = 0; r < 4; r++) got.push_back(choose_backend(b, r));
    BOOST_TEST(got == (std::vector<size_t>{0, 2, 2, 2}), boost::test_tools::per_element());
    BOOST_TEST(choose_backend({{"z", 0, {}}}, 0) == 1u);
    // a mirror copies numerator in denominator of uniformly drawn requests
    const Mirror third{"m", 1, 3}, all{"m", 100, 100}, none{"m", 0, 100};
    int copied = 0;
    for (uint64_t r = 0; r < 300; r++) copied += mirror_takes(third, r);
    BOOST_TEST(copied == 100);
    BOOST_TEST((mirror_takes(all, 99) && mirror_takes(all, 12345) && !mirror_takes(none, 0)));
}

BOOST_AUTO_TEST_CASE(rewrites_replace_the_prefix_as_nginx_rewrite_does)
{
    RouteMatch prefix;
    prefix.path = "/prefix/one";
    RouteMatch root;
    root.path = "/";
    RouteMatch exact;
    exact.path_kind = PathMatchKind::Exact;
    exact.path = "/e";
    const PathRewrite to_one{PathRewriteKind::ReplacePrefixMatch, "/one"};
    const PathRewrite to_root{PathRewriteKind::ReplacePrefixMatch, "/"};
    const PathRewrite full{PathRewriteKind::ReplaceFullPath, "/full"};
    BOOST_TEST(rewritten_path(to_one, prefix, "/prefix/one/two") == "/one/two");
    BOOST_TEST(rewritten_path(to_one, prefix, "/prefix/one") == "/one");
    BOOST_TEST(rewritten_path(to_one, prefix, "/prefix/one/") == "/one/");
    BOOST_TEST(rewritten_path(to_root, prefix, "/prefix/one/two") == "/two");
    BOOST_TEST(rewritten_path(to_root, prefix, "/prefix/one") == "/");
    BOOST_TEST(rewritten_path(to_one, root, "/x/y") == "/one/x/y");
    BOOST_TEST(rewritten_path(to_root, root, "/x") == "/x");
    BOOST_TEST(rewritten_path(full, prefix, "/prefix/one/two") == "/full");
    BOOST_TEST(rewritten_path(full, exact, "/e") == "/full");
    BOOST_TEST(rewritten_path(PathRewrite{}, prefix, "/prefix/one/x") == "/prefix/one/x");
}

// The fields sent after edits, as "name: value" lines: the kept ones in
// order, then the appended
std::string sent(const std::vector<HeaderField> &fields, const HeaderEdits &e)
{
    std::string out;
    for (size_t i = 0; i < fields.size(); i++) {
        if (!e.dropped.at(i)) out += std::string(fields[i].name) + ": " + std::string(fields[i].value) + "\n";
    }
    for (const HeaderValue &h : e.appended) out += h.name + ": " + h.value + "\n";
    return out;
}

// Only a WebSocket backend gets an Upgrade, and only a WebSocket one
BOOST_AUTO_TEST_CASE(upgrades_pass_to_websocket_backends_alone)
{
    WeightedBackend ws{"ws", 1, {}, true, BackendScheme::Https}, plain{"plain", 1, {}, false, BackendScheme::Http};
    BOOST_TEST(upgrade_sent(ws, std::string_view("WebSocket")) == "websocket");
    BOOST_TEST(upgrade_sent(ws, std::string_view("h2c")) == "");
    BOOST_TEST(upgrade_sent(ws, std::nullopt) == "");
    BOOST_TEST(upgrade_sent(plain, std::string_view("websocket")) == "");
    auto r = parse_host_routes(R"({"actions": [{"backends": [{"backend": "ws", "websocket": true}, {"backend": "p"}]}],
                                   "matches": [{"action": 0}]})",
                               "a.example");
    BOOST_TEST(r->actions()[0].backends[0].websocket);
    BOOST_TEST(!r->actions()[0].backends[1].websocket);
    BOOST_TEST(host_routes_json(*parse_host_routes(host_routes_json(*r), "a.example")) == host_routes_json(*r));
    BOOST_TEST(holds(host_refusal(R"({"actions": [{"backends": [{"backend": "ws", "websocket": 1}]}], "matches": [{"action": 0}]})"),
                     "backends[0].websocket: must be true or false, not a number"));
}

// Each backend says how it is spoken to; https unless it says otherwise
BOOST_AUTO_TEST_CASE(backends_say_their_scheme)
{
    auto r = parse_host_routes(R"({"actions": [{"backends": [{"backend": "a"}, {"backend": "b", "scheme": "http"},
                                   {"backend": "c", "scheme": "grpcs"}, {"backend": "d", "scheme": "grpc"}]}],
                                   "matches": [{"action": 0}]})",
                               "a.example");
    const std::vector<WeightedBackend> &b = r->actions()[0].backends;
    BOOST_TEST_REQUIRE(b.size() == 4u);
    BOOST_TEST(std::string(scheme_name(b[0].scheme)) + scheme_name(b[1].scheme) + scheme_name(b[2].scheme)
                   + scheme_name(b[3].scheme)
               == "httpshttpgrpcsgrpc");
    BOOST_TEST(!scheme_is_plaintext(b[0].scheme));
    BOOST_TEST(scheme_is_plaintext(b[1].scheme));
    BOOST_TEST(!scheme_is_plaintext(b[2].scheme));
    BOOST_TEST(scheme_is_plaintext(b[3].scheme));
    const std::string json = host_routes_json(*r);
    BOOST_TEST(json.find("\"scheme\":\"https\"") == std::string::npos);  // the default is left out
    BOOST_TEST(host_routes_json(*parse_host_routes(json, "a.example")) == json);
    BOOST_TEST(holds(host_refusal(R"({"actions": [{"backends": [{"backend": "a", "scheme": "h2c"}]}], "matches": [{"action": 0}]})"),
                     "backends[0].scheme: \"h2c\" is not one of https, http, grpcs, grpc"));
}

BOOST_AUTO_TEST_CASE(request_headers_are_edited_as_proxy_set_header_does)
{
    const std::vector<HeaderField> in{{"Host", "a.example"}, {"X-Set", "client"}, {"x-add", "one"},
                                      {"X-Add", "two"},      {"X-Gone", "bye"},   {"X-Keep", "k"}};
    RouteAction a;
    BOOST_TEST(!edits_request_headers(a, nullptr));
    a.request_headers.set = {{"x-set", "route"}, {"X-New", "n"}, {"X-Keep", ""}};
    a.request_headers.add = {{"X-Add", "three"}, {"X-Fresh", "f"}};
    a.request_headers.remove = {{"X-GONE"}};
    BOOST_TEST(edits_request_headers(a, nullptr));
    // set replaces every field of its name, and an empty one is not sent;
    // add joins what was sent with its own value
    BOOST_TEST(sent(in, edit_request_headers(in, a, nullptr))
               == "Host: a.example\nx-set: route\nX-New: n\nX-Add: one, two,three\nX-Fresh: f\n");

    // URLRewrite's hostname is the Host, unless a modifier names it; the
    // backend's own modifier comes last
    RouteAction r;
    r.rewrite = UrlRewrite{"b.example", {}};
    BOOST_TEST(edits_request_headers(r, nullptr));
    BOOST_TEST(sent(in, edit_request_headers(in, r, nullptr)).find("Host: b.example\n") != std::string::npos);
    BOOST_TEST(sent(in, edit_request_headers(in, r, nullptr)).find("a.example") == std::string::npos);
    WeightedBackend b{"be", 1, {}};
    b.request_headers.add = {{"host", "c"}};
    b.request_headers.remove = {"x-set", "X-ADD", "x-keep"};
    BOOST_TEST(edits_request_headers(RouteAction{}, &b));
    BOOST_TEST(sent(in, edit_request_headers(in, r, &b)) == "X-Gone: bye\nhost: b.example,c\n");
}

BOOST_AUTO_TEST_CASE(redirects_locate_as_gateway_api_says)
{
    RouteMatch prefix;
    prefix.path = "/old";
    RequestTarget in{"http", "a.example", "/old/x y", "q=1", 8080, "", ""};
    Redirect r;
    BOOST_TEST(redirect_location(r, prefix, in) == "http://a.example:8080/old/x%20y?q=1");  // the listener's port
    r.scheme = "https";
    BOOST_TEST(redirect_location(r, prefix, in) == "https://a.example/old/x%20y?q=1");  // the scheme's own port
    r.port = 8443;
    r.hostname = "b.example";
    r.path = {PathRewriteKind::ReplacePrefixMatch, "/new"};
    BOOST_TEST(redirect_location(r, prefix, in) == "https://b.example:8443/new/x%20y?q=1");
    r.port = 443;
    r.path = {PathRewriteKind::ReplaceFullPath, "/a%20b"};
    BOOST_TEST(redirect_location(r, prefix, in) == "https://b.example/a%20b?q=1");  // values are already escaped
    Redirect plain;
    RequestTarget on80{"http", "a.example\r\nX: 1", "/%\r\n\"<>", "a=\r\n\"", 80, "", ""};
    // what the decoded path and the query hold that a header may not is escaped
    BOOST_TEST(redirect_location(plain, prefix, on80) == "http://a.example%0D%0AX:%201/%25%0D%0A%22%3C%3E?a=%0D%0A%22");

    // as the rendered return: the Host header and the target as sent
    RequestTarget sent{"http", "a.example", "/old/x y", "q=1", 80, "a.example:8080", "/old/x%20y?q=1"};
    BOOST_TEST(redirect_location(plain, prefix, sent) == "http://a.example:8080/old/x%20y?q=1");
    Redirect to_https;
    to_https.scheme = "https";
    BOOST_TEST(redirect_location(to_https, prefix, sent) == "https://a.example/old/x%20y?q=1");
    Redirect moved;
    moved.path = {PathRewriteKind::ReplacePrefixMatch, "/new"};
    BOOST_TEST(redirect_location(moved, prefix, sent) == "http://a.example:8080/new/x%20y?q=1");
    RequestTarget raw{"http", "a.example", "/", "", 80, "a.example\r\n", "/a%2Fb\"\r\n"};
    BOOST_TEST(redirect_location(plain, prefix, raw) == "http://a.example%0D%0A/a%2Fb%22%0D%0A");

    // the rendered redirect's $gateway_tls_redirect_path: the same escapes
    BOOST_TEST(location_path("/new/a\r\nSet-Cookie: x", "q=\"1\"") == "/new/a%0D%0ASet-Cookie:%20x?q=%221%22");
    BOOST_TEST(location_path("/a?b#c%", "") == "/a%3Fb%23c%25");
    BOOST_TEST(location_path("/", "x") == "/?x");
}

// The indexes give what a linear walk of the list in order gives, on
// random route sets and requests (paths that share segments, all three
// path types, methods, headers, query parameters).
BOOST_AUTO_TEST_CASE(the_indexes_agree_with_a_linear_walk)
{
    std::mt19937 rng(20261129);
    auto pick = [&](std::initializer_list<const char *> list) {
        return std::string(list.begin()[std::uniform_int_distribution<size_t>(0, list.size() - 1)(rng)]);
    };
    auto segments = [&]() {
        std::string p;
        const int n = std::uniform_int_distribution<int>(0, 3)(rng);
        for (int i = 0; i < n; i++) p += "/" + pick({"a", "b", "ab", "1", "22"});
        return p.empty() ? std::string("/") : p;
    };
    auto reference = [](const HostRoutes &h, const Request &r) -> int {
        for (size_t i = 0; i < h.matches().size(); i++) {
            const RouteMatch &m = h.matches()[i];
            bool path = false;
            switch (m.path_kind) {
            case PathMatchKind::Exact: path = r.path == m.path; break;
            case PathMatchKind::PathPrefix:
                path = m.path == "/" || r.path == m.path
                       || (r.path.substr(0, m.path.size()) == m.path && r.path[m.path.size()] == '/');
                break;
            case PathMatchKind::RegularExpression: path = m.path_regex->matches(r.path); break;
            }
            if (!path || (!m.method.empty() && m.method != r.method)) continue;
            bool ok = true;
            for (const ValueMatch &v : m.headers) {
                auto got = r.header(v.name);
                ok &= got && (v.kind == ValueMatchKind::Exact ? *got == v.value : v.regex->matches(*got));
            }
            for (const ValueMatch &v : m.query) {
                auto got = query_value(r.args, v.name);
                ok &= got && (v.kind == ValueMatchKind::Exact ? *got == v.value : v.regex->matches(*got));
            }
            if (ok) return static_cast<int>(h.actions()[m.action].status) - 400;
        }
        return -1;
    };
    size_t compared = 0, matched = 0;
    for (int set = 0; set < 200; set++) {
        std::vector<std::string> matches;
        const int n = std::uniform_int_distribution<int>(1, 12)(rng);
        for (int i = 0; i < n; i++) {
            std::string m;
            const std::string type = pick({"Exact", "PathPrefix", "PathPrefix", "RegularExpression"});
            const std::string value = type == "RegularExpression" ? segments() + pick({"", "/[0-9]+", "(/.*)?", "[ab]*"})
                                                                  : segments() + pick({"", "", "/"});
            m = R"("path": {"type": ")" + type + R"(", "value": ")" + value + "\"}";
            if (rng() % 3 == 0) m += R"(, "method": ")" + pick({"GET", "POST"}) + "\"";
            if (rng() % 3 == 0) m += R"(, "headers": [{"name": "x-h", "value": ")" + pick({"1", "2"}) + "\"}]";
            if (rng() % 4 == 0) m += R"(, "query": [{"name": "q", "type": "RegularExpression", "value": "[)" + pick({"1", "12"}) + "]\"}]";
            matches.push_back(m);
        }
        auto h = numbered("a.example", matches);
        for (int i = 0; i < 50; i++) {
            const std::string path = segments() + pick({"", "/", "/3", "x"});
            Request r(pick({"GET", "POST"}), path, pick({"", "q=1", "q=2", "x=1&q=12"}));
            if (rng() % 2) r.with("x-h", pick({"1", "2"}));
            const int want = reference(*h, r);
            BOOST_TEST(taken(*h, r) == want, path << " " << r.method << " ?" << r.args);
            compared++;
            matched += want >= 0;
        }
    }
    BOOST_TEST(compared == 10000u);
    BOOST_TEST(matched > 2000u);  // the sets are not trivially empty
}

// ---- the API's JSON

BOOST_AUTO_TEST_CASE(a_full_body_reads_into_typed_rules)
{
    auto update = parse_route_update(R"({"routes": {"main": {
        "a.example": {"actions": [
            {"backends": [{"backend": "ns_web_8443", "weight": 3,
                           "request_headers": {"set": [{"name": "X-Split", "value": "a"}]}},
                          {"backend": "", "weight": 1}],
             "request_headers": {"add": [{"name": "X-Add", "value": "v"}], "remove": ["X-Drop"]},
             "response_headers": {"set": [{"name": "Via", "value": "ok for responses"}]},
             "rewrite": {"hostname": "internal.example", "path": {"type": "ReplacePrefixMatch", "value": "/v2"}},
             "mirrors": [{"backend": "ns_shadow_80", "numerator": 1, "denominator": 10}],
             "timeouts": {"request_ms": 5000, "backend_ms": 0},
             "retry": {"attempts": 2, "codes": [502, 503], "backoff_ms": 100}},
            {"redirect": {"scheme": "https", "port": 443, "status": 301}},
            {"status": 500}],
          "matches": [
            {"path": {"type": "PathPrefix", "value": "/v1/"}, "method": "GET",
             "headers": [{"name": "X-Env", "value": "prod"}], "query": [{"name": "Q", "value": "1"}], "action": 0},
            {"path": {"type": "Exact", "value": "/plain"}, "action": 1},
            {"action": 2}]},
        "*.example": null},
      "second": {"*": {"actions": [{"status": 404}], "matches": [{"action": 0}]}}}})");
    BOOST_TEST_REQUIRE(update.size() == 2u);
    BOOST_TEST(update[0].table == "main");
    BOOST_TEST_REQUIRE(update[0].hosts.size() == 2u);
    BOOST_TEST(update[0].hosts[1].host == "*.example");
    BOOST_TEST(update[0].hosts[1].routes == nullptr);  // removed
    const HostRoutes &h = *update[0].hosts[0].routes;
    BOOST_TEST_REQUIRE(h.matches().size() == 3u);
    const RouteMatch &m = h.matches()[0];
    BOOST_TEST(m.path == "/v1");  // a prefix is kept without its trailing "/"
    BOOST_TEST(m.headers[0].name == "x-env");  // header names in lower case
    BOOST_TEST(m.query[0].name == "Q");        // parameter names as given
    const RouteAction &a = h.actions()[0];
    BOOST_TEST(a.backends.size() == 2u);
    BOOST_TEST(a.backends[0].weight == 3u);
    BOOST_TEST(a.backends[0].request_headers.set[0].name == "X-Split");
    BOOST_TEST(a.backends[1].backend.empty());
    BOOST_TEST(a.request_headers.remove[0] == "X-Drop");
    BOOST_TEST((a.rewrite->path.kind == PathRewriteKind::ReplacePrefixMatch));
    BOOST_TEST(a.mirrors[0].numerator == 1u);
    BOOST_TEST(a.request_timeout_ms == 5000);
    BOOST_TEST(a.backend_timeout_ms == 0);
    BOOST_TEST(a.retry_codes.size() == 2u);
    BOOST_TEST(h.actions()[1].redirect->status == 301u);
    BOOST_TEST(h.actions()[1].redirect->hostname.empty());
    BOOST_TEST((h.matches()[2].path_kind == PathMatchKind::PathPrefix));
    BOOST_TEST(h.matches()[2].path == "/");
    // what the module keeps reads back into the same rules
    const std::string kept = host_routes_json(h);
    BOOST_TEST(host_routes_json(*parse_host_routes(kept, "a.example")) == kept);
    BOOST_TEST(parse_host_routes(kept, "a.example")->matches().size() == 3u);
}

BOOST_AUTO_TEST_CASE(refusals_name_the_field_and_the_fault)
{
    const std::string ok_action = R"({"status": 500})";
    auto with_match = [&](const std::string &match) {
        return host_refusal(R"({"actions": [)" + ok_action + R"(], "matches": [)" + match + "]}");
    };
    auto with_action = [&](const std::string &action) {
        return host_refusal(R"({"actions": [)" + action + R"(], "matches": [{"action": 0}]})");
    };
    const std::string host = R"(routes["main"]["a.example"])";
    BOOST_TEST(holds(with_match(R"({"action": 0, "paht": {}})"), host + ".matches[0]: unknown field \"paht\""));
    BOOST_TEST(holds(with_match(R"({"action": 0, "action": 0})"), "\"action\" appears twice"));
    BOOST_TEST(holds(with_match(R"({"action": 1})"), host + ".matches[0].action: must be a whole number from 0 to 0"));
    BOOST_TEST(holds(with_match(R"({})"), "needs \"action\""));
    BOOST_TEST(holds(with_match(R"({"action": 0, "path": {"type": "Exact", "value": "x"}})"), ".path.value: \"x\" is not a path"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "path": {"value": "/a b"}})"), "is not a path"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "path": {"value": "/a%zz"}})"), "is not a path"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "path": {"type": "Prefix", "value": "/"}})"), "\"Prefix\" is not one of Exact, PathPrefix, RegularExpression"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "path": {"type": "RegularExpression", "value": "/(a"}})"), ".path.value: does not compile: missing closing parenthesis"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "path": {"type": "RegularExpression", "value": ")" + std::string(40, '(') + std::string(40, ')') + "\"}}"), "does not compile: parentheses are too deeply nested"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "method": "get"})"), ".method: \"get\" is not one of GET"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "headers": [{"name": "a b", "value": "1"}]})"), ".headers[0].name: \"a b\" is not a valid name"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "headers": [{"name": "A", "value": "1"}, {"name": "a", "value": "2"}]})"), ".headers[1]: \"a\" is matched twice"));
    BOOST_TEST(holds(with_match(R"({"action": 0, "headers": [{"name": "a", "value": "x\ny"}]})"), ".headers[0].value: holds a control character"));
    std::string seventeen;
    for (int i = 0; i < 17; i++) seventeen += std::string(i ? "," : "") + R"({"name": "h)" + std::to_string(i) + R"(", "value": "1"})";
    BOOST_TEST(holds(with_match(R"({"action": 0, "headers": [)" + seventeen + "]}"), ".headers: 17 items, more than 16"));

    BOOST_TEST(holds(with_action(R"({})"), host + ".actions[0]: needs exactly one of \"backends\", \"status\" and \"redirect\""));
    BOOST_TEST(holds(with_action(R"({"status": 500, "backends": [{"backend": "a"}]})"), "needs exactly one of"));
    BOOST_TEST(holds(with_action(R"({"status": 200})"), ".status: must be a whole number from 400 to 599"));
    BOOST_TEST(holds(with_action(R"({"status": 500.0})"), ".status: must be a whole number"));
    BOOST_TEST(holds(with_action(R"({"backends": [{"backend": "a;b"}]})"), ".backends[0].backend: \"a;b\" is not a backend name"));
    BOOST_TEST(holds(with_action(R"({"backends": [{"backend": "a", "weight": 1000001}]})"), ".weight: must be a whole number from 0 to 1000000"));
    BOOST_TEST(holds(with_action(R"({"status": 500, "request_headers": {"set": [{"name": "Content-Length", "value": "0"}]}})"), ".request_headers.set[0].name: Content-Length frames the message"));
    BOOST_TEST(holds(with_action(R"({"status": 500, "response_headers": {"remove": ["transfer-encoding"]}})"), ".response_headers.remove[0]: frames the message"));
    BOOST_TEST(holds(with_action(R"({"status": 500, "request_headers": {"remove": ["VIA"]}})"), ".request_headers.remove[0]: VIA is set by the gateway"));
    BOOST_TEST(holds(with_action(R"({"backends": [{"backend": "a", "request_headers": {"add": [{"name": "via", "value": "x"}]}}]})"), ".backends[0].request_headers.add[0].name: via is set by the gateway"));
    BOOST_TEST(holds(with_action(R"({"status": 500, "request_headers": {"set": [{"name": "x", "value": "a\r\nb: c"}]}})"), ".request_headers.set[0].value: holds a control character"));
    BOOST_TEST(holds(with_action(R"({"redirect": {"scheme": "ftp"}})"), ".redirect.scheme: \"ftp\" is not one of http, https"));
    BOOST_TEST(holds(with_action(R"({"redirect": {"status": 304}})"), ".redirect.status: \"304\" is not one of 301"));
    BOOST_TEST(holds(with_action(R"({"redirect": {"hostname": "Evil.example\r"}})"), ".redirect.hostname: holds a control character"));
    BOOST_TEST(holds(with_action(R"({"redirect": {"hostname": "a..b"}})"), ".redirect.hostname: \"a..b\" is not a hostname"));
    BOOST_TEST(holds(with_action(R"({"redirect": {}, "rewrite": {}})"), "redirects and rewrites at once"));
    BOOST_TEST(holds(with_action(R"({"status": 500, "rewrite": {"path": {"type": "ReplaceFullPath", "value": "/a?b=1"}}})"), ".rewrite.path.value: \"/a?b=1\" is not a path"));
    BOOST_TEST(holds(with_action(R"({"status": 500, "mirrors": [{"backend": "m", "numerator": 11, "denominator": 10}]})"), ".mirrors[0].numerator: must be a whole number from 0 to 10"));
    BOOST_TEST(holds(with_action(R"({"status": 500, "retry": {"codes": [200]}})"), ".retry.codes[0]: must be a status from 400 to 599"));
    BOOST_TEST(holds(host_refusal(R"({"actions": [{"status": 500, "rewrite": {"path": {"type": "ReplacePrefixMatch", "value": "/x"}}}],
                                     "matches": [{"path": {"type": "Exact", "value": "/e"}, "action": 0}]})"),
                     host + ".matches[0]: its action replaces a prefix, and it matches no PathPrefix"));

    BOOST_TEST(holds(refusal(R"({"routes": {"main": {"A.example": null}}})"), R"(routes["main"]["A.example"]: is not a hostname)"));
    BOOST_TEST(holds(refusal(R"({"routes": {"main": {"*.*.example": null}}})"), "is not a hostname"));
    BOOST_TEST(holds(refusal(R"({"routes": {"main": {"a.example": null, "a.example": null}}})"), R"(routes["main"]: the key "a.example" appears twice)"));
    BOOST_TEST(holds(refusal(R"({"routes": {"a b": {}}})"), R"(routes["a b"]: is not a table name)"));
    BOOST_TEST(holds(refusal(R"({"routes": {"main": {}}, "upstream": {}})"), "the body: unknown field \"upstream\""));
    BOOST_TEST(holds(refusal(R"({"routes": []})"), "routes: must be an object, not an array"));
    BOOST_TEST(holds(refusal("{\"routes\": {}}\n{}"), "JSON line 2, column 1: The document root must not be followed by other values"));
    BOOST_TEST(holds(refusal(std::string("{\"routes\": {}}\0{}", 16)), "JSON line 1, column 15: a NUL byte"));
    BOOST_TEST(holds(refusal("{\"routes\": {\"m\xff\": {}}}"), "Invalid encoding"));
    // nesting no reader would descend into is refused at its first field, without recursion
    BOOST_TEST(holds(refusal("{\"routes\": {\"main\": {\"a.example\": {\"deep\": " + std::string(100000, '[')
                             + std::string(100000, ']') + "}}}}"),
                     "unknown field \"deep\""));
    BOOST_TEST(refusal(R"({})").empty());
}

// A refusal names the table whose part of the body is at fault (counted
// as that table's refusal), none where the fault is outside every table
BOOST_AUTO_TEST_CASE(refusals_name_their_table)
{
    auto table_of = [](const std::string &body) {
        try {
            parse_route_update(body);
        } catch (const ApiError &e) {
            return e.table();
        }
        return std::string("(taken)");
    };
    BOOST_TEST(table_of(R"({"routes": {"main": {"a.example": null}, "edge": {"B.example": null}}})") == "edge");
    BOOST_TEST(table_of(R"({"routes": {"main": {"a.example": {"actions": [], "matches": [{"action": 0}]}}}})") == "main");
    BOOST_TEST(table_of(R"({"routes": {"main": []}})") == "main");
    BOOST_TEST(table_of(R"({"routes": {"ma{in": {}}})") == "");
    BOOST_TEST(table_of(R"({"routes": []})") == "");
    BOOST_TEST(table_of(R"({"routes": {"main": {"a.example": null}}})") == "(taken)");
}

BOOST_AUTO_TEST_CASE(counts_are_bounded_per_hostname)
{
    std::string patterns;
    for (size_t i = 0; i <= kMaxHostPatterns; i++) {
        patterns += std::string(i ? "," : "") + R"({"path": {"type": "RegularExpression", "value": "/r)" + std::to_string(i) + R"("}, "action": 0})";
    }
    BOOST_TEST(holds(host_refusal(R"({"actions": [{"status": 500}], "matches": [)" + patterns + "]}"),
                     ".matches[1024]: more than 1024 regular expressions"));
    std::string many;
    for (size_t i = 0; i <= kMaxHostMatches; i++) many += std::string(i ? "," : "") + R"({"action": 0})";
    BOOST_TEST(holds(host_refusal(R"({"actions": [{"status": 500}], "matches": [)" + many + "]}"), ".matches: 10001 items, more than 10000"));
}

BOOST_AUTO_TEST_SUITE_END()
