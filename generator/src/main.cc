// gateway2nginx: Gateway API manifests to a complete nginx configuration.
//   parse (YAML -> typed objects) -> resolve (attachment, references,
//   conflicts, conditions) -> render (nginx text, status) -> write OUTDIR
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <signal.h>
#include <thread>
#include <unistd.h>

#include "isolate.h"
#include "nginx_check.h"
#include "output.h"
#include "parse.h"
#include "resolve.h"

#ifndef GATEWAY2NGINX_VERSION
#define GATEWAY2NGINX_VERSION "0.1.0"
#endif

namespace fs = std::filesystem;
using namespace g2n;

namespace {

const char *const kUsage = R"(Usage: gateway2nginx -f PATH [-f PATH ...] -o OUTDIR [options]

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
      --listen-address ADDR where listeners listen when a Gateway has no IP
                            address (default 0.0.0.0)
      --port-offset N       add N to every listener port (unprivileged runs)
      --module-dir DIR      where ngx_http_gateway_tls_module.so and
                            ngx_stream_gateway_tls_module.so are (default:
                            the --nginx binary's modules path, as nginx -V
                            says; /usr/lib/nginx/modules if it cannot run)
      --resolver ADDR       nginx resolver for DNS names of backends
      --status-listen ADDR:PORT
                            where gateway_tls_status answers (/status: JSON,
                            /status?format=prometheus), default 127.0.0.1:9113;
                            "off" for none
  -j, --jobs N              threads scanning YAML (default: the CPUs, at most 4);
                            the output does not depend on it
      --check               run nginx -t on the result before replacing OUTDIR
      --nginx PATH          the nginx that will run the configuration: its
                            build (nginx -V) says where its modules are,
                            and --check runs it (default /usr/sbin/nginx)
      --reload PIDFILE      after a successful check, send SIGHUP to that nginx
      --version             print the version
      --help                print this help

Output: nginx.conf (run as `nginx -p OUTDIR -c nginx.conf`), http.conf,
stream.conf, certs/, logs/, temp/, status.yaml.
Exit status: 0 configuration written (rejected objects are in status.yaml),
1 bad input (FILE:LINE:COL: message), 2 nginx -t refuses the configuration even
without any route, policy or object of theirs (OUTDIR untouched); what it
refuses because of a tenant's object is rendered without that object.
)";

struct Args {
    std::vector<std::string> inputs;
    std::string outdir;
    Options options;
    unsigned jobs = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    bool check = false;
    bool module_dir_given = false;
    std::string nginx = "/usr/sbin/nginx";
    std::string reload_pidfile;
};

[[noreturn]] void usage_error(const std::string &what)
{
    std::cerr << "gateway2nginx: " << what << "\nTry 'gateway2nginx --help'.\n";
    std::exit(1);
}

Args parse_args(int argc, char **argv)
{
    Args a;
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
            a.options.listen_address = value();
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
        } else if (arg == "--resolver") {
            a.options.resolver = value();
        } else if (arg == "--status-listen") {
            a.options.status_listen = value();
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
    if (a.inputs.empty()) usage_error("no input: give -f PATH");
    if (a.outdir.empty()) usage_error("no output: give -o OUTDIR");
    if (!a.reload_pidfile.empty()) a.check = true;
    // module paths as the nginx that will load them was built with
    if (std::optional<NginxBuild> build = nginx_build(a.nginx)) {
        if (!a.module_dir_given) a.options.module_dir = build->modules_path;
        a.options.stream_module = build->stream_dynamic ? build->modules_path + "/ngx_stream_module.so" : "";
        if (build->version != 0) a.options.nginx_version = build->version;
    }
    return a;
}

// nginx -t refused the configuration of `manifests` (`refusal`): finds the
// tenant objects at fault and stages the configuration without them, each
// rejected with nginx's reason. nullopt when nginx refuses even the
// configuration without any tenant object (the operator's to fix).
std::optional<Plan> stage_without_refused(const Manifests &manifests, const std::string &refusal, const Args &args,
                                          const fs::path &staged)
{
    std::cerr << "gateway2nginx: nginx -t refuses the configuration (" << printable(refusal)
              << "); looking for the objects at fault\n";
    const std::vector<TenantObject> objects = tenant_objects(manifests);
    auto stage_with = [&](const std::vector<bool> &included, const std::function<std::string(size_t)> &why) {
        std::vector<Exclusion> excluded;
        for (size_t i = 0; i < objects.size(); i++) {
            if (!included[i]) excluded.push_back({objects[i], why(i)});
        }
        Plan plan = resolve(without(manifests, excluded), args.options);
        write_configuration(plan, args.options, staged, args.jobs > 1);
        return plan;
    };
    auto refusal_with = [&](const std::vector<bool> &included) {
        stage_with(included, [](size_t) { return "left out while looking for what nginx -t refuses"; });
        return nginx_refusal(args.nginx, staged, true);
    };
    if (std::optional<std::string> r = refusal_with(std::vector<bool>(objects.size(), false))) {
        std::cerr << "gateway2nginx: nginx -t refuses the configuration even without any route, policy or object "
                     "of theirs: " << printable(*r) << "\n";
        return std::nullopt;
    }
    std::vector<Refused> refused = find_refused(objects.size(), refusal, refusal_with);
    std::vector<bool> included(objects.size(), true);
    std::map<size_t, std::string> why;
    for (const Refused &r : refused) {
        included[r.index] = false;
        why[r.index] = "nginx -t refuses the configuration with it: " + r.why;
    }
    Plan plan = stage_with(included, [&](size_t i) { return why[i]; });
    if (std::optional<std::string> r = nginx_refusal(args.nginx, staged, false)) {
        std::cerr << "gateway2nginx: nginx -t refuses the configuration without the objects at fault: "
                  << printable(*r) << "\n";
        return std::nullopt;
    }
    return plan;
}

// A fresh sibling directory, swapped with OUTDIR in one rename.
void replace_dir(const fs::path &staged, const fs::path &outdir)
{
    if (!fs::exists(outdir)) {
        fs::rename(staged, outdir);
        return;
    }
    // a running nginx keeps its pid file, logs and buffered bodies: they
    // move into the new directory before the swap
    for (const char *state : {"nginx.pid", "logs", "temp"}) {
        if (fs::exists(outdir / state)) {
            fs::remove_all(staged / state);
            fs::rename(outdir / state, staged / state);
        }
    }
    if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, outdir.c_str(), RENAME_EXCHANGE) != 0) {
        throw std::runtime_error("cannot replace " + outdir.string() + ": " + std::strerror(errno));
    }
    fs::remove_all(staged);  // now holds the previous configuration
}

}  // namespace

int main(int argc, char **argv)
{
    Args args = parse_args(argc, argv);

    Manifests manifests;
    try {
        for (const std::string &input : args.inputs) {
            parse_path(input, &manifests, args.jobs);
        }
    } catch (const InputError &e) {
        std::cerr << printable(e.what()) << "\n";
        return 1;
    }

    fs::path outdir = fs::absolute(args.outdir).lexically_normal();
    if (outdir.filename().empty()) outdir = outdir.parent_path();
    fs::path staged = outdir.parent_path() / ("." + outdir.filename().string() + ".new-" + std::to_string(::getpid()));

    try {
        Plan plan = resolve(manifests, args.options);
        // the plan holds all that is written: the manifests go (halving the
        // peak), freed beside the rendering when there is a thread for it;
        // --check keeps them for rendering without what nginx -t refuses
        std::future<void> released;
        if (!args.check && args.jobs > 1) {
            released = std::async(std::launch::async, [m = std::move(manifests)]() mutable { m = Manifests(); });
        } else if (!args.check) {
            manifests = Manifests();
        }
        write_configuration(plan, args.options, staged, args.jobs > 1);
        if (args.check) {
            if (std::optional<std::string> refusal = nginx_refusal(args.nginx, staged, false)) {
                std::optional<Plan> isolated = stage_without_refused(manifests, *refusal, args, staged);
                if (!isolated) {
                    std::cerr << "gateway2nginx: nginx -t failed; " << outdir.string() << " is unchanged\n";
                    fs::remove_all(staged);
                    return 2;
                }
                plan = std::move(*isolated);
            }
        }
        for (const std::string &w : plan.warnings) std::cerr << "gateway2nginx: warning: " << printable(w) << "\n";
        replace_dir(staged, outdir);

        if (!args.reload_pidfile.empty()) {
            std::ifstream pidfile(args.reload_pidfile);
            long pid = 0;
            if (!(pidfile >> pid) || pid <= 0 || ::kill(static_cast<pid_t>(pid), SIGHUP) != 0) {
                std::cerr << "gateway2nginx: cannot signal the nginx in " << args.reload_pidfile << "\n";
                return 2;
            }
        }
        if (released.valid()) released.get();
        // Done: the process ends without tearing the plan down one free()
        // at a time (100,000 routes: a third of a second), as compilers do.
        std::cout.flush();
        std::cerr.flush();
        std::_Exit(0);
    } catch (const std::exception &e) {
        std::error_code ec;
        fs::remove_all(staged, ec);
        std::cerr << "gateway2nginx: " << printable(e.what()) << "\n";
        return 1;
    }
    return 0;
}
