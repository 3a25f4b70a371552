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

const char *const kUsage = R"(Usage: gateway2nginx -f PATH [-f PATH ...] -o OUTDIR [options]
  or:  gateway2nginx run -f PATH [-f PATH ...] -o OUTDIR --reload PIDFILE --upstream-api LISTEN [options]
  or:  gateway2nginx run --kubeconfig FILE | --in-cluster -o OUTDIR --reload PIDFILE --upstream-api LISTEN [options]
  or:  gateway2nginx run -f - --watch-events -o OUTDIR --reload PIDFILE --upstream-api LISTEN [options]
  or:  gateway2nginx supervise -o OUTDIR --control SOCKET [options]
  or:  gateway2nginx alive FILE [SECONDS]

Reads Gateway API manifests (YAML as `kubectl get -o yaml` prints them,
multi-document or `kind: List`) and writes a complete nginx configuration
for nginx with ngx_http_gateway_tls_module, plus the status Kubernetes
would show.

  -f, --filename PATH       a file, a directory (*.yaml, *.yml, *.json, recursively)
                            or - for standard input; repeatable
  -o, --output OUTDIR       where to write; replaced as a whole, atomically
      --controller-name N   GatewayClasses of this controller are ours
                            (default gateway2nginx.io/controller)
      --gateway-class NAME  only Gateways of this GatewayClass
      --gateway NS/NAME     only this Gateway; repeatable
      --listen-address ADDR
                            where listeners listen when a Gateway has no IP
                            address (default 0.0.0.0); given twice, as
                            0.0.0.0 and ::, on every IPv4 and every IPv6
                            address (dual-stack: two sockets, each family's
                            clients with their own addresses)
      --port-offset N       add N to every listener port (unprivileged runs)
      --module-dir DIR      where ngx_http_gateway_tls_module.so and
                            ngx_stream_gateway_tls_module.so are (default:
                            the --nginx binary's modules path, as nginx -V
                            says; /usr/lib/nginx/modules if it cannot run)
      --allow-endpoints CIDR
                            endpoints may be loopback, link-local, multicast or
                            unspecified addresses in CIDR (repeatable; for test
                            rigs: the API server refuses them), never the
                            gateway's own ports there
      --resolver ADDR       nginx resolver for DNS names of backends
      --upstream-api ADDR:PORT
                            where gateway_tls_upstream_api answers, on
                            loopback (gateway2nginx run pushes endpoint
                            changes there, without reloads); replaceable
                            upstreams get a zone; default off. Callers need
                            the bearer token in OUTDIR/upstream-api.token
      --status-listen ADDR:PORT
                            where gateway_tls_status answers (/status: JSON,
                            /status?format=prometheus), default 127.0.0.1:9113;
                            "off" for none
      --status-address IP   where clients reach a Gateway that has no address of
                            its own and listens on every address (a load
                            balancer's or a node's): its status.addresses;
                            repeatable
      --status-address-service NAMESPACE/NAME
                            without --status-address: the addresses of the
                            load balancer in front of that Service (its
                            status.loadBalancer.ingress)
      --status-allow CIDR   who may read it (repeatable; default 127.0.0.1, ::1),
                            with the bearer token in OUTDIR/status.token
      --instance NAME       what this gateway adds to Via on requests it
                            proxies (gateway2nginx-NAME; its listeners answer
                            a request that holds it 508); default random,
                            kept in OUTDIR/instance
  -j, --jobs N              threads scanning YAML (default: the CPUs, at most 4);
                            the output does not depend on it
      --check               run nginx -t on the result before replacing OUTDIR
      --nginx PATH          the nginx that will run the configuration: its
                            build (nginx -V) says where its modules are,
                            and --check runs it (default /usr/sbin/nginx)
      --reload PIDFILE      after a successful check, send SIGHUP to that nginx
      --version             print the version
  -h, --help                print this help

gateway2nginx run also takes:
      --debounce MS         apply a change once MS ms pass without another
                            (default 250)
      --health-listen ADDR:PORT
                            serve /healthz, /readyz (nginx serves a complete
                            configuration) and, without --metrics-listen,
                            /metrics (Prometheus) there
      --metrics-listen ADDR:PORT
                            serve /metrics there, apart from the probes
      --alive-file FILE     write there, each second, that the main loop
                            turns: `gateway2nginx alive FILE` exits 0 while
                            it did within SECONDS (default 30), a liveness
                            probe that needs no port
      --start-nginx         start nginx (--nginx) on OUTDIR once the first
                            configuration is written, as a child that runs
                            in the foreground, reload it (instead of
                            --reload), stop it gracefully on SIGTERM (what is
                            in flight completes), and end when it ends
      --shutdown-delay D    with --start-nginx: on SIGTERM, /readyz answers
                            503 and nginx still accepts for D (5s, 500ms;
                            a second SIGTERM ends it sooner), so that
                            endpoints and load balancers let go of the pod
                            first; then nginx drains
      --nginx-control SOCKET
                            instead of --start-nginx: nginx runs apart (its
                            own container and user), started and reloaded by
                            gateway2nginx supervise, asked at SOCKET; OUTDIR
                            is written readable by the group (certificates
                            and tokens 0640), its logs/ and temp/ writable
      --kubeconfig FILE     list and watch the objects of the API server of
                            FILE's current context (certificates, tokens and
                            token files; no exec or auth-provider plugins)
      --in-cluster          ... of the cluster this pod runs in (its service
                            account token, read again as it rotates; its CA)
      --watch-namespace NS  with either: list and watch the namespaced kinds
                            in NS only (repeatable; Gateways, routes,
                            policies, Services, Secrets... elsewhere are not
                            seen), and the --status-address-service's
                            Service; RBAC may then grant them per namespace
      --leader-elect-resource-namespace NS
                            the namespace of the Lease that elects the one
                            replica writing status (default: the pod's, else
                            default)
      --leader-elect-resource-name NAME
                            its name (default gateway2nginx)
      --leader-elect-lease-duration D
                            how long a Lease not renewed holds (default 15s)
      --leader-elect-renew-deadline D
                            the leader stops leading when it has not renewed
                            for D (default 10s)
      --leader-elect-retry-period D
                            how often the Lease is renewed or tried (default
                            2s), as client-go's
      --gateway-service-external-name HOST
                            with --kubeconfig or --in-cluster: keep for each
                            Gateway it accepts a Service in its namespace,
                            GATEWAY-CLASS, an ExternalName alias of HOST (the
                            Service in front of nginx), labelled
                            gateway.networking.k8s.io/gateway-name and with
                            the Gateway's spec.infrastructure labels and
                            annotations; deleted when the Gateway goes
      --watch-events        standard input (-f -) is what `kubectl get --watch
                            -o json --output-watch-events` prints (one kind)

gateway2nginx supervise runs nginx for gateway2nginx run --nginx-control,
in a container of its own with no credential: it starts nginx on OUTDIR
(as soon as it holds a configuration), answers run's requests to reload it
on the unix socket SOCKET (mode 0660: its user and group), and ends when
nginx does. It takes -o OUTDIR (run's), and:
      --control SOCKET      where it answers (run's --nginx-control)
      --shutdown-delay D    on SIGTERM, nginx still accepts for D (a second
                            SIGTERM ends it sooner), then drains
      --nginx PATH, --alive-file FILE
                            as gateway2nginx run takes them

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

}  // namespace

const char *usage_text() { return kUsage; }

Args parse_args(int argc, char **argv, bool run)
{
    Args a;
    a.run = run;
    bool status_allow_given = false, listen_address_given = false;
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error("option " + arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            std::exit(0);
        } else if (arg == "--version") {
            std::cout << "gateway2nginx " << GATEWAY2NGINX_VERSION << "\n";
            std::exit(0);
        } else if (arg == "-f" || arg == "--filename") {
            a.inputs.push_back(value());
        } else if (arg == "-o" || arg == "--output") {
            a.outdir = value();
        } else if (arg == "--controller-name") {
            a.options.controller_name = value();
        } else if (arg == "--gateway-class") {
            a.options.gateway_class = value();
        } else if (arg == "--gateway") {
            std::string gw = value();
            if (gw.find('/') == std::string::npos) usage_error("--gateway takes NAMESPACE/NAME");
            a.options.gateways.push_back(gw);
        } else if (arg == "--listen-address") {
            const std::string address = value();
            if (listen_address_given) {
                if (a.options.listen_address != "0.0.0.0" || address != "::" || a.options.listen_ipv6_too) {
                    usage_error("--listen-address is given twice only as 0.0.0.0 and :: (every IPv4 and IPv6 address)");
                }
                a.options.listen_ipv6_too = true;
            } else {
                a.options.listen_address = address;
            }
            listen_address_given = true;
        } else if (arg == "-j" || arg == "--jobs") {
            std::string v = value();
            char *end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 1 || n > 64) usage_error("--jobs takes 1 to 64");
            a.jobs = static_cast<unsigned>(n);
        } else if (arg == "--port-offset") {
            std::string v = value();
            char *end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 0 || n > 60000) usage_error("--port-offset takes 0 to 60000");
            a.options.port_offset = static_cast<int>(n);
        } else if (arg == "--module-dir") {
            a.module_dir_given = true;
            a.options.module_dir = fs::absolute(value()).lexically_normal().string();
            if (a.options.module_dir.size() > 1 && a.options.module_dir.back() == '/') {
                a.options.module_dir.pop_back();
            }
        } else if (arg == "--allow-endpoints") {
            a.options.allow_endpoints.push_back(value());
            if (!parse_cidr(a.options.allow_endpoints.back())) {
                usage_error("--allow-endpoints takes ADDRESS/PREFIX (127.0.0.0/8, ::1/128)");
            }
        } else if (arg == "--resolver") {
            a.options.resolver = value();
        } else if (run && arg == "--debounce") {
            std::string v = value();
            char *end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 0 || n > 60000) usage_error("--debounce takes 0 to 60000 (ms)");
            a.debounce_ms = static_cast<int>(n);
        } else if (run && arg == "--watch-events") {
            a.watch_events = true;
        } else if (run && arg == "--leader-elect-resource-namespace") {
            a.lease_namespace = value();
        } else if (run && arg == "--leader-elect-resource-name") {
            a.lease_name = value();
        } else if (run && arg == "--leader-elect-lease-duration") {
            a.lease_duration_ms = duration_ms(arg, value());
        } else if (run && arg == "--leader-elect-renew-deadline") {
            a.renew_deadline_ms = duration_ms(arg, value());
        } else if (run && arg == "--leader-elect-retry-period") {
            a.retry_period_ms = duration_ms(arg, value());
        } else if (run && arg == "--start-nginx") {
            a.start_nginx = true;
        } else if (run && arg == "--nginx-control") {
            a.nginx_control = value();
        } else if (run && arg == "--shutdown-delay") {
            a.shutdown_delay_ms = duration_ms(arg, value());
        } else if (run && arg == "--health-listen") {
            a.options.health_listen = value();
        } else if (run && arg == "--metrics-listen") {
            a.options.metrics_listen = value();
        } else if (run && arg == "--alive-file") {
            a.alive_file = value();
        } else if (run && arg == "--kubeconfig") {
            a.kubeconfig = value();
        } else if (run && arg == "--in-cluster") {
            a.in_cluster = true;
        } else if (run && arg == "--watch-namespace") {
            a.watch_namespaces.push_back(value());
            if (!valid_dns1123_label(a.watch_namespaces.back())) {
                usage_error("--watch-namespace takes a namespace's name, not " + a.watch_namespaces.back());
            }
        } else if (run && arg == "--gateway-service-external-name") {
            a.gateway_service_external_name = value();
            if (!valid_dns1123_subdomain(a.gateway_service_external_name)) {
                usage_error("--gateway-service-external-name takes a DNS name, not " + a.gateway_service_external_name);
            }
        } else if (arg == "--upstream-api") {
            // loopback only: who reaches it changes servers. Not a unix
            // socket: nginx -t (run as nobody) binds it, and leaves it behind
            a.options.upstream_api = value();
            const std::string &v = a.options.upstream_api;
            if (v != "off" && v.rfind("127.", 0) != 0 && v.rfind("[::1]:", 0) != 0) {
                usage_error("--upstream-api takes a loopback ADDRESS:PORT (127.0.0.1:9114, [::1]:9114) or off");
            }
        } else if (arg == "--instance") {
            a.options.instance = value();
            a.options.instance_kept = false;
            if (!valid_instance_name(a.options.instance)) usage_error("--instance takes 1 to 64 of a-z, 0-9 and -");
        } else if (arg == "--status-listen") {
            a.options.status_listen = value();
        } else if (arg == "--status-address") {
            const std::string address = value();
            if (!valid_ip(address)) usage_error("--status-address takes an IP address, not " + address);
            a.options.status_addresses.push_back(address);
        } else if (arg == "--status-address-service") {
            const std::string service = value();
            const size_t slash = service.find('/');
            if (slash == std::string::npos || !valid_dns1123_label(service.substr(0, slash))
                || !valid_dns1123_label(service.substr(slash + 1))) {
                usage_error("--status-address-service takes NAMESPACE/NAME, not " + service);
            }
            a.options.status_address_service = service;
        } else if (arg == "--status-allow") {
            if (!status_allow_given) a.options.status_allow.clear();
            status_allow_given = true;
            a.options.status_allow.push_back(value());
        } else if (arg == "--check") {
            a.check = true;
        } else if (arg == "--nginx") {
            a.nginx = value();
        } else if (arg == "--reload") {
            a.reload_pidfile = value();
        } else {
            usage_error("unknown option " + arg);
        }
    }
    if (a.inputs.empty() && !a.reads_api()) usage_error("no input: give -f PATH");
    if (a.outdir.empty()) usage_error("no output: give -o OUTDIR");
    if (!a.reload_pidfile.empty()) a.check = true;
    if (run) {
        if (a.start_nginx && !a.reload_pidfile.empty()) usage_error("--start-nginx reloads the nginx it starts: no --reload");
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
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error("option " + arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            std::exit(0);
        } else if (arg == "-o" || arg == "--output") {
            a.outdir = value();
        } else if (arg == "--control") {
            a.control = value();
        } else if (arg == "--nginx") {
            a.nginx = value();
        } else if (arg == "--alive-file") {
            a.alive_file = value();
        } else if (arg == "--shutdown-delay") {
            a.shutdown_delay_ms = duration_ms(arg, value());
        } else {
            usage_error("gateway2nginx supervise: unknown option " + arg);
        }
    }
    if (a.outdir.empty()) usage_error("gateway2nginx supervise needs -o OUTDIR (run's)");
    if (a.control.empty()) usage_error("gateway2nginx supervise needs --control SOCKET (run's --nginx-control)");
    return a;
}

}  // namespace g2n
