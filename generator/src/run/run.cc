#include "run/run.h"
#include "run/api_input.h"
#include "run/health.h"
#include "run/watch_events.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "gtls_upstream_api.h"
#include "apply/isolate.h"
#include "apply/nginx_check.h"
#include "apply/reload.h"
#include "apply/upstream_api.h"
#include "apply/output.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

// One line of the log; the reflectors' threads say things too.
void say(const std::string &what)
{
    static std::mutex mutex;
    char stamp[32];
    std::time_t now = std::time(nullptr);
    struct tm utc;
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
    const std::string line = "gateway2nginx: " + std::string(stamp) + " " + printable(what) + "\n";
    std::lock_guard<std::mutex> lock(mutex);
    std::cerr << line << std::flush;
}

std::string sha256(const std::string &text)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
        throw std::runtime_error("SHA-256 failed");
    }
    return std::string(reinterpret_cast<const char *>(digest), len);
}

// What a reload would change: every file nginx reads, with the servers of
// replaceable upstreams and the trust of replaceable policies (their CA
// and pins, and the CA bundles only they name) left out (a cryptographic
// digest: tenants write what goes into it). A bundle named elsewhere too
// is in that other text by its name, which is its content's digest.
std::string skeleton_digest(const Plan &plan, const Options &options)
{
    Options skeleton = options;
    skeleton.endpoint_skeleton = true;
    std::set<std::string> replaceable_bundles;
    for (const auto &[name, policy] : trust_replaceable_policies(plan, options)) replaceable_bundles.insert(policy->ca);
    std::string text = render_nginx_conf(plan, skeleton);
    text += "\n\x01http\n" + render_http_conf(plan, skeleton) + "\n\x01stream\n" + render_stream_conf(plan, skeleton);
    for (const OutputFile &f : plan.files) {
        if (replaceable_bundles.count(f.path)) continue;
        text += "\n\x01" + f.path + " " + std::to_string(f.mode) + "\n" + f.content;
    }
    return sha256(text);
}

// ---- inputs ----------------------------------------------------------------

void watch_paths(int inotify, const std::vector<std::string> &inputs)
{
    const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB;
    for (const std::string &input : inputs) {
        if (input == "-") continue;
        std::error_code ec;
        if (fs::is_directory(input, ec)) {
            inotify_add_watch(inotify, input.c_str(), mask);
            for (auto it = fs::recursive_directory_iterator(input, ec); !ec && it != fs::recursive_directory_iterator();
                 it.increment(ec)) {
                if (it->is_directory(ec)) inotify_add_watch(inotify, it->path().c_str(), mask);
            }
        } else {
            fs::path parent = fs::path(input).parent_path();
            inotify_add_watch(inotify, parent.empty() ? "." : parent.c_str(), mask);
        }
    }
}

// ---- applying ----------------------------------------------------------------

class RunningGateway {
public:
    RunningGateway(const Args &args, RunMetrics *metrics) : args_(args), metrics_(metrics)
    {
        outdir_ = fs::absolute(args.outdir).lexically_normal();
        if (outdir_.filename().empty()) outdir_ = outdir_.parent_path();
        staged_ = outdir_.parent_path() / ("." + outdir_.filename().string() + ".new-" + std::to_string(::getpid()));
    }

    void apply(const std::function<void(Manifests *)> &read)
    {
        metrics_->applies++;
        Manifests manifests;
        try {
            read(&manifests);
        } catch (const InputError &e) {
            metrics_->bad_inputs++;
            say(std::string("bad input, nothing changed: ") + e.what());
            return;
        }
        try {
            // what nginx -t refused before and is unchanged since stays out,
            // with no new search: a change elsewhere costs one nginx -t at most
            first_seen_.stamp(&manifests);
            const std::vector<Exclusion> recalled = refusals_.recall(manifests, std::chrono::steady_clock::now());
            Plan plan = resolve(recalled.empty() ? manifests : without(manifests, recalled), args_.options);
            const std::string skeleton = skeleton_digest(plan, args_.options);
            if (!applied_ && first_ && outdir_holds(plan)) {
                // started beside an nginx that runs what OUTDIR holds
                applied_ = true;
                skeleton_ = skeleton;
                pushed_ = api_content(plan, args_.options);
                status_ = sha256(render_status(plan, args_.options));
                say("OUTDIR already holds this configuration: nothing to apply");
                applied(plan, read_pid(args_.reload_pidfile) != 0);
            } else if (applied_ && skeleton == skeleton_) {
                apply_through_api(plan);
            } else {
                apply_configuration(manifests, std::move(plan), recalled);
            }
            first_ = false;
        } catch (const std::exception &e) {
            std::error_code ec;
            fs::remove_all(staged_, ec);
            say(std::string("error, nothing changed: ") + e.what());
        }
    }

private:
    static std::string file_text(const fs::path &path)
    {
        std::ifstream in(path, std::ios::binary);
        return in ? std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) : std::string("\x01");
    }

    // Every file nginx reads is in OUTDIR as `plan` renders it.
    bool outdir_holds(const Plan &plan) const
    {
        if (file_text(outdir_ / "nginx.conf") != render_nginx_conf(plan, args_.options)
            || file_text(outdir_ / "http.conf") != render_http_conf(plan, args_.options)
            || file_text(outdir_ / "stream.conf") != render_stream_conf(plan, args_.options)) {
            return false;
        }
        for (const OutputFile &f : plan.files) {
            if (file_text(outdir_ / f.path) != f.content) return false;
        }
        return true;
    }

    // The servers and trust of `plan` that differ from what nginx holds,
    // pushed (and logged) alone; false when the push failed.
    bool push_changed(const Plan &plan, bool *pushed = nullptr)
    {
        const ApiContent content = api_content(plan, args_.options);
        const ApiContent changed = content.changed_since(pushed_);
        if (pushed != nullptr) *pushed = !changed.empty();
        if (changed.empty()) return true;
        if (std::string failed = push_to_api(args_.options, api_body(changed)); !failed.empty()) {
            metrics_->push_failures++;
            say("pushing to the upstream API failed (" + failed + "): reloading instead");
            return false;
        }
        pushed_ = content;
        metrics_->pushes++;
        std::string what;
        const size_t upstreams = changed.servers.size() + changed.stream_servers.size();
        if (upstreams > 0) what = "servers of " + std::to_string(upstreams) + " upstream(s)";
        if (!changed.trust.empty()) {
            what += (what.empty() ? "" : " and ") + std::string("trust of ") + std::to_string(changed.trust.size())
                    + " policy(ies)";
        }
        say(what + " pushed to nginx, no reload");
        return true;
    }

    // What is wrong with tenants' objects, each said once while it stays
    // wrong, whichever way the change is applied.
    void say_new_warnings(const Plan &plan)
    {
        std::set<std::string> now(plan.warnings.begin(), plan.warnings.end());
        for (const std::string &w : plan.warnings) {
            if (!warned_.count(w)) say("warning: " + w);
        }
        warned_ = std::move(now);
    }

    // Same configuration but for servers and trust: push what changed,
    // then OUTDIR (and status.yaml) catches up, with no reload.
    void apply_through_api(const Plan &plan)
    {
        say_new_warnings(plan);
        bool pushed = false;
        if (!push_changed(plan, &pushed)) {
            applied_ = false;
            Manifests none;
            apply_configuration(none, Plan(plan), {}, /*can_isolate=*/false);
            return;
        }
        const std::string status = sha256(render_status(plan, args_.options));
        if (!pushed && status == status_) {
            say("no change to the configuration or the status");
            applied(plan, read_pid(args_.reload_pidfile) != 0);
            return;
        }
        write_configuration(plan, args_.options, staged_, false);
        replace_dir(staged_, outdir_);
        status_ = status;
        applied(plan, read_pid(args_.reload_pidfile) != 0);
    }

    // `plan`: of `manifests` without `recalled`, objects nginx -t refused
    // before
    void apply_configuration(const Manifests &manifests, Plan plan, const std::vector<Exclusion> &recalled,
                             bool can_isolate = true)
    {
        metrics_->renders++;
        write_configuration(plan, args_.options, staged_, false);
        std::vector<Exclusion> found;
        if (std::optional<std::string> refusal = nginx_refusal(args_.nginx, staged_, false)) {
            std::optional<Plan> isolated =
                can_isolate ? stage_without_refused(manifests, *refusal, args_.options, args_.nginx, args_.jobs > 1, staged_, recalled, &found)
                            : std::nullopt;
            if (!isolated) {
                fs::remove_all(staged_);
                metrics_->refused++;
                say("nginx -t refuses the configuration; nginx keeps the one it runs");
                return;
            }
            plan = std::move(*isolated);
        }
        if (can_isolate) {
            refusals_.remember(manifests, recalled, found, std::chrono::steady_clock::now());
            if (!recalled.empty()) {
                say(std::to_string(recalled.size()) + " object(s) nginx -t refused before, unchanged since, left out "
                    "again without a search");
            }
        }
        say_new_warnings(plan);
        const std::string skeleton = skeleton_digest(plan, args_.options);
        if (applied_ && skeleton == skeleton_) {
            // what nginx runs already (the objects nginx refuses are left out
            // again): the other tenants' servers and trust still reach it
            if (push_changed(plan)) {
                replace_dir(staged_, outdir_);
                status_ = sha256(render_status(plan, args_.options));
                say("the configuration nginx runs is unchanged, no reload");
                applied(plan, read_pid(args_.reload_pidfile) != 0);
                return;
            }
        }
        replace_dir(staged_, outdir_);
        status_ = sha256(render_status(plan, args_.options));
        bool nginx_runs = false;
        if (read_pid(args_.reload_pidfile) == 0) {
            say("configuration written; no nginx is running on it yet");
        } else {
            nginx_runs = true;
            std::string reloaded;
            if (std::string failed = reload_and_confirm(args_.reload_pidfile, (outdir_ / "logs" / "error.log").string(), &reloaded); !failed.empty()) {
                metrics_->reload_failures++;
                say(failed);
                applied_ = false;  // the next change reloads again
                return;
            }
            metrics_->reloads++;
            say(reloaded);
            // servers pushed before stay across a reload where the configured
            // ones look unchanged to nginx: what was rendered is made current
            size_t pushed = 0;
            if (std::string failed = sync_after_reload(plan, args_.options, &pushed); !failed.empty()) {
                say("pushing servers and trust after the reload failed: " + failed);
            } else {
                say("after the reload, " + std::to_string(pushed)
                    + " upstream(s) and policy(ies) pushed; nginx holds the rest as rendered");
            }
        }
        applied_ = true;
        skeleton_ = skeleton;
        pushed_ = api_content(plan, args_.options);
        applied(plan, nginx_runs);
    }

    void applied(const Plan &plan, bool nginx_runs)
    {
        if (nginx_runs) metrics_->ready = true;
        if (on_applied_) on_applied_(plan, nginx_runs);
    }

public:
    // Told of each configuration applied, and whether a running nginx
    // serves it (its reload confirmed, its push answered).
    std::function<void(const Plan &, bool nginx_runs)> on_applied_;

private:
    const Args &args_;
    RunMetrics *metrics_;
    fs::path outdir_, staged_;
    bool applied_ = false;
    bool first_ = true;
    RefusalMemory refusals_;
    FirstSeen first_seen_;
    std::string skeleton_, status_;
    std::set<std::string> warned_;
    ApiContent pushed_;  // what the upstream API holds
};

}  // namespace

int run_gateway(const Args &args)
{
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);

    RunMetrics metrics;
    metrics.heartbeat_ms = steady_ms();
    RunningGateway gateway(args, &metrics);
    WatchedObjects watched;
    DocumentCache documents;  // a change rereads every input, but scans only what changed
    std::unique_ptr<ApiInput> api;
    auto read = [&](Manifests *m) {
        if (args.watch_events) {
            watched.read(m, args.jobs, &documents);
            m->server_timestamps = true;  // kubectl's: the API server's
        } else if (api) {
            api->read(m, args.jobs, &documents);
            m->server_timestamps = true;
        } else {
            for (const std::string &input : args.inputs) parse_path(input, m, args.jobs, &documents);
        }
        documents.forget_unused();
    };

    std::unique_ptr<HealthServer> health;
    if (!args.health_listen.empty()) {
        try {
            health = std::make_unique<HealthServer>(args.health_listen, &metrics);
        } catch (const std::exception &e) {
            std::cerr << "gateway2nginx: " << e.what() << "\n";
            return 1;
        }
    }
    int inotify = -1;
    if (args.reads_api()) {
        try {
            api = ApiInput::start(args, g_stop, say);
        } catch (const kube::ApiError &e) {
            std::cerr << "gateway2nginx: " << e.what() << "\n";
            return 1;
        }
        if (!api) return 0;  // stopped while the API server was not there
        metrics.more = [&] { return api->metrics(); };
        gateway.on_applied_ = [&](const Plan &plan, bool nginx_runs) { api->offer_status(plan, args.options, nginx_runs); };
    } else if (!args.watch_events) {
        inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (inotify < 0) {
            std::cerr << "gateway2nginx: inotify: " << std::strerror(errno) << "\n";
            return 1;
        }
        watch_paths(inotify, args.inputs);
        say("watching " + std::to_string(args.inputs.size()) + " input(s); applying what they hold");
        gateway.apply(read);
    } else {
        ::fcntl(0, F_SETFL, ::fcntl(0, F_GETFL) | O_NONBLOCK);
        say("reading watch events on standard input");
    }
    bool synced = !api;  // nothing is applied before every kind is listed once
    auto waiting = std::chrono::steady_clock::now() + std::chrono::seconds(10);

    using clock = std::chrono::steady_clock;
    // a quiet spell of --debounce applies a change; a steady stream of
    // events (one tenant touching an object again and again) is applied
    // all the same once its first event has waited this long
    const auto quiet_spell = std::chrono::milliseconds(args.debounce_ms);
    const auto longest_wait = kLongestDebounceWaits * quiet_spell;
    bool dirty = false, eof = false;
    clock::time_point last_event{}, first_event{};
    std::string pending;  // watch-event bytes not yet a whole event
    while (!g_stop) {
        metrics.heartbeat_ms = steady_ms();
        pollfd fd{args.watch_events ? 0 : api ? api->change_fd() : inotify, POLLIN, 0};
        if (!synced) {
            synced = api->synced();
            if (synced) {
                say("every kind listed: " + std::to_string(api->size()) + " object(s)");
                dirty = true;
                first_event = last_event = clock::now() - quiet_spell;
            } else if (clock::now() > waiting) {
                say("waiting for the first list of " + api->unsynced());
                waiting = clock::now() + std::chrono::seconds(10);
            }
        }
        int timeout = 1000;
        if (dirty) {
            const auto now = clock::now();
            const auto due = std::min(last_event + quiet_spell, first_event + longest_wait);
            timeout = static_cast<int>(
                std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count()));
        }
        int n = eof ? 0 : ::poll(&fd, 1, timeout);
        if (n > 0) {
            if (!dirty) first_event = clock::now();
            char buf[65536];
            ssize_t got = ::read(fd.fd, buf, sizeof buf);
            if (got > 0 && api) {
                dirty = synced;
                last_event = clock::now();
            } else if (got > 0) {
                if (args.watch_events) {
                    pending.append(buf, static_cast<size_t>(got));
                    size_t end;
                    while ((end = json_value_end(pending, 0)) != std::string::npos) {
                        std::string why;
                        if (!watched.apply(pending.substr(0, end), &why)) say(why + "; ignored");
                        pending.erase(0, end);
                        dirty = true;
                    }
                } else {
                    dirty = true;
                    watch_paths(inotify, args.inputs);  // directories made since
                }
                last_event = clock::now();
            } else if (got == 0 && args.watch_events) {
                eof = true;
            }
        }
        const auto now = clock::now();
        if (dirty && (eof || now - last_event >= quiet_spell || now - first_event >= longest_wait)) {
            dirty = false;
            gateway.apply(read);
            if (metrics.ready) metrics.observe_latency(std::chrono::duration<double>(clock::now() - first_event).count());
        }
        if (eof && !dirty) {
            say("the watch stream ended");
            break;
        }
    }
    return 0;
}

}  // namespace g2n
