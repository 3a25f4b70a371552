#include "run/run.h"

#include <malloc.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "apply/nginx_process.h"
#include "run/api_input.h"
#include "run/applier.h"
#include "run/debounce.h"
#include "run/file_input.h"
#include "run/health.h"
#include "run/process.h"
#include "run/watch_events.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

void tune_malloc(unsigned jobs)
{
    // No fast bins in glibc's malloc: the blocks a whole apply frees are
    // merged as they are freed, not all at once in the middle of the next
    // endpoint change (at 10,000 routes its CPU went from ~21 to ~9 ms,
    // the whole apply's unchanged; bench/README.md)
    ::mallopt(M_MXFAST, 0);
    // As many malloc arenas as scanning threads, not glibc's eight a core:
    // the reflectors' threads each kept an arena of their own, whose pages
    // freed lists and watch events left behind stayed resident (at 10,000
    // routes through the API, 14 MB more at peak and after; bench/README.md)
    ::mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, jobs)));
    // Blocks of a megabyte and more (lists, a reply of the upstream API)
    // mapped and unmapped: glibc's moving threshold put them in the heap
    // once a bigger block was freed, where their pages stayed resident
    ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

// The input the command line names; null when stopped before the API
// server answered
std::unique_ptr<Input> open_input(const Args &args)
{
    if (args.reads_api()) return ApiInput::start(args, g_stop, say);
    if (args.watch_events) return std::make_unique<WatchEventInput>();
    auto files = std::make_unique<FileInput>(args.inputs);
    say("watching " + std::to_string(args.inputs.size()) + " input(s); applying what they hold");
    return files;
}

// /healthz, /readyz and /metrics, on --health-listen, and /metrics on
// --metrics-listen when it is apart
struct HealthServers {
    std::unique_ptr<HealthServer> health, metrics;
};

HealthServers start_health(const Options &o, RunMetrics *metrics)
{
    HealthServers servers;
    if (!o.health_listen.empty()) {
        const unsigned paths = kProbePaths | (o.metrics_listen.empty() ? kMetricsPath : 0);
        servers.health = std::make_unique<HealthServer>("--health-listen", o.health_listen, paths, metrics);
    }
    if (!o.metrics_listen.empty()) {
        servers.metrics = std::make_unique<HealthServer>("--metrics-listen", o.metrics_listen, kMetricsPath, metrics);
    }
    return servers;
}

// The next poll's timeout: a second, or less when something is due sooner
int poll_timeout(const Debounce &debounce, const Applier &applier)
{
    using clock = std::chrono::steady_clock;
    long timeout = 1000;
    for (const auto due : {debounce.due(), applier.catch_up_due()}) {
        if (!due) continue;
        const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(*due - clock::now()).count();
        timeout = std::clamp<long>(ms, 0, timeout);
    }
    return static_cast<int>(timeout);
}

// What the input says applied as it falls quiet, until a stop signal, the
// input's end, or the end of run's own nginx; the exit code.
int serve(const Args &args, Input &input, Applier &applier, RunMetrics &metrics, NginxProcess *nginx,
          const std::function<void()> &heartbeat)
{
    using clock = std::chrono::steady_clock;
    Debounce debounce{std::chrono::milliseconds(args.debounce_ms)};
    if (input.first_apply() == Input::FirstApply::AtStart) applier.apply(std::nullopt);
    bool synced = input.first_apply() != Input::FirstApply::OnceSynced;  // nothing applied before
    bool ended = false;
    while (!g_stop) {
        heartbeat();
        if (std::string how; applier.nginx_failed() || (nginx && nginx->started() && !nginx->running(&how))) {
            if (!how.empty()) say("nginx ended (" + how + "); so does gateway2nginx");
            return 1;
        }
        // an nginx started on OUTDIR by another (supervise, or whoever
        // runs it beside --reload) is noticed: its route tables need filling
        if (!args.nginx_control.empty() || args.options.routes == "table") applier.notice_nginx();
        if (input.wants_status()) applier.tell_again();
        if (!synced && (synced = input.synced())) debounce.changed_long_ago(clock::now());
        pollfd fd{input.fd(), POLLIN, 0};
        if (!ended && ::poll(&fd, 1, poll_timeout(debounce, applier)) > 0) {
            const Input::Readable readable = input.on_readable();
            if (readable == Input::Readable::Changed && synced) debounce.changed(clock::now());
            ended = readable == Input::Readable::Ended;
        }
        const auto now = clock::now();
        clock::time_point first;
        if (debounce.take(now, ended, &first)) {
            applier.apply(input.take_changes());
            if (metrics.ready) metrics.observe_latency(std::chrono::duration<double>(clock::now() - first).count());
        } else if (!debounce.pending() && applier.catch_up_due() && now >= *applier.catch_up_due()) {
            applier.catch_up();
        }
        if (ended && !debounce.pending()) {
            say("the watch stream ended");
            return 0;
        }
    }
    return 0;
}

}  // namespace

int run_gateway(const Args &args)
{
    tune_malloc(args.jobs);
    count_stop_signals();

    RunMetrics metrics;
    metrics.heartbeat_ms = steady_ms();
    HealthServers health;
    std::unique_ptr<Input> input;
    try {
        health = start_health(args.options, &metrics);
        input = open_input(args);
    } catch (const std::exception &e) {
        std::cerr << "gateway2nginx: " << e.what() << "\n";
        return 1;
    }
    if (!input) return 0;  // stopped while the API server was not there
    metrics.more = [&] { return input->metrics(); };
    std::unique_ptr<NginxProcess> nginx;
    if (args.start_nginx) {
        fs::path outdir = fs::absolute(args.outdir).lexically_normal();
        if (outdir.filename().empty()) outdir = outdir.parent_path();
        nginx = std::make_unique<NginxProcess>(args.nginx, outdir, args.options.nginx_version);
    }
    Applier applier(args, &metrics, *input, nginx.get());
    // the loop turns: said to /healthz, and to --alive-file once a second
    AliveFile alive(args.alive_file);
    auto heartbeat = [&] {
        metrics.heartbeat_ms = steady_ms();
        alive.beat(metrics.heartbeat_ms);
    };
    const int exit_code = serve(args, *input, applier, metrics, nginx.get(), heartbeat);
    metrics.ready = false;
    applier.catch_up(true);
    if (nginx && nginx->started()) {
        // not ready, still serving: endpoints and load balancers let go of
        // the pod while what they still send is answered
        const long delay = g_stops > 0 ? args.shutdown_delay_ms : 0;
        if (delay > 0) {
            say("stopping: /readyz answers 503, nginx accepts for " + std::to_string(delay)
                + " ms more (or until a second SIGTERM), then drains");
        }
        nginx->accept_then_stop(delay, [] { return g_stops >= 2; }, heartbeat, say);
    }
    return exit_code;
}

}  // namespace g2n
