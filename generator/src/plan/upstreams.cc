#include "plan/upstreams.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "gtls_upstream_api.h"

namespace g2n {

PassModules pass_modules(const Location &l)
{
    if (l.grpc) return {false, true};
    PassModules m;
    auto add = [&](const WeightedUpstream &b) {
        if (b.upstream.empty()) return;  // a share answered 500 by the location itself
        (b.grpc ? m.grpc : m.proxy) = true;
    };
    for (const WeightedUpstream &b : l.backends) add(b);
    for (const ConditionalTarget &t : l.conditional) {
        for (const WeightedUpstream &b : t.backends) add(b);
    }
    if (!m.grpc) m.proxy = true;
    return m;
}

std::vector<ServerLine> upstream_server_lines(const Upstream &u)
{
    std::vector<ServerLine> lines;
    // enough peers for every try of a retried rule, each server as often
    const size_t copies = u.servers.empty() ? 1 : (u.tries + u.servers.size() - 1) / u.servers.size();
    for (size_t i = 0; i < copies; i++) {
        for (const std::string &server : u.servers) lines.push_back({server, u.tries > 1});
    }
    return lines;
}

size_t upstream_server_line_count(const Upstream &u)
{
    if (u.servers.empty()) return 0;
    const size_t copies = (u.tries + u.servers.size() - 1) / u.servers.size();
    return copies * u.servers.size();
}

size_t zone_server_lines(const Upstream &u)
{
    return u.tenant == kSpareTenant ? kSpareServerLines : upstream_server_line_count(u);
}

std::vector<Upstream> spare_upstreams(int count)
{
    std::vector<Upstream> spares;
    for (const bool tls : {true, false}) {
        for (int i = 0; i < count; i++) {
            Upstream u;
            const std::string n = std::to_string(i);
            u.name = std::string("gateway2nginx_spare_") + (tls ? "tls_" : "plain_") + n;
            u.comment = std::string("a spare that takes ") + (tls ? "TLS" : "plaintext")
                        + ": the upstream API makes it a backend";
            u.tenant = kSpareTenant;
            u.for_http = u.for_grpc = true;
            if (tls) {
                auto policy = std::make_shared<UpstreamPolicy>();
                // '|' is in no BackendTLSPolicy's namespace/name
                policy->name = "spare|" + n;
                policy->mode = gtls::Mode::Strict;
                // a pin no key hashes to: until the API gives it trust, a
                // spare accepts no backend (it has no server either)
                policy->pins = {"sha256-spki:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="};
                policy->hostname = "spare-" + n + ".invalid";
                u.policy = std::move(policy);
            }
            spares.push_back(std::move(u));
        }
    }
    return spares;
}

namespace {

// An upstream that can be reached, its servers IP literals
bool api_can_replace(const Upstream &u)
{
    if (!u.unusable.empty()) return false;
    return std::all_of(u.servers.begin(), u.servers.end(), [](const std::string &server) {
        return gtls::is_server_address(server);
    });
}

}  // namespace

bool api_replaceable(const Upstream &u)
{
    return (u.for_http || u.for_grpc) && api_can_replace(u);
}

bool stream_api_replaceable(const Upstream &u)
{
    return api_can_replace(u);
}

bool trust_replaceable(const UpstreamPolicy &p)
{
    return p.mode != gtls::Mode::Skip && !(p.ca.empty() && p.pins.empty());
}

std::map<std::string, const UpstreamPolicy *> trust_replaceable_policies(const Plan &plan, const Options &o)
{
    std::map<std::string, const UpstreamPolicy *> policies;
    if (o.upstream_api == "off") return policies;
    std::set<std::string> refused;
    // the API reaches the policies of a name in http{} and in stream{} alike
    for (const std::vector<Upstream> *upstreams : {&plan.upstreams, &plan.stream_upstreams}) {
        for (const Upstream &u : *upstreams) {
            if (!u.tls() || !u.unusable.empty() || !(u.for_http || u.for_grpc)) continue;  // where its policy is rendered
            const UpstreamPolicy &p = *u.policy;
            if (!trust_replaceable(p)) {
                refused.insert(p.name);
                continue;
            }
            auto [it, added] = policies.emplace(p.name, &p);
            if (!added && (it->second->ca != p.ca || it->second->pins != p.pins)) refused.insert(p.name);
        }
    }
    for (const std::string &name : refused) policies.erase(name);
    return policies;
}

std::map<std::string, ReplaceableCertificate> replaceable_certificates(const Plan &plan, const Options &o)
{
    std::map<std::string, ReplaceableCertificate> certificates;
    if (o.upstream_api == "off") return certificates;
    // what servers present, by file, and on which side
    struct Presented {
        std::string key;
        bool http = false, stream = false;
    };
    std::map<std::string, Presented> presented;
    std::set<std::string> backend_clients;
    auto present = [&](const std::string &certificate, const std::string &key, bool stream) {
        if (certificate.empty()) return;
        Presented &p = presented[certificate];
        p.key = key;
        (stream ? p.stream : p.http) = true;
    };
    for (const StreamServer &s : plan.stream_servers) {
        backend_clients.insert(s.backend_client.certificate);
        if (s.protocol != StreamProtocol::TLS || !s.terminate) continue;
        present(s.certificate, s.certificate_key, true);
        for (const StreamRoute &r : s.routes) present(r.certificate, r.certificate_key, true);
    }
    for (const Server &s : plan.servers) {
        backend_clients.insert(s.backend_client.certificate);
        if (s.ssl) present(s.certificate, s.certificate_key, false);
    }
    for (const auto &[certificate, p] : presented) {
        // a name is the http module's or the stream module's, never both
        if ((p.http && p.stream) || backend_clients.count(certificate)) continue;
        std::string name = std::filesystem::path(certificate).stem().string();
        certificates.emplace(std::move(name), ReplaceableCertificate{certificate, p.key});
    }
    return certificates;
}

void plan_pushed_names(Plan *plan, const Options &o)
{
    std::set<std::string> pushed;
    for (const auto &[name, policy] : trust_replaceable_policies(*plan, o)) {
        if (!policy->hostname.empty()) pushed.insert(name);
    }
    // (a stream{} server sends the name proxy_ssl_name gives it)
    for (const Upstream &u : plan->stream_upstreams) {
        if (u.tls()) pushed.erase(u.policy->name);
    }
    std::map<const UpstreamPolicy *, std::shared_ptr<const UpstreamPolicy>> marked;
    for (Upstream &u : plan->upstreams) {
        if (!u.tls() || !pushed.count(u.policy->name)) continue;
        std::shared_ptr<const UpstreamPolicy> &copy = marked[u.policy.get()];
        if (copy == nullptr) {
            auto policy = std::make_shared<UpstreamPolicy>(*u.policy);
            policy->names_pushed = true;
            copy = std::move(policy);
        }
        u.policy = copy;
    }
}

size_t power_of_two_at_least(size_t n, size_t least)
{
    size_t p = least;
    while (p < n) p *= 2;
    return p;
}

size_t servers_zone_kilobytes(size_t server_lines)
{
    // nginx copies each configured server into the zone (about 800 bytes
    // with nginx 1.22), and a push adds a generation of its own (about 250
    // bytes a server) while the one it replaces drains: 2 KB a server.
    // Rounded up to a power of two, so that endpoints come and go without
    // changing the configuration until their number doubles or halves.
    return power_of_two_at_least(64 + 2 * server_lines, 128);
}

UpstreamApiRoom upstream_api_room(size_t upstream_count, size_t server_lines, size_t trusts, size_t certificates)
{
    // the last list pushed per upstream, and room for the trust of up to
    // 256 policies pushed at once (not their bundles' sizes: a changed
    // bundle must not change the skeleton), and for as many listener key
    // pairs; a zone full of them answers 507, and gateway2nginx reloads
    // instead
    const size_t trust_room = 16 * std::min<size_t>(trusts, 256) + 16 * std::min<size_t>(certificates, 256);
    UpstreamApiRoom room;
    // and the lists themselves, about 120 bytes a server, twice while one
    // replaces another, rounded as the servers zones are
    const size_t list_room = power_of_two_at_least(server_lines / 4, 64);
    room.state_zone_kilobytes = 1024 + 4 * upstream_count + trust_room + list_room;
    // a body as large as the pushes gateway2nginx makes, twice over (a
    // server is at most 128 bytes of JSON, a name as much; 64 KB of trust
    // a policy): larger ones are refused (413) before the worker reads
    // them. Rounded as the zones are; a trust push over its allowance is
    // refused, and gateway2nginx reloads instead
    room.body_kilobytes = power_of_two_at_least(64 + (2 * 128 * (server_lines + upstream_count)) / 1024
                                                    + 64 * std::min<size_t>(trusts, 256)
                                                    + 16 * std::min<size_t>(certificates, 256),
                                                1024);
    return room;
}

}  // namespace g2n
