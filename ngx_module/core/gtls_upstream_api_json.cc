// The JSON the upstream API writes: what it keeps across reloads (a
// server list, a policy's trust, a listener's certificate) and what it
// answers (a list, a PUT taken, an error). Read back by
// gtls_upstream_api.cc's reader.
#include "gtls_upstream_api.h"

namespace gtls {

namespace {

std::string key_pair_json(std::string_view certificate, std::string_view key)
{
    return "{\"certificate\":" + json_string(certificate) + ",\"key\":" + json_string(key) + "}";
}

}  // namespace

std::string listener_certificate_json(const ListenerCertificate &certificate)
{
    return key_pair_json(certificate.certificate, certificate.key);
}

std::string policy_trust_json(const PolicyTrust &trust)
{
    auto list = [](const std::vector<std::string> &items) {
        std::string out = "[";
        for (size_t i = 0; i < items.size(); i++) out += (i ? "," : "") + json_string(items[i]);
        return out + "]";
    };
    std::string out = trust.ca.empty() ? "{\"pins\":" : "{\"ca\":" + json_string(trust.ca) + ",\"pins\":";
    out += list(trust.pins);
    if (trust.hostname) out += ",\"hostname\":" + json_string(*trust.hostname);
    if (trust.subject_alt_names) out += ",\"subject_alt_names\":" + list(*trust.subject_alt_names);
    if (trust.client_certificate) {
        out += ",\"client_certificate\":"
               + key_pair_json(trust.client_certificate->certificate, trust.client_certificate->key);
    }
    return out + "}";
}

std::string upstream_servers_json(const std::vector<UpstreamServer> &servers)
{
    std::string out = "[";
    for (const UpstreamServer &s : servers) {
        if (out.size() > 1) out += ",";
        out += "{\"address\":" + json_string(s.address) + ",\"weight\":" + std::to_string(s.weight)
               + ",\"max_conns\":" + std::to_string(s.max_conns) + ",\"max_fails\":" + std::to_string(s.max_fails)
               + ",\"fail_timeout\":" + std::to_string(s.fail_timeout) + ",\"down\":" + (s.down ? "true" : "false")
               + "}";
    }
    return out + "]";
}

namespace {

// {NAME:{"generation":N,"source":...,"servers":[...]},...}
std::string listed_upstreams_json(const std::vector<ListedUpstream> &upstreams)
{
    std::string out = "{";
    for (const ListedUpstream &u : upstreams) {
        out += (out.size() > 1 ? "," : "") + json_string(u.name) + ":{\"generation\":" + std::to_string(u.generation)
               + ",\"source\":" + (u.pushed ? "\"api\"" : "\"configuration\"")
               + ",\"servers\":" + upstream_servers_json(u.servers) + "}";
    }
    return out + "}";
}

// {NAME:{"servers":N},...}, or {NAME:{"generation":N},...}
template <typename Count>
std::string counts_json(const std::vector<std::pair<std::string, Count>> &counts, const char *field)
{
    std::string out = "{";
    for (const auto &[name, count] : counts) {
        out += (out.size() > 1 ? "," : "") + json_string(name) + ":{\"" + field + "\":" + std::to_string(count) + "}";
    }
    return out + "}";
}

// {TABLE:{HOST:{"generation":N,"matches":M},...},...}
std::string routes_json(const std::vector<ListedRoutes> &routes)
{
    std::string out = "{";
    for (size_t i = 0; i < routes.size(); i++) {
        const ListedRoutes &r = routes[i];
        if (i == 0 || routes[i - 1].table != r.table) {
            out += (i ? "}," : "") + json_string(r.table) + ":{";
        } else {
            out += ",";
        }
        if (r.host.empty()) continue;
        out += json_string(r.host) + ":{\"generation\":" + std::to_string(r.generation)
               + (r.removed ? ",\"removed\":true}" : ",\"matches\":" + std::to_string(r.matches) + "}");
    }
    return out + (routes.empty() ? "}" : "}}");
}

}  // namespace

std::string api_list_json(const ApiList &list)
{
    std::string out = "{\"upstreams\":" + listed_upstreams_json(list.upstreams);
    if (list.has_stream) {
        out += ",\"stream_upstreams\":" + listed_upstreams_json(list.stream_upstreams);
    }
    out += ",\"policies\":{";
    for (size_t i = 0; i < list.policies.size(); i++) {
        const ListedPolicy &p = list.policies[i];
        std::string pins, sans;
        for (const std::string &pin : p.pins) pins += (pins.empty() ? "" : ",") + json_string(pin);
        for (const std::string &san : p.subject_alt_names) sans += (sans.empty() ? "" : ",") + json_string(san);
        out += (i ? "," : "") + json_string(p.name) + ":{\"generation\":" + std::to_string(p.generation)
               + ",\"source\":" + (p.pushed ? "\"api\"" : "\"configuration\"") + ",\"ca\":" + json_string(p.ca)
               + ",\"pins\":[" + pins + "],\"hostname\":" + json_string(p.hostname) + ",\"subject_alt_names\":["
               + sans + "]" + (p.client_certificate.empty() ? "" : ",\"client_certificate\":" + json_string(p.client_certificate))
               + "}";
    }
    out += "}";
    if (!list.routes.empty()) out += ",\"routes\":" + routes_json(list.routes);
    if (!list.certificates.empty()) {
        out += ",\"certificates\":{";
        for (size_t i = 0; i < list.certificates.size(); i++) {
            const ListedCertificate &c = list.certificates[i];
            out += (i ? "," : "") + json_string(c.name) + ":{\"generation\":" + std::to_string(c.generation)
                   + ",\"source\":" + (c.pushed ? "\"api\"" : "\"configuration\"") + ",\"sha256\":"
                   + json_string(c.sha256) + "}";
        }
        out += "}";
    }
    return out + "}\n";
}

std::string api_updated_json(const ApiUpdated &updated)
{
    std::string out = "{\"upstreams\":" + counts_json(updated.upstreams, "servers");
    if (updated.has_stream) {
        out += ",\"stream_upstreams\":" + counts_json(updated.stream_upstreams, "servers");
    }
    out += ",\"policies\":" + counts_json(updated.policies, "generation");
    if (!updated.routes.empty()) out += ",\"routes\":" + routes_json(updated.routes);
    if (!updated.certificates.empty()) out += ",\"certificates\":" + counts_json(updated.certificates, "generation");
    return out + "}\n";
}

std::string api_error_json(int status, std::string_view text)
{
    return "{\"error\":{\"status\":" + std::to_string(status) + ",\"text\":" + json_string(text) + "}}\n";
}

}  // namespace gtls
