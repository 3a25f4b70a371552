// libFuzzer target: CA bundles and pin certificate files as the module
// loads them (proxy_ssl_verify_ca, *_pin_certificate), from a file.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "gtls_verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const std::string path = "/tmp/gtls-fuzz-pem-" + std::to_string(getpid()) + ".pem";
    FILE *f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);

    std::string error;
    gtls::X509StoreShared store = gtls::load_trust_store(path, &error);
    std::vector<gtls::Pin> pins;
    gtls::load_pin_certificates(path, &pins, &error);
    return 0;
}
