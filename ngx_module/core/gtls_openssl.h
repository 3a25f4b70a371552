// RAII owners for the OpenSSL objects the core creates. No nginx types here.
#pragma once

#include <memory>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace gtls {

struct X509Free {
    void operator()(X509 *p) const { X509_free(p); }
};
struct X509StoreFree {
    void operator()(X509_STORE *p) const { X509_STORE_free(p); }
};
struct X509StoreCtxFree {
    void operator()(X509_STORE_CTX *p) const { X509_STORE_CTX_free(p); }
};
struct GeneralNamesFree {
    void operator()(GENERAL_NAMES *p) const { GENERAL_NAMES_free(p); }
};
struct BioFree {
    void operator()(BIO *p) const { BIO_free(p); }
};
struct EvpMdCtxFree {
    void operator()(EVP_MD_CTX *p) const { EVP_MD_CTX_free(p); }
};

using X509Ptr = std::unique_ptr<X509, X509Free>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, X509StoreCtxFree>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, GeneralNamesFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;
using EvpMdCtxPtr = std::unique_ptr<EVP_MD_CTX, EvpMdCtxFree>;

// Trust stores are shared between policies that name the same CA file.
using X509StoreShared = std::shared_ptr<X509_STORE>;

}  // namespace gtls
