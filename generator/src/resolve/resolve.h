// resolve: Gateway API semantics. Attaches routes to listeners and
// policies to Services, follows references and ReferenceGrants, settles
// conflicts, computes every condition, and lays out the Plan (plan.h,
// whose nginx shape plan/ decides).
// May not: write nginx syntax (render's), or touch the host or a running
// nginx (apply's; host facts come through Options).
#pragma once

#include <algorithm>
#include <map>
#include <unordered_map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model.h"
#include "plan.h"

namespace g2n {

// Who read a ConfigMap, Secret, ClusterTrustBundle or Service, and which:
// what a change of one can do to the Plan. Keys "ConfigMap ns/name",
// "Secret ns/name", "ClusterTrustBundle /name" and "Service ns/name", looked up whether or not the object exists (one made
// later changes the Plan too). A Service is read by a policy's target, a
// route's backendRef (HTTPRoute and GRPCRoute: Route; the others:
// StreamRoute) and the Gateways' status address; the ReferenceGrants of a
// namespace ("ReferenceGrant ns/*") by whoever refers into it from another.
enum class Reader : unsigned { BackendTLSPolicy = 1, Gateway = 2, Route = 4, StreamRoute = 8 };
struct ResolveReads {
    std::unordered_map<std::string, unsigned> readers;  // key -> Reader bits
    // "ns/name:port gwns/gw" -> the backendRefs that reach that Service
    // port through that Gateway's listeners: what makes the Gateway an
    // ancestor of the port's policies, and the port an upstream whose
    // policy's CA bundle is written
    std::unordered_map<std::string, unsigned> reached;
};
// The key of ConfigMap, Secret or Service (`kind`) ns/name in ResolveReads
// (a namespace's ReferenceGrants: name "*"): every reader and follower of
// the reads makes it here, or a change would be missed
std::string read_key(const std::string &kind, const std::string &ns, const std::string &name);
// read_key() of the object of `kind` a change names by "namespace/name"
// ("/name" or "name" for one of no namespace)
std::string read_key_of(const std::string &kind, const std::string &name_key);

// With `reads`, every ConfigMap and Secret resolve looked up is recorded.
Plan resolve(const Manifests &manifests, const Options &options, ResolveReads *reads = nullptr);

// ---- shared by the files of resolve/ ---------------------------------------

// What one resolve() keeps while it runs, for the functions it calls: the
// Plan's text table, and what it made of each distinct CA bundle (10,000
// policies may share one). Per resolve, not per process.
struct ResolveScope {
    TextTable *texts;
    std::unordered_map<std::string, std::string> bundle_certificates;  // PEM -> its certificates re-encoded
    std::unordered_map<std::string, std::string> bundle_ids;           // PEM -> its id

    explicit ResolveScope(TextTable *texts);
    ~ResolveScope();
    ResolveScope(const ResolveScope &) = delete;
    ResolveScope &operator=(const ResolveScope &) = delete;
    // the innermost on this thread; std::logic_error outside resolve()
    static ResolveScope &current();

private:
    ResolveScope *outer_;
};

// Objects by "namespace/name", so that resolving stays linear in the size
// of the input: hashed, since only looked up (output order never comes from
// these). What hangs off a Service (its EndpointSlices, the policies naming
// it) is kept by the Service's position in Manifests::services: one hashed
// lookup per backendRef, the rest array accesses.
struct ObjectIndex {
    std::unordered_map<std::string, const Namespace *> namespaces;  // by name
    std::vector<std::vector<const EndpointSlice *>> slices_of_service;  // by position

    explicit ObjectIndex(const Manifests &m, ResolveReads *reads = nullptr);

    // ConfigMaps and Secrets are found only here, so that what read them is
    // known (ResolveReads): a change of one nothing read changes nothing
    const ConfigMap *config_map(const std::string &ns, const std::string &name, Reader reader) const;
    const Secret *secret(const std::string &ns, const std::string &name, Reader reader) const;
    const ClusterTrustBundle *cluster_trust_bundle(const std::string &name, Reader reader) const;
    // and Services likewise
    const Service *service(const std::string &ns, const std::string &name, Reader reader) const;
    // Whether a ReferenceGrant of to_ns lets a FROM_KIND of from_ns refer
    // to a TO_KIND; the grants of to_ns are read (read_key("ReferenceGrant",
    // to_ns, "*"))
    bool granted(const std::string &from_kind, const std::string &from_ns, const std::string &to_kind,
                 const std::string &to_ns, const std::string &to_name, Reader reader) const;

    // what resolve records its reads in, or null
    ResolveReads *reads() const { return reads_; }
    // where a Service found here sits in Manifests::services
    size_t position(const Service &s) const { return static_cast<size_t>(&s - services_base_); }

    template <typename T>
    static const T *find(const std::unordered_map<std::string, const T *> &by_key, const std::string &ns,
                         const std::string &name)
    {
        auto it = by_key.find(ns + "/" + name);
        return it == by_key.end() ? nullptr : it->second;
    }

private:
    std::unordered_map<std::string, const ConfigMap *> config_maps_;
    std::unordered_map<std::string, const Secret *> secrets_;
    std::unordered_map<std::string, const ClusterTrustBundle *> cluster_trust_bundles_;
    std::unordered_map<std::string, const Service *> services_;
    const std::vector<ReferenceGrant> *grants_;
    const Service *services_base_ = nullptr;
    ResolveReads *reads_ = nullptr;
};

// The policy that governs one Service port, after conflicts.
struct BoundPolicy {
    const BackendTLSPolicy *policy = nullptr;
    bool usable = false;            // false: its traffic gets a 5xx
    std::shared_ptr<const UpstreamPolicy> upstream;  // the module directives, shared with its upstreams
    std::vector<Condition> conditions;  // Accepted, ResolvedRefs (before the GEP-4152 gate)
    std::vector<std::string> ancestors; // gateways "ns/name" whose routes reach it, sorted
};

struct PolicyIndex {
    // one per BackendTLSPolicy, in the order of Manifests::backend_tls_policies
    std::vector<BoundPolicy> bound;
    // by Service position: every policy naming the Service, conflicts
    // included, in conflict order: (sectionName or "" for the whole Service, policy)
    std::vector<std::vector<std::pair<std::string, BoundPolicy *>>> naming;
    // Gateways whose spec.tls.backend.validation.mode is AllowInsecureVerification
    std::set<std::string> insecure_allowed;

    // Records that a route of `gateway` reaches this Service port: the
    // Gateway becomes an ancestor of each policy naming it.
    void reached(size_t service, const std::string &port_name, const std::string &gateway);

    // The policy for a Service port: the port's own, else the Service's (the
    // first of each in conflict order; the others are Conflicted).
    BoundPolicy *find(size_t service, const std::string &port_name) const;
};

PolicyIndex resolve_policies(const Manifests &manifests, const ObjectIndex &objects, Plan *plan);
// The status of each policy, appended to *statuses (warnings to the plan).
void policy_statuses(const PolicyIndex &index, Plan *plan, StatusList *statuses);

// Conflict order of Gateway API: the oldest creationTimestamp first (an
// object without one last), then namespace/name.
bool older_first(const ObjectMeta &a, const ObjectMeta &b);

// CA references (ConfigMaps or Secrets of namespace ns, key ca.crt, or
// ClusterTrustBundles) or,
// with `trusted`, GEP-4152 trustedCertificates (any PEM value, as pins).
struct CaResult {
    std::string bundle;
    std::vector<std::string> pins;           // from trustedCertificates
    int valid = 0;
    std::vector<std::string> invalid_refs;  // InvalidCACertificateRef messages
    std::vector<std::string> invalid_kinds; // InvalidKind messages
};
CaResult resolve_ca_refs(const ObjectIndex &objects, const std::string &ns,
                         const std::vector<LocalObjectRef> &refs, bool trusted, Reader reader);
// The module directives of policy `p` with its CA references resolved
// (`ca`, `trusted`), its CA bundle among the plan's files.
UpstreamPolicy upstream_policy(const BackendTLSPolicy &p, const CaResult &ca, const CaResult &trusted, Plan *plan);
// The file under OUTDIR that holds a CA bundle, named by its content
// (written once into the plan).
std::string ca_bundle_file(const std::string &bundle, Plan *plan);
// The CA bundles nothing in the plan names left out of its files (a policy
// that lost a conflict resolved its own, which nginx never reads): every
// one, or those of `candidates`.
void drop_unnamed_bundles(Plan *plan);
void drop_unnamed_bundles(Plan *plan, std::set<std::string> candidates);

// A file name made only of safe characters, for certs/ and upstream names.
std::string safe_name(const std::string &text);
// The name of an object's files under certs/: PREFIX_NAMESPACE_NAME.
// Kubernetes names hold no "_": no two objects share one (with "-",
// Secret payments/prod-tls and payments-prod/tls did); a name that is not
// a Kubernetes name carries the digest of what it was.
std::string object_file_stem(const std::string &prefix, const std::string &ns, const std::string &name);

// One Gateway listener as resolve sees it: the Gateway's own, or one a
// ListenerSet merged into it (GEP-1713).
struct ListenerState {
    const Gateway *gateway = nullptr;
    const ListenerSet *listener_set = nullptr;  // null: the Gateway's own
    const Listener *listener = nullptr;
    bool accepted = false;  // routes attach to it and count in its attachedRoutes
    bool usable = false;    // and it is Programmed: served
    std::string listen;
    std::string category;  // what the listen socket speaks: HTTP, HTTPS, TLS/Passthrough, TLS/Terminate
    std::string certificate, certificate_key;
    ClientValidation client;
    ObjectStatus::ListenerStatus status;

    // who holds the listener: its allowedRoutes "Same", and its Secrets
    const ObjectMeta &owner() const { return listener_set != nullptr ? listener_set->meta : gateway->meta; }
    const char *owner_kind() const { return listener_set != nullptr ? "ListenerSet" : "Gateway"; }
};

// ---- resolve/claims.cc: who has a port and a hostname on a shared address ---

// Every Gateway is served by one nginx, so Gateways on one address share
// its sockets. A claim is a listener's: it began when its Gateway was made
// (a ListenerSet's listener: when both its ListenerSet and its Gateway
// were), by creationTimestamp, unknown ones last; then by Gateway
// namespace/name, then in the Gateway's own order (its listeners, then its
// ListenerSets'). Never by a route's age: a route may change parents.
bool claims_before(const ListenerState &a, const ListenerState &b);
// One listen socket speaks one protocol (and, for TLS, one mode): the
// first claim's.
void settle_protocol_conflicts(std::vector<ListenerState> &listeners);
// A listener whose socket, protocol and hostname the first claim names
// too: a ListenerSet's behind an earlier listener of its Gateway, and
// any behind another Gateway's that names the hostname (or, TCP and UDP,
// has the whole port).
void settle_hostname_conflicts(std::vector<ListenerState> &listeners);
// Whether `a`'s claim on a hostname it serves outranks `b`'s: a listener
// that names it, then the most specific wildcard, then no hostname; then
// the first claim.
bool claim_outranks(const ListenerState &a, const ListenerState &b);
// What a claim is on: a socket and a hostname ("" for TCP and UDP).
std::string claim_key(const ListenerState &ls, const std::string &host);

// ---- resolve_gateway_tls.cc: a Gateway's own TLS material ------------------

// A kubernetes.io/tls Secret as the files certs/PREFIX-NS-NAME.{crt,key};
// on failure a reason (InvalidKind, RefNotPermitted, NotFound, Invalid) and why.
struct SecretFiles {
    std::string certificate, key, reason, why;
    bool ok() const { return reason.empty(); }
};
// `from_kind` in namespace `from_ns` refers to it (a Gateway, a ListenerSet).
SecretFiles tls_secret_files(const ObjectIndex &objects, const std::string &from_kind,
                             const std::string &from_ns, const SecretObjectRef &ref, const std::string &prefix, Plan *plan,
                             std::set<std::string> *written, Reader reader = Reader::Gateway);
// GEP-91 (perPort, else default) and GEP-4078 pins for one TLS listener:
// false with the listener's conditions when a CA reference fails.
bool resolve_client_validation(const ObjectIndex &objects, const Gateway &gw,
                               const Listener &l, Plan *plan, ClientValidation *out,
                               std::vector<Condition> *failure);
// GEP-3155: the Gateway's ResolvedRefs condition (none without a
// clientCertificateRef), and the files when they resolve.
Condition resolve_backend_client_certificate(const ObjectIndex &objects, const Gateway &gw,
                                             Plan *plan, std::set<std::string> *written,
                                             BackendClientCertificate *out);

// Stable-sorts `items` by `less`: positions are sorted, then each item is
// moved once, in place along the permutation's cycles. Items may be large
// and number 100,000: no second vector, no swapping of whole items in the sort.
template <typename Items, typename Less>
void sort_by_position(Items &items, Less less)
{
    using T = typename Items::value_type;
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return less(items[x], items[y]); });
    // position k takes the item at order[k]; a placed position points at itself
    for (size_t start = 0; start < order.size(); start++) {
        if (order[start] == start) continue;
        T held = std::move(items[start]);
        size_t k = start;
        while (order[k] != start) {
            size_t from = order[k];
            items[k] = std::move(items[from]);
            order[k] = k;
            k = from;
        }
        items[k] = std::move(held);
        order[k] = k;
    }
}

// ---- resolve_match.cc: HTTPRoute matches as nginx locations ----------------

bool is_conditional(const RouteMatch &m);
// The conditions of a match as nginx variables and anchored regexes (into
// *out when not null), or why they cannot be rendered.
std::string match_conditions(const RouteMatch &m, std::vector<MatchCondition> *out);
// What follows `location` for a path match.
std::vector<LocationMatch> location_matches(const RouteMatch &m);
// Gateway API precedence among a path's rules, and a stable location order.
void order_locations(Server *server);

// ---- resolve/stream.cc: TLS, TCP and UDP listeners ---------------------------

// The socket a listener's port is ("ADDRESS:PORT", "... udp" for UDP).
std::string listen_socket(const ListenerState &ls);
// What a listen socket speaks: HTTP, HTTPS, or TLS in either mode.
std::string socket_protocol(const std::string &category);
// The certificates, proxy_ssl and route order of one stream server, once
// every route is in; certificates: listener hostname -> (certificate, key);
// server_per_hostname: the nginx picks stream servers by SNI.
// Whether a Terminate port needs what one stream server before nginx
// 1.25.5 cannot give: certificates of its listeners that differ, or routes
// that need proxy_ssl beside routes that must not have it.
bool needs_server_per_hostname(const StreamServer &terminate,
                               const std::map<std::string, std::pair<std::string, std::string>> &certificates);
void finish_stream_server(StreamServer *server,
                          const std::map<std::string, std::pair<std::string, std::string>> &certificates,
                          bool server_per_hostname, std::vector<std::string> *warnings);

}  // namespace g2n
