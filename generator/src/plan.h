// What resolve hands to render: a flat, nginx-shaped model of what to
// serve, and the status each object would carry. Render makes no decisions.
#pragma once

#include <deque>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "model.h"
#include "options.h"

namespace g2n {

// Status text outlives the manifests it came from and repeats across
// 100,000 objects ("Route is accepted"): each distinct text is kept once,
// by the Plan whose statuses hold views of it (and shared by its copies),
// not for the life of the process: gateway2nginx run lives long, and
// tenants' names come and go.
class TextTable {
public:
    std::string_view intern(std::string_view text);
    size_t size() const { return storage_.size(); }

private:
    std::deque<std::string> storage_;  // node-stable
    std::unordered_set<std::string_view> index_;
};

// `text` in the table of the Plan resolve() is making on this thread
// (std::logic_error elsewhere).
std::string_view intern(std::string_view text);

// Four views: type, status and reason are literals (cond::make), the
// message interned; copying a condition allocates nothing.
struct Condition {
    std::string_view type;
    std::string_view status;  // "True" / "False"
    std::string_view reason;
    std::string_view message;
};

// What a status reports of its object: no labels, no source position
// (one status per object: at 100,000 routes the copies add up).
struct StatusMeta {
    std::string name;
    std::string namespace_;
    int64_t generation = 0;
    std::string creation_timestamp;
    // the API server's: an object deleted and made again under its name is
    // another, whose status is to be written though it reads the same
    std::string uid;
};

inline StatusMeta status_meta(const ObjectMeta &m)
{
    return {m.name, m.namespace_, m.generation, m.creation_timestamp, m.uid};
}

// kind, refs_key, group: literals; api_version: interned
struct ObjectStatus {
    std::string_view api_version;
    std::string_view kind;
    StatusMeta meta;
    // Gateway and ListenerSet: conditions, and per listener (name, attached
    // routes, conditions)
    std::vector<Condition> conditions;
    struct ListenerStatus {
        std::string name;
        int attached_routes = 0;
        std::vector<std::string> supported_kinds;  // route kinds of the gateway group
        std::vector<Condition> conditions;
    };
    std::vector<ListenerStatus> listeners;
    struct Address {
        std::string type = "IPAddress";  // or Hostname
        std::string value;

        bool operator==(const Address &o) const { return type == o.type && value == o.value; }
    };
    std::vector<Address> addresses;  // Gateway: where clients reach it
    int attached_listener_sets = 0;  // Gateway: the ListenerSets accepted
    // Routes (parents) and policies (ancestors): a Gateway reference each
    struct RefStatus {
        std::string_view group = "gateway.networking.k8s.io";
        std::string_view kind = "Gateway";
        std::string namespace_;
        std::string name;
        std::string section_name;
        std::vector<Condition> conditions;
    };
    std::vector<RefStatus> refs;
    std::string_view refs_key;  // "parents" or "ancestors"
};

// The statuses of a plan, each held by a shared pointer: a plan that a
// few routes changed (gateway2nginx run's route changes) shares every
// other status with the plan before it, copying none of 20,000.
class StatusList {
public:
    using Item = std::shared_ptr<const ObjectStatus>;

    StatusList() = default;
    explicit StatusList(std::vector<ObjectStatus> &&statuses);

    size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    const ObjectStatus &operator[](size_t i) const { return *items_[i]; }
    const ObjectStatus &front() const { return *items_.front(); }
    const Item &item(size_t i) const { return items_[i]; }
    void reserve(size_t n) { items_.reserve(n); }
    void push_back(Item item) { items_.push_back(std::move(item)); }
    void push_back(ObjectStatus &&status) { items_.push_back(std::make_shared<const ObjectStatus>(std::move(status))); }

    class const_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = ObjectStatus;
        using difference_type = std::ptrdiff_t;
        using pointer = const ObjectStatus *;
        using reference = const ObjectStatus &;

        explicit const_iterator(std::vector<Item>::const_iterator at) : at_(at) {}
        reference operator*() const { return **at_; }
        pointer operator->() const { return at_->get(); }
        const_iterator &operator++()
        {
            ++at_;
            return *this;
        }
        bool operator==(const const_iterator &o) const { return at_ == o.at_; }
        bool operator!=(const const_iterator &o) const { return at_ != o.at_; }

    private:
        std::vector<Item>::const_iterator at_;
    };
    const_iterator begin() const { return const_iterator(items_.begin()); }
    const_iterator end() const { return const_iterator(items_.end()); }

private:
    std::vector<Item> items_;
};

// The TLS policy bound to one upstream (module directives in upstream{}).
struct UpstreamPolicy {
    std::string name;       // namespace/name of the BackendTLSPolicy
    gtls::Mode mode = gtls::Mode::Strict;
    std::string ca;         // file under OUTDIR, "system", or empty (pins alone, or skip)
    std::vector<std::string> sans;  // module SPECs
    std::vector<std::string> pins;  // module SPECs
    std::string hostname;
    // its own client certificate and key, files under OUTDIR (option
    // gateway2nginx.io/client-certificate); empty: the Gateway's, if any
    std::string client_certificate, client_key;
    // gateway2nginx run pushes its hostname and SANs with its trust
    // (plan_pushed_names; a spare's policy holding a Service's, over the
    // spare's own)
    bool names_pushed = false;
};

struct Upstream {
    std::string name;
    std::string comment;
    // the namespace of the Service whose endpoints these are (as in
    // names): the tenant whose own zone holds them, so that a tenant's
    // servers take no other tenant's room
    std::string tenant;
    // the Service ("namespace/name") and port number whose endpoints these
    // are: what an EndpointSlice change recomputes
    std::string service;
    int service_port = 0;
    std::vector<std::string> servers;  // "host:port"
    // a rule's retries: nginx tries each peer of an upstream once, so each
    // server is listed often enough for TRIES tries, without passive
    // health checks (a retried 500 would mark the only server down)
    int tries = 1;
    bool for_http = false;   // proxy_ssl_* directives
    bool for_grpc = false;   // grpc_ssl_* directives
    // the BackendTLSPolicy's directives, shared with the policy's other
    // upstreams (one copy per policy, not per upstream); null: plaintext
    std::shared_ptr<const UpstreamPolicy> policy;
    // why this upstream can never be reached (a policy that cannot be
    // honoured); rendered as a down server. A Service without endpoints
    // is not unusable but empty: with the upstream API, endpoints pushed
    // later serve without a reload
    std::string unusable;

    // TLS exactly when a policy applies: no flag that could disagree with it
    bool tls() const { return policy != nullptr; }
};

struct WeightedUpstream {
    std::string upstream;
    bool tls = false;
    int weight = 1;
    bool grpc = false;  // grpc_pass rather than proxy_pass: gRPC, kubernetes.io/h2c
    bool websocket = false;  // appProtocol kubernetes.io/ws: WebSocket upgrades pass (GEP-1911)
    // its backendRef's RequestHeaderModifier, when the rule has several
    // backendRefs (one backendRef's filters are the rule's own)
    HeaderModifier request_headers;
};

// The share of an invalid backendRef: no upstream, answered 500.
inline WeightedUpstream refused_share(int weight)
{
    WeightedUpstream wu;
    wu.weight = weight;
    return wu;
}

// One condition of an HTTPRoute match beyond its path: what it tests (the
// method, a header or a query parameter, by name), and the value, exact or
// a regular expression the whole value must match. Precedence among rules
// is computed from the subjects (plan/match.cc); render writes them as
// nginx variables and anchored regexes.
struct MatchCondition {
    enum class Subject { Method, Header, QueryParam };
    Subject subject = Subject::Header;
    std::string name;  // the header or query parameter; empty for the method
    bool regex = false;
    std::string value;
};

// What a location matches (Gateway API path match types).
struct LocationMatch {
    enum class Kind { Exact, Prefix, Regex };
    Kind kind = Kind::Prefix;
    std::string path;  // the path, or the anchored regular expression

    // "= /x", "/x/", "~ ^(?:/x)$": for ordering and for tests
    std::string describe() const
    {
        return kind == Kind::Exact ? "= " + path : kind == Kind::Regex ? "~ " + path : path;
    }
};

// A rule that applies only when its conditions hold (HTTPRoute header,
// query and method matches), tried before the location's own backends.
struct ConditionalTarget {
    std::vector<MatchCondition> conditions;
    std::vector<WeightedUpstream> backends;
    int return_code = 0;
    std::string source;
};

// A RequestMirror: a copy of NUMERATOR in DENOMINATOR requests goes to
// BACKEND, its answer discarded.
struct Mirror {
    WeightedUpstream backend;
    int numerator = 100;
    int denominator = 100;
};

// Its small fields side by side: 256 bytes, not 272 (20,000 at 10,000
// PathPrefix routes).
struct Location {
    LocationMatch match;
    std::string path_prefix; // the PathPrefix matched, for ReplacePrefixMatch
    std::vector<RouteFilter> filters;
    std::vector<WeightedUpstream> backends;
    std::vector<Mirror> mirrors;
    long long request_timeout_ms = -1;  // HTTPRoute timeouts: -1 unset, 0 disabled
    long long backend_timeout_ms = -1;
    int retry_tries = 1;     // HTTPRoute retry: the first try and the retries
    int return_code = 0;     // when there is no backend to send to
    std::vector<int> retry_codes;
    std::string source;      // "ns/route rule N", for the comment
    std::vector<ConditionalTarget> conditional;  // in Gateway API precedence
    bool grpc = false;       // grpc_pass
    bool unconditional = true;  // false: only conditional rules claim this path
};
static_assert(sizeof(Location) <= 256, "a Location's fields are ordered to leave no padding");

// How a TLS listener checks client certificates (GEP-91, GEP-4078 pins):
// not at all, a valid chain (and the pins), any certificate or none
// (AllowInsecureFallback, which enforces no pin), or the pins alone.
enum class ClientVerify { None, ValidChain, Fallback, PinsOnly };

struct ClientValidation {
    ClientVerify verify = ClientVerify::None;
    std::string ca;      // file under OUTDIR
    int depth = 4;       // intermediate CAs a client's chain may hold (ssl_verify_depth)
    std::vector<std::string> pins;
};

// The gateway's own certificate to TLS backends (GEP-3155), files under OUTDIR.
struct BackendClientCertificate {
    std::string certificate, key;
};

struct Server {
    std::string listen;       // "ADDR:PORT"
    int listener_port = 0;    // the Gateway listener's port (before --port-offset)
    bool ssl = false;
    bool insecure_allowed = false;  // its Gateway's GEP-4152 gate
    std::string server_name;  // "" for the port's default server
    // the hostname of the listener it serves ("" for none): on a TLS port,
    // a request whose SNI chose another listener is misdirected (421)
    std::string listener_hostname;
    std::string certificate;  // files under OUTDIR
    std::string certificate_key;
    ClientValidation client;  // GEP-91 / GEP-4078
    BackendClientCertificate backend_client;  // GEP-3155
    // (not a vector: a hostname's 20,000 locations are never held twice
    // while the list grows, the peak of a one-shot run at 10,000 routes)
    std::deque<Location> locations;
    // --routes table (plan/route_tables.h): its rules as its listener
    // port's route table holds them, in the module's JSON; empty where its
    // locations are rendered, table_refusal saying why when it has any
    std::string table_json;
    std::string table_refusal;
    // --routes table: its hostname's requests reach its listener's own
    // server, which routes by the same table, so it has no server{} of its
    // own and a route hostname coming or going changes no server{}
    bool served_by_listener = false;

    bool in_table() const { return !table_json.empty(); }
};

// One SNI name of a TLS listener (exact, "*.suffix", or "" for any) and
// where its connections go.
struct StreamRoute {
    std::string hostname;
    std::vector<WeightedUpstream> backends;  // an empty upstream name: refused
    std::string source;   // "ns/route", for the comment
    bool to_terminate = false;  // a Terminate listener's hostname on a mixed port
    // Terminate: the certificate of the listener the route attached to
    std::string certificate, certificate_key;
    // Terminate, a server per hostname: its backends take TLS
    bool proxy_ssl = false;
};

// A stream server: the TLS listeners of one port in one mode. Passthrough
// reads the SNI from the ClientHello (ssl_preread) and forwards the bytes
// untouched; Terminate completes the handshake with the listener's
// certificate and forwards the plaintext, re-encrypted when the backend has
// a BackendTLSPolicy. A port with both: the Passthrough server has it, and
// sends the Terminate hostnames to the Terminate server's loopback listen.
// Or a TCP or UDP listener, whose oldest TCPRoute or UDPRoute (its one
// route) has every connection or datagram session.
enum class StreamProtocol { TLS, TCP, UDP };
struct StreamServer {
    std::string listen;
    StreamProtocol protocol = StreamProtocol::TLS;
    bool terminate = false;
    bool insecure_allowed = false;  // its Gateway's GEP-4152 gate
    bool proxy_ssl = false;         // Terminate with BackendTLSPolicy backends
    std::string certificate, certificate_key;
    ClientValidation client;
    BackendClientCertificate backend_client;
    std::vector<StreamRoute> routes;  // sorted by hostname
    // Terminate on nginx >= 1.25.5: one stream server per route hostname,
    // picked by nginx's server_name, each with its listener's certificate
    // and proxy_ssl as its own backends need (the certificate above: for
    // an SNI no route has). Before, the one server picks the backends by a
    // map of the SNI, and the certificate and proxy_ssl are the port's.
    bool server_per_hostname = false;
};

struct OutputFile {
    std::string path;  // relative to OUTDIR
    std::string content;
    int mode = 0644;
};

// An accepted Gateway's own object in its namespace (GEP-1762: a Service
// gateway2nginx keeps, run --gateway-service-external-name), carrying its
// spec.infrastructure labels and annotations (GEP-1867).
struct GatewayService {
    std::string namespace_;
    std::string gateway;  // its name
    std::string gateway_uid;
    std::string gateway_class;
    std::map<std::string, std::string> labels, annotations;  // spec.infrastructure's
    std::vector<std::pair<int, std::string>> ports;  // its listeners' (port, "TCP" or "UDP"), sorted, unique
};

struct Plan {
    std::vector<Server> servers;
    std::vector<Upstream> upstreams;
    std::vector<StreamServer> stream_servers;
    std::vector<Upstream> stream_upstreams;  // in stream{}: TLSRoute backends
    std::vector<OutputFile> files;    // CA bundles, listener keys
    // Immutable once resolve has made them: shared by the Plan's copies and
    // by the status writer, which builds an object's JSON only to write it.
    std::shared_ptr<const StatusList> statuses = std::make_shared<const StatusList>();
    std::vector<std::string> warnings;
    std::vector<GatewayService> gateway_services;  // by namespace and Gateway name
    std::shared_ptr<TextTable> texts = std::make_shared<TextTable>();  // what statuses view
};

}  // namespace g2n
