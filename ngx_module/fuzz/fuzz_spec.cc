// libFuzzer target: the directive arguments the module parses (mode, SAN
// and pin SPECs, regex SANs compiled by PCRE2), and matching what parsed
// against the rest of the input as a presented name.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gtls_match.h"
#include "gtls_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::string input(reinterpret_cast<const char *>(data), size);
    // "SPEC\nPRESENTED": the part before a newline is the directive argument
    size_t newline = input.find('\n');
    std::string spec = input.substr(0, newline);
    std::string presented = newline == std::string::npos ? spec : input.substr(newline + 1);

    std::string error;
    gtls::parse_mode(spec);
    gtls::parse_pin_spec(spec, &error);
    if (auto matcher = gtls::parse_san_spec(spec, &error)) {
        for (gtls::SanType type : {gtls::SanType::Dns, gtls::SanType::Uri, gtls::SanType::Ip, gtls::SanType::Email}) {
            gtls::san_matches(*matcher, gtls::PresentedName{type, presented});
        }
    }
    gtls::dns_name_matches(spec, presented);
    std::string binary;
    if (gtls::parse_ip(spec, &binary)) gtls::format_ip(binary);
    std::vector<unsigned char> decoded;
    gtls::from_base64(spec, &decoded);
    return 0;
}
