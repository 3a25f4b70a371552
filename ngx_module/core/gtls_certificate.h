// A listener's certificate as the upstream API replaces it
// (gateway_tls_certificate): its chain and private key read from PEM and
// checked to belong together, ready for new handshakes. Pure C++, no
// nginx types.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/evp.h>

#include "gtls_openssl.h"

namespace gtls {

struct EvpPkeyFree {
    void operator()(EVP_PKEY *p) const { EVP_PKEY_free(p); }
};
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, EvpPkeyFree>;
struct X509StackFree {
    void operator()(STACK_OF(X509) *p) const { sk_X509_pop_free(p, X509_free); }
};
using X509StackPtr = std::unique_ptr<STACK_OF(X509), X509StackFree>;

struct KeyPair {
    X509Ptr       leaf;
    // the certificates after the leaf, as given: the stack a handshake
    // takes (SSL_use_cert_and_key), made once, not at each handshake
    X509StackPtr  chain{sk_X509_new_null()};
    EvpPkeyPtr    key;
    std::string   sha256;  // of the leaf's DER, lowercase hex
};

// `certificate`: PEM certificates, the leaf first; `key`: one unencrypted
// PEM private key, the leaf's. False, with *error saying which, when
// either does not parse or the key is not the leaf's.
bool key_pair_from_pem(std::string_view certificate, std::string_view key, KeyPair *out, std::string *error);
// The same from two files (a backend policy's client certificate,
// proxy_ssl_policy_certificate); *error names the file at fault.
bool key_pair_from_files(const std::string &certificate, const std::string &key, KeyPair *out, std::string *error);

// SHA-256 of a certificate's DER, lowercase hex ("" when it cannot be
// encoded)
std::string certificate_sha256(X509 *certificate);
// The same of the first certificate of PEM text ("" when there is none)
std::string leaf_sha256(std::string_view certificate);

}  // namespace gtls
