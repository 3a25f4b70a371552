// run: `gateway2nginx supervise`, nginx's side when gateway2nginx run
// configures it from a container of its own (run --nginx-control): it
// starts nginx on OUTDIR, reloads it when run asks over the control socket
// (apply/nginx_control.h), and on SIGTERM lets it accept for the shutdown
// delay, then drain. It reads no input and holds no credential: the
// internet-facing process and everything it can reach stay apart from the
// one that talks to the API server.
#pragma once

#include "cli.h"

namespace g2n {

// Until SIGTERM or SIGINT, or nginx ending by itself (then 1): the exit code.
int supervise_nginx(const SuperviseArgs &args);

}  // namespace g2n
