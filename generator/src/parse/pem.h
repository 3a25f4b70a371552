// PEM from input, parsed before anything is written: what reaches OUTDIR
// is OpenSSL's own encoding of what parsed, never the input's bytes.
#pragma once

#include <string>

namespace g2n {

// Every certificate of a PEM text, re-encoded; "" when there is none or
// when a block does not parse.
std::string certificates_pem(const std::string &text);

// A kubernetes.io/tls pair: tls.crt a chain (leaf first), tls.key the
// leaf's private key, unencrypted. Re-encoded into *crt_out / *key_out, or
// false and *why.
bool tls_key_pair(const std::string &crt, const std::string &key, std::string *crt_out, std::string *key_out,
                  std::string *why);

}  // namespace g2n
