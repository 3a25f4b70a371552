// Unit tests of the verification decision against real certificates made
// by t/lib/make-certs.sh into $GTLS_TEST_CERTS.
#define BOOST_TEST_MODULE gtls_core
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "gtls_verify.h"
#include "gtls_upstream_api.h"

using namespace gtls;

namespace {

std::string cert_path(const std::string &name)
{
    const char *dir = std::getenv("GTLS_TEST_CERTS");
    BOOST_TEST_REQUIRE(dir != nullptr, "GTLS_TEST_CERTS is not set");
    return std::string(dir) + "/" + name;
}

std::string slurp(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// A backend's presentation: its leaf and whatever chain it sends.
struct Presented {
    X509Ptr leaf;
    STACK_OF(X509) *chain = sk_X509_new_null();

    explicit Presented(const std::string &name)
    {
        BioPtr bio(BIO_new_file(cert_path(name + ".crt").c_str(), "r"));
        BOOST_TEST_REQUIRE(bio.get() != nullptr);
        while (X509 *x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
            if (!leaf) {
                leaf.reset(x);
                X509_up_ref(x);
            }
            sk_X509_push(chain, x);
        }
        ERR_clear_error();
        BOOST_TEST_REQUIRE(leaf.get() != nullptr);
    }
    ~Presented() { sk_X509_pop_free(chain, X509_free); }
};

Policy ca_policy(Mode mode = Mode::Strict)
{
    Policy p;
    p.mode = mode;
    std::string error;
    p.trust_source = cert_path("ca.crt");
    p.store = load_trust_store(p.trust_source, &error);
    BOOST_TEST_REQUIRE(p.store.get() != nullptr, error);
    return p;
}

void add_san(Policy &p, const char *spec)
{
    std::string error;
    auto m = parse_san_spec(spec, &error);
    BOOST_TEST_REQUIRE(m.has_value(), error);
    p.sans.push_back(*m);
}

void add_pin(Policy &p, const std::string &spec)
{
    std::string error;
    auto pin = parse_pin_spec(spec, &error);
    BOOST_TEST_REQUIRE(pin.has_value(), error);
    p.pins.push_back(*pin);
}

Verdict run(const Policy &p, const char *backend, const char *sni = "abc.example.com")
{
    Presented b(backend);
    return verify(p, b.leaf.get(), b.chain, sni);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chain)

BOOST_AUTO_TEST_CASE(ca_signed_through_intermediate_passes)
{
    Verdict v = run(ca_policy(), "leaf");
    BOOST_TEST(v.text() == "SUCCESS");
    BOOST_TEST(v.verified_by == "abc.example.com");
    BOOST_TEST(v.peer.sans_text()
               == "dns:abc.example.com,uri:spiffe://abc.example.com/test-identity,"
                  "dns:other.example.com");
    BOOST_TEST(v.peer.cert_sha256_hex().size() == 64u);
    BOOST_TEST(v.peer.spki_sha256_base64().size() == 44u);
    BOOST_TEST(v.peer.not_after > 0);
}

BOOST_AUTO_TEST_CASE(missing_intermediate_fails_chain)
{
    Policy p = ca_policy();
    Presented b("leaf");
    STACK_OF(X509) *only_leaf = sk_X509_new_null();
    Verdict v = verify(p, b.leaf.get(), only_leaf, "abc.example.com");
    sk_X509_free(only_leaf);
    BOOST_TEST(v.text() == "FAILED:chain");
}

BOOST_AUTO_TEST_CASE(unrelated_ca_fails_chain)
{
    BOOST_TEST(run(ca_policy(), "untrusted").text() == "FAILED:chain");
    BOOST_TEST(run(ca_policy(), "selfsigned").text() == "FAILED:chain");
}

BOOST_AUTO_TEST_CASE(expiry_is_its_own_reason_and_allow_expired_forgives_it)
{
    BOOST_TEST(run(ca_policy(), "expired").text() == "FAILED:expired");
    BOOST_TEST(run(ca_policy(), "notyet").text() == "FAILED:expired");
    BOOST_TEST(run(ca_policy(Mode::AllowExpired), "expired").text() == "SUCCESS");
    BOOST_TEST(run(ca_policy(Mode::AllowExpired), "notyet").text() == "SUCCESS");
    // allow_expired forgives the dates only, never the issuer or the name
    BOOST_TEST(run(ca_policy(Mode::AllowExpired), "untrusted").text() == "FAILED:chain");
    BOOST_TEST(run(ca_policy(Mode::AllowExpired), "wrongsan").text() == "FAILED:name");
}

// The upstream API replaces what a policy trusts at run time: the new
// anchors alone count, and a bundle that cannot be read replaces nothing.
BOOST_AUTO_TEST_CASE(trust_replaced_at_run_time_counts_alone)
{
    Policy p = ca_policy();
    const uint64_t configured = trust_fingerprint(p);
    const Trust as_configured = configured_trust(p);
    Trust trust;
    std::string error;
    BOOST_TEST_REQUIRE(build_trust(slurp(cert_path("unrelated-ca.crt")), {}, &trust, &error), error);
    BOOST_TEST(trust.source.rfind("api:sha256:", 0) == 0u);
    replace_trust(&p, trust, as_configured, 7);
    BOOST_TEST(p.trust_generation == 7u);
    BOOST_TEST(run(p, "untrusted").text() == "SUCCESS");
    BOOST_TEST(run(p, "leaf").text() == "FAILED:chain");
    BOOST_TEST(trust_fingerprint(p) != configured);
    // the configured trust given as text is the same trust, with the same names
    BOOST_TEST(trust_fingerprint(slurp(cert_path("ca.crt")), {}, "", {}) == configured);
    BOOST_TEST(trust_fingerprint(slurp(cert_path("ca.crt")), {"sha256-spki:x"}, "", {}) != configured);
    BOOST_TEST(trust_fingerprint(slurp(cert_path("ca.crt")), {}, "abc.example.com", {}) != configured);
    BOOST_TEST(trust_fingerprint(slurp(cert_path("ca.crt")), {}, "", {"dns:abc.example.com"}) != configured);
    // (a pin is not a name)
    BOOST_TEST(trust_fingerprint("", {"dns:a"}, "", {}) != trust_fingerprint("", {}, "", {"dns:a"}));
    Policy named = ca_policy();
    named.hostname = "abc.example.com";
    add_san(named, "dns:abc.example.com");
    BOOST_TEST(trust_fingerprint(named)
               == trust_fingerprint(slurp(cert_path("ca.crt")), {}, "abc.example.com", {"dns:abc.example.com"}));

    // a bundle of both roots trusts both; pins alone trust their key alone
    BOOST_TEST_REQUIRE(build_trust(slurp(cert_path("ca.crt")) + slurp(cert_path("unrelated-ca.crt")), {}, &trust, &error), error);
    replace_trust(&p, trust, as_configured, 8);
    BOOST_TEST(run(p, "untrusted").text() == "SUCCESS");
    BOOST_TEST(run(p, "leaf").text() == "SUCCESS");
    Presented leaf("leaf");
    const std::string spki = "sha256-spki:" + describe_peer(leaf.leaf.get()).spki_sha256_base64();
    BOOST_TEST_REQUIRE(build_trust("", {spki}, &trust, &error), error);
    replace_trust(&p, trust, as_configured, 9);
    BOOST_TEST(p.store.get() == nullptr);
    BOOST_TEST(run(p, "leaf").text() == "SUCCESS");
    BOOST_TEST(run(p, "untrusted").text().rfind("FAILED:", 0) == 0u);

    // a policy left with nothing to trust verifies nothing: every backend fails
    replace_trust(&p, Trust{}, as_configured, 10);
    BOOST_TEST(run(p, "leaf").text() == "FAILED:chain");
    BOOST_TEST(run(p, "untrusted").text() == "FAILED:chain");
    replace_trust(&p, trust, as_configured, 11);

    // nothing readable, nothing trusted: refused, the policy untouched
    Trust untouched = trust;
    BOOST_TEST(!build_trust("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", {}, &trust, &error));
    BOOST_TEST(error.find("cannot read a PEM certificate from the CA bundle") == 0u);
    BOOST_TEST(!build_trust("", {}, &trust, &error));
    BOOST_TEST(!build_trust("", {"sha256-spki:short"}, &trust, &error));
    BOOST_TEST(trust.pins.size() == untouched.pins.size());
}

// A push may name the peer too (a spare upstream{} made a new backend):
// its hostname and SANs replace the configured ones, and a push without
// them, or the configured trust again, puts the configured ones back.
BOOST_AUTO_TEST_CASE(pushed_names_replace_the_configured_ones_until_a_push_without_them)
{
    Policy p = ca_policy();
    p.hostname = "spare-0.invalid";
    add_san(p, "dns:wrong.example.com");
    const Trust as_configured = configured_trust(p);
    BOOST_TEST(run(p, "leaf").text() == "FAILED:san");

    PolicyTrust pushed;
    pushed.ca = "system";
    pushed.hostname = "abc.example.com";
    pushed.subject_alt_names = std::vector<std::string>{"uri:spiffe://abc.example.com/test-identity", "dns~^other\\."};
    Trust trust;
    std::string error;
    BOOST_TEST_REQUIRE(build_policy_trust(pushed, &trust, &error), error);
    trust.store = as_configured.store;  // the test CA, as if pushed as PEM
    replace_trust(&p, trust, as_configured, 3);
    BOOST_TEST(p.hostname == "abc.example.com");
    BOOST_TEST_REQUIRE(p.sans.size() == 2u);
    BOOST_TEST(p.sans[1].is_regex);
    BOOST_TEST(run(p, "leaf").text() == "SUCCESS");
    BOOST_TEST(run(p, "wrongsan").text() == "FAILED:san");

    // names not given: the configured ones, whatever was pushed before
    replace_trust(&p, Trust{as_configured.store, "", {}, std::nullopt, std::nullopt, std::nullopt}, as_configured, 4);
    BOOST_TEST(p.hostname == "spare-0.invalid");
    BOOST_TEST(run(p, "leaf").text() == "FAILED:san");
    // an empty list given: no SAN listed, the hostname is what is verified
    pushed.subject_alt_names = std::vector<std::string>{};
    BOOST_TEST_REQUIRE(build_policy_trust(pushed, &trust, &error), error);
    trust.store = as_configured.store;
    replace_trust(&p, trust, as_configured, 5);
    BOOST_TEST(p.sans.empty());
    BOOST_TEST(p.hostname == "abc.example.com");
    replace_trust(&p, as_configured, as_configured, 6);
    BOOST_TEST(p.sans.size() == 1u);
    BOOST_TEST(p.hostname == "spare-0.invalid");

    // a SAN SPEC that does not compile builds nothing
    pushed.subject_alt_names = std::vector<std::string>{"dns~("};
    BOOST_TEST(!build_policy_trust(pushed, &trust, &error));
}

// A push may bring the policy's own client certificate: it replaces the
// configured one until a push without one, its key read and matched to
// its leaf before anything changes, and it counts in the fingerprint.
BOOST_AUTO_TEST_CASE(a_pushed_client_certificate_replaces_the_configured_one)
{
    Policy p = ca_policy();
    auto own = std::make_shared<gtls::KeyPair>();
    std::string error;
    BOOST_TEST_REQUIRE(gtls::key_pair_from_files(cert_path("leaf.crt"), cert_path("leaf.key"), own.get(), &error), error);
    p.client_certificate = own;
    const uint64_t configured = trust_fingerprint(p);
    const Trust as_configured = configured_trust(p);
    const std::string ca = slurp(cert_path("ca.crt"));
    BOOST_TEST(trust_fingerprint(ca, {}, "", {}, own->sha256) == configured);
    BOOST_TEST(trust_fingerprint(ca, {}, "", {}) != configured);

    PolicyTrust pushed;
    pushed.ca = ca;
    pushed.client_certificate = gtls::PemKeyPair{slurp(cert_path("spiffe.crt")), slurp(cert_path("spiffe.key"))};
    Trust trust;
    BOOST_TEST_REQUIRE(build_policy_trust(pushed, &trust, &error), error);
    replace_trust(&p, trust, as_configured, 2);
    BOOST_TEST_REQUIRE(p.client_certificate != nullptr);
    BOOST_TEST(p.client_certificate->sha256 == gtls::leaf_sha256(pushed.client_certificate->certificate));
    BOOST_TEST(p.client_certificate->sha256 != own->sha256);
    BOOST_TEST(trust_fingerprint(ca, {}, "", {}, p.client_certificate->sha256) != configured);
    BOOST_TEST(run(p, "leaf").text() == "SUCCESS");  // the trust it came with

    // a push without one: the configured one again
    pushed.client_certificate.reset();
    BOOST_TEST_REQUIRE(build_policy_trust(pushed, &trust, &error), error);
    replace_trust(&p, trust, as_configured, 3);
    BOOST_TEST(p.client_certificate == own);

    // a key that is not the leaf's, or no certificate at all: nothing built
    pushed.client_certificate = gtls::PemKeyPair{slurp(cert_path("spiffe.crt")), slurp(cert_path("leaf.key"))};
    BOOST_TEST(!build_policy_trust(pushed, &trust, &error));
    BOOST_TEST(error.rfind("client_certificate: ", 0) == 0u, error);
    pushed.client_certificate = gtls::PemKeyPair{"", slurp(cert_path("leaf.key"))};
    BOOST_TEST(!build_policy_trust(pushed, &trust, &error));
    BOOST_TEST(error == "client_certificate: certificate: holds no PEM certificate");
    BOOST_TEST(gtls::leaf_sha256("not PEM").empty());
}

BOOST_AUTO_TEST_CASE(system_store_loads_and_does_not_trust_the_test_ca)
{
    Policy p;
    p.mode = Mode::Strict;
    std::string error;
    p.store = load_trust_store("system", &error);
    BOOST_TEST_REQUIRE(p.store.get() != nullptr, error);
    BOOST_TEST(run(p, "leaf").text() == "FAILED:chain");
}

BOOST_AUTO_TEST_CASE(bad_trust_files_are_reported)
{
    std::string error;
    BOOST_TEST(load_trust_store("/nonexistent/ca.pem", &error).get() == nullptr);
    BOOST_TEST(error.find("/nonexistent/ca.pem") != std::string::npos);
    BOOST_TEST(load_trust_store(cert_path("ca.cnf"), &error).get() == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(names)

BOOST_AUTO_TEST_CASE(sni_name_checked_without_san_list)
{
    BOOST_TEST(run(ca_policy(), "leaf", "other.example.com").text() == "SUCCESS");
    BOOST_TEST(run(ca_policy(), "leaf", "abc.example.org").text() == "FAILED:name");
    BOOST_TEST(run(ca_policy(), "wrongsan").text() == "FAILED:name");
    BOOST_TEST(run(ca_policy(), "wildcard").text() == "SUCCESS");
    BOOST_TEST(run(ca_policy(), "leaf", "").text() == "FAILED:name");
    // a URI SAN is not a host name
    BOOST_TEST(run(ca_policy(), "spiffe").text() == "FAILED:name");
}

BOOST_AUTO_TEST_CASE(ip_reference_name_matches_ip_san_only)
{
    BOOST_TEST(run(ca_policy(), "ipemail", "127.0.0.1").text() == "SUCCESS");
    BOOST_TEST(run(ca_policy(), "ipemail", "127.0.0.2").text() == "FAILED:name");
    BOOST_TEST(run(ca_policy(), "leaf", "127.0.0.1").text() == "FAILED:name");
}

BOOST_AUTO_TEST_CASE(san_list_replaces_the_sni_name)
{
    Policy p = ca_policy();
    add_san(p, "dns:other.example.com");
    Verdict v = run(p, "leaf", "does-not-matter.example.net");
    BOOST_TEST(v.text() == "SUCCESS");
    BOOST_TEST(v.verified_by == "dns:other.example.com");

    // the SNI name matches the certificate, but the SAN list does not
    Policy q = ca_policy();
    add_san(q, "dns:nope.example.com");
    BOOST_TEST(run(q, "leaf", "abc.example.com").text() == "FAILED:san");
}

BOOST_AUTO_TEST_CASE(uri_san_and_regex_and_several)
{
    Policy p = ca_policy();
    add_san(p, "uri:spiffe://abc.example.com/test-identity");
    BOOST_TEST(run(p, "spiffe").text() == "SUCCESS");
    BOOST_TEST(run(p, "wrongsan").text() == "FAILED:san");

    Policy q = ca_policy();
    add_san(q, "uri:spiffe://abc.example.com/other-identity");
    BOOST_TEST(run(q, "spiffe").text() == "FAILED:san");

    Policy r = ca_policy();
    add_san(r, "dns:nope.example.com");
    add_san(r, "uri~spiffe://abc\\.example\\.com/test-.*");
    Verdict v = run(r, "leaf");
    BOOST_TEST(v.text() == "SUCCESS");
    BOOST_TEST(v.verified_by == "uri~spiffe://abc\\.example\\.com/test-.*");

    Policy s = ca_policy();
    add_san(s, "ip:127.0.0.1");
    BOOST_TEST(run(s, "ipemail").text() == "SUCCESS");
    Policy e = ca_policy();
    add_san(e, "email:ops@example.com");
    BOOST_TEST(run(e, "ipemail").text() == "SUCCESS");
}

BOOST_AUTO_TEST_CASE(skip_san_checks_chain_but_no_name)
{
    BOOST_TEST(run(ca_policy(Mode::SkipSan), "wrongsan").text() == "SUCCESS");
    BOOST_TEST(run(ca_policy(Mode::SkipSan), "untrusted").text() == "FAILED:chain");
}

BOOST_AUTO_TEST_CASE(skip_checks_nothing)
{
    Policy p;
    p.mode = Mode::Skip;
    Verdict v = run(p, "selfsigned", "unrelated.example.net");
    BOOST_TEST(v.text() == "SKIPPED");
    BOOST_TEST(!v.peer.spki_sha256_base64().empty());
}

BOOST_AUTO_TEST_CASE(no_certificate)
{
    BOOST_TEST(verify(ca_policy(), nullptr, nullptr, "abc.example.com").text()
               == "FAILED:no_certificate");
    Policy off;
    BOOST_TEST(verify(off, nullptr, nullptr, "abc.example.com").text() == "NONE");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pins)

BOOST_AUTO_TEST_CASE(spki_pin_alone_trusts_a_self_signed_leaf)
{
    Presented self("selfsigned");
    std::string spki = describe_peer(self.leaf.get()).spki_sha256_base64();

    Policy p;
    p.mode = Mode::Strict;
    add_pin(p, "sha256-spki:" + spki);
    Verdict v = run(p, "selfsigned");
    BOOST_TEST(v.text() == "SUCCESS");
    BOOST_TEST(run(p, "leaf").text() == "FAILED:pin");
    // the pin proves the key, the name is still checked
    BOOST_TEST(run(p, "selfsigned", "other.example.com").text() == "FAILED:name");
}

BOOST_AUTO_TEST_CASE(cert_pin_and_pin_certificate_file)
{
    Presented self("selfsigned");
    Policy p;
    p.mode = Mode::Strict;
    add_pin(p, "sha256-cert:" + describe_peer(self.leaf.get()).cert_sha256_hex());
    BOOST_TEST(run(p, "selfsigned").text() == "SUCCESS");

    Policy q;
    q.mode = Mode::Strict;
    std::string error;
    BOOST_TEST_REQUIRE(load_pin_certificates(cert_path("selfsigned.leaf.crt"), &q.pins, &error),
                       error);
    BOOST_TEST(q.pins.size() == 1u);
    BOOST_TEST(run(q, "selfsigned").text() == "SUCCESS");
    BOOST_TEST(run(q, "leaf").text() == "FAILED:pin");
    BOOST_TEST(!load_pin_certificates("/nonexistent.pem", &q.pins, &error));
    BOOST_TEST(!load_pin_certificates(cert_path("ca.cnf"), &q.pins, &error));
}

BOOST_AUTO_TEST_CASE(match_pins_returns_the_pin_that_matched)
{
    Presented leaf("leaf");
    Presented self("selfsigned");
    Policy p;
    add_pin(p, "sha256-cert:" + describe_peer(self.leaf.get()).cert_sha256_hex());
    add_pin(p, "sha256-spki:" + describe_peer(leaf.leaf.get()).spki_sha256_base64());
    const Pin *by_spki = match_pins(p.pins, leaf.leaf.get());
    BOOST_TEST_REQUIRE(by_spki != nullptr);
    BOOST_TEST(by_spki->spec == p.pins[1].spec);
    const Pin *by_cert = match_pins(p.pins, self.leaf.get());
    BOOST_TEST_REQUIRE(by_cert != nullptr);
    BOOST_TEST(by_cert->spec == p.pins[0].spec);
    Presented other("wildcard");
    BOOST_TEST(match_pins(p.pins, other.leaf.get()) == nullptr);
    BOOST_TEST(match_pins({}, leaf.leaf.get()) == nullptr);
    // from the peer's hashes, computed when a pin needs one: the same answers
    BOOST_TEST(match_pins(p.pins, describe_peer(leaf.leaf.get())) == by_spki);
    BOOST_TEST(match_pins(p.pins, describe_peer(self.leaf.get())) == by_cert);
    BOOST_TEST(match_pins(p.pins, describe_peer(other.leaf.get())) == nullptr);
    PeerInfo unknown;  // hashes that could not be computed match nothing
    BOOST_TEST(match_pins(p.pins, unknown) == nullptr);
}

BOOST_AUTO_TEST_CASE(peer_hashes_are_openssls_digests_and_survive_a_copy)
{
    Presented leaf("leaf");
    unsigned char cert_md[32];
    unsigned int len = 0;
    BOOST_TEST_REQUIRE(X509_digest(leaf.leaf.get(), EVP_sha256(), cert_md, &len) == 1);
    PeerInfo peer = describe_peer(leaf.leaf.get());
    const PeerInfo copy = peer;  // copied before any hash is computed
    BOOST_TEST_REQUIRE(peer.cert_sha256() != nullptr);
    BOOST_TEST(std::memcmp(peer.cert_sha256(), cert_md, sizeof cert_md) == 0);
    BOOST_TEST(peer.cert_sha256_hex().size() == 64u);
    BOOST_TEST(copy.cert_sha256_hex() == peer.cert_sha256_hex());
    BOOST_TEST(copy.spki_sha256_base64() == peer.spki_sha256_base64());
    PeerInfo none;
    BOOST_TEST(none.cert_sha256_hex().empty());
    BOOST_TEST(none.spki_sha256() == nullptr);
}

BOOST_AUTO_TEST_CASE(pin_plus_ca_requires_both)
{
    Presented leaf("leaf");
    Presented self("selfsigned");

    Policy p = ca_policy();
    add_pin(p, "sha256-spki:" + describe_peer(leaf.leaf.get()).spki_sha256_base64());
    BOOST_TEST(run(p, "leaf").text() == "SUCCESS");
    BOOST_TEST(run(p, "wildcard").text() == "FAILED:pin");  // CA ok, pin not

    Policy q = ca_policy();
    add_pin(q, "sha256-spki:" + describe_peer(self.leaf.get()).spki_sha256_base64());
    BOOST_TEST(run(q, "selfsigned").text() == "FAILED:chain");  // pin ok, CA not
}

BOOST_AUTO_TEST_CASE(pinned_expired_leaf_needs_allow_expired)
{
    Presented expired("expired");
    Policy p;
    p.mode = Mode::Strict;
    add_pin(p, "sha256-cert:" + describe_peer(expired.leaf.get()).cert_sha256_hex());
    BOOST_TEST(run(p, "expired").text() == "FAILED:expired");
    p.mode = Mode::AllowExpired;
    BOOST_TEST(run(p, "expired").text() == "SUCCESS");
}

BOOST_AUTO_TEST_SUITE_END()

// A peer writes what it likes into its certificate (t/lib/make-certs.sh's
// "forged": a dNSName holding CR, LF, a quote and a whole error-log line):
// the text logs and variables carry of it is one line, escaped as nginx
// escapes variables in its access log, and bounded.
BOOST_AUTO_TEST_SUITE(peer_text)

BOOST_AUTO_TEST_CASE(sans_from_a_certificate_are_escaped)
{
    Policy p = ca_policy();
    add_san(p, "dns:abc.example.com");
    Verdict v = run(p, "forged");
    BOOST_TEST(v.text() == "FAILED:san");
    std::string text = v.peer.sans_text();
    BOOST_TEST(text == "dns:forged.example.com,dns:x\\x0D\\x0A2020/01/01 00:00:00 [emerg] 1#1: forged line "
                       "\\x22quoted\\x22");
    BOOST_TEST(text.find_first_of("\r\n\"") == std::string::npos);
    // the raw name still takes part in matching, unchanged
    BOOST_TEST(v.peer.sans.at(1).value.find("\r\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(escaping_covers_every_byte_and_is_bounded)
{
    for (int ch = 0; ch < 256; ch++) {
        std::string out = escaped_text(std::string(1, static_cast<char>(ch)), 16);
        bool plain = ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\';
        BOOST_TEST((out.size() == (plain ? 1u : 4u)), ch);
        for (unsigned char o : out) BOOST_TEST((o >= 0x20 && o < 0x7f && o != '"'), ch);
    }
    BOOST_TEST(escaped_text(std::string(300, 'a'), 256) == std::string(256, 'a') + "...");
    PeerInfo many;
    for (int i = 0; i < 1000; i++) many.sans.push_back({SanType::Dns, std::string(40, 'n') + ".example.com"});
    std::string text = many.sans_text();
    BOOST_TEST(text.size() < PeerInfo::kMaxSansText + 64);
    BOOST_TEST(text.substr(text.size() - 3) == "...");
}

BOOST_AUTO_TEST_SUITE_END()

// A session or keepalive connection carries over only to the same binding:
// the key tells every part apart, and no two splits of the text collide.
// Arrays by reason (the status counters) are kReasonCount long: every
// reason but None has a name, and none comes after NoCertificate.
BOOST_AUTO_TEST_SUITE(reasons)

BOOST_AUTO_TEST_CASE(no_certificate_is_the_last_reason)
{
    BOOST_TEST(std::string(reason_name(Reason::None)).empty());
    for (size_t i = 1; i < kReasonCount; i++) BOOST_TEST(!std::string(reason_name(static_cast<Reason>(i))).empty());
    BOOST_TEST(std::string(reason_name(static_cast<Reason>(kReasonCount))).empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(binding)

BOOST_AUTO_TEST_CASE(keys_differ_in_every_part)
{
    int policy_a = 0, policy_b = 0, context_a = 0, context_b = 0;
    Binding base{&policy_a, &context_a, 0, "abc.example.com", "backend", ""};
    std::vector<Binding> others = {
        {&policy_b, &context_a, 0, "abc.example.com", "backend", ""},
        {&policy_a, &context_b, 0, "abc.example.com", "backend", ""},
        // the policy's trust replaced at run time
        {&policy_a, &context_a, 1, "abc.example.com", "backend", ""},
        {&policy_a, &context_a, 0, "b.example.com", "backend", ""},
        {&policy_a, &context_a, 0, "abc.example.com", "other", ""},
        {&policy_a, &context_a, 0, "abc.example.com", "backend", "client.crt"},
        // the same text, split otherwise
        {&policy_a, &context_a, 0, "abc.example.co", "mbackend", ""},
        {&policy_a, &context_a, 0, "abc.example.com", "", "backend"},
        {&policy_a, &context_a, 0, "", "abc.example.combackend", ""},
    };
    for (const Binding &other : others) {
        BOOST_TEST(other.key() != base.key());
        BOOST_TEST(!other.has_key(base.key()));
        BOOST_TEST(!base.has_key(other.key()));
        BOOST_TEST(other.has_key(other.key()));
    }
    Binding same{&policy_a, &context_a, 0, "abc.example.com", "backend", ""};
    BOOST_TEST(same.key() == base.key());
    BOOST_TEST(same.has_key(base.key()));
    // a key cut short, or with bytes after it, is another binding's
    const std::string key = base.key();
    for (size_t n = 0; n < key.size(); n++) BOOST_TEST(!base.has_key(std::string_view(key).substr(0, n)));
    BOOST_TEST(!base.has_key(key + "x"));
}

BOOST_AUTO_TEST_SUITE_END()

// A server that verifies its clients serves only connections whose
// handshake ran under its own TLS context.
BOOST_AUTO_TEST_SUITE(client_server_binding)

BOOST_AUTO_TEST_CASE(only_the_servers_own_handshake_counts)
{
    int pinned = 0, fallback = 0;
    BOOST_TEST(client_verified_for_server(true, &pinned, &pinned));
    BOOST_TEST(!client_verified_for_server(true, &fallback, &pinned));
    BOOST_TEST(!client_verified_for_server(true, nullptr, &pinned));
    BOOST_TEST(!client_verified_for_server(true, nullptr, nullptr));
    BOOST_TEST(client_verified_for_server(false, &fallback, &pinned));
}

BOOST_AUTO_TEST_CASE(the_reference_name_is_the_sni_names_host)
{
    BOOST_TEST(host_of_server_name("abc.example.com") == "abc.example.com");
    BOOST_TEST(host_of_server_name("abc.example.com:8443") == "abc.example.com");
    BOOST_TEST(host_of_server_name("127.0.0.1:443") == "127.0.0.1");
    BOOST_TEST(host_of_server_name("[::1]:443") == "::1");
    BOOST_TEST(host_of_server_name("[::1]") == "::1");
    BOOST_TEST(host_of_server_name("[::1") == "");
    BOOST_TEST(host_of_server_name("") == "");
}

BOOST_AUTO_TEST_CASE(a_session_resumes_only_under_the_context_it_was_made_in)
{
    std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)> session(SSL_SESSION_new(), SSL_SESSION_free);
    BOOST_TEST_REQUIRE(session.get() != nullptr);
    const std::string pinned(32, '\x01'), open(32, '\x02');
    // a session from a server that set no context (none verifies clients)
    BOOST_TEST(!session_resumable_in(session.get(), pinned));
    BOOST_TEST_REQUIRE(SSL_SESSION_set1_id_context(session.get(), reinterpret_cast<const unsigned char *>(open.data()),
                                                   static_cast<unsigned int>(open.size())) == 1);
    BOOST_TEST(!session_resumable_in(session.get(), pinned));
    BOOST_TEST(!session_resumable_in(session.get(), open.substr(0, 31)));
    BOOST_TEST(session_resumable_in(session.get(), open));
    BOOST_TEST(!session_resumable_in(nullptr, open));
    // made under the default server's context, for the pinned server: the
    // mark decides, not the context
    BOOST_TEST_REQUIRE(mark_session_for(session.get(), pinned));
    BOOST_TEST(session_resumable_in(session.get(), pinned));
    BOOST_TEST(!session_resumable_in(session.get(), open));
    BOOST_TEST_REQUIRE(mark_session_for(session.get(), kUnpinnedServer));
    BOOST_TEST(!session_resumable_in(session.get(), pinned));
    // the mark survives the session's encoding (tickets, shared caches),
    // which needs the session's protocol and cipher
    BOOST_TEST_REQUIRE(mark_session_for(session.get(), pinned));
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    BOOST_TEST_REQUIRE(ssl.get() != nullptr);
    const unsigned char tls_aes_128_gcm_sha256[2] = {0x13, 0x01};
    BOOST_TEST_REQUIRE(SSL_SESSION_set_protocol_version(session.get(), TLS1_3_VERSION) == 1);
    BOOST_TEST_REQUIRE(SSL_SESSION_set_cipher(session.get(), SSL_CIPHER_find(ssl.get(), tls_aes_128_gcm_sha256)) == 1);
    unsigned char *der = nullptr;
    int len = i2d_SSL_SESSION(session.get(), &der);
    BOOST_TEST_REQUIRE(len > 0);
    const unsigned char *p = der;
    std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)> decoded(d2i_SSL_SESSION(nullptr, &p, len),
                                                                       SSL_SESSION_free);
    OPENSSL_free(der);
    BOOST_TEST_REQUIRE(decoded.get() != nullptr);
    BOOST_TEST(session_resumable_in(decoded.get(), pinned));
    BOOST_TEST(!session_resumable_in(decoded.get(), open));
}

BOOST_AUTO_TEST_SUITE_END()

// The listener's side (GEP-91, GEP-4078) on real certificates: pins, the
// chain result OpenSSL reached, and the validity period when pins alone
// authenticate.
BOOST_AUTO_TEST_SUITE(client)

std::vector<Pin> spki_pins(std::initializer_list<const char *> certificates)
{
    Policy p;
    for (const char *name : certificates) {
        Presented cert(name);
        add_pin(p, "sha256-spki:" + describe_peer(cert.leaf.get()).spki_sha256_base64());
    }
    return p.pins;
}

Verdict client(const std::vector<Pin> &pins, const char *certificate, ClientCa ca, const std::string &chain_error)
{
    Presented cert(certificate);
    return verify_client(pins, cert.leaf.get(), ca, chain_error);
}

BOOST_AUTO_TEST_CASE(pins_alone_admit_a_self_signed_client_inside_its_validity)
{
    std::vector<Pin> pins = spki_pins({"selfsigned", "expired"});
    Verdict v = client(pins, "selfsigned", ClientCa::NotRequired, "self-signed certificate");
    BOOST_TEST(v.text() == "SUCCESS");
    BOOST_TEST(v.verified_by == pins.front().spec);
    BOOST_TEST(client(pins, "leaf", ClientCa::NotRequired, "").text() == "FAILED:pin");
    Verdict expired = client(pins, "expired", ClientCa::NotRequired, "certificate has expired");
    BOOST_TEST(expired.text() == "FAILED:expired");
    BOOST_TEST(expired.detail == "outside its validity period");
}

BOOST_AUTO_TEST_CASE(with_the_ca_required_the_chain_and_a_pin_must_both_pass)
{
    std::vector<Pin> pins = spki_pins({"leaf"});
    BOOST_TEST(client(pins, "leaf", ClientCa::Required, "").text() == "SUCCESS");
    Verdict chain = client(pins, "leaf", ClientCa::Required, "unable to get local issuer certificate");
    BOOST_TEST(chain.text() == "FAILED:chain");
    BOOST_TEST(chain.detail == "unable to get local issuer certificate");
    BOOST_TEST(client(pins, "spiffe", ClientCa::Required, "").text() == "FAILED:pin");
    // no pins: the CA alone
    Verdict ca = client({}, "spiffe", ClientCa::Required, "");
    BOOST_TEST(ca.text() == "SUCCESS");
    BOOST_TEST(ca.verified_by == "ca");
    BOOST_TEST(client({}, "untrusted", ClientCa::Required, "certificate signature failure").text() == "FAILED:chain");
    BOOST_TEST(verify_client({}, nullptr, ClientCa::Required, "").text() == "FAILED:no_certificate");
}

BOOST_AUTO_TEST_CASE(fallback_leaves_every_chain_failure_as_one_optional_no_ca_admits)
{
    // the chain errors of real certificates against the test CA, as a
    // listener's handshake sees them
    std::string error;
    auto store = load_trust_store(cert_path("ca.crt"), &error);
    BOOST_TEST_REQUIRE(store.get() != nullptr, error);
    auto chain_error = [&](const char *name) {
        Presented cert(name);
        std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(), X509_STORE_CTX_free);
        BOOST_TEST_REQUIRE(X509_STORE_CTX_init(ctx.get(), store.get(), cert.leaf.get(), cert.chain) == 1);
        X509_verify_cert(ctx.get());
        return X509_STORE_CTX_get_error(ctx.get());
    };
    BOOST_TEST(chain_error("leaf") == X509_V_OK);
    // an issuer nginx cannot find: admitted by optional_no_ca as it is
    BOOST_TEST(fallback_error_admitted_by_nginx(chain_error("untrusted")));
    BOOST_TEST(fallback_error_admitted_by_nginx(chain_error("selfsigned")));
    // another CA of the trusted CA's name, an expired leaf: nginx answers
    // 400 to these, so the fallback leaves kFallbackChainError instead
    BOOST_TEST(chain_error("twinsigned") == X509_V_ERR_CERT_SIGNATURE_FAILURE);
    BOOST_TEST(!fallback_error_admitted_by_nginx(chain_error("twinsigned")));
    BOOST_TEST(!fallback_error_admitted_by_nginx(chain_error("expired")));
    BOOST_TEST(fallback_error_admitted_by_nginx(kFallbackChainError));
    // what the handshake leaves: the error itself where nginx admits it
    BOOST_TEST(fallback_chain_error(chain_error("untrusted")) == chain_error("untrusted"));
    BOOST_TEST(fallback_chain_error(chain_error("twinsigned")) == kFallbackChainError);
    BOOST_TEST(fallback_chain_error(chain_error("expired")) == kFallbackChainError);
}

BOOST_AUTO_TEST_SUITE_END()
