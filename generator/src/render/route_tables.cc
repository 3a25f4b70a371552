// --routes table: the body of the upstream API's PUT that fills the route
// tables, in the module's own JSON (gtls_routes_json.h).
#include <map>
#include <string_view>

#include "gtls_json.h"
#include "plan/route_tables.h"
#include "render/render.h"

namespace g2n {

namespace {

// The tables' text, piece by piece to `piece`, in order: what is written
// and what is measured come from one walk
template <typename Piece>
void route_tables_text(const Plan &plan, Piece piece)
{
    // sorted: the same plan, the same bytes
    std::map<std::string, std::map<std::string, const std::string *>> tables;
    for (const Server &s : plan.servers) {
        if (s.in_table()) tables[route_table_name(s)][route_table_host(s)] = &s.table_json;
    }
    piece("{\"routes\":{");
    bool first_table = true;
    for (const auto &[table, hosts] : tables) {
        if (!first_table) piece(",");
        first_table = false;
        piece(gtls::json_string(table));
        piece(":{");
        bool first_host = true;
        for (const auto &[host, json] : hosts) {
            if (!first_host) piece(",");
            first_host = false;
            piece(gtls::json_string(host));
            piece(":");
            piece(*json);
        }
        piece("}");
    }
    piece("}}\n");
}

}  // namespace

std::string render_route_tables(const Plan &plan, const Options &)
{
    std::string out;
    route_tables_text(plan, [&](std::string_view text) { out += text; });
    return out;
}

size_t route_table_entry_bytes(const Server &s)
{
    // ",HOST:JSON" (the first of a table has no comma; its others, one)
    return 1 + gtls::json_string(route_table_host(s)).size() + 1 + s.table_json.size();
}

RouteTablesRoom route_tables_room(size_t table_bytes)
{
    // every entry kept, twice while one replaces another; a body that
    // fills every table at once
    return {power_of_two_at_least(2 * table_bytes / 1024, 256), power_of_two_at_least(2 * table_bytes / 1024, 1024)};
}

size_t route_tables_size(const Plan &plan)
{
    size_t size = 0;
    route_tables_text(plan, [&](std::string_view text) { size += text.size(); });
    return size;
}

}  // namespace g2n
