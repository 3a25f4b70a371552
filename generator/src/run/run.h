// run: gateway2nginx beside a running nginx, for as long as it runs. It
// watches its inputs, and after each change runs the stages again and
// applies the outcome through apply/ (a push, or a checked reload).
// May not: compute anything the one-shot run does not.
#pragma once

#include <string>

#include "cli.h"

namespace g2n {

// Watches the -f directories and files (inotify), or reads kubectl's
// --output-watch-events stream on standard input (--watch-events), and
// after each quiet spell of --debounce ms applies what changed: servers of
// replaceable upstreams alone are pushed to gateway_tls_upstream_api (no
// reload); anything else is rendered, checked and swapped into OUTDIR,
// nginx reloaded and the reload confirmed (new workers). A change that
// changes nothing nginx runs neither pushes nor reloads. OUTDIR, status.yaml
// included, always holds the latest configuration. Events that never fall
// quiet are applied once the first has waited kLongestDebounceWaits quiet
// spells: no tenant holds back the others' changes. Returns the exit code.
int run_gateway(const Args &args);

inline constexpr int kLongestDebounceWaits = 4;

}  // namespace g2n
