#include "run/run.h"
#include "run/api_input.h"
#include "run/health.h"
#include "run/process.h"
#include "run/watch_events.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "gtls_upstream_api.h"
#include "apply/isolate.h"
#include "apply/nginx_check.h"
#include "apply/nginx_control.h"
#include "apply/nginx_process.h"
#include "apply/reload.h"
#include "apply/upstream_api.h"
#include "apply/output.h"
#include "digest.h"
#include "kind_table.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "resolve/policy_trust.h"
#include "resolve/service_endpoints.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

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
    Sha256Stream text;
    text << render_nginx_conf(plan, skeleton) << "\n\x01http\n";
    render_http_conf(text, plan, skeleton);
    text << "\n\x01stream\n" << render_stream_conf(plan, skeleton);
    for (const OutputFile &f : plan.files) {
        if (replaceable_bundles.count(f.path)) continue;
        text << "\n\x01" << f.path << " " << f.mode << "\n" << f.content;
    }
    return text.digest();
}

// What status.yaml says, digested as it is rendered
std::string status_digest(const Plan &plan, const Options &options)
{
    Sha256Stream text;
    render_status(text, plan, options);
    return text.digest();
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

// How a change to the kind of `change` is applied (kind_table.h)
KindChange change_of(const kube::ObjectChange &change)
{
    const KindRow *row = find_kind(change.group, change.kind);
    return row != nullptr ? row->change : KindChange::Whole;
}

// `one`, parsed from the JSON `change` names, holds that object alone, of
// a kind applied without resolve
bool holds_only(const Manifests &one, const kube::ObjectChange &change)
{
    std::vector<std::pair<std::string_view, const ObjectMeta *>> held;
    for (const EndpointSlice &o : one.endpoint_slices) held.emplace_back("EndpointSlice", &o.meta);
    for (const ConfigMap &o : one.config_maps) held.emplace_back("ConfigMap", &o.meta);
    for (const Secret &o : one.secrets) held.emplace_back("Secret", &o.meta);
    return held.size() == 1 && held[0].first == change.kind && held[0].second->key() == change.name_key;
}

// What an input says changed since the last apply, and how to read each
// object's JSON now (none: deleted).
struct ChangeSet {
    std::vector<kube::ObjectChange> objects;
    std::function<std::optional<std::string>(const kube::ObjectChange &)> json_of;
};

class RunningGateway {
public:
    RunningGateway(const Args &args, RunMetrics *metrics) : args_(args), metrics_(metrics)
    {
        outdir_ = fs::absolute(args.outdir).lexically_normal();
        if (outdir_.filename().empty()) outdir_ = outdir_.parent_path();
        staged_ = outdir_.parent_path() / ("." + outdir_.filename().string() + ".new-" + std::to_string(::getpid()));
    }

    // Applies what the inputs hold now. `changes`: what changed since the
    // last call, when the input can say (the API, a watch stream); then
    // EndpointSlice changes alone recompute only the Services they name,
    // and ConfigMap and Secret changes only the trust of the policies
    // reading them.
    void apply(std::optional<ChangeSet> changes, const std::function<void(Manifests *)> &read)
    {
        metrics_->applies++;
        const uint64_t cpu_before = thread_cpu_ns();
        if (changes && object_changes_applied(*changes)) {
            const bool trust = std::any_of(changes->objects.begin(), changes->objects.end(), [](const kube::ObjectChange &c) {
                return change_of(c) != KindChange::Endpoints;
            });
            (trust ? metrics_->trust_cpu_ns : metrics_->endpoint_cpu_ns) += thread_cpu_ns() - cpu_before;
            return;
        }
        changes.reset();  // a first sync's or a relist's names every object: not held through the whole way
        apply_whole(read);
        ::malloc_trim(0);  // the millions of small blocks it freed, handed back
        metrics_->whole_cpu_ns += thread_cpu_ns() - cpu_before;
    }

private:
    static uint64_t thread_cpu_ns()
    {
        timespec t{};
        ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
    }

    // What `changes` ask is done, when the plan kept can follow them
    // (nothing changed, or EndpointSlices, ConfigMaps and Secrets alone)
    bool object_changes_applied(const ChangeSet &changes)
    {
        if (endpoints_ == nullptr) return false;
        if (changes.objects.empty()) {
            say("no change to the configuration or the status");
            serving(read_pid(args_.reload_pidfile) != 0);
            return true;
        }
        return apply_object_changes(changes);
    }

    // Read, resolved, rendered and applied from the start: by a push when
    // the skeleton nginx runs is unchanged, else by a reload.
    void apply_whole(const std::function<void(Manifests *)> &read)
    {
        endpoints_.reset();
        trust_.reset();
        plan_.reset();
        if (on_whole_apply_) on_whole_apply_();
        Manifests manifests;
        read_ = &manifests;
        give_back_ = [&](MovedObjects *moved) {
            if (done_with_) done_with_(std::move(manifests), moved);
        };
        try {
            read(&manifests);
            apply_read(manifests);
        } catch (const InputError &e) {
            metrics_->bad_inputs++;
            say(std::string("bad input, nothing changed: ") + e.what());
        }
        if (give_back_) give_back_(nullptr);
        give_back_ = nullptr;
        read_ = nullptr;
    }

    void apply_read(Manifests &manifests)
    {
        try {
            // what nginx -t refused before and is unchanged since stays out,
            // with no new search: a change elsewhere costs one nginx -t at most
            first_seen_.stamp(&manifests);
            const std::vector<Exclusion> recalled = refusals_.recall(manifests, std::chrono::steady_clock::now());
            std::optional<Manifests> without_recalled;
            resolved_from_ = recalled.empty() ? &manifests : &without_recalled.emplace(without(manifests, recalled));
            reads_.emplace();
            Plan plan = resolve(*resolved_from_, args_.options, &*reads_);
            // the ConfigMaps and Secrets it looked up are held whole: those
            // that were a digest until now are fetched, and read again
            if (on_resolved_ && on_resolved_(*reads_)) {
                say("ConfigMaps or Secrets newly referred to were fetched: reading again");
                reads_.reset();
                resolved_from_ = nullptr;
                return;
            }
            const std::string skeleton = skeleton_digest(plan, args_.options);
            if (!applied_ && first_ && outdir_holds(plan)) {
                // started beside an nginx that runs what OUTDIR holds
                applied_ = true;
                skeleton_ = skeleton;
                pushed_ = ApiHeld::of(plan, args_.options);
                status_ = status_digest(plan, args_.options);
                say("OUTDIR already holds this configuration: nothing to apply");
                if (read_pid(args_.reload_pidfile) == 0 && starts_nginx() && !start_nginx() && nginx_failed_) return;
                applied(std::move(plan), read_pid(args_.reload_pidfile) != 0);
            } else if (applied_ && skeleton == skeleton_) {
                apply_through_api(std::move(plan));
            } else {
                apply_configuration(manifests, std::move(plan), recalled, ReloadReason::Change);
            }
            first_ = false;
        } catch (const std::exception &e) {
            std::error_code ec;
            fs::remove_all(staged_, ec);
            say(std::string("error, nothing changed: ") + e.what());
        }
        resolved_from_ = nullptr;
        isolated_input_.reset();
    }

public:
    // When OUTDIR, behind the servers pushed since it was written, is to
    // be written again: after a quiet spell, or at the latest a while after
    // it fell behind.
    std::optional<std::chrono::steady_clock::time_point> catch_up_due() const
    {
        if (!behind_since_) return std::nullopt;
        return std::min(last_endpoint_update_ + kCatchUpQuiet, *behind_since_ + kCatchUpLongest);
    }

    // OUTDIR as the plan nginx runs renders it, with the servers pushed
    // since: what a restarted nginx reads.
    void catch_up()
    {
        if (!behind_since_ || !plan_) return;
        behind_since_.reset();
        try {
            write_configuration(*plan_, args_.options, staged_, false);
            replace_dir(staged_, outdir_);
            say("OUTDIR written with the servers pushed since");
        } catch (const std::exception &e) {
            std::error_code ec;
            fs::remove_all(staged_, ec);
            say(std::string("writing OUTDIR failed: ") + e.what());
            behind_since_ = std::chrono::steady_clock::now();
        }
    }

private:
    static std::string file_text(const fs::path &path)
    {
        std::ifstream in(path, std::ios::binary);
        return in ? std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) : std::string("\x01");
    }

    static std::string file_digest(const fs::path &path)
    {
        std::ifstream in(path, std::ios::binary);
        if (!in) return "";
        Sha256Stream digest;
        digest << in.rdbuf();
        return digest.digest();
    }

    // Every file nginx reads is in OUTDIR as `plan` renders it.
    bool outdir_holds(const Plan &plan) const
    {
        // http.conf by digest: at 10,000 routes, neither it nor its
        // rendering is held whole
        Sha256Stream http;
        render_http_conf(http, plan, args_.options);
        if (file_text(outdir_ / "nginx.conf") != render_nginx_conf(plan, args_.options)
            || file_digest(outdir_ / "http.conf") != http.digest()
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
        ApiHeld held;
        const ApiContent changed = api_changes(plan, args_.options, pushed_, &held);
        if (pushed != nullptr) *pushed = !changed.empty();
        if (changed.empty()) return true;
        if (!push(changed)) return false;
        pushed_ = std::move(held);  // and what the plan no longer has, forgotten
        return true;
    }

    // `changed` pushed to the upstream API, counted, said, and kept as what
    // it holds; false when the push failed.
    bool push(const ApiContent &changed)
    {
        if (std::string failed = push_to_api(args_.options, api_body(changed)); !failed.empty()) {
            metrics_->push_failures++;
            say("pushing to the upstream API failed (" + failed + "): reloading instead");
            return false;
        }
        pushed_.hold(changed);
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

    // Only EndpointSlices, ConfigMaps and Secrets changed: the servers of
    // the Services they name (ServiceEndpoints) and the trust of the
    // policies reading them (PolicyTrust), recomputed and pushed, OUTDIR
    // written later. False when the change needs the whole pipeline,
    // which then applies it.
    bool apply_object_changes(const ChangeSet &changes)
    {
        for (const kube::ObjectChange &c : changes.objects) {
            const KindChange how = change_of(c);
            if (how == KindChange::Whole || (how == KindChange::Trust && trust_ == nullptr)) return false;
        }
        // what each object is now, parsed alone (none: gone)
        std::vector<std::optional<Manifests>> now(changes.objects.size());
        for (size_t i = 0; i < changes.objects.size(); i++) {
            const kube::ObjectChange &c = changes.objects[i];
            const std::optional<std::string> json = changes.json_of(c);
            if (!json) continue;
            Manifests &one = now[i].emplace();
            try {
                parse_texts({{c.name, *json}}, &one);
            } catch (const InputError &) {
                return false;  // said by the whole pipeline
            }
            if (!one.rejected.empty() || !one.ignored.empty() || !holds_only(one, c)) return false;
        }
        for (size_t i = 0; i < changes.objects.size(); i++) {
            const kube::ObjectChange &c = changes.objects[i];
            const Manifests *one = now[i] ? &*now[i] : nullptr;
            if (change_of(c) == KindChange::Endpoints) {
                endpoints_->slice_changed(c.name_key, one ? &one->endpoint_slices[0] : nullptr);
            } else if (c.kind == "ConfigMap") {
                trust_->config_map_changed(c.name_key, one ? &one->config_maps[0] : nullptr);
            } else {
                trust_->secret_changed(c.name_key, one ? &one->secrets[0] : nullptr);
            }
        }
        // trust first: it leaves the plan as it was when it needs resolve
        const PolicyTrust::Update trust = trust_ ? trust_->update(&*plan_) : PolicyTrust::Update{};
        if (trust.needs_resolve) return false;
        const ServiceEndpoints::Update update = endpoints_->update(&*plan_);
        if (update.needs_resolve) return false;
        for (const std::string &w : update.warnings) {
            if (warned_.insert(w).second) say("warning: " + w);
        }
        bool slices = false, trust_objects = false;
        for (const kube::ObjectChange &c : changes.objects) {
            (change_of(c) == KindChange::Endpoints ? slices : trust_objects) = true;
        }
        if (slices) metrics_->endpoint_updates++;
        if (trust_objects) metrics_->trust_updates++;
        ApiContent changed;
        for (const Upstream *u : update.changed) changed.servers[u->name] = upstream_servers_api_json(*u);
        for (const Upstream *u : update.stream_changed) changed.stream_servers[u->name] = upstream_servers_api_json(*u);
        for (const UpstreamPolicy *p : trust.changed) changed.trust[p->name] = policy_trust_api_json(*p, *plan_);
        changed = changed.changed_since(pushed_);
        if (changed.empty()) {
            say("no change to the servers nginx holds");
            serving(read_pid(args_.reload_pidfile) != 0);
            return true;
        }
        if (!push(changed)) {
            applied_ = false;  // the whole way reloads
            return false;
        }
        last_endpoint_update_ = std::chrono::steady_clock::now();
        if (!behind_since_) behind_since_ = last_endpoint_update_;
        serving(true);  // the push was answered
        return true;
    }

    // The plan kept is served by a running nginx now (when it was applied,
    // none might have run yet): said, as applied() says it.
    void serving(bool nginx_runs)
    {
        if (!nginx_runs || nginx_runs_) return;
        nginx_runs_ = metrics_->ready = true;
        if (on_applied_) on_applied_(*plan_, true);
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
    void apply_through_api(Plan plan)
    {
        say_new_warnings(plan);
        bool pushed = false;
        if (!push_changed(plan, &pushed)) {
            applied_ = false;
            Manifests none;
            apply_configuration(none, std::move(plan), {}, ReloadReason::PushFailed, /*can_isolate=*/false);
            return;
        }
        const std::string status = status_digest(plan, args_.options);
        if (!pushed && status == status_ && !behind_since_) {
            say("no change to the configuration or the status");
            applied(std::move(plan), read_pid(args_.reload_pidfile) != 0);
            return;
        }
        write_configuration(plan, args_.options, staged_, false);
        replace_dir(staged_, outdir_);
        status_ = status;
        behind_since_.reset();
        applied(std::move(plan), read_pid(args_.reload_pidfile) != 0);
    }

    // `plan`: of `manifests` without `recalled`, objects nginx -t refused
    // before
    void apply_configuration(const Manifests &manifests, Plan plan, const std::vector<Exclusion> &recalled,
                             ReloadReason reason, bool can_isolate = true)
    {
        metrics_->renders++;
        write_configuration(plan, args_.options, staged_, false);
        std::vector<Exclusion> found;
        // the nginx that takes it (running on OUTDIR, or about to start)
        // must also be able to bind what is new to it
        const bool runs = read_pid(args_.reload_pidfile) != 0;
        const fs::path held = runs ? outdir_ : fs::path();
        const fs::path *running = runs || starts_nginx() ? &held : nullptr;
        if (std::optional<std::string> refusal = nginx_refusal(args_.nginx, staged_, false, running)) {
            std::optional<Plan> isolated =
                can_isolate ? stage_without_refused(manifests, *refusal, args_.options, args_.nginx, args_.jobs > 1,
                                                    staged_, recalled, &found, running)
                            : std::nullopt;
            if (!isolated) {
                fs::remove_all(staged_);
                metrics_->refused++;
                say("nginx -t refuses the configuration; nginx keeps the one it runs");
                return;
            }
            plan = std::move(*isolated);
            reads_.reset();  // of another resolve
            if (!found.empty()) {
                std::vector<Exclusion> excluded = recalled;
                excluded.insert(excluded.end(), found.begin(), found.end());
                resolved_from_ = &isolated_input_.emplace(without(manifests, excluded));
            }
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
                behind_since_.reset();
                status_ = status_digest(plan, args_.options);
                say("the configuration nginx runs is unchanged, no reload");
                taken_ = taken_objects(manifests, recalled, found);
                applied(std::move(plan), read_pid(args_.reload_pidfile) != 0);
                return;
            }
            reason = ReloadReason::PushFailed;
        }
        behind_since_.reset();
        status_ = status_digest(plan, args_.options);
        bool nginx_runs = false;
        if (read_pid(args_.reload_pidfile) == 0) {
            replace_dir(staged_, outdir_);
            if (starts_nginx()) {
                nginx_runs = start_nginx();
                if (nginx_failed_) return;
            } else {
                say("configuration written; no nginx is running on it yet");
            }
        } else {
            nginx_runs = true;
            std::string refusal;
            if (std::string failed = reload_onto(plan, skeleton, reason, &refusal); !failed.empty()) {
                status_.clear();
                if (refusal.empty()) {
                    applied_ = false;  // what nginx runs is not known: the next change reloads
                } else if (can_isolate) {
                    reload_without_refused(manifests, refusal, recalled);  // it runs what it ran
                }
                return;
            }
        }
        applied_ = true;
        skeleton_ = skeleton;
        pushed_ = ApiHeld::of(plan, args_.options);
        taken_ = taken_objects(manifests, recalled, found);
        applied(std::move(plan), nginx_runs);
    }

    // nginx reloaded onto what is staged (`plan`): "" when it took it (and
    // the servers pushed before are made what was rendered), else why not,
    // said and counted, nginx's own words in *refusal, and OUTDIR holding
    // what nginx runs again (a fresh nginx starts on it).
    std::string reload_onto(const Plan &plan, const std::string &skeleton, ReloadReason reason, std::string *refusal)
    {
        // what nginx runs is kept aside until it takes the new one
        const fs::path previous = staged_.string() + ".previous";
        replace_dir(staged_, outdir_, previous);
        std::error_code ec;
        std::string reloaded;
        if (std::string failed = reload_nginx(&reloaded, refusal); !failed.empty()) {
            metrics_->reload_failures[static_cast<size_t>(reason)]++;
            say(failed);
            replace_dir(previous, outdir_);
            say("OUTDIR holds the configuration nginx runs again");
            return failed;
        }
        fs::remove_all(previous, ec);
        metrics_->reloads[static_cast<size_t>(reason)]++;
        say(reloaded + " (" + kReloadReasons[static_cast<size_t>(reason)] + ")");
        skeleton_ = skeleton;
        pushed_ = ApiHeld::of(plan, args_.options);
        // servers pushed before stay across a reload where the configured
        // ones look unchanged to nginx: what was rendered is made current
        size_t pushed = 0;
        if (std::string failed = sync_after_reload(plan, args_.options, &pushed); !failed.empty()) {
            say("pushing servers and trust after the reload failed: " + failed);
        } else {
            say("after the reload, " + std::to_string(pushed)
                + " upstream(s) and policy(ies) pushed; nginx holds the rest as rendered");
        }
        return "";
    }

    // The tenant objects of `manifests` in the configuration nginx took (all
    // but those left out), by 64-bit digests of their identities and of
    // their versions: at 40,000 objects a fraction of their strings
    struct TakenObjects {
        std::unordered_set<size_t> versions, identities;
    };
    static size_t version_digest(const ObjectVersion &v)
    {
        return std::hash<std::string>{}(v.identity) ^ (v.content * 0x9e3779b97f4a7c15ULL);
    }
    static TakenObjects taken_objects(const Manifests &manifests, const std::vector<Exclusion> &recalled,
                                      const std::vector<Exclusion> &found)
    {
        const ObjectPositions out = positions_of(recalled, found);
        std::vector<TenantObject> in;
        for (const TenantObject &o : tenant_objects(manifests)) {
            if (!out.count({o.kind, o.index})) in.push_back(o);
        }
        TakenObjects taken;
        for (const ObjectVersion &v : object_versions(manifests, in)) {
            taken.versions.insert(version_digest(v));
            taken.identities.insert(std::hash<std::string>{}(v.identity));
        }
        return taken;
    }

    // The running nginx refused to reload onto a configuration nginx -t
    // took (`refusal`, its words): what nginx -t cannot see (a socket too
    // many, a bind() lost to another process since the check). Searched
    // with reloads as the judge: one it refuses costs nothing (the old
    // workers serve on), one it takes is applied, so nginx moves only
    // forward. First among the objects new to it, every object it runs
    // kept (at its version now); only when it refuses even without those,
    // among every object not at the version it runs, whose owners' routes
    // are left out while the search lasts. The objects at fault are left
    // out and remembered as nginx -t's refusals are, the rest applied.
    void reload_without_refused(const Manifests &manifests, const std::string &refusal,
                                const std::vector<Exclusion> &recalled)
    {
        const std::vector<TenantObject> objects = tenant_objects(manifests);
        const std::vector<ObjectVersion> versions = object_versions(manifests, objects);
        const ObjectPositions left_out = positions_of(recalled);
        ObjectPositions fresh, not_taken;
        for (size_t i = 0; i < objects.size(); i++) {
            const std::pair<TenantObject::Kind, size_t> at{objects[i].kind, objects[i].index};
            if (left_out.count(at) || taken_.versions.count(version_digest(versions[i]))) continue;
            not_taken.insert(at);
            if (!taken_.identities.count(std::hash<std::string>{}(versions[i].identity))) fresh.insert(at);
        }
        const RefusalJudge reload = [&](const Plan &trial, bool) -> std::optional<std::string> {
            const fs::path held = outdir_;
            if (std::optional<std::string> refused = nginx_refusal(args_.nginx, staged_, true, &held)) return refused;
            const std::string skeleton = skeleton_digest(trial, args_.options);
            if (applied_ && skeleton == skeleton_) return std::nullopt;  // what nginx runs
            std::string words;
            if (std::string failed = reload_onto(trial, skeleton, ReloadReason::RefusalSearch, &words); !failed.empty()) {
                return words.empty() ? failed : words;
            }
            applied_ = true;
            return std::nullopt;
        };
        std::vector<Exclusion> found;
        std::optional<Plan> isolated;
        for (const auto *suspects : {&fresh, &not_taken}) {
            if (suspects->empty() || (suspects == &not_taken && not_taken.size() == fresh.size())) continue;
            if (suspects == &not_taken) say("searching every object changed since the configuration nginx runs");
            found.clear();
            isolated = stage_without_refused(
                manifests, refusal, args_.options, args_.jobs > 1, staged_, recalled, &found, reload,
                "nginx refused to reload onto the configuration", "reload(s) tried",
                [suspects](const TenantObject &o) { return suspects->count({o.kind, o.index}) > 0; });
            if (isolated) break;
        }
        if (!isolated) {
            std::error_code ec;
            fs::remove_all(staged_, ec);
            say("nginx keeps the configuration it runs; the next change tries again");
            return;
        }
        std::vector<Exclusion> excluded = recalled;
        excluded.insert(excluded.end(), found.begin(), found.end());
        refusals_.remember(manifests, recalled, found, std::chrono::steady_clock::now());
        reads_.reset();  // of another resolve
        resolved_from_ = &isolated_input_.emplace(without(manifests, excluded));
        // nginx runs it, or all of it but what is pushed: applied as any other
        apply_configuration(manifests, std::move(*isolated), excluded, ReloadReason::RefusalSearch,
                            /*can_isolate=*/false);
    }

    // SIGHUP to the nginx of --reload or --start-nginx, or a reload asked of
    // its supervisor (--nginx-control), confirmed: as reload_and_confirm
    std::string reload_nginx(std::string *done, std::string *refusal)
    {
        if (args_.nginx_control.empty()) {
            return reload_and_confirm(args_.reload_pidfile, (outdir_ / "logs" / "error.log").string(), done, refusal);
        }
        ReloadOutcome outcome = reload_through(args_.nginx_control);
        *done = std::move(outcome.done);
        if (refusal != nullptr) *refusal = std::move(outcome.refusal);
        return outcome.failed;
    }

    // run starts nginx itself (--start-nginx), or has its supervisor do it
    // (--nginx-control)
    bool starts_nginx() const { return nginx_ != nullptr || !args_.nginx_control.empty(); }

    // nginx started on OUTDIR as it is; false when it does not serve (said;
    // the loop told to end when run's own nginx did not start, while a
    // supervisor not there yet starts it once it is)
    bool start_nginx()
    {
        if (!args_.nginx_control.empty()) {
            const ReloadOutcome outcome = reload_through(args_.nginx_control);
            say(outcome.failed.empty() ? outcome.done
                                       : outcome.failed + (outcome.unreachable ? ": it starts nginx on OUTDIR" : ""));
            return outcome.failed.empty();
        }
        say("starting nginx on OUTDIR");
        if (std::string failed = nginx_->start(); !failed.empty()) {
            say(failed);
            nginx_failed_ = true;
            return false;
        }
        say("nginx started");
        return true;
    }

public:
    // --start-nginx: the nginx started, null without
    NginxProcess *nginx_ = nullptr;
    bool nginx_failed_ = false;  // it did not start

private:
    // `plan` is what nginx runs (or will, once started): kept, with what
    // EndpointSlice changes need to follow it
    void applied(Plan plan, bool nginx_runs)
    {
        if (nginx_runs) metrics_->ready = true;
        nginx_runs_ = nginx_runs;
        if (resolved_from_ != nullptr) {
            auto endpoints = std::make_unique<ServiceEndpoints>(*resolved_from_, plan, args_.options);
            if (endpoints->usable()) endpoints_ = std::move(endpoints);
        }
        if (resolved_from_ != nullptr && reads_) {
            auto trust = std::make_unique<PolicyTrust>(*resolved_from_, plan, args_.options, *reads_);
            if (trust->usable()) trust_ = std::move(trust);
        }
        reads_.reset();
        // They view what was resolved: the read, followed into the document
        // cache it goes back to, or else copied before it goes (objects
        // nginx -t refused left out of a copy of it; no cache)
        const bool follows = resolved_from_ == read_ && done_with_;
        if (!follows) {
            if (endpoints_) endpoints_->copy_objects();
            if (trust_) trust_->copy_objects();
        }
        // what was read, given back before the status is made: the two
        // are not held at once
        MovedObjects moved;
        if (give_back_) give_back_(&moved);
        give_back_ = nullptr;
        if (follows && endpoints_ && !endpoints_->follow(moved)) endpoints_.reset();
        if (follows && trust_ && !trust_->follow(moved)) trust_.reset();
        plan_ = std::move(plan);
        if (on_applied_) on_applied_(*plan_, nginx_runs);
    }

public:
    // An nginx started since on OUTDIR, which holds the plan kept (by its
    // supervisor, which was not there when it was applied): it serves it.
    void notice_nginx()
    {
        if (plan_ && applied_ && !nginx_runs_ && read_pid(args_.reload_pidfile) != 0) serving(true);
    }

    // on_applied_ told again of the configuration applied last
    void tell_again()
    {
        if (plan_ && on_applied_) on_applied_(*plan_, nginx_runs_);
    }

    // Told of each configuration applied, and whether a running nginx
    // serves it (its reload confirmed, its push answered).
    std::function<void(const Plan &, bool nginx_runs)> on_applied_;
    // told what each whole resolve looked up; true: the input changed
    std::function<bool(const ResolveReads &)> on_resolved_;
    // Told that a configuration is being made from the start, before it
    // is read: the one applied last is gone (on_applied_ tells of the next)
    std::function<void()> on_whole_apply_;
    // what apply_whole read, once done with (the cache lent it); where its
    // objects went, told to *moved when not null
    std::function<void(Manifests &&, MovedObjects *moved)> done_with_;

private:
    std::function<void(MovedObjects *)> give_back_;  // apply_whole's read, to done_with_, once
    const Manifests *read_ = nullptr;                // apply_whole's read, while it lasts

private:
    const Args &args_;
    RunMetrics *metrics_;
    fs::path outdir_, staged_;
    bool applied_ = false;
    bool first_ = true;
    RefusalMemory refusals_;
    FirstSeen first_seen_;
    std::string skeleton_, status_;
    TakenObjects taken_;  // the tenant objects of the configuration nginx took last
    std::set<std::string> warned_;
    ApiHeld pushed_;  // what the upstream API holds
    // what the configuration being applied was resolved from
    const Manifests *resolved_from_ = nullptr;
    std::optional<Manifests> isolated_input_;
    // the plan nginx runs, and how EndpointSlice changes reach it
    std::optional<Plan> plan_;
    std::unique_ptr<ServiceEndpoints> endpoints_;
    std::unique_ptr<PolicyTrust> trust_;
    std::optional<ResolveReads> reads_;  // what resolve looked up for the plan being applied
    bool nginx_runs_ = false;  // serving plan_
    static constexpr std::chrono::seconds kCatchUpQuiet{2}, kCatchUpLongest{30};
    std::chrono::steady_clock::time_point last_endpoint_update_{};
    std::optional<std::chrono::steady_clock::time_point> behind_since_;  // OUTDIR's servers
};

}  // namespace

int run_gateway(const Args &args)
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
    ::mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, args.jobs)));
    // Blocks of a megabyte and more (lists, a reply of the upstream API)
    // mapped and unmapped: glibc's moving threshold put them in the heap
    // once a bigger block was freed, where their pages stayed resident
    ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
    count_stop_signals();

    RunMetrics metrics;
    metrics.heartbeat_ms = steady_ms();
    RunningGateway gateway(args, &metrics);
    std::unique_ptr<NginxProcess> nginx;
    if (args.start_nginx) {
        fs::path outdir = fs::absolute(args.outdir).lexically_normal();
        if (outdir.filename().empty()) outdir = outdir.parent_path();
        nginx = std::make_unique<NginxProcess>(args.nginx, outdir, args.options.nginx_version);
        gateway.nginx_ = nginx.get();
    }
    int exit_code = 0;
    WatchedObjects watched;
    DocumentCache documents;  // a change rereads every input, but scans only what changed
    std::unique_ptr<ApiInput> api;
    gateway.done_with_ = [&](Manifests &&m, MovedObjects *moved) { documents.give_back(std::move(m), moved); };
    auto read = [&](Manifests *m) {
        documents.reserve_as_last(m);
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

    // what changed since the last apply, where the input can say
    auto changes = [&]() -> std::optional<ChangeSet> {
        if (args.watch_events) {
            return ChangeSet{watched.take_changes(), [&](const kube::ObjectChange &c) { return watched.json_of(c); }};
        }
        if (api) return ChangeSet{api->take_changes(), [&](const kube::ObjectChange &c) { return api->json_of(c); }};
        return std::nullopt;
    };

    std::unique_ptr<HealthServer> health, metrics_server;
    try {
        const Options &o = args.options;
        if (!o.health_listen.empty()) {
            const unsigned paths = kProbePaths | (o.metrics_listen.empty() ? kMetricsPath : 0);
            health = std::make_unique<HealthServer>("--health-listen", o.health_listen, paths, &metrics);
        }
        if (!o.metrics_listen.empty()) {
            metrics_server = std::make_unique<HealthServer>("--metrics-listen", o.metrics_listen, kMetricsPath, &metrics);
        }
    } catch (const std::exception &e) {
        std::cerr << "gateway2nginx: " << e.what() << "\n";
        return 1;
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
        gateway.on_resolved_ = [&](const ResolveReads &reads) { return api->want(reads); };
        gateway.on_whole_apply_ = [&] { api->withdraw_status(); };
    } else if (!args.watch_events) {
        inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (inotify < 0) {
            std::cerr << "gateway2nginx: inotify: " << std::strerror(errno) << "\n";
            return 1;
        }
        watch_paths(inotify, args.inputs);
        say("watching " + std::to_string(args.inputs.size()) + " input(s); applying what they hold");
        gateway.apply(std::nullopt, read);
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
    // the loop turns: said to /healthz, and to --alive-file once a second
    AliveFile alive(args.alive_file);
    auto heartbeat = [&] {
        metrics.heartbeat_ms = steady_ms();
        alive.beat(metrics.heartbeat_ms);
    };
    while (!g_stop) {
        heartbeat();
        if (std::string how; gateway.nginx_failed_ || (nginx && nginx->started() && !nginx->running(&how))) {
            if (!how.empty()) say("nginx ended (" + how + "); so does gateway2nginx");
            exit_code = 1;
            break;
        }
        if (!args.nginx_control.empty()) gateway.notice_nginx();
        if (api && api->wants_status()) gateway.tell_again();
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
        auto wait_until = [&](clock::time_point due) {
            const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(due - clock::now()).count();
            timeout = static_cast<int>(std::clamp<long>(ms, 0, timeout));
        };
        if (dirty) wait_until(std::min(last_event + quiet_spell, first_event + longest_wait));
        if (const auto catch_up = gateway.catch_up_due()) wait_until(*catch_up);
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
            gateway.apply(changes(), read);
            if (metrics.ready) metrics.observe_latency(std::chrono::duration<double>(clock::now() - first_event).count());
        } else if (!dirty && gateway.catch_up_due() && now >= *gateway.catch_up_due()) {
            gateway.catch_up();
        }
        if (eof && !dirty) {
            say("the watch stream ended");
            break;
        }
    }
    metrics.ready = false;
    gateway.catch_up();
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
