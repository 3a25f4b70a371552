// run: gateway2nginx beside a running nginx, for as long as it runs. It
// watches its inputs, and after each change runs the stages again and
// applies the outcome through apply/ (a push, or a checked reload).
// May not: compute anything the one-shot run does not.
#pragma once

#include <string>

#include "cli.h"

namespace g2n {

// Reads one input (run/input.h: the -f files and directories, kubectl's
// --output-watch-events stream on standard input, or the Kubernetes API
// with --kubeconfig/--in-cluster), and after each quiet spell of
// --debounce ms (run/debounce.h) applies what changed (run/applier.h):
// servers and trust alone are pushed to gateway_tls_upstream_api (no
// reload); anything else is rendered, checked and swapped into OUTDIR,
// nginx reloaded and the reload confirmed (new workers). A change that
// changes nothing nginx runs neither pushes nor reloads. OUTDIR, status.yaml
// included, always holds the latest configuration. Returns the exit code.
int run_gateway(const Args &args);

}  // namespace g2n
