// TLS listeners: which listeners may have a port, and the finishing of
// each stream server once every TLSRoute is in.
#include <algorithm>
#include <set>

#include "conditions.h"
#include "resolve.h"

namespace g2n {

// What a listen socket speaks: HTTP, HTTPS, or TLS in either mode (the
// SNI chooses between Terminate and Passthrough listeners of one port).
std::string socket_protocol(const std::string &category)
{
    return category.rfind("TLS/", 0) == 0 ? "TLS" : category;
}

// One listen socket speaks one protocol: the listeners of one Gateway that
// disagree on a port all lose it; across Gateways sharing an address, the
// first Gateway's protocol keeps it.
void settle_protocol_conflicts(std::vector<ListenerState> &listeners)
{
    std::map<std::string, std::set<std::string>> protocols;  // "gateway listen" -> socket protocols
    for (const ListenerState &ls : listeners) {
        if (!ls.category.empty()) protocols[ls.gateway->meta.key() + " " + ls.listen].insert(socket_protocol(ls.category));
    }
    std::map<std::string, const ListenerState *> owner;  // listen -> first listener
    for (ListenerState &ls : listeners) {
        if (ls.category.empty()) continue;
        const std::set<std::string> &mine = protocols[ls.gateway->meta.key() + " " + ls.listen];
        std::string why;
        if (mine.size() > 1) {
            why = "listeners of this Gateway on port " + std::to_string(ls.listener->port) + " disagree on protocol";
        } else {
            auto [it, first] = owner.emplace(ls.listen, &ls);
            if (!first && socket_protocol(it->second->category) != socket_protocol(ls.category)) {
                why = ls.listen + " is served as " + socket_protocol(it->second->category) + " for Gateway "
                      + it->second->gateway->meta.key();
            }
        }
        if (why.empty()) continue;
        ls.accepted = ls.usable = false;
        ls.status.conditions = {cond::listener_protocol_conflict(why), cond::listener_not_programmed(why)};
    }
}

void finish_stream_server(StreamServer *server,
                          const std::map<std::string, std::pair<std::string, std::string>> &certificates,
                          std::vector<std::string> *warnings)
{
    if (!certificates.empty()) {
        // the listener without a hostname, else the first by name, answers
        // when no other certificate's hostname is asked for
        server->certificate = certificates.begin()->second.first;
        server->certificate_key = certificates.begin()->second.second;
        std::set<std::string> files;
        for (const auto &[hostname, files_of] : certificates) files.insert(files_of.first);
        if (files.size() > 1) {
            warnings->push_back("stream listener " + server->listen + ": TLS listeners with different "
                                "certificates share the port; " + server->certificate + " is served");
        }
    }
    for (const StreamRoute &route : server->routes) {
        for (const WeightedUpstream &b : route.backends) server->proxy_ssl |= b.tls;
    }
    // proxy_ssl is per server: with it on, a backend without a policy
    // cannot be reached in plaintext; refuse it rather than guess
    for (StreamRoute &route : server->routes) {
        for (WeightedUpstream &b : route.backends) {
            if (server->proxy_ssl && !b.tls && !b.upstream.empty()) {
                warnings->push_back("TLSRoute " + route.source + ": backend " + b.upstream
                                    + " has no BackendTLSPolicy but shares Terminate listener " + server->listen
                                    + " with backends that do; its connections are refused");
                b.upstream.clear();
            }
        }
    }
    std::sort(server->routes.begin(), server->routes.end(),
              [](const StreamRoute &a, const StreamRoute &b) { return a.hostname < b.hostname; });
}

}  // namespace g2n
