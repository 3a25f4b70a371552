#include "gtls_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace gtls {

bool valid_access_token(std::string_view token)
{
    if (token.size() < kMinAccessTokenBytes || token.size() > kMaxAccessTokenBytes) return false;
    size_t i = 0;
    for (; i < token.size(); i++) {
        const char c = token[i];
        const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '.' && c != '_' && c != '~' && c != '+' && c != '/') break;
    }
    while (i < token.size() && token[i] == '=') i++;
    return i == token.size();
}

AccessTokenDigest access_token_digest(std::string_view token)
{
    AccessTokenDigest digest{};
    unsigned int len = 0;
    if (EVP_Digest(token.data(), token.size(), digest.data(), &len, EVP_sha256(), nullptr) != 1 || len != digest.size()) {
        throw std::runtime_error("SHA-256 failed");
    }
    return digest;
}

AccessTokenDigest read_access_token_file(const std::string &path, bool group_may_read)
{
    const mode_t refused = group_may_read ? 037 : 077;
    auto fail = [&path](const std::string &what) -> std::runtime_error {
        return std::runtime_error("access token file \"" + path + "\" " + what);
    };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0) throw fail(std::string("cannot be opened: ") + std::strerror(errno));
    struct stat st {};
    std::string text;
    const bool stated = ::fstat(fd, &st) == 0;
    if (stated && S_ISREG(st.st_mode) && (st.st_mode & refused) == 0 && st.st_size <= static_cast<off_t>(kMaxAccessTokenBytes + 2)) {
        char buf[kMaxAccessTokenBytes + 3];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) text.assign(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    if (!stated || !S_ISREG(st.st_mode)) throw fail("is not a regular file");
    if ((st.st_mode & refused) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw fail(group_may_read ? std::string("may be written by its group, or read or written by others (mode ")
                                        + mode + "): it must be 0640, 0600, 0440 or 0400"
                                  : std::string("may be read or written by its group or others (mode ") + mode
                                        + "): it must be 0600 or 0400");
    }
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (!valid_access_token(text)) {
        throw fail("does not hold a token: one line of " + std::to_string(kMinAccessTokenBytes) + " to "
                   + std::to_string(kMaxAccessTokenBytes)
                   + " characters of letters, digits, -._~+/ (and = at the end) was expected");
    }
    AccessTokenDigest digest = access_token_digest(text);
    OPENSSL_cleanse(text.data(), text.size());
    return digest;
}

bool bearer_token_matches(std::string_view authorization, const AccessTokenDigest &digest)
{
    constexpr std::string_view scheme = "bearer ";
    if (authorization.size() <= scheme.size()) return false;
    for (size_t i = 0; i < scheme.size(); i++) {
        const char c = authorization[i];
        if ((c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c) != scheme[i]) return false;
    }
    std::string_view token = authorization.substr(scheme.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    if (token.empty() || token.size() > kMaxAccessTokenBytes) return false;
    // digests of equal length: the comparison's time says nothing of the token
    const AccessTokenDigest presented = access_token_digest(token);
    return CRYPTO_memcmp(presented.data(), digest.data(), digest.size()) == 0;
}

}  // namespace gtls
