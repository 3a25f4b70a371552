#include "apply/upstream_api.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "digest.h"
#include "gtls_upstream_api.h"
#include "plan/upstreams.h"

namespace g2n {

namespace {

// METHOD (PUT with `body`, GET) to gateway_tls_upstream_api at `listen`;
// "" on 200 (and *reply its body), else why not.
std::string api_request(const std::string &listen, const std::string &token, const char *method, const std::string &body,
                        std::string *answer)
{
    gtls::UpstreamServer api;
    try {
        api = gtls::parse_server_address(listen, "--upstream-api");
    } catch (const gtls::ApiError &e) {
        return e.what();
    }
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (api.family == 6) {
        auto *v6 = reinterpret_cast<sockaddr_in6 *>(&ss);
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(api.port);
        std::memcpy(&v6->sin6_addr, api.ip.data(), 16);
        len = sizeof *v6;
    } else {
        auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
        v4->sin_family = AF_INET;
        v4->sin_port = htons(api.port);
        std::memcpy(&v4->sin_addr, api.ip.data(), 4);
        len = sizeof *v4;
    }
    int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
        ::close(fd);
        return "cannot connect to " + listen + ": " + std::strerror(errno);
    }
    if (fd < 0) return std::string("socket: ") + std::strerror(errno);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const std::string request = std::string(method) + " /upstreams HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                                "Authorization: Bearer " + token + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    for (size_t sent = 0; sent < request.size();) {
        ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            ::close(fd);
            return std::string("cannot send to the upstream API: ") + std::strerror(errno);
        }
        sent += static_cast<size_t>(n);
    }
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
    ::close(fd);
    const size_t body_at = reply.find("\r\n\r\n");
    if (reply.rfind("HTTP/1.1 200 ", 0) == 0) {
        if (answer != nullptr && body_at != std::string::npos) *answer = reply.substr(body_at + 4);
        return "";
    }
    return "the upstream API answered " + reply.substr(0, reply.find("\r\n"))
           + (body_at != std::string::npos ? ": " + reply.substr(body_at + 4) : "");
}

}  // namespace

namespace {

// the trust JSON of `p`, its CA bundle's PEM found by `file` (path -> content)
std::string trust_api_json(const UpstreamPolicy &p, const std::function<const std::string *(const std::string &)> &file)
{
    gtls::PolicyTrust trust;
    trust.policy = p.name;
    trust.pins = p.pins;
    if (p.ca == "system") {
        trust.ca = "system";
    } else if (!p.ca.empty()) {
        const std::string *content = file(p.ca);
        if (content == nullptr) throw std::logic_error("the CA bundle " + p.ca + " is not among the files written");
        trust.ca = *content;
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
// reload replaced refuses (503) or nothing listens yet
std::string api_request_retried(const Options &options, const char *method, const std::string &body,
                                std::string *answer)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
        std::string failed = api_request(options.upstream_api, options.upstream_api_token, method, body, answer);
        if (failed.empty() || std::chrono::steady_clock::now() > deadline
            || (failed.find(" 503 ") == std::string::npos && failed.rfind("cannot connect", 0) != 0)) {
            return failed;
        }
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
    return changed;
}

ApiHeld ApiHeld::of(const ApiContent &content)
{
    ApiHeld held;
    held.hold(content);
    return held;
}

void ApiHeld::hold(const ApiContent &pushed)
{
    auto digests = [](const std::map<std::string, std::string> &from, std::map<std::string, std::string> *to) {
        for (const auto &[name, json] : from) (*to)[name] = sha256(json);
    };
    digests(pushed.servers, &servers);
    digests(pushed.stream_servers, &stream_servers);
    digests(pushed.trust, &trust);
}

namespace {

// Each entry of the content, one at a time, as (list: 0 servers, 1
// stream_servers, 2 trust; name; JSON)
void each_api_entry(const Plan &plan, const Options &options,
                    const std::function<void(int list, const std::string &name, std::string json)> &entry)
{
    if (options.upstream_api == "off") return;
    for (const Upstream &u : plan.upstreams) {
        if (api_replaceable(u)) entry(0, u.name, upstream_servers_api_json(u));
    }
    for (const Upstream &u : plan.stream_upstreams) {
        if (stream_api_replaceable(u)) entry(1, u.name, upstream_servers_api_json(u));
    }
    const auto policies = trust_replaceable_policies(plan, options);
    if (policies.empty()) return;
    std::unordered_map<std::string_view, const std::string *> files;  // bundles by path, not searched for each policy
    for (const OutputFile &f : plan.files) files.emplace(f.path, &f.content);
    for (const auto &[name, p] : policies) {
        entry(2, name, trust_api_json(*p, [&](const std::string &path) {
                  auto file = files.find(path);
                  return file == files.end() ? nullptr : file->second;
              }));
    }
}

}  // namespace

ApiContent api_content(const Plan &plan, const Options &options)
{
    ApiContent content;
    each_api_entry(plan, options, [&](int list, const std::string &name, std::string json) {
        content.list(list)[name] = std::move(json);
    });
    return content;
}

ApiHeld ApiHeld::of(const Plan &plan, const Options &options)
{
    ApiHeld held;
    each_api_entry(plan, options, [&](int list, const std::string &name, std::string json) {
        held.list(list)[name] = sha256(json);
    });
    return held;
}

ApiContent api_changes(const Plan &plan, const Options &options, const ApiHeld &held, ApiHeld *now)
{
    ApiContent changed;
    each_api_entry(plan, options, [&](int list, const std::string &name, std::string json) {
        std::string digest = sha256(json);
        const auto &then = held.list(list);
        auto it = then.find(name);
        if (it == then.end() || it->second != digest) changed.list(list)[name] = std::move(json);
        now->list(list)[name] = std::move(digest);
    });
    return changed;
}

std::string sync_after_reload(const Plan &plan, const Options &options, size_t *pushed_count)
{
    if (options.upstream_api == "off") return "";
    std::string list;
    if (std::string failed = api_request_retried(options, "GET", "", &list); !failed.empty()) return failed;
    std::set<std::string> pushed;
    // what nginx holds of each upstream, by section: the SHA-256 of its
    // servers sorted by address, as upstream_servers_json writes them
    auto digest_of = [](std::vector<gtls::UpstreamServer> servers) {
        std::sort(servers.begin(), servers.end(),
                  [](const gtls::UpstreamServer &a, const gtls::UpstreamServer &b) { return a.address < b.address; });
        return sha256(gtls::upstream_servers_json(servers));
    };
    std::unordered_map<std::string, std::string> held[2];
    try {
        for (const std::string &name : gtls::pushed_policies(list)) pushed.insert(name);
        for (int section : {0, 1}) {
            for (gtls::UpstreamServers &u : gtls::listed_servers(list, section == 0 ? "upstreams" : "stream_upstreams")) {
                held[section][u.upstream] = digest_of(std::move(u.servers));
            }
        }
    } catch (const gtls::ApiError &e) {
        return std::string("the upstream API's list does not read: ") + e.what();
    }
    list = std::string();  // every upstream's servers and every policy's CA bundle: not held beside the plan's
    // Made one entry at a time, only what differs kept: servers nginx
    // already holds as rendered are not pushed again (nor logged again,
    // once per upstream, at every reload); trust pushed before survives a
    // reload that left the configured trust as it was, so the policies the
    // API says were pushed get what is rendered (what they are configured
    // with, which takes them back to it)
    ApiContent content;
    try {
        each_api_entry(plan, options, [&](int which, const std::string &name, std::string json) {
            if (which == 2) {
                if (pushed.count(name)) content.trust[name] = std::move(json);
                return;
            }
            auto it = held[which].find(name);
            if (it != held[which].end() && it->second == digest_of(gtls::parse_server_list(json))) return;
            content.list(which)[name] = std::move(json);
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
    if (pushed_count != nullptr) {
        *pushed_count = content.servers.size() + content.stream_servers.size() + content.trust.size();
    }
    return content.empty() ? "" : push_to_api(options, api_body(content));
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
    return "{" + body + "}";
}

}  // namespace g2n
