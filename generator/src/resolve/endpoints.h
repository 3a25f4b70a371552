// Where a tenant's endpoint may point. Service and EndpointSlice authors
// are tenants: their addresses are checked as the API server checks
// EndpointSlice addresses (no loopback, unspecified, link-local or
// multicast address, IPv4-mapped IPv6 included), and never name the
// gateway itself (its listeners, its upstream API, its status endpoint).
// Test rigs, whose backends are on loopback, admit special ranges only
// through the operator's --allow-endpoints, and even then never the
// gateway's own ports there.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan.h"

namespace g2n {

// An IP address; IPv4-mapped IPv6 (::ffff:a.b.c.d) is read as its IPv4.
struct IpAddress {
    int family = 4;  // 4 or 6
    std::array<unsigned char, 16> bytes{};  // network order; IPv4 in the first 4
};

std::optional<IpAddress> parse_ip(const std::string &text);

// ADDRESS/PREFIX, or an address alone (all its bits).
struct Cidr {
    IpAddress network;
    int prefix = 0;

    bool contains(const IpAddress &ip) const;
};

std::optional<Cidr> parse_cidr(const std::string &text);

// What special range `ip` is in ("a loopback address", ...), else nullptr.
const char *special_address(const IpAddress &ip);

// Whether a DNS name names this host (localhost and *.localhost, RFC 6761).
bool names_local_host(const std::string &name);
// The port of "ADDR:PORT" or "[ADDR]:PORT" (an operator interface's
// listen); 0 for none ("off").
int port_of(const std::string &listen);

// The TCP port of each operator interface that listens
// (kOperatorInterfaces): {flag, port}.
struct OperatorPort {
    const char *flag;
    int port;
};
std::vector<OperatorPort> operator_ports(const Options &options);

// The gateway's own sockets, and what the operator allows besides.
class EndpointRules {
public:
    EndpointRules(const Manifests &manifests, const Options &options);

    // "" when HOST:PORT may be an endpoint, else why not. HOST is an IP
    // address or (ExternalName) a DNS name.
    std::string refusal(const std::string &host, int port) const;

private:
    std::vector<Cidr> allowed_;
    std::set<int> own_ports_;
    std::vector<IpAddress> own_addresses_;
    bool (*address_is_local_)(const std::string &address);
};

// The servers of one port of a Service, as its upstreams list them: the
// ready addresses its EndpointSlices give that port (by name) that
// `rules` admit, else its ExternalName, else (with a resolver) its cluster
// DNS name; sorted, each once. `refused(owner, endpoint, why)` hears of
// each endpoint left out.
using EndpointRefused = std::function<void(const std::string &owner, const std::string &endpoint, const std::string &why)>;
std::vector<std::string> service_port_servers(const Service &svc, const ServicePort &port,
                                              const std::vector<const EndpointSlice *> &slices,
                                              const EndpointRules &rules, const Options &options,
                                              const EndpointRefused &refused);

}  // namespace g2n
