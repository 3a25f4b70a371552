// GatewayClass, Gateway and its listeners.
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
    l.protocol_name = doc.string(node, path, "protocol", true);
    static const std::map<std::string, ListenerProtocol> protocols = {
        {"HTTP", ListenerProtocol::HTTP}, {"HTTPS", ListenerProtocol::HTTPS}, {"TLS", ListenerProtocol::TLS},
        {"TCP", ListenerProtocol::TCP},   {"UDP", ListenerProtocol::UDP}};
    const auto protocol = protocols.find(l.protocol_name);
    l.protocol = protocol != protocols.end() ? protocol->second : ListenerProtocol::Other;
    using P = ListenerProtocol;

    YamlNode tls = doc.child(node, path, "tls");
    if (tls.defined()) {
        std::string tpath = path + ".tls";
        doc.only(tls, tpath, {"mode", "certificateRefs", "options", "frontendValidation"});
        const std::string mode = doc.string(tls, tpath, "mode", false, "Terminate");
        if (mode != "Terminate" && mode != "Passthrough") {
            doc.fail(tls, tpath + ".mode", "expected Terminate or Passthrough");
        }
        l.tls_mode = mode == "Passthrough" ? TlsMode::Passthrough : TlsMode::Terminate;
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
        auto depth = options.find("gateway2nginx.io/client-verify-depth");
        if (depth != options.end()) {
            const std::string &v = depth->second;
            if (v.empty() || v.size() > 2 || v.find_first_not_of("0123456789") != std::string::npos
                || std::stoi(v) > kMaxClientVerifyDepth) {
                doc.fail(tls, tpath + ".options[gateway2nginx.io/client-verify-depth]",
                         "\"" + v + "\": expected 0 to " + std::to_string(kMaxClientVerifyDepth));
            }
            l.client_verify_depth = std::stoi(v);
        }
    }
    // CEL: tls is required for HTTPS and TLS, forbidden for HTTP, TCP, UDP
    if ((l.protocol == P::HTTPS || l.protocol == P::TLS) && !tls.defined()) {
        doc.fail(node, path, "tls must be specified for protocols ['HTTPS', 'TLS']");
    }
    if ((l.protocol == P::HTTP || l.protocol == P::TCP || l.protocol == P::UDP) && tls.defined()) {
        doc.fail(tls, path + ".tls", "tls mode must not be set for protocols ['HTTP', 'TCP', 'UDP']");
    }
    if (l.protocol == P::HTTPS && l.tls_mode != TlsMode::Terminate) {
        doc.fail(tls, path + ".tls.mode", "tls mode must be Terminate for protocol HTTPS");
    }
    if ((l.protocol == P::TCP || l.protocol == P::UDP) && !l.hostname.empty()) {
        doc.fail(node, path + ".hostname", "hostname must not be specified for protocols ['TCP', 'UDP']");
    }
    if ((l.protocol == P::HTTPS || l.protocol == P::TLS) && l.tls_mode == TlsMode::Terminate
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
    const std::string mode = doc.string(node, path, "mode", false, "AllowValidOnly");
    if (mode != "AllowValidOnly" && mode != "AllowInsecureFallback") {
        doc.fail(node, path + ".mode", "expected AllowValidOnly or AllowInsecureFallback");
    }
    v.mode = mode == "AllowInsecureFallback" ? FrontendValidationMode::AllowInsecureFallback
                                             : FrontendValidationMode::AllowValidOnly;
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

// spec.listeners of a Gateway or ListenerSet (`owner`), with the CRD's
// rules on them: 1 to 64, unique names, unique port/protocol/hostname.
std::vector<Listener> parse_listeners(const Document &doc, const YamlNode &spec, const std::string &owner)
{
    std::vector<Listener> out;
    std::vector<YamlNode> listeners = doc.list(spec, "spec", "listeners", true);
    if (listeners.empty() || listeners.size() > 64) {
        doc.fail(spec, "spec.listeners", "expected 1 to 64 listeners");
    }
    std::set<std::string> names, combinations;
    for (size_t i = 0; i < listeners.size(); i++) {
        std::string path = "spec.listeners[" + std::to_string(i) + "]";
        Listener l = parse_listener(doc, listeners[i], path);
        if (!names.insert(l.name).second) {
            doc.fail(listeners[i], path + ".name", "Listener name must be unique within the " + owner);
        }
        std::string combination = std::to_string(l.port) + "/" + l.protocol_name + "/" + l.hostname;
        if (!combinations.insert(combination).second) {
            doc.fail(listeners[i], path, "Combination of port, protocol and hostname must be unique for each listener");
        }
        out.push_back(std::move(l));
    }
    return out;
}

namespace {

// spec.infrastructure.NAME: at most `most` of them, each key a qualified
// name and each value one `value_ok` takes (`rule` says what it takes)
std::map<std::string, std::string> infrastructure_map(const Document &doc, const YamlNode &infrastructure,
                                                      const char *name, size_t most,
                                                      bool (*value_ok)(const std::string &), const char *rule)
{
    const std::string where = std::string("spec.infrastructure.") + name;
    std::map<std::string, std::string> out = doc.string_map(infrastructure, "spec.infrastructure", name);
    if (out.size() > most) doc.fail(infrastructure.get(name), where, "at most " + std::to_string(most) + " " + name);
    for (const auto &[key, value] : out) {
        if (!valid_qualified_name(key)) {
            doc.fail(infrastructure.get(name), where + "." + key,
                     "a key is an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' and '.'");
        }
        if (!value_ok(value)) doc.fail(infrastructure.get(name), where + "." + key, rule);
    }
    return out;
}

bool annotation_value(const std::string &value) { return value.size() <= 4096; }

// spec.infrastructure (GEP-1867) with the CRD's rules: at most 8 labels and
// 16 annotations, label values as Kubernetes takes them, annotation values
// up to 4096 bytes
void parse_infrastructure(const Document &doc, const YamlNode &infrastructure, Gateway *gw)
{
    doc.only(infrastructure, "spec.infrastructure", {"labels", "annotations", "parametersRef"});
    gw->infrastructure_labels = infrastructure_map(doc, infrastructure, "labels", 8, valid_label_value, kLabelValueRule);
    gw->infrastructure_annotations =
        infrastructure_map(doc, infrastructure, "annotations", 16, annotation_value, "at most 4096 bytes");
    gw->parameters_ref = parameters_ref(doc, infrastructure, "spec.infrastructure");
}

}  // namespace

void parse_gateway(const Document &doc, const YamlNode &root, Manifests *out)
{
    Gateway gw;
    gw.meta = doc.meta(root);
    YamlNode spec = doc.child(root, "", "spec");
    gw.gateway_class_name = doc.string(spec, "spec", "gatewayClassName", true);
    parse_infrastructure(doc, doc.child(spec, "spec", "infrastructure"), &gw);
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

    gw.listeners = parse_listeners(doc, spec, "Gateway");

    YamlNode allowed = doc.child(doc.child(spec, "spec", "allowedListeners"), "spec.allowedListeners", "namespaces");
    if (allowed.defined()) {
        const std::string path = "spec.allowedListeners.namespaces";
        doc.only(allowed, path, {"from", "selector"});
        gw.allowed_listeners_from = doc.string(allowed, path, "from", false, "None");
        if (gw.allowed_listeners_from != "None" && gw.allowed_listeners_from != "Same"
            && gw.allowed_listeners_from != "All" && gw.allowed_listeners_from != "Selector") {
            doc.fail(allowed, path + ".from", "expected All, Selector, Same or None");
        }
        YamlNode selector = doc.child(allowed, path, "selector");
        if (gw.allowed_listeners_from == "Selector") {
            if (!selector.defined()) doc.fail(allowed, path + ".selector", "required when from is Selector");
            gw.allowed_listeners_selector = parse_label_selector(doc, selector, path + ".selector");
        }
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

// A ListenerSet: its Gateway (the only parent kind) and its listeners.
void parse_listener_set(const Document &doc, const YamlNode &root, Manifests *out)
{
    ListenerSet ls;
    ls.meta = doc.meta(root);
    YamlNode spec = doc.child(root, "", "spec");
    doc.only(spec, "spec", {"parentRef", "listeners"});
    YamlNode parent = doc.child(spec, "spec", "parentRef");
    if (!parent.defined()) doc.fail(spec, "spec.parentRef", "required");
    doc.only(parent, "spec.parentRef", {"group", "kind", "name", "namespace"});
    if (doc.string(parent, "spec.parentRef", "group", false, kGatewayGroup) != kGatewayGroup
        || doc.string(parent, "spec.parentRef", "kind", false, "Gateway") != "Gateway") {
        doc.fail(parent, "spec.parentRef", "must be a Gateway of group " + std::string(kGatewayGroup));
    }
    ls.parent_name = doc.string(parent, "spec.parentRef", "name", true);
    if (!valid_dns1123_subdomain(ls.parent_name)) {
        doc.fail(parent, "spec.parentRef.name", "not a valid object name: \"" + ls.parent_name + "\"");
    }
    ls.parent_namespace = doc.string(parent, "spec.parentRef", "namespace");
    if (!ls.parent_namespace.empty() && !valid_dns1123_label(ls.parent_namespace)) {
        doc.fail(parent, "spec.parentRef.namespace", "not a valid namespace: \"" + ls.parent_namespace + "\"");
    }
    ls.listeners = parse_listeners(doc, spec, "ListenerSet");
    out->listener_sets.push_back(std::move(ls));
}

}  // namespace g2n
