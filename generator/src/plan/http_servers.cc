// http servers: the servers and locations resolve collected, ordered as
// nginx must try them, handed to the Plan.
#include "plan/route_tables.h"
#include "plan/upstreams.h"
#include "resolve/resolver.h"

#include <algorithm>

namespace g2n {

namespace {

// What no rule of a server's routes matches gets 404 from a location of its
// own: left to nginx's static handler, the answer would depend on what
// OUTDIR holds (a file under OUTDIR/html, 403 where the workers cannot read
// it). A prefix "/" of a route covers it already; a server without
// locations answers 404 whole.
void answer_unmatched(Server *server)
{
    if (server->locations.empty()) return;
    if (std::any_of(server->locations.begin(), server->locations.end(), [](const Location &l) {
            return l.match.kind == LocationMatch::Kind::Prefix && l.match.path == "/";
        })) {
        return;
    }
    Location none;
    none.match = {LocationMatch::Kind::Prefix, "/"};
    none.return_code = 404;
    none.source = "none: what no rule matches";
    server->locations.push_back(std::move(none));
}

}  // namespace

void Resolver::finish_servers()
{
    if (o_.routes == "table") {
        // every HTTP listener's own server, which routes by the table:
        // what a route hostname new to it needs is a table entry alone
        auto http = [](const ListenerState &ls) { return ls.usable && (ls.category == "HTTP" || ls.category == "HTTPS"); };
        for (const ListenerState &ls : listeners_) {
            if (!http(ls)) continue;
            const std::string &name = ls.listener->hostname;
            // a wildcard or no hostname is no claim: where Gateways share
            // the address with the same one, neither's server is made
            const bool owned = !name.empty() && name[0] != '*'
                                   ? host_owner(ls, name) == ls.gateway
                                   : std::none_of(listeners_.begin(), listeners_.end(), [&](const ListenerState &other) {
                                         return http(other) && other.gateway != ls.gateway && other.listen == ls.listen
                                                && other.listener->hostname == name;
                                     });
            if (owned) server_for(ls, name);
        }
    }
    // the plan takes them over in key order: no second copy, no
    // doubling at the peak
    std::vector<std::pair<const std::string, Server> *> by_key;
    by_key.reserve(servers_.size());
    for (auto &entry : servers_) by_key.push_back(&entry);
    std::sort(by_key.begin(), by_key.end(), [](const auto *a, const auto *b) { return a->first < b->first; });
    plan_->servers.reserve(plan_->servers.size() + servers_.size());
    if (o_.routes == "table") plan_table_entries_begin();
    for (auto *entry : by_key) {
        answer_unmatched(&entry->second);
        order_locations(&entry->second);
        if (o_.routes == "table") plan_table_entry(&entry->second);
        plan_->servers.push_back(std::move(entry->second));
    }
    servers_.clear();
    if (o_.routes == "table") plan_listener_routing(&plan_->servers);
    plan_->upstreams = upstreams_.take_sorted();
    if (o_.routes == "table") {
        for (Upstream &spare : spare_upstreams(o_.spare_backends)) plan_->upstreams.push_back(std::move(spare));
    }
    finish_stream_servers();
    plan_pushed_names(plan_, o_);
}

}  // namespace g2n
