// The running nginx, from gateway2nginx: reloads confirmed, and servers
// and trust pushed to gateway_tls_upstream_api.
#pragma once

#include <map>
#include <string>

#include "plan.h"

namespace g2n {

// The pid in an nginx pid file; 0 when there is none.
long read_pid(const std::string &pidfile);

// SIGHUP, then new workers (the master's children that were not there
// before): nginx took the configuration, however long its reload took. It
// took none when `error_log` (the configuration's, where nginx reports a
// refused reload) gains an [emerg] line, when the master is gone, or after
// kLongestReload seconds of neither. "" when it did (and *done says so),
// else why not.
inline constexpr long kLongestReload = 600;
std::string reload_and_confirm(const std::string &pidfile, const std::string &error_log, std::string *done);

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

}  // namespace g2n
