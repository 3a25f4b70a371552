// apply: what touches the host or a running nginx (files, nginx -t,
// reloads, the upstream API); nothing here decides what to serve. This
// file: OUTDIR's files, what render makes of a Plan, in a directory.
#pragma once

#include <filesystem>

#include "plan.h"

namespace g2n {

// Makes `dir` afresh and writes into it nginx.conf, http.conf, stream.conf,
// status.yaml, the Plan's files (certs/ 0700) and the interfaces' token
// files (0600), with empty logs/ and temp/; readable by the group (and
// OUTDIR, logs/, temp/ writable) with options.shared_with_group. `threads`: status.yaml, as large as the rest, is written beside.
void write_configuration(const Plan &plan, const Options &options, const std::filesystem::path &dir, bool threads);

// The bearer tokens of the upstream API and the status endpoint: those in
// `outdir` (the running nginx holds them) where they are valid, else new
// random ones.
void load_operator_tokens(const std::filesystem::path &outdir, Options *options);
// --instance NAME: 1 to 64 of a-z, 0-9 and "-"
bool valid_instance_name(const std::string &name);


// A fresh sibling directory, swapped with OUTDIR in one rename; the running
// nginx's pid file, logs and temp files move into it first. The
// configuration replaced is kept at `previous` if given, else removed.
void replace_dir(const std::filesystem::path &staged, const std::filesystem::path &outdir,
                 const std::filesystem::path &previous = {});

}  // namespace g2n
