// TLS listeners: which listeners may have a port, and the finishing of
// each stream server once every TLSRoute is in.
#include <algorithm>
#include <set>

#include "resolve/conditions.h"
#include "resolve/resolve.h"

namespace g2n {

// What a listen socket speaks: HTTP, HTTPS, or TLS in either mode (the
// SNI chooses between Terminate and Passthrough listeners of one port).
std::string socket_protocol(const std::string &category)
{
    return category.rfind("TLS/", 0) == 0 ? "TLS" : category;
}

// The socket a listener's port is: a UDP port is another socket than the
// TCP port of the same number.
std::string listen_socket(const ListenerState &ls)
{
    return ls.category == "UDP" ? ls.listen + " udp" : ls.listen;
}

namespace {

// proxy_ssl is per stream server: with it on, a backend without a policy
// cannot be reached in plaintext; refuse it rather than guess
void refuse_plaintext_beside_tls(StreamRoute *route, const std::string &where, std::vector<std::string> *warnings)
{
    for (WeightedUpstream &b : route->backends) {
        if (b.tls || b.upstream.empty()) continue;
        warnings->push_back("TLSRoute " + route->source + ": backend " + b.upstream
                            + " has no BackendTLSPolicy but shares " + where
                            + " with backends that do; its connections are refused");
        b.upstream.clear();
    }
}

bool any_tls(const StreamRoute &route)
{
    return std::any_of(route.backends.begin(), route.backends.end(), [](const WeightedUpstream &b) { return b.tls; });
}

size_t certificate_files(const std::map<std::string, std::pair<std::string, std::string>> &certificates)
{
    std::set<std::string> files;
    for (const auto &[hostname, files_of] : certificates) files.insert(files_of.first);
    return files.size();
}

}  // namespace

bool needs_server_per_hostname(const StreamServer &terminate,
                               const std::map<std::string, std::pair<std::string, std::string>> &certificates)
{
    bool tls = false, plaintext = false;
    for (const StreamRoute &route : terminate.routes) (any_tls(route) ? tls : plaintext) = true;
    return certificate_files(certificates) > 1 || (tls && plaintext);
}

void finish_stream_server(StreamServer *server,
                          const std::map<std::string, std::pair<std::string, std::string>> &certificates,
                          bool server_per_hostname, std::vector<std::string> *warnings)
{
    if (!certificates.empty()) {
        // the listener without a hostname, else the first by name, answers
        // when no other certificate's hostname is asked for
        server->certificate = certificates.begin()->second.first;
        server->certificate_key = certificates.begin()->second.second;
    }
    server->server_per_hostname = server->terminate && server_per_hostname;
    if (server->terminate && certificate_files(certificates) > 1 && !server->server_per_hostname) {
        // what the generator could not put behind the port (no loopback
        // address left)
        warnings->push_back("stream listener " + server->listen + ": TLS listeners with different "
                            "certificates share the port; " + server->certificate + " is served");
    }
    if (server->server_per_hostname) {
        for (StreamRoute &route : server->routes) {
            route.proxy_ssl = any_tls(route);
            if (route.proxy_ssl) {
                refuse_plaintext_beside_tls(&route, "hostname \"" + route.hostname + "\" on " + server->listen,
                                            warnings);
            }
        }
    } else {
        for (const StreamRoute &route : server->routes) server->proxy_ssl |= any_tls(route);
        if (server->proxy_ssl) {
            for (StreamRoute &route : server->routes) {
                refuse_plaintext_beside_tls(&route, "Terminate listener " + server->listen, warnings);
            }
        }
    }
    std::sort(server->routes.begin(), server->routes.end(),
              [](const StreamRoute &a, const StreamRoute &b) { return a.hostname < b.hostname; });
}

}  // namespace g2n
