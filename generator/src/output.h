// Writing OUTDIR's files: what render makes of a Plan, in a directory.
#pragma once

#include <filesystem>

#include "plan.h"

namespace g2n {

// Makes `dir` afresh and writes into it nginx.conf, http.conf, stream.conf,
// status.yaml and the Plan's files (certs/ 0700), with empty logs/ and
// temp/. `threads`: status.yaml, as large as the rest, is written beside.
void write_configuration(const Plan &plan, const Options &options, const std::filesystem::path &dir, bool threads);

}  // namespace g2n
