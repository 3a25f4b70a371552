// stream.conf: TLS listeners. Passthrough reads the SNI with ssl_preread and
// forwards the client's bytes; Terminate completes the handshake and
// forwards the plaintext, re-encrypted through the module when the backend
// has a BackendTLSPolicy.
#include <map>
#include <set>
#include <sstream>

#include "render.h"

namespace g2n {

namespace {

// Connections nobody may receive: an SNI no route claims, an invalid
// backendRef's share. A server that is always down closes them.
const char *const kRefused = "tls_route_refused";

struct StreamSplits {
    std::ostringstream text;
    std::map<std::string, std::string> var_by_body;

    // the upstream for one route's backends, or a split_clients variable
    std::string target(const std::vector<WeightedUpstream> &backends)
    {
        if (backends.empty()) return kRefused;
        if (backends.size() == 1) return backends[0].upstream.empty() ? kRefused : backends[0].upstream;
        std::string body = split_clients_body(backends, [](const WeightedUpstream &b) {
            return b.upstream.empty() ? std::string(kRefused) : b.upstream;
        });
        auto [it, added] = var_by_body.emplace(body, "$tls_split_" + std::to_string(var_by_body.size() + 1));
        if (added) {
            text << "split_clients \"${remote_addr}${remote_port}${msec}\" " << it->second << " {\n"
                 << body << "}\n\n";
        }
        return it->second;
    }
};

}  // namespace

std::string render_stream_conf(const Plan &plan)
{
    std::ostringstream out;
    out << kHeader << "\n";
    if (plan.stream_servers.empty()) {
        out << "# no TLS listeners\n";
        return out.str();
    }
    bool any_allowed = false;
    for (const StreamServer &s : plan.stream_servers) any_allowed |= s.insecure_allowed;
    out << "# Backend TLS behind Terminate listeners is verified by\n"
           "# ngx_stream_gateway_tls_module; insecure modes only where a Gateway allows\n"
           "# them (GEP-4152).\n";
    out << "proxy_ssl_verify_insecure " << (any_allowed ? "allow" : "deny") << ";\n\n";

    for (const Upstream &u : plan.stream_upstreams) {
        render_upstream(out, u);
    }
    out << "upstream " << kRefused << " {\n";
    out << "    # no route for this SNI, or an invalid backend: the connection is closed\n";
    out << "    server 127.0.0.1:1 down;\n";
    out << "}\n\n";

    StreamSplits splits;
    std::ostringstream maps, servers;
    int index = 0;
    for (const StreamServer &s : plan.stream_servers) {
        std::string variable = "$tls_route_" + std::to_string(++index);
        maps << "map " << (s.terminate ? "$ssl_server_name" : "$ssl_preread_server_name") << " " << variable
             << " {\n";
        maps << "    hostnames;\n";
        std::string fallback = kRefused;
        for (const StreamRoute &r : s.routes) {
            std::string target = splits.target(r.backends);
            if (r.hostname.empty()) {
                fallback = target;  // a route for any name: clients without SNI too
                continue;
            }
            maps << "    " << r.hostname << " " << target << ";  # TLSRoute " << r.source << "\n";
        }
        maps << "    default " << fallback << ";\n";
        maps << "}\n\n";

        servers << "server {\n";
        servers << "    listen " << s.listen << (s.terminate ? " ssl" : "") << ";\n";
        if (s.terminate) {
            servers << "    ssl_certificate " << s.certificate << ";\n";
            servers << "    ssl_certificate_key " << s.certificate_key << ";\n";
            render_client_validation(servers, s.client);
        } else {
            servers << "    ssl_preread on;\n";
        }
        servers << "    proxy_pass " << variable << ";\n";
        servers << "    proxy_ssl_verify_insecure " << (s.insecure_allowed ? "allow" : "deny") << ";\n";
        if (s.proxy_ssl) {
            servers << "    proxy_ssl on;\n";
            servers << "    proxy_ssl_server_name on;\n";
            servers << "    proxy_ssl_name $upstream_ssl_policy_hostname;\n";
            render_backend_client(servers, s.backend_client, {"proxy"});
        }
        servers << "}\n\n";
    }
    out << splits.text.str() << maps.str() << servers.str();
    return out.str();
}

}  // namespace g2n
