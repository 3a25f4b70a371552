// How gateway2nginx was asked to run (the command line, cli.h): what
// resolve and render take besides the objects, and the host facts they
// may ask about.
#pragma once

#include <string>
#include <vector>

namespace g2n {

// whether ADDRESS can be bound on this host (apply/nginx_check.cc)
bool host_address_is_local(const std::string &address);

// nginx 1.25.1: the `http2` directive, and HTTP/1.1 and HTTP/2 by prior
// knowledge on one cleartext port
inline constexpr long kNginxHttp2Directive = 1025001;
// the stream module picks a server by SNI (server_name, listen default_server)
inline constexpr long kNginxStreamServerName = 1025005;

struct Options {
    std::string controller_name = "gateway2nginx.io/controller";
    std::string gateway_class;             // empty: any of ours
    std::vector<std::string> gateways;     // NAMESPACE/NAME; empty: all
    std::string listen_address = "0.0.0.0";
    // and, beside 0.0.0.0, [::] (--listen-address 0.0.0.0 --listen-address ::)
    bool listen_ipv6_too = false;
    int port_offset = 0;
    std::string module_dir = "/usr/lib/nginx/modules";  // our modules
    // nginx's stream module, loaded before ours; empty: built into nginx
    std::string stream_module = "/usr/lib/nginx/modules/ngx_stream_module.so";
    // the version of the nginx that runs the configuration (1022001 is
    // 1.22.1, Debian 12's), for directives that changed
    long nginx_version = 1022001;
    std::string resolver;
    // special ranges (loopback, ...) endpoints may point into: CIDRs, for
    // test rigs (--allow-endpoints); never the gateway's own ports there
    std::vector<std::string> allow_endpoints;
    // where clients reach a Gateway with no address of its own that
    // listens on every address (a load balancer's, a node's): its
    // status.addresses (--status-address)
    std::vector<std::string> status_addresses;
    // or, without those, the load balancer in front of this Service
    // ("namespace/name"; --status-address-service)
    std::string status_address_service;
    std::string status_listen = "127.0.0.1:9113";  // gateway_tls_status; "off": none
    // who may read it besides its token (gateway_tls_status_allow)
    std::vector<std::string> status_allow = {"127.0.0.1", "::1"};
    // where gateway_tls_upstream_api answers (a loopback ADDR:PORT);
    // "off": none, and upstreams get no zone
    std::string upstream_api = "off";
    // "table": servers whose routes the module's route table can serve get
    // one location that routes by it, and OUTDIR/route-tables.json is the
    // upstream API's body that fills it (plan/route_tables.h); "locations":
    // every route a location
    std::string routes = "locations";
    // --routes table: spare upstreams rendered ahead of need, N that take
    // TLS and N plaintext, that the upstream API makes backends (servers,
    // trust, a table rule) with no reload (plan/upstreams.h)
    int spare_backends = 0;
    // gateway2nginx run's probes, /healthz and /readyz (--health-listen),
    // and its /metrics (--metrics-listen; empty: beside the probes)
    std::string health_listen;
    std::string metrics_listen;
    // render replaceable upstreams without their servers: what a change
    // must alter for a reload to be needed (gateway2nginx run)
    bool endpoint_skeleton = false;
    // the bearer tokens of the upstream API and of the status endpoint,
    // written to OUTDIR (kUpstreamApiTokenFile, kStatusTokenFile, 0600,
    // 0640 shared_with_group);
    // never rendered into the configuration, which names only the files
    std::string upstream_api_token;
    std::string status_token;
    // nginx runs as another user of OUTDIR's group (run --nginx-control):
    // what it reads is written readable by the group (0640, certs/ 0750),
    // OUTDIR, logs/ and temp/ writable (0770); else the owner's alone
    bool shared_with_group = false;
    // the name this gateway adds to Via on what it proxies
    // ("gateway2nginx-NAME"); its listeners refuse a request whose Via
    // holds it (508), a loop back to itself. Kept in OUTDIR (kInstanceFile)
    // unless given (--instance)
    std::string instance;
    bool instance_kept = true;
    // whether a Gateway's static address is one of this host's (where
    // nginx can listen); resolve asks, the host answers
    bool (*address_is_local)(const std::string &address) = host_address_is_local;
};

// The interfaces gateway2nginx and its nginx serve the operator on, by the
// flag that places them. Their TCP ports belong to no listener and to no
// endpoint (operator_ports(), resolve/endpoints.h); a flag that listens
// belongs here.
struct OperatorInterface {
    const char *flag;
    std::string Options::*listen;
};
inline const OperatorInterface kOperatorInterfaces[] = {
    {"--upstream-api", &Options::upstream_api},
    {"--status-listen", &Options::status_listen},
    {"--health-listen", &Options::health_listen},
    {"--metrics-listen", &Options::metrics_listen},
};

inline constexpr const char *kInstanceFile = "instance";

inline constexpr const char *kUpstreamApiTokenFile = "upstream-api.token";
inline constexpr const char *kStatusTokenFile = "status.token";
inline constexpr const char *kRouteTablesFile = "route-tables.json";  // --routes table

}  // namespace g2n
