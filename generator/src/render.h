// render: nginx text and status YAML from a Plan. No decisions here: the
// same Plan always gives the same bytes.
#pragma once

#include <string>

#include "plan.h"

namespace g2n {

std::string render_nginx_conf(const Plan &plan, const Options &options);
std::string render_http_conf(const Plan &plan, const Options &options = Options{});
std::string render_stream_conf(const Plan &plan);
std::string render_status(const Plan &plan, const Options &options);

}  // namespace g2n
