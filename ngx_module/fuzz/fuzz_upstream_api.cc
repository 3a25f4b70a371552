// libFuzzer target: the upstream API's request bodies. Whatever is
// accepted must read back the same from what the API writes of it (the
// server lists and policy trust kept across reloads), a policy's trust as
// the module builds it never trusts nothing, no name or address holds a
// control byte (which C would read as the end of a shorter string), and
// nothing may crash or throw anything but gtls::ApiError; read as a GET's
// list (what gateway2nginx reads back), likewise.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gtls_upstream_api.h"
#include "gtls_verify.h"

namespace {

void no_control_byte(const std::string &text)
{
    for (unsigned char c : text) {
        if (c < 0x20 || c == 0x7f) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string body(reinterpret_cast<const char *>(data), size);
    try {
        const gtls::ApiUpdate update = gtls::parse_api_update(body);
        for (const std::vector<gtls::UpstreamServers> *lists : {&update.upstreams, &update.stream_upstreams}) {
            for (const gtls::UpstreamServers &u : *lists) {
                const std::string kept = gtls::upstream_servers_json(u.servers);
                if (!(gtls::parse_server_list(kept) == u.servers)) std::abort();
                gtls::api_error_json(400, u.upstream);
                no_control_byte(u.upstream);
                for (const gtls::UpstreamServer &server : u.servers) no_control_byte(server.address);
            }
        }
        for (const gtls::PolicyTrust &t : update.policies) {
            no_control_byte(t.policy);
            for (const std::string &pin : t.pins) no_control_byte(pin);
            if (t.hostname) no_control_byte(*t.hostname);
            if (!(gtls::parse_policy_trust(gtls::policy_trust_json(t), t.policy) == t)) std::abort();
            // what the module then builds of it: a store and pins, the
            // names and client certificate given, or a refusal
            if (t.ca != "system") {
                gtls::Trust trust;
                std::string error;
                if (gtls::build_policy_trust(t, &trust, &error)
                    && ((!trust.store && trust.pins.empty()) || trust.hostname != t.hostname
                        || trust.sans.has_value() != t.subject_alt_names.has_value()
                        || (trust.sans && trust.sans->size() != t.subject_alt_names->size())
                        || trust.client_certificate.has_value() != t.client_certificate.has_value())) {
                    std::abort();
                }
            }
        }
    } catch (const gtls::ApiError &) {
    }
    // the same bytes as a GET's list, as gateway2nginx reads it back
    try {
        for (const gtls::ListedRoutes &r : gtls::listed_route_hosts(body)) {
            no_control_byte(r.table);
            no_control_byte(r.host);
        }
        gtls::listed_servers(body, "upstreams");
        gtls::pushed_policies(body);
    } catch (const gtls::ApiError &) {
    }
    return 0;
}
