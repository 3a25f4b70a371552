// One object of any kind: dispatched to its kind's parser, or rejected
// with the reason (unknown kinds, other controllers' objects, NUL bytes).
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

// A Namespace: its labels, for listeners that select namespaces. The API
// server labels every namespace with its own name.

void parse_known_object(const Document &doc, const YamlNode &root, const std::string &api_version,
                        const std::string &group, const std::string &kind, Manifests *out);

// Tenants own these kinds (docs/security.md): a failure in one of them rejects
// that object alone. Gateways and GatewayClasses are the operator's and
// the Gateway owner's, and a failure there is bad input as a whole.
bool tenant_kind(const std::string &group, const std::string &kind)
{
    if (group == kGatewayGroup) {
        return kind == "HTTPRoute" || kind == "GRPCRoute" || kind == "TLSRoute" || kind == "TCPRoute" || kind == "UDPRoute"
               || kind == "ListenerSet" || kind == "ReferenceGrant"
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
        std::vector<YamlNode> refs = spec.get("parentRefs").items();
        if (kind == "ListenerSet") refs = {spec.get("parentRef")};
        for (const YamlNode &ref : refs) {
            const std::string &ref_ns = ref.get("namespace").scalar();
            const std::string &ref_kind = ref.get("kind").scalar();
            if (!valid_ref(ref) || !(ref_ns.empty() || valid_dns1123_label(ref_ns))) continue;
            const std::string &ref_group = ref.get("group").scalar();
            if ((ref_kind != "" && ref_kind != "Gateway" && ref_kind != "ListenerSet")
                || (!ref_group.empty() && ref_group != kGatewayGroup)) {
                continue;
            }
            ParentRef p;
            p.kind = ref_kind.empty() ? "Gateway" : ref_kind;
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
        if (kind == "ListenerSet") {
            if (api_version != "gateway.networking.k8s.io/v1") {
                doc.fail(root, "apiVersion", "ListenerSet is read as v1, not " + api_version);
            }
            return parse_listener_set(doc, root, out);
        }
        if (kind == "HTTPRoute") return parse_http_route(doc, root, out);
        if (kind == "GRPCRoute") return parse_grpc_route(doc, root, out);
        if (kind == "TLSRoute") {
            if (api_version != "gateway.networking.k8s.io/v1" && api_version != "gateway.networking.k8s.io/v1alpha2"
                && api_version != "gateway.networking.k8s.io/v1alpha3") {
                doc.fail(root, "apiVersion", "TLSRoute is read as v1, v1alpha2 or v1alpha3, not " + api_version);
            }
            return parse_stream_route(doc, root, RouteKind::TLSRoute, api_version, out);
        }
        if (kind == "TCPRoute" || kind == "UDPRoute") {
            if (api_version != "gateway.networking.k8s.io/v1" && api_version != "gateway.networking.k8s.io/v1alpha2") {
                doc.fail(root, "apiVersion", kind + " is read as v1 or v1alpha2, not " + api_version);
            }
            return parse_stream_route(doc, root, kind == "TCPRoute" ? RouteKind::TCPRoute : RouteKind::UDPRoute,
                                      api_version, out);
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

}  // namespace g2n
