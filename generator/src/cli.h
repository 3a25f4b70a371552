// The command line shared by the one-shot run and `gateway2nginx run`:
// options, and the steps that stage, check and swap OUTDIR.
#pragma once

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "parse.h"
#include "isolate.h"
#include "plan.h"

namespace g2n {

struct Args {
    std::vector<std::string> inputs;
    std::string outdir;
    Options options;
    unsigned jobs = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    bool check = false;
    bool module_dir_given = false;
    std::string nginx = "/usr/sbin/nginx";
    std::string reload_pidfile;
    // gateway2nginx run
    bool run = false;
    bool watch_events = false;  // standard input is kubectl's --output-watch-events stream
    int debounce_ms = 250;
};

// argv after the program name (and after "run" for `gateway2nginx run`);
// exits with the usage on a bad option.
Args parse_args(int argc, char **argv, bool run);

// nginx -t refused the configuration of `manifests` without `left_out`
// (`refusal`): finds the other tenant objects at fault (added to *found)
// and stages the configuration without them and `left_out`, each rejected
// with its reason. nullopt when nginx refuses even the configuration
// without any tenant object (the operator's to fix).
std::optional<Plan> stage_without_refused(const Manifests &manifests, const std::string &refusal, const Args &args,
                                          const std::filesystem::path &staged,
                                          const std::vector<Exclusion> &left_out = {},
                                          std::vector<Exclusion> *found = nullptr);

// A fresh sibling directory, swapped with OUTDIR in one rename; the running
// nginx's pid file, logs and temp files move into it first.
void replace_dir(const std::filesystem::path &staged, const std::filesystem::path &outdir);

}  // namespace g2n
