// apply: what touches the host or a running nginx. This file: the servers
// and trust a Plan gives gateway_tls_upstream_api, and their pushes.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "plan.h"

namespace g2n {

// PUT `body` to the upstream API (options.upstream_api, with its bearer
// token), retried for 5 s while a worker of a replaced configuration
// refuses it; "" on 200, else why not.
std::string push_to_api(const Options &options, const std::string &body);

// What the upstream API holds of a plan, by name as the API takes it: the
// servers of every upstream it can replace, the trust of every policy it
// can (none when the API is off).
struct ApiContent {
    std::map<std::string, std::string> servers;         // upstream -> [servers]
    std::map<std::string, std::string> stream_servers;  // stream upstream -> [servers]
    std::map<std::string, std::string> trust;           // policy -> {"ca":...,"pins":[...]}

    bool empty() const { return servers.empty() && stream_servers.empty() && trust.empty(); }
    // the entries new or different since `before`
    ApiContent changed_since(const ApiContent &before) const;
};
ApiContent api_content(const Plan &plan, const Options &options);
// After a confirmed reload: the servers rendered pushed (nginx keeps the
// ones pushed before where the configured ones look unchanged to it), and
// the trust rendered for each policy the API says holds pushed trust. ""
// when done, else why not.
// Only what differs from what nginx holds is pushed: *pushed says how many
// upstreams and policies that was.
std::string sync_after_reload(const Plan &plan, const Options &options, size_t *pushed = nullptr);
// A PUT body of `content`: {"upstreams":{...},"stream_upstreams":{...},
// "policies":{...}}, each section only when it has entries.
std::string api_body(const ApiContent &content);

// Its servers as the API takes them (gtls::upstream_servers_json).
std::string upstream_servers_api_json(const Upstream &u);
// Its trust as the API takes it (gtls::policy_trust_json): the CA bundle's
// PEM (from the plan's files) or "system", and the pins.
std::string policy_trust_api_json(const UpstreamPolicy &p, const Plan &plan);

}  // namespace g2n
