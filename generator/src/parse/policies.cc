// BackendTLSPolicy (GEP-1897) and its GEP-4152 extensions: skip-verify
// and the pins.
#include "parse/kinds.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <openssl/evp.h>
#include "gtls_spec.h"
#include "parse/fields.h"

namespace g2n {

std::string base64_decode(const Document &doc, const YamlNode &node, const std::string &path,
                          const std::string &text)
{
    std::string clean;
    for (char ch : text) {
        if (ch != '\n' && ch != '\r' && ch != ' ') clean += ch;
    }
    if (clean.size() % 4 != 0) {
        doc.fail(node, path, "not base64");
    }
    std::string out(clean.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(&out[0]),
                            reinterpret_cast<const unsigned char *>(clean.data()),
                            static_cast<int>(clean.size()));
    if (n < 0) {
        doc.fail(node, path, "not base64");
    }
    size_t pad = 0;
    if (!clean.empty() && clean.back() == '=') pad++;
    if (clean.size() > 1 && clean[clean.size() - 2] == '=') pad++;
    out.resize(static_cast<size_t>(n) - pad);
    return out;
}

std::string base64_to_hex(const std::string &b64)
{
    if (b64.empty() || b64.size() % 4 != 0) return "";
    std::string raw(b64.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(&raw[0]),
                            reinterpret_cast<const unsigned char *>(b64.data()), static_cast<int>(b64.size()));
    if (n < 0) return "";
    size_t pad = (b64.back() == '=') + (b64.size() > 1 && b64[b64.size() - 2] == '=');
    raw.resize(static_cast<size_t>(n) - pad);
    return gtls::to_hex(reinterpret_cast<const unsigned char *>(raw.data()), raw.size());
}

// A trustedCertificateHashes entry as a module pin SPEC, or "" and *why.
std::string hash_to_pin(const std::string &type, const std::string &algorithm, const std::string &value,
                        std::string *why)
{
    if (algorithm != "SHA256") {
        *why = "algorithm: only SHA256 is supported";
        return "";
    }
    std::string spec_text;
    if (type == "SPKI") {
        spec_text = "sha256-spki:" + value;
    } else if (type == "Certificate") {
        bool hex = value.find(':') != std::string::npos || value.size() == 64;
        spec_text = "sha256-cert:" + (hex ? value : base64_to_hex(value));
    } else {
        *why = "type: expected SPKI or Certificate";
        return "";
    }
    // the module's own parser: what it refuses never reaches nginx
    std::string error;
    std::optional<gtls::Pin> pin = gtls::parse_pin_spec(spec_text, &error);
    if (!pin) {
        *why = "value: not a SHA-256 " + type + " hash (" + error + ")";
        return "";
    }
    return pin->spec;
}

// "SPKI:VALUE,Certificate:VALUE", as the options spell hashes: (type, value)
std::vector<std::pair<std::string, std::string>> split_hash_list(const std::string &list)
{
    std::vector<std::pair<std::string, std::string>> out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = list.find(',', start);
        std::string item = list.substr(start, end == std::string::npos ? std::string::npos : end - start);
        size_t colon = item.find(':');
        out.emplace_back(item.substr(0, colon), colon == std::string::npos ? "" : item.substr(colon + 1));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return out;
}

// GEP-4152, both drafts' spellings, with the options under gateway2nginx.io/
// as an alternative. Its validation rules make the policy Accepted=False/
// Invalid (the CRD cannot check fields it does not know). Returns whether
// any GEP-4152 setting is present.
bool parse_gep4152(const Document &doc, const YamlNode &spec, const YamlNode &validation,
                   BackendTLSPolicy *p)
{
    using gtls::Mode;
    static const std::map<std::string, Mode> modes = {
        {"Standard", Mode::Strict}, {"Strict", Mode::Strict}, {"InsecureAllowExpired", Mode::AllowExpired},
        {"InsecureSkipOnlySANVerification", Mode::SkipSan}, {"InsecureSkipSANVerification", Mode::SkipSan},
        {"InsecureSkipVerification", Mode::Skip}};
    std::map<std::string, std::string> options = doc.string_map(spec, "spec", "options");
    bool present = false;

    std::string mode = doc.string(validation, "spec.validation", "mode");
    auto option = options.find("gateway2nginx.io/verification-mode");
    if (option != options.end()) {
        if (!mode.empty() && mode != option->second) {
            p->invalid_reasons.push_back("spec.validation.mode and option gateway2nginx.io/verification-mode disagree");
        }
        mode = option->second;
    }
    if (!mode.empty()) {
        present = true;
        auto it = modes.find(mode);
        if (it == modes.end()) {
            p->invalid_reasons.push_back("spec.validation.mode: unknown mode \"" + mode + "\"");
        } else {
            p->mode = it->second;
        }
    }

    int i = 0;
    for (const YamlNode &ref : doc.list(validation, "spec.validation", "trustedCertificates")) {
        std::string path = "spec.validation.trustedCertificates[" + std::to_string(i++) + "]";
        p->trusted_certificates.push_back({doc.string(ref, path, "group"), doc.string(ref, path, "kind", true),
                                           doc.string(ref, path, "name", true)});
        present = true;
    }

    auto add_hash = [&](const std::string &where, const std::string &type, const std::string &algorithm,
                        const std::string &value) {
        present = true;
        std::string why, spec_text = hash_to_pin(type, algorithm, value, &why);
        if (spec_text.empty()) {
            p->invalid_reasons.push_back(where + "." + why);
            return;
        }
        p->pins.push_back(spec_text);
    };
    i = 0;
    for (const YamlNode &h : doc.list(validation, "spec.validation", "trustedCertificateHashes")) {
        std::string path = "spec.validation.trustedCertificateHashes[" + std::to_string(i++) + "]";
        add_hash(path, doc.string(h, path, "type", true), doc.string(h, path, "algorithm", false, "SHA256"),
                 doc.string(h, path, "value", true));
    }
    option = options.find("gateway2nginx.io/trusted-certificate-hashes");
    if (option != options.end()) {
        for (const auto &[type, value] : split_hash_list(option->second)) {
            add_hash("option gateway2nginx.io/trusted-certificate-hashes", type, "SHA256", value);
        }
    }
    for (const auto &[key, value] : options) {
        if (key.compare(0, 17, "gateway2nginx.io/") == 0 && key != "gateway2nginx.io/verification-mode"
            && key != "gateway2nginx.io/trusted-certificate-hashes" && key != "gateway2nginx.io/client-certificate") {
            p->invalid_reasons.push_back("unknown option " + key);
        }
    }

    // the drafts' validation rules
    bool any_trust = !p->ca_certificate_refs.empty() || !p->well_known_ca_certificates.empty()
                     || !p->trusted_certificates.empty() || !p->pins.empty();
    if (present && p->mode == gtls::Mode::Skip && any_trust) {
        p->invalid_reasons.push_back("spec.validation: InsecureSkipVerification must not name trust "
                                     "(caCertificateRefs, wellKnownCACertificates, trustedCertificates, trustedCertificateHashes)");
    }
    if (present && p->mode != gtls::Mode::Skip && !any_trust) {
        p->invalid_reasons.push_back("spec.validation: mode needs caCertificateRefs, wellKnownCACertificates, "
                                     "trustedCertificates or trustedCertificateHashes");
    }
    if ((p->mode == gtls::Mode::Skip || p->mode == gtls::Mode::SkipSan) && doc.child(validation, "spec.validation", "subjectAltNames").defined()) {
        p->invalid_reasons.push_back("spec.validation.subjectAltNames must be empty when mode skips SAN verification");
    }
    return present;
}

void parse_backend_tls_policy(const Document &doc, const YamlNode &root, Manifests *out)
{
    BackendTLSPolicy p;
    p.meta = doc.meta(root);
    p.api_version = doc.string(root, "", "apiVersion", true);
    YamlNode spec = doc.child(root, "", "spec");
    for (const std::string &key : doc.unknown(spec, "spec", {"targetRefs", "validation", "options"})) {
        p.invalid_reasons.push_back("unsupported field spec." + key);
    }

    std::vector<YamlNode> targets = doc.list(spec, "spec", "targetRefs", true);
    if (targets.empty() || targets.size() > 16) {
        doc.fail(spec, "spec.targetRefs", "expected 1 to 16 targetRefs");
    }
    for (size_t i = 0; i < targets.size(); i++) {
        std::string path = "spec.targetRefs[" + std::to_string(i) + "]";
        PolicyTargetRef t;
        t.group = doc.string(targets[i], path, "group", true);
        t.kind = doc.string(targets[i], path, "kind", true);
        t.name = doc.string(targets[i], path, "name", true);
        t.section_name = doc.string(targets[i], path, "sectionName");
        if (!t.section_name.empty() && !valid_dns1123_subdomain(t.section_name)) {
            doc.fail(targets[i], path + ".sectionName", "not a valid section name");
        }
        for (const PolicyTargetRef &seen : p.target_refs) {
            if (seen.group == t.group && seen.kind == t.kind && seen.name == t.name) {
                if (seen.section_name.empty() != t.section_name.empty()) {
                    doc.fail(targets[i], "spec.targetRefs", "sectionName must be specified when targetRefs includes 2 or more references to the same target");
                }
                if (seen.section_name == t.section_name) {
                    doc.fail(targets[i], "spec.targetRefs", "sectionName must be unique when targetRefs includes 2 or more references to the same target");
                }
            }
        }
        p.target_refs.push_back(t);
    }

    YamlNode validation = doc.child(spec, "spec", "validation");
    if (!validation.defined()) {
        doc.fail(spec, "spec.validation", "required field is missing");
    }
    for (const std::string &key : doc.unknown(validation, "spec.validation",
                                              {"caCertificateRefs", "wellKnownCACertificates",
                                               "hostname", "subjectAltNames", "mode",
                                               "trustedCertificates", "trustedCertificateHashes"})) {
        p.invalid_reasons.push_back("unsupported field spec.validation." + key);
    }
    int i = 0;
    for (const YamlNode &ref : doc.list(validation, "spec.validation", "caCertificateRefs")) {
        std::string path = "spec.validation.caCertificateRefs[" + std::to_string(i++) + "]";
        p.ca_certificate_refs.push_back({doc.string(ref, path, "group", true),
                                         doc.string(ref, path, "kind", true),
                                         doc.string(ref, path, "name", true)});
    }
    if (i > 8) {
        doc.fail(validation, "spec.validation.caCertificateRefs", "expected at most 8 references");
    }
    p.well_known_ca_certificates = doc.string(validation, "spec.validation", "wellKnownCACertificates");
    if (!p.ca_certificate_refs.empty() && !p.well_known_ca_certificates.empty()) {
        doc.fail(validation, "spec.validation", "must not contain both CACertificateRefs and WellKnownCACertificates");
    }
    bool gep4152 = parse_gep4152(doc, spec, validation, &p);
    if (!gep4152 && p.ca_certificate_refs.empty() && p.well_known_ca_certificates.empty()) {
        doc.fail(validation, "spec.validation", "must specify either CACertificateRefs or WellKnownCACertificates");
    }
    p.hostname = doc.string(validation, "spec.validation", "hostname", true);
    if (!valid_hostname(p.hostname, false)) {
        doc.fail(validation, "spec.validation.hostname", "not a valid precise hostname: \"" + p.hostname + "\"");
    }

    std::vector<YamlNode> sans = doc.list(validation, "spec.validation", "subjectAltNames");
    if (sans.size() > 5) {
        doc.fail(validation, "spec.validation.subjectAltNames", "expected at most 5 entries");
    }
    for (size_t j = 0; j < sans.size(); j++) {
        std::string path = "spec.validation.subjectAltNames[" + std::to_string(j) + "]";
        std::string type = doc.string(sans[j], path, "type", true);
        std::string hostname = doc.string(sans[j], path, "hostname");
        std::string uri = doc.string(sans[j], path, "uri");
        if (type != "Hostname" && type != "URI") {
            doc.fail(sans[j], path + ".type", "expected Hostname or URI");
        }
        if (type == "Hostname" && hostname.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must contain Hostname, if Type is set to Hostname");
        }
        if (type != "Hostname" && !hostname.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must not contain Hostname, if Type is not set to Hostname");
        }
        if (type == "URI" && uri.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must contain URI, if Type is set to URI");
        }
        if (type != "URI" && !uri.empty()) {
            doc.fail(sans[j], path, "SubjectAltName element must not contain URI, if Type is not set to URI");
        }
        // the CRD's pattern, anchored at both ends, on printable ASCII
        static const std::regex uri_re("^(([^:/?#]+):)(//([^/?#]*))([^?#]*)(\\?([^#]*))?(#(.*))?$");
        if (type == "URI" && (uri.size() > 253 || !std::all_of(uri.begin(), uri.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; })
                              || !std::regex_match(uri, uri_re))) {
            doc.fail(sans[j], path + ".uri", "not a URI with a scheme and an authority");
        }
        if (type == "Hostname" && !valid_hostname(hostname, true)) {
            doc.fail(sans[j], path + ".hostname", "not a valid hostname");
        }
        // what the module accepts, by the module's own parser: a value the
        // CRD allows and the module refuses fails this policy alone
        std::string error;
        std::optional<gtls::SanMatcher> san =
            gtls::parse_san_spec((type == "URI" ? "uri:" : "dns:") + (type == "URI" ? uri : hostname), &error);
        if (!san) {
            p.invalid_reasons.push_back(path + ": not supported by the module: " + error);
            continue;
        }
        p.subject_alt_names.push_back(std::move(*san));
    }
    p.options = doc.string_map(spec, "spec", "options");
    if (auto client = p.options.find("gateway2nginx.io/client-certificate"); client != p.options.end()) {
        if (valid_dns1123_subdomain(client->second)) {
            p.client_certificate = client->second;
        } else {
            p.invalid_reasons.push_back("option gateway2nginx.io/client-certificate: \"" + client->second
                                        + "\" is not a Secret's name");
        }
    }
    out->backend_tls_policies.push_back(std::move(p));
}

}  // namespace g2n
