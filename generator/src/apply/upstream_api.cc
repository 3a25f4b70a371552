#include "apply/upstream_api.h"

#include <curl/curl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "digest.h"
#include "recent_memo.h"
#include "gtls_upstream_api.h"
#include "plan/route_tables.h"
#include "plan/upstreams.h"

namespace g2n {

namespace {

// A route table hostname removed, in ApiContent::routes
constexpr char kRemoved[] = "null";

// libcurl's write callback: the body, into room its Content-Length makes
// once (a list names every upstream's servers and every policy's CA
// bundle, megabytes at thousands of routes)
size_t on_reply_data(char *data, size_t size, size_t count, void *user)
{
    auto *reply = static_cast<std::pair<CURL *, std::string> *>(user);
    if (reply->second.empty()) {
        curl_off_t length = -1;
        if (curl_easy_getinfo(reply->first, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK && length > 0
            && length < (curl_off_t{1} << 30)) {
            reply->second.reserve(static_cast<size_t>(length));
        }
    }
    reply->second.append(data, size * count);
    return size * count;
}

// What a request to the upstream API came to: `failed` "" on 200, else
// why not; the HTTP status (0: none came); whether nothing listened
struct ApiOutcome {
    std::string failed;
    long status = 0;
    bool unreachable = false;
};

// METHOD (PUT with `body`, GET) to gateway_tls_upstream_api at `listen`,
// over plain HTTP on the operator's address (no proxy); on 200, *answer
// its body, handed over with no copy.
ApiOutcome api_request(const std::string &listen, const std::string &token, const char *method, const std::string &body,
                       std::string *answer)
{
    gtls::UpstreamServer api;
    try {
        api = gtls::parse_server_address(listen, "--upstream-api");
    } catch (const gtls::ApiError &e) {
        return {e.what()};
    }
    std::unique_ptr<CURL, void (*)(CURL *)> curl(curl_easy_init(), curl_easy_cleanup);
    if (curl == nullptr) return {"libcurl: cannot make a handle"};
    std::pair<CURL *, std::string> reply{curl.get(), ""};
    const std::string url = "http://" + api.address + "/upstreams";
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    // as long as it moves: nothing for 10 s is a failure, a big list is not
    curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 10L);
    curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, method);
    if (std::strcmp(method, "GET") != 0) {
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.data());
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_reply_data);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &reply);
    const std::string authorization = "Authorization: Bearer " + token;
    std::unique_ptr<curl_slist, void (*)(curl_slist *)> headers(nullptr, curl_slist_free_all);
    for (const char *h : {"Content-Type: application/json", "Expect:", authorization.c_str()}) {
        headers.reset(curl_slist_append(headers.release(), h));
    }
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(curl.get());
    const std::string why = error[0] != '\0' ? error : curl_easy_strerror(rc);
    if (rc == CURLE_COULDNT_CONNECT) return {"cannot connect to " + listen + ": " + why, 0, true};
    if (rc != CURLE_OK) return {"the upstream API at " + listen + ": " + why};
    ApiOutcome outcome;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &outcome.status);
    if (outcome.status == 200) {
        if (answer != nullptr) *answer = std::move(reply.second);
        return outcome;
    }
    outcome.failed = "the upstream API answered HTTP " + std::to_string(outcome.status) + ": " + reply.second;
    return outcome;
}

}  // namespace

namespace {

// the trust JSON of `p`, its CA bundle's PEM found by `file` (path -> content)
std::string trust_api_json(const UpstreamPolicy &p, const std::function<const std::string *(const std::string &)> &file)
{
    gtls::PolicyTrust trust;
    trust.policy = p.name;
    trust.pins = p.pins;
    if (p.names_pushed) {
        trust.hostname = p.hostname;
        trust.subject_alt_names = p.sans;
    }
    if (p.ca == "system") {
        trust.ca = "system";
    } else if (!p.ca.empty()) {
        const std::string *content = file(p.ca);
        if (content == nullptr) throw std::logic_error("the CA bundle " + p.ca + " is not among the files written");
        trust.ca = *content;
    }
    // always pushed where it has one: a push without it puts back what
    // nginx was configured with, the files as they were at the last reload
    if (!p.client_certificate.empty()) {
        const std::string *certificate = file(p.client_certificate), *key = file(p.client_key);
        if (certificate == nullptr || key == nullptr) {
            throw std::logic_error("the client certificate " + p.client_certificate + " is not among the files written");
        }
        trust.client_certificate = gtls::PemKeyPair{*certificate, *key};
    }
    return gtls::policy_trust_json(trust);
}

}  // namespace

std::string policy_trust_api_json(const UpstreamPolicy &p, const Plan &plan)
{
    return trust_api_json(p, [&](const std::string &path) -> const std::string * {
        auto f = std::find_if(plan.files.begin(), plan.files.end(), [&](const OutputFile &o) { return o.path == path; });
        return f == plan.files.end() ? nullptr : &f->content;
    });
}

std::string upstream_servers_api_json(const Upstream &u)
{
    std::vector<gtls::UpstreamServer> servers;
    for (const ServerLine &line : upstream_server_lines(u)) {
        gtls::UpstreamServer s = gtls::parse_server_address(line.address, "server");
        if (line.max_fails_off) s.max_fails = 0;
        servers.push_back(std::move(s));
    }
    return gtls::upstream_servers_json(servers);
}


namespace {

// api_request, retried for 5 s while a worker of the configuration a
// reload replaced refuses (503) or nothing listens yet; `after_reload`,
// while one not yet told to leave has none of what the new one added (404:
// an upstream, a table; 409: a route's backend)
std::string api_request_retried(const Options &options, const char *method, const std::string &body,
                                std::string *answer, bool after_reload = false)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
        ApiOutcome r = api_request(options.upstream_api, options.upstream_api_token, method, body, answer);
        const bool again = r.unreachable || r.status == 503 || (after_reload && (r.status == 404 || r.status == 409));
        if (r.failed.empty() || !again || std::chrono::steady_clock::now() > deadline) return r.failed;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace

std::string push_to_api(const Options &options, const std::string &body)
{
    return api_request_retried(options, "PUT", body, nullptr);
}

ApiContent ApiContent::changed_since(const ApiHeld &held, ApiHeld *digests) const
{
    ApiContent changed;
    auto diff = [](const std::map<std::string, std::string> &now, const std::map<std::string, std::string> &then,
                   std::map<std::string, std::string> *out, std::map<std::string, std::string> *mine) {
        for (const auto &[name, json] : now) {
            std::string digest = sha256(json);
            auto it = then.find(name);
            if (it == then.end() || it->second != digest) (*out)[name] = json;
            if (mine != nullptr) (*mine)[name] = std::move(digest);
        }
    };
    diff(servers, held.servers, &changed.servers, digests ? &digests->servers : nullptr);
    diff(stream_servers, held.stream_servers, &changed.stream_servers, digests ? &digests->stream_servers : nullptr);
    diff(trust, held.trust, &changed.trust, digests ? &digests->trust : nullptr);
    diff(routes, held.routes, &changed.routes, digests ? &digests->routes : nullptr);
    diff(certificates, held.certificates, &changed.certificates, digests ? &digests->certificates : nullptr);
    return changed;
}

std::string route_entry_key(const std::string &table, const std::string &host)
{
    return table + " " + host;
}

ApiHeld ApiHeld::of(const ApiContent &content)
{
    ApiHeld held;
    held.hold(content);
    return held;
}

void ApiHeld::hold(const ApiContent &pushed)
{
    for (int i = 0; i < kApiSections; i++) {
        for (const auto &[name, json] : pushed.list(i)) {
            if (i == kApiRoutes && json == kRemoved) {
                list(i).erase(name);
            } else {
                list(i)[name] = sha256(json);
            }
        }
    }
}

namespace {

// What a policy's trust JSON is made of, on a line: its CA bundle by its
// file's name, which is its content's id; its client certificate's files
// keep their names (their Secret's) when renewed, so by their content
std::string trust_inputs(const UpstreamPolicy &p, const std::function<const std::string *(const std::string &)> &file)
{
    std::string line = p.name + '\0' + p.ca;
    if (!p.client_certificate.empty()) {
        const std::string *certificate = file(p.client_certificate), *key = file(p.client_key);
        line += "\0\x02" + (certificate != nullptr ? sha256(*certificate) : "") + '\0'
                + (key != nullptr ? sha256(*key) : "");
    }
    for (const std::string &pin : p.pins) line += '\0' + pin;
    if (p.names_pushed) {
        line += "\0\x01" + p.hostname;
        for (const std::string &san : p.sans) line += '\0' + san;
    }
    return sha256(line);
}

// The digests of trust JSONs built before, by what they were made of: a
// policy that did not change is not written out (its CA bundle a copy)
// and hashed again at every change.
RecentMemo<std::string> &trust_digests()
{
    static RecentMemo<std::string> digests;
    return digests;
}

// What an upstream's servers JSON is made of, on a line: its tries and
// its servers (upstream_server_lines)
std::string servers_inputs(const Upstream &u)
{
    std::string line = std::to_string(u.tries);
    for (const std::string &server : u.servers) {
        line += '\0';
        line += server;
    }
    return line;
}

// The digests of server lists' JSON built before, likewise: at 1,000
// routes, 5,000 addresses parsed, written and hashed again at each change
RecentMemo<std::string> &servers_digests()
{
    static RecentMemo<std::string> digests;
    return digests;
}

// Each entry of the content, one at a time, as (its ApiSection; name; the
// SHA-256 of its JSON; its JSON, built when asked)
using ApiEntry = std::function<void(int list, const std::string &name, const std::string &digest,
                                    const std::function<std::string()> &json)>;
void each_api_entry(const Plan &plan, const Options &options, const ApiEntry &entry)
{
    if (options.upstream_api == "off") return;
    auto at_hand = [&](int list, const std::string &name, const std::string &json) {
        entry(list, name, sha256(json), [&] { return json; });
    };
    for (const Server &s : plan.servers) {
        if (s.in_table()) at_hand(kApiRoutes, route_entry_key(route_table_name(s), route_table_host(s)), s.table_json);
    }
    RecentMemo<std::string> &servers = servers_digests();
    servers.next_round();
    auto servers_entry = [&](int list, const Upstream &u) {
        auto json = [&u] { return upstream_servers_api_json(u); };
        const std::string inputs = servers_inputs(u);
        const std::string *digest = servers.find(inputs);
        if (digest == nullptr) digest = servers.keep(inputs, sha256(json()));
        entry(list, u.name, *digest, json);
    };
    for (const Upstream &u : plan.upstreams) {
        if (api_replaceable(u)) servers_entry(kApiServers, u);
    }
    for (const Upstream &u : plan.stream_upstreams) {
        if (stream_api_replaceable(u)) servers_entry(kApiStreamServers, u);
    }
    const auto certificates = replaceable_certificates(plan, options);
    const auto policies = trust_replaceable_policies(plan, options);
    if (policies.empty() && certificates.empty()) return;
    // (by path, not searched for each policy)
    std::unordered_map<std::string_view, const std::string *> files;
    for (const OutputFile &f : plan.files) files.emplace(f.path, &f.content);
    for (const auto &[name, c] : certificates) {
        auto crt = files.find(c.certificate), key = files.find(c.key);
        if (crt == files.end() || key == files.end()) {
            throw std::logic_error("the certificate " + c.certificate + " is not among the files written");
        }
        at_hand(kApiCertificates, name, gtls::listener_certificate_json({name, *crt->second, *key->second}));
    }
    if (policies.empty()) return;
    RecentMemo<std::string> &digests = trust_digests();
    digests.next_round();
    for (const auto &[name, p] : policies) {
        auto file = [&](const std::string &path) -> const std::string * {
            auto found = files.find(path);
            return found == files.end() ? nullptr : found->second;
        };
        auto json = [&, p = p] { return trust_api_json(*p, file); };
        const std::string inputs = trust_inputs(*p, file);
        const std::string *digest = digests.find(inputs);
        if (digest == nullptr) digest = digests.keep(inputs, sha256(json()));
        entry(kApiTrust, name, *digest, json);
    }
}

}  // namespace

ApiContent api_content(const Plan &plan, const Options &options)
{
    ApiContent content;
    each_api_entry(plan, options, [&](int list, const std::string &name, const std::string &, const auto &json) {
        content.list(list)[name] = json();
    });
    return content;
}

ApiContent route_entries(const std::vector<const Server *> &servers, const std::vector<Server> &before)
{
    ApiContent content;
    for (const Server &s : before) content.routes[route_entry_key(route_table_name(s), route_table_host(s))] = kRemoved;
    for (const Server *s : servers) content.routes[route_entry_key(route_table_name(*s), route_table_host(*s))] = s->table_json;
    return content;
}

ApiHeld ApiHeld::of(const Plan &plan, const Options &options)
{
    ApiHeld held;
    each_api_entry(plan, options, [&](int list, const std::string &name, const std::string &digest, const auto &) {
        held.list(list)[name] = digest;
    });
    return held;
}

ApiContent api_changes(const Plan &plan, const Options &options, const ApiHeld &held, ApiHeld *now)
{
    ApiContent changed;
    each_api_entry(plan, options, [&](int list, const std::string &name, const std::string &digest, const auto &json) {
        const auto &then = held.list(list);
        auto it = then.find(name);
        if (it == then.end() || it->second != digest) changed.list(list)[name] = json();
        now->list(list)[name] = digest;
    });
    for (const auto &[key, digest] : held.routes) {
        if (!now->routes.count(key)) changed.routes[key] = kRemoved;
    }
    return changed;
}

std::string sync_after_reload(const Plan &plan, const Options &options, const ApiHeld *before, size_t *pushed_count)
{
    if (options.upstream_api == "off") return "";
    std::string list;
    if (std::string failed = api_request_retried(options, "GET", "", &list, true); !failed.empty()) return failed;
    std::set<std::string> pushed, pushed_certificates;
    // what nginx holds of each upstream, by section: the SHA-256 of its
    // servers sorted by address, as upstream_servers_json writes them
    auto digest_of = [](std::vector<gtls::UpstreamServer> servers) {
        std::sort(servers.begin(), servers.end(),
                  [](const gtls::UpstreamServer &a, const gtls::UpstreamServer &b) { return a.address < b.address; });
        return sha256(gtls::upstream_servers_json(servers));
    };
    std::unordered_map<std::string, std::string> held[2];
    std::set<std::string> hosts;  // route table hostnames nginx holds
    try {
        for (const std::string &name : gtls::pushed_policies(list)) pushed.insert(name);
        for (const std::string &name : gtls::pushed_certificates(list)) pushed_certificates.insert(name);
        for (const gtls::ListedRoutes &r : gtls::listed_route_hosts(list)) hosts.insert(route_entry_key(r.table, r.host));
        for (int section : {0, 1}) {
            for (gtls::UpstreamServers &u : gtls::listed_servers(list, section == 0 ? "upstreams" : "stream_upstreams")) {
                held[section][u.upstream] = digest_of(std::move(u.servers));
            }
        }
    } catch (const gtls::ApiError &e) {
        return std::string("the upstream API's list does not read: ") + e.what();
    }
    // every upstream's servers and every policy's CA bundle: not held
    // beside the plan's (a swap frees it; "= std::string()" keeps the capacity)
    std::string().swap(list);
    // Made one entry at a time, only what differs kept: servers nginx
    // already holds as rendered are not pushed again (nor logged again,
    // once per upstream, at every reload); trust pushed before survives a
    // reload that left the configured trust as it was, so the policies the
    // API says were pushed get what is rendered (what they are configured
    // with, which takes them back to it); so do listener certificates
    ApiContent content;
    try {
        each_api_entry(plan, options, [&](int which, const std::string &name, const std::string &digest,
                                          const auto &json) {
            if (which == kApiTrust) {
                if (pushed.count(name)) content.trust[name] = json();
                return;
            }
            if (which == kApiCertificates) {
                if (pushed_certificates.count(name)) content.certificates[name] = json();
                return;
            }
            if (which == kApiRoutes) {
                // nginx keeps each table as last pushed: what it holds as
                // `before` says is left alone
                const bool listed = hosts.erase(name) > 0;
                if (listed && before != nullptr) {
                    auto then = before->routes.find(name);
                    if (then != before->routes.end() && then->second == digest) return;
                }
                content.routes[name] = json();
                return;
            }
            std::string servers = json();
            auto it = held[which].find(name);
            if (it != held[which].end() && it->second == digest_of(gtls::parse_server_list(servers))) return;
            content.list(which)[name] = std::move(servers);
        });
    } catch (const gtls::ApiError &e) {
        return std::string("a rendered server list does not read: ") + e.what();
    }
    for (const std::vector<Upstream> *upstreams : {&plan.upstreams, &plan.stream_upstreams}) {
        for (const Upstream &u : *upstreams) {
            // one no longer replaceable (its copies now differ) goes back all the same
            if (u.tls() && u.unusable.empty() && pushed.count(u.policy->name) && !content.trust.count(u.policy->name)
                && (!u.policy->ca.empty() || !u.policy->pins.empty())) {
                content.trust[u.policy->name] = policy_trust_api_json(*u.policy, plan);
            }
        }
    }
    for (const std::string &gone : hosts) content.routes[gone] = kRemoved;  // the plan has it no more
    if (pushed_count != nullptr) {
        *pushed_count = 0;
        for (int i = 0; i < kApiSections; i++) *pushed_count += content.list(i).size();
    }
    return content.empty() ? "" : api_request_retried(options, "PUT", api_body(content), nullptr, true);
}

std::string api_body(const ApiContent &content)
{
    auto section = [](const char *key, const char *field, const std::map<std::string, std::string> &entries) {
        std::string body;
        for (const auto &[name, json] : entries) {
            body += std::string(body.empty() ? "" : ",") + gtls::json_string(name) + ":"
                    + (field != nullptr ? "{\"" + std::string(field) + "\":" + json + "}" : json);
        }
        return "\"" + std::string(key) + "\":{" + body + "}";
    };
    std::string body;
    if (!content.servers.empty()) body += section("upstreams", "servers", content.servers);
    if (!content.stream_servers.empty()) {
        body += (body.empty() ? "" : ",") + section("stream_upstreams", "servers", content.stream_servers);
    }
    if (!content.trust.empty()) body += (body.empty() ? "" : ",") + section("policies", nullptr, content.trust);
    if (!content.routes.empty()) {
        // keys in order: a table's hostnames are next to each other
        std::string tables, table;
        for (const auto &[key, json] : content.routes) {
            const size_t space = key.find(' ');
            const std::string this_table = key.substr(0, space), host = key.substr(space + 1);
            if (tables.empty() || this_table != table) {
                tables += std::string(tables.empty() ? "" : "},") + gtls::json_string(this_table) + ":{";
                table = this_table;
            } else {
                tables += ",";
            }
            tables += gtls::json_string(host) + ":" + json;
        }
        body += (body.empty() ? "" : ",") + std::string("\"routes\":{") + tables + "}}";
    }
    if (!content.certificates.empty()) {
        body += (body.empty() ? "" : ",") + section("certificates", nullptr, content.certificates);
    }
    return "{" + body + "}";
}

}  // namespace g2n
