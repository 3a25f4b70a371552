// The Gateway API features (conformance feature names) gateway2nginx
// implements: GatewayClass status.supportedFeatures, which the conformance
// suite reads to choose its tests. Sorted, as the API requires. A name is
// added here only with the replay of its conformance tests passing
// (t/400-conformance.t).
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "plan.h"

namespace g2n {

inline constexpr std::string_view kSupportedFeatures[] = {
    "BackendTLSPolicy",
    "BackendTLSPolicySANValidation",
    "GRPCRoute",
    "GRPCRouteNamedRouteRule",
    "GRPCRouteRequestHeaderModifier",
    "Gateway",
    "GatewayAddressEmpty",
    "GatewayBackendClientCertificate",
    "GatewayFrontendClientCertificateValidation",
    "GatewayFrontendClientCertificateValidationInsecureFallback",
    "GatewayHTTPListenerIsolation",
    "GatewayHTTPSListenerDetectMisdirectedRequests",
    "GatewayPort8080",
    "GatewayStaticAddresses",
    "HTTPRoute",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendProtocolH2C",
    "HTTPRouteBackendProtocolWebSocket",
    "HTTPRouteBackendRequestHeaderModification",
    "HTTPRouteBackendRequestRedirect",
    "HTTPRouteBackendTimeout",
    "HTTPRouteBackendURLRewrite",
    "HTTPRouteCORS",
    "HTTPRouteDestinationPortMatching",
    "HTTPRouteHostRewrite",
    "HTTPRouteMethodMatching",
    "HTTPRouteNamedRouteRule",
    "HTTPRouteParentRefPort",
    "HTTPRoutePathRedirect",
    "HTTPRoutePathRewrite",
    "HTTPRoutePortRedirect",
    "HTTPRouteQueryParamMatching",
    "HTTPRouteRequestMirror",
    "HTTPRouteRequestMultipleMirrors",
    "HTTPRouteRequestPercentageMirror",
    "HTTPRouteRequestTimeout",
    "HTTPRouteResponseHeaderModification",
    "HTTPRouteRetry",
    "HTTPRouteRetryBackendTimeout",
    "HTTPRouteRetryConnectionError",
    "HTTPRouteSchemeRedirect",
    "ListenerSet",
    "ReferenceGrant",
    "TCPRoute",
    "TLSRoute",
    "TLSRouteModeMixed",
    "TLSRouteModeTerminate",
    "UDPRoute",
};

// What only `gateway2nginx run --gateway-service-external-name` does:
// claimed by the GatewayClass status it writes.
inline constexpr std::string_view kGatewayServicesFeature = "GatewayInfrastructurePropagation";

inline std::vector<std::string_view> supported_features(bool gateway_services = false)
{
    std::vector<std::string_view> out(std::begin(kSupportedFeatures), std::end(kSupportedFeatures));
    if (gateway_services) out.insert(std::lower_bound(out.begin(), out.end(), kGatewayServicesFeature), kGatewayServicesFeature);
    return out;
}

}  // namespace g2n
