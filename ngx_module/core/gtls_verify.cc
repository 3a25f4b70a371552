#include "gtls_verify.h"

#include "gtls_upstream_api.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>

namespace gtls {

namespace {

// Chains are verified to this depth, as nginx's proxy_ssl_verify_depth could.
constexpr int kMaxChainDepth = 10;

std::string openssl_error(const char *what)
{
    unsigned long err = ERR_peek_last_error();
    std::string out = what;
    if (err != 0) {
        char buf[256];
        ERR_error_string_n(err, buf, sizeof(buf));
        out += ": ";
        out += buf;
    }
    ERR_clear_error();
    return out;
}

bool is_validity_error(int err)
{
    return err == X509_V_ERR_CERT_HAS_EXPIRED || err == X509_V_ERR_CERT_NOT_YET_VALID;
}

// allow_expired: validity-period errors, and only those, are forgiven.
int ignore_validity_errors(int ok, X509_STORE_CTX *ctx)
{
    if (!ok && is_validity_error(X509_STORE_CTX_get_error(ctx))) {
        X509_STORE_CTX_set_error(ctx, X509_V_OK);
        return 1;
    }
    return ok;
}

Verdict failed(Verdict v, Reason reason, std::string detail)
{
    v.status = Status::Failed;
    v.reason = reason;
    v.detail = std::move(detail);
    return v;
}

bool check_chain(const Policy &policy, X509 *leaf, STACK_OF(X509) *untrusted, std::time_t now,
                 Reason *reason, std::string *detail)
{
    X509StoreCtxPtr ctx(X509_STORE_CTX_new());
    if (!ctx || !X509_STORE_CTX_init(ctx.get(), policy.store.get(), leaf, untrusted)) {
        *reason = Reason::Chain;
        *detail = openssl_error("X509_STORE_CTX_init() failed");
        return false;
    }

    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx.get());
    X509_VERIFY_PARAM_set_depth(param, kMaxChainDepth);
    X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
    if (now != 0) {
        X509_VERIFY_PARAM_set_time(param, now);
    }
    if (policy.mode == Mode::AllowExpired) {
        X509_STORE_CTX_set_verify_cb(ctx.get(), ignore_validity_errors);
    }

    if (X509_verify_cert(ctx.get()) == 1) {
        return true;
    }

    int err = X509_STORE_CTX_get_error(ctx.get());
    *reason = is_validity_error(err) ? Reason::Expired : Reason::Chain;
    *detail = X509_verify_cert_error_string(err);
    ERR_clear_error();
    return false;
}

bool check_leaf_validity(X509 *leaf, std::time_t now, std::string *detail)
{
    std::time_t t = now != 0 ? now : std::time(nullptr);
    if (X509_cmp_time(X509_get0_notBefore(leaf), &t) > 0) {
        *detail = "certificate is not yet valid";
        return false;
    }
    if (X509_cmp_time(X509_get0_notAfter(leaf), &t) < 0) {
        *detail = "certificate has expired";
        return false;
    }
    return true;
}

constexpr unsigned kSha256Size = 32;

// Fetched once: OpenSSL 3 fetches EVP_sha256() from its provider again on
// every digest, which a handshake pays several times.
const EVP_MD *sha256()
{
    static EVP_MD *const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return md != nullptr ? md : EVP_sha256();
}

bool digest_cert(X509 *leaf, unsigned char *md)
{
    unsigned int len = 0;
    return X509_digest(leaf, sha256(), md, &len) == 1 && len == kSha256Size;
}

bool digest_spki(X509 *leaf, unsigned char *md)
{
    unsigned char *der = nullptr;
    unsigned int len = 0;
    int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(leaf), &der);
    bool ok = n > 0 && EVP_Digest(der, static_cast<size_t>(n), md, &len, sha256(), nullptr) == 1
              && len == kSha256Size;
    OPENSSL_free(der);
    return ok;
}

}  // namespace

const Pin *match_pins(const std::vector<Pin> &pins, X509 *leaf)
{
    unsigned char cert_md[kSha256Size];
    unsigned char spki_md[kSha256Size];
    bool have_cert = false, have_spki = false;

    for (const Pin &pin : pins) {
        if (pin.type == PinType::Cert) {
            if (!have_cert) {
                have_cert = digest_cert(leaf, cert_md);
            }
            if (have_cert && pin.digest.size() == kSha256Size
                && std::memcmp(cert_md, pin.digest.data(), kSha256Size) == 0) {
                return &pin;
            }
        } else {
            if (!have_spki) {
                have_spki = digest_spki(leaf, spki_md);
            }
            if (have_spki && pin.digest.size() == kSha256Size
                && std::memcmp(spki_md, pin.digest.data(), kSha256Size) == 0) {
                return &pin;
            }
        }
    }
    return nullptr;
}

const Pin *match_pins(const std::vector<Pin> &pins, const PeerInfo &peer)
{
    for (const Pin &pin : pins) {
        if (pin.digest.size() != kSha256Size) {
            continue;
        }
        const unsigned char *md = pin.type == PinType::Cert ? peer.cert_sha256() : peer.spki_sha256();
        if (md != nullptr && std::memcmp(md, pin.digest.data(), kSha256Size) == 0) {
            return &pin;
        }
    }
    return nullptr;
}

namespace {

std::string subject_common_name(X509 *leaf)
{
    X509_NAME *subject = X509_get_subject_name(leaf);
    int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (i < 0) {
        return {};
    }
    ASN1_STRING *data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    const unsigned char *p = ASN1_STRING_get0_data(data);
    int n = ASN1_STRING_length(data);
    if (n <= 0 || std::memchr(p, '\0', static_cast<size_t>(n)) != nullptr) {
        return {};
    }
    return std::string(reinterpret_cast<const char *>(p), static_cast<size_t>(n));
}

// Without a SAN list the reference name (SNI) must match a DNS or IP SAN;
// the subject CN counts only when the certificate has no SAN extension.
bool reference_name_matches(std::string_view reference, X509 *leaf, const PeerInfo &peer)
{
    std::string ip;
    bool is_ip = parse_ip(reference, &ip);

    bool has_san = X509_get_ext_by_NID(leaf, NID_subject_alt_name, -1) >= 0;
    if (!has_san) {
        return !is_ip && dns_name_matches(reference, subject_common_name(leaf));
    }

    for (const PresentedName &name : peer.sans) {
        if (is_ip && name.type == SanType::Ip && name.value == ip) {
            return true;
        }
        if (!is_ip && name.type == SanType::Dns && dns_name_matches(reference, name.value)) {
            return true;
        }
    }
    return false;
}

}  // namespace

const char *reason_name(Reason reason)
{
    switch (reason) {
    case Reason::None: return "";
    case Reason::Chain: return "chain";
    case Reason::Expired: return "expired";
    case Reason::Name: return "name";
    case Reason::San: return "san";
    case Reason::Pin: return "pin";
    case Reason::NoCertificate: return "no_certificate";
    }
    return "";
}

bool fallback_error_admitted_by_nginx(int x509_error)
{
    static_assert(kFallbackChainError == X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, "OpenSSL's number");
    switch (x509_error) {
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        return true;
    default:
        return false;
    }
}

std::string_view host_of_server_name(std::string_view name)
{
    if (!name.empty() && name.front() == '[') {
        size_t end = name.find(']');
        return end == std::string_view::npos ? std::string_view() : name.substr(1, end - 1);
    }
    return name.substr(0, name.find(':'));
}

bool session_resumable_in(const SSL_SESSION *session, std::string_view server_context)
{
    if (session == nullptr) {
        return false;
    }
    void *mark = nullptr;
    size_t mark_len = 0;
    // the const_cast: OpenSSL 3.0 declares the getter on a non-const session
    if (SSL_SESSION_get0_ticket_appdata(const_cast<SSL_SESSION *>(session), &mark, &mark_len) == 1 && mark_len > 0) {
        return std::string_view(static_cast<const char *>(mark), mark_len) == server_context;
    }
    unsigned int len = 0;
    const unsigned char *context = SSL_SESSION_get0_id_context(session, &len);
    return context != nullptr && std::string_view(reinterpret_cast<const char *>(context), len) == server_context;
}

bool mark_session_for(SSL_SESSION *session, std::string_view server_context)
{
    return session != nullptr
           && SSL_SESSION_set1_ticket_appdata(session, server_context.data(), server_context.size()) == 1;
}

int fallback_chain_error(int x509_error)
{
    return fallback_error_admitted_by_nginx(x509_error) ? x509_error : kFallbackChainError;
}

Verdict verify_client(const std::vector<Pin> &pins, X509 *leaf, ClientCa ca, const std::string &chain_error,
                      std::time_t now)
{
    Verdict v;
    if (leaf == nullptr) {
        return failed(std::move(v), Reason::NoCertificate, "no client certificate");
    }
    v.peer = describe_peer(leaf);
    const Pin *pin = match_pins(pins, v.peer);
    if (!pins.empty() && pin == nullptr) {
        return failed(std::move(v), Reason::Pin, "no pin matches the certificate");
    }
    std::string validity;
    if (!chain_error.empty() && ca == ClientCa::Required) {
        return failed(std::move(v), Reason::Chain, chain_error);
    }
    // pins alone skip the chain, not the validity period
    if (!chain_error.empty() && !check_leaf_validity(leaf, now, &validity)) {
        return failed(std::move(v), Reason::Expired, "outside its validity period");
    }
    v.status = Status::Success;
    v.verified_by = pin != nullptr ? pin->spec : "ca";
    return v;
}

namespace {

// Each part of a binding as key() writes it: its size, then its bytes.
template <typename Part>
void for_each_binding_part(const Binding &b, Part part)
{
    part(&b.policy, sizeof(b.policy));
    part(&b.tls_context, sizeof(b.tls_context));
    part(&b.trust_generation, sizeof(b.trust_generation));
    part(b.reference_name.data(), b.reference_name.size());
    part(b.upstream.data(), b.upstream.size());
    part(b.client_certificate.data(), b.client_certificate.size());
}

}  // namespace

std::string Binding::key() const
{
    size_t total = 0;
    for_each_binding_part(*this, [&total](const void *, size_t size) { total += sizeof(size) + size; });
    std::string out;
    out.reserve(total);
    for_each_binding_part(*this, [&out](const void *data, size_t size) {
        out.append(reinterpret_cast<const char *>(&size), sizeof(size));
        out.append(static_cast<const char *>(data), size);
    });
    return out;
}

namespace {

// Whether `key` starts with the part key() writes for DATA: its size, then
// its bytes; if so, the part is taken off `key`. Inlined for the fixed-size
// parts, whose comparison then needs no call.
inline bool take_binding_part(std::string_view *key, const void *data, size_t size)
{
    size_t stored;
    if (key->size() < sizeof(stored) + size) {
        return false;
    }
    std::memcpy(&stored, key->data(), sizeof(stored));
    if (stored != size || (size != 0 && std::memcmp(key->data() + sizeof(stored), data, size) != 0)) {
        return false;
    }
    key->remove_prefix(sizeof(stored) + size);
    return true;
}

template <typename Word>
inline bool take_binding_word(std::string_view *key, Word word)
{
    size_t stored;
    Word value;
    if (key->size() < sizeof(stored) + sizeof(value)) {
        return false;
    }
    std::memcpy(&stored, key->data(), sizeof(stored));
    std::memcpy(&value, key->data() + sizeof(stored), sizeof(value));
    if (stored != sizeof(value) || value != word) {
        return false;
    }
    key->remove_prefix(sizeof(stored) + sizeof(value));
    return true;
}

}  // namespace

// The parts of for_each_binding_part, spelled out: on a keepalive request
// this runs instead of key(), and the generic walk costs some 60
// instructions more, which the keepalive target (1.02x stock,
// bench/callgrind.sh) has no room for. The binding test checks has_key()
// against key() part by part.
bool Binding::has_key(std::string_view key) const
{
    return take_binding_word(&key, policy) && take_binding_word(&key, tls_context)
           && take_binding_word(&key, trust_generation)
           && take_binding_part(&key, reference_name.data(), reference_name.size())
           && take_binding_part(&key, upstream.data(), upstream.size())
           && take_binding_part(&key, client_certificate.data(), client_certificate.size()) && key.empty();
}

std::string PeerInfo::sans_text() const
{
    std::string out;
    for (const PresentedName &name : sans) {
        if (!out.empty()) {
            out += ',';
        }
        // a certificate may carry thousands: a log line keeps the first
        if (out.size() >= kMaxSansText) {
            out += "...";
            break;
        }
        out += presented_name_text(name);
    }
    return out;
}

std::string Verdict::text() const
{
    switch (status) {
    case Status::None: return "NONE";
    case Status::Success: return "SUCCESS";
    case Status::Skipped: return "SKIPPED";
    case Status::Failed: return std::string("FAILED:") + reason_name(reason);
    }
    return "NONE";
}

const PeerInfo::Digest &PeerInfo::digest(Digest &d, bool (*hash)(X509 *, unsigned char *),
                                         std::string (*text)(const unsigned char *, size_t)) const
{
    if (!d.computed) {
        d.computed = true;
        d.ok = leaf_ != nullptr && hash(leaf_.get(), d.md.data());
        if (d.ok) {
            d.text = text(d.md.data(), kSha256Size);
        }
    }
    return d;
}

const PeerInfo::Digest &PeerInfo::cert_digest() const { return digest(cert_, digest_cert, to_hex); }
const PeerInfo::Digest &PeerInfo::spki_digest() const { return digest(spki_, digest_spki, to_base64); }

const std::string &PeerInfo::cert_sha256_hex() const { return cert_digest().text; }
const std::string &PeerInfo::spki_sha256_base64() const { return spki_digest().text; }
const unsigned char *PeerInfo::cert_sha256() const { return cert_digest().ok ? cert_.md.data() : nullptr; }
const unsigned char *PeerInfo::spki_sha256() const { return spki_digest().ok ? spki_.md.data() : nullptr; }

PeerInfo::PeerInfo(X509 *leaf)
{
    if (leaf != nullptr && X509_up_ref(leaf) == 1) {
        leaf_.reset(leaf, X509_free);
    }
}

PeerInfo describe_peer(X509 *leaf)
{
    PeerInfo info(leaf);

    GeneralNamesPtr names(static_cast<GENERAL_NAMES *>(
        X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr)));
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); i++) {
        const GENERAL_NAME *gn = sk_GENERAL_NAME_value(names.get(), i);
        PresentedName name;
        const ASN1_STRING *value = nullptr;
        switch (gn->type) {
        case GEN_DNS: name.type = SanType::Dns; value = gn->d.dNSName; break;
        case GEN_URI: name.type = SanType::Uri; value = gn->d.uniformResourceIdentifier; break;
        case GEN_EMAIL: name.type = SanType::Email; value = gn->d.rfc822Name; break;
        case GEN_IPADD: name.type = SanType::Ip; value = gn->d.iPAddress; break;
        default: continue;
        }
        const unsigned char *p = ASN1_STRING_get0_data(value);
        int vlen = ASN1_STRING_length(value);
        if (vlen <= 0) {
            continue;
        }
        name.value.assign(reinterpret_cast<const char *>(p), static_cast<size_t>(vlen));
        // an embedded NUL is a forgery attempt: such a name never matches
        if (name.type != SanType::Ip && name.value.find('\0') != std::string::npos) {
            continue;
        }
        if (name.type == SanType::Ip && vlen != 4 && vlen != 16) {
            continue;
        }
        info.sans.push_back(std::move(name));
    }

    struct tm tm {};
    if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) == 1) {
        info.not_after = timegm(&tm);
    }
    return info;
}

Verdict verify(const Policy &policy, X509 *leaf, STACK_OF(X509) *untrusted,
               std::string_view reference_name, std::time_t now)
{
    Verdict v;
    if (policy.mode == Mode::Off) {
        return v;
    }
    if (leaf == nullptr) {
        return failed(std::move(v), Reason::NoCertificate, "the backend sent no certificate");
    }

    v.peer = describe_peer(leaf);

    if (policy.mode == Mode::Skip) {
        v.status = Status::Skipped;
        return v;
    }

    if (!policy.has_trust()) {
        // fail closed: nothing to verify against is no verification
        return failed(std::move(v), Reason::Chain, "the policy trusts no CA and no pin");
    }

    Reason reason = Reason::None;
    std::string detail;

    if (policy.store) {
        if (!check_chain(policy, leaf, untrusted, now, &reason, &detail)) {
            return failed(std::move(v), reason, std::move(detail));
        }
    } else if (policy.mode != Mode::AllowExpired && !check_leaf_validity(leaf, now, &detail)) {
        // pins alone: no chain, but a strict policy still wants a current leaf
        return failed(std::move(v), Reason::Expired, std::move(detail));
    }

    const Pin *pin = nullptr;
    if (!policy.pins.empty()) {
        pin = match_pins(policy.pins, v.peer);
        if (pin == nullptr) {
            return failed(std::move(v), Reason::Pin, "no pin matches the certificate");
        }
    }

    if (policy.mode == Mode::SkipSan) {
        v.verified_by = pin ? pin->spec : policy.trust_source;
    } else if (!policy.sans.empty()) {
        for (const SanMatcher &matcher : policy.sans) {
            for (const PresentedName &name : v.peer.sans) {
                if (san_matches(matcher, name)) {
                    v.verified_by = matcher.spec;
                    break;
                }
            }
            if (!v.verified_by.empty()) {
                break;
            }
        }
        if (v.verified_by.empty()) {
            return failed(std::move(v), Reason::San, "no SAN matches the accepted list");
        }
    } else {
        if (reference_name.empty()) {
            return failed(std::move(v), Reason::Name, "no name to verify (no SNI name, no SANs)");
        }
        if (!reference_name_matches(reference_name, leaf, v.peer)) {
            return failed(std::move(v), Reason::Name,
                          "certificate does not match \"" + std::string(reference_name) + "\"");
        }
        v.verified_by = std::string(reference_name);
    }

    v.status = Status::Success;
    return v;
}

X509StoreShared load_trust_store(const std::string &source, std::string *error)
{
    X509StoreShared store(X509_STORE_new(), X509_STORE_free);
    if (!store) {
        *error = openssl_error("X509_STORE_new() failed");
        return nullptr;
    }

    if (source == "system") {
        if (X509_STORE_set_default_paths(store.get()) != 1) {
            *error = openssl_error("cannot load OpenSSL's default trust store");
            return nullptr;
        }
        return store;
    }

    if (X509_STORE_load_file(store.get(), source.c_str()) != 1) {
        *error = openssl_error(("cannot load CA certificates from \"" + source + "\"").c_str());
        return nullptr;
    }

    STACK_OF(X509_OBJECT) *objects = X509_STORE_get0_objects(store.get());
    if (sk_X509_OBJECT_num(objects) == 0) {
        *error = "no certificate in \"" + source + "\"";
        return nullptr;
    }
    return store;
}

namespace {

// Calls `take` with each certificate of the PEM in `bio` (at least one);
// false and *error ("cannot read a PEM certificate from WHAT") when one
// does not read, false when `take` refuses one.
template <typename Take>
bool each_pem_certificate(BIO *bio, const std::string &what, std::string *error, Take take)
{
    for (size_t count = 0;; count++) {
        X509Ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
        if (!cert) {
            unsigned long err = ERR_peek_last_error();
            if (ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE && count > 0) {
                ERR_clear_error();  // the normal end
                return true;
            }
            *error = openssl_error(("cannot read a PEM certificate from " + what).c_str());
            return false;
        }
        if (!take(cert.get())) {
            return false;
        }
    }
}

}  // namespace

X509StoreShared trust_store_from_pem(std::string_view pem, std::string *error)
{
    X509StoreShared store(X509_STORE_new(), X509_STORE_free);
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!store || !bio) {
        *error = openssl_error("cannot allocate a trust store");
        return nullptr;
    }
    bool read = each_pem_certificate(bio.get(), "the CA bundle", error, [&](X509 *cert) {
        if (X509_STORE_add_cert(store.get(), cert) == 1) {
            return true;
        }
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_CERT_ALREADY_IN_HASH_TABLE) {
            ERR_clear_error();  // the same certificate twice in a bundle
            return true;
        }
        *error = openssl_error("cannot trust a certificate of the CA bundle");
        return false;
    });
    return read ? store : nullptr;
}

bool build_trust(std::string_view ca, const std::vector<std::string> &pin_specs, Trust *out, std::string *error)
{
    Trust trust;
    if (ca == "system") {
        trust.store = load_trust_store("system", error);
        trust.source = "system";
    } else if (!ca.empty()) {
        trust.store = trust_store_from_pem(ca, error);
        unsigned char md[kSha256Size];
        unsigned int len = 0;
        if (!trust.store) {
            return false;
        }
        if (EVP_Digest(ca.data(), ca.size(), md, &len, sha256(), nullptr) != 1) {
            *error = openssl_error("EVP_Digest() failed");
            return false;
        }
        trust.source = "api:sha256:" + to_hex(md, 8);
    }
    if (!ca.empty() && !trust.store) {
        return false;
    }
    for (const std::string &spec : pin_specs) {
        std::optional<Pin> pin = parse_pin_spec(spec, error);
        if (!pin) {
            return false;
        }
        trust.pins.push_back(std::move(*pin));
    }
    if (!trust.store && trust.pins.empty()) {
        *error = "neither a CA nor a pin";
        return false;
    }
    *out = std::move(trust);
    return true;
}

bool build_policy_trust(const PolicyTrust &pushed, Trust *out, std::string *error)
{
    if (!build_trust(pushed.ca, pushed.pins, out, error)) return false;
    out->hostname = pushed.hostname;
    if (pushed.subject_alt_names) {
        out->sans.emplace();
        for (const std::string &spec : *pushed.subject_alt_names) {
            std::optional<SanMatcher> san = parse_san_spec(spec, error);
            if (!san) return false;
            out->sans->push_back(std::move(*san));
        }
    }
    if (pushed.client_certificate) {
        auto pair = std::make_shared<KeyPair>();
        if (!key_pair_from_pem(pushed.client_certificate->certificate, pushed.client_certificate->key, pair.get(), error)) {
            *error = "client_certificate: " + *error;
            return false;
        }
        out->client_certificate = std::move(pair);
    }
    return true;
}

void replace_trust(Policy *policy, const Trust &trust, const Trust &configured, uint64_t generation)
{
    policy->store = trust.store;
    policy->trust_source = trust.source;
    policy->pins = trust.pins;
    policy->hostname = trust.hostname ? *trust.hostname : configured.hostname.value_or(std::string());
    policy->sans = trust.sans ? *trust.sans : configured.sans.value_or(std::vector<SanMatcher>());
    policy->client_certificate = trust.client_certificate ? *trust.client_certificate
                                                          : configured.client_certificate.value_or(nullptr);
    policy->trust_generation = generation;
}

Trust configured_trust(const Policy &policy)
{
    return {policy.store, policy.trust_source, policy.pins, policy.hostname, policy.sans, policy.client_certificate};
}

uint64_t trust_fingerprint(std::string_view ca, const std::vector<std::string> &pin_specs, std::string_view hostname,
                           const std::vector<std::string> &san_specs, std::string_view client_certificate)
{
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](std::string_view bytes) {
        for (unsigned char c : bytes) {
            h ^= c;
            h *= 0x100000001b3ull;
        }
        h ^= 0xff;  // a separator no text byte can fake
        h *= 0x100000001b3ull;
    };
    mix(ca);
    for (const std::string &pin : pin_specs) mix(pin);
    mix("\x01names");  // (where the pins end)
    mix(hostname);
    for (const std::string &san : san_specs) mix(san);
    if (!client_certificate.empty()) {
        mix("\x01client");  // (where the names end)
        mix(client_certificate);
    }
    return h;
}

uint64_t trust_fingerprint(const Policy &policy, std::map<std::string, std::string> *files)
{
    std::vector<std::string> pins, sans;
    for (const Pin &pin : policy.pins) pins.push_back(pin.spec);
    for (const SanMatcher &san : policy.sans) sans.push_back(san.spec);
    const std::string client = policy.client_certificate ? policy.client_certificate->sha256 : std::string();
    if (policy.trust_source.empty() || policy.trust_source == "system") {
        return trust_fingerprint(policy.trust_source, pins, policy.hostname, sans, client);
    }
    std::map<std::string, std::string> own;
    if (files == nullptr) files = &own;
    auto [it, added] = files->emplace(policy.trust_source, std::string());
    if (added) {
        std::ifstream file(policy.trust_source, std::ios::binary);
        std::ostringstream bytes;
        bytes << file.rdbuf();
        it->second = file ? bytes.str() : "unreadable:" + policy.trust_source;
    }
    return trust_fingerprint(it->second, pins, policy.hostname, sans, client);
}

bool load_pin_certificates(const std::string &path, std::vector<Pin> *pins, std::string *error)
{
    BioPtr bio(BIO_new_file(path.c_str(), "r"));
    if (!bio) {
        *error = openssl_error(("cannot open \"" + path + "\"").c_str());
        return false;
    }
    return each_pem_certificate(bio.get(), "\"" + path + "\"", error, [&](X509 *cert) {
        Pin pin;
        pin.type = PinType::Cert;
        unsigned int len = 0;
        if (X509_digest(cert, EVP_sha256(), pin.digest.data(), &len) != 1) {
            *error = openssl_error("X509_digest() failed");
            return false;
        }
        pin.spec = "sha256-cert:" + to_hex(pin.digest.data(), pin.digest.size());
        pins->push_back(std::move(pin));
        return true;
    });
}

}  // namespace gtls
