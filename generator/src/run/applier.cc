#include "run/applier.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "apply/nginx_check.h"
#include "apply/output.h"
#include "plan/upstreams.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "run/digests.h"
#include "run/process.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

uint64_t thread_cpu_ns()
{
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace

Applier::Applier(const Args &args, RunMetrics *metrics, Input &input, NginxProcess *nginx)
    : args_(args), metrics_(metrics), input_(input), nginx_(nginx)
{
    outdir_ = fs::absolute(args.outdir).lexically_normal();
    if (outdir_.filename().empty()) outdir_ = outdir_.parent_path();
    staged_ = outdir_.parent_path() / ("." + outdir_.filename().string() + ".new-" + std::to_string(::getpid()));
}

void Applier::apply(std::optional<ChangeSet> changes)
{
    metrics_->applies++;
    const uint64_t cpu_before = thread_cpu_ns();
    if (changes && object_changes_applied(*changes)) {
        // applied alone: EndpointSlices alone, routes and Services (with slices), or the objects
        // CA references name (with slices)
        KindChange how = KindChange::Endpoints;
        for (const kube::ObjectChange &c : changes->objects) {
            if (change_of(c) != KindChange::Endpoints) how = change_of(c);
        }
        (how == KindChange::Routes  ? metrics_->route_cpu_ns
         : how == KindChange::Trust ? metrics_->trust_cpu_ns
                                    : metrics_->endpoint_cpu_ns) += thread_cpu_ns() - cpu_before;
        return;
    }
    changes.reset();  // a first sync's or a relist's names every object: not held through the whole way
    apply_whole();
    ::malloc_trim(0);  // the millions of small blocks it freed, handed back
    metrics_->whole_cpu_ns += thread_cpu_ns() - cpu_before;
}

// What `changes` ask is done, when the plan kept can follow them
// (nothing changed; EndpointSlices, ConfigMaps and Secrets alone; or
// routes and Services, with EndpointSlices or not)
bool Applier::object_changes_applied(const ChangeSet &changes)
{
    if (endpoints_ == nullptr) return false;
    if (changes.objects.empty()) {
        say("no change to the configuration or the status");
        serving(nginx_runs_now());
        return true;
    }
    // routes and Services, with EndpointSlices or not, are RouteChanges'
    const bool routes = std::all_of(changes.objects.begin(), changes.objects.end(), [](const kube::ObjectChange &c) {
        return change_of(c) == KindChange::Routes || change_of(c) == KindChange::Endpoints;
    }) && std::any_of(changes.objects.begin(), changes.objects.end(), [](const kube::ObjectChange &c) {
        return change_of(c) == KindChange::Routes;
    });
    return routes ? apply_route_changes(changes) : apply_object_changes(changes);
}

// Read, resolved, rendered and applied from the start: by a push when
// the skeleton nginx runs is unchanged, else by a reload.
void Applier::apply_whole()
{
    finish_catch_up();  // (OUTDIR is the whole way's now)
    endpoints_.reset();
    trust_.reset();
    routes_.reset();
    // (what nginx runs of it: the backends a change may keep)
    running_upstreams_list_ = plan_ ? std::move(plan_->upstreams) : std::vector<Upstream>();
    plan_.reset();
    input_.withdraw_status();
    Manifests manifests;
    read_ = &manifests;
    try {
        documents_.reserve_as_last(&manifests);
        input_.read(&manifests, args_.jobs, &documents_);
        documents_.forget_unused();
        apply_read(manifests);
    } catch (const InputError &e) {
        metrics_->bad_inputs++;
        say(std::string("bad input, nothing changed: ") + e.what());
    }
    give_back(nullptr);
    running_upstreams_list_ = std::vector<Upstream>();
}

// What apply_whole read, given back to the document cache it came from
// (once); where its objects went told to *moved when not null.
void Applier::give_back(MovedObjects *moved)
{
    if (read_ == nullptr) return;
    documents_.give_back(std::move(*read_), moved);
    read_ = nullptr;
}

void Applier::apply_read(Manifests &manifests)
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
        if (input_.want(*reads_)) {
            say("ConfigMaps or Secrets newly referred to were fetched: reading again");
            reads_.reset();
            resolved_from_ = nullptr;
            return;
        }
        std::string skeleton = skeleton_digest(plan, args_.options);
        if (applied_ && skeleton != skeleton_) skeleton = hold_in_spares(&plan, skeleton);
        if (!applied_ && first_ && outdir_holds(outdir_, plan, args_.options)) {
            // started beside an nginx that runs what OUTDIR holds
            applied_ = true;
            hold_skeleton(skeleton, skeleton_parts(plan, args_.options));
            pushed_ = ApiHeld::of(plan, args_.options);
            status_ = status_digest(plan, args_.options);
            say("OUTDIR already holds this configuration: nothing to apply");
            if (!nginx_runs_now() && starts_nginx() && !start_nginx() && nginx_failed_) return;
            applied(std::move(plan), nginx_runs_now());
        } else if (applied_ && skeleton == skeleton_) {
            apply_through_api(std::move(plan));
        } else {
            spares_.clear();  // a reload renders every backend in its own upstream{}
            apply_configuration(manifests, std::move(plan), recalled, std::nullopt);
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

// The skeleton nginx runs now, and its parts: what the next reload is for
void Applier::hold_skeleton(const std::string &skeleton, SkeletonParts parts)
{
    skeleton_ = skeleton;
    skeleton_parts_ = std::move(parts);
}

// --routes table: what nginx lacks of `plan` (whose skeleton is
// `skeleton`), backends new to it or whose TLS turns on or off, put in
// spares' places (kept where they are; --spare-backends), and the
// backends it runs that the plan dropped
// kept (retain_upstreams); when a reload is needed all the same, resolved
// again with neither, so that the reload gives the spares back and lets
// go of what no route names. The skeleton of the plan now.
std::string Applier::hold_in_spares(Plan *plan, const std::string &skeleton)
{
    if (args_.options.routes != "table") return skeleton;
    const size_t retained = retain_upstreams(plan, running_upstreams_list_);
    SpareAssignment assigned;
    if (args_.options.spare_backends > 0) {
        assigned = assign_spares(plan, running_upstreams_, spares_, &running_upstreams_list_);
    }
    if (assigned.empty() && retained == 0) return skeleton;
    std::string held = skeleton_digest(*plan, args_.options);
    if (held == skeleton_) {
        for (const auto &[upstream, spare] : assigned) {
            if (spares_.count(upstream)) continue;
            say("backend " + upstream + (running_upstreams_.count(upstream) ? " turns TLS on or off" : " new to nginx")
                + ": held by spare " + spare);
        }
        spares_ = std::move(assigned);
        return held;
    }
    reads_.emplace();
    *plan = resolve(*resolved_from_, args_.options, &*reads_);
    spares_.clear();
    return skeleton;
}

// When OUTDIR, behind the servers pushed since it was written, is to
// be written again: after a quiet spell, or at the latest a while after
// it fell behind.
std::optional<std::chrono::steady_clock::time_point> Applier::catch_up_due() const
{
    if (const int64_t failed = catch_up_failed_at_; failed != 0) {
        return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(failed)) + kCatchUpQuiet;
    }
    if (!behind_since_) return std::nullopt;
    return std::min(last_push_ + kCatchUpQuiet, *behind_since_ + kCatchUpLongest);
}

// OUTDIR as the plan nginx runs renders it, with the servers pushed
// since: what a restarted nginx reads.
void Applier::catch_up(bool wait)
{
    finish_catch_up();  // one at a time
    if (behind_since_ && plan_) {
        behind_since_.reset();
        // a copy: the applier changes plan_ in place meanwhile (what the
        // copy shares is const, but for the text table, whose texts stay
        // where they are while more are added)
        const auto started = std::chrono::steady_clock::now();
        auto plan = std::make_shared<const Plan>(*plan_);
        const auto copied = std::chrono::steady_clock::now();
        catching_up_ = std::async(std::launch::async, [this, plan, started, copied] {
            try {
                write_configuration(*plan, args_.options, staged_, false);
                {
                    std::lock_guard<std::mutex> lock(outdir_swap_);
                    replace_dir(staged_, outdir_);
                }
                using std::chrono::duration_cast;
                using ms = std::chrono::milliseconds;
                say("OUTDIR written with the servers pushed since ("
                    + std::to_string(duration_cast<ms>(std::chrono::steady_clock::now() - started).count())
                    + " ms; the plan copied in " + std::to_string(duration_cast<ms>(copied - started).count()) + " ms)");
            } catch (const std::exception &e) {
                std::error_code ec;
                fs::remove_all(staged_, ec);
                say(std::string("writing OUTDIR failed: ") + e.what());
                catch_up_failed_at_ = std::chrono::steady_clock::now().time_since_epoch().count();
            }
        });
    }
    if (wait) finish_catch_up();
}

// The catch-up being written, done; one that failed is due again
void Applier::finish_catch_up()
{
    if (!catching_up_.valid()) return;
    catching_up_.get();
    if (const int64_t failed = catch_up_failed_at_.exchange(0); failed != 0 && !behind_since_) {
        behind_since_ = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(failed));
    }
}

// The servers and trust of `plan` that differ from what nginx holds,
// pushed (and logged) alone; false when the push failed.
bool Applier::push_changed(const Plan &plan, bool *pushed)
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
bool Applier::push(const ApiContent &changed)
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
    if (!changed.routes.empty()) {
        what += (what.empty() ? "" : " and ") + std::string("routes of ") + std::to_string(changed.routes.size())
                + " hostname(s)";
    }
    if (!changed.certificates.empty()) {
        what += (what.empty() ? "" : " and ") + std::to_string(changed.certificates.size())
                + " listener certificate(s)";
    }
    say(what + " pushed to nginx, no reload");
    return true;
}

// The plan kept is served by a running nginx now (when it was applied,
// none might have run yet): said, as applied() says it.
void Applier::serving(bool nginx_runs)
{
    if (!nginx_runs || nginx_runs_) return;
    if (args_.options.routes == "table") sync_nginx(*plan_, "nginx started", false);
    nginx_runs_ = metrics_->ready = true;
    input_.offer_status(*plan_, args_.options, true);
}

// What is wrong with tenants' objects, each said once while it stays
// wrong, whichever way the change is applied.
void Applier::say_new_warnings(const Plan &plan)
{
    std::set<std::string> now(plan.warnings.begin(), plan.warnings.end());
    for (const std::string &w : plan.warnings) {
        if (!warned_.count(w)) say("warning: " + w);
    }
    warned_ = std::move(now);
}

// Same configuration but for servers, trust and route table entries: push
// what changed, with no reload; OUTDIR (and status.yaml) catches up after
// a quiet spell (catch_up), not rendered whole again for each change.
void Applier::apply_through_api(Plan plan)
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
    if (!pushed && status == status_) {
        say("no change to the configuration or the status");
        applied(std::move(plan), nginx_runs_now());
        return;
    }
    status_ = status;
    last_push_ = std::chrono::steady_clock::now();
    if (!behind_since_) behind_since_ = last_push_;
    applied(std::move(plan), nginx_runs_now());
}

// `plan`: of `manifests` without `recalled`, objects nginx -t refused
// before
void Applier::apply_configuration(const Manifests &manifests, Plan plan, const std::vector<Exclusion> &recalled,
                                  std::optional<ReloadReason> reason, bool can_isolate)
{
    metrics_->renders++;
    write_configuration(plan, args_.options, staged_, false);
    std::vector<Exclusion> found;
    // the nginx that takes it (running on OUTDIR, or about to start)
    // must also be able to bind what is new to it
    const bool runs = nginx_runs_now();
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
            applied(std::move(plan), nginx_runs_now());
            return;
        }
        reason = ReloadReason::PushFailed;
    }
    behind_since_.reset();
    status_ = status_digest(plan, args_.options);
    SkeletonParts parts = skeleton_parts(plan, args_.options);
    bool nginx_runs = false, reloaded = false;
    if (!nginx_runs_now()) {
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
        const ReloadReason why = reason ? *reason : reload_reason(skeleton_parts_, parts);
        if (std::string failed = reload_onto(plan, skeleton, parts, why, &refusal); !failed.empty()) {
            status_.clear();
            if (refusal.empty()) {
                applied_ = false;  // what nginx runs is not known: the next change reloads
            } else if (can_isolate) {
                reload_without_refused(manifests, refusal, recalled);  // it runs what it ran
            }
            return;
        }
        reloaded = true;
    }
    if (!reloaded) {
        // (reload_onto holds what it reloaded onto, and whether nginx took
        // what was pushed after it)
        applied_ = true;
        hold_skeleton(skeleton, std::move(parts));
        pushed_ = ApiHeld::of(plan, args_.options);
    }
    taken_ = taken_objects(manifests, recalled, found);
    applied(std::move(plan), nginx_runs);
}

// `plan` is what nginx runs (or will, once started): kept, with what
// EndpointSlice changes need to follow it
void Applier::applied(Plan plan, bool nginx_runs)
{
    if (nginx_runs) metrics_->ready = true;
    if (nginx_runs && !nginx_runs_ && args_.options.routes == "table") sync_nginx(plan, "nginx started", false);
    nginx_runs_ = nginx_runs;
    if (resolved_from_ != nullptr) {
        auto endpoints = std::make_unique<ServiceEndpoints>(*resolved_from_, plan, args_.options);
        if (endpoints->usable()) endpoints_ = std::move(endpoints);
    }
    if (resolved_from_ != nullptr && reads_) {
        auto trust = std::make_unique<PolicyTrust>(*resolved_from_, plan, args_.options, *reads_);
        if (trust->usable()) trust_ = std::move(trust);
        auto routes = std::make_unique<RouteChanges>(*resolved_from_, plan, args_.options, *reads_);
        if (routes->usable()) routes_ = std::move(routes);
    }
    reads_.reset();
    // They view what was resolved: the read, followed into the document
    // cache it goes back to, or else copied before it goes (objects
    // nginx -t refused left out of a copy of it; no cache)
    const bool follows = resolved_from_ != nullptr && resolved_from_ == read_;
    if (!follows) {
        if (endpoints_) endpoints_->copy_objects();
        if (trust_) trust_->copy_objects();
        if (routes_) routes_->copy_objects();
    }
    // what was read, given back before the status is made: the two
    // are not held at once
    MovedObjects moved;
    give_back(&moved);
    if (follows && endpoints_ && !endpoints_->follow(moved)) endpoints_.reset();
    if (follows && trust_ && !trust_->follow(moved)) trust_.reset();
    if (follows && routes_ && !routes_->follow(moved)) routes_.reset();
    plan_ = std::move(plan);
    if (routes_) route_table_bytes_ = route_tables_size(*plan_);
    running_upstreams_.clear();
    for (const Upstream &u : plan_->upstreams) {
        if (u.tenant != kSpareTenant) running_upstreams_.insert(u.name);
    }
    input_.offer_status(*plan_, args_.options, nginx_runs);
}

void Applier::notice_nginx()
{
    if (plan_ && applied_ && !nginx_runs_ && nginx_runs_now()) serving(true);
}

void Applier::tell_again()
{
    if (plan_) input_.offer_status(*plan_, args_.options, nginx_runs_);
}

}  // namespace g2n
