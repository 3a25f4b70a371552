// The running nginx, from gateway2nginx: reloads confirmed, and servers
// pushed to gateway_tls_upstream_api.
#pragma once

#include <map>
#include <string>

#include "plan.h"

namespace g2n {

// The pid in an nginx pid file; 0 when there is none.
long read_pid(const std::string &pidfile);

// SIGHUP, then new workers (the master's children that were not there
// before) within 15 s: nginx took the configuration. "" when it did (and
// *done says so), else why not.
std::string reload_and_confirm(const std::string &pidfile, std::string *done);

// PUT `body` to the upstream API at `listen` (ADDR:PORT), retried for 5 s
// while a worker of a replaced configuration refuses it; "" on 200, else
// why not.
std::string push_servers(const std::string &listen, const std::string &body);

// The servers of every upstream the API can replace, by name, as it takes
// them (none when the API is off); and a PUT body of such servers.
std::map<std::string, std::string> replaceable_servers(const Plan &plan, const Options &options);
std::string servers_body(const std::map<std::string, std::string> &servers);

}  // namespace g2n
