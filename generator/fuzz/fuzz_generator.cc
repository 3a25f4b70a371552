// libFuzzer target: the whole gateway2nginx pipeline on arbitrary bytes as
// YAML: parse (an InputError is the expected way to refuse), resolve, and
// every rendered file, with the upstream API on and off (zones, the
// skeleton gateway2nginx run compares, the servers and trust it pushes);
// the same bytes read again through run's document cache, which must give
// the same configuration; and the same bytes cut into watch events as
// `gateway2nginx run --watch-events` reads its stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "apply/reload.h"
#include "apply/upstream_api.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "run/run.h"
#include "run/watch_events.h"

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
    const std::string http = g2n::render_http_conf(plan, options);
    g2n::render_stream_conf(plan, options);
    const std::string status = g2n::render_status(plan, options);

    // documents typed from gateway2nginx run's cache (kept across inputs:
    // what an earlier input left must never stand in for this one's)
    // give exactly what a fresh read gives
    static g2n::DocumentCache cache;
    for (int pass = 0; pass < 2; pass++) {
        std::istringstream again(input);
        g2n::Manifests cached;
        g2n::parse_stream(again, "fuzz.yaml", &cached, 1, &cache);
        cache.forget_unused();
        g2n::Plan cached_plan = g2n::resolve(cached, options);
        if (g2n::render_http_conf(cached_plan, options) != http || g2n::render_status(cached_plan, options) != status) {
            std::abort();
        }
    }

    // the configuration for an nginx that picks stream servers by SNI (and
    // has the http2 directive) is cut differently
    g2n::Options newer = options;
    newer.nginx_version = g2n::kNginxStreamServerName;
    g2n::Plan newer_plan = g2n::resolve(manifests, newer);
    g2n::render_http_conf(newer_plan, newer);
    g2n::render_stream_conf(newer_plan, newer);

    options.upstream_api = "127.0.0.1:9114";
    g2n::render_http_conf(plan, options);
    g2n::render_stream_conf(plan, options);
    g2n::api_body(g2n::api_content(plan, options));  // servers and trust, as pushed
    options.endpoint_skeleton = true;
    g2n::render_http_conf(plan, options);
    g2n::render_stream_conf(plan, options);
    return 0;
}
