// convert, compute: Ingresses as ingress-nginx serves them, to the Gateway
// API objects that serve them here, and a report of every annotation met
// (converted, converted with a difference, or not converted, and why).
// Plain structs out; YAML is emit.cc's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "convert/ingress.h"

namespace g2n::convert {

// ingress-nginx's annotations, one row each: what ingress-nginx does with
// it, what convert makes of it, what ingress2gateway v1.1.0 makes of it
// (annotations.cc; docs/migrating-from-ingress-nginx.md is this table)
struct AnnotationRow {
    const char *key;  // after nginx.ingress.kubernetes.io/
    const char *ingress_nginx;
    const char *ours;
    const char *ingress2gateway;
};
extern const std::vector<AnnotationRow> kAnnotations;
inline constexpr const char *kAnnotationPrefix = "nginx.ingress.kubernetes.io/";

enum class Outcome { Converted, Differs, NotConverted, Ignored };
const char *outcome_name(Outcome o);

// One annotation (or field) of one Ingress, and what became of it
struct ReportEntry {
    std::string ingress;  // namespace/name
    std::string item;     // the annotation's key, or the field's path
    std::string value;
    Outcome outcome = Outcome::Converted;
    std::string note;
};

struct ConvertOptions {
    std::string gateway_name = "ingress-nginx";
    std::string gateway_namespace = "ingress-nginx";
    std::string gateway_class = "gateway2nginx";
    std::string ingress_class = "nginx";  // the IngressClass ingress-nginx served
    // leave the Gateway's gate closed to InsecureSkipVerification: the
    // backends ingress-nginx did not verify then get 5xx until allowed
    bool strict_backends = false;
    // where a Gateway of the ssl-passthrough hosts listens when the
    // Gateway serves HTTPS on 443 ("": those hosts are not converted)
    std::string passthrough_address;
};

struct ListenerOut {
    std::string name;
    std::string protocol;  // HTTP, HTTPS, or TLS (Passthrough)
    int port = 0;
    std::string hostname;  // "": every hostname
    std::string secret_namespace, secret_name;  // HTTPS
    int client_verify_depth = -1;  // option gateway2nginx.io/client-verify-depth; -1: none
};

// GEP-91 validation of the clients of every HTTPS listener (port 443)
struct FrontendOut {
    std::vector<std::pair<std::string, std::string>> ca_secrets;  // namespace, name; key ca.crt
    bool insecure_fallback = false;                               // AllowInsecureFallback
};

struct GatewayOut {
    std::string name, namespace_, class_name;
    std::string address;  // spec.addresses' IPAddress; "": the implementation's
    std::vector<ListenerOut> listeners;
    bool allows_insecure_backends = false;
    std::string client_certificate_namespace, client_certificate_name;  // "": none
    std::optional<FrontendOut> frontend;
};

struct MatchOut {
    std::string type;  // PathPrefix, Exact, RegularExpression; GRPC (a GRPCRoute's)
    std::string value;
    std::string service, method;  // GRPC: "" every service, every method
};

struct BackendOut {
    std::string service;
    int port = 0;
};

struct RuleOut {
    MatchOut match;
    std::optional<BackendOut> backend;  // none: a redirect
    std::string redirect_scheme;        // "https", with a 308
    std::string rewrite_full_path, rewrite_prefix, rewrite_hostname;
    std::string backend_timeout;  // timeouts.backendRequest ("30s"); "": none
};

enum class RouteKind { HTTP, GRPC, TLS };  // HTTPRoute, GRPCRoute, TLSRoute (Passthrough)

struct RouteOut {
    RouteKind kind = RouteKind::HTTP;
    std::string gateway;  // its parent's name: the Gateway's, or the passthrough one's
    std::string name, namespace_;
    std::vector<std::string> sections;  // the Gateway's listeners it attaches to
    std::string hostname;               // "": every hostname
    std::vector<RuleOut> rules;
};

struct PolicyOut {
    std::string name, namespace_;
    std::string service;
    std::string hostname;
    std::string ca_secret;     // "": none (skip verification)
    std::string client_secret;  // gateway2nginx.io/client-certificate; "": the Gateway's
    bool skip_verify = false;  // gateway2nginx.io/verification-mode: InsecureSkipVerification
};

// A ReferenceGrant in `namespace_` letting the Gateway's namespace refer
// to these Secrets
struct GrantOut {
    std::string name, namespace_, from_namespace;
    std::vector<std::string> secrets;
};

struct Conversion {
    GatewayOut gateway;
    // ssl-passthrough's TLS listeners, when the Gateway serves HTTPS on 443
    // (a port has one protocol): a Gateway of their own, at an address of
    // its own (--passthrough-address)
    std::optional<GatewayOut> passthrough;
    std::vector<RouteOut> routes;
    std::vector<PolicyOut> policies;
    std::vector<GrantOut> grants;
    std::vector<ReportEntry> report;

    // whether anything met was not converted (the exit status says so)
    bool dropped() const;
};

Conversion convert_ingresses(const ConvertInput &input, const ConvertOptions &options);

}  // namespace g2n::convert
