// Typed Gateway API and Kubernetes objects, as parse produces them: plain
// structs, validated field by field, with where each came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtls_http_fields.h"
#include "gtls_spec.h"

namespace g2n {

// The longest hostname ("*." and a 253-byte DNS name) and HTTP header name
// validation lets through: nginx's hashes of them are sized for these.
inline constexpr size_t kMaxHostnameBytes = 255;
using gtls::kMaxHeaderNameBytes;

// FILE:LINE:COL of a value in the input, 1-based.
// Where an object was read. The file's name is shared by every object of
// the file: 40,000 copies of it were 2 MB of a one-shot run's peak.
struct SourcePos {
    std::shared_ptr<const std::string> file_name;
    int line = 0;
    int column = 0;

    const std::string &file() const;
    std::string text() const;
};

struct ObjectMeta {
    std::string name;
    std::string namespace_;
    int64_t generation = 0;
    std::string creation_timestamp;  // RFC 3339, compares as text
    // what the document it came from held (a digest of its text): equal
    // contents, an unchanged object
    size_t content = 0;
    // when gateway2nginx run first met it (0: in the first configuration);
    // of objects nginx refuses together, the later one is blamed
    uint64_t seen = 0;
    std::string uid;  // the API server's; none in files
    SourcePos pos;

    std::string key() const { return namespace_ + "/" + name; }
};

// a.key() < b.key(), without building either: sorting 100,000 objects
// must not allocate in the comparator. Meta: ObjectMeta, or a status's.
template <typename Meta>
bool key_less(const Meta &a, const Meta &b)
{
    auto at = [](const Meta &m, size_t i) -> unsigned char {
        size_t ns = m.namespace_.size();
        return i < ns ? m.namespace_[i] : i == ns ? '/' : m.name[i - ns - 1];
    };
    size_t a_len = a.namespace_.size() + 1 + a.name.size(), b_len = b.namespace_.size() + 1 + b.name.size();
    for (size_t i = 0; i < a_len && i < b_len; i++) {
        unsigned char x = at(a, i), y = at(b, i);
        if (x != y) return x < y;
    }
    return a_len < b_len;
}

// A Kubernetes label selector (metav1.LabelSelector): every matchLabels
// pair and every expression must hold; an empty selector matches all.
struct LabelRequirement {
    std::string key;
    std::string op;  // In, NotIn, Exists, DoesNotExist
    std::vector<std::string> values;
};

struct LabelSelector {
    std::map<std::string, std::string> match_labels;
    std::vector<LabelRequirement> match_expressions;

    bool matches(const std::map<std::string, std::string> &labels) const;
};

// Labels are kept of Namespaces alone, which listeners select by them
// (every object's were 3 MB of a one-shot run's peak at 10,000 routes).
struct Namespace {
    ObjectMeta meta;
    std::map<std::string, std::string> labels;  // with kubernetes.io/metadata.name, as the API server sets it
};

struct GatewayClass {
    ObjectMeta meta;
    std::string controller_name;
    std::string parameters_ref;  // "group/kind/name"; none is supported
};

// What a reference's group and kind name, of the kinds gateway2nginx
// resolves references to; Other: any else, which the reference's own
// group and kind say in messages.
enum class RefKind { Service, ConfigMap, Secret, ClusterTrustBundle, Gateway, ListenerSet, Other };

inline RefKind ref_kind(const std::string &group, const std::string &kind)
{
    if (group.empty()) {
        if (kind == "Service") return RefKind::Service;
        if (kind == "ConfigMap") return RefKind::ConfigMap;
        if (kind == "Secret") return RefKind::Secret;
    } else if (group == "certificates.k8s.io") {
        if (kind == "ClusterTrustBundle") return RefKind::ClusterTrustBundle;
    } else if (group == "gateway.networking.k8s.io") {
        if (kind == "Gateway") return RefKind::Gateway;
        if (kind == "ListenerSet") return RefKind::ListenerSet;
    }
    return RefKind::Other;
}

// a ConfigMap, a Secret or a ClusterTrustBundle: where CA certificates may be
inline bool holds_certificates(RefKind k)
{
    return k == RefKind::ConfigMap || k == RefKind::Secret || k == RefKind::ClusterTrustBundle;
}

struct SecretObjectRef {
    std::string group;  // "" = core
    std::string kind = "Secret";
    std::string name;
    std::string namespace_;  // empty: the referrer's

    RefKind refers_to() const { return ref_kind(group, kind); }
};

// GEP-91 client certificate validation of TLS listeners, with GEP-4078
// pins (module SPECs).
enum class FrontendValidationMode { AllowValidOnly, AllowInsecureFallback };
// how many intermediate CAs a client's chain may hold (nginx's
// ssl_verify_depth); gateway2nginx renders 4 unless a listener says
inline constexpr int kMaxClientVerifyDepth = 16;

struct FrontendValidation {
    std::vector<SecretObjectRef> ca_refs;  // ConfigMaps or Secrets, key ca.crt
    FrontendValidationMode mode = FrontendValidationMode::AllowValidOnly;
    std::vector<std::string> pins;
    SourcePos pos;
};

// Gateway API's words for a listener, parsed once (parse/gateways.cc)
enum class ListenerProtocol { HTTP, HTTPS, TLS, TCP, UDP, Other };
enum class TlsMode { Terminate, Passthrough };

struct Listener {
    std::string name;
    std::string hostname;  // empty: any
    int port = 0;
    ListenerProtocol protocol = ListenerProtocol::Other;
    std::string protocol_name;  // as written: a protocol gateway2nginx does not serve is named in its status
    TlsMode tls_mode = TlsMode::Terminate;
    std::vector<SecretObjectRef> certificate_refs;
    std::string allowed_namespaces_from = "Same";  // Same, All, Selector
    LabelSelector allowed_namespaces_selector;      // from: Selector
    std::vector<std::string> allowed_kinds;          // empty: the protocol's default
    std::vector<std::string> client_pins;  // option gateway2nginx.io/client-certificate-pins
    int client_verify_depth = -1;          // option gateway2nginx.io/client-verify-depth; -1: unset
};

struct Gateway {
    ObjectMeta meta;
    std::string gateway_class_name;
    std::vector<Listener> listeners;
    // spec.addresses: type (IPAddress by default) and value ("": assign one)
    std::vector<std::pair<std::string, std::string>> addresses;
    std::string parameters_ref;          // spec.infrastructure.parametersRef "group/kind/name"; none is supported
    // GEP-1867 spec.infrastructure.labels and annotations: on the Service
    // gateway2nginx keeps for the Gateway (run --gateway-service-external-name)
    std::map<std::string, std::string> infrastructure_labels, infrastructure_annotations;
    // GEP-4152 operator gate: spec.tls.backend.validation.mode
    bool allows_insecure_backends = false;  // AllowInsecureVerification
    // GEP-91: spec.tls.frontend.default and perPort
    std::optional<FrontendValidation> frontend_default;
    std::map<int, FrontendValidation> frontend_per_port;
    // GEP-3155: the gateway's client certificate to TLS backends
    std::optional<SecretObjectRef> backend_client_certificate;
    // GEP-1713 spec.allowedListeners.namespaces: where ListenerSets may
    // attach from (None, the default: nowhere; Same, All, Selector)
    std::string allowed_listeners_from = "None";
    LabelSelector allowed_listeners_selector;
};

// GEP-1713: listeners of a Gateway that another object holds, often a
// tenant's, merged into the Gateway's when it allows them.
struct ListenerSet {
    ObjectMeta meta;
    std::string parent_name;
    std::string parent_namespace;  // empty: the ListenerSet's
    std::vector<Listener> listeners;

    const std::string &parent_ns() const { return parent_namespace.empty() ? meta.namespace_ : parent_namespace; }
};

struct ParentRef {
    std::string group = "gateway.networking.k8s.io";
    std::string kind = "Gateway";
    std::string name;
    std::string namespace_;  // empty: the route's
    std::string section_name;
    int port = 0;

    RefKind refers_to() const { return ref_kind(group, kind); }
};


enum class PathMatchType { PathPrefix, Exact, RegularExpression };

// A header or query parameter match's type, parsed once; Other: one
// gateway2nginx does not render, named by HeaderMatch::type_name
enum class HeaderMatchType { Exact, RegularExpression, Other };

struct HeaderMatch {
    HeaderMatchType type = HeaderMatchType::Exact;
    std::string type_name = "Exact";  // as written, for messages
    std::string name;
    std::string value;
};

struct RouteMatch {
    PathMatchType path_type = PathMatchType::PathPrefix;
    std::string path = "/";
    std::vector<HeaderMatch> headers;
    std::vector<HeaderMatch> query_params;
    std::string method;
};

struct RouteFilter;

struct BackendRef {
    std::string group;  // "" = core
    std::string kind = "Service";
    std::string name;
    std::string namespace_;
    int port = 0;
    int weight = 1;
    std::vector<RouteFilter> filters;  // HTTPRoute: applied to requests sent to this backend

    RefKind refers_to() const { return ref_kind(group, kind); }
};

struct HeaderModifier {
    std::vector<std::pair<std::string, std::string>> set, add;
    std::vector<std::string> remove;

    bool empty() const { return set.empty() && add.empty() && remove.empty(); }
    // every header name it touches: removed, set, then added
    std::vector<std::string> names() const
    {
        std::vector<std::string> all = remove;
        for (const auto &kv : set) all.push_back(kv.first);
        for (const auto &kv : add) all.push_back(kv.first);
        return all;
    }
};

// RequestRedirect's and URLRewrite's path: none, or the full path or the
// matched prefix replaced by value
enum class PathModifierType { None, ReplaceFullPath, ReplacePrefixMatch };

struct PathModifier {
    PathModifierType type = PathModifierType::None;
    std::string value;
};

// A CORS filter (HTTPRoute, Extended): "*" alone in a list stands for any.
struct CorsPolicy {
    std::vector<std::string> allow_origins;  // "*", or scheme://host[:port] with an optional leading "*." in host
    std::vector<std::string> allow_methods;
    std::vector<std::string> allow_headers;
    std::vector<std::string> expose_headers;
    bool allow_credentials = false;
    long max_age = 5;  // seconds
};

// A route filter's type, parsed once; Other: one gateway2nginx does not
// render, named by RouteFilter::type_name
enum class FilterType {
    RequestHeaderModifier,
    ResponseHeaderModifier,
    RequestRedirect,
    URLRewrite,
    RequestMirror,
    CORS,
    ExtensionRef,
    Other
};

struct RouteFilter {
    FilterType type = FilterType::Other;
    std::string type_name;  // as written, for messages
    HeaderModifier headers;
    // RequestRedirect
    std::string scheme;
    std::string hostname;
    int port = 0;
    int status_code = 302;
    // RequestRedirect and URLRewrite
    PathModifier path;
    // RequestMirror: where, and the share of requests mirrored
    BackendRef mirror;
    int mirror_numerator = 100;
    int mirror_denominator = 100;
    CorsPolicy cors;
};

inline constexpr int kMaxRetryAttempts = 10;

struct RouteRule {
    std::string name;
    std::vector<RouteFilter> filters;
    // HTTPRoute timeouts in milliseconds: -1 unset, 0 disabled
    long long request_timeout_ms = -1;
    long long backend_timeout_ms = -1;
    // HTTPRoute retry (GEP-1731): retries after the first try (0: none),
    // on connection errors and on these response codes
    int retry_attempts = 0;  // at most kMaxRetryAttempts
    std::vector<int> retry_codes;
    std::string unsupported;  // why this rule cannot be rendered: the route is not accepted
    std::vector<RouteMatch> matches;  // empty: PathPrefix "/"
    std::vector<BackendRef> backend_refs;
};

// Every route kind is read into one shape, Route: GRPCRoute service/method
// matches become the gRPC paths /service/method; a TLSRoute has hostnames
// and backendRefs only, a TCPRoute and a UDPRoute backendRefs only.
enum class RouteKind { HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute };

inline const char *route_kind_name(RouteKind kind)
{
    switch (kind) {
    case RouteKind::GRPCRoute: return "GRPCRoute";
    case RouteKind::TLSRoute: return "TLSRoute";
    case RouteKind::TCPRoute: return "TCPRoute";
    case RouteKind::UDPRoute: return "UDPRoute";
    case RouteKind::HTTPRoute: break;
    }
    return "HTTPRoute";
}

struct Route {
    ObjectMeta meta;
    std::string api_version = "gateway.networking.k8s.io/v1";
    RouteKind kind = RouteKind::HTTPRoute;
    std::vector<ParentRef> parent_refs;
    std::vector<std::string> hostnames;
    std::vector<RouteRule> rules;
};

struct ServicePort {
    std::string name;
    int port = 0;
    std::string target_port;  // number or name, as text
    std::string app_protocol;
};

// status.loadBalancer.ingress[]: where a load balancer in front of a
// Service is reached (an IP address or a DNS name)
struct LoadBalancerIngress {
    std::string ip;
    std::string hostname;
};

struct Service {
    ObjectMeta meta;
    std::string type = "ClusterIP";
    std::string external_name;
    std::vector<ServicePort> ports;
    std::vector<LoadBalancerIngress> load_balancer_ingress;
};

struct EndpointPort {
    std::string name;
    int port = 0;
};

struct EndpointSlice {
    ObjectMeta meta;
    std::string service_name;  // label kubernetes.io/service-name
    std::vector<EndpointPort> ports;
    std::vector<std::string> ready_addresses;
};

struct ConfigMap {
    ObjectMeta meta;
    std::map<std::string, std::string> data;
};

struct Secret {
    ObjectMeta meta;
    std::string type;
    std::map<std::string, std::string> data;  // decoded
};

// Trust anchors for the whole cluster (certificates.k8s.io, KEP-3257): a
// CA source caCertificateRefs name with no namespace and no ReferenceGrant
// (GEP-5075)
struct ClusterTrustBundle {
    ObjectMeta meta;  // no namespace
    std::string signer_name;
    std::string trust_bundle;  // PEM
};

struct ReferenceGrantFrom {
    std::string group;
    std::string kind;
    std::string namespace_;
};

struct ReferenceGrantTo {
    std::string group;
    std::string kind;
    std::string name;  // empty: any
};

struct ReferenceGrant {
    ObjectMeta meta;
    std::vector<ReferenceGrantFrom> from;
    std::vector<ReferenceGrantTo> to;
};

struct LocalObjectRef {
    std::string group;
    std::string kind;
    std::string name;

    RefKind refers_to() const { return ref_kind(group, kind); }
};

struct PolicyTargetRef {
    std::string group;
    std::string kind;
    std::string name;
    std::string section_name;

    RefKind refers_to() const { return ref_kind(group, kind); }
};

struct BackendTLSPolicy {
    ObjectMeta meta;
    std::string api_version;
    std::vector<PolicyTargetRef> target_refs;
    std::vector<LocalObjectRef> ca_certificate_refs;
    std::string well_known_ca_certificates;  // "" or "System"
    std::string hostname;
    // as the module reads them (its own parser, at parse): "dns:" or "uri:"
    std::vector<gtls::SanMatcher> subject_alt_names;
    std::map<std::string, std::string> options;
    // GEP-4152 (both drafts): the module's mode, directly trusted leaves,
    // and pins as module SPECs
    gtls::Mode mode = gtls::Mode::Strict;
    std::vector<LocalObjectRef> trusted_certificates;
    std::vector<std::string> pins;
    // option gateway2nginx.io/client-certificate: a kubernetes.io/tls
    // Secret of its namespace, presented to its backends over the
    // Gateway's (GEP-3155) one; empty: none of its own
    std::string client_certificate;
    // a field the parser could not honour: the policy is Accepted=False/Invalid
    std::vector<std::string> invalid_reasons;

    bool insecure() const { return mode != gtls::Mode::Strict; }
};

// A tenant's object that failed validation: it is left out (as the API
// server would have refused it) and reported, and costs nobody else.
struct RejectedObject {
    std::string api_version;
    std::string kind;
    ObjectMeta meta;  // name and namespace only when they are valid
    std::vector<ParentRef> parent_refs;  // a route's, where they could be read
    std::string message;  // FILE:LINE:COL: field: why
};

// Everything read from the input, in input order: kManifestLists lists.
inline constexpr size_t kManifestLists = 15;
struct Manifests {
    std::vector<Namespace> namespaces;
    std::vector<GatewayClass> gateway_classes;
    std::vector<Gateway> gateways;
    std::vector<ListenerSet> listener_sets;
    std::vector<Route> http_routes;  // and GRPCRoutes
    std::vector<Route> stream_routes;  // TLSRoutes, TCPRoutes and UDPRoutes
    std::vector<Service> services;
    std::vector<EndpointSlice> endpoint_slices;
    std::vector<ConfigMap> config_maps;
    std::vector<Secret> secrets;
    std::vector<ClusterTrustBundle> cluster_trust_bundles;
    std::vector<ReferenceGrant> reference_grants;
    std::vector<BackendTLSPolicy> backend_tls_policies;
    std::vector<std::string> ignored;  // "Kind ns/name" of kinds we do not handle
    std::vector<RejectedObject> rejected;
    // creationTimestamps are the API server's (a watch stream), not what a
    // manifest's author wrote: only then do they order blame
    bool server_timestamps = false;
};

// Where the objects of a Manifests went when it was taken apart (the
// document cache taking back a read, object by object): for an object's
// address in one of its lists, where that object is now, or null when it
// went nowhere. Views of the read follow their objects with it.
class MovedObjects {
public:
    // A list of `count` objects of `stride` bytes from `begin`, not yet
    // moved from; its number, for moved()
    size_t add_list(const void *begin, size_t count, size_t stride)
    {
        lists_.push_back({reinterpret_cast<uintptr_t>(begin), count, stride, std::vector<const void *>(count)});
        return lists_.size() - 1;
    }
    void moved(size_t list, size_t index, const void *to) { lists_[list].to[index] = to; }

    template <class T>
    const T *where(const T *was) const
    {
        // addresses in lists of other objects are compared as numbers
        const uintptr_t at = reinterpret_cast<uintptr_t>(was);
        for (const List &l : lists_) {
            if (l.stride != sizeof(T) || at < l.begin || at >= l.begin + l.count * l.stride) continue;
            const size_t offset = at - l.begin;
            return offset % l.stride == 0 ? static_cast<const T *>(l.to[offset / l.stride]) : nullptr;
        }
        return nullptr;
    }

private:
    struct List {
        uintptr_t begin;
        size_t count, stride;
        std::vector<const void *> to;
    };
    std::vector<List> lists_;
};

}  // namespace g2n
