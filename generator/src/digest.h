// SHA-256, where tenants write what is compared or kept by key: no input
// can make two texts collide, and a digest is all that needs keeping.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace g2n {

// The 32 bytes of the SHA-256 of `text`.
std::string sha256(std::string_view text);

// An ostream whose digest() is the SHA-256 of what was written to it: a
// whole configuration digested as it is rendered, never held as one text.
class Sha256Stream : public std::ostream {
public:
    Sha256Stream();
    ~Sha256Stream() override;
    // The 32 bytes; the stream is done with
    std::string digest();

private:
    class Buffer : public std::streambuf {
    public:
        explicit Buffer(EVP_MD_CTX *ctx) : ctx_(ctx) { setp(bytes_, bytes_ + sizeof bytes_); }
        int sync() override;
        int_type overflow(int_type c) override;

    private:
        EVP_MD_CTX *ctx_;
        char bytes_[16384];
    };
    EVP_MD_CTX *ctx_;
    Buffer buffer_;
};

}  // namespace g2n
