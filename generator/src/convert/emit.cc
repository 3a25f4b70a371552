#include "convert/emit.h"

#include <yaml-cpp/yaml.h>

#include <map>

#include "parse/parse.h"

namespace g2n::convert {

namespace {

void metadata(YAML::Emitter &out, const std::string &name, const std::string &ns)
{
    out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << name;
    out << YAML::Key << "namespace" << YAML::Value << ns;
    out << YAML::EndMap;
}

void head(YAML::Emitter &out, const char *api_version, const char *kind, const std::string &name, const std::string &ns)
{
    out << YAML::BeginDoc << YAML::BeginMap;
    out << YAML::Key << "apiVersion" << YAML::Value << api_version;
    out << YAML::Key << "kind" << YAML::Value << kind;
    metadata(out, name, ns);
}

void secret_ref(YAML::Emitter &out, const std::string &name, const std::string &ns)
{
    out << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << "Secret";
    out << YAML::Key << "name" << YAML::Value << name;
    if (!ns.empty()) out << YAML::Key << "namespace" << YAML::Value << ns;
    out << YAML::EndMap;
}

void gateway(YAML::Emitter &out, const GatewayOut &gw)
{
    head(out, "gateway.networking.k8s.io/v1", "Gateway", gw.name, gw.namespace_);
    out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "gatewayClassName" << YAML::Value << gw.class_name;
    if (!gw.address.empty()) {
        out << YAML::Key << "addresses" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "type"
            << YAML::Value << "IPAddress" << YAML::Key << "value" << YAML::Value << YAML::DoubleQuoted << gw.address
            << YAML::EndMap << YAML::EndSeq;
    }
    out << YAML::Key << "listeners" << YAML::Value << YAML::BeginSeq;
    for (const ListenerOut &l : gw.listeners) {
        out << YAML::BeginMap;
        out << YAML::Key << "name" << YAML::Value << l.name;
        out << YAML::Key << "port" << YAML::Value << l.port;
        out << YAML::Key << "protocol" << YAML::Value << l.protocol;
        if (!l.hostname.empty()) out << YAML::Key << "hostname" << YAML::Value << YAML::DoubleQuoted << l.hostname;
        if (l.protocol == "TLS") {
            out << YAML::Key << "tls" << YAML::Value << YAML::BeginMap << YAML::Key << "mode" << YAML::Value
                << "Passthrough" << YAML::EndMap;
        }
        if (l.protocol == "HTTPS") {
            out << YAML::Key << "tls" << YAML::Value << YAML::BeginMap;
            out << YAML::Key << "mode" << YAML::Value << "Terminate";
            out << YAML::Key << "certificateRefs" << YAML::Value << YAML::BeginSeq;
            secret_ref(out, l.secret_name, l.secret_namespace == gw.namespace_ ? "" : l.secret_namespace);
            out << YAML::EndSeq;
            if (l.client_verify_depth >= 0) {
                out << YAML::Key << "options" << YAML::Value << YAML::BeginMap << YAML::Key
                    << "gateway2nginx.io/client-verify-depth" << YAML::Value << YAML::DoubleQuoted
                    << std::to_string(l.client_verify_depth) << YAML::EndMap;
            }
            out << YAML::EndMap;
        }
        out << YAML::Key << "allowedRoutes" << YAML::Value << YAML::BeginMap << YAML::Key << "namespaces"
            << YAML::Value << YAML::BeginMap << YAML::Key << "from" << YAML::Value << "All" << YAML::EndMap
            << YAML::EndMap;
        out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    const bool backend = gw.allows_insecure_backends || !gw.client_certificate_name.empty();
    if (backend || gw.frontend) out << YAML::Key << "tls" << YAML::Value << YAML::BeginMap;
    if (gw.frontend) {
        out << YAML::Key << "frontend" << YAML::Value << YAML::BeginMap << YAML::Key << "default" << YAML::Value
            << YAML::BeginMap << YAML::Key << "validation" << YAML::Value << YAML::BeginMap;
        out << YAML::Key << "caCertificateRefs" << YAML::Value << YAML::BeginSeq;
        for (const auto &[ns, name] : gw.frontend->ca_secrets) {
            out << YAML::BeginMap << YAML::Key << "group" << YAML::Value << YAML::DoubleQuoted << "" << YAML::Key
                << "kind" << YAML::Value << "Secret" << YAML::Key << "name" << YAML::Value << name;
            if (ns != gw.namespace_) out << YAML::Key << "namespace" << YAML::Value << ns;
            out << YAML::EndMap;
        }
        out << YAML::EndSeq;
        out << YAML::Key << "mode" << YAML::Value
            << (gw.frontend->insecure_fallback ? "AllowInsecureFallback" : "AllowValidOnly");
        out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
    }
    if (backend) {
        out << YAML::Key << "backend" << YAML::Value << YAML::BeginMap;
        if (!gw.client_certificate_name.empty()) {
            out << YAML::Key << "clientCertificateRef" << YAML::Value;
            secret_ref(out, gw.client_certificate_name, gw.client_certificate_namespace);
        }
        if (gw.allows_insecure_backends) {
            out << YAML::Key << "validation" << YAML::Value << YAML::BeginMap << YAML::Key << "mode" << YAML::Value
                << "AllowInsecureVerification" << YAML::EndMap;
        }
        out << YAML::EndMap;
    }
    if (backend || gw.frontend) out << YAML::EndMap;
    out << YAML::EndMap << YAML::EndMap;
}

void route(YAML::Emitter &out, const RouteOut &r, const GatewayOut &gw)
{
    const char *kind = r.kind == RouteKind::GRPC ? "GRPCRoute" : r.kind == RouteKind::TLS ? "TLSRoute" : "HTTPRoute";
    head(out, "gateway.networking.k8s.io/v1", kind, r.name, r.namespace_);
    out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "parentRefs" << YAML::Value << YAML::BeginSeq;
    for (const std::string &section : r.sections) {
        out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << r.gateway;
        out << YAML::Key << "namespace" << YAML::Value << gw.namespace_;
        out << YAML::Key << "sectionName" << YAML::Value << section << YAML::EndMap;
    }
    out << YAML::EndSeq;
    if (!r.hostname.empty()) {
        out << YAML::Key << "hostnames" << YAML::Value << YAML::BeginSeq << YAML::DoubleQuoted << r.hostname
            << YAML::EndSeq;
    }
    out << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
    for (const RuleOut &rule : r.rules) {
        out << YAML::BeginMap;
        if (r.kind == RouteKind::TLS) {
            // no matches: the SNI alone chose the route
        } else if (rule.match.type != "GRPC") {
            out << YAML::Key << "matches" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "path"
                << YAML::Value << YAML::BeginMap << YAML::Key << "type" << YAML::Value << rule.match.type << YAML::Key
                << "value" << YAML::Value << YAML::DoubleQuoted << rule.match.value << YAML::EndMap << YAML::EndMap
                << YAML::EndSeq;
        } else if (!rule.match.service.empty()) {
            out << YAML::Key << "matches" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "method"
                << YAML::Value << YAML::BeginMap << YAML::Key << "service" << YAML::Value << rule.match.service;
            if (!rule.match.method.empty()) out << YAML::Key << "method" << YAML::Value << rule.match.method;
            out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
        }
        const bool rewrite = !rule.rewrite_full_path.empty() || !rule.rewrite_prefix.empty()
                             || !rule.rewrite_hostname.empty();
        if (!rule.redirect_scheme.empty() || rewrite) {
            out << YAML::Key << "filters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
            if (!rule.redirect_scheme.empty()) {
                out << YAML::Key << "type" << YAML::Value << "RequestRedirect";
                out << YAML::Key << "requestRedirect" << YAML::Value << YAML::BeginMap << YAML::Key << "scheme"
                    << YAML::Value << rule.redirect_scheme << YAML::Key << "statusCode" << YAML::Value << 308
                    << YAML::EndMap;
            } else {
                out << YAML::Key << "type" << YAML::Value << "URLRewrite";
                out << YAML::Key << "urlRewrite" << YAML::Value << YAML::BeginMap;
                if (!rule.rewrite_hostname.empty()) {
                    out << YAML::Key << "hostname" << YAML::Value << rule.rewrite_hostname;
                }
                if (!rule.rewrite_full_path.empty() || !rule.rewrite_prefix.empty()) {
                    const bool full = !rule.rewrite_full_path.empty();
                    out << YAML::Key << "path" << YAML::Value << YAML::BeginMap;
                    out << YAML::Key << "type" << YAML::Value << (full ? "ReplaceFullPath" : "ReplacePrefixMatch");
                    out << YAML::Key << (full ? "replaceFullPath" : "replacePrefixMatch") << YAML::Value
                        << YAML::DoubleQuoted << (full ? rule.rewrite_full_path : rule.rewrite_prefix);
                    out << YAML::EndMap;
                }
                out << YAML::EndMap;
            }
            out << YAML::EndMap << YAML::EndSeq;
        }
        if (rule.backend) {
            out << YAML::Key << "backendRefs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
            out << YAML::Key << "name" << YAML::Value << rule.backend->service;
            out << YAML::Key << "port" << YAML::Value << rule.backend->port << YAML::EndMap << YAML::EndSeq;
        }
        if (!rule.backend_timeout.empty()) {
            out << YAML::Key << "timeouts" << YAML::Value << YAML::BeginMap << YAML::Key << "backendRequest"
                << YAML::Value << rule.backend_timeout << YAML::EndMap;
        }
        out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
}

void policy(YAML::Emitter &out, const PolicyOut &p)
{
    head(out, "gateway.networking.k8s.io/v1", "BackendTLSPolicy", p.name, p.namespace_);
    out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "targetRefs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    out << YAML::Key << "group" << YAML::Value << YAML::DoubleQuoted << "";
    out << YAML::Key << "kind" << YAML::Value << "Service";
    out << YAML::Key << "name" << YAML::Value << p.service << YAML::EndMap << YAML::EndSeq;
    if (p.skip_verify || !p.client_secret.empty()) {
        out << YAML::Key << "options" << YAML::Value << YAML::BeginMap;
        if (!p.client_secret.empty()) {
            out << YAML::Key << "gateway2nginx.io/client-certificate" << YAML::Value << p.client_secret;
        }
        if (p.skip_verify) {
            out << YAML::Key << "gateway2nginx.io/verification-mode" << YAML::Value << "InsecureSkipVerification";
        }
        out << YAML::EndMap;
    }
    out << YAML::Key << "validation" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "hostname" << YAML::Value << p.hostname;
    if (!p.skip_verify) {
        out << YAML::Key << "caCertificateRefs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
        out << YAML::Key << "group" << YAML::Value << YAML::DoubleQuoted << "";
        out << YAML::Key << "kind" << YAML::Value << "Secret";
        // a policy that must verify and has no CA names one that is not
        // there: it fails closed (ResolvedRefs=False, 502), never unverified
        out << YAML::Key << "name" << YAML::Value << (p.ca_secret.empty() ? p.name + "-ca-missing" : p.ca_secret);
        out << YAML::EndMap << YAML::EndSeq;
    }
    out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
}

void grant(YAML::Emitter &out, const GrantOut &g)
{
    head(out, "gateway.networking.k8s.io/v1beta1", "ReferenceGrant", g.name, g.namespace_);
    out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "from" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    out << YAML::Key << "group" << YAML::Value << "gateway.networking.k8s.io";
    out << YAML::Key << "kind" << YAML::Value << "Gateway";
    out << YAML::Key << "namespace" << YAML::Value << g.from_namespace << YAML::EndMap << YAML::EndSeq;
    out << YAML::Key << "to" << YAML::Value << YAML::BeginSeq;
    for (const std::string &name : g.secrets) {
        out << YAML::BeginMap << YAML::Key << "group" << YAML::Value << YAML::DoubleQuoted << "";
        out << YAML::Key << "kind" << YAML::Value << "Secret";
        out << YAML::Key << "name" << YAML::Value << name << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
}

}  // namespace

std::string manifests_yaml(const Conversion &c)
{
    YAML::Emitter out;
    out << YAML::Comment("gateway2nginx convert: Gateway API objects for the Ingresses read");
    gateway(out, c.gateway);
    if (c.passthrough) gateway(out, *c.passthrough);
    for (const RouteOut &r : c.routes) route(out, r, c.gateway);
    for (const PolicyOut &p : c.policies) policy(out, p);
    for (const GrantOut &g : c.grants) grant(out, g);
    return std::string(out.c_str()) + "\n";
}

std::string report_yaml(const Conversion &c)
{
    YAML::Emitter out;
    out << YAML::BeginMap;
    out << YAML::Key << "dropped" << YAML::Value << c.dropped();
    out << YAML::Key << "items" << YAML::Value << YAML::BeginSeq;
    for (const ReportEntry &e : c.report) {
        out << YAML::BeginMap;
        out << YAML::Key << "ingress" << YAML::Value << e.ingress;
        out << YAML::Key << "item" << YAML::Value << e.item;
        out << YAML::Key << "value" << YAML::Value << YAML::DoubleQuoted << e.value;
        out << YAML::Key << "outcome" << YAML::Value << outcome_name(e.outcome);
        out << YAML::Key << "note" << YAML::Value << e.note;
        out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

std::string report_text(const Conversion &c)
{
    std::map<Outcome, size_t> counts;
    std::string text;
    for (const ReportEntry &e : c.report) {
        counts[e.outcome]++;
        text += e.ingress + ": " + printable(e.item) + "=\"" + printable(e.value) + "\": " + outcome_name(e.outcome)
                + ": " + printable(e.note) + "\n";
    }
    text += std::to_string(counts[Outcome::Converted]) + " converted, " + std::to_string(counts[Outcome::Differs])
            + " converted with a difference, " + std::to_string(counts[Outcome::NotConverted]) + " not converted, "
            + std::to_string(counts[Outcome::Ignored]) + " ignored\n";
    return text;
}

}  // namespace g2n::convert
