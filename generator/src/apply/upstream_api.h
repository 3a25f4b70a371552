// apply: what touches the host or a running nginx. This file: the servers
// and trust a Plan gives gateway_tls_upstream_api, and their pushes.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "plan.h"

namespace g2n {

// PUT `body` to the upstream API (options.upstream_api, with its bearer
// token), retried for 5 s while a worker of a replaced configuration
// refuses it; "" on 200, else why not.
std::string push_to_api(const Options &options, const std::string &body);

// The upstream API's sections, as ApiContent and ApiHeld index them
enum ApiSection : int { kApiServers, kApiStreamServers, kApiTrust, kApiRoutes, kApiCertificates, kApiSections };

// What the upstream API holds of a plan, by name as the API takes it: the
// servers of every upstream it can replace, the trust of every policy it
// can, the route table entry of every hostname a table serves, the key
// pair of every listener certificate it can replace (none when the API is
// off).
struct ApiHeld;
struct ApiContent {
    using Entries = std::map<std::string, std::string>;
    Entries servers;         // upstream -> [servers]
    Entries stream_servers;  // stream upstream -> [servers]
    Entries trust;           // policy -> {"ca":...,"pins":[...]}
    // route_entry_key(table, hostname) -> {"actions":...,"matches":...},
    // or "null": the hostname removed
    Entries routes;
    Entries certificates;    // certificate -> {"certificate":...,"key":...}

    bool empty() const
    {
        for (int i = 0; i < kApiSections; i++) {
            if (!list(i).empty()) return false;
        }
        return true;
    }
    Entries &list(int section) { return this->*kSections[section]; }
    const Entries &list(int section) const { return this->*kSections[section]; }
    static constexpr Entries ApiContent::*kSections[kApiSections] = {
        &ApiContent::servers, &ApiContent::stream_servers, &ApiContent::trust, &ApiContent::routes,
        &ApiContent::certificates};
    // the entries new or different from what `held` says the API holds
    // (this may be part of a plan's: nothing is removed);
    // *digests, when given, holds this content's (as ApiHeld::of would)
    ApiContent changed_since(const ApiHeld &held, ApiHeld *digests = nullptr) const;
};

// The key of a hostname's entry in ApiContent::routes: "TABLE HOSTNAME"
// (a table is named with no space, and a hostname has none)
std::string route_entry_key(const std::string &table, const std::string &host);

// What the upstream API holds, each entry as the SHA-256 of its JSON: what
// would be pushed is compared with it, never kept whole (every upstream's
// servers and every policy's CA bundle would be held a second time).
struct ApiHeld {
    using Entries = std::map<std::string, std::string>;
    Entries servers, stream_servers, trust, routes, certificates;

    static ApiHeld of(const ApiContent &content);
    // of api_content(plan, options), made one entry at a time
    static ApiHeld of(const Plan &plan, const Options &options);
    Entries &list(int section) { return this->*kSections[section]; }
    const Entries &list(int section) const { return this->*kSections[section]; }
    static constexpr Entries ApiHeld::*kSections[kApiSections] = {
        &ApiHeld::servers, &ApiHeld::stream_servers, &ApiHeld::trust, &ApiHeld::routes, &ApiHeld::certificates};
    // `pushed`'s entries are held now, beside the others (a hostname
    // removed is held no more)
    void hold(const ApiContent &pushed);
};
ApiContent api_content(const Plan &plan, const Options &options);
// The route table entries of `servers`, and those of `before` that none of
// them has, removed
ApiContent route_entries(const std::vector<const Server *> &servers, const std::vector<Server> &before);
// api_content(plan, options).changed_since(held, now), made one entry at a
// time: what is unchanged is never held whole (at 10,000 routes, every
// policy's CA bundle again); and the route table hostnames `held` has that
// the plan has not, removed
ApiContent api_changes(const Plan &plan, const Options &options, const ApiHeld &held, ApiHeld *now);
// After a confirmed reload, or once an nginx runs that may not hold what
// was pushed: the servers rendered pushed (nginx keeps the ones pushed
// before where the configured ones look unchanged to it), the trust
// rendered for each policy the API says holds pushed trust, and the route
// table entries nginx does not hold as `before` says they were pushed
// (null: it holds none, a fresh nginx), with the hostnames the plan has
// not removed, and the key pair rendered for each listener certificate
// the API says holds a pushed one. "" when done, else why not.
// Only what differs from what nginx holds is pushed: *pushed says how many
// upstreams, policies, hostnames and certificates that was.
std::string sync_after_reload(const Plan &plan, const Options &options, const ApiHeld *before,
                              size_t *pushed = nullptr);
// A PUT body of `content`: {"upstreams":{...},"stream_upstreams":{...},
// "policies":{...},"routes":{TABLE:{HOST:...}},"certificates":{...}}, each
// section only when it has entries.
std::string api_body(const ApiContent &content);

// Its servers as the API takes them (gtls::upstream_servers_json).
std::string upstream_servers_api_json(const Upstream &u);
// Its trust as the API takes it (gtls::policy_trust_json): the CA bundle's
// PEM (from the plan's files) or "system", and the pins.
std::string policy_trust_api_json(const UpstreamPolicy &p, const Plan &plan);

}  // namespace g2n
