// Parsing of the directive arguments the module accepts: verification
// modes, SAN SPECs and pin SPECs. No nginx types: unit tested on its own.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gtls {

// GEP-4152 modes; Off leaves verification to stock nginx.
enum class Mode { Off, Strict, AllowExpired, SkipSan, Skip };

std::optional<Mode> parse_mode(std::string_view text);
const char *mode_name(Mode mode);
// allow_expired, skip_san and skip degrade verification (GEP-4152 "Insecure*").
bool mode_is_insecure(Mode mode);
// The operator's gate ("proxy_ssl_verify_insecure deny") refuses a policy
// in an insecure mode wherever the two meet: at load, and where the peer
// is chosen (an upstream{} reached through a variable is known only then).
inline bool gate_refuses(bool gate_denies, Mode mode) { return gate_denies && mode_is_insecure(mode); }

class Regex;  // compiled PCRE2 pattern, defined in gtls_match.cc

enum class SanType { Dns, Uri, Ip, Email };
const char *san_type_name(SanType type);

// One accepted subject alternative name: exact value or anchored regex.
struct SanMatcher {
    SanType type = SanType::Dns;
    bool is_regex = false;
    std::string value;               // DNS lower-cased; IP in binary form
    std::shared_ptr<Regex> regex;    // set when is_regex
    std::string spec;                // as written, for logs and variables
};

// Parses "dns:NAME", "uri:URI", "ip:ADDR", "email:ADDR", "dns~RE", "uri~RE".
// On failure returns nullopt and sets *error to a reason.
std::optional<SanMatcher> parse_san_spec(std::string_view spec, std::string *error);

enum class PinType { Spki, Cert };

struct Pin {
    PinType type = PinType::Spki;
    std::array<unsigned char, 32> digest{};
    std::string spec;  // normalised: "sha256-spki:BASE64" / "sha256-cert:HEX"
};

// Parses "sha256-spki:BASE64" or "sha256-cert:HEX" (colons between hex
// pairs allowed, case-insensitive).
std::optional<Pin> parse_pin_spec(std::string_view spec, std::string *error);

// Encodings shared by pins, variables and logs.
std::string to_hex(const unsigned char *data, size_t len);
std::string to_base64(const unsigned char *data, size_t len);
bool from_base64(std::string_view text, std::vector<unsigned char> *out);

}  // namespace gtls
