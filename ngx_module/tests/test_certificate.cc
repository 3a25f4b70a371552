// A listener's certificate as the upstream API replaces it: read from PEM
// on the certificates t/lib/make-certs.sh made into $GTLS_TEST_CERTS, and
// the API's JSON for it.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtls_certificate.h"
#include "gtls_upstream_api.h"

namespace {

std::string read_cert_file(const std::string &name)
{
    const char *dir = std::getenv("GTLS_TEST_CERTS");
    BOOST_TEST_REQUIRE(dir != nullptr, "GTLS_TEST_CERTS is not set");
    std::ifstream in(std::string(dir) + "/" + name);
    BOOST_TEST_REQUIRE(in.good(), name);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string refusal(const std::string &body)
{
    try {
        gtls::parse_api_update(body);
    } catch (const gtls::ApiError &e) {
        return e.what();
    }
    return "(taken)";
}

std::string certificate_body(const std::string &certificate, const std::string &key)
{
    return R"({"certificates": {"gw-https": {"certificate": )" + gtls::json_string(certificate)
           + R"(, "key": )" + gtls::json_string(key) + "}}}";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(listener_certificates)

BOOST_AUTO_TEST_CASE(a_chain_and_its_key_make_a_pair)
{
    gtls::KeyPair pair;
    std::string error;
    // leaf.crt: the leaf, then the intermediate that signed it
    BOOST_TEST_REQUIRE(gtls::key_pair_from_pem(read_cert_file("leaf.crt"), read_cert_file("leaf.key"), &pair, &error), error);
    BOOST_TEST(sk_X509_num(pair.chain.get()) == 1);
    BOOST_TEST(pair.sha256.size() == 64u);
    BOOST_TEST(pair.sha256 == gtls::certificate_sha256(pair.leaf.get()));

    gtls::KeyPair other;
    BOOST_TEST_REQUIRE(gtls::key_pair_from_pem(read_cert_file("wildcard.crt"), read_cert_file("wildcard.key"), &other, &error));
    BOOST_TEST(other.sha256 != pair.sha256);
}

BOOST_AUTO_TEST_CASE(a_key_of_another_certificate_or_none_is_refused)
{
    gtls::KeyPair pair;
    std::string error;
    BOOST_TEST(!gtls::key_pair_from_pem(read_cert_file("leaf.crt"), read_cert_file("wildcard.key"), &pair, &error));
    BOOST_TEST(error == "key: is not the private key of the first certificate");
    BOOST_TEST(!gtls::key_pair_from_pem(read_cert_file("leaf.crt"), "", &pair, &error));
    BOOST_TEST(error == "key: holds no unencrypted PEM private key");
    BOOST_TEST(!gtls::key_pair_from_pem("", read_cert_file("leaf.key"), &pair, &error));
    BOOST_TEST(error == "certificate: holds no PEM certificate");
    // a second block that is not a certificate is not skipped
    const std::string broken = read_cert_file("leaf.crt") + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    BOOST_TEST(!gtls::key_pair_from_pem(broken, read_cert_file("leaf.key"), &pair, &error));
    BOOST_TEST(error == "certificate: a PEM block does not parse as a certificate");
    BOOST_TEST(!pair.leaf);  // nothing half-made is handed out
}

// proxy_ssl_policy_certificate: the same pair from files, and a refusal
// that names the file at fault
BOOST_AUTO_TEST_CASE(a_pair_from_files_names_the_file_at_fault)
{
    const std::string dir = std::getenv("GTLS_TEST_CERTS") ? std::getenv("GTLS_TEST_CERTS") : "";
    BOOST_TEST_REQUIRE(!dir.empty(), "GTLS_TEST_CERTS is not set");
    gtls::KeyPair pair, from_pem;
    std::string error;
    BOOST_TEST_REQUIRE(gtls::key_pair_from_files(dir + "/leaf.crt", dir + "/leaf.key", &pair, &error), error);
    BOOST_TEST_REQUIRE(gtls::key_pair_from_pem(read_cert_file("leaf.crt"), read_cert_file("leaf.key"), &from_pem, &error));
    BOOST_TEST(pair.sha256 == from_pem.sha256);
    BOOST_TEST(sk_X509_num(pair.chain.get()) == 1);

    BOOST_TEST(!gtls::key_pair_from_files(dir + "/leaf.crt", dir + "/wildcard.key", &pair, &error));
    BOOST_TEST(error == "\"" + dir + "/wildcard.key\" is not the private key of the first certificate");
    BOOST_TEST(!gtls::key_pair_from_files(dir + "/leaf.key", dir + "/leaf.key", &pair, &error));
    BOOST_TEST(error == "\"" + dir + "/leaf.key\" holds no PEM certificate");
    BOOST_TEST(!gtls::key_pair_from_files(dir + "/none.crt", dir + "/leaf.key", &pair, &error));
    BOOST_TEST(error == "cannot read \"" + dir + "/none.crt\"");
    BOOST_TEST(!gtls::key_pair_from_files(dir + "/leaf.crt", dir + "/none.key", &pair, &error));
    BOOST_TEST(error == "cannot read \"" + dir + "/none.key\"");
}

BOOST_AUTO_TEST_CASE(the_api_takes_a_certificate_and_its_key)
{
    const std::string crt = read_cert_file("leaf.crt"), key = read_cert_file("leaf.key");
    const gtls::ApiUpdate update = gtls::parse_api_update(certificate_body(crt, key));
    BOOST_TEST_REQUIRE(update.certificates.size() == 1u);
    BOOST_TEST(update.certificates[0].name == "gw-https");
    BOOST_TEST(update.certificates[0].certificate == crt);
    BOOST_TEST(update.certificates[0].key == key);
    // kept across reloads as the module writes it
    const gtls::ListenerCertificate again =
        gtls::parse_listener_certificate(gtls::listener_certificate_json(update.certificates[0]), "gw-https");
    BOOST_TEST((again == update.certificates[0]));
}

BOOST_AUTO_TEST_CASE(a_certificate_s_fields_are_checked_and_named)
{
    const std::string crt = read_cert_file("leaf.crt"), key = read_cert_file("leaf.key");
    BOOST_TEST(refusal(R"({"certificates": {}})") == "certificates: names no certificate");
    BOOST_TEST(refusal(R"({"certificates": {"a b": {}}})") == R"(certificates["a b"]: is not a certificate name)");
    BOOST_TEST(refusal(R"({"certificates": {"gw": {"certificate": )" + gtls::json_string(crt) + "}}}")
               == R"(certificates["gw"]: "certificate" and "key" are both required)");
    BOOST_TEST(refusal(R"({"certificates": {"gw": {"cert": "x"}}})")
               == R"(certificates["gw"]: unknown field "cert" (known: certificate, key))");
    BOOST_TEST(refusal(R"({"certificates": {"gw": {"key": 1}}})") == R"(certificates["gw"].key: must be a string, not a number)");
    // a key where the chain goes, a chain where the key goes, two keys, an
    // encrypted key: each refused before anything is read
    BOOST_TEST(refusal(certificate_body(key, key))
               == R"(certificates["gw-https"].certificate: only CERTIFICATE PEM blocks may be given (line 1))");
    BOOST_TEST(refusal(certificate_body(crt, crt)).find(R"(certificates["gw-https"].key: only PRIVATE KEY or RSA PRIVATE KEY or EC PRIVATE KEY PEM blocks)")
               == 0u);
    BOOST_TEST(refusal(certificate_body(crt, key + key)) == R"(certificates["gw-https"].key: holds more than one private key)");
    BOOST_TEST(refusal(certificate_body(crt, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"))
                   .find("only PRIVATE KEY")
               != std::string::npos);
    BOOST_TEST(refusal(certificate_body(crt, "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
               == R"(certificates["gw-https"].key: a PEM private key holds something that is not base64 (line 2))");
    BOOST_TEST(refusal(certificate_body(std::string(gtls::kMaxApiCertificateBytes + 1, '\n'), key))
               == R"(certificates["gw-https"].certificate: more than 1048576 bytes)");
}

BOOST_AUTO_TEST_CASE(a_list_and_an_answer_name_certificates_never_keys)
{
    gtls::ApiList list;
    list.certificates.push_back({"gw-https", 7, true, "ab12"});
    const std::string json = gtls::api_list_json(list);
    BOOST_TEST(json.find(R"("certificates":{"gw-https":{"generation":7,"source":"api","sha256":"ab12"}})") != std::string::npos,
               json);
    BOOST_TEST(gtls::api_list_json(gtls::ApiList()).find("certificates") == std::string::npos);
    list.certificates.push_back({"gw-other", 0, false, "cd34"});
    list.policies.push_back({"ns/p", 3, true, "system", {}, "", {}, ""});
    const std::string both = gtls::api_list_json(list);
    BOOST_TEST((gtls::pushed_certificates(both) == std::vector<std::string>{"gw-https"}));
    BOOST_TEST((gtls::pushed_policies(both) == std::vector<std::string>{"ns/p"}));
    gtls::ApiUpdated updated;
    updated.certificates.emplace_back("gw-https", 8);
    BOOST_TEST(gtls::api_updated_json(updated).find(R"("certificates":{"gw-https":{"generation":8}})") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
