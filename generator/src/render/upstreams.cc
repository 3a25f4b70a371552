// upstream{} blocks: servers, zones of what the upstream API replaces, and
// the module's policy directives; the split_clients body of weighted
// backends, which http{} and stream{} share.
#include "render/render.h"

#include <string>

#include "plan/upstreams.h"

namespace g2n {

constexpr char kNoEndpoints[] = "no ready endpoints (with --resolver, the cluster DNS name is used)";

std::string percent(long part, long total)
{
    // hundredths, rounded down, so that the shares never add up past 100%;
    // at least 0.01%, as nginx refuses 0.00% (a weight of 1 beside 1,000,000)
    long hundredths = std::max(1L, part * 10000 / total);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%ld.%02ld%%", hundredths / 100, hundredths % 100);
    return buf;
}

nginx::Fragment split_clients_body(const std::vector<WeightedUpstream> &all_backends,
                                   const std::function<nginx::Token(const WeightedUpstream &)> &target)
{
    // a weight of 0 gets no share (nginx has no 0% entry)
    std::vector<WeightedUpstream> weighted;
    for (const WeightedUpstream &b : all_backends) {
        if (b.weight > 0) weighted.push_back(b);
    }
    const std::vector<WeightedUpstream> &backends = weighted.empty() ? all_backends : weighted;
    long total = 0;
    for (const WeightedUpstream &b : backends) total += b.weight;
    if (total == 0) total = 1;
    return nginx::Writer::capture(1, [&](nginx::Writer &w) {
        for (size_t i = 0; i < backends.size(); i++) {
            const WeightedUpstream &b = backends[i];
            if (i + 1 == backends.size()) {
                w.entry(nginx::Token::value("*"), {target(b)});
            } else {
                w.entry(nginx::Token::value(percent(b.weight, total)), {target(b)});
            }
        }
    });
}


namespace {

// The module's directives for one prefix (proxy_ or grpc_), the same names
// for both written out, so that every directive name is a literal.
struct PolicyDirectives {
    nginx::Word mode, ca, san, pin, name, hostname, certificate;
};
const PolicyDirectives kProxyPolicy{"proxy_ssl_verify_mode", "proxy_ssl_verify_ca", "proxy_ssl_verify_san",
                                    "proxy_ssl_verify_pin", "proxy_ssl_policy_name", "proxy_ssl_policy_hostname",
                                    "proxy_ssl_policy_certificate"};
const PolicyDirectives kGrpcPolicy{"grpc_ssl_verify_mode", "grpc_ssl_verify_ca", "grpc_ssl_verify_san",
                                   "grpc_ssl_verify_pin", "grpc_ssl_policy_name", "grpc_ssl_policy_hostname",
                                   "grpc_ssl_policy_certificate"};

void render_policy(nginx::Writer &w, const PolicyDirectives &d, const UpstreamPolicy &p, Skeleton skeleton)
{
    w.directive(d.mode, {nginx::Token::value(gtls::mode_name(p.mode))});
    if (skeleton.trust) {
        w.comment("trust replaceable at run time");
    } else if (!p.ca.empty()) {
        w.directive(d.ca, {nginx::Token::value(p.ca)});
    }
    if (!skeleton.names && !p.sans.empty()) w.directive(d.san, values(p.sans));
    if (!skeleton.trust && !p.pins.empty()) w.directive(d.pin, values(p.pins));
    w.directive(d.name, {nginx::Token::value(p.name)});
    if (skeleton.names) {
        w.comment("names replaceable at run time");
    } else {
        w.directive(d.hostname, {nginx::Token::value(p.hostname)});
    }
    if (!p.client_certificate.empty()) {
        w.directive(d.certificate, {nginx::Token::value(p.client_certificate), nginx::Token::value(p.client_key)});
    }
}

}  // namespace

std::map<std::string, std::string> render_servers_zones(nginx::Writer &w, const std::string &prefix,
                                                        const std::vector<const Upstream *> &replaceable)
{
    std::map<std::string, size_t> lines_by_tenant;
    for (const Upstream *u : replaceable) lines_by_tenant[u->tenant] += zone_server_lines(*u);
    std::map<std::string, std::string> zone_by_upstream;
    for (const Upstream *u : replaceable) zone_by_upstream[u->name] = prefix + "_" + u->tenant;
    for (const auto &[tenant, lines] : lines_by_tenant) {
        const std::string zone = prefix + "_" + tenant;
        w.open("upstream", {nginx::Name(zone)});
        if (tenant == kSpareTenant) {
            w.comment("the zone of the spare upstreams");
        } else {
            w.comment("the zone of the replaceable upstreams of namespace", {nginx::Token::value(tenant)});
        }
        w.directive("zone", {nginx::Name(zone), nginx::Token::value(std::to_string(servers_zone_kilobytes(lines)) + "k")});
        w.directive("server", {"127.0.0.1:1", "down"});
        w.close();
        w.blank();
    }
    return zone_by_upstream;
}

std::vector<const Upstream *> render_upstreams(nginx::Writer &w, const std::vector<Upstream> &upstreams,
                                               bool (*replaceable)(const Upstream &), const char *zone_prefix,
                                               const std::map<std::string, const UpstreamPolicy *> &trusts,
                                               const Options &o)
{
    const bool api = o.upstream_api != "off";
    std::vector<const Upstream *> zoned;
    for (const Upstream &u : upstreams) {
        if (api && replaceable(u)) zoned.push_back(&u);
    }
    const std::map<std::string, std::string> zones = render_servers_zones(w, zone_prefix, zoned);
    for (const Upstream &u : upstreams) {
        const auto zone = zones.find(u.name);
        const bool dynamic = zone != zones.end();
        Skeleton skeleton;
        skeleton.servers = dynamic && o.endpoint_skeleton;
        skeleton.trust = o.endpoint_skeleton && u.tls() && trusts.count(u.policy->name) > 0;
        // (a spare is the same skeleton whichever backend it holds)
        skeleton.names = skeleton.trust && u.policy->names_pushed;
        render_upstream(w, u, dynamic ? zone->second.c_str() : nullptr, skeleton);
    }
    return zoned;
}

void render_upstream(nginx::Writer &w, const Upstream &u, const char *zone, Skeleton skeleton)
{
    w.open("upstream", {nginx::Name(u.name)});
    w.comment("for", {nginx::Token::value(u.comment)});
    if (!u.unusable.empty() || (u.servers.empty() && zone == nullptr)) {
        // fail closed: nothing is ever sent, the route answers 502
        w.comment("unusable:", {nginx::Token::value(u.unusable.empty() ? std::string(kNoEndpoints) : u.unusable)});
        w.directive("server", {"127.0.0.1:1", "down"});
        w.close();
        w.blank();
        return;
    }
    if (zone != nullptr) {
        w.directive("zone", {nginx::Name(zone)});
    }
    if (skeleton.servers) {
        w.comment("servers replaceable at run time");
    } else if (u.servers.empty()) {
        // nginx wants a server in every upstream{}; the API is given none
        // (502 until endpoints are pushed), and the skeleton is the same
        // as with endpoints, so scaling to and from zero reloads nothing
        if (u.tenant == kSpareTenant) {
            w.comment("no server until the upstream API gives it some");
        } else {
            w.comment(kNoEndpoints);
        }
        w.directive("server", {"127.0.0.1:1", "down"});
    } else {
        for (const ServerLine &line : upstream_server_lines(u)) {
            if (line.max_fails_off) {
                w.directive("server", {nginx::Token::value(line.address), "max_fails=0"});
            } else {
                w.directive("server", {nginx::Token::value(line.address)});
            }
        }
    }
    // the same policy for proxy_pass and for grpc_pass, as the upstream is used
    if (u.tls() && u.for_http) render_policy(w, kProxyPolicy, *u.policy, skeleton);
    if (u.tls() && u.for_grpc) render_policy(w, kGrpcPolicy, *u.policy, skeleton);
    w.close();
    w.blank();
}


}  // namespace g2n
