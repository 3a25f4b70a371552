// What nginx runs and what OUTDIR holds, compared by digest: whether a
// new plan needs a reload, whether the status changed, whether OUTDIR
// already holds a plan (run started beside an nginx that serves it).
#pragma once

#include <filesystem>
#include <string>

#include "options.h"
#include "plan.h"
#include "run/health.h"

namespace g2n {

// What a reload would change: every file nginx reads, with the servers of
// replaceable upstreams and the trust of replaceable policies left out.
std::string skeleton_digest(const Plan &plan, const Options &options);
// The parts of the skeleton a reload is told apart by, each a digest:
// the listeners (sockets, server names, TLS and client validation, and
// nginx.conf), the files written (certificates, keys, the CA bundles the
// trust API does not replace), stream{} (TLSRoute, TCPRoute, UDPRoute
// servers), the upstream{} blocks. What differs elsewhere is routes
// served as locations.
struct SkeletonParts {
    std::string listeners, certificates, stream, backends;
};
SkeletonParts skeleton_parts(const Plan &plan, const Options &options);
// Why a reload from `before` to `after` is needed: the first part that
// differs, else ReloadReason::Routes.
ReloadReason reload_reason(const SkeletonParts &before, const SkeletonParts &after);
// What status.yaml says.
std::string status_digest(const Plan &plan, const Options &options);
// Every file nginx reads is in `outdir` as `plan` renders it.
bool outdir_holds(const std::filesystem::path &outdir, const Plan &plan, const Options &options);

}  // namespace g2n
