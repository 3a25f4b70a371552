// A Gateway's own TLS material: listener certificates, GEP-91 client
// certificate validation (with GEP-4078 pins) and the GEP-3155 client
// certificate it shows to TLS backends.
#include <algorithm>

#include "resolve/conditions.h"
#include "parse/pem.h"
#include "resolve/resolve.h"

namespace g2n {

SecretFiles tls_secret_files(const ObjectIndex &objects, const std::string &from_kind,
                             const std::string &from_ns, const SecretObjectRef &ref, const std::string &prefix, Plan *plan,
                             std::set<std::string> *written, Reader reader)
{
    SecretFiles out;
    std::string ns = ref.namespace_.empty() ? from_ns : ref.namespace_;
    if (ref.refers_to() != RefKind::Secret) {
        out.reason = "InvalidKind";
        out.why = "kind " + ref.kind + " in group \"" + ref.group + "\" is not supported; use a Secret";
        return out;
    }
    if (ns != from_ns && !objects.granted(from_kind, from_ns, "Secret", ns, ref.name, reader)) {
        out.reason = "RefNotPermitted";
        out.why = "Secret " + ns + "/" + ref.name + " is in another namespace and no ReferenceGrant allows it";
        return out;
    }
    const Secret *secret = objects.secret(ns, ref.name, reader);
    if (secret == nullptr) {
        out.reason = "NotFound";
        out.why = "Secret " + ns + "/" + ref.name + " does not exist";
        return out;
    }
    auto crt = secret->data.find("tls.crt"), key = secret->data.find("tls.key");
    if (secret->type != "kubernetes.io/tls" || crt == secret->data.end() || key == secret->data.end()) {
        out.reason = "Invalid";
        out.why = "Secret " + ns + "/" + ref.name + " is not a kubernetes.io/tls Secret with tls.crt and tls.key";
        return out;
    }
    // parsed, the key matched to the leaf, and written as OpenSSL encodes
    // them: no input byte reaches the files nginx loads
    std::string crt_pem, key_pem, why;
    if (!tls_key_pair(crt->second, key->second, &crt_pem, &key_pem, &why)) {
        out.reason = "Invalid";
        out.why = "Secret " + ns + "/" + ref.name + ": " + why;
        return out;
    }
    std::string base = "certs/" + object_file_stem(prefix, ns, ref.name);
    out.certificate = base + ".crt";
    out.key = base + ".key";
    if (written->insert(base).second) {
        plan->files.push_back({out.certificate, std::move(crt_pem), 0644});
        plan->files.push_back({out.key, std::move(key_pem), 0600});
    }
    return out;
}

bool resolve_client_validation(const ObjectIndex &objects, const Gateway &gw,
                               const Listener &l, Plan *plan, ClientValidation *out,
                               std::vector<Condition> *failure)
{
    auto port = gw.frontend_per_port.find(l.port);
    const FrontendValidation *v = port != gw.frontend_per_port.end() ? &port->second
                                  : gw.frontend_default ? &*gw.frontend_default : nullptr;
    if (v != nullptr && v->ca_refs.empty()) v = nullptr;  // a perPort entry without validation
    if (v == nullptr && l.client_verify_depth >= 0) {
        plan->warnings.push_back("Gateway " + gw.meta.key() + " listener " + l.name
                                 + ": gateway2nginx.io/client-verify-depth has no effect without a CA to validate "
                                   "clients against (spec.tls.frontend)");
    }
    if (v == nullptr && l.client_pins.empty()) {
        return true;
    }

    auto fail = [&](Condition (*refs)(const std::string &), const std::string &why) {
        *failure = {cond::listener_no_valid_ca(why), cond::listener_not_programmed(why), refs(why)};
        return false;
    };
    if (v != nullptr) {
        // the references of one namespace at a time, each granted or not
        std::string bundle;
        for (const SecretObjectRef &ref : v->ca_refs) {
            std::string ns = ref.namespace_.empty() ? gw.meta.namespace_ : ref.namespace_;
            if (!holds_certificates(ref.refers_to())) {
                return fail(cond::listener_invalid_ca_kind,
                            "caCertificateRefs: kind " + ref.kind + " in group \"" + ref.group + "\" (" + ref.name
                                + ") is not supported; use a ConfigMap, a Secret or a ClusterTrustBundle");
            }
            // a ClusterTrustBundle is the whole cluster's: no grant (GEP-5075)
            const bool cluster_wide = ref.refers_to() == RefKind::ClusterTrustBundle;
            if (!cluster_wide && ns != gw.meta.namespace_
                && !objects.granted("Gateway", gw.meta.namespace_, ref.kind, ns, ref.name, Reader::Gateway)) {
                return fail(cond::listener_ref_not_permitted, ref.kind + " " + ns + "/" + ref.name
                                                   + " is in another namespace and no ReferenceGrant allows it");
            }
            CaResult ca = resolve_ca_refs(objects, ns, {LocalObjectRef{ref.group, ref.kind, ref.name}}, false, Reader::Gateway);
            if (ca.valid == 0) {
                return fail(cond::listener_invalid_ca_ref,
                            ca.invalid_refs.empty() ? ref.name + " holds no CA certificate" : ca.invalid_refs.front());
            }
            bundle += ca.bundle;
        }
        out->ca = ca_bundle_file(bundle, plan);
        if (l.client_verify_depth >= 0) out->depth = l.client_verify_depth;
        out->verify = v->mode == FrontendValidationMode::AllowInsecureFallback ? ClientVerify::Fallback
                                                                               : ClientVerify::ValidChain;
    } else {
        out->verify = ClientVerify::PinsOnly;
    }
    if (out->verify != ClientVerify::Fallback) {
        out->pins = v != nullptr ? v->pins : std::vector<std::string>{};
        out->pins.insert(out->pins.end(), l.client_pins.begin(), l.client_pins.end());
    } else if (!v->pins.empty() || !l.client_pins.empty()) {
        plan->warnings.push_back("Gateway " + gw.meta.key() + " listener " + l.name
                                 + ": client certificate pins are not enforced under AllowInsecureFallback");
    }
    return true;
}

Condition resolve_backend_client_certificate(const ObjectIndex &objects, const Gateway &gw,
                                             Plan *plan, std::set<std::string> *written,
                                             BackendClientCertificate *out)
{
    if (!gw.backend_client_certificate) {
        return {};  // no condition: nothing to resolve
    }
    SecretFiles files = tls_secret_files(objects, "Gateway", gw.meta.namespace_, *gw.backend_client_certificate,
                                         "backend-client", plan,
                                         written);
    if (!files.ok()) {
        return (files.reason == "RefNotPermitted" ? cond::gateway_ref_not_permitted
                                                  : cond::gateway_invalid_client_certificate_ref)(
            "spec.tls.backend.clientCertificateRef: " + files.why + "; TLS backends get no client certificate");
    }
    out->certificate = files.certificate;
    out->key = files.key;
    return cond::gateway_refs_resolved();
}

}  // namespace g2n
