// The property of issue 16, shared by the Boost suite and the fuzz target:
// whatever a tenant writes in any string field (a map value, a list item
// or a map key of an HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute, ListenerSet, BackendTLSPolicy,
// ReferenceGrant, Service, EndpointSlice, ConfigMap or Secret), the
// rendered nginx files, read back with nginx's own token grammar, hold
// exactly the directives the generator writes:
//   - the input is never refused as a whole (one tenant costs only itself),
//   - rendering never meets a value it cannot write,
//   - the text is valid nginx syntax,
//   - every directive is one the generator writes, in the block it writes
//     it in,
//   - no header directive names a header that frames the message or
//     belongs to the connection but the generator's own,
//   - and the directive tree has the benign value's shape, or else the
//     change is reported (an object rejected, or a status that differs).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "nginx_conf_grammar.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"

namespace g2n_test {

// A set of manifests that uses every field gateway2nginx renders. Secrets
// and CA bundles hold the PEM texts given (the test certificates).
inline std::string hostile_benign_manifests(const std::string &ca_pem, const std::string &leaf_pem,
                                            const std::string &key_pem)
{
    auto block = [](const std::string &text) {
        std::string out;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) out += "    " + line + "\n";
        return out;
    };
    return R"(apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: ours
  allowedListeners: {namespaces: {from: All}}
  tls:
    backend:
      clientCertificateRef: {name: listener, namespace: infra}
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - name: https
    port: 443
    protocol: HTTPS
    tls: {certificateRefs: [{name: listener, namespace: infra}]}
    allowedRoutes: {namespaces: {from: All}}
  - name: https-admin
    port: 443
    protocol: HTTPS
    hostname: "*.admin.example.com"
    tls: {certificateRefs: [{name: listener, namespace: infra}]}
  - {name: tcp, port: 5432, protocol: TCP, allowedRoutes: {namespaces: {from: All}}}
  - {name: udp, port: 5353, protocol: UDP, allowedRoutes: {namespaces: {from: All}}}
  - name: tls
    port: 8443
    protocol: TLS
    hostname: "*.db.example.com"
    tls: {mode: Passthrough}
    allowedRoutes: {namespaces: {from: All}}
  - name: tls-terminate
    port: 8444
    protocol: TLS
    hostname: "*.term.example.com"
    tls: {mode: Terminate, certificateRefs: [{name: listener, namespace: infra}]}
    allowedRoutes: {namespaces: {from: All}}
---
apiVersion: v1
kind: Secret
metadata: {name: listener, namespace: infra}
type: kubernetes.io/tls
stringData:
  tls.crt: |
)" + block(leaf_pem) + "  tls.key: |\n" + block(key_pem) + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: app, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: http}, {name: gw, namespace: infra, sectionName: https}]
  hostnames: [shop.example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /api}
      headers: [{type: Exact, name: X-Version, value: v2}, {type: RegularExpression, name: X-Tenant, value: "t[0-9]+"}]
      queryParams: [{type: Exact, name: debug, value: "1"}]
      method: GET
    backendRefs: [{name: api, port: 443, weight: 3}, {name: api, port: 8443, weight: 1}]
  - matches: [{path: {type: Exact, value: /login}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: X-Set, value: one}]
        add: [{name: X-Add, value: two}]
        remove: [X-Drop]
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: X-Resp, value: three}], add: [{name: X-Resp-Add, value: four}], remove: [Server]}
    - type: URLRewrite
      urlRewrite: {hostname: internal.example.com, path: {type: ReplaceFullPath, replaceFullPath: /signin}}
    backendRefs: [{name: api, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters:
    - type: RequestRedirect
      requestRedirect: {scheme: https, hostname: new.example.com, port: 8443, statusCode: 301, path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}
  - matches: [{path: {type: RegularExpression, value: "/items/[0-9]+"}}]
    backendRefs: [{name: api, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /static}}]
    filters:
    - type: URLRewrite
      urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /assets}}
    backendRefs: [{name: api, namespace: other, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /split}}]
    backendRefs:
    - name: api
      port: 443
      weight: 2
      filters:
      - type: RequestHeaderModifier
        requestHeaderModifier: {set: [{name: X-Backend, value: first}], add: [{name: X-Hop, value: one}], remove: [X-Gone]}
    - name: api
      port: 8443
      filters:
      - type: RequestHeaderModifier
        requestHeaderModifier: {set: [{name: X-Backend, value: second}]}
  - matches: [{path: {type: PathPrefix, value: /copied}}]
    filters:
    - type: RequestMirror
      requestMirror: {backendRef: {name: api, port: 8443}, percent: 25}
    - type: RequestMirror
      requestMirror: {backendRef: {name: api, port: 443}, fraction: {numerator: 1, denominator: 3}}
    backendRefs: [{name: api, port: 443}]
    timeouts: {request: 10s, backendRequest: 1500ms}
  - matches: [{path: {type: PathPrefix, value: /cors}}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ["https://www.example.com", "https://*.example.org:8443"]
        allowMethods: [GET, PUT]
        allowHeaders: [X-One]
        exposeHeaders: [X-Two]
        allowCredentials: true
        maxAge: 60
    backendRefs: [{name: api, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /moved}}]
    backendRefs:
    - name: api
      port: 443
      filters:
      - type: RequestRedirect
        requestRedirect: {hostname: moved.example.com, path: {type: ReplaceFullPath, replaceFullPath: /here}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: rpc, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: https}]
  hostnames: [rpc.example.com]
  rules:
  - matches: [{method: {service: shop.Cart, method: Add}, headers: [{name: x-user, value: alice}]}]
    backendRefs: [{name: api, port: 443}]
  - matches: [{method: {service: shop.Cart, method: List}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: x-cart, value: one}], add: [{name: x-trace, value: two}], remove: [x-drop]}
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: x-served, value: three}], remove: [x-internal]}
    backendRefs: [{name: api, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tls}]
  hostnames: [pg.db.example.com]
  rules:
  - backendRefs: [{name: db, port: 5432}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db-terminated, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tls-terminate}]
  hostnames: [pg.term.example.com]
  rules:
  - backendRefs: [{name: db, port: 5432}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: api-terminated, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tls-terminate}]
  hostnames: [api.term.example.com]
  rules:
  - backendRefs: [{name: api, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: team, namespace: app}
spec:
  parentRef: {name: gw, namespace: infra}
  listeners:
  - {name: team, port: 8080, protocol: HTTP, hostname: team.example.com, allowedRoutes: {namespaces: {from: Same}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: team, namespace: app}
spec:
  parentRefs: [{kind: ListenerSet, name: team}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /team}}]
    timeouts: {request: 5s}
    retry: {attempts: 2}
    backendRefs: [{name: api, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: db-bytes, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tcp}]
  rules:
  - backendRefs: [{name: db, port: 5432, weight: 3}, {name: api, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: dns, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: udp}]
  rules:
  - backendRefs: [{name: db, port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: app}
spec:
  ports: [{name: https, port: 443, targetPort: 9443, appProtocol: https}, {name: alt, port: 8443, targetPort: alt, appProtocol: kubernetes.io/ws}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-1
  namespace: app
  labels: {kubernetes.io/service-name: api}
addressType: IPv4
ports: [{name: https, port: 9443}, {name: alt, port: 9444}]
endpoints: [{addresses: ["10.0.0.1", "10.0.0.2"], conditions: {ready: true}}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: app}
spec:
  type: ExternalName
  externalName: db.internal.example.com
  ports: [{name: pg, port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: other}
spec:
  ports: [{name: https, port: 443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-other
  namespace: other
  labels: {kubernetes.io/service-name: api}
addressType: IPv6
ports: [{name: https, port: 9443}]
endpoints: [{addresses: ["fd00::1"]}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-app, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: app}]
  to: [{group: "", kind: Service, name: api}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: api-tls, namespace: app}
spec:
  targetRefs: [{group: "", kind: Service, name: api, sectionName: https}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
    hostname: api.example.com
    subjectAltNames:
    - {type: Hostname, hostname: api.example.com}
    - {type: URI, uri: "spiffe://example.com/ns/app/sa/api"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: alt-tls, namespace: app}
spec:
  targetRefs: [{group: "", kind: Service, name: api, sectionName: alt}]
  validation:
    trustedCertificateHashes:
    - {type: SPKI, algorithm: SHA256, value: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}
    - {type: Certificate, algorithm: SHA256, value: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
    hostname: alt.example.com
  options: {gateway2nginx.io/verification-mode: Strict}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: app}
data:
  ca.crt: |
)" + block(ca_pem);
}

// Values a hostile tenant tries in every field: nginx syntax, variables,
// control characters, non-UTF-8, nginx's length limit, map keywords, and
// the edges of the CRDs' patterns.
inline std::vector<std::string> hostile_values()
{
    return {"\"", "'", ";", "{", "}", "#", "$", "\\", "${host}", "a b", "x\" ; include /etc/passwd; \"",
            "x; } server { listen 1; location / { root /; } } #", "a\nb", "a\rb", std::string("a\0b", 3), "\xff\xfe",
            std::string(5000, 'a'), "*.example.com", "default", "include", "~.*", "engine:x", "/etc/passwd", "..",
            "http://evil.example/", "0", "1000001", "99999999999", "", "a\\", "%", "spiffe://a b/x;y{z}", "x-#", "\xc3\xa9",
            // the longest a DNS name, a label and a header name may be; a
            // regex group nginx would make a variable
            std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." + std::string(61, 'd'),
            std::string(63, 'l'), "X-" + std::string(254, 'h'), "/(?<uri>.*)",
            // headers that frame a message or belong to a connection
            "Transfer-Encoding", "content-length"};
}

struct Rendered {
    std::string error;  // why the pipeline or nginx's grammar refused (none: "")
    std::string shape;
    std::string shape_outside_upstreams;
    std::vector<std::string> names;
    std::string statuses;  // every object's conditions, one line each
    size_t rejected = 0;
    // the header directives naming one of those, digits of variable names
    // as "N" (a renumbered map is the same directive)
    std::set<std::string> connection_headers;
};

// Headers that frame a message or belong to one connection (RFC 9110
// 7.6.1, RFC 9112 6): only nginx and the generator may name them.
inline bool connection_header(std::string name)
{
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return name == "connection" || name == "content-length" || name == "keep-alive" || name == "proxy-connection"
           || name == "te" || name == "trailer" || name == "transfer-encoding" || name == "upgrade";
}

inline void collect_connection_headers(const std::vector<ConfDirective> &directives, std::set<std::string> *out)
{
    static const std::set<std::string> header_directives = {"proxy_set_header", "grpc_set_header", "add_header",
                                                            "proxy_hide_header", "grpc_hide_header"};
    for (const ConfDirective &d : directives) {
        if (d.block) collect_connection_headers(d.children, out);
        if (d.args.size() < 2 || !header_directives.count(d.args[0]) || !connection_header(d.args[1])) continue;
        std::string text;
        for (const std::string &a : d.args) text += " " + a;
        std::string normalized;
        for (char ch : text) {
            bool digit = ch >= '0' && ch <= '9';
            if (!digit) normalized += ch;
            else if (normalized.empty() || normalized.back() != 'N') normalized += 'N';
        }
        out->insert(normalized);
    }
}

inline Rendered render_for_property(const std::string &yaml, long nginx_version)
{
    Rendered out;
    g2n::Manifests m;
    std::istringstream in(yaml);
    try {
        g2n::parse_stream(in, "hostile.yaml", &m);
    } catch (const g2n::InputError &e) {
        out.error = std::string("input refused as a whole: ") + e.what();
        return out;
    }
    out.rejected = m.rejected.size();
    g2n::Options options;
    options.nginx_version = nginx_version;
    options.upstream_api = "127.0.0.1:9114";  // zones, and the API's server, rendered too
    std::vector<ConfDirective> all;
    try {
        g2n::Plan plan = g2n::resolve(m, options);
        for (const g2n::ObjectStatus &st : *plan.statuses) {
            out.statuses += std::string(st.kind) + " " + st.meta.namespace_ + "/" + st.meta.name + ":";
            auto conditions = [&](const std::string &where, const std::vector<g2n::Condition> &conds) {
                for (const g2n::Condition &c : conds) {
                    out.statuses += " " + where + std::string(c.type) + "=" + std::string(c.status) + "/"
                                    + std::string(c.reason);
                }
            };
            conditions("", st.conditions);
            for (const auto &ref : st.refs) conditions(ref.name + "/" + ref.section_name + ":", ref.conditions);
            for (const auto &l : st.listeners) conditions(l.name + ":", l.conditions);
            out.statuses += "\n";
        }
        for (const std::string &text : {g2n::render_nginx_conf(plan, options), g2n::render_http_conf(plan, options),
                                        g2n::render_stream_conf(plan, options)}) {
            ConfTree tree = read_conf(text);
            if (!tree.error.empty()) {
                out.error = "not nginx syntax: " + tree.error + "\n" + text;
                return out;
            }
            all.insert(all.end(), tree.directives.begin(), tree.directives.end());
        }
        g2n::render_status(plan, options);
    } catch (const g2n::nginx::RenderError &e) {
        out.error = std::string("render refused a value: ") + e.what();
        return out;
    }
    collect_connection_headers(all, &out.connection_headers);
    out.shape = conf_shape(all);
    out.shape_outside_upstreams = conf_shape(all, false, false, false);
    conf_names(all, "", &out.names);
    return out;
}

// Every directive the generator writes, with the blocks it writes it in
// (nginx.conf, and http.conf and stream.conf as they stand at the top of
// their files). Keys of map, split_clients and geo read as "<key>".
inline const std::set<std::string> &generator_vocabulary()
{
    static const std::set<std::string> words = [] {
        std::set<std::string> w;
        auto add = [&](const std::string &context, std::initializer_list<const char *> names) {
            for (const char *n : names) w.insert(context + n);
        };
        add("", {"load_module", "worker_processes", "worker_rlimit_nofile", "pid", "error_log", "events", "http", "stream",
                 // http.conf and stream.conf
                 "proxy_ssl_verify_insecure", "proxy_http_version", "proxy_set_header", "grpc_set_header",
                 "proxy_ssl_server_name",
                 "proxy_ssl_name", "grpc_ssl_server_name", "grpc_ssl_name", "geo", "upstream", "map", "split_clients",
                 "server", "gateway_tls_status_zone", "gateway_tls_share", "gateway_tls_upstream_state_zone"});
        add("events>", {"worker_connections"});
        add("http>", {"access_log", "client_body_temp_path", "proxy_temp_path", "fastcgi_temp_path", "uwsgi_temp_path",
                      "scgi_temp_path", "server_names_hash_bucket_size", "proxy_headers_hash_bucket_size",
                      "map_hash_bucket_size",
                      "resolver", "include"});
        add("stream>", {"map_hash_bucket_size", "map", "log_format", "access_log", "resolver", "include"});
        add("stream>map>", {"<key>", "default"});
        add("geo>", {"default"});
        add("map>", {"<key>", "default", "hostnames"});
        add("split_clients>", {"<key>"});
        add("upstream>", {"server", "zone", "proxy_ssl_verify_mode", "proxy_ssl_verify_ca", "proxy_ssl_verify_san",
                          "proxy_ssl_verify_pin", "proxy_ssl_policy_name", "proxy_ssl_policy_hostname",
                          "grpc_ssl_verify_mode", "grpc_ssl_verify_ca", "grpc_ssl_verify_san", "grpc_ssl_verify_pin",
                          "grpc_ssl_policy_name", "grpc_ssl_policy_hostname"});
        add("server>", {"listen", "server_name", "proxy_ssl_verify_insecure", "ssl_certificate", "ssl_certificate_key",
                        "ssl_verify_client", "ssl_verify_client_handshake", "ssl_client_certificate", "ssl_verify_depth",
                        "ssl_verify_client_pin", "proxy_ssl_certificate", "proxy_ssl_certificate_key",
                        "grpc_ssl_certificate", "grpc_ssl_certificate_key", "location",
                        "return", "ssl_preread", "proxy_pass", "proxy_ssl", "proxy_ssl_server_name", "proxy_ssl_name",
                        "if", "http2", "gateway_tls_h2c_preface", "access_log", "proxy_timeout"});
        add("server>if>", {"return"});
        add("server>location>", {"proxy_hide_header", "grpc_hide_header", "add_header", "rewrite", "proxy_set_header", "return", "if",
                                 "proxy_pass", "grpc_pass", "grpc_set_header", "gateway_tls_status", "mirror",
                                 "internal", "proxy_connect_timeout", "proxy_send_timeout", "proxy_read_timeout",
                                 "proxy_next_upstream_timeout", "grpc_connect_timeout", "grpc_send_timeout",
                                 "grpc_read_timeout", "grpc_next_upstream_timeout", "proxy_next_upstream",
                                 "proxy_next_upstream_tries", "grpc_next_upstream", "grpc_next_upstream_tries",
                                 "gateway_tls_upstream_api", "gateway_tls_upstream_api_allow",
                                 "gateway_tls_upstream_api_token_file", "gateway_tls_status_allow",
                                 "gateway_tls_status_token_file",
                                 "client_body_buffer_size", "client_max_body_size", "gateway_tls_request_timeout",
                                 "error_page"});
        add("server>location>if>", {"return", "add_header", "grpc_pass"});
        return w;
    }();
    return words;
}

// The tenant-owned scalars of a set of documents: where each is, and
// whether it is a map key (renamed) or a value (replaced).
struct ScalarPath {
    size_t document = 0;
    std::vector<YAML::Node> keys;  // map keys or sequence indexes, outermost first
    bool is_key = false;
    std::string kind;
    std::string where;  // "HTTPRoute app/shop spec.rules[0]..." for messages
    std::string original;  // a value's benign text
};

inline bool hostile_tenant_kind(const std::string &kind)
{
    static const std::set<std::string> kinds = {"HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute",
                                                "ListenerSet", "BackendTLSPolicy", "ReferenceGrant",
                                                "Service", "EndpointSlice", "ConfigMap", "Secret"};
    return kinds.count(kind) > 0;
}

class HostileProperty {
public:
    // nginx_version: what the configuration is rendered for (its cuts differ)
    explicit HostileProperty(const std::string &benign, long nginx_version = g2n::Options().nginx_version)
        : documents_(YAML::LoadAll(benign)), nginx_version_(nginx_version)
    {
        for (size_t i = 0; i < documents_.size(); i++) {
            const YAML::Node &doc = documents_[i];
            std::string kind = doc["kind"].as<std::string>();
            if (!hostile_tenant_kind(kind)) continue;
            std::string name = kind + " " + doc["metadata"]["namespace"].as<std::string>() + "/"
                               + doc["metadata"]["name"].as<std::string>();
            collect(i, doc, {}, name, true);
        }
        for (const YAML::Node &d : documents_) texts_.push_back(emit_one(d));
        baseline_ = render_for_property(join(texts_), nginx_version_);
    }

    const std::vector<ScalarPath> &paths() const { return paths_; }
    const Rendered &baseline() const { return baseline_; }

    // The manifests with `value` at `paths()[index]`.
    std::string manifests_with(size_t index, const std::string &value) const
    {
        const ScalarPath &p = paths_.at(index);
        YAML::Node doc = YAML::Clone(documents_[p.document]);
        substitute(doc, p, 0, value);
        std::vector<std::string> texts = texts_;
        texts[p.document] = emit_one(doc);
        return join(texts);
    }

    // "FIELD = \"VALUE\": ", for messages.
    std::string where(size_t index, const std::string &value) const
    {
        const ScalarPath &p = paths_.at(index);
        return p.where + (p.is_key ? " (key)" : "") + " = \"" + g2n::printable(value.substr(0, 60))
               + (value.size() > 60 ? "..." : "") + "\": ";
    }

    // "" when the property holds for `value` at `paths()[index]`.
    std::string check(size_t index, const std::string &value) const
    {
        const ScalarPath &p = paths_.at(index);
        Rendered r = render_for_property(manifests_with(index, value), nginx_version_);
        std::string at = where(index, value);
        // a value YAML cannot carry (the emitter's own limits) is no input of ours
        if (r.error.find(": invalid YAML: ") != std::string::npos && r.error.find("hostile.yaml") != std::string::npos) {
            return "";
        }
        if (!r.error.empty()) return at + r.error;
        for (const std::string &name : r.names) {
            if (!generator_vocabulary().count(name)) return at + "a directive the generator never writes: " + name;
        }
        for (const std::string &d : r.connection_headers) {
            if (!baseline_.connection_headers.count(d) && !generator_connection_header(d)) {
                return at + "a tenant's value names a connection header:" + d;
            }
        }
        if (r.shape != baseline_.shape && r.rejected == baseline_.rejected && r.statuses == baseline_.statuses
            && !p.is_key && !syntax_free(value) && !only_compared(p)
            // a Service or an EndpointSlice may leave an upstream without endpoints
            && !((p.kind == "Service" || p.kind == "EndpointSlice")
                 && r.shape_outside_upstreams == baseline_.shape_outside_upstreams)) {
            return at + "the directive tree changed with nothing reported\n" + r.shape + "\n" + baseline_.shape;
        }
        return "";
    }

    // The Upgrade and Connection the generator gives a WebSocket backend
    // (which a tenant's Service may add or take away): maps of its own,
    // as a "$" from input never reads as a variable.
    static bool generator_connection_header(const std::string &directive)
    {
        return directive == " proxy_set_header Upgrade $websocket_N"
               || directive == " proxy_set_header Upgrade $backend_websocket_N"
               || directive == " proxy_set_header Connection $connection_N";
    }

    // A value that holds nothing nginx's grammar or a map gives a meaning
    // to: it may change what is served (a weight of 0, an endpoint that
    // moves away) but cannot change the syntax. Any other value must leave
    // the shape as it was, or be reported.
    static bool syntax_free(const std::string &value)
    {
        for (const char *keyword : {"default", "include", "hostnames", "volatile"}) {
            if (value == keyword) return false;
        }
        return std::all_of(value.begin(), value.end(), [](char ch) {
            return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
        });
    }

    // A field whose value the generator only compares with its own words
    // and never writes (a Service port's appProtocol: kubernetes.io/ws or
    // not): any value may choose the other way, "default" too.
    static bool only_compared(const ScalarPath &p)
    {
        const std::string suffix = ".appProtocol";
        return p.kind == "Service" && p.where.size() > suffix.size()
               && p.where.compare(p.where.size() - suffix.size(), suffix.size(), suffix) == 0;
    }

private:
    std::string kind_of(size_t doc) const { return documents_[doc]["kind"].as<std::string>(); }

    void collect(size_t doc, const YAML::Node &node, std::vector<YAML::Node> keys, const std::string &where, bool top)
    {
        if (node.IsScalar()) {
            paths_.push_back({doc, keys, false, kind_of(doc), where, node.Scalar()});
            return;
        }
        if (node.IsSequence()) {
            for (size_t i = 0; i < node.size(); i++) {
                std::vector<YAML::Node> k = keys;
                k.push_back(YAML::Node(i));
                collect(doc, node[i], k, where + "[" + std::to_string(i) + "]", false);
            }
            return;
        }
        if (node.IsMap()) {
            for (const auto &entry : node) {
                std::string key = entry.first.as<std::string>();
                if (top && (key == "apiVersion" || key == "kind")) continue;
                std::vector<YAML::Node> k = keys;
                k.push_back(YAML::Node(key));
                std::string w = where + (top ? " " : ".") + key;
                paths_.push_back({doc, k, true, kind_of(doc), w, key});
                collect(doc, entry.second, k, w, false);
            }
        }
    }

    static void substitute(YAML::Node node, const ScalarPath &p, size_t depth, const std::string &value)
    {
        const YAML::Node &key = p.keys[depth];
        bool last = depth + 1 == p.keys.size();
        if (node.IsSequence()) {
            size_t i = key.as<size_t>();
            if (last) {
                node[i] = value;
            } else {
                substitute(node[i], p, depth + 1, value);
            }
            return;
        }
        std::string name = key.as<std::string>();
        if (last && p.is_key) {
            YAML::Node moved = YAML::Clone(node[name]);
            node.remove(name);
            node[value] = moved;
            return;
        }
        if (last) {
            node[name] = value;
        } else {
            substitute(node[name], p, depth + 1, value);
        }
    }

    static std::string emit_one(const YAML::Node &doc)
    {
        YAML::Emitter e;
        e.SetOutputCharset(YAML::EscapeNonAscii);
        e << doc;
        return std::string("---\n") + e.c_str() + "\n";
    }

    static std::string join(const std::vector<std::string> &texts)
    {
        std::string out;
        for (const std::string &t : texts) out += t;
        return out;
    }

    std::vector<YAML::Node> documents_;
    long nginx_version_;
    std::vector<std::string> texts_;
    std::vector<ScalarPath> paths_;
    Rendered baseline_;
};

}  // namespace g2n_test
