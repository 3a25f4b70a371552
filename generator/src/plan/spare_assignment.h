// gateway2nginx run --spare-backends: a backend new to the nginx that runs
// is put in a spare upstream's place (plan/upstreams.h), so that what it
// needs (its servers, its policy's trust and names, the table rules that
// name it) is pushed through the upstream API with no reload.
#pragma once

#include <map>
#include <set>
#include <string>

#include "plan.h"

namespace g2n {

// Upstream name -> the spare upstream that holds it.
using SpareAssignment = std::map<std::string, std::string>;

// Whether `spare` can hold `u`: of its kind (TLS or plaintext), servers
// the API replaces, a policy the API can set (strict, a CA or pins)
bool spare_can_hold(const Upstream &u, const Upstream &spare);
// `spare` holding `u`: u's servers, Service and policy under the spare's
// name, its zone and policy name
Upstream holding(const Upstream &u, const Upstream &spare);
// A server's route table rules (Server::table_json) naming backend `to`
// where they named `from`
void rename_backend(std::string *table_json, const std::string &from, const std::string &to);
// Whether a server's route table rules name backend `name`
bool names_backend(const std::string &table_json, const std::string &name);
// The free spares of `plan` (those no upstream of `held` is in), by name:
// the order assign_spares gives them in
std::map<std::string, size_t> free_spares(const Plan &plan, const SpareAssignment &held);

// In `plan`, as resolve made it (--routes table, spares rendered): each
// upstream `running` (the upstream names of the configuration nginx runs)
// has not, or that `kept` gives a spare already, put in a free spare's
// place of its kind (TLS or plaintext): the spare takes its servers, its
// Service (for EndpointSlice changes), its policy (under the spare's
// policy name, its hostname and SANs pushed), and every table entry that
// names it names the spare. Only an upstream no rendered location names,
// whose servers the API can replace and whose policy the API can set
// (strict, with a CA or pins). Returns what is assigned now; what cannot
// be is left as it is (its own upstream{}: a reload). With
// `running_upstreams` (the upstreams nginx runs, as it runs them), one
// whose TLS the plan turns on or off (a BackendTLSPolicy made or deleted)
// takes a spare's place too, its upstream{} kept as nginx runs it.
SpareAssignment assign_spares(Plan *plan, const std::set<std::string> &running, const SpareAssignment &kept,
                              const std::vector<Upstream> *running_upstreams = nullptr);

// In `plan`, as resolve made it (--routes table): the upstreams of
// `running` (those of the plan nginx runs) that it dropped, kept where they were
// (no route names them: they serve nothing, and leaving them spares a
// reload) until a reload renders what the plan has alone; not one whose
// policy's CA bundle the plan no longer writes. Spares, and what a spare
// holds, are assign_spares'. Returns how many were kept.
size_t retain_upstreams(Plan *plan, const std::vector<Upstream> &running);

}  // namespace g2n
