// JSON text the modules write (the status document, the upstream API's
// answers, log lines quoting what a peer sent): one way to spell any
// byte string. Pure C++, no nginx types.
#pragma once

#include <string>
#include <string_view>

namespace gtls {

// `text` as a JSON string literal, quoted: '"' and '\' escaped, control
// characters and DEL as \u00XX, valid UTF-8 as it is, and each byte of
// what is not valid UTF-8 (a stray continuation byte, an overlong or
// surrogate encoding, a sequence cut short, a byte UTF-8 never uses) as
// \ufffd: whatever a name holds, the document stays valid JSON, and one
// name is spelled one way wherever it is written.
std::string json_string(std::string_view text);

// "JSON line L, column C" of byte `offset` in `text`: where a reader of
// the modules' JSON (the upstream API's bodies) says a fault stands.
std::string json_position(std::string_view text, size_t offset);

}  // namespace gtls
