// run's applier: what an input holds, applied to nginx. The whole way
// (read, resolved, rendered, pushed when the skeleton nginx runs is
// unchanged, else written, checked and reloaded: applier.cc), or, for
// EndpointSlices, ConfigMaps and Secrets alone, only the servers and trust
// they change, pushed (object_changes.cc). Reloads, and the search for
// what a running nginx refuses, are reloads.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "apply/isolate.h"
#include "apply/nginx_process.h"
#include "apply/reload.h"
#include "apply/upstream_api.h"
#include "cli.h"
#include "kind_table.h"
#include "parse/parse.h"
#include "plan/spare_assignment.h"
#include "resolve/policy_trust.h"
#include "resolve/route_changes.h"
#include "resolve/service_endpoints.h"
#include "run/health.h"
#include "run/digests.h"
#include "run/input.h"

namespace g2n {

// How a change to the kind of `change` is applied (kind_table.h)
KindChange change_of(const kube::ObjectChange &change);

class Applier {
public:
    // `nginx`: the nginx run starts itself (--start-nginx), else null
    Applier(const Args &args, RunMetrics *metrics, Input &input, NginxProcess *nginx);

    // Applies what the input holds now. `changes`: what changed since the
    // last call, when the input can say; then EndpointSlice changes alone
    // recompute only the Services they name, and ConfigMap and Secret
    // changes only the trust of the policies reading them.
    void apply(std::optional<ChangeSet> changes);

    // When OUTDIR, behind what was pushed since it was written, is to
    // be written again: after a quiet spell, or at the latest a while after
    // it fell behind.
    std::optional<std::chrono::steady_clock::time_point> catch_up_due() const;
    // OUTDIR as the plan nginx runs renders it, with the servers pushed
    // since: what a restarted nginx reads. Written on a thread of its own
    // from a copy of the plan (changes go on meanwhile); `wait`: done
    // before it returns (run stopping).
    void catch_up(bool wait = false);

    // An nginx started since on OUTDIR, which holds the plan kept (by its
    // supervisor, which was not there when it was applied): it serves it.
    void notice_nginx();
    // The status of the configuration applied last offered again.
    void tell_again();
    // run's own nginx did not start: the loop ends
    bool nginx_failed() const { return nginx_failed_; }

private:
    // The tenant objects of the configuration nginx took (all but those
    // left out), by 64-bit digests of their identities and of their
    // versions: at 40,000 objects a fraction of their strings
    struct TakenObjects {
        std::unordered_set<size_t> versions, identities;
    };

    // applier.cc: the whole way
    bool object_changes_applied(const ChangeSet &changes);
    void apply_whole();
    void give_back(MovedObjects *moved);
    void apply_read(Manifests &manifests);
    void apply_through_api(Plan plan);
    std::string hold_in_spares(Plan *plan, const std::string &skeleton);
    // `reason`: none, what changed says (reload_reason)
    void apply_configuration(const Manifests &manifests, Plan plan, const std::vector<Exclusion> &recalled,
                             std::optional<ReloadReason> reason, bool can_isolate = true);
    void hold_skeleton(const std::string &skeleton, SkeletonParts parts);
    void applied(Plan plan, bool nginx_runs);
    void serving(bool nginx_runs);
    void say_new_warnings(const Plan &plan);
    bool push_changed(const Plan &plan, bool *pushed = nullptr);
    bool push(const ApiContent &changed);

    // object_changes.cc: EndpointSlices, ConfigMaps and Secrets alone;
    // HTTPRoutes and GRPCRoutes alone
    bool apply_object_changes(const ChangeSet &changes);
    bool apply_route_changes(const ChangeSet &changes);
    void pushed_alone();

    // reloads.cc
    std::string reload_onto(const Plan &plan, const std::string &skeleton, const SkeletonParts &parts,
                            ReloadReason reason, std::string *refusal);
    void reload_without_refused(const Manifests &manifests, const std::string &refusal,
                                const std::vector<Exclusion> &recalled);
    std::string reload_nginx(std::string *done, std::string *refusal);
    void sync_nginx(const Plan &plan, const std::string &after, bool held_known);
    bool starts_nginx() const;
    bool start_nginx();
    bool nginx_runs_now() const;
    static TakenObjects taken_objects(const Manifests &manifests, const std::vector<Exclusion> &recalled,
                                      const std::vector<Exclusion> &found);

    const Args &args_;
    RunMetrics *metrics_;
    Input &input_;
    NginxProcess *nginx_;
    bool nginx_failed_ = false;  // run's own nginx did not start
    std::filesystem::path outdir_, staged_;
    DocumentCache documents_;  // a change reads only files whose stamp changed, and scans only what changed

    // what nginx runs
    bool applied_ = false;
    bool first_ = true;
    std::string skeleton_, status_;
    SkeletonParts skeleton_parts_;  // of skeleton_: what a reload is for
    ApiHeld pushed_;      // what the upstream API holds
    SpareAssignment spares_;  // backends new to nginx in spares' places (--spare-backends)
    std::set<std::string> running_upstreams_;  // of the plan applied, spares left out
    std::vector<Upstream> running_upstreams_list_;  // its upstreams, while a change is applied whole
    TakenObjects taken_;  // the tenant objects of the configuration nginx took last
    bool nginx_runs_ = false;  // serving plan_
    RefusalMemory refusals_;
    FirstSeen first_seen_;
    std::set<std::string> warned_;

    // The read of the whole way, while it lasts (the document cache lent
    // it), and what the configuration being applied was resolved from:
    // that read, or a copy without objects nginx refused
    Manifests *read_ = nullptr;
    const Manifests *resolved_from_ = nullptr;
    std::optional<Manifests> isolated_input_;
    std::optional<ResolveReads> reads_;  // what resolve looked up for the plan being applied

    // the plan nginx runs, and the views EndpointSlice, ConfigMap,
    // Secret and route changes follow it by
    std::optional<Plan> plan_;
    std::unique_ptr<ServiceEndpoints> endpoints_;
    std::unique_ptr<PolicyTrust> trust_;
    std::unique_ptr<RouteChanges> routes_;
    size_t route_table_bytes_ = 0;  // route_tables_size() of plan_

    static constexpr std::chrono::seconds kCatchUpQuiet{2}, kCatchUpLongest{30};
    std::chrono::steady_clock::time_point last_push_{};
    std::optional<std::chrono::steady_clock::time_point> behind_since_;  // OUTDIR, behind what was pushed
    // whether the catch-up failed, and the catch-up being written (last:
    // destroyed first, it waits for its thread); OUTDIR's state (nginx.pid)
    // is read apart from its swap
    mutable std::mutex outdir_swap_;
    std::atomic<int64_t> catch_up_failed_at_{0};  // steady clock ns; 0: it did not fail
    std::future<void> catching_up_;
    void finish_catch_up();
};

}  // namespace g2n
