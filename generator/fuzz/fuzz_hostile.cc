// libFuzzer target for the property of issue 16 (hostile_property.h): the
// first two bytes choose a tenant field of the benign manifests, the rest
// is the value written there; any failure of the property aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../tests/hostile_property.h"

namespace {

std::string cert_file(const char *name)
{
    const char *dir = std::getenv("GTLS_TEST_CERTS");
    std::ifstream in(std::string(dir ? dir : "build/test-certs") + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

const g2n_test::HostileProperty &property()
{
    static const g2n_test::HostileProperty p(
        g2n_test::hostile_benign_manifests(cert_file("ca.crt"), cert_file("leaf.crt"), cert_file("leaf.key")));
    return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const g2n_test::HostileProperty &p = property();
    if (!p.baseline().error.empty()) {
        std::fprintf(stderr, "the benign manifests do not render (GTLS_TEST_CERTS?): %s\n", p.baseline().error.c_str());
        std::abort();
    }
    if (size < 2) return 0;
    size_t index = (static_cast<size_t>(data[0]) << 8 | data[1]) % p.paths().size();
    std::string failure = p.check(index, std::string(reinterpret_cast<const char *>(data) + 2, size - 2));
    if (!failure.empty()) {
        std::fprintf(stderr, "%s\n", failure.substr(0, 4000).c_str());
        std::abort();
    }
    return 0;
}
