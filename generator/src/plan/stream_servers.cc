// stream servers: TLS listeners (Passthrough and Terminate) sharing a
// port, with terminating servers put behind the port's SNI front.
#include "resolve/resolver.h"

namespace g2n {

void Resolver::finish_stream_servers()
{
    const bool by_name = o_.nginx_version >= kNginxStreamServerName;
    size_t hops = 0;
    // terminating servers on loopback addresses, by the port they serve
    std::map<std::string, std::vector<StreamServer>> behind;
    for (auto it = stream_servers_.begin(); it != stream_servers_.end();) {
        const std::string listen = it->first.first;
        if (!it->first.second) {
            ++it;
            continue;
        }
        StreamServer &terminate = it->second;
        const auto &certificates = stream_certificates_[listen];
        const bool mixed = stream_servers_.count({listen, false}) > 0;
        bool split = !by_name && needs_server_per_hostname(terminate, certificates);
        if (split && hops + terminate.routes.size() > kMaxTerminateHops) {
            plan_->warnings.push_back("stream listener " + listen + ": more Terminate hostnames than loopback "
                                      "addresses for them; the port is one server");
            split = false;
        }
        if (!mixed && !split) {
            ++it;
            continue;
        }
        if (mixed && hops + 1 > kMaxTerminateHops) {
            plan_->warnings.push_back("stream listener " + listen + ": no loopback address is left for its "
                                      "Terminate listeners; their hostnames are refused");
            it = stream_servers_.erase(it);
            continue;
        }
        StreamServer &front = stream_servers_[{listen, false}];
        if (front.listen.empty()) {  // no Passthrough listener: a front of its own
            front.listen = listen;
            front.insecure_allowed = terminate.insecure_allowed;
        }
        if (!split) {
            finish_stream_server(&terminate, certificates, by_name, &plan_->warnings);
            put_behind(&front, &terminate, terminate_hostnames_[listen], ++hops);
            behind[listen].push_back(std::move(terminate));
        } else {
            // nginx before 1.25.5 has one certificate and one proxy_ssl
            // per stream server: a server for each hostname, as nginx
            // from 1.25.5 picks by SNI itself
            std::vector<StreamRoute> routes = std::move(terminate.routes);
            terminate.routes.clear();
            std::sort(routes.begin(), routes.end(),
                      [](const StreamRoute &a, const StreamRoute &b) { return a.hostname < b.hostname; });
            for (StreamRoute &route : routes) {
                StreamServer one = terminate;
                const std::string hostname = route.hostname;
                // its listener's certificate alone
                std::map<std::string, std::pair<std::string, std::string>> own;
                own[""] = {route.certificate, route.certificate_key};
                one.routes.push_back(std::move(route));
                finish_stream_server(&one, own, by_name, &plan_->warnings);
                put_behind(&front, &one, {hostname}, ++hops);
                behind[listen].push_back(std::move(one));
            }
        }
        drop_passthrough_of_terminate_hostnames(&front);
        it = stream_servers_.erase(it);
    }
    for (auto &[key, server] : stream_servers_) {
        finish_stream_server(&server, stream_certificates_[key.first], by_name, &plan_->warnings);
        plan_->stream_servers.push_back(std::move(server));
        for (StreamServer &terminating : behind[key.first]) plan_->stream_servers.push_back(std::move(terminating));
    }
    stream_servers_.clear();
    plan_->stream_upstreams = stream_upstreams_.take_sorted();
}

// A terminating server behind the port's front (TLSRouteModeMixed, or a
// server per hostname): the front reads the SNI (ssl_preread) and
// forwards `hostnames`, still encrypted, to the terminating server,
// which listens on loopback address 127.254.0.N of the same port
// instead.
void Resolver::put_behind(StreamServer *front, StreamServer *terminate, const std::set<std::string> &hostnames, size_t n)
{
    const std::string port = front->listen.substr(front->listen.rfind(':') + 1);
    terminate->listen = "127.254." + std::to_string(n / 256) + "." + std::to_string(n % 256) + ":" + port;
    WeightedUpstream hop;
    hop.upstream = "tls_terminate_" + std::to_string(n);
    Upstream *upstream = stream_upstreams_.get(hop.upstream).first;
    upstream->name = hop.upstream;
    upstream->comment = "the Terminate listeners of " + front->listen;
    upstream->servers = {terminate->listen};
    for (const std::string &hostname : hostnames) {
        StreamRoute route;
        route.hostname = hostname;
        route.backends = {hop};
        route.source = front->listen;
        route.to_terminate = true;
        front->routes.push_back(std::move(route));
    }
}

// A Passthrough route of a hostname the port sends to a terminating
// server loses it.
void Resolver::drop_passthrough_of_terminate_hostnames(StreamServer *front)
{
    std::unordered_set<std::string> terminated;
    for (const StreamRoute &r : front->routes) {
        if (r.to_terminate) terminated.insert(r.hostname);
    }
    auto lost = [&](const StreamRoute &r) {
        if (r.to_terminate || !terminated.count(r.hostname)) return false;
        plan_->warnings.push_back("hostname \"" + r.hostname + "\" on " + front->listen
                                  + " is a Terminate listener's; the Passthrough TLSRoute " + r.source
                                  + " does not get it");
        return true;
    };
    front->routes.erase(std::remove_if(front->routes.begin(), front->routes.end(), lost), front->routes.end());
}

}  // namespace g2n
