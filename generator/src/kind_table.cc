#include "kind_table.h"

#include <algorithm>

#include "parse/kinds.h"

namespace g2n {

namespace {

constexpr const char *kCore = "";
constexpr const char *kCertificates = "certificates.k8s.io";
constexpr const char *kDiscovery = "discovery.k8s.io";
constexpr const char *kGateway = "gateway.networking.k8s.io";

// Versions in the order discovery prefers them. Tenants' kinds are those
// docs/security.md names; the Gateway, its class and Namespaces are the
// operator's and the Gateway owner's, and a failure there is bad input as
// a whole.
const std::vector<KindRow> kKinds = {
    {kCore, {"v1"}, "namespaces", "Namespace", Required, KindChange::Whole, parse_namespace},
    {kCore, {"v1"}, "services", "Service", Namespaced | Required | Tenant, KindChange::Routes, parse_service},
    {kCore, {"v1"}, "secrets", "Secret", Namespaced | Required | Tenant | FetchedWhenReferred, KindChange::Trust,
     parse_secret},
    {kCore, {"v1"}, "configmaps", "ConfigMap", Namespaced | Required | Tenant | FetchedWhenReferred,
     KindChange::Trust, parse_config_map},
    // the cluster admin's or a signer's, not a tenant's, but one that fails
    // costs only the references to it
    {kCertificates, {"v1", "v1beta1"}, "clustertrustbundles", "ClusterTrustBundle", Tenant, KindChange::Trust,
     parse_cluster_trust_bundle},
    {kDiscovery, {"v1"}, "endpointslices", "EndpointSlice", Namespaced | Required | Tenant, KindChange::Endpoints,
     parse_endpoint_slice},
    {kGateway, {"v1", "v1beta1"}, "gatewayclasses", "GatewayClass", Required | StatusWritten, KindChange::Whole,
     parse_gateway_class},
    {kGateway, {"v1", "v1beta1"}, "gateways", "Gateway", Namespaced | Required | StatusWritten, KindChange::Whole,
     parse_gateway},
    {kGateway, {"v1"}, "listenersets", "ListenerSet", Namespaced | Tenant | StatusWritten, KindChange::Whole,
     parse_listener_set},
    {kGateway, {"v1", "v1beta1"}, "httproutes", "HTTPRoute", Namespaced | Tenant | StatusWritten, KindChange::Routes,
     parse_http_route},
    {kGateway, {"v1", "v1alpha2"}, "grpcroutes", "GRPCRoute", Namespaced | Tenant | StatusWritten,
     KindChange::Routes, parse_grpc_route},
    {kGateway, {"v1", "v1alpha3", "v1alpha2"}, "tlsroutes", "TLSRoute", Namespaced | Tenant | StatusWritten,
     KindChange::Whole, parse_tls_route},
    {kGateway, {"v1", "v1alpha2"}, "tcproutes", "TCPRoute", Namespaced | Tenant | StatusWritten, KindChange::Whole,
     parse_tcp_route},
    {kGateway, {"v1", "v1alpha2"}, "udproutes", "UDPRoute", Namespaced | Tenant | StatusWritten, KindChange::Whole,
     parse_udp_route},
    {kGateway, {"v1", "v1alpha3"}, "backendtlspolicies", "BackendTLSPolicy", Namespaced | Tenant | StatusWritten,
     KindChange::Routes, parse_backend_tls_policy},
    {kGateway, {"v1", "v1beta1"}, "referencegrants", "ReferenceGrant", Namespaced | Tenant, KindChange::Routes,
     parse_reference_grant},
};

}  // namespace

bool KindRow::reads_version(const std::string &api_version) const
{
    const std::string prefix = *group ? std::string(group) + "/" : std::string();
    return std::any_of(versions.begin(), versions.end(),
                       [&](const char *v) { return api_version == prefix + v; });
}

std::string KindRow::versions_read() const
{
    std::vector<std::string> sorted(versions.begin(), versions.end());
    std::sort(sorted.begin(), sorted.end());
    std::string out;
    for (size_t i = 0; i < sorted.size(); i++) {
        out += (i == 0 ? "" : i + 1 == sorted.size() ? " or " : ", ") + sorted[i];
    }
    return out;
}

const std::vector<KindRow> &kind_table() { return kKinds; }

const KindRow *find_kind(const std::string &group, const std::string &kind)
{
    for (const KindRow &row : kKinds) {
        if (row.group == group && row.kind == kind) return &row;
    }
    return nullptr;
}

}  // namespace g2n
