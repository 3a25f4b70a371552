#include "run/supervise.h"

#include <poll.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "apply/nginx_check.h"
#include "apply/nginx_control.h"
#include "apply/nginx_process.h"
#include "apply/reload.h"
#include "run/health.h"
#include "run/process.h"

namespace fs = std::filesystem;

namespace g2n {

int supervise_nginx(const SuperviseArgs &args)
{
    count_stop_signals();
    fs::path outdir = fs::absolute(args.outdir).lexically_normal();
    if (outdir.filename().empty()) outdir = outdir.parent_path();
    Options built;
    if (std::optional<NginxBuild> build = nginx_build(args.nginx)) follow_nginx_build(*build, &built);
    NginxProcess nginx(args.nginx, outdir, built.nginx_version);

    auto start = [&]() -> ReloadOutcome {
        say("starting nginx on OUTDIR");
        if (std::string failed = nginx.start(); !failed.empty()) {
            say(failed);
            return ReloadOutcome::failure(failed);
        }
        say("nginx started");
        return ReloadOutcome::success("nginx started");
    };
    // what run asks: the configuration OUTDIR holds now, served
    auto reload = [&]() -> ReloadOutcome {
        if (!nginx.started()) {
            if (!fs::exists(outdir / "nginx.conf")) return ReloadOutcome::failure("no configuration in " + outdir.string() + " yet");
            return start();
        }
        ReloadOutcome outcome;
        outcome.failed = reload_and_confirm((outdir / "nginx.pid").string(), (outdir / "logs" / "error.log").string(),
                                            &outcome.done, &outcome.refusal);
        say(outcome.failed.empty() ? outcome.done : outcome.failed);
        return outcome;
    };
    std::unique_ptr<NginxControlServer> control;
    try {
        control = std::make_unique<NginxControlServer>(args.control, reload);
    } catch (const std::exception &e) {
        std::cerr << "gateway2nginx supervise: " << e.what() << "\n";
        return 1;
    }
    say("answering gateway2nginx run at " + args.control);
    if (fs::exists(outdir / "nginx.conf")) {
        start();  // what OUTDIR holds, whether or not run is there yet
    } else {
        say("no configuration in OUTDIR yet: nginx starts once gateway2nginx run writes one");
    }

    AliveFile alive(args.alive_file);
    auto heartbeat = [&] { alive.beat(steady_ms()); };
    while (!g_stop) {
        heartbeat();
        if (std::string how; nginx.started() && !nginx.running(&how)) {
            say("nginx ended (" + how + "); so does gateway2nginx supervise");
            return 1;
        }
        pollfd fd{control->fd(), POLLIN, 0};
        ::poll(&fd, 1, 1000);
        control->run();
    }
    if (nginx.started()) {
        // the pod is no longer ready (run's /readyz); what endpoints and
        // load balancers still send while they let go of it is answered
        const long delay = args.shutdown_delay_ms;
        if (delay > 0) {
            say("stopping: nginx accepts for " + std::to_string(delay)
                + " ms more (or until a second SIGTERM), then drains");
        }
        nginx.accept_then_stop(
            delay, [] { return g_stops >= 2; },
            [&] {
                heartbeat();
                control->run();
            },
            say);
    }
    return 0;
}

}  // namespace g2n
