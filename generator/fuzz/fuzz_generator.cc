// libFuzzer target: the whole gateway2nginx pipeline on arbitrary bytes as
// YAML: parse (an InputError is the expected way to refuse), resolve, and
// every rendered file, with the upstream API on and off (zones, the
// skeleton gateway2nginx run compares); and the same bytes cut into
// watch events as `gateway2nginx run --watch-events` reads its stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "parse.h"
#include "render.h"
#include "resolve.h"
#include "run.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string input(reinterpret_cast<const char *>(data), size);
    // every cut moves forward: the stream is never read in place forever
    for (size_t at = 0, end; (end = g2n::json_value_end(input, at)) != std::string::npos; at = end) {
        if (end <= at || end > input.size()) std::abort();
    }

    std::istringstream in(input);
    g2n::Manifests manifests;
    try {
        g2n::parse_stream(in, "fuzz.yaml", &manifests);
    } catch (const g2n::InputError &) {
        return 0;
    }
    g2n::Options options;
    g2n::Plan plan = g2n::resolve(manifests, options);
    g2n::render_nginx_conf(plan, options);
    g2n::render_http_conf(plan, options);
    g2n::render_stream_conf(plan);
    g2n::render_status(plan, options);
    options.upstream_api = "127.0.0.1:9114";
    g2n::render_http_conf(plan, options);
    options.endpoint_skeleton = true;
    g2n::render_http_conf(plan, options);
    for (const g2n::Upstream &u : plan.upstreams) {
        if (g2n::api_replaceable(u)) g2n::upstream_servers_api_json(u);
    }
    return 0;
}
