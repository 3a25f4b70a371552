// Writing OUTDIR's files: what render makes of a Plan, in a directory.
#pragma once

#include <filesystem>

#include "plan.h"

namespace g2n {

// Makes `dir` afresh and writes into it nginx.conf, http.conf, stream.conf,
// status.yaml, the Plan's files (certs/ 0700) and the interfaces' token
// files (0600), with empty logs/ and temp/. `threads`: status.yaml, as large as the rest, is written beside.
void write_configuration(const Plan &plan, const Options &options, const std::filesystem::path &dir, bool threads);

// The bearer tokens of the upstream API and the status endpoint: those in
// `outdir` (the running nginx holds them) where they are valid, else new
// random ones.
void load_operator_tokens(const std::filesystem::path &outdir, Options *options);
// --instance NAME: 1 to 64 of a-z, 0-9 and "-"
bool valid_instance_name(const std::string &name);

}  // namespace g2n
