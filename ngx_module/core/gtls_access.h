// Who may use an operator's interface (the upstream API, the status
// endpoint). A caller's address alone is no credential: nginx proxies a
// tenant's request from its own address, to wherever the tenant's endpoint
// points. The credential is a bearer token that only the operator can read
// (a file of mode 0600 or 0400), which a proxied request cannot carry
// unless its sender already knows it. Pure C++, no nginx types.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace gtls {

inline constexpr size_t kMinAccessTokenBytes = 32;
inline constexpr size_t kMaxAccessTokenBytes = 1024;

// The SHA-256 of a token: what is kept and compared, never the token.
using AccessTokenDigest = std::array<unsigned char, 32>;

// The token in `path`: one line of 32 to 1,024 visible ASCII characters
// (a final newline is not part of it), in a regular file that neither its
// group nor others may read or write; with `group_may_read`, its group may
// read it (nginx and the process that calls the interface are users of one
// group, apart: 0640 or 0440). Throws std::runtime_error naming the file
// and what is wrong.
AccessTokenDigest read_access_token_file(const std::string &path, bool group_may_read = false);

// Whether `authorization` (an Authorization header's value) is "Bearer
// TOKEN" with the token of `digest`, compared in constant time.
bool bearer_token_matches(std::string_view authorization, const AccessTokenDigest &digest);

// A token's digest, as read_access_token_file keeps it.
AccessTokenDigest access_token_digest(std::string_view token);

// Whether `token` may be kept in a token file: 32 to 1,024 characters of
// RFC 6750's b64token alphabet (letters, digits, -._~+/ and trailing =).
bool valid_access_token(std::string_view token);

}  // namespace gtls
