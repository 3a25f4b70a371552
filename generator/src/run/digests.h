// What nginx runs and what OUTDIR holds, compared by digest: whether a
// new plan needs a reload, whether the status changed, whether OUTDIR
// already holds a plan (run started beside an nginx that serves it).
#pragma once

#include <filesystem>
#include <string>

#include "options.h"
#include "plan.h"

namespace g2n {

// What a reload would change: every file nginx reads, with the servers of
// replaceable upstreams and the trust of replaceable policies left out.
std::string skeleton_digest(const Plan &plan, const Options &options);
// What status.yaml says.
std::string status_digest(const Plan &plan, const Options &options);
// Every file nginx reads is in `outdir` as `plan` renders it.
bool outdir_holds(const std::filesystem::path &outdir, const Plan &plan, const Options &options);

}  // namespace g2n
