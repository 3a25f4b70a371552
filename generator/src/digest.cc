#include "digest.h"

#include <stdexcept>

namespace g2n {

std::string sha256(std::string_view text)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
        throw std::runtime_error("SHA-256 failed");
    }
    return std::string(reinterpret_cast<const char *>(digest), len);
}

Sha256Stream::Sha256Stream() : std::ostream(nullptr), ctx_(EVP_MD_CTX_new()), buffer_(ctx_)
{
    if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(ctx_);
        throw std::runtime_error("SHA-256 failed");
    }
    rdbuf(&buffer_);
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(ctx_); }

int Sha256Stream::Buffer::sync()
{
    const int ok = EVP_DigestUpdate(ctx_, pbase(), static_cast<size_t>(pptr() - pbase()));
    setp(bytes_, bytes_ + sizeof bytes_);
    return ok == 1 ? 0 : -1;
}

Sha256Stream::Buffer::int_type Sha256Stream::Buffer::overflow(int_type c)
{
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
        *pptr() = traits_type::to_char_type(c);
        pbump(1);
    }
    return traits_type::not_eof(c);
}

std::string Sha256Stream::digest()
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (buffer_.pubsync() != 0 || EVP_DigestFinal_ex(ctx_, digest, &len) != 1) {
        throw std::runtime_error("SHA-256 failed");
    }
    return std::string(reinterpret_cast<const char *>(digest), len);
}

}  // namespace g2n
