// gateway2nginx: Gateway API manifests to a complete nginx configuration.
//   parse (YAML -> typed objects) -> resolve (attachment, references,
//   conflicts, conditions) -> render (nginx text, status) -> write OUTDIR
#include <fcntl.h>
#include <malloc.h>

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

#include "cli.h"
#include "convert/command.h"
#include "apply/isolate.h"
#include "apply/nginx_check.h"
#include "apply/reload.h"
#include "apply/upstream_api.h"
#include "apply/output.h"
#include "parse/parse.h"
#include "resolve/resolve.h"
#include "run/health.h"
#include "run/run.h"
#include "run/supervise.h"

namespace fs = std::filesystem;
using namespace g2n;


int main(int argc, char **argv)
{
    if (argc > 1 && std::strcmp(argv[1], "run") == 0) {
        return run_gateway(parse_args(argc - 1, argv + 1, true));
    }
    if (argc > 1 && std::strcmp(argv[1], "convert") == 0) {
        return convert::convert_command(argc - 1, argv + 1);
    }
    if (argc > 1 && std::strcmp(argv[1], "supervise") == 0) {
        return supervise_nginx(parse_supervise_args(argc - 1, argv + 1));
    }
    if (argc > 1 && std::strcmp(argv[1], "alive") == 0) {
        char *end = nullptr;
        const long seconds = argc > 3 ? std::strtol(argv[3], &end, 10) : 30;
        if (argc < 3 || argc > 4 || (argc > 3 && (*end != '\0' || seconds < 1))) {
            std::cerr << "usage: gateway2nginx alive FILE [SECONDS]\n";
            return 2;
        }
        return check_alive(argv[2], seconds);
    }
    Args args = parse_args(argc, argv, false);

    Manifests manifests;
    try {
        for (const std::string &input : args.inputs) {
            parse_path(input, &manifests, args.jobs);
        }
        shrink_manifests(&manifests);  // they last through resolve, the peak
        // the scanners' arenas keep the pages of the YAML trees freed by
        // now, which resolve (on this thread) cannot reuse: 1.4 MB at the
        // peak of 10,000 routes
        ::malloc_trim(0);
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
                std::optional<Plan> isolated = stage_without_refused(manifests, *refusal, args.options, args.nginx, args.jobs > 1, staged);
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

        if (!args.reload_pidfile.empty() && args.options.upstream_api != "off") {
            // servers pushed before may look current to nginx after the
            // reload (the configured ones unchanged): what was rendered is
            // pushed once the new workers run
            std::string reloaded;
            if (std::string failed = reload_and_confirm(args.reload_pidfile, (outdir / "logs" / "error.log").string(), &reloaded); !failed.empty()) {
                std::cerr << "gateway2nginx: " << failed << "\n";
                return 2;
            }
            if (std::string failed = sync_after_reload(plan, args.options, nullptr); !failed.empty()) {
                std::cerr << "gateway2nginx: pushing servers and trust after the reload failed: " << printable(failed) << "\n";
                return 2;
            }
        } else if (!args.reload_pidfile.empty()) {
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
