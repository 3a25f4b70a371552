// The command line shared by the one-shot run and `gateway2nginx run`:
// what it says to do, and to which nginx.
#pragma once

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "options.h"

namespace g2n {

struct Args {
    std::vector<std::string> inputs;
    std::string outdir;
    Options options;
    unsigned jobs = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    bool check = false;
    bool module_dir_given = false;
    std::string nginx = "/usr/sbin/nginx";
    std::string reload_pidfile;
    // gateway2nginx run
    bool run = false;
    bool watch_events = false;  // standard input is kubectl's --output-watch-events stream
    std::string kubeconfig;     // list and watch the API server of this kubeconfig's current context
    bool in_cluster = false;    // ... or of the pod this runs in
    bool reads_api() const { return in_cluster || !kubeconfig.empty(); }
    // only these namespaces' objects listed and watched (none: every namespace's)
    std::vector<std::string> watch_namespaces;
    // each accepted Gateway's Service: an ExternalName alias of this name
    std::string gateway_service_external_name;
    // the Lease that elects the replica writing status (client-go's defaults)
    std::string lease_namespace;  // default: the pod's namespace, else "default"
    std::string lease_name = "gateway2nginx";
    long lease_duration_ms = 15000, renew_deadline_ms = 10000, retry_period_ms = 2000;
    // status writes to the API server: a second, and at once (client-go's names)
    double kube_api_qps = 20;
    int kube_api_burst = 40;
    int debounce_ms = 250;
    bool start_nginx = false;   // run starts nginx on OUTDIR and stops it (apply/nginx_process.h)
    std::string nginx_control;  // ... or asks gateway2nginx supervise there (apply/nginx_control.h)
    std::string alive_file;     // the main loop's heartbeat, for `gateway2nginx alive` (run/health.h)
    long shutdown_delay_ms = 0;  // after SIGTERM, /readyz 503 while nginx still accepts, then it drains
};

// gateway2nginx supervise: nginx in a container of its own, started and
// reloaded for gateway2nginx run (run/supervise.h)
struct SuperviseArgs {
    std::string outdir, control;
    std::string nginx = "/usr/sbin/nginx";
    std::string alive_file;
    long shutdown_delay_ms = 0;
};

// what --help prints
const char *usage_text();

// argv after the program name (and after "run" for `gateway2nginx run`);
// exits with the usage on a bad option.
Args parse_args(int argc, char **argv, bool run);
// argv after "supervise"
SuperviseArgs parse_supervise_args(int argc, char **argv);

}  // namespace g2n
