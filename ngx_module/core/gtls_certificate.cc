#include "gtls_certificate.h"

#include <fstream>
#include <sstream>

#include <openssl/err.h>
#include <openssl/pem.h>

namespace gtls {

namespace {

// a key given encrypted is refused, never prompted for
int no_password(char *, int, int, void *)
{
    return 0;
}

BioPtr memory_bio(std::string_view text)
{
    return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

}  // namespace

std::string certificate_sha256(X509 *certificate)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (X509_digest(certificate, EVP_sha256(), md, &len) != 1) {
        ERR_clear_error();
        return {};
    }
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; i++) {
        out += hex[md[i] >> 4];
        out += hex[md[i] & 0xf];
    }
    return out;
}

std::string leaf_sha256(std::string_view certificate)
{
    BioPtr in = memory_bio(certificate);
    X509Ptr leaf(in ? PEM_read_bio_X509(in.get(), nullptr, no_password, nullptr) : nullptr);
    ERR_clear_error();
    return leaf ? certificate_sha256(leaf.get()) : std::string();
}

bool key_pair_from_pem(std::string_view certificate, std::string_view key, KeyPair *out, std::string *error)
{
    KeyPair pair;
    if (!pair.chain) {
        *error = "certificate: out of memory";
        return false;
    }
    BioPtr in = memory_bio(certificate);
    while (in) {
        X509Ptr x(PEM_read_bio_X509(in.get(), nullptr, no_password, nullptr));
        if (!x) break;
        if (!pair.leaf) {
            pair.leaf = std::move(x);
        } else if (sk_X509_push(pair.chain.get(), x.get()) > 0) {
            x.release();  // the stack owns it
        } else {
            *error = "certificate: out of memory";
            return false;
        }
    }
    const unsigned long last = ERR_peek_last_error();
    ERR_clear_error();
    // the end of the text, and nothing else, ends the list
    if (!pair.leaf || ERR_GET_REASON(last) != PEM_R_NO_START_LINE) {
        *error = pair.leaf ? "certificate: a PEM block does not parse as a certificate"
                           : "certificate: holds no PEM certificate";
        return false;
    }
    BioPtr key_in = memory_bio(key);
    pair.key.reset(key_in ? PEM_read_bio_PrivateKey(key_in.get(), nullptr, no_password, nullptr) : nullptr);
    ERR_clear_error();
    if (!pair.key) {
        *error = "key: holds no unencrypted PEM private key";
        return false;
    }
    if (X509_check_private_key(pair.leaf.get(), pair.key.get()) != 1) {
        ERR_clear_error();
        *error = "key: is not the private key of the first certificate";
        return false;
    }
    pair.sha256 = certificate_sha256(pair.leaf.get());
    *out = std::move(pair);
    return true;
}

bool key_pair_from_files(const std::string &certificate, const std::string &key, KeyPair *out, std::string *error)
{
    std::string texts[2];
    const std::string *paths[2] = {&certificate, &key};
    for (int i = 0; i < 2; i++) {
        std::ifstream in(*paths[i], std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        if (!in) {
            *error = "cannot read \"" + *paths[i] + "\"";
            return false;
        }
        texts[i] = text.str();
    }
    if (!key_pair_from_pem(texts[0], texts[1], out, error)) {
        // "certificate: ..." or "key: ..." says which file
        const bool of_key = error->rfind("key:", 0) == 0;
        *error = "\"" + (of_key ? key : certificate) + "\"" + error->substr(of_key ? 4 : 12);
        return false;
    }
    return true;
}

}  // namespace gtls
