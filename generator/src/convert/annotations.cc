#include "convert/annotations.h"

#include <algorithm>

namespace g2n::convert {

const std::vector<AnnotationRow> kAnnotations = {
    {"backend-protocol", "the protocol to the backend: HTTP, HTTPS, GRPC, GRPCS, AJP, FCGI",
     "HTTPS: a BackendTLSPolicy for the Service; GRPC and GRPCS: GRPCRoutes (paths /, /SERVICE, /SERVICE/METHOD), "
     "GRPCS with a BackendTLSPolicy; HTTP: nothing; the others are not converted",
     "HTTPS: a BackendTLSPolicy only when proxy-ssl-verify, -secret, -server-name and -name are all set"},
    {"proxy-ssl-secret", "NAMESPACE/NAME of a Secret: ca.crt verifies the backend, tls.crt and tls.key are the "
                         "client certificate",
     "ca.crt: the policy's caCertificateRefs (a Secret of the Ingress's namespace); tls.crt: the Gateway's "
     "backend client certificate (GEP-3155), the first by namespace/name; another Secret of the Ingress's "
     "namespace: its policy's own (option gateway2nginx.io/client-certificate)",
     "the CA alone; the client certificate dropped with a warning"},
    {"proxy-ssl-verify", "on: verify the backend's certificate; off (the default): do not",
     "on: verified against the CA; off or unset: validation.mode InsecureSkipVerification (GEP-4152), "
     "audited, and the Gateway's gate opened for it (--strict-backends keeps it closed)",
     "on: a BackendTLSPolicy; off: an error, no policy"},
    {"proxy-ssl-verify-depth", "how deep a chain is verified (default 1)",
     "a difference: the module verifies chains up to 10 certificates", "dropped with a warning"},
    {"proxy-ssl-name", "the name verified and, with proxy-ssl-server-name on, sent as SNI",
     "the policy's hostname", "the policy's hostname"},
    {"proxy-ssl-server-name", "on: send SNI (default off)", "SNI is always the policy's hostname",
     "required on"},
    {"proxy-ssl-protocols", "the TLS versions offered to the backend", "not converted: the policy has no field",
     "dropped with a warning"},
    {"proxy-ssl-ciphers", "the ciphers offered to the backend", "not converted: the policy has no field",
     "dropped with a warning"},
    {"ssl-redirect", "true (the default): HTTP to a host with TLS is redirected to HTTPS, 308",
     "a redirect route (RequestRedirect scheme https, 308) on the HTTP listener", "a redirect route"},
    {"force-ssl-redirect", "true: redirect to HTTPS even without TLS in the Ingress",
     "a redirect route on the HTTP listener", "a redirect route"},
    {"ssl-passthrough", "true: TLS is not terminated; each connection goes by its SNI, untouched, to the backend of "
                        "its host's first path (every other annotation ignored)",
     "a TLS listener (Passthrough) on 443 per host and a TLSRoute; when the Gateway serves HTTPS on 443 (a port has "
     "one protocol), on a Gateway of its own (NAME-passthrough) at --passthrough-address, else not converted",
     "not assessed here"},
    {"use-regex", "true: paths are case-insensitive regular expressions anchored at the start",
     "RegularExpression matches, (?i)PATH.* (this project matches the whole path)", "RegularExpression"},
    {"rewrite-target", "the URI sent upstream, with the path's captures ($1...)",
     "URLRewrite: ReplaceFullPath for a target without captures; ReplacePrefixMatch / for PREFIX(/|$)(.*) with "
     "/$2; other captures are not converted",
     "ReplaceFullPath or ReplacePrefixMatch where it can"},
    {"upstream-vhost", "the Host sent upstream", "URLRewrite hostname", "URLRewrite hostname"},
    {"auth-tls-secret", "NAMESPACE/NAME of a Secret whose ca.crt verifies clients",
     "the Gateway's frontend validation (GEP-91, spec.tls.frontend.default), a Secret reference: it is per port, "
     "so every host on 443 asks for a client certificate as soon as one Ingress does (stated for the others)",
     "not handled"},
    {"auth-tls-verify-client", "on (the default), optional, optional_no_ca or off",
     "on: AllowValidOnly, refused in the TLS handshake; optional and optional_no_ca: AllowInsecureFallback (every "
     "client served, the backend told nothing of its certificate); off: no validation",
     "not handled"},
    {"auth-tls-verify-depth", "how many intermediates a client chain may hold (default 1)",
     "the HTTPS listener's option gateway2nginx.io/client-verify-depth (ssl_verify_depth), default 1 as "
     "ingress-nginx's",
     "not handled"},
    {"auth-tls-pass-certificate-to-upstream", "true: the client certificate in ssl-client-cert",
     "not converted: no Gateway API filter sends the client certificate upstream", "not handled"},
    {"auth-tls-match-cn", "a regular expression the client's subject must match (else 403)",
     "not converted, and the Ingress's routes left out (they would admit every client the CA signs): pin the "
     "admitted clients with trustedCertificateHashes (GEP-4078) by hand",
     "not handled"},
    {"auth-tls-error-page", "where a client failing verification is redirected",
     "not converted: a refused client fails the TLS handshake, no page is served", "not handled"},
    {"proxy-connect-timeout", "seconds to connect to the backend (default 5)",
     "HTTPRoute timeouts.backendRequest, the longest of the three: gateway2nginx bounds each wait by it", "dropped"},
    {"proxy-read-timeout", "seconds between two reads from the backend (default 60)",
     "HTTPRoute timeouts.backendRequest, as proxy-connect-timeout", "HTTPRoute timeouts where it can"},
    {"proxy-send-timeout", "seconds between two writes to the backend (default 60)",
     "HTTPRoute timeouts.backendRequest, as proxy-connect-timeout", "dropped"},
};

const char *outcome_name(Outcome o)
{
    switch (o) {
    case Outcome::Converted: return "converted";
    case Outcome::Differs: return "differs";
    case Outcome::NotConverted: return "not-converted";
    case Outcome::Ignored: return "ignored";
    }
    return "?";
}


bool worse(Outcome a, Outcome b)
{
    auto rank = [](Outcome o) { return o == Outcome::NotConverted ? 2 : o == Outcome::Differs ? 1 : 0; };
    return rank(a) > rank(b);
}

namespace {

bool known_annotation(const std::string &key)
{
    return std::any_of(kAnnotations.begin(), kAnnotations.end(), [&](const AnnotationRow &r) { return key == r.key; });
}

}  // namespace

Annotations::Annotations(const Ingress &in, std::vector<ReportEntry> *report) : ingress_(in.meta.key()), report_(report)
{
    for (const Annotation &a : in.annotations) {
        if (a.key.rfind(kAnnotationPrefix, 0) == 0) {
            values_[a.key.substr(std::char_traits<char>::length(kAnnotationPrefix))] = a.value;
        } else {
            report_->push_back({ingress_, a.key, a.value, Outcome::Ignored, "not an annotation of ingress-nginx"});
        }
    }
}

std::optional<std::string> Annotations::get(const std::string &key) const
{
    auto it = values_.find(key);
    return it == values_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

bool Annotations::is(const std::string &key, const char *word, bool fallback) const
{
    std::optional<std::string> v = get(key);
    return v ? *v == word : fallback;
}

void Annotations::report(const std::string &key, Outcome outcome, const std::string &note, bool always)
{
    std::optional<std::string> v = get(key);
    if (!v && !always) return;
    auto [it, fresh] = reported_.emplace(key, report_->size());
    if (fresh) {
        report_->push_back({ingress_, kAnnotationPrefix + key, v.value_or("(unset)"), outcome, note});
    } else if (ReportEntry &e = (*report_)[it->second]; worse(outcome, e.outcome)) {
        e.outcome = outcome;
        e.note = note;
    }
}

void Annotations::report_rest()
{
    for (const auto &[key, value] : values_) {
        if (reported_.count(key)) continue;
        report_->push_back({ingress_, kAnnotationPrefix + key, value, Outcome::NotConverted,
                            known_annotation(key) ? "not converted yet by this version"
                                                  : "convert does not read this annotation: what it did is lost"});
    }
}

}  // namespace g2n::convert
