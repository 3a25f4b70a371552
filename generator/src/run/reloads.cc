#include "run/applier.h"

#include <functional>

#include "apply/nginx_check.h"
#include "apply/nginx_control.h"
#include "apply/output.h"
#include "run/digests.h"
#include "run/process.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

size_t version_digest(const ObjectVersion &v)
{
    return std::hash<std::string>{}(v.identity) ^ (v.content * 0x9e3779b97f4a7c15ULL);
}

}  // namespace

// nginx reloaded onto what is staged (`plan`): "" when it took it (and
// the servers pushed before are made what was rendered), else why not,
// said and counted, nginx's own words in *refusal, and OUTDIR holding
// what nginx runs again (a fresh nginx starts on it).
std::string Applier::reload_onto(const Plan &plan, const std::string &skeleton, const SkeletonParts &parts,
                                 ReloadReason reason, std::string *refusal)
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
    applied_ = true;  // unless what was pushed after it did not reach nginx
    hold_skeleton(skeleton, parts);
    sync_nginx(plan, "the reload", true);
    return "";
}

// What nginx holds made `plan`'s, after `after` (a reload, a start): servers
// pushed before stay across a reload where the configured ones look
// unchanged to nginx, and route tables as last pushed. What was pushed
// before (`held_known`: as pushed_ says) and nginx still lists is not
// pushed again; an nginx that did not run the plan before may hold
// tables of another time, and gets every entry.
void Applier::sync_nginx(const Plan &plan, const std::string &after, bool held_known)
{
    const ApiHeld before = held_known ? std::move(pushed_) : ApiHeld();
    pushed_ = ApiHeld::of(plan, args_.options);
    size_t pushed = 0;
    if (std::string failed = sync_after_reload(plan, args_.options, &before, &pushed); !failed.empty()) {
        say("pushing servers, trust and routes after " + after + " failed: " + failed);
        // what nginx holds is not known: the next change reloads, and
        // pushes again
        applied_ = false;
        return;
    }
    say("after " + after + ", " + std::to_string(pushed)
        + " upstream(s), policy(ies) and hostname(s) pushed; nginx holds the rest");
}

Applier::TakenObjects Applier::taken_objects(const Manifests &manifests, const std::vector<Exclusion> &recalled,
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
void Applier::reload_without_refused(const Manifests &manifests, const std::string &refusal,
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
        if (std::string failed = reload_onto(trial, skeleton, skeleton_parts(trial, args_.options),
                                             ReloadReason::RefusalSearch, &words);
            !failed.empty()) {
            return words.empty() ? failed : words;
        }
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
std::string Applier::reload_nginx(std::string *done, std::string *refusal)
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
bool Applier::starts_nginx() const { return nginx_ != nullptr || !args_.nginx_control.empty(); }

// An nginx runs on OUTDIR (its pid file says)
bool Applier::nginx_runs_now() const
{
    std::lock_guard<std::mutex> lock(outdir_swap_);  // (a catch-up moves nginx.pid across its swap)
    return read_pid(args_.reload_pidfile) != 0;
}

// nginx started on OUTDIR as it is; false when it does not serve (said;
// the loop told to end when run's own nginx did not start, while a
// supervisor not there yet starts it once it is)
bool Applier::start_nginx()
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

}  // namespace g2n
