// Kubernetes' own kinds the generator reads (Namespace, Service,
// EndpointSlice, ConfigMap, Secret, ClusterTrustBundle) and Gateway API's
// ReferenceGrant.
#include "parse/kinds.h"

#include <algorithm>

#include "parse/fields.h"

namespace g2n {

// A Namespace: its labels, for listeners that select namespaces. The API
// server labels every namespace with its own name.
void parse_namespace(const Document &doc, const YamlNode &root, Manifests *out)
{
    Namespace ns;
    ns.meta = doc.meta(root, false, &ns.labels);
    ns.labels["kubernetes.io/metadata.name"] = ns.meta.name;
    out->namespaces.push_back(std::move(ns));
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
    // written by the load balancer's controller; read for the Service
    // --status-address-service names
    const YamlNode load_balancer = doc.child(doc.child(root, "", "status"), "status", "loadBalancer");
    i = 0;
    for (const YamlNode &in : doc.list(load_balancer, "status.loadBalancer", "ingress")) {
        const std::string path = "status.loadBalancer.ingress[" + std::to_string(i++) + "]";
        LoadBalancerIngress ingress{doc.string(in, path, "ip"), doc.string(in, path, "hostname")};
        if (!ingress.ip.empty() && !valid_ip_address(ingress.ip)) doc.fail(in, path + ".ip", "not an IP address");
        if (!ingress.hostname.empty() && !valid_dns1123_subdomain(ingress.hostname)) {
            doc.fail(in, path + ".hostname", "must be a DNS name (RFC 1123 subdomain)");
        }
        s.load_balancer_ingress.push_back(std::move(ingress));
    }
    out->services.push_back(std::move(s));
}

void parse_endpoint_slice(const Document &doc, const YamlNode &root, Manifests *out)
{
    EndpointSlice e;
    std::map<std::string, std::string> labels;
    e.meta = doc.meta(root, true, &labels);
    auto it = labels.find("kubernetes.io/service-name");
    if (it == labels.end()) {
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

void parse_cluster_trust_bundle(const Document &doc, const YamlNode &root, Manifests *out)
{
    ClusterTrustBundle b;
    b.meta = doc.meta(root, false);
    YamlNode spec = doc.child(root, "", "spec");
    b.signer_name = doc.string(spec, "spec", "signerName");
    b.trust_bundle = doc.string(spec, "spec", "trustBundle", true);
    // the API server's naming rule: what a signer's bundles are called
    // says whose they are
    const std::string prefix = [&] {
        std::string p = b.signer_name;
        std::replace(p.begin(), p.end(), '/', ':');
        return p + ":";
    }();
    if (b.signer_name.empty() ? b.meta.name.find(':') != std::string::npos : b.meta.name.rfind(prefix, 0) != 0) {
        doc.fail(doc.child(root, "", "metadata").get("name"), "metadata.name",
                 b.signer_name.empty() ? "a ClusterTrustBundle of no signer has no ':' in its name"
                                       : "a ClusterTrustBundle of signer " + b.signer_name + " is named " + prefix
                                             + "...");
    }
    out->cluster_trust_bundles.push_back(std::move(b));
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

}  // namespace g2n
