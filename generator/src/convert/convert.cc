#include "convert/convert.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "convert/annotations.h"
#include "parse/fields.h"

namespace g2n::convert {

bool Conversion::dropped() const
{
    return std::any_of(report.begin(), report.end(), [](const ReportEntry &e) { return e.outcome == Outcome::NotConverted; });
}

namespace {

// How one Ingress wants its backends reached over TLS
struct BackendTls {
    bool unconverted = false;  // a protocol convert does not convert: the routes are left out
    bool tls = false;
    bool skip_verify = true;
    std::string hostname;  // "": the Service's name in the cluster
    std::string ca_secret;  // "": none (skip_verify, or verify with no CA: fails closed)
    std::string client_secret;  // its own client certificate, a Secret of its namespace; "": the Gateway's
    bool operator==(const BackendTls &o) const
    {
        return tls == o.tls && skip_verify == o.skip_verify && hostname == o.hostname && ca_secret == o.ca_secret
               && client_secret == o.client_secret;
    }
};

// What one Ingress wants of each of its paths' routes
struct PathWants {
    BackendTls tls;
    bool grpc = false;  // backend-protocol GRPC or GRPCS: GRPCRoutes
    bool use_regex = false;
    std::string backend_timeout;  // HTTPRoute timeouts.backendRequest; "": none
};

// How one Ingress wants its clients' certificates validated (auth-tls-*)
struct ClientAuth {
    enum Mode { Optional, ValidOnly };  // ordered: the stricter last
    Mode mode = ValidOnly;
    std::string ca_namespace, ca_name;
    int depth = 1;
};

// A name of at most 253 bytes: BASE cut to leave room for SUFFIX
std::string object_name(const std::string &base, const std::string &suffix)
{
    return base.substr(0, 253 - suffix.size()) + suffix;
}

// A listener's name for HOST ("*.a.b": wildcard.a.b), after PREFIX
std::string listener_name(const std::string &host, const std::string &prefix = "https-")
{
    if (host.empty()) return "https";
    return object_name(prefix + (host.rfind("*.", 0) == 0 ? "wildcard" + host.substr(1) : host), "");
}

class Converter {
public:
    Converter(const ConvertInput &input, const ConvertOptions &options) : input_(input), options_(options)
    {
        out_.gateway.name = options.gateway_name;
        out_.gateway.namespace_ = options.gateway_namespace;
        out_.gateway.class_name = options.gateway_class;
        out_.gateway.listeners.push_back({"http", "HTTP", 80, "", "", "", -1});
    }

    Conversion run()
    {
        for (const Ingress &in : input_.ingresses) convert(in);
        finish_passthrough();
        finish_client_auth();
        finish_policies();
        finish_grants();
        return std::move(out_);
    }

private:
    const Service *service(const std::string &ns, const std::string &name) const
    {
        for (const Service &s : input_.objects.services) {
            if (s.meta.namespace_ == ns && s.meta.name == name) return &s;
        }
        return nullptr;
    }
    const Secret *secret(const std::string &ns, const std::string &name) const
    {
        for (const Secret &s : input_.objects.secrets) {
            if (s.meta.namespace_ == ns && s.meta.name == name) return &s;
        }
        return nullptr;
    }

    void note(const Ingress &in, const std::string &item, const std::string &value, Outcome o, const std::string &why)
    {
        out_.report.push_back({in.meta.key(), item, value, o, why});
    }

    void convert(const Ingress &in)
    {
        const std::string cls = in.class_name.empty() ? annotation_class(in) : in.class_name;
        if (!cls.empty() && cls != options_.ingress_class) {
            note(in, "spec.ingressClassName", cls, Outcome::Ignored,
                 "not of IngressClass " + options_.ingress_class + ": another controller serves it");
            return;
        }
        Annotations a(in, &out_.report);
        if (a.get("ssl-passthrough")) {
            std::string on = *a.get("ssl-passthrough");
            std::transform(on.begin(), on.end(), on.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            if (on == "true") {
                passthrough(in, a);
                return;
            }
            a.report("ssl-passthrough", Outcome::Converted, "not true: TLS is terminated, as ingress-nginx did");
        }
        PathWants wants;
        wants.tls = backend_tls(in, a, &wants.grpc);
        bool left_out = false;
        const std::optional<ClientAuth> auth = client_auth(in, a, &left_out);
        if (wants.tls.unconverted || left_out) {
            a.report_rest();
            return;
        }
        wants.use_regex = a.is("use-regex", "true", false);
        wants.backend_timeout = backend_timeout(a);
        a.report("use-regex", Outcome::Converted, "paths as RegularExpression (?i)PATH.*: case-insensitive, "
                                                 "anchored at the start, as ingress-nginx's location ~*");
        const std::set<std::string> tls_hosts = tls_hosts_of(in);
        if (!tls_hosts.empty()) {
            client_wishes_.push_back({in.meta.key(), tls_hosts, auth});
        } else if (auth) {
            a.report("auth-tls-secret", Outcome::Differs,
                     "the Ingress names no certificate (spec.tls) for its hosts: it is served over HTTP alone, where "
                     "no client certificate is asked");
        }
        int r = 0;
        for (const IngressRule &rule : in.rules) {
            route(in, a, rule.host, rule.paths, "spec.rules[" + std::to_string(r) + "]",
                  object_name(in.meta.name, "-" + std::to_string(r)), tls_hosts, wants);
            r++;
        }
        if (in.default_backend) {
            IngressPath all{"/", "Prefix", *in.default_backend};
            PathWants plain_prefix = wants;
            plain_prefix.use_regex = false;
            route(in, a, "", {all}, "spec.defaultBackend", object_name(in.meta.name, "-default"), tls_hosts,
                  plain_prefix);
        }
        a.report_rest();
    }

    static std::string annotation_class(const Ingress &in)
    {
        for (const Annotation &a : in.annotations) {
            if (a.key == "kubernetes.io/ingress.class") return a.value;
        }
        return "";
    }

    // The hosts of spec.tls that have a certificate: their HTTPS listeners
    std::set<std::string> tls_hosts_of(const Ingress &in)
    {
        std::set<std::string> hosts;
        int t = 0;
        for (const IngressTls &tls : in.tls) {
            const std::string where = "spec.tls[" + std::to_string(t++) + "]";
            if (tls.secret_name.empty()) {
                note(in, where, "", Outcome::NotConverted,
                     "no secretName: ingress-nginx serves its default certificate, the Gateway has none to serve");
                continue;
            }
            std::vector<std::string> tls_list = tls.hosts.empty() ? std::vector<std::string>{""} : tls.hosts;
            for (const std::string &host : tls_list) {
                if (https_listener(in, where, host, tls.secret_name)) hosts.insert(host);
            }
        }
        return hosts;
    }

    // HOST's HTTPS listener with the Ingress's certificate; false when the
    // host has one with another's
    bool https_listener(const Ingress &in, const std::string &where, const std::string &host, const std::string &secret)
    {
        for (const ListenerOut &l : out_.gateway.listeners) {
            if (l.protocol != "HTTPS" || l.hostname != host) continue;
            if (l.secret_namespace == in.meta.namespace_ && l.secret_name == secret) return true;
            note(in, where, host, Outcome::NotConverted,
                 "the host's certificate is " + l.secret_namespace + "/" + l.secret_name + ", named first by another "
                 "Ingress: one listener, one certificate");
            return false;
        }
        out_.gateway.listeners.push_back({listener_name(host), "HTTPS", 443, host, in.meta.namespace_, secret, -1});
        grant_secret(in.meta.namespace_, secret);
        note(in, where, host.empty() ? secret : host + " " + secret, Outcome::Converted,
             "HTTPS listener " + listener_name(host) + " on 443");
        return true;
    }

    void grant_secret(const std::string &ns, const std::string &name)
    {
        if (ns == options_.gateway_namespace) return;
        granted_[ns].insert(name);
    }

    void finish_grants()
    {
        for (const auto &[ns, secrets] : granted_) {
            out_.grants.push_back({object_name(options_.gateway_name, "-secrets"), ns, options_.gateway_namespace,
                                   {secrets.begin(), secrets.end()}});
        }
    }

    BackendTls backend_tls(const Ingress &in, Annotations &a, bool *grpc)
    {
        BackendTls tls;
        std::string protocol = a.get("backend-protocol").value_or("HTTP");
        std::transform(protocol.begin(), protocol.end(), protocol.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        *grpc = protocol == "GRPC" || protocol == "GRPCS";
        const char *tls_keys[] = {"proxy-ssl-secret", "proxy-ssl-verify", "proxy-ssl-verify-depth", "proxy-ssl-name",
                                  "proxy-ssl-server-name", "proxy-ssl-protocols", "proxy-ssl-ciphers"};
        if (protocol == "HTTP" || protocol == "GRPC") {
            a.report("backend-protocol", Outcome::Converted,
                     protocol == "HTTP" ? "plain HTTP to the backend, as a backendRef is"
                                        : "GRPCRoutes, over cleartext HTTP/2 (h2c) to the backend");
            for (const char *key : tls_keys) {
                a.report(key, Outcome::Ignored, "the backend is not reached over TLS: ingress-nginx did not use it either");
            }
            return tls;
        }
        if (protocol != "HTTPS" && protocol != "GRPCS") {
            a.report("backend-protocol", Outcome::NotConverted,
                     protocol + " backends are not converted by this version: its routes are left out");
            tls.unconverted = true;
            return tls;
        }
        tls.tls = true;
        a.report("backend-protocol", Outcome::Converted,
                 protocol == "HTTPS" ? "a BackendTLSPolicy for each Service the Ingress reaches"
                                     : "GRPCRoutes, and a BackendTLSPolicy for each Service the Ingress reaches");
        if (std::optional<std::string> name = a.get("proxy-ssl-name")) {
            if (valid_hostname(*name, false)) {
                tls.hostname = *name;
                a.report("proxy-ssl-name", Outcome::Converted, "the policy's hostname");
            } else {
                a.report("proxy-ssl-name", Outcome::NotConverted,
                         "not a hostname (nginx variables are not converted): the Service's name is verified instead");
            }
        }
        if (tls.hostname.empty()) {
            a.report("proxy-ssl-name", Outcome::Differs,
                     "unset: ingress-nginx verified the upstream's name ($proxy_host), which no certificate names; "
                     "the policy's hostname is the Service's cluster name, SERVICE.NAMESPACE.svc",
                     true);
        }
        a.report("proxy-ssl-server-name", a.is("proxy-ssl-server-name", "on", false) ? Outcome::Converted : Outcome::Differs,
                 a.is("proxy-ssl-server-name", "on", false)
                     ? "SNI is the policy's hostname"
                     : "ingress-nginx sent no SNI; Gateway API always sends the policy's hostname", true);
        if (std::optional<std::string> ref = a.get("proxy-ssl-secret")) backend_secret(in, a, *ref, &tls);
        const bool verify = a.is("proxy-ssl-verify", "on", false);
        if (verify && !tls.ca_secret.empty()) {
            tls.skip_verify = false;
            a.report("proxy-ssl-verify", Outcome::Converted, "the backend's certificate verified against ca.crt");
        } else if (verify) {
            tls.skip_verify = false;
            a.report("proxy-ssl-verify", Outcome::NotConverted,
                     "on with no CA in this namespace to verify against: the backends fail closed (502) until one is "
                     "given");
        } else {
            a.report("proxy-ssl-verify", Outcome::Differs,
                     options_.strict_backends
                         ? "off: InsecureSkipVerification, refused by the Gateway (--strict-backends): these backends "
                           "get 502 until the operator allows it or a CA is given"
                         : "off: InsecureSkipVerification (GEP-4152), audited in nginx's log; the Gateway allows it "
                           "(spec.tls.backend.validation.mode AllowInsecureVerification) for this Ingress's sake",
                     true);
            if (!options_.strict_backends) out_.gateway.allows_insecure_backends = true;
            tls.ca_secret.clear();
        }
        a.report("proxy-ssl-verify-depth", Outcome::Differs,
                 "the module verifies chains up to 10 certificates deep, whatever the depth asked");
        a.report("proxy-ssl-protocols", Outcome::NotConverted,
                 "BackendTLSPolicy has no protocols: the Gateway's nginx offers TLSv1.2 and TLSv1.3");
        a.report("proxy-ssl-ciphers", Outcome::NotConverted,
                 "BackendTLSPolicy has no ciphers: the Gateway's nginx offers its defaults");
        return tls;
    }

    void backend_secret(const Ingress &in, Annotations &a, const std::string &ref, BackendTls *tls)
    {
        const size_t slash = ref.find('/');
        const std::string ns = slash == std::string::npos ? in.meta.namespace_ : ref.substr(0, slash);
        const std::string name = slash == std::string::npos ? ref : ref.substr(slash + 1);
        if (!valid_dns1123_label(ns) || !valid_dns1123_subdomain(name)) {
            a.report("proxy-ssl-secret", Outcome::NotConverted, "not NAMESPACE/NAME of a Secret");
            return;
        }
        const Secret *s = secret(ns, name);
        std::vector<std::string> notes;
        Outcome outcome = Outcome::Converted;
        if (s == nullptr || s->data.count("ca.crt")) {
            if (ns == in.meta.namespace_) {
                tls->ca_secret = name;
                notes.push_back("ca.crt: the policy's caCertificateRefs");
            } else {
                outcome = Outcome::NotConverted;
                notes.push_back("ca.crt: a policy's CA is in its own namespace (" + in.meta.namespace_
                                + "): copy the Secret there");
            }
        }
        if (s == nullptr) {
            if (worse(Outcome::Differs, outcome)) outcome = Outcome::Differs;
            notes.push_back("the Secret is not among the inputs: a client certificate (tls.crt) in it is not converted");
        } else if (s->data.count("tls.crt") && s->data.count("tls.key")) {
            GatewayOut &gw = out_.gateway;
            if (gw.client_certificate_name.empty()) {
                gw.client_certificate_namespace = ns;
                gw.client_certificate_name = name;
                grant_secret(ns, name);
                notes.push_back("tls.crt: the Gateway's backend client certificate (every backend is shown it)");
                if (worse(Outcome::Differs, outcome)) outcome = Outcome::Differs;
            } else if (gw.client_certificate_namespace == ns && gw.client_certificate_name == name) {
                notes.push_back("tls.crt: the Gateway's backend client certificate (every backend is shown it)");
                if (worse(Outcome::Differs, outcome)) outcome = Outcome::Differs;
            } else if (ns == in.meta.namespace_) {
                tls->client_secret = name;
                notes.push_back("tls.crt: the policy's own client certificate (option "
                                "gateway2nginx.io/client-certificate), over the Gateway's");
            } else {
                outcome = Outcome::NotConverted;
                notes.push_back("tls.crt: the Gateway shows " + gw.client_certificate_namespace + "/"
                                + gw.client_certificate_name + ", and a policy's own client certificate is in its "
                                "namespace (" + in.meta.namespace_ + "): copy the Secret there");
            }
        }
        std::string joined;
        for (const std::string &n : notes) joined += (joined.empty() ? "" : "; ") + n;
        a.report("proxy-ssl-secret", outcome, joined);
    }

    // ssl-passthrough: a TLS listener (Passthrough) on 443 per rule host and
    // a TLSRoute to the backend of the rule's first path, the TLS untouched;
    // ingress-nginx ignores every other annotation and spec.tls then
    void passthrough(const Ingress &in, Annotations &a)
    {
        a.report("ssl-passthrough", Outcome::Converted,
                 "a TLS listener (Passthrough) on 443 per host and a TLSRoute: the client's TLS reaches the backend "
                 "untouched");
        int r = 0;
        for (const IngressRule &rule : in.rules) {
            const std::string at = "spec.rules[" + std::to_string(r++) + "]";
            if (rule.host.empty() || rule.host.rfind("*.", 0) == 0 || rule.paths.empty()) {
                note(in, at, rule.host, Outcome::NotConverted,
                     "passthrough routes a connection by its SNI alone: a rule needs a host that is not a wildcard, "
                     "and a path's backend");
                continue;
            }
            if (rule.paths.size() > 1) {
                note(in, at + ".http.paths", std::to_string(rule.paths.size()), Outcome::Differs,
                     "the first path's backend takes every connection: passthrough sees no path, as ingress-nginx");
            }
            const IngressBackend &b = rule.paths.front().backend;
            const int port = service_port(in.meta.namespace_, b);
            if (port == 0) {
                note(in, at + ".http.paths[0].backend", b.service + ":" + b.port_name, Outcome::NotConverted,
                     "the Service's port " + b.port_name + " is not known (give the Service as input): the host is "
                     "left out");
                continue;
            }
            if (!passthrough_hosts_.emplace(rule.host, in.meta.key()).second) {
                note(in, at, rule.host, Outcome::NotConverted,
                     "Ingress " + passthrough_hosts_[rule.host] + " passes the host through already: one backend per "
                     "SNI");
                continue;
            }
            RouteOut route{RouteKind::TLS, "", object_name(in.meta.name, "-" + std::to_string(r - 1)),
                           in.meta.namespace_, {listener_name(rule.host, "tls-")}, rule.host, {}};
            RuleOut to_backend;
            to_backend.backend = BackendOut{b.service, port};
            route.rules.push_back(to_backend);
            out_.routes.push_back(std::move(route));
        }
        for (const Annotation &other : in.annotations) {
            const std::string key = other.key.substr(std::min(other.key.size(), std::char_traits<char>::length(kAnnotationPrefix)));
            if (other.key.rfind(kAnnotationPrefix, 0) == 0 && key != "ssl-passthrough") {
                a.report(key, Outcome::Ignored, "ssl-passthrough: ingress-nginx ignored it too, the TLS not being its");
            }
        }
        for (size_t t = 0; t < in.tls.size(); t++) {
            note(in, "spec.tls[" + std::to_string(t) + "]", in.tls[t].secret_name, Outcome::Ignored,
                 "ssl-passthrough: the backend's own certificate is what clients see");
        }
        a.report_rest();
    }

    // The passthrough hosts' listeners: on the Gateway, or, when it serves
    // HTTPS on 443, on a Gateway of their own (one protocol per port)
    void finish_passthrough()
    {
        if (passthrough_hosts_.empty()) return;
        const bool https = std::any_of(out_.gateway.listeners.begin(), out_.gateway.listeners.end(),
                                       [](const ListenerOut &l) { return l.protocol == "HTTPS"; });
        GatewayOut *gw = &out_.gateway;
        if (https && options_.passthrough_address.empty()) {
            for (const auto &[host, ingress] : passthrough_hosts_) {
                out_.report.push_back({ingress, "listener " + listener_name(host, "tls-"), host, Outcome::NotConverted,
                                       "the Gateway serves HTTPS on 443 and a port has one protocol: the host is left "
                                       "out (--passthrough-address gives its own Gateway an address)"});
            }
            out_.routes.erase(std::remove_if(out_.routes.begin(), out_.routes.end(),
                                             [](const RouteOut &r) { return r.kind == RouteKind::TLS; }),
                              out_.routes.end());
            return;
        }
        if (https) {
            out_.passthrough = GatewayOut{};
            gw = &*out_.passthrough;
            gw->name = object_name(options_.gateway_name, "-passthrough");
            gw->namespace_ = options_.gateway_namespace;
            gw->class_name = options_.gateway_class;
            gw->address = options_.passthrough_address;
        }
        for (const auto &[host, ingress] : passthrough_hosts_) {
            gw->listeners.push_back({listener_name(host, "tls-"), "TLS", 443, host, "", "", -1});
            if (https) {
                out_.report.push_back({ingress, "listener " + listener_name(host, "tls-"), host, Outcome::Differs,
                                       "on Gateway " + gw->name + " at " + gw->address + ": the Gateway serves HTTPS "
                                       "on 443, and a port has one protocol (point the host's DNS there)"});
            }
        }
        for (RouteOut &r : out_.routes) {
            if (r.kind == RouteKind::TLS) r.gateway = gw->name;
        }
    }

    // proxy-*-timeout (seconds) as HTTPRoute's backendRequest timeout, which
    // gateway2nginx renders as the bound of each wait of a backend exchange
    // (connect, each write, each read): the longest of the three
    std::string backend_timeout(Annotations &a)
    {
        // ingress-nginx's defaults
        const std::pair<const char *, long> waits[] = {
            {"proxy-connect-timeout", 5}, {"proxy-send-timeout", 60}, {"proxy-read-timeout", 60}};
        std::set<long> asked;
        long longest = 0;
        bool any = false;
        for (const auto &[key, fallback] : waits) {
            long seconds = fallback;
            if (std::optional<std::string> v = a.get(key)) {
                if (!v->empty() && v->size() <= 6 && v->find_first_not_of("0123456789") == std::string::npos) {
                    seconds = std::stol(*v);
                    any = true;
                } else {
                    a.report(key, Outcome::NotConverted, "not a number of seconds: nginx's default bounds this wait");
                }
            }
            asked.insert(seconds);
            longest = std::max(longest, seconds);
        }
        if (!any) return "";
        const std::string value = std::to_string(longest) + "s";
        for (const auto &wait : waits) {
            a.report(wait.first, asked.size() == 1 ? Outcome::Converted : Outcome::Differs,
                     asked.size() == 1
                         ? "HTTPRoute timeouts.backendRequest " + value + ": it bounds each wait of a backend exchange"
                         : "HTTPRoute timeouts.backendRequest " + value + " bounds each wait of a backend exchange "
                               "(connect, send, read): the longest asked, ingress-nginx's defaults (5, 60, 60) where "
                               "unset",
                     true);
        }
        return value;
    }

    // The auth-tls-* annotations of IN; none when no client certificate is
    // asked. LEFT_OUT: what is asked cannot be honoured, and serving the
    // routes without it would admit clients ingress-nginx refused.
    std::optional<ClientAuth> client_auth(const Ingress &in, Annotations &a, bool *left_out)
    {
        const char *keys[] = {"auth-tls-secret", "auth-tls-verify-client", "auth-tls-verify-depth",
                              "auth-tls-pass-certificate-to-upstream", "auth-tls-match-cn", "auth-tls-error-page"};
        const std::optional<std::string> ref = a.get("auth-tls-secret");
        const std::string verify = a.get("auth-tls-verify-client").value_or("on");
        if (!ref || verify == "off") {
            if (ref) a.report("auth-tls-verify-client", Outcome::Converted, "off: no client certificate is asked");
            for (const char *key : keys) {
                a.report(key, Outcome::Ignored, !ref ? "no auth-tls-secret: ingress-nginx asked no client certificate "
                                                       "either"
                                                     : "auth-tls-verify-client off: ingress-nginx asked no client "
                                                       "certificate either");
            }
            return std::nullopt;
        }
        ClientAuth auth;
        const size_t slash = ref->find('/');
        auth.ca_namespace = slash == std::string::npos ? in.meta.namespace_ : ref->substr(0, slash);
        auth.ca_name = slash == std::string::npos ? *ref : ref->substr(slash + 1);
        const Secret *s = secret(auth.ca_namespace, auth.ca_name);
        if (!valid_dns1123_label(auth.ca_namespace) || !valid_dns1123_subdomain(auth.ca_name)
            || (s != nullptr && !s->data.count("ca.crt"))) {
            a.report("auth-tls-secret", Outcome::NotConverted,
                     s == nullptr ? "not NAMESPACE/NAME of a Secret: the Ingress's routes are left out, as no client "
                                    "can be validated"
                                  : "the Secret holds no ca.crt: the Ingress's routes are left out, as no client can "
                                    "be validated");
            *left_out = true;
        } else if (s == nullptr) {
            a.report("auth-tls-secret", Outcome::Differs,
                     "ca.crt: the Gateway's frontend validation (spec.tls.frontend.default), for port 443; the Secret "
                     "is not among the inputs: without a ca.crt there, every HTTPS listener of 443 is refused");
        } else {
            a.report("auth-tls-secret", Outcome::Converted,
                     "ca.crt: the Gateway's frontend validation (spec.tls.frontend.default), for port 443");
        }
        if (verify == "optional" || verify == "optional_no_ca") {
            auth.mode = ClientAuth::Optional;
            a.report("auth-tls-verify-client", Outcome::Differs,
                     "AllowInsecureFallback: every client is served, with or without a certificate, valid or not; "
                     "the backend is told nothing of it (ingress-nginx's " + verify + " passed ssl-client-verify)");
        } else {
            a.report("auth-tls-verify-client", Outcome::Converted,
                     verify == "on" ? "AllowValidOnly: a client without a valid certificate fails the TLS handshake "
                                      "(ingress-nginx answered 400)"
                                    : "not a value ingress-nginx knows, which then verifies as on: AllowValidOnly",
                     true);
        }
        const std::string depth = a.get("auth-tls-verify-depth").value_or("1");
        if (!depth.empty() && depth.size() <= 2 && depth.find_first_not_of("0123456789") == std::string::npos
            && std::stoi(depth) <= kMaxClientVerifyDepth) {
            auth.depth = std::stoi(depth);
            a.report("auth-tls-verify-depth", Outcome::Converted,
                     "the HTTPS listeners' option gateway2nginx.io/client-verify-depth " + depth, true);
        } else {
            a.report("auth-tls-verify-depth", Outcome::Differs,
                     "not a depth from 0 to " + std::to_string(kMaxClientVerifyDepth) + ": 1, ingress-nginx's default");
        }
        a.report("auth-tls-pass-certificate-to-upstream",
                 a.is("auth-tls-pass-certificate-to-upstream", "true", false) ? Outcome::NotConverted
                                                                              : Outcome::Converted,
                 a.is("auth-tls-pass-certificate-to-upstream", "true", false)
                     ? "no Gateway API filter sends the client certificate upstream: the backend gets none"
                     : "false: the backend gets no certificate, as ingress-nginx");
        if (a.get("auth-tls-match-cn")) {
            a.report("auth-tls-match-cn", Outcome::NotConverted,
                     "Gateway API matches no subject, and the routes would admit every client the CA signs: the "
                     "Ingress's routes are left out; pin the admitted clients (trustedCertificateHashes, GEP-4078)");
            a.report("auth-tls-secret", Outcome::NotConverted, "the Ingress is left out (auth-tls-match-cn)");
            *left_out = true;
        }
        a.report("auth-tls-error-page", Outcome::NotConverted,
                 "a refused client fails the TLS handshake: there is no page to redirect it to");
        return auth;
    }

    // Gateway API validates clients per port: one validation for 443, the
    // strictest any Ingress asked, with every CA asked; the Ingresses it
    // does not suit are told so
    void finish_client_auth()
    {
        const ClientWish *strictest = nullptr;
        std::set<std::pair<std::string, std::string>> cas;
        for (const ClientWish &w : client_wishes_) {
            if (!w.auth) continue;
            if (strictest == nullptr || w.auth->mode > strictest->auth->mode) strictest = &w;
            cas.emplace(w.auth->ca_namespace, w.auth->ca_name);
        }
        if (strictest == nullptr) return;
        const ClientAuth &chosen = *strictest->auth;
        out_.gateway.frontend = FrontendOut{{cas.begin(), cas.end()}, chosen.mode == ClientAuth::Optional};
        for (const auto &[ns, name] : cas) grant_secret(ns, name);
        const std::string by = "Ingress " + strictest->ingress;
        for (const ClientWish &w : client_wishes_) {
            if (!w.auth) {
                out_.report.push_back({w.ingress, "client certificates", "", Outcome::NotConverted,
                                       "port 443 asks every client for a certificate, as " + by + " asks: Gateway "
                                       "API validates clients per port, not per host, so this Ingress's hosts ask "
                                       "too"});
                continue;
            }
            if (w.auth->mode != chosen.mode) {
                out_.report.push_back({w.ingress, "client certificates", "", Outcome::NotConverted,
                                       "port 443 validates clients as " + by + " asks (AllowValidOnly): one "
                                       "validation per port"});
            } else if (cas.size() > 1) {
                out_.report.push_back({w.ingress, "client certificates", "", Outcome::Differs,
                                       "port 443 admits clients of every CA the Ingresses name ("
                                           + std::to_string(cas.size()) + "): one validation per port"});
            }
            for (ListenerOut &l : out_.gateway.listeners) {
                if (l.protocol != "HTTPS" || !w.hosts.count(l.hostname)) continue;
                if (l.client_verify_depth < 0) {
                    l.client_verify_depth = w.auth->depth;
                } else if (l.client_verify_depth != w.auth->depth) {
                    out_.report.push_back({w.ingress, "nginx.ingress.kubernetes.io/auth-tls-verify-depth",
                                           std::to_string(w.auth->depth), Outcome::NotConverted,
                                           "the listener " + l.name + " verifies " + std::to_string(l.client_verify_depth)
                                               + " deep, as another Ingress of the host asks"});
                }
            }
        }
    }

    // The Service port PORT of an Ingress backend; 0 when it cannot be known
    int service_port(const std::string &ns, const IngressBackend &b) const
    {
        if (b.port_number != 0) return b.port_number;
        if (const Service *s = service(ns, b.service)) {
            for (const ServicePort &p : s->ports) {
                if (p.name == b.port_name) return p.port;
            }
        }
        return 0;
    }

    // What Ingress IN wants of SERVICE; decided once every Ingress is read
    void policy_for(const Ingress &in, const std::string &service, const BackendTls &tls)
    {
        std::vector<std::pair<std::string, BackendTls>> &wants = policies_[in.meta.namespace_ + "/" + service];
        if (std::none_of(wants.begin(), wants.end(), [&](const auto &w) { return w.first == in.meta.key() && w.second == tls; })) {
            wants.emplace_back(in.meta.key(), tls);
        }
    }

    // How much of TLS's verification is kept: what wins where Ingresses
    // differ over a Service (a port is TLS or not for every client)
    static int strength(const BackendTls &tls) { return !tls.tls ? 0 : tls.skip_verify ? 1 : 2; }

    // One policy per Service, the strongest any Ingress asked for; every
    // other Ingress's wish reported as not converted
    void finish_policies()
    {
        for (const auto &[key, wants] : policies_) {
            const auto chosen = std::max_element(wants.begin(), wants.end(), [](const auto &a, const auto &b) {
                return strength(a.second) < strength(b.second);
            });
            for (const auto &[ingress, tls] : wants) {
                if (tls == chosen->second) continue;
                out_.report.push_back({ingress, "backend " + key, "", Outcome::NotConverted,
                                       "Service " + key + " is reached as Ingress " + chosen->first
                                           + " asks, which verifies more: one BackendTLSPolicy per Service"});
            }
            const BackendTls &tls = chosen->second;
            if (!tls.tls) continue;
            const size_t slash = key.find('/');
            PolicyOut p;
            p.namespace_ = key.substr(0, slash);
            p.service = key.substr(slash + 1);
            p.name = object_name(p.service, "-backend-tls");
            p.hostname = tls.hostname.empty() ? p.service + "." + p.namespace_ + ".svc" : tls.hostname;
            p.ca_secret = tls.ca_secret;
            p.client_secret = tls.client_secret;
            p.skip_verify = tls.skip_verify;
            out_.policies.push_back(std::move(p));
        }
    }

    MatchOut match_of(const IngressPath &p, bool use_regex) const
    {
        if (p.path_type == "Exact") return {"Exact", p.path, "", ""};
        if (use_regex) return {"RegularExpression", "(?i)" + p.path + ".*", "", ""};
        return {"PathPrefix", p.path, "", ""};
    }

    // A gRPC path as GRPCRoute matches it: / (every call), /SERVICE or
    // /SERVICE/METHOD; none for another path
    static std::optional<MatchOut> grpc_match_of(const IngressPath &p, bool use_regex)
    {
        static const std::regex service_method(R"(^/(\.?[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*)(?:/([A-Za-z_][A-Za-z_0-9]*))?/?$)");
        std::smatch m;
        if (use_regex) return std::nullopt;
        if (p.path == "/" && p.path_type != "Exact") return MatchOut{"GRPC", "", "", ""};
        if (!std::regex_match(p.path, m, service_method)) return std::nullopt;
        if (p.path_type == "Exact" && !m[2].matched) return std::nullopt;  // no call has that path
        return MatchOut{"GRPC", "", m[1].str(), m[2].str()};
    }

    void route(const Ingress &in, Annotations &a, const std::string &host, const std::vector<IngressPath> &paths,
               const std::string &where, const std::string &name, const std::set<std::string> &tls_hosts,
               const PathWants &wants)
    {
        const bool use_regex = wants.use_regex;
        const bool has_tls = tls_hosts.count(host) > 0;
        const bool ssl_redirect = a.is("ssl-redirect", "true", true);
        const bool force = a.is("force-ssl-redirect", "true", false);
        const bool redirect = (has_tls && ssl_redirect) || force;
        if (has_tls) {
            a.report("ssl-redirect", Outcome::Converted,
                     ssl_redirect ? "HTTP requests redirected to HTTPS (308) by a route on the HTTP listener"
                                  : "false: the route is served on the HTTP listener too", true);
        }
        a.report("force-ssl-redirect", force && !has_tls ? Outcome::Differs : Outcome::Converted,
                 !force ? "false: as ingress-nginx"
                 : has_tls ? "HTTP requests redirected to HTTPS (308)"
                           : "HTTP requests redirected to HTTPS (308); the Ingress names no certificate for the host, "
                             "so HTTPS is served only where another Ingress gives this Gateway one");
        RouteOut r;
        r.kind = wants.grpc ? RouteKind::GRPC : RouteKind::HTTP;
        r.gateway = options_.gateway_name;
        r.name = name;
        r.namespace_ = in.meta.namespace_;
        r.hostname = host;
        if (has_tls) r.sections.push_back(listener_name(host));
        if (!redirect || !has_tls) r.sections.push_back("http");
        if (redirect && !has_tls) r.sections.clear();  // force-ssl-redirect without a certificate here
        RouteOut redirect_route{RouteKind::HTTP, options_.gateway_name, object_name(name, "-redirect"),
                                in.meta.namespace_, {"http"}, host, {}};
        int p = 0;
        for (const IngressPath &path : paths) {
            const std::string at = where + (where == "spec.defaultBackend" ? "" : ".http.paths[" + std::to_string(p) + "]");
            p++;
            RuleOut rule;
            rule.match = match_of(path, use_regex);
            if (wants.grpc) {
                std::optional<MatchOut> call = grpc_match_of(path, use_regex);
                if (!call) {
                    note(in, at + ".path", path.path, Outcome::NotConverted,
                         "not a gRPC path GRPCRoute matches (/, /SERVICE, /SERVICE/METHOD): the path is left out");
                    continue;
                }
                rule.match = *call;
            }
            if (path.path_type == "ImplementationSpecific" && !use_regex) {
                note(in, at + ".pathType", "ImplementationSpecific", Outcome::Differs,
                     "as PathPrefix: " + path.path + " matches " + path.path + " and " + path.path
                         + "/..., not longer words as nginx's location " + path.path + " did");
            }
            const int port = service_port(in.meta.namespace_, path.backend);
            if (port == 0) {
                note(in, at + ".backend", path.backend.service + ":" + path.backend.port_name, Outcome::NotConverted,
                     "the Service's port " + path.backend.port_name + " is not known (give the Service as input): "
                     "the path is left out");
                continue;
            }
            rule.backend = BackendOut{path.backend.service, port};
            if (wants.grpc) {
                for (const char *key : {"rewrite-target", "upstream-vhost", "proxy-connect-timeout", "proxy-send-timeout",
                                        "proxy-read-timeout"}) {
                    a.report(key, Outcome::NotConverted, "GRPCRoute has no rewrite and no timeouts");
                }
            } else {
                rewrites(in, a, path, use_regex, &rule);
                rule.backend_timeout = wants.backend_timeout;
            }
            policy_for(in, path.backend.service, wants.tls);
            if (redirect) {
                RuleOut to_https;
                to_https.match = match_of(path, use_regex);
                to_https.redirect_scheme = "https";
                redirect_route.rules.push_back(to_https);
            }
            r.rules.push_back(std::move(rule));
        }
        if (!r.sections.empty() && !r.rules.empty()) out_.routes.push_back(std::move(r));
        if (!redirect_route.rules.empty()) out_.routes.push_back(std::move(redirect_route));
    }

    void rewrites(const Ingress &, Annotations &a, const IngressPath &path, bool use_regex, RuleOut *rule)
    {
        if (std::optional<std::string> host = a.get("upstream-vhost")) {
            if (valid_hostname(*host, false)) {
                rule->rewrite_hostname = *host;
                a.report("upstream-vhost", Outcome::Converted, "URLRewrite hostname");
            } else {
                a.report("upstream-vhost", Outcome::NotConverted, "not a hostname (nginx variables are not converted)");
            }
        }
        std::optional<std::string> target = a.get("rewrite-target");
        if (!target) return;
        static const std::regex strip_prefix(R"(^(/[^()$\\*+?\[\]{}|^]*?)\(/\|\$\)\(\.\*\)$)");
        std::smatch m;
        const bool plain = std::none_of(target->begin(), target->end(), [](char c) {
            return static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '$';
        });
        if (plain && !target->empty() && (*target)[0] == '/' && target->size() <= 1024) {
            rule->rewrite_full_path = *target;
            a.report("rewrite-target", Outcome::Converted, "URLRewrite ReplaceFullPath: every matched path becomes it, "
                                                           "as nginx's rewrite did");
        } else if (use_regex && *target == "/$2" && std::regex_match(path.path, m, strip_prefix)) {
            rule->match = {"PathPrefix", m[1].str().empty() ? "/" : m[1].str(), "", ""};
            rule->rewrite_prefix = "/";
            a.report("use-regex", Outcome::Differs, "the path PREFIX(/|$)(.*) is PathPrefix PREFIX: it matches "
                                                   "case-sensitively, ingress-nginx's location ~* did not");
            a.report("rewrite-target", Outcome::Converted,
                     "PREFIX(/|$)(.*) to /$2: PathPrefix PREFIX with URLRewrite ReplacePrefixMatch /");
        } else {
            a.report("rewrite-target", Outcome::NotConverted,
                     "captures other than PREFIX(/|$)(.*) to /$2 have no Gateway API filter: the path is served "
                     "without the rewrite");
        }
    }

    const ConvertInput &input_;
    const ConvertOptions &options_;
    Conversion out_;
    std::map<std::string, std::set<std::string>> granted_;  // by namespace
    // Ingresses served over HTTPS, their hosts there, and what they ask of clients
    struct ClientWish {
        std::string ingress;
        std::set<std::string> hosts;
        std::optional<ClientAuth> auth;
    };
    std::vector<ClientWish> client_wishes_;
    std::map<std::string, std::string> passthrough_hosts_;  // host: the Ingress passing it through
    std::map<std::string, std::vector<std::pair<std::string, BackendTls>>> policies_;  // by namespace/Service: who asked what
};

}  // namespace

Conversion convert_ingresses(const ConvertInput &input, const ConvertOptions &options)
{
    return Converter(input, options).run();
}

}  // namespace g2n::convert
