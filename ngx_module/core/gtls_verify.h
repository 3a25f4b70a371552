// The verification decision: one entry point (verify) over small checks,
// with an enumerated reason. No nginx types.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gtls_certificate.h"
#include "gtls_match.h"
#include "gtls_openssl.h"
#include "gtls_spec.h"

namespace gtls {

enum class Status { None, Success, Failed, Skipped };
enum class Reason { None, Chain, Expired, Name, San, Pin, NoCertificate };
// How many reasons there are, None included, for arrays by reason: a new
// reason goes before NoCertificate (the reasons test checks it is last).
inline constexpr size_t kReasonCount = static_cast<size_t>(Reason::NoCertificate) + 1;

const char *reason_name(Reason reason);

// What one scope asks of the backend certificate.
struct Policy {
    std::string name;                 // proxy_ssl_policy_name, may be empty
    Mode mode = Mode::Off;
    std::string trust_source;         // CA file path, "system", or empty
    X509StoreShared store;            // chain anchors; null when pins alone
    std::vector<SanMatcher> sans;
    std::vector<Pin> pins;
    std::string hostname;             // upstream-level SNI / reference name
    // what the gateway presents when the backend asks for a client
    // certificate (proxy_ssl_policy_certificate), over the scope's
    // proxy_ssl_certificate; null: that one, or none
    std::shared_ptr<const KeyPair> client_certificate;
    // counts replacements of store and pins at run time (the upstream API):
    // a TLS session or keepalive connection of older trust never carries over
    uint64_t trust_generation = 0;

    bool has_trust() const { return store != nullptr || !pins.empty(); }
};

// Facts about the peer certificate, for logs and variables. It holds a
// reference to the certificate and hashes it when first asked: a handshake
// needs at most the hash its pins name, the rest only a variable or a log.
class PeerInfo {
public:
    PeerInfo() = default;
    explicit PeerInfo(X509 *leaf);  // the SANs and notAfter, not the hashes

    std::vector<PresentedName> sans;
    std::time_t not_after = 0;

    const std::string &cert_sha256_hex() const;     // empty if it cannot be computed
    const std::string &spki_sha256_base64() const;  // likewise
    const unsigned char *cert_sha256() const;       // 32 bytes, or null likewise
    const unsigned char *spki_sha256() const;
    // "dns:a,uri:spiffe://..." for logs and variables: each escaped
    // (escaped_text), the list cut after kMaxSansText bytes
    static constexpr size_t kMaxSansText = 1024;
    std::string sans_text() const;

private:
    struct Digest {
        bool computed = false;
        bool ok = false;
        std::array<unsigned char, 32> md{};
        std::string text;  // hex for the certificate, base64 for the SPKI
    };
    const Digest &digest(Digest &d, bool (*hash)(X509 *, unsigned char *),
                         std::string (*text)(const unsigned char *, size_t)) const;
    const Digest &cert_digest() const;
    const Digest &spki_digest() const;

    std::shared_ptr<X509> leaf_;
    mutable Digest cert_, spki_;
};

struct Verdict {
    Status status = Status::None;
    Reason reason = Reason::None;
    std::string verified_by;  // the SAN SPEC, pin, or reference name that matched
    std::string detail;       // human-readable cause of a failure
    PeerInfo peer;

    // "SUCCESS", "FAILED:san", "SKIPPED", "NONE"
    std::string text() const;
};

PeerInfo describe_peer(X509 *leaf);

// The first pin the leaf matches (its SPKI or whole-certificate hash), or null.
const Pin *match_pins(const std::vector<Pin> &pins, X509 *leaf);
// The same from the peer's hashes (each computed once, if a pin needs it).
const Pin *match_pins(const std::vector<Pin> &pins, const PeerInfo &peer);

// Verifies the backend's leaf (with the untrusted intermediates it sent)
// under the policy. reference_name is the SNI name, checked when the
// policy lists no SANs. `now` = 0 means the current time.
Verdict verify(const Policy &policy, X509 *leaf, STACK_OF(X509) *untrusted,
               std::string_view reference_name, std::time_t now = 0);

// How a listener treats its clients' certificates (nginx's
// ssl_verify_client): the CA must pass (on, optional), or pins alone
// authenticate (optional_no_ca).
enum class ClientCa { Required, NotRequired };

// GEP-91 AllowInsecureFallback: every client is admitted, and a chain that
// does not verify stays a failure for $ssl_client_verify. nginx's
// optional_no_ca admits only the errors of an issuer it cannot find
// (ngx_ssl_verify_error_optional in nginx 1.22 to 1.29); any other failure
// (a signature under a trusted issuer's name, an expired certificate) is
// left as kFallbackChainError, one of those.
bool fallback_error_admitted_by_nginx(int x509_error);
inline constexpr int kFallbackChainError = 21;  // X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE
// The chain error a fallback handshake leaves for nginx: `x509_error` when
// optional_no_ca admits it, else kFallbackChainError.
int fallback_chain_error(int x509_error);

// The listener's side (GEP-91, GEP-4078): `chain_error` is what OpenSSL's
// chain check with the server's CA left (empty: it passed). The client
// passes with a pin that matches its leaf, or with no pins configured; and
// the chain, or, when the CA is not required, a leaf inside its validity
// period. The verdict names the pin (or "ca") or the reason and its cause.
Verdict verify_client(const std::vector<Pin> &pins, X509 *leaf, ClientCa ca, const std::string &chain_error,
                      std::time_t now = 0);

// Everything a backend connection's verdict and our identity on it were
// made under. A TLS session, and a keepalive connection, carry over only
// to a connection bound the same way: the same policy, the same TLS
// context (our client certificate, protocols), the same reference name and
// SNI, the same client certificate when one is chosen per request; the
// peer's address is added where a session is cached.
// A request builds one for every backend connection it asks for, and a
// keepalive connection is reused when has_key() says its stored key is
// this binding's: nothing is allocated on that path.
struct Binding {
    const void *policy = nullptr;
    const void *tls_context = nullptr;
    uint64_t trust_generation = 0;
    std::string_view reference_name;      // outlives the binding (request, configuration)
    std::string_view upstream;            // outlives the binding (configuration)
    std::string_view client_certificate;  // outlives the binding, or empty

    // Equal for equal bindings only: every part length-prefixed.
    std::string key() const;
    // Whether `key` is key(), without building it.
    bool has_key(std::string_view key) const;
};

// Whether a request may be served on its connection: a server that verifies
// its clients itself (pins, or verification in the handshake) serves only
// connections whose handshake ran under its own TLS context. Another
// context (an unknown SNI, none, or another server's name, with Host naming
// this server) verified nothing for it: 421, and the client may retry.
inline bool client_verified_for_server(bool server_verifies, const void *handshake_context,
                                       const void *server_context)
{
    return !server_verifies || (handshake_context != nullptr && handshake_context == server_context);
}

// The host of the name nginx sends as SNI for a backend (proxy_ssl_name,
// else the proxied host): "[::1]:8443" is "::1", "a.example:443" is
// "a.example"; an unclosed "[" gives "". A part of `name`.
std::string_view host_of_server_name(std::string_view name);

// Whether a resumed TLS session may go on in a server that verifies its
// clients (`server_context`: its certificate, client CA names,
// verification and pins). OpenSSL makes a session, and checks one offered,
// under the server the handshake began in (the port's default), before SNI
// picks another: neither its check nor the session's own context tells
// the server a session was made for. The module marks each session with
// that server (mark_session_for, kept in tickets and cached sessions); an
// unmarked session (made before the module marked them) counts by its
// context.
bool session_resumable_in(const SSL_SESSION *session, std::string_view server_context);
// Marks `session` as made for the server whose context is `server_context`
// (kUnpinnedServer for one without client pins); false when OpenSSL fails.
inline constexpr std::string_view kUnpinnedServer = "gateway_tls:unpinned";
bool mark_session_for(SSL_SESSION *session, std::string_view server_context);

// Loads a PEM bundle into a new trust store ("system": OpenSSL's default
// paths). On failure returns null and sets *error.
X509StoreShared load_trust_store(const std::string &source, std::string *error);

// The certificates of PEM text (a CA bundle given at run time), as
// load_trust_store reads a file; null and *error when there is none or one
// is unreadable.
X509StoreShared trust_store_from_pem(std::string_view pem, std::string *error);

// What a policy verifies against, replaced at run time (the upstream API),
// and the name it sends and verifies, and the client certificate it
// presents, when a push gives them.
struct Trust {
    X509StoreShared                         store;   // null: pins alone
    std::string                             source;  // "system", "api:sha256:HEX" (of the PEM), or empty
    std::vector<Pin>                        pins;
    std::optional<std::string>              hostname;  // absent: the configured one
    std::optional<std::vector<SanMatcher>>  sans;      // likewise
    std::optional<std::shared_ptr<const KeyPair>>  client_certificate;  // likewise (null: none)
};

// `ca` is PEM certificates, "system" or empty; pins are SPECs. False and
// *error when something cannot be read, or nothing would be trusted.
bool build_trust(std::string_view ca, const std::vector<std::string> &pin_specs, Trust *out, std::string *error);

// The trust a push of the upstream API gives, built (build_trust, then the
// names given); false and *error as build_trust.
struct PolicyTrust;  // gtls_upstream_api.h
bool build_policy_trust(const PolicyTrust &pushed, Trust *out, std::string *error);

// Puts `trust` in place of the policy's store and pins, and its hostname
// and SANs where it has them, else `configured`'s; `generation` (non-zero)
// keeps its sessions and connections apart from older trust.
void replace_trust(Policy *policy, const Trust &trust, const Trust &configured, uint64_t generation);
// What a policy is configured with, every field set: what replace_trust
// puts back.
Trust configured_trust(const Policy &policy);

// What a configured policy trusts (its CA file's bytes or "system", its
// pins), the names it verifies (hostname, SAN SPECs) and the client
// certificate it presents (its leaf), FNV-1a: tells whether a reload
// changed them. Reads the file, once per path for all the calls that
// share `files`.
uint64_t trust_fingerprint(const Policy &policy, std::map<std::string, std::string> *files = nullptr);
// The same of trust given as text: `ca` PEM bytes, "system" or empty,
// normalised pin SPECs, the hostname, SAN SPECs and the SHA-256 of the
// client certificate's leaf (empty: none). Equal to the configured one's
// for the same bytes.
uint64_t trust_fingerprint(std::string_view ca, const std::vector<std::string> &pin_specs, std::string_view hostname,
                           const std::vector<std::string> &san_specs, std::string_view client_certificate = {});

// Reads every certificate of a PEM file and makes each a sha256-cert pin.
bool load_pin_certificates(const std::string &path, std::vector<Pin> *pins, std::string *error);

}  // namespace gtls
