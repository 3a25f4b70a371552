// libFuzzer target: the whole gateway2nginx pipeline on arbitrary bytes as
// YAML: parse (an InputError is the expected way to refuse), resolve, and
// every rendered file.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "parse.h"
#include "render.h"
#include "resolve.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
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
    return 0;
}
