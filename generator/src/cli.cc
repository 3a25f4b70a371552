// The command line shared by the one-shot run and `gateway2nginx run`.
#include "cli.h"

#include <arpa/inet.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "resolve/endpoints.h"
#include "apply/isolate.h"
#include "apply/nginx_check.h"
#include "apply/output.h"
#include "parse/fields.h"
#include "resolve/resolve.h"

#ifndef GATEWAY2NGINX_VERSION
#define GATEWAY2NGINX_VERSION "0.1.0"
#endif

namespace fs = std::filesystem;

namespace g2n {

namespace {

// --help: this, the flags of both commands, those of run, supervise's,
// and what follows
const char *const kUsageHead = R"(Usage: gateway2nginx -f PATH [-f PATH ...] -o OUTDIR [options]
  or:  gateway2nginx run -f PATH [-f PATH ...] -o OUTDIR --reload PIDFILE --upstream-api LISTEN [options]
  or:  gateway2nginx run --kubeconfig FILE | --in-cluster -o OUTDIR --reload PIDFILE --upstream-api LISTEN [options]
  or:  gateway2nginx run -f - --watch-events -o OUTDIR --reload PIDFILE --upstream-api LISTEN [options]
  or:  gateway2nginx supervise -o OUTDIR --control SOCKET [options]
  or:  gateway2nginx alive FILE [SECONDS]
  or:  gateway2nginx convert -f PATH [-f PATH ...] [-o DIR] [options]

Reads Gateway API manifests (YAML as `kubectl get -o yaml` prints them,
multi-document or `kind: List`) and writes a complete nginx configuration
for nginx with ngx_http_gateway_tls_module, plus the status Kubernetes
would show.

)";
const char *const kRunFlagsHead = "\ngateway2nginx run also takes:\n";
const char *const kSuperviseHead = R"(
gateway2nginx supervise runs nginx for gateway2nginx run --nginx-control,
in a container of its own with no credential: it starts nginx on OUTDIR
(as soon as it holds a configuration), answers run's requests to reload it
on the unix socket SOCKET (mode 0660: its user and group), and ends when
nginx does. It takes:
)";
const char *const kUsageTail = R"(
gateway2nginx run stays beside nginx: it lists and watches every kind it
reads from the Kubernetes API (--kubeconfig, --in-cluster) as client-go
does, watches the files and directories (inotify), or reads
`kubectl get ... --watch -o json --output-watch-events` on standard input
(--watch-events), and after each quiet spell of
--debounce ms (default 250), or at the latest 4 of them after a change's
first event, applies the change: servers of upstreams alone
(EndpointSlices) are pushed through gateway_tls_upstream_api with no reload;
anything else is rendered, checked, swapped into OUTDIR and nginx reloaded,
the reload confirmed by its new workers. A change that changes nothing
nginx runs is neither pushed nor reloaded; OUTDIR and status.yaml always
hold the latest.

gateway2nginx convert turns Ingresses written for ingress-nginx into the
Gateway API objects that serve them here, and reports what became of every
annotation (gateway2nginx convert --help).

Output: nginx.conf (run as `nginx -p OUTDIR -c nginx.conf`), http.conf,
stream.conf, certs/, logs/, temp/, status.yaml, and the bearer tokens of
the status endpoint and the upstream API (status.token,
upstream-api.token, 0600), and the name Via carries (instance).
Exit status: 0 configuration written (rejected objects are in status.yaml),
1 bad input (FILE:LINE:COL: message), 2 nginx -t refuses the configuration even
without any route, policy or object of theirs (OUTDIR untouched); what it
refuses because of a tenant's object is rendered without that object.
)";

[[noreturn]] void usage_error(const std::string &what)
{
    std::cerr << "gateway2nginx: " << what << "\nTry 'gateway2nginx --help'.\n";
    std::exit(1);
}

bool valid_ip(const std::string &text)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

// A duration as Kubernetes' flags write it: 15s, 500ms, 1m
long duration_ms(const std::string &option, const std::string &text)
{
    char *end = nullptr;
    const double n = std::strtod(text.c_str(), &end);
    const std::string unit = end != nullptr ? end : "";
    const double scale = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : -1;
    if (text.empty() || end == text.c_str() || scale < 0 || !(n > 0) || n * scale > 3600000) {
        usage_error(option + " takes a duration such as 15s or 500ms, at most 1h");
    }
    return static_cast<long>(n * scale);
}

// An integer option in [lo, hi] (`unit`: what it counts, for the message)
int int_in(const std::string &option, const std::string &text, int lo, int hi, const char *unit = nullptr)
{
    char *end = nullptr;
    const long n = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || n < lo || n > hi) {
        usage_error(option + " takes " + std::to_string(lo) + " to " + std::to_string(hi)
                    + (unit != nullptr ? std::string(" (") + unit + ")" : ""));
    }
    return static_cast<int>(n);
}

// What parse_args keeps beside Args while it reads them
struct Seen {
    bool status_allow = false, listen_address = false;
};

// Who takes a flag: both commands, or gateway2nginx run alone
enum FlagScope { Both, Run };

// One row per flag: its names, what value it takes ("": none), the
// setter, and its lines in --help, in the order --help lists them.
template <class A>
struct Flag {
    const char *name;
    const char *short_name;
    const char *value;
    FlagScope scope;
    void (*set)(A &a, const std::string &value, Seen &seen);
    const char *help;
};

template <class A>
[[noreturn]] void print_usage(A &, const std::string &, Seen &)
{
    std::cout << usage_text();
    std::exit(0);
}

[[noreturn]] void print_version(Args &, const std::string &, Seen &)
{
    std::cout << "gateway2nginx " << GATEWAY2NGINX_VERSION << "\n";
    std::exit(0);
}

void set_gateway(Args &a, const std::string &v, Seen &)
{
    if (v.find('/') == std::string::npos) usage_error("--gateway takes NAMESPACE/NAME");
    a.options.gateways.push_back(v);
}

void set_listen_address(Args &a, const std::string &v, Seen &seen)
{
    if (seen.listen_address) {
        if (a.options.listen_address != "0.0.0.0" || v != "::" || a.options.listen_ipv6_too) {
            usage_error("--listen-address is given twice only as 0.0.0.0 and :: (every IPv4 and IPv6 address)");
        }
        a.options.listen_ipv6_too = true;
    } else {
        a.options.listen_address = v;
    }
    seen.listen_address = true;
}

void set_module_dir(Args &a, const std::string &v, Seen &)
{
    a.module_dir_given = true;
    a.options.module_dir = fs::absolute(v).lexically_normal().string();
    if (a.options.module_dir.size() > 1 && a.options.module_dir.back() == '/') a.options.module_dir.pop_back();
}

void set_allow_endpoints(Args &a, const std::string &v, Seen &)
{
    if (!parse_cidr(v)) usage_error("--allow-endpoints takes ADDRESS/PREFIX (127.0.0.0/8, ::1/128)");
    a.options.allow_endpoints.push_back(v);
}

// loopback only: who reaches it changes servers. Not a unix socket:
// nginx -t (run as nobody) binds it, and leaves it behind
void set_upstream_api(Args &a, const std::string &v, Seen &)
{
    if (v != "off" && v.rfind("127.", 0) != 0 && v.rfind("[::1]:", 0) != 0) {
        usage_error("--upstream-api takes a loopback ADDRESS:PORT (127.0.0.1:9114, [::1]:9114) or off");
    }
    a.options.upstream_api = v;
}

void set_status_address(Args &a, const std::string &v, Seen &)
{
    if (!valid_ip(v)) usage_error("--status-address takes an IP address, not " + v);
    a.options.status_addresses.push_back(v);
}

void set_status_address_service(Args &a, const std::string &v, Seen &)
{
    const size_t slash = v.find('/');
    if (slash == std::string::npos || !valid_dns1123_label(v.substr(0, slash))
        || !valid_dns1123_label(v.substr(slash + 1))) {
        usage_error("--status-address-service takes NAMESPACE/NAME, not " + v);
    }
    a.options.status_address_service = v;
}

// the default (loopback) until the first is given
void set_status_allow(Args &a, const std::string &v, Seen &seen)
{
    if (!seen.status_allow) a.options.status_allow.clear();
    seen.status_allow = true;
    a.options.status_allow.push_back(v);
}

void set_instance(Args &a, const std::string &v, Seen &)
{
    if (!valid_instance_name(v)) usage_error("--instance takes 1 to 64 of a-z, 0-9 and -");
    a.options.instance = v;
    a.options.instance_kept = false;
}

void set_watch_namespace(Args &a, const std::string &v, Seen &)
{
    if (!valid_dns1123_label(v)) usage_error("--watch-namespace takes a namespace's name, not " + v);
    a.watch_namespaces.push_back(v);
}

void set_gateway_service_external_name(Args &a, const std::string &v, Seen &)
{
    if (!valid_dns1123_subdomain(v)) usage_error("--gateway-service-external-name takes a DNS name, not " + v);
    a.gateway_service_external_name = v;
}

// clang-format off
const std::vector<Flag<Args>> kFlags = {
    {"--filename", "-f", "PATH", Both, [](Args &a, const std::string &v, Seen &) { a.inputs.push_back(v); },
     "a file, a directory (*.yaml, *.yml, *.json, recursively)\n"
     "or - for standard input; repeatable"},
    {"--output", "-o", "OUTDIR", Both, [](Args &a, const std::string &v, Seen &) { a.outdir = v; },
     "where to write; replaced as a whole, atomically"},
    {"--controller-name", "", "N", Both, [](Args &a, const std::string &v, Seen &) { a.options.controller_name = v; },
     "GatewayClasses of this controller are ours\n"
     "(default gateway2nginx.io/controller)"},
    {"--gateway-class", "", "NAME", Both, [](Args &a, const std::string &v, Seen &) { a.options.gateway_class = v; },
     "only Gateways of this GatewayClass"},
    {"--gateway", "", "NS/NAME", Both, set_gateway,
     "only this Gateway; repeatable"},
    {"--listen-address", "", "ADDR", Both, set_listen_address,
     "where listeners listen when a Gateway has no IP\n"
     "address (default 0.0.0.0); given twice, as\n"
     "0.0.0.0 and ::, on every IPv4 and every IPv6\n"
     "address (dual-stack: two sockets, each family's\n"
     "clients with their own addresses)"},
    {"--port-offset", "", "N", Both,
     [](Args &a, const std::string &v, Seen &) { a.options.port_offset = int_in("--port-offset", v, 0, 60000); },
     "add N to every listener port (unprivileged runs)"},
    {"--module-dir", "", "DIR", Both, set_module_dir,
     "where ngx_http_gateway_tls_module.so and\n"
     "ngx_stream_gateway_tls_module.so are (default:\n"
     "the --nginx binary's modules path, as nginx -V\n"
     "says; /usr/lib/nginx/modules if it cannot run)"},
    {"--allow-endpoints", "", "CIDR", Both, set_allow_endpoints,
     "endpoints may be loopback, link-local, multicast or\n"
     "unspecified addresses in CIDR (repeatable; for test\n"
     "rigs: the API server refuses them), never the\n"
     "gateway's own ports there"},
    {"--resolver", "", "ADDR", Both, [](Args &a, const std::string &v, Seen &) { a.options.resolver = v; },
     "nginx resolver for DNS names of backends"},
    {"--upstream-api", "", "ADDR:PORT", Both, set_upstream_api,
     "where gateway_tls_upstream_api answers, on\n"
     "loopback (gateway2nginx run pushes endpoint\n"
     "changes there, without reloads); replaceable\n"
     "upstreams get a zone; default off. Callers need\n"
     "the bearer token in OUTDIR/upstream-api.token"},
    {"--routes", "", "locations|table", Both,
     [](Args &a, const std::string &v, Seen &) {
         if (v != "locations" && v != "table") usage_error("--routes takes locations or table");
         a.options.routes = v;
     },
     "how HTTPRoutes are served: nginx locations\n"
     "(default), or the module's route table, which\n"
     "OUTDIR/route-tables.json fills through the\n"
     "upstream API (needs --upstream-api; what the\n"
     "table cannot serve stays locations)"},
    {"--spare-backends", "", "N", Both,
     [](Args &a, const std::string &v, Seen &) { a.options.spare_backends = int_in("--spare-backends", v, 0, 4096); },
     "with --routes table: N spare upstreams that take\n"
     "TLS and N plaintext ones, which the upstream API\n"
     "makes backends with no reload; default 0"},
    {"--status-listen", "", "ADDR:PORT", Both,
     [](Args &a, const std::string &v, Seen &) { a.options.status_listen = v; },
     "where gateway_tls_status answers (/status: JSON,\n"
     "/status?format=prometheus), default 127.0.0.1:9113;\n"
     "\"off\" for none"},
    {"--status-address", "", "IP", Both, set_status_address,
     "where clients reach a Gateway that has no address of\n"
     "its own and listens on every address (a load\n"
     "balancer's or a node's): its status.addresses;\n"
     "repeatable"},
    {"--status-address-service", "", "NAMESPACE/NAME", Both, set_status_address_service,
     "without --status-address: the addresses of the\n"
     "load balancer in front of that Service (its\n"
     "status.loadBalancer.ingress)"},
    {"--status-allow", "", "CIDR", Both, set_status_allow,
     "who may read it (repeatable; default 127.0.0.1, ::1),\n"
     "with the bearer token in OUTDIR/status.token"},
    {"--instance", "", "NAME", Both, set_instance,
     "what this gateway adds to Via on requests it\n"
     "proxies (gateway2nginx-NAME; its listeners answer\n"
     "a request that holds it 508); default random,\n"
     "kept in OUTDIR/instance"},
    {"--jobs", "-j", "N", Both,
     [](Args &a, const std::string &v, Seen &) { a.jobs = static_cast<unsigned>(int_in("--jobs", v, 1, 64)); },
     "threads scanning YAML (default: the CPUs, at most 4);\n"
     "the output does not depend on it"},
    {"--check", "", "", Both, [](Args &a, const std::string &, Seen &) { a.check = true; },
     "run nginx -t on the result before replacing OUTDIR"},
    {"--nginx", "", "PATH", Both, [](Args &a, const std::string &v, Seen &) { a.nginx = v; },
     "the nginx that will run the configuration: its\n"
     "build (nginx -V) says where its modules are,\n"
     "and --check runs it (default /usr/sbin/nginx)"},
    {"--reload", "", "PIDFILE", Both, [](Args &a, const std::string &v, Seen &) { a.reload_pidfile = v; },
     "after a successful check, send SIGHUP to that nginx"},
    {"--version", "", "", Both, print_version,
     "print the version"},
    {"--help", "-h", "", Both, print_usage<Args>,
     "print this help"},
    {"--debounce", "", "MS", Run,
     [](Args &a, const std::string &v, Seen &) { a.debounce_ms = int_in("--debounce", v, 0, 60000, "ms"); },
     "apply a change once MS ms pass without another\n"
     "(default 250)"},
    {"--health-listen", "", "ADDR:PORT", Run,
     [](Args &a, const std::string &v, Seen &) { a.options.health_listen = v; },
     "serve /healthz, /readyz (nginx serves a complete\n"
     "configuration) and, without --metrics-listen,\n"
     "/metrics (Prometheus) there"},
    {"--metrics-listen", "", "ADDR:PORT", Run,
     [](Args &a, const std::string &v, Seen &) { a.options.metrics_listen = v; },
     "serve /metrics there, apart from the probes"},
    {"--alive-file", "", "FILE", Run, [](Args &a, const std::string &v, Seen &) { a.alive_file = v; },
     "write there, each second, that the main loop\n"
     "turns: `gateway2nginx alive FILE` exits 0 while\n"
     "it did within SECONDS (default 30), a liveness\n"
     "probe that needs no port"},
    {"--start-nginx", "", "", Run, [](Args &a, const std::string &, Seen &) { a.start_nginx = true; },
     "start nginx (--nginx) on OUTDIR once the first\n"
     "configuration is written, as a child that runs\n"
     "in the foreground, reload it (instead of\n"
     "--reload), stop it gracefully on SIGTERM (what is\n"
     "in flight completes), and end when it ends"},
    {"--shutdown-delay", "", "D", Run,
     [](Args &a, const std::string &v, Seen &) {
         a.shutdown_delay_ms = duration_ms("--shutdown-delay", v);
     },
     "with --start-nginx: on SIGTERM, /readyz answers\n"
     "503 and nginx still accepts for D (5s, 500ms;\n"
     "a second SIGTERM ends it sooner), so that\n"
     "endpoints and load balancers let go of the pod\n"
     "first; then nginx drains"},
    {"--nginx-control", "", "SOCKET", Run, [](Args &a, const std::string &v, Seen &) { a.nginx_control = v; },
     "instead of --start-nginx: nginx runs apart (its\n"
     "own container and user), started and reloaded by\n"
     "gateway2nginx supervise, asked at SOCKET; OUTDIR\n"
     "is written readable by the group (certificates\n"
     "and tokens 0640), its logs/ and temp/ writable"},
    {"--kubeconfig", "", "FILE", Run, [](Args &a, const std::string &v, Seen &) { a.kubeconfig = v; },
     "list and watch the objects of the API server of\n"
     "FILE's current context (certificates, tokens and\n"
     "token files; no exec or auth-provider plugins)"},
    {"--in-cluster", "", "", Run, [](Args &a, const std::string &, Seen &) { a.in_cluster = true; },
     "... of the cluster this pod runs in (its service\n"
     "account token, read again as it rotates; its CA)"},
    {"--watch-namespace", "", "NS", Run, set_watch_namespace,
     "with either: list and watch the namespaced kinds\n"
     "in NS only (repeatable; Gateways, routes,\n"
     "policies, Services, Secrets... elsewhere are not\n"
     "seen), and the --status-address-service's\n"
     "Service; RBAC may then grant them per namespace"},
    {"--kube-api-qps", "", "QPS", Run,
     [](Args &a, const std::string &v, Seen &) {
         char *end = nullptr;
         const double qps = std::strtod(v.c_str(), &end);
         if (v.empty() || *end != '\0' || !(qps >= 0.1 && qps <= 1000)) usage_error("--kube-api-qps takes 0.1 to 1000");
         a.kube_api_qps = qps;
     },
     "status writes a second to the API server\n"
     "(default 20); new and changed statuses go first"},
    {"--kube-api-burst", "", "N", Run,
     [](Args &a, const std::string &v, Seen &) { a.kube_api_burst = int_in("--kube-api-burst", v, 1, 10000); },
     "status writes at once beyond that (default 40)"},
    {"--leader-elect-resource-namespace", "", "NS", Run,
     [](Args &a, const std::string &v, Seen &) { a.lease_namespace = v; },
     "the namespace of the Lease that elects the one\n"
     "replica writing status (default: the pod's, else\n"
     "default)"},
    {"--leader-elect-resource-name", "", "NAME", Run, [](Args &a, const std::string &v, Seen &) { a.lease_name = v; },
     "its name (default gateway2nginx)"},
    {"--leader-elect-lease-duration", "", "D", Run,
     [](Args &a, const std::string &v, Seen &) {
         a.lease_duration_ms = duration_ms("--leader-elect-lease-duration", v);
     },
     "how long a Lease not renewed holds (default 15s)"},
    {"--leader-elect-renew-deadline", "", "D", Run,
     [](Args &a, const std::string &v, Seen &) {
         a.renew_deadline_ms = duration_ms("--leader-elect-renew-deadline", v);
     },
     "the leader stops leading when it has not renewed\n"
     "for D (default 10s)"},
    {"--leader-elect-retry-period", "", "D", Run,
     [](Args &a, const std::string &v, Seen &) {
         a.retry_period_ms = duration_ms("--leader-elect-retry-period", v);
     },
     "how often the Lease is renewed or tried (default\n"
     "2s), as client-go's"},
    {"--gateway-service-external-name", "", "HOST", Run, set_gateway_service_external_name,
     "with --kubeconfig or --in-cluster: keep for each\n"
     "Gateway it accepts a Service in its namespace,\n"
     "GATEWAY-CLASS, an ExternalName alias of HOST (the\n"
     "Service in front of nginx), labelled\n"
     "gateway.networking.k8s.io/gateway-name and with\n"
     "the Gateway's spec.infrastructure labels and\n"
     "annotations; deleted when the Gateway goes"},
    {"--watch-events", "", "", Run, [](Args &a, const std::string &, Seen &) { a.watch_events = true; },
     "standard input (-f -) is what `kubectl get --watch\n"
     "-o json --output-watch-events` prints (one kind)"},
};

const std::vector<Flag<SuperviseArgs>> kSuperviseFlags = {
    {"--output", "-o", "OUTDIR", Both, [](SuperviseArgs &a, const std::string &v, Seen &) { a.outdir = v; },
     "run's OUTDIR"},
    {"--control", "", "SOCKET", Both, [](SuperviseArgs &a, const std::string &v, Seen &) { a.control = v; },
     "where it answers (run's --nginx-control)"},
    {"--shutdown-delay", "", "D", Both,
     [](SuperviseArgs &a, const std::string &v, Seen &) { a.shutdown_delay_ms = duration_ms("--shutdown-delay", v); },
     "on SIGTERM, nginx still accepts for D (a second\n" "SIGTERM ends it sooner), then drains"},
    {"--nginx", "", "PATH", Both, [](SuperviseArgs &a, const std::string &v, Seen &) { a.nginx = v; },
     "as gateway2nginx run takes it"},
    {"--alive-file", "", "FILE", Both, [](SuperviseArgs &a, const std::string &v, Seen &) { a.alive_file = v; },
     "as gateway2nginx run takes it"},
    {"--help", "-h", "", Both, print_usage<SuperviseArgs>,
     "print this help"},
};
// clang-format on

// The --help lines of the flags of `scope`: names and value from column
// 2, help from column 28 (on a line of its own when the names reach it)
template <class A>
std::string flag_lines(const std::vector<Flag<A>> &flags, FlagScope scope)
{
    std::string out;
    for (const Flag<A> &f : flags) {
        if (f.scope != scope) continue;
        std::string names = std::string("  ") + (*f.short_name ? std::string(f.short_name) + ", " : "    ") + f.name
                            + (*f.value ? std::string(" ") + f.value : "");
        names += names.size() <= 26 ? std::string(28 - names.size(), ' ') : "\n" + std::string(28, ' ');
        std::string help = f.help;
        for (size_t nl = 0; (nl = help.find('\n', nl)) != std::string::npos; nl += 29) help.insert(nl + 1, 28, ' ');
        out += names + help + "\n";
    }
    return out;
}

// argv read by `flags` (those of Run only when `run`) into `a`
template <class A>
void read_flags(const std::vector<Flag<A>> &flags, int argc, char **argv, bool run, const std::string &command, A *a)
{
    Seen seen;
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        auto f = std::find_if(flags.begin(), flags.end(), [&](const Flag<A> &f) {
            return (arg == f.name || (*f.short_name != '\0' && arg == f.short_name)) && (run || f.scope == Both);
        });
        if (f == flags.end()) usage_error(command + "unknown option " + arg);
        std::string value;
        if (*f->value != '\0') {
            if (i + 1 >= argc) usage_error("option " + arg + " needs a value");
            value = argv[++i];
        }
        f->set(*a, value, seen);
    }
}

}  // namespace

const char *usage_text()
{
    static const std::string usage = kUsageHead + flag_lines(kFlags, Both) + kRunFlagsHead + flag_lines(kFlags, Run)
                                     + kSuperviseHead + flag_lines(kSuperviseFlags, Both) + kUsageTail;
    return usage.c_str();
}

Args parse_args(int argc, char **argv, bool run)
{
    Args a;
    a.run = run;
    read_flags(kFlags, argc, argv, run, "", &a);
    if (a.inputs.empty() && !a.reads_api()) usage_error("no input: give -f PATH");
    if (a.outdir.empty()) usage_error("no output: give -o OUTDIR");
    if (a.options.routes == "table" && a.options.upstream_api == "off") {
        usage_error("--routes table needs --upstream-api ADDRESS:PORT: the table is filled through it");
    }
    if (a.options.spare_backends > 0 && a.options.routes != "table") {
        usage_error("--spare-backends needs --routes table: only a table rule sends to a spare");
    }
    if (!a.reload_pidfile.empty()) a.check = true;
    if (run) {
        if (a.start_nginx && !a.reload_pidfile.empty()) {
            usage_error("--start-nginx reloads the nginx it starts: no --reload");
        }
        if (!a.nginx_control.empty() && (a.start_nginx || !a.reload_pidfile.empty())) {
            usage_error("--nginx-control asks gateway2nginx supervise: no --start-nginx or --reload");
        }
        if (a.shutdown_delay_ms > 0 && !a.start_nginx) {
            usage_error("--shutdown-delay is for the nginx run starts (--start-nginx); supervise has its own");
        }
        a.options.shared_with_group = !a.nginx_control.empty();
        if (a.start_nginx || !a.nginx_control.empty()) {
            a.reload_pidfile = (fs::absolute(a.outdir) / "nginx.pid").string();  // nginx.conf's pid
            a.check = true;
        }
        if (a.reload_pidfile.empty()) {
            usage_error("gateway2nginx run needs --reload PIDFILE, --start-nginx or --nginx-control SOCKET");
        }
        if (a.options.upstream_api == "off") usage_error("gateway2nginx run needs --upstream-api ADDRESS:PORT");
        bool stdin_input = std::find(a.inputs.begin(), a.inputs.end(), "-") != a.inputs.end();
        const int sources = (a.watch_events || stdin_input ? 1 : 0) + (a.inputs.empty() || stdin_input ? 0 : 1)
                            + (a.kubeconfig.empty() ? 0 : 1) + (a.in_cluster ? 1 : 0);
        if (!(a.retry_period_ms < a.renew_deadline_ms && a.renew_deadline_ms < a.lease_duration_ms)) {
            usage_error("leader election needs retry period < renew deadline < lease duration");
        }
        if (sources != 1 || a.watch_events != stdin_input || (a.watch_events && a.inputs.size() != 1)) {
            usage_error("gateway2nginx run reads one of: --kubeconfig FILE, --in-cluster, -f - --watch-events, "
                        "or files and directories it watches");
        }
        if (!a.watch_namespaces.empty() && !a.reads_api()) {
            usage_error("--watch-namespace is for the API server: with --kubeconfig or --in-cluster");
        }
        if (!a.gateway_service_external_name.empty() && !a.reads_api()) {
            usage_error("--gateway-service-external-name writes to the API server: with --kubeconfig or --in-cluster");
        }
    }
    load_operator_tokens(fs::absolute(a.outdir), &a.options);
    // module paths as the nginx that will load them was built with
    if (std::optional<NginxBuild> build = nginx_build(a.nginx)) {
        if (!a.module_dir_given) a.options.module_dir = build->modules_path;
        follow_nginx_build(*build, &a.options);
    }
    return a;
}

SuperviseArgs parse_supervise_args(int argc, char **argv)
{
    SuperviseArgs a;
    read_flags(kSuperviseFlags, argc, argv, false, "gateway2nginx supervise: ", &a);
    if (a.outdir.empty()) usage_error("gateway2nginx supervise needs -o OUTDIR (run's)");
    if (a.control.empty()) usage_error("gateway2nginx supervise needs --control SOCKET (run's --nginx-control)");
    return a;
}

}  // namespace g2n
