// A listener's listen directives, shared by render/http.cc and
// render/stream.cc (private to render/).
#pragma once

#include <string>
#include <vector>

#include "render/nginx_text.h"
#include "options.h"

namespace g2n {

// `listen` (ADDRESS:PORT) with `params`; on every IPv4 address (0.0.0.0)
// with options.listen_ipv6_too, on every IPv6 address ([::]:PORT) too,
// with the same parameters: nginx binds that one IPv6-only, so clients of
// either family keep their own addresses ($remote_addr, X-Forwarded-For).
void render_listen(nginx::Writer &w, const std::string &listen, const std::vector<nginx::Token> &params,
                   const Options &options);

}  // namespace g2n
