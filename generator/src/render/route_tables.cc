// --routes table: the body of the upstream API's PUT that fills the route
// tables, in the module's own JSON (gtls_routes_json.h).
#include <map>

#include "gtls_json.h"
#include "plan/route_tables.h"
#include "render/render.h"

namespace g2n {

std::string render_route_tables(const Plan &plan, const Options &)
{
    std::map<std::string, std::map<std::string, std::string>> tables;  // sorted: the same plan, the same bytes
    for (const Server &s : plan.servers) {
        if (s.in_table()) tables[route_table_name(s)][route_table_host(s)] = s.table_json;
    }
    std::string out = "{\"routes\":{";
    bool first_table = true;
    for (const auto &[table, hosts] : tables) {
        out += (first_table ? "" : ",") + gtls::json_string(table) + ":{";
        first_table = false;
        bool first_host = true;
        for (const auto &[host, json] : hosts) {
            out += (first_host ? "" : ",") + gtls::json_string(host) + ":" + json;
            first_host = false;
        }
        out += "}";
    }
    return out + "}}\n";
}

}  // namespace g2n
