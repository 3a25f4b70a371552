// Decisions about the module's route tables that follow from a Plan
// (gateway2nginx --routes table), shared by render (the location that
// routes by a table, and the table's JSON): which servers a table can
// serve, and the rules of each as the module holds them (gtls_routes.h).
//
// A table serves what the server's rendered locations serve, request for
// request: one table per Gateway listener port, one entry per server_name,
// its matches in the order nginx chooses locations (exact, regular
// expressions in order, then the longest prefix), each location's
// conditional rules first and, where no unconditional rule claims its
// path, a 404 after them (a rendered location does not fall through to a
// shorter one). What the table cannot express keeps its server's locations
// rendered.
#pragma once

#include <memory>
#include <string>

#include "gtls_routes.h"
#include "plan.h"

namespace g2n {

// The table of a listener port ("port_80")
std::string route_table_name(const Server &s);

// The hostname a server's entry has in its table ("*": the port's others)
std::string route_table_host(const Server &s);

// A server's entry in its table: its rules, compiled; null, with `why`,
// where the table cannot serve it (CORS, a mirror to a plaintext or gRPC
// backend)
std::shared_ptr<const gtls::HostRoutes> table_entry(const Server &s, std::string *why);

// Sets a server's table_json, or its table_refusal, once its locations
// are final (--routes table); a server with no route gets an entry with
// no rules (404), so that its table never serves it another's
void plan_table_entry(Server *s);
// Before a plan's plan_table_entry calls: what the plan before the last
// read back and the last did not is let go
void plan_table_entries_begin();

// Marks served_by_listener the servers of an exact route hostname whose
// requests nginx would give to their own listener's server (the longest
// wildcard server_name of their listen that matches, else its default
// server) were they not rendered, where that server routes by the table
// and is the listener's: the same listen, certificate, client validation
// and Gateway. A hostname that another listener's server would take keeps
// its own server{}.
void plan_listener_routing(std::vector<Server> *servers);

}  // namespace g2n
