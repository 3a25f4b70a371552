// parse: typed objects from YAML, and FILE:LINE:COL errors for bad input.
#define BOOST_TEST_MODULE gateway2nginx
#include <boost/test/unit_test.hpp>

#include <sstream>

#include "parse/parse.h"
#include "test_support.h"

using namespace g2n;
using g2n_test::error_of;
using g2n_test::parse;

namespace {

const char *const kPolicyHead = R"(apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata:
  name: p
  namespace: ns
spec:
  targetRefs:
  - group: ""
    kind: Service
    name: svc
)";

}  // namespace

BOOST_AUTO_TEST_SUITE(parse_ok)

BOOST_AUTO_TEST_CASE(multi_document_and_list)
{
    Manifests m = parse(R"(apiVersion: v1
kind: Service
metadata: {name: a, namespace: ns}
spec:
  ports: [{name: https, port: 443, targetPort: 8443}]
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: ca, namespace: ns}
  data: {ca.crt: "PEM"}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d}
...
)");
    BOOST_TEST_REQUIRE(m.services.size() == 1u);
    BOOST_TEST(m.services[0].ports[0].name == "https");
    BOOST_TEST(m.services[0].ports[0].target_port == "8443");
    BOOST_TEST_REQUIRE(m.config_maps.size() == 1u);
    BOOST_TEST(m.config_maps[0].data.at("ca.crt") == "PEM");
    BOOST_TEST(m.ignored.size() == 1u);
}

BOOST_AUTO_TEST_CASE(backend_tls_policy_fields)
{
    Manifests m = parse(std::string(kPolicyHead) + R"(    sectionName: https
  validation:
    caCertificateRefs:
    - {group: "", kind: ConfigMap, name: ca}
    hostname: abc.example.com
    subjectAltNames:
    - {type: Hostname, hostname: abc.example.com}
    - {type: URI, uri: "spiffe://abc.example.com/test-identity"}
  options:
    example.com/x: "y"
)");
    BOOST_TEST_REQUIRE(m.backend_tls_policies.size() == 1u);
    const BackendTLSPolicy &p = m.backend_tls_policies[0];
    BOOST_TEST(p.target_refs[0].section_name == "https");
    BOOST_TEST(p.ca_certificate_refs[0].kind == "ConfigMap");
    BOOST_TEST(p.hostname == "abc.example.com");
    BOOST_TEST(p.subject_alt_names.size() == 2u);
    BOOST_TEST(p.subject_alt_names[1].value == "spiffe://abc.example.com/test-identity");
    BOOST_TEST(p.options.at("example.com/x") == "y");
    BOOST_TEST(p.invalid_reasons.empty());
}

BOOST_AUTO_TEST_CASE(unknown_policy_fields_become_a_condition_not_an_error)
{
    Manifests m = parse(std::string(kPolicyHead) + R"(  validation:
    wellKnownCACertificates: System
    hostname: abc.example.com
    frobnicate: true
)");
    BOOST_TEST_REQUIRE(m.backend_tls_policies.size() == 1u);
    BOOST_TEST(m.backend_tls_policies[0].invalid_reasons.size() == 1u);
    BOOST_TEST(m.backend_tls_policies[0].invalid_reasons[0] == "unsupported field spec.validation.frobnicate");
}

BOOST_AUTO_TEST_CASE(gep4152_modes_hashes_and_options)
{
    auto policy_with = [](const std::string &validation, const std::string &options = "") {
        Manifests m = parse(std::string(kPolicyHead) + "  validation:\n    hostname: abc.example.com\n" + validation
                            + (options.empty() ? "" : "  options:\n" + options));
        return m.backend_tls_policies.at(0);
    };
    const std::string spki = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    for (const auto &[spelling, mode] : std::vector<std::pair<std::string, std::string>>{
             {"Standard", "strict"}, {"Strict", "strict"}, {"InsecureAllowExpired", "allow_expired"},
             {"InsecureSkipOnlySANVerification", "skip_san"}, {"InsecureSkipSANVerification", "skip_san"}}) {
        BackendTLSPolicy p = policy_with("    mode: " + spelling + "\n    wellKnownCACertificates: System\n");
        BOOST_TEST(gtls::mode_name(p.mode) == mode, spelling);
        BOOST_TEST(p.invalid_reasons.empty(), spelling);
    }
    BackendTLSPolicy skip = policy_with("    mode: InsecureSkipVerification\n");
    BOOST_TEST((skip.mode == gtls::Mode::Skip));
    BOOST_TEST(skip.invalid_reasons.empty());

    BackendTLSPolicy hashes = policy_with("    trustedCertificateHashes:\n"
                                          "    - {type: SPKI, algorithm: SHA256, value: \"" + spki + "\"}\n"
                                          "    - {type: Certificate, algorithm: SHA256, value: \"" + spki + "\"}\n");
    BOOST_TEST(hashes.invalid_reasons.empty());
    BOOST_TEST(hashes.pins == (std::vector<std::string>{"sha256-spki:" + spki, "sha256-cert:" + std::string(64, '0')}));

    BackendTLSPolicy by_option = policy_with("    mode: Standard\n",
                                             "    gateway2nginx.io/trusted-certificate-hashes: \"SPKI:" + spki + "\"\n"
                                             "    gateway2nginx.io/verification-mode: InsecureAllowExpired\n");
    BOOST_TEST(by_option.pins.size() == 1u);
    BOOST_TEST(by_option.invalid_reasons.size() == 1u);  // the two modes disagree

    auto invalid = [&](const std::string &validation, const std::string &options, const std::string &why) {
        BackendTLSPolicy p = policy_with(validation, options);
        bool found = false;
        for (const std::string &r : p.invalid_reasons) found |= r.find(why) != std::string::npos;
        BOOST_TEST(found, why << " in " << (p.invalid_reasons.empty() ? "(none)" : p.invalid_reasons[0]));
    };
    invalid("    mode: InsecureSkipVerification\n    wellKnownCACertificates: System\n", "", "must not name trust");
    invalid("    mode: Standard\n", "", "mode needs caCertificateRefs");
    invalid("    mode: InsecureSkipVerification\n    subjectAltNames: [{type: Hostname, hostname: a.example.com}]\n", "",
            "subjectAltNames must be empty");
    invalid("    mode: Lenient\n    wellKnownCACertificates: System\n", "", "unknown mode \"Lenient\"");
    invalid("    trustedCertificateHashes: [{type: SPKI, value: \"short\"}]\n", "", "not a SHA-256 SPKI hash");
    invalid("    trustedCertificateHashes: [{type: SPKI, algorithm: SHA1, value: \"" + spki + "\"}]\n", "",
            "only SHA256");
    invalid("    wellKnownCACertificates: System\n", "    gateway2nginx.io/no-such-option: x\n",
            "unknown option gateway2nginx.io/no-such-option");
}

BOOST_AUTO_TEST_CASE(secret_data_is_decoded)
{
    Manifests m = parse(R"(apiVersion: v1
kind: Secret
metadata: {name: s, namespace: ns}
type: kubernetes.io/tls
data:
  tls.crt: aGVsbG8=
stringData:
  tls.key: plain
)");
    BOOST_TEST(m.secrets.at(0).data.at("tls.crt") == "hello");
    BOOST_TEST(m.secrets.at(0).data.at("tls.key") == "plain");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(parse_errors)

BOOST_AUTO_TEST_CASE(bad_yaml_names_file_line_and_column)
{
    std::string e = error_of("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkey: [unclosed\n");
    BOOST_TEST(e.find("in.yaml:") == 0u);
    BOOST_TEST(e.find("invalid YAML") != std::string::npos);
    // the unclosed flow sequence is found at the end of its document, line 6
    BOOST_TEST(e.find("in.yaml:6:") == 0u, e);
}

BOOST_AUTO_TEST_CASE(wrong_types_and_missing_fields)
{
    BOOST_TEST(error_of("apiVersion: v1\nkind: Service\nmetadata: {namespace: x}\n").find("metadata.name: required")
               != std::string::npos);
    std::string e = error_of(R"(apiVersion: v1
kind: Service
metadata: {name: a}
spec:
  ports:
  - port: https
)");
    BOOST_TEST(e.find("in.yaml:6:11: spec.ports[0].port: expected an integer from 1 to 65535") == 0u, e);
    e = error_of("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec:\n  ports: {port: 1}\n");
    BOOST_TEST(e.find("spec.ports: expected a list") != std::string::npos, e);
}

BOOST_AUTO_TEST_CASE(missing_parent_objects_are_errors_not_crashes)
{
    std::string e = error_of("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g}\n");
    BOOST_TEST(e.find("in.yaml:1:1: spec.gatewayClassName: required field is missing") == 0u, e);
    e = error_of("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: [1, 2]\n");
    BOOST_TEST(e.find("spec: expected a mapping") != std::string::npos, e);
    e = error_of("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: [1]}\n");
    BOOST_TEST(e.find("data.k: expected a string") != std::string::npos, e);
}

BOOST_AUTO_TEST_CASE(cel_rules_of_backend_tls_policy)
{
    BOOST_TEST(error_of(std::string(kPolicyHead) + R"(  validation:
    hostname: abc.example.com
)").find("must specify either CACertificateRefs or WellKnownCACertificates") != std::string::npos);
    BOOST_TEST(error_of(std::string(kPolicyHead) + R"(  validation:
    wellKnownCACertificates: System
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
    hostname: abc.example.com
)").find("must not contain both CACertificateRefs and WellKnownCACertificates") != std::string::npos);
    BOOST_TEST(error_of(std::string(kPolicyHead) + R"(  validation:
    wellKnownCACertificates: System
    hostname: abc.example.com
    subjectAltNames: [{type: URI, hostname: abc.example.com}]
)").find("must not contain Hostname, if Type is not set to Hostname") != std::string::npos);
    BOOST_TEST(error_of(std::string(kPolicyHead) + R"(  validation:
    wellKnownCACertificates: System
    hostname: abc.example.com
    subjectAltNames: [{type: Hostname}]
)").find("must contain Hostname, if Type is set to Hostname") != std::string::npos);
    BOOST_TEST(error_of(std::string(kPolicyHead) + R"(  validation:
    wellKnownCACertificates: System
    hostname: "*.example.com"
)").find("not a valid precise hostname") != std::string::npos);
    BOOST_TEST(error_of(std::string(kPolicyHead) + R"(  - group: ""
    kind: Service
    name: svc
  validation:
    wellKnownCACertificates: System
    hostname: abc.example.com
)").find("sectionName must be unique") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cel_rules_of_gateway_and_route)
{
    std::string e = error_of(R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: c
  listeners:
  - {name: https, port: 443, protocol: HTTPS}
)");
    BOOST_TEST(e.find("tls must be specified for protocols ['HTTPS', 'TLS']") != std::string::npos, e);
    e = error_of(R"(apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  rules:
  - matches:
    - path: {type: PathPrefix, value: "no-slash"}
)");
    BOOST_TEST(e.find("must be an absolute path") != std::string::npos, e);
    e = error_of(R"(apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  rules:
  - backendRefs: [{name: svc}]
)");
    BOOST_TEST(e.find("Must have port for Service reference") != std::string::npos, e);
}

BOOST_AUTO_TEST_CASE(more_cel_rules_of_gateway_and_route)
{
    std::string gw = R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: c
)";
    BOOST_TEST(error_of(gw + "  listeners:\n  - {name: a, port: 80, protocol: HTTP}\n  - {name: b, port: 80, protocol: HTTP}\n")
                   .find("Combination of port, protocol and hostname must be unique") != std::string::npos);
    BOOST_TEST(error_of(gw + "  listeners:\n  - {name: a, port: 9, protocol: TCP, hostname: a.example.com}\n")
                   .find("hostname must not be specified for protocols ['TCP', 'UDP']") != std::string::npos);
    BOOST_TEST(error_of(gw + "  listeners:\n  - {name: a, port: 443, protocol: HTTPS, tls: {mode: Passthrough}}\n")
                   .find("tls mode must be Terminate for protocol HTTPS") != std::string::npos);
    BOOST_TEST(error_of(gw + "  addresses: [{value: 10.0.0.1}, {value: 10.0.0.1}]\n  listeners:\n"
                             "  - {name: a, port: 80, protocol: HTTP}\n")
                   .find("IPAddress values must be unique") != std::string::npos);

    std::string route = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n";
    for (const char *bad : {"/a/../b", "/a/./b", "/a%2fb", "/a#b", "/a/..", "/a/."}) {
        std::string e = error_of(route + "  rules:\n  - matches: [{path: {value: \"" + bad + "\"}}]\n");
        BOOST_TEST((e.find("must not contain") != std::string::npos || e.find("must not end with") != std::string::npos),
                   bad << ": " << e);
    }
    BOOST_TEST(error_of(route + "  parentRefs: [{name: g}, {name: g, sectionName: http}]\n")
                   .find("sectionName must be specified when parentRefs includes 2 or more references") != std::string::npos);
    BOOST_TEST(error_of(route + "  parentRefs: [{name: g, sectionName: a}, {name: g, sectionName: a}]\n")
                   .find("sectionName must be unique when parentRefs includes 2 or more references") != std::string::npos);
    BOOST_TEST(error_of(route + "  rules:\n  - filters: [{type: RequestHeaderModifier}]\n")
                   .find("filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type") != std::string::npos);
    BOOST_TEST(error_of(route + "  rules:\n  - filters: [{type: URLRewrite, urlRewrite: {}, requestRedirect: {}}]\n")
                   .find("filter.requestRedirect must be nil if the filter.type is not RequestRedirect") != std::string::npos);
    BOOST_TEST(error_of(route + "  rules:\n  - filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replaceFullPath: /x}}}]\n")
                   .find("type must be 'ReplaceFullPath' when replaceFullPath is set") != std::string::npos);
}

// nginx makes a variable of every named group of a location or map regex:
// `(?<uri>...)` fails nginx -t for everyone, others overwrite our variables
BOOST_AUTO_TEST_CASE(regular_expressions_with_named_groups_are_refused)
{
    std::string route = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  rules:\n";
    for (const char *group : {"(?<uri>.*)", "(?'host'.*)", "(?P<gateway_tls_dollar>.*)", "a(?<x>b)?"}) {
        std::string path = error_of(route + "  - matches: [{path: {type: RegularExpression, value: \"/" + group + "\"}}]\n");
        BOOST_TEST(path.find("path.value: named groups are not supported") != std::string::npos, group << ": " << path);
        std::string header = error_of(route + "  - matches: [{headers: [{type: RegularExpression, name: x, value: \"" + group
                                      + "\"}]}]\n");
        BOOST_TEST(header.find("value: named groups are not supported") != std::string::npos, group << ": " << header);
    }
    // unnamed groups are what Gateway API regexes are made of
    BOOST_TEST(parse(route + "  - matches: [{path: {type: RegularExpression, value: \"/(a|b)(?:c)*\"}}]\n").rejected.empty());
}

BOOST_AUTO_TEST_CASE(cel_rules_of_route_filters)
{
    std::string head = R"(apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  rules:
)";
    std::string e = error_of(head + R"(  - filters:
    - {type: RequestRedirect, requestRedirect: {scheme: https}}
    - {type: URLRewrite, urlRewrite: {hostname: a.example.com}}
)");
    BOOST_TEST(e.find("either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both") != std::string::npos, e);
    e = error_of(head + R"(  - matches: [{path: {type: Exact, value: /x}}]
    filters:
    - {type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /y}}}
)");
    BOOST_TEST(e.find("exactly one PathPrefix match must be specified") != std::string::npos, e);
    e = error_of(head + R"(  - filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: "bad header", value: x}]}
)");
    BOOST_TEST(e.find("not a valid header name") != std::string::npos, e);
    e = error_of(head + R"(  - filters:
    - {type: RequestRedirect, requestRedirect: {statusCode: 304}}
)");
    BOOST_TEST(e.find("expected 301, 302, 303, 307 or 308") != std::string::npos, e);
}

BOOST_AUTO_TEST_CASE(unsupported_api_version)
{
    std::string e = error_of(std::string(kPolicyHead).replace(0, 36, "apiVersion: gateway.networking.k8s.io/v9"));
    BOOST_TEST(e.find("read as v1 or v1alpha3") != std::string::npos, e);
}

BOOST_AUTO_TEST_SUITE_END()

// Diagnostics carry input (names, quoted values): a newline or an escape
// sequence in it must not start a forged line on stderr.
BOOST_AUTO_TEST_CASE(diagnostics_print_control_characters_as_escapes)
{
    BOOST_TEST(g2n::printable("a\nb\r\x1b[31m\x7f\tz") == "a\\x0ab\\x0d\\x1b[31m\\x7f\\x09z");
    BOOST_TEST(g2n::printable("caf\xc3\xa9 ns/name") == "caf\xc3\xa9 ns/name");
}
