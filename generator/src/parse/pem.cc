#include "parse/pem.h"

#include <memory>
#include <vector>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace g2n {

namespace {

struct BioFree {
    void operator()(BIO *b) const { BIO_free(b); }
};
struct X509Free {
    void operator()(X509 *x) const { X509_free(x); }
};
struct KeyFree {
    void operator()(EVP_PKEY *k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

// Never prompts: an encrypted key is refused, not asked for.
int no_password(char *, int, int, void *) { return -1; }

std::string bio_text(BIO *bio)
{
    char *data = nullptr;
    long len = BIO_get_mem_data(bio, &data);
    return len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string();
}

// The certificates of `text`, or none when any block fails to parse.
std::vector<Cert> read_certificates(const std::string &text)
{
    std::vector<Cert> certs;
    Bio in(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
    if (!in) return certs;
    while (X509 *x = PEM_read_bio_X509(in.get(), nullptr, no_password, nullptr)) certs.emplace_back(x);
    // the loop ends at the end of the text (no more PEM) or at a block that
    // does not parse: only the first is acceptable
    unsigned long err = ERR_peek_last_error();
    bool clean_end = err == 0 || ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
    ERR_clear_error();
    if (!clean_end) certs.clear();
    return certs;
}

std::string write_certificates(const std::vector<Cert> &certs)
{
    Bio out(BIO_new(BIO_s_mem()));
    if (!out) return "";
    for (const Cert &c : certs) {
        if (PEM_write_bio_X509(out.get(), c.get()) != 1) return "";
    }
    return bio_text(out.get());
}

}  // namespace

std::string certificates_pem(const std::string &text)
{
    return write_certificates(read_certificates(text));
}

bool tls_key_pair(const std::string &crt, const std::string &key, std::string *crt_out, std::string *key_out,
                  std::string *why)
{
    std::vector<Cert> chain = read_certificates(crt);
    if (chain.empty()) {
        *why = "tls.crt holds no PEM certificate, or a block that does not parse";
        return false;
    }
    Bio key_in(BIO_new_mem_buf(key.data(), static_cast<int>(key.size())));
    Key pkey(key_in ? PEM_read_bio_PrivateKey(key_in.get(), nullptr, no_password, nullptr) : nullptr);
    ERR_clear_error();
    if (!pkey) {
        *why = "tls.key holds no unencrypted PEM private key";
        return false;
    }
    if (X509_check_private_key(chain.front().get(), pkey.get()) != 1) {
        ERR_clear_error();
        *why = "tls.key is not the private key of the first certificate of tls.crt";
        return false;
    }
    Bio key_pem(BIO_new(BIO_s_mem()));
    if (!key_pem || PEM_write_bio_PrivateKey(key_pem.get(), pkey.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
        *why = "tls.key cannot be encoded";
        return false;
    }
    *crt_out = write_certificates(chain);
    *key_out = bio_text(key_pem.get());
    return !crt_out->empty() && !key_out->empty();
}

}  // namespace g2n
