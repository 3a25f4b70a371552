// Per-kind parsers: every field typed, CRD schema and CEL rules re-checked
// (no API server stands between the manifests and us).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <regex>
#include <set>

#include <openssl/evp.h>

#include "gtls_spec.h"
#include "parse_fields.h"

namespace g2n {

namespace {

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
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char ch : raw) {
        hex += digits[ch >> 4];
        hex += digits[ch & 0xf];
    }
    return hex;
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

// A parametersRef (of a GatewayClass, or a Gateway's infrastructure) as
// "group/kind/name", empty when absent.
std::string parameters_ref(const Document &doc, const YamlNode &parent, const std::string &parent_path)
{
    YamlNode ref = doc.child(parent, parent_path, "parametersRef");
    if (!ref.defined()) return "";
    const std::string path = parent_path + ".parametersRef";
    doc.only(ref, path, {"group", "kind", "name", "namespace"});
    return doc.string(ref, path, "group") + "/" + doc.string(ref, path, "kind", true) + "/"
           + doc.string(ref, path, "name", true);
}

void parse_gateway_class(const Document &doc, const YamlNode &root, Manifests *out)
{
    GatewayClass gc;
    gc.meta = doc.meta(root, false);
    YamlNode spec = doc.child(root, "", "spec");
    gc.controller_name = doc.string(spec, "spec", "controllerName", true);
    gc.parameters_ref = parameters_ref(doc, spec, "spec");
    out->gateway_classes.push_back(std::move(gc));
}

LabelSelector parse_label_selector(const Document &doc, const YamlNode &node, const std::string &path)
{
    LabelSelector sel;
    doc.only(node, path, {"matchLabels", "matchExpressions"});
    sel.match_labels = doc.string_map(node, path, "matchLabels");
    for (const auto &[key, value] : sel.match_labels) {
        if (!valid_label_value(value)) {
            doc.fail(node, path + ".matchLabels." + key, "not a valid label value");
        }
    }
    int i = 0;
    for (const YamlNode &e : doc.list(node, path, "matchExpressions")) {
        std::string epath = path + ".matchExpressions[" + std::to_string(i++) + "]";
        doc.only(e, epath, {"key", "operator", "values"});
        LabelRequirement r;
        r.key = doc.string(e, epath, "key", true);
        r.op = doc.string(e, epath, "operator", true);
        int j = 0;
        for (const YamlNode &v : doc.list(e, epath, "values")) {
            std::string vpath = epath + ".values[" + std::to_string(j++) + "]";
            if (!v.is_scalar()) doc.fail(v, vpath, "expected a string");
            r.values.push_back(v.scalar());
        }
        if (r.op == "In" || r.op == "NotIn") {
            if (r.values.empty()) doc.fail(e, epath + ".values", "must be non-empty for operator " + r.op);
        } else if (r.op == "Exists" || r.op == "DoesNotExist") {
            if (!r.values.empty()) doc.fail(e, epath + ".values", "must be empty for operator " + r.op);
        } else {
            doc.fail(e, epath + ".operator", "expected In, NotIn, Exists or DoesNotExist");
        }
        sel.match_expressions.push_back(std::move(r));
    }
    return sel;
}

// A Namespace: its labels, for listeners that select namespaces. The API
// server labels every namespace with its own name.
void parse_namespace(const Document &doc, const YamlNode &root, Manifests *out)
{
    Namespace ns;
    ns.meta = doc.meta(root, false);
    ns.meta.labels["kubernetes.io/metadata.name"] = ns.meta.name;
    out->namespaces.push_back(std::move(ns));
}

Listener parse_listener(const Document &doc, const YamlNode &node, const std::string &path)
{
    Listener l;
    doc.only(node, path, {"name", "hostname", "port", "protocol", "tls", "allowedRoutes"});
    l.name = doc.string(node, path, "name", true);
    if (!valid_dns1123_subdomain(l.name)) {
        doc.fail(node, path + ".name", "not a valid section name: \"" + l.name + "\"");
    }
    l.hostname = doc.string(node, path, "hostname");
    if (!l.hostname.empty() && !valid_hostname(l.hostname, true)) {
        doc.fail(node, path + ".hostname", "not a valid hostname: \"" + l.hostname + "\"");
    }
    l.port = doc.integer(node, path, "port", 1, 65535, true);
    l.protocol = doc.string(node, path, "protocol", true);

    YamlNode tls = doc.child(node, path, "tls");
    if (tls.defined()) {
        std::string tpath = path + ".tls";
        doc.only(tls, tpath, {"mode", "certificateRefs", "options", "frontendValidation"});
        l.tls_mode = doc.string(tls, tpath, "mode", false, "Terminate");
        if (l.tls_mode != "Terminate" && l.tls_mode != "Passthrough") {
            doc.fail(tls, tpath + ".mode", "expected Terminate or Passthrough");
        }
        int i = 0;
        for (const YamlNode &ref : doc.list(tls, tpath, "certificateRefs")) {
            std::string rpath = tpath + ".certificateRefs[" + std::to_string(i++) + "]";
            doc.only(ref, rpath, {"group", "kind", "name", "namespace"});
            SecretObjectRef r;
            r.group = doc.string(ref, rpath, "group");
            r.kind = doc.string(ref, rpath, "kind", false, "Secret");
            r.name = doc.string(ref, rpath, "name", true);
            r.namespace_ = doc.string(ref, rpath, "namespace");
            l.certificate_refs.push_back(r);
        }
        std::map<std::string, std::string> options = doc.string_map(tls, tpath, "options");
        auto pins = options.find("gateway2nginx.io/client-certificate-pins");
        if (pins != options.end()) {
            for (const auto &[type, value] : split_hash_list(pins->second)) {
                std::string why, spec = hash_to_pin(type, "SHA256", value, &why);
                if (spec.empty()) {
                    doc.fail(tls, tpath + ".options[gateway2nginx.io/client-certificate-pins]", "\"" + type + ":"
                             + value + "\": " + why);
                }
                l.client_pins.push_back(spec);
            }
        }
    }
    // CEL: tls is required for HTTPS and TLS, forbidden for HTTP, TCP, UDP
    if ((l.protocol == "HTTPS" || l.protocol == "TLS") && !tls.defined()) {
        doc.fail(node, path, "tls must be specified for protocols ['HTTPS', 'TLS']");
    }
    if ((l.protocol == "HTTP" || l.protocol == "TCP" || l.protocol == "UDP") && tls.defined()) {
        doc.fail(tls, path + ".tls", "tls mode must not be set for protocols ['HTTP', 'TCP', 'UDP']");
    }
    if (l.protocol == "HTTPS" && l.tls_mode != "Terminate") {
        doc.fail(tls, path + ".tls.mode", "tls mode must be Terminate for protocol HTTPS");
    }
    if ((l.protocol == "TCP" || l.protocol == "UDP") && !l.hostname.empty()) {
        doc.fail(node, path + ".hostname", "hostname must not be specified for protocols ['TCP', 'UDP']");
    }
    if ((l.protocol == "HTTPS" || l.protocol == "TLS") && l.tls_mode == "Terminate"
        && l.certificate_refs.empty() && !doc.child(tls, path + ".tls", "options").defined()) {
        doc.fail(tls, path + ".tls", "certificateRefs or options must be specified when mode is Terminate");
    }

    YamlNode allowed = doc.child(node, path, "allowedRoutes");
    if (allowed.defined()) {
        std::string apath = path + ".allowedRoutes";
        YamlNode ns = doc.child(allowed, apath, "namespaces");
        l.allowed_namespaces_from = doc.string(ns, apath + ".namespaces", "from", false, "Same");
        if (l.allowed_namespaces_from != "Same" && l.allowed_namespaces_from != "All"
            && l.allowed_namespaces_from != "Selector") {
            doc.fail(ns, apath + ".namespaces.from", "expected All, Selector or Same");
        }
        YamlNode selector = doc.child(ns, apath + ".namespaces", "selector");
        if (l.allowed_namespaces_from == "Selector") {
            if (!selector.defined()) {
                doc.fail(ns, apath + ".namespaces.selector", "required when from is Selector");
            }
            l.allowed_namespaces_selector = parse_label_selector(doc, selector, apath + ".namespaces.selector");
        }
        int i = 0;
        for (const YamlNode &kind : doc.list(allowed, apath, "kinds")) {
            l.allowed_kinds.push_back(
                doc.string(kind, apath + ".kinds[" + std::to_string(i++) + "]", "kind", true));
        }
    }
    return l;
}

FrontendValidation parse_frontend_validation(const Document &doc, const YamlNode &node, const std::string &path)
{
    FrontendValidation v;
    v.pos = doc.pos(node);
    doc.only(node, path, {"caCertificateRefs", "mode", "trustedCertificateHashes"});
    int i = 0;
    for (const YamlNode &ref : doc.list(node, path, "caCertificateRefs", true)) {
        std::string rpath = path + ".caCertificateRefs[" + std::to_string(i++) + "]";
        doc.only(ref, rpath, {"group", "kind", "name", "namespace"});
        v.ca_refs.push_back({doc.string(ref, rpath, "group"), doc.string(ref, rpath, "kind", true),
                             doc.string(ref, rpath, "name", true), doc.string(ref, rpath, "namespace")});
    }
    if (v.ca_refs.empty() || v.ca_refs.size() > 16) {
        doc.fail(node, path + ".caCertificateRefs", "expected 1 to 16 references");
    }
    v.mode = doc.string(node, path, "mode", false, "AllowValidOnly");
    if (v.mode != "AllowValidOnly" && v.mode != "AllowInsecureFallback") {
        doc.fail(node, path + ".mode", "expected AllowValidOnly or AllowInsecureFallback");
    }
    i = 0;
    for (const YamlNode &h : doc.list(node, path, "trustedCertificateHashes")) {
        std::string hpath = path + ".trustedCertificateHashes[" + std::to_string(i++) + "]";
        std::string why, spec = hash_to_pin(doc.string(h, hpath, "type", true),
                                            doc.string(h, hpath, "algorithm", false, "SHA256"),
                                            doc.string(h, hpath, "value", true), &why);
        if (spec.empty()) {
            doc.fail(h, hpath + "." + why.substr(0, why.find(':')), why.substr(why.find(':') + 2));
        }
        v.pins.push_back(spec);
    }
    return v;
}

void parse_gateway(const Document &doc, const YamlNode &root, Manifests *out)
{
    Gateway gw;
    gw.meta = doc.meta(root);
    YamlNode spec = doc.child(root, "", "spec");
    gw.gateway_class_name = doc.string(spec, "spec", "gatewayClassName", true);
    gw.parameters_ref = parameters_ref(doc, doc.child(spec, "spec", "infrastructure"), "spec.infrastructure");
    YamlNode backend = doc.child(doc.child(spec, "spec", "tls"), "spec.tls", "backend");
    YamlNode gate = doc.child(backend, "spec.tls.backend", "validation");
    std::string gate_mode = doc.string(gate, "spec.tls.backend.validation", "mode", false, "AllowStrictOnly");
    if (gate_mode != "AllowStrictOnly" && gate_mode != "AllowInsecureVerification") {
        doc.fail(gate, "spec.tls.backend.validation.mode", "expected AllowStrictOnly or AllowInsecureVerification");
    }
    gw.allows_insecure_backends = gate_mode == "AllowInsecureVerification";

    YamlNode client = doc.child(backend, "spec.tls.backend", "clientCertificateRef");
    if (client.defined()) {
        const std::string path = "spec.tls.backend.clientCertificateRef";
        doc.only(client, path, {"group", "kind", "name", "namespace"});
        gw.backend_client_certificate = SecretObjectRef{doc.string(client, path, "group"),
                                                        doc.string(client, path, "kind", false, "Secret"),
                                                        doc.string(client, path, "name", true),
                                                        doc.string(client, path, "namespace")};
    }

    YamlNode frontend = doc.child(doc.child(spec, "spec", "tls"), "spec.tls", "frontend");
    YamlNode fallback = doc.child(frontend, "spec.tls.frontend", "default");
    YamlNode fallback_validation = doc.child(fallback, "spec.tls.frontend.default", "validation");
    if (fallback_validation.defined()) {
        gw.frontend_default = parse_frontend_validation(doc, fallback_validation, "spec.tls.frontend.default.validation");
    }
    int k = 0;
    for (const YamlNode &entry : doc.list(frontend, "spec.tls.frontend", "perPort")) {
        std::string path = "spec.tls.frontend.perPort[" + std::to_string(k++) + "]";
        int port = doc.integer(entry, path, "port", 1, 65535, true);
        YamlNode validation = doc.child(doc.child(entry, path, "tls"), path + ".tls", "validation");
        FrontendValidation v;
        if (validation.defined()) {
            v = parse_frontend_validation(doc, validation, path + ".tls.validation");
        }
        if (!gw.frontend_per_port.emplace(port, v).second) {
            doc.fail(entry, path + ".port", "Port for TLS configuration must be unique within the Gateway");
        }
    }

    std::vector<YamlNode> listeners = doc.list(spec, "spec", "listeners", true);
    if (listeners.empty() || listeners.size() > 64) {
        doc.fail(spec, "spec.listeners", "expected 1 to 64 listeners");
    }
    std::set<std::string> names, combinations;
    for (size_t i = 0; i < listeners.size(); i++) {
        std::string path = "spec.listeners[" + std::to_string(i) + "]";
        Listener l = parse_listener(doc, listeners[i], path);
        if (!names.insert(l.name).second) {
            doc.fail(listeners[i], path + ".name", "Listener name must be unique within the Gateway");
        }
        std::string combination = std::to_string(l.port) + "/" + l.protocol + "/" + l.hostname;
        if (!combinations.insert(combination).second) {
            doc.fail(listeners[i], path, "Combination of port, protocol and hostname must be unique for each listener");
        }
        gw.listeners.push_back(std::move(l));
    }

    int i = 0;
    std::set<std::string> addresses;
    for (const YamlNode &addr : doc.list(spec, "spec", "addresses")) {
        std::string path = "spec.addresses[" + std::to_string(i++) + "]";
        std::string type = doc.string(addr, path, "type", false, "IPAddress");
        std::string value = doc.string(addr, path, "value");
        bool known = type == "IPAddress" || type == "Hostname" || type == "NamedAddress";
        if (!known && (type.find('/') == std::string::npos || !valid_dns1123_subdomain(type.substr(0, type.find('/'))))) {
            doc.fail(addr, path + ".type", "must be Hostname, IPAddress, NamedAddress or a domain-prefixed type");
        }
        if (!value.empty() && !addresses.insert(type + "/" + value).second && (type == "IPAddress" || type == "Hostname")) {
            doc.fail(spec, "spec.addresses", type + " values must be unique");
        }
        if (type == "IPAddress" && !value.empty() && !valid_ip_address(value)) {
            doc.fail(addr, path + ".value", "not an IP address");
        }
        if (type == "Hostname" && !value.empty() && !valid_hostname(value, true)) {
            doc.fail(addr, path + ".value", "Hostname value must be empty or contain only valid characters");
        }
        if (value.size() > 253) doc.fail(addr, path + ".value", "at most 253 characters");
        gw.addresses.emplace_back(type, value);
    }
    out->gateways.push_back(std::move(gw));
}

void parse_service(const Document &doc, const YamlNode &root, Manifests *out)
{
    Service s;
    s.meta = doc.meta(root);
    YamlNode spec = doc.child(root, "", "spec");
    s.type = doc.string(spec, "spec", "type", false, "ClusterIP");
    s.external_name = doc.string(spec, "spec", "externalName");
    if (!s.external_name.empty() && !valid_dns1123_subdomain(s.external_name)) {
        doc.fail(spec, "spec.externalName", "must be a DNS name (RFC 1123 subdomain)");
    }
    if (s.type == "ExternalName" && s.external_name.empty()) {
        doc.fail(spec, "spec.externalName", "required for type ExternalName");
    }
    int i = 0;
    for (const YamlNode &p : doc.list(spec, "spec", "ports")) {
        std::string path = "spec.ports[" + std::to_string(i++) + "]";
        ServicePort sp;
        sp.name = doc.string(p, path, "name");
        sp.port = doc.integer(p, path, "port", 1, 65535, true);
        sp.target_port = doc.string(p, path, "targetPort", false, std::to_string(sp.port));
        sp.app_protocol = doc.string(p, path, "appProtocol");
        if (!sp.name.empty() && !valid_dns1123_label(sp.name)) {
            doc.fail(p, path + ".name", "a port name must be an RFC 1123 label");
        }
        if (!sp.app_protocol.empty() && !valid_qualified_name(sp.app_protocol)) {
            doc.fail(p, path + ".appProtocol", "must be a qualified name (an optional DNS subdomain and '/', then "
                                               "at most 63 letters, digits, '-', '_' and '.')");
        }
        s.ports.push_back(sp);
    }
    out->services.push_back(std::move(s));
}

void parse_endpoint_slice(const Document &doc, const YamlNode &root, Manifests *out)
{
    EndpointSlice e;
    e.meta = doc.meta(root);
    auto it = e.meta.labels.find("kubernetes.io/service-name");
    if (it == e.meta.labels.end()) {
        doc.fail(root, "metadata.labels", "an EndpointSlice needs the label kubernetes.io/service-name");
    }
    e.service_name = it->second;
    int i = 0;
    for (const YamlNode &p : doc.list(root, "", "ports")) {
        std::string path = "ports[" + std::to_string(i++) + "]";
        e.ports.push_back({doc.string(p, path, "name"), doc.integer(p, path, "port", 1, 65535, true)});
        if (!e.ports.back().name.empty() && !valid_dns1123_label(e.ports.back().name)) {
            doc.fail(p, path + ".name", "a port name must be an RFC 1123 label");
        }
    }
    i = 0;
    for (const YamlNode &ep : doc.list(root, "", "endpoints")) {
        std::string path = "endpoints[" + std::to_string(i++) + "]";
        YamlNode conditions = doc.child(ep, path, "conditions");
        std::string ready = doc.string(conditions, path + ".conditions", "ready", false, "true");
        int j = 0;
        for (const YamlNode &a : doc.list(ep, path, "addresses", true)) {
            std::string apath = path + ".addresses[" + std::to_string(j++) + "]";
            if (!a.is_scalar() || !valid_ip_address(a.scalar())) {
                doc.fail(a, apath, "expected an IPv4 or IPv6 address");
            }
            if (ready != "false") {
                e.ready_addresses.push_back(a.scalar());
            }
        }
    }
    out->endpoint_slices.push_back(std::move(e));
}

void parse_config_map(const Document &doc, const YamlNode &root, Manifests *out)
{
    ConfigMap cm;
    cm.meta = doc.meta(root);
    cm.data = doc.string_map(root, "", "data");
    out->config_maps.push_back(std::move(cm));
}

void parse_secret(const Document &doc, const YamlNode &root, Manifests *out)
{
    Secret s;
    s.meta = doc.meta(root);
    s.type = doc.string(root, "", "type", false, "Opaque");
    YamlNode data = doc.child(root, "", "data");
    for (const auto &entry : doc.string_map(root, "", "data")) {
        s.data[entry.first] = base64_decode(doc, data.get(entry.first.c_str()), "data." + entry.first, entry.second);
    }
    for (const auto &entry : doc.string_map(root, "", "stringData")) {
        s.data[entry.first] = entry.second;
    }
    out->secrets.push_back(std::move(s));
}

void parse_reference_grant(const Document &doc, const YamlNode &root, Manifests *out)
{
    ReferenceGrant g;
    g.meta = doc.meta(root);
    YamlNode spec = doc.child(root, "", "spec");
    int i = 0;
    for (const YamlNode &f : doc.list(spec, "spec", "from", true)) {
        std::string path = "spec.from[" + std::to_string(i++) + "]";
        g.from.push_back({doc.string(f, path, "group", true), doc.string(f, path, "kind", true),
                          doc.string(f, path, "namespace", true)});
    }
    i = 0;
    for (const YamlNode &t : doc.list(spec, "spec", "to", true)) {
        std::string path = "spec.to[" + std::to_string(i++) + "]";
        g.to.push_back({doc.string(t, path, "group", true), doc.string(t, path, "kind", true),
                        doc.string(t, path, "name")});
    }
    out->reference_grants.push_back(std::move(g));
}

// GEP-4152, both drafts' spellings, with the options under gateway2nginx.io/
// as an alternative. Its validation rules make the policy Accepted=False/
// Invalid (the CRD cannot check fields it does not know). Returns whether
// any GEP-4152 setting is present.
bool parse_gep4152(const Document &doc, const YamlNode &spec, const YamlNode &validation,
                   BackendTLSPolicy *p)
{
    static const std::map<std::string, std::string> modes = {
        {"Standard", "strict"}, {"Strict", "strict"}, {"InsecureAllowExpired", "allow_expired"},
        {"InsecureSkipOnlySANVerification", "skip_san"}, {"InsecureSkipSANVerification", "skip_san"},
        {"InsecureSkipVerification", "skip"}};
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
            && key != "gateway2nginx.io/trusted-certificate-hashes") {
            p->invalid_reasons.push_back("unknown option " + key);
        }
    }

    // the drafts' validation rules
    bool any_trust = !p->ca_certificate_refs.empty() || !p->well_known_ca_certificates.empty()
                     || !p->trusted_certificates.empty() || !p->pins.empty();
    if (present && p->mode == "skip" && any_trust) {
        p->invalid_reasons.push_back("spec.validation: InsecureSkipVerification must not name trust "
                                     "(caCertificateRefs, wellKnownCACertificates, trustedCertificates, trustedCertificateHashes)");
    }
    if (present && p->mode != "skip" && !any_trust) {
        p->invalid_reasons.push_back("spec.validation: mode needs caCertificateRefs, wellKnownCACertificates, "
                                     "trustedCertificates or trustedCertificateHashes");
    }
    if ((p->mode == "skip" || p->mode == "skip_san") && doc.child(validation, "spec.validation", "subjectAltNames").defined()) {
        p->invalid_reasons.push_back("spec.validation.subjectAltNames must be empty when mode skips SAN verification");
    }
    return present;
}

void parse_backend_tls_policy(const Document &doc, const YamlNode &root,
                              const std::string &api_version, Manifests *out)
{
    BackendTLSPolicy p;
    p.meta = doc.meta(root);
    p.api_version = api_version;
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
        if (!gtls::parse_san_spec((type == "URI" ? "uri:" : "dns:") + (type == "URI" ? uri : hostname), &error)) {
            p.invalid_reasons.push_back(path + ": not supported by the module: " + error);
            continue;
        }
        p.subject_alt_names.push_back({type, type == "URI" ? uri : hostname});
    }
    p.options = doc.string_map(spec, "spec", "options");
    out->backend_tls_policies.push_back(std::move(p));
}

}  // namespace

namespace {

void parse_known_object(const Document &doc, const YamlNode &root, const std::string &api_version,
                        const std::string &group, const std::string &kind, Manifests *out);

// Tenants own these kinds (DESIGN §6): a failure in one of them rejects
// that object alone. Gateways and GatewayClasses are the operator's and
// the Gateway owner's, and a failure there is bad input as a whole.
bool tenant_kind(const std::string &group, const std::string &kind)
{
    if (group == kGatewayGroup) {
        return kind == "HTTPRoute" || kind == "GRPCRoute" || kind == "TLSRoute" || kind == "ReferenceGrant"
               || kind == "BackendTLSPolicy";
    }
    return kind == "Service" || kind == "ConfigMap" || kind == "Secret" || kind == "EndpointSlice";
}

// What can still be read of a rejected object, each part only when valid:
// its name for the status, a route's parents, a policy's targets (so that
// the traffic the policy was meant to protect fails closed, never plain).
void reject(const Document &doc, const YamlNode &root, const std::string &api_version,
            const std::string &kind, const std::string &message, Manifests *out)
{
    RejectedObject r;
    r.api_version = api_version;
    r.kind = kind;
    r.message = message;
    r.meta.pos = doc.pos(root);
    YamlNode metadata = root.get("metadata");
    const std::string &name = metadata.get("name").scalar();
    std::string ns = metadata.get("namespace").defined() ? metadata.get("namespace").scalar() : "default";
    if (valid_object_name(kind, name) && valid_dns1123_label(ns)) {
        r.meta.name = name;
        r.meta.namespace_ = ns;
        r.meta.creation_timestamp = metadata.get("creationTimestamp").scalar();
        const std::string &generation = metadata.get("generation").scalar();
        if (!generation.empty() && generation.size() < 10
            && generation.find_first_not_of("0123456789") == std::string::npos) {
            r.meta.generation = std::stoll(generation);
        } else {
            r.meta.generation = 1;
        }
    }
    YamlNode spec = root.get("spec");
    auto valid_ref = [](const YamlNode &ref) {
        const std::string &ref_name = ref.get("name").scalar();
        const std::string &section = ref.get("sectionName").scalar();
        return valid_dns1123_subdomain(ref_name) && (section.empty() || valid_dns1123_subdomain(section));
    };
    if (kind != "BackendTLSPolicy") {
        for (const YamlNode &ref : spec.get("parentRefs").items()) {
            const std::string &ref_ns = ref.get("namespace").scalar();
            if (!valid_ref(ref) || !(ref_ns.empty() || valid_dns1123_label(ref_ns))) continue;
            ParentRef p;
            p.name = ref.get("name").scalar();
            p.namespace_ = ref_ns;
            p.section_name = ref.get("sectionName").scalar();
            r.parent_refs.push_back(p);
        }
    } else if (!r.meta.name.empty()) {
        BackendTLSPolicy p;
        p.meta = r.meta;
        p.api_version = api_version;
        for (const YamlNode &ref : spec.get("targetRefs").items()) {
            if (!valid_ref(ref)) continue;
            p.target_refs.push_back({ref.get("group").scalar(), ref.get("kind").scalar(), ref.get("name").scalar(),
                                     ref.get("sectionName").scalar()});
        }
        p.invalid_reasons.push_back(message);
        out->backend_tls_policies.push_back(std::move(p));
    }
    out->rejected.push_back(std::move(r));
}

}  // namespace

void parse_object(const Document &doc, const YamlNode &root, Manifests *out)
{
    std::string api_version = doc.string(root, "", "apiVersion", true);
    std::string kind = doc.string(root, "", "kind", true);
    std::string group = api_version.find('/') == std::string::npos
                            ? std::string()
                            : api_version.substr(0, api_version.find('/'));
    if (!tenant_kind(group, kind)) {
        parse_known_object(doc, root, api_version, group, kind, out);
        return;
    }
    try {
        parse_known_object(doc, root, api_version, group, kind, out);
    } catch (const InputError &e) {
        reject(doc, root, api_version, kind, e.what(), out);
    }
}

namespace {

// No text of an object may hold a NUL byte: checks that read a C string
// (an address through inet_pton, a number through strtol) would stop
// there and pass what nginx's configuration cannot hold, and the whole
// rendering would fail instead of this one object.
void refuse_nul(const Document &doc, const YamlNode &node, const std::string &where)
{
    if (node.is_scalar()) {
        if (node.scalar().find('\0') != std::string::npos) doc.fail(node, where, "holds a NUL byte");
        return;
    }
    size_t i = 0;
    for (const YamlNode &item : node.items()) refuse_nul(doc, item, where + "[" + std::to_string(i++) + "]");
    for (const auto &[key, value] : node.entries()) {
        const std::string at = (where.empty() ? "" : where + ".") + key.scalar();
        if (key.scalar().find('\0') != std::string::npos) doc.fail(key, at, "holds a NUL byte");
        refuse_nul(doc, value, at);
    }
}

void parse_known_object(const Document &doc, const YamlNode &root, const std::string &api_version,
                        const std::string &group, const std::string &kind, Manifests *out)
{
    refuse_nul(doc, root, "");
    if (group == kGatewayGroup) {
        if (kind == "GatewayClass") return parse_gateway_class(doc, root, out);
        if (kind == "Gateway") return parse_gateway(doc, root, out);
        if (kind == "HTTPRoute") return parse_http_route(doc, root, out);
        if (kind == "GRPCRoute") return parse_grpc_route(doc, root, out);
        if (kind == "TLSRoute") {
            if (api_version != "gateway.networking.k8s.io/v1" && api_version != "gateway.networking.k8s.io/v1alpha2"
                && api_version != "gateway.networking.k8s.io/v1alpha3") {
                doc.fail(root, "apiVersion", "TLSRoute is read as v1, v1alpha2 or v1alpha3, not " + api_version);
            }
            return parse_tls_route(doc, root, api_version, out);
        }
        if (kind == "ReferenceGrant") return parse_reference_grant(doc, root, out);
        if (kind == "BackendTLSPolicy") {
            if (api_version != "gateway.networking.k8s.io/v1"
                && api_version != "gateway.networking.k8s.io/v1alpha3") {
                doc.fail(root, "apiVersion", "BackendTLSPolicy is read as v1 or v1alpha3, not " + api_version);
            }
            return parse_backend_tls_policy(doc, root, api_version, out);
        }
    } else if (api_version == "v1") {
        if (kind == "Namespace") return parse_namespace(doc, root, out);
        if (kind == "Service") return parse_service(doc, root, out);
        if (kind == "ConfigMap") return parse_config_map(doc, root, out);
        if (kind == "Secret") return parse_secret(doc, root, out);
    } else if (api_version == "discovery.k8s.io/v1" && kind == "EndpointSlice") {
        return parse_endpoint_slice(doc, root, out);
    }

    ObjectMeta meta = doc.meta(root);
    out->ignored.push_back(kind + " " + meta.key());
}

}  // namespace

}  // namespace g2n
