// stream.conf: TLS, TCP and UDP listeners. Passthrough reads the SNI with
// ssl_preread and forwards the client's bytes; Terminate completes the
// handshake and forwards the plaintext, re-encrypted through the module
// when the backend has a BackendTLSPolicy; TCP and UDP forward every
// connection's bytes (datagram session's datagrams) to their route's
// backends.
#include <map>
#include <set>
#include <sstream>

#include "render/listen.h"
#include "render/render.h"

namespace g2n {

namespace {

// Connections nobody may receive: an SNI no route claims, an invalid
// backendRef's share. A server that is always down closes them.
const nginx::Word kRefused = "tls_route_refused";
// The zone of stream upstreams whose servers gateway_tls_upstream_api replaces.
const char *const kStreamServersZone = "gateway2nginx_stream_servers";

struct StreamSplits {
    std::ostringstream text;
    std::map<std::string, std::string> var_by_body;

    // the upstream for one route's backends, or a split_clients variable
    nginx::Token target(const std::vector<WeightedUpstream> &backends)
    {
        auto upstream = [](const WeightedUpstream &b) {
            return b.upstream.empty() ? nginx::Token(kRefused) : nginx::Token(nginx::Name(b.upstream));
        };
        if (backends.empty()) return kRefused;
        if (backends.size() == 1) return upstream(backends[0]);
        nginx::Fragment body = split_clients_body(backends, upstream);
        auto [it, added] = var_by_body.emplace(body.text(), "tls_split_" + std::to_string(var_by_body.size() + 1));
        nginx::Name name(it->second);
        if (added) {
            nginx::Writer w(text);
            w.open("split_clients", {"${remote_addr}${remote_port}${msec}", nginx::Token::variable(name)});
            w.fragment(body);
            w.close();
            w.blank();
        }
        return nginx::Token::variable(name);
    }
};

void render_proxy_ssl(nginx::Writer &sv, const StreamServer &s)
{
    sv.directive("proxy_ssl", {"on"});
    sv.directive("proxy_ssl_server_name", {"on"});
    sv.directive("proxy_ssl_name", {"$upstream_ssl_policy_hostname"});
    render_backend_client(sv, s.backend_client, false);
}

// A Terminate port from nginx 1.25.5: a server per route hostname, which
// nginx picks by SNI, with its listener's certificate and its own
// proxy_ssl; an SNI no route has meets the port's default server, which
// closes the connection.
void render_server_per_hostname(nginx::Writer &sv, StreamSplits &splits, const StreamServer &s, const Options &o,
                                const CertificateNames &certificates)
{
    bool catch_all = false;
    auto open_server = [&](const std::string &hostname, const std::string &certificate, const std::string &key) {
        sv.open("server");
        if (hostname.empty()) {
            render_listen(sv, s.listen, {"ssl", "default_server"}, o);
        } else {
            render_listen(sv, s.listen, {"ssl"}, o);
        }
        sv.directive("server_name", {nginx::Token::value(hostname)});
        render_certificate(sv, certificate, key, certificates);
        render_client_validation(sv, s.client);
        sv.directive("proxy_ssl_verify_insecure", {s.insecure_allowed ? nginx::Word("allow") : nginx::Word("deny")});
    };
    for (const StreamRoute &r : s.routes) {
        catch_all |= r.hostname.empty();
        sv.comment("TLSRoute", {nginx::Token::value(r.source)});
        open_server(r.hostname, r.certificate, r.certificate_key);
        sv.directive("proxy_pass", {splits.target(r.backends)});
        if (r.proxy_ssl) render_proxy_ssl(sv, s);
        sv.close();
        sv.blank();
    }
    if (!catch_all) {
        sv.comment("no route for this SNI: the connection is closed");
        open_server("", s.certificate, s.certificate_key);
        sv.directive("proxy_pass", {kRefused});
        sv.close();
        sv.blank();
    }
}

// A TCP or UDP listener: its route's backends have every connection, or
// datagram session. A session lasts while datagrams come: nginx's default
// of 10 minutes would hold two of worker_connections per client address
// and port that long; 60 s idle ends it, as Envoy's UDP proxy does.
void render_plain_server(nginx::Writer &sv, StreamSplits &splits, const StreamServer &s, const Options &o)
{
    const StreamRoute &route = s.routes.front();
    const bool udp = s.protocol == StreamProtocol::UDP;
    sv.comment(udp ? "UDPRoute" : "TCPRoute", {nginx::Token::value(route.source)});
    sv.open("server");
    std::vector<nginx::Token> params;
    if (udp) params.emplace_back("udp");
    render_listen(sv, s.listen, params, o);
    sv.directive("proxy_pass", {splits.target(route.backends)});
    if (udp) sv.directive("proxy_timeout", {"60s"});
    sv.close();
    sv.blank();
}

}  // namespace

std::string render_stream_conf(const Plan &plan, const Options &o)
{
    std::ostringstream out;
    out << kHeader << "\n";
    nginx::Writer w(out);
    if (plan.stream_servers.empty()) {
        w.comment("no TLS listeners");
        return out.str();
    }
    bool any_allowed = false;
    for (const StreamServer &s : plan.stream_servers) any_allowed |= s.insecure_allowed;
    w.comment("Backend TLS behind Terminate listeners is verified by");
    w.comment("ngx_stream_gateway_tls_module; insecure modes only where a Gateway allows");
    w.comment("them (GEP-4152).");
    w.directive("proxy_ssl_verify_insecure", {any_allowed ? nginx::Word("allow") : nginx::Word("deny")});
    w.blank();

    render_upstreams(w, plan.stream_upstreams, stream_api_replaceable, kStreamServersZone,
                     trust_replaceable_policies(plan, o), o);
    w.open("upstream", {kRefused});
    w.comment("no route for this SNI, or an invalid backend: the connection is closed");
    w.directive("server", {"127.0.0.1:1", "down"});
    w.close();
    w.blank();

    const CertificateNames certificates = certificate_names(plan, o);
    StreamSplits splits;
    std::ostringstream maps, servers;
    nginx::Writer m(maps), sv(servers);
    int index = 0;
    for (const StreamServer &s : plan.stream_servers) {
        if (s.protocol != StreamProtocol::TLS) {
            render_plain_server(sv, splits, s, o);
            continue;
        }
        if (s.server_per_hostname) {
            render_server_per_hostname(sv, splits, s, o, certificates);
            continue;
        }
        nginx::Name variable("tls_route_" + std::to_string(++index));
        m.open("map", {s.terminate ? nginx::Word("$ssl_server_name") : nginx::Word("$ssl_preread_server_name"),
                       nginx::Token::variable(variable)});
        m.directive("hostnames");
        nginx::Token fallback = kRefused;
        for (const StreamRoute &r : s.routes) {
            nginx::Token target = splits.target(r.backends);
            if (r.hostname.empty()) {
                fallback = target;  // a route for any name: clients without SNI too
                continue;
            }
            if (r.to_terminate) {
                m.comment("a Terminate listener's hostname: to the server that terminates");
            } else {
                m.comment("TLSRoute", {nginx::Token::value(r.source)});
            }
            m.entry(nginx::Token::map_key(r.hostname), {target});
        }
        m.directive("default", {fallback});
        m.close();
        m.blank();

        sv.open("server");
        if (s.terminate) {
            render_listen(sv, s.listen, {"ssl"}, o);
            render_certificate(sv, s.certificate, s.certificate_key, certificates);
            render_client_validation(sv, s.client);
        } else {
            render_listen(sv, s.listen, {}, o);
            sv.directive("ssl_preread", {"on"});
        }
        sv.directive("proxy_pass", {nginx::Token::variable(variable)});
        sv.directive("proxy_ssl_verify_insecure", {s.insecure_allowed ? nginx::Word("allow") : nginx::Word("deny")});
        if (s.proxy_ssl) render_proxy_ssl(sv, s);
        sv.close();
        sv.blank();
    }
    out << splits.text.str() << maps.str() << servers.str();
    return out.str();
}

}  // namespace g2n
