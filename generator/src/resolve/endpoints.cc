#include "resolve/endpoints.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace g2n {

std::optional<IpAddress> parse_ip(const std::string &text)
{
    IpAddress ip;
    if (text.find('\0') != std::string::npos) return std::nullopt;
    if (inet_pton(AF_INET, text.c_str(), ip.bytes.data()) == 1) return ip;
    if (inet_pton(AF_INET6, text.c_str(), ip.bytes.data()) != 1) return std::nullopt;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(ip.bytes.data(), mapped, sizeof mapped) == 0) {
        std::memmove(ip.bytes.data(), ip.bytes.data() + 12, 4);
        std::memset(ip.bytes.data() + 4, 0, 12);
        return ip;
    }
    ip.family = 6;
    return ip;
}

bool Cidr::contains(const IpAddress &ip) const
{
    if (ip.family != network.family) return false;
    for (int bit = 0; bit < prefix; bit++) {
        const unsigned char mask = static_cast<unsigned char>(0x80 >> (bit % 8));
        if ((ip.bytes[bit / 8] & mask) != (network.bytes[bit / 8] & mask)) return false;
    }
    return true;
}

std::optional<Cidr> parse_cidr(const std::string &text)
{
    const size_t slash = text.find('/');
    std::optional<IpAddress> ip = parse_ip(text.substr(0, slash));
    if (!ip) return std::nullopt;
    const bool written_as_v6 = text.find(':') != std::string::npos;
    const int bits = written_as_v6 ? 128 : 32;
    Cidr cidr{*ip, ip->family == 4 ? 32 : 128};
    if (slash != std::string::npos) {
        const std::string p = text.substr(slash + 1);
        char *end = nullptr;
        const long n = std::strtol(p.c_str(), &end, 10);
        if (p.empty() || *end != '\0' || n < 0 || n > bits) return std::nullopt;
        // an IPv4-mapped network names IPv4 addresses: its prefix too
        cidr.prefix = ip->family == 4 && written_as_v6 ? static_cast<int>(n) - 96 : static_cast<int>(n);
        if (cidr.prefix < 0) return std::nullopt;
    }
    return cidr;
}

const char *special_address(const IpAddress &ip)
{
    const unsigned char *b = ip.bytes.data();
    if (ip.family == 4) {
        if (b[0] == 0) return "an unspecified address (0.0.0.0/8)";
        if (b[0] == 127) return "a loopback address";
        if (b[0] == 169 && b[1] == 254) return "a link-local address";
        if ((b[0] & 0xf0) == 224) return "a multicast address";
        if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) return "the broadcast address";
        return nullptr;
    }
    static const unsigned char zero[16] = {};
    if (std::memcmp(b, zero, 15) == 0 && b[15] == 0) return "an unspecified address";
    if (std::memcmp(b, zero, 15) == 0 && b[15] == 1) return "a loopback address";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "a link-local address";
    if (b[0] == 0xff) return "a multicast address";
    return nullptr;
}

bool names_local_host(const std::string &name)
{
    std::string n;
    for (char c : name) n.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    while (!n.empty() && n.back() == '.') n.pop_back();
    const std::string suffix = ".localhost";
    return n == "localhost" || (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
           || n == "localhost.localdomain" || n == "ip6-localhost" || n == "ip6-loopback";
}

int port_of(const std::string &listen)
{
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return 0;
    return std::atoi(listen.c_str() + colon + 1);
}

std::vector<OperatorPort> operator_ports(const Options &options)
{
    std::vector<OperatorPort> ports;
    for (const OperatorInterface &i : kOperatorInterfaces) {
        if (int port = port_of(options.*i.listen)) ports.push_back({i.flag, port});
    }
    return ports;
}

EndpointRules::EndpointRules(const Manifests &m, const Options &o) : address_is_local_(o.address_is_local)
{
    for (const std::string &a : o.allow_endpoints) {
        if (std::optional<Cidr> c = parse_cidr(a)) allowed_.push_back(*c);
    }
    for (const Gateway &gw : m.gateways) {
        for (const Listener &l : gw.listeners) own_ports_.insert(l.port + o.port_offset);
        for (const auto &[type, value] : gw.addresses) {
            if (std::optional<IpAddress> ip = parse_ip(value)) own_addresses_.push_back(*ip);
        }
    }
    // a ListenerSet's too, admitted or not: it may be admitted later
    for (const ListenerSet &set : m.listener_sets) {
        for (const Listener &l : set.listeners) own_ports_.insert(l.port + o.port_offset);
    }
    for (const OperatorPort &p : operator_ports(o)) own_ports_.insert(p.port);
    if (std::optional<IpAddress> ip = parse_ip(o.listen_address)) own_addresses_.push_back(*ip);
}

std::string EndpointRules::refusal(const std::string &host, int port) const
{
    std::optional<IpAddress> ip = parse_ip(host);
    in_addr legacy{};
    if (!ip && host.find('\0') == std::string::npos && inet_aton(host.c_str(), &legacy) == 1) {
        // "127.1", "2130706433", "0x7f000001": DNS names to the API server,
        // but nginx's getaddrinfo reads them as inet_aton does
        ip = IpAddress{};
        std::memcpy(ip->bytes.data(), &legacy, 4);
    }
    if (!ip && names_local_host(host)) {
        ip = parse_ip("127.0.0.1");  // what it resolves to, and checked as such
    }
    if (!ip) return "";  // a DNS name (ExternalName, the cluster's): resolved by nginx
    const char *special = special_address(*ip);
    bool own_address = special != nullptr;
    for (const IpAddress &own : own_addresses_) {
        own_address = own_address || (own.family == ip->family && own.bytes == ip->bytes);
    }
    if (!own_address && own_ports_.count(port)) {
        // any address of this host (the pod's own, where the operator
        // interfaces may listen on every address)
        char text[INET6_ADDRSTRLEN] = "";
        inet_ntop(ip->family == 4 ? AF_INET : AF_INET6, ip->bytes.data(), text, sizeof text);
        own_address = address_is_local_ != nullptr && address_is_local_(text);
    }
    if (own_address && own_ports_.count(port)) {
        return "is the gateway's own address and port (a request loop, or a way to its operator interfaces)";
    }
    if (special == nullptr) return "";
    for (const Cidr &c : allowed_) {
        if (c.contains(*ip)) return "";
    }
    return std::string("is ") + special
           + ", which the API server refuses for endpoints (the operator's --allow-endpoints admits one)";
}

std::vector<std::string> service_port_servers(const Service &svc, const ServicePort &port,
                                              const std::vector<const EndpointSlice *> &slices,
                                              const EndpointRules &rules, const Options &options,
                                              const EndpointRefused &refused)
{
    std::vector<std::string> servers;
    auto allowed = [&](const std::string &host, const std::string &address, int port_number, const std::string &owner) {
        const std::string why = rules.refusal(address, port_number);
        if (why.empty()) return true;
        refused(owner, host + ":" + std::to_string(port_number), why);
        return false;
    };
    for (const EndpointSlice *es : slices) {
        for (const EndpointPort &ep : es->ports) {
            if (ep.name != port.name) continue;
            for (const std::string &address : es->ready_addresses) {
                const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
                if (!allowed(host, address, ep.port, "EndpointSlice " + es->meta.key())) continue;
                servers.push_back(host + ":" + std::to_string(ep.port));
            }
        }
    }
    if (servers.empty() && svc.type == "ExternalName"
        && allowed(svc.external_name, svc.external_name, port.port, "Service " + svc.meta.key() + " (externalName)")) {
        servers.push_back(svc.external_name + ":" + std::to_string(port.port));
    }
    if (servers.empty() && !options.resolver.empty()) {
        // inside the cluster: the Service's stable ClusterIP through its DNS
        // name, resolved when nginx loads the configuration
        servers.push_back(svc.meta.name + "." + svc.meta.namespace_ + ".svc.cluster.local:" + std::to_string(port.port));
    }
    std::sort(servers.begin(), servers.end());
    servers.erase(std::unique(servers.begin(), servers.end()), servers.end());
    return servers;
}

}  // namespace g2n
