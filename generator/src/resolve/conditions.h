// One constructor per condition reason, so that messages stay uniform.
#pragma once

#include <string>

#include "plan.h"

namespace g2n::cond {

// type and reason: string literals
inline Condition make(const char *type, bool ok, const char *reason, std::string_view message)
{
    return {type, ok ? "True" : "False", reason, intern(message)};
}

// BackendTLSPolicy
inline Condition policy_accepted() { return make("Accepted", true, "Accepted", "Policy has been accepted"); }
inline Condition policy_conflicted(const std::string &winner)
{
    return make("Accepted", false, "Conflicted",
                "Policy conflicts with " + winner + ", which is older (or sorts first) and targets the same section");
}
inline Condition policy_invalid(const std::string &why) { return make("Accepted", false, "Invalid", why); }
inline Condition policy_target_not_found(const std::string &why)
{
    return make("Accepted", false, "TargetNotFound", why);
}
inline Condition policy_no_valid_ca(const std::string &why)
{
    return make("Accepted", false, "NoValidCACertificate", why);
}
inline Condition policy_insecure_not_allowed(const std::string &gateway, const std::string &mode)
{
    return make("Accepted", false, "InsecureVerificationNotAllowed",
                "verification mode " + mode + " is not allowed by Gateway " + gateway
                    + " (spec.tls.backend.validation.mode: AllowStrictOnly)");
}
inline Condition refs_resolved() { return make("ResolvedRefs", true, "ResolvedRefs", "All references resolved"); }
inline Condition refs_invalid_ca(const std::string &why)
{
    return make("ResolvedRefs", false, "InvalidCACertificateRef", why);
}
inline Condition refs_invalid_kind(const std::string &why)
{
    return make("ResolvedRefs", false, "InvalidKind", why);
}

// Routes
inline Condition route_accepted() { return make("Accepted", true, "Accepted", "Route is accepted"); }
inline Condition route_not_allowed(const std::string &why)
{
    return make("Accepted", false, "NotAllowedByListeners", why);
}
inline Condition route_no_matching_hostname()
{
    return make("Accepted", false, "NoMatchingListenerHostname",
                "No listener hostname intersects the route's hostnames");
}
inline Condition route_no_matching_parent(const std::string &why)
{
    return make("Accepted", false, "NoMatchingParent", why);
}
inline Condition route_unsupported(const std::string &why)
{
    return make("Accepted", false, "UnsupportedValue", why);
}
inline Condition route_refs_resolved() { return make("ResolvedRefs", true, "ResolvedRefs", "All references resolved"); }
inline Condition route_backend_not_found(const std::string &why)
{
    return make("ResolvedRefs", false, "BackendNotFound", why);
}
inline Condition route_ref_not_permitted(const std::string &why)
{
    return make("ResolvedRefs", false, "RefNotPermitted", why);
}
inline Condition route_unsupported_protocol(const std::string &why)
{
    return make("ResolvedRefs", false, "UnsupportedProtocol", why);
}
inline Condition route_invalid_kind(const std::string &why)
{
    return make("ResolvedRefs", false, "InvalidKind", why);
}

// GatewayClasses
inline Condition gateway_class_accepted() { return make("Accepted", true, "Accepted", "GatewayClass is accepted"); }
inline Condition gateway_class_invalid_parameters(const std::string &ref)
{
    return make("Accepted", false, "InvalidParameters", "parametersRef " + ref + " is not supported");
}

// Gateways
inline Condition gateway_accepted() { return make("Accepted", true, "Accepted", "Gateway is accepted"); }
inline Condition gateway_programmed() { return make("Programmed", true, "Programmed", "Gateway is programmed"); }
inline Condition gateway_not_programmed(const std::string &why) { return make("Programmed", false, "Invalid", why); }
inline Condition gateway_unsupported_address(const std::string &why)
{
    return make("Accepted", false, "UnsupportedAddress", why);
}
inline Condition gateway_address_not_usable(const std::string &why)
{
    return make("Programmed", false, "AddressNotUsable", why);
}
inline Condition gateway_address_not_assigned(const std::string &why)
{
    return make("Programmed", false, "AddressNotAssigned", why);
}
inline Condition gateway_invalid_parameters(const std::string &ref)
{
    return make("Accepted", false, "InvalidParameters", "infrastructure.parametersRef " + ref + " is not supported");
}
// Accepted (true: some listener is) with ListenersNotValid
inline Condition gateway_listeners_not_valid(bool accepted, size_t invalid)
{
    return make("Accepted", accepted, "ListenersNotValid",
                std::to_string(invalid) + (invalid == 1 ? " listener is" : " listeners are")
                    + " not valid; see the listeners' conditions");
}
inline Condition gateway_insecure_backends_allowed()
{
    return make("InsecureBackendValidationMode", true, "ConfigurationChanged",
                "BackendTLSPolicies with insecure verification modes are allowed behind this Gateway");
}
inline Condition listener_accepted() { return make("Accepted", true, "Accepted", "Listener is accepted"); }
inline Condition listener_programmed() { return make("Programmed", true, "Programmed", "Listener is programmed"); }
inline Condition listener_refs_resolved()
{
    return make("ResolvedRefs", true, "ResolvedRefs", "All references resolved");
}
inline Condition listener_invalid_certificate_ref(const std::string &why)
{
    return make("ResolvedRefs", false, "InvalidCertificateRef", why);
}
// a Secret or CA in another namespace that no ReferenceGrant allows
inline Condition listener_ref_not_permitted(const std::string &why)
{
    return make("ResolvedRefs", false, "RefNotPermitted", why);
}
inline Condition listener_invalid_route_kinds(const std::string &protocol, const std::string &kinds)
{
    return make("ResolvedRefs", false, "InvalidRouteKinds",
                "Route kinds " + kinds + " cannot attach to a " + protocol + " listener");
}
// reason: ProtocolConflict or HostnameConflict
inline std::vector<Condition> listener_conflicted(const char *reason, const std::string &why)
{
    return {make("Accepted", false, reason, why), make("Programmed", false, reason, why),
            make("Conflicted", true, reason, why)};
}
inline Condition listener_not_programmed(const std::string &why)
{
    return make("Programmed", false, "Invalid", why);
}
inline Condition listener_no_valid_ca(const std::string &why)
{
    return make("Accepted", false, "NoValidCACertificate", why);
}
inline Condition listener_invalid_ca_ref(const std::string &why)
{
    return make("ResolvedRefs", false, "InvalidCACertificateRef", why);
}
inline Condition listener_invalid_ca_kind(const std::string &why)
{
    return make("ResolvedRefs", false, "InvalidCACertificateKind", why);
}
inline Condition gateway_insecure_frontend()
{
    return make("InsecureFrontendValidationMode", true, "ConfigurationChanged",
                "A listener admits clients whose certificate fails validation (AllowInsecureFallback)");
}
inline Condition gateway_refs_resolved() { return make("ResolvedRefs", true, "ResolvedRefs", "All references resolved"); }
inline Condition gateway_invalid_client_certificate_ref(const std::string &why)
{
    return make("ResolvedRefs", false, "InvalidClientCertificateRef", why);
}
inline Condition gateway_ref_not_permitted(const std::string &why)
{
    return make("ResolvedRefs", false, "RefNotPermitted", why);
}
inline Condition listener_port_unavailable(const std::string &why)
{
    return make("Accepted", false, "PortUnavailable", why);
}

// ListenerSets
inline Condition listener_set_accepted() { return make("Accepted", true, "Accepted", "ListenerSet is accepted"); }
inline Condition listener_set_programmed() { return make("Programmed", true, "Programmed", "ListenerSet is programmed"); }
inline Condition listener_set_not_allowed(const std::string &why) { return make("Accepted", false, "NotAllowed", why); }
inline Condition listener_set_parent_not_accepted(const std::string &why)
{
    return make("Accepted", false, "ParentNotAccepted", why);
}
inline Condition listener_set_listeners_not_valid(const std::string &why)
{
    return make("Accepted", false, "ListenersNotValid", why);
}
// reason: NotAllowed, ParentNotAccepted or ListenersNotValid
inline Condition listener_set_not_programmed(const char *reason, const std::string &why)
{
    return make("Programmed", false, reason, why);
}

inline Condition listener_unsupported_protocol(const std::string &protocol)
{
    return make("Accepted", false, "UnsupportedProtocol",
                "Protocol " + protocol + " is not supported yet");
}

}  // namespace g2n::cond
