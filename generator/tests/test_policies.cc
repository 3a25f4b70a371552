// resolve: BackendTLSPolicy attachment, conflicts and conditions.
#include <boost/test/unit_test.hpp>

#include <string>

#include "resolve_render_fixtures.h"

using namespace g2n;
using namespace g2n_test;

BOOST_AUTO_TEST_SUITE(resolve_policies)

BOOST_AUTO_TEST_CASE(policy_binds_to_its_port_with_sni_and_ca)
{
    Plan plan = plan_of(base_manifests() + policy("p", "https", "abc.example.com"));
    const Upstream u = upstream_named(plan, "_443");
    BOOST_TEST(u.tls());
    BOOST_TEST(u.unusable.empty());
    BOOST_TEST(u.policy->hostname == "abc.example.com");
    BOOST_TEST(u.policy->name == "ns/p");
    BOOST_TEST(u.policy->ca.find("certs/ca-") == 0u);
    BOOST_TEST(!upstream_named(plan, "_8443").tls());  // the other port has no policy
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "p"))
               == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
}

// at 100,000 routes a copy per upstream was 20 MB of the peak
BOOST_AUTO_TEST_CASE(a_policy_is_held_once_by_all_its_upstreams)
{
    Plan plan = plan_of(base_manifests() + policy("p", "", "abc.example.com"));
    const Upstream a = upstream_named(plan, "_443"), b = upstream_named(plan, "_8443");
    BOOST_TEST_REQUIRE(a.policy != nullptr);
    BOOST_TEST(a.policy == b.policy);
    BOOST_TEST(a.policy->hostname == "abc.example.com");
}

BOOST_AUTO_TEST_CASE(conflicts_go_to_the_oldest_then_by_name)
{
    Plan plan = plan_of(base_manifests() + policy("b-old", "", "old.example.com", "2024-01-01T00:00:00Z")
                        + policy("a-new", "", "new.example.com", "2025-01-01T00:00:00Z")
                        + policy("z-port", "https", "port.example.com"));
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "a-new")).find("Accepted=False/Conflicted")
               != std::string::npos);
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "b-old")).find("Accepted=True") != std::string::npos);
    // a port policy and a whole-Service policy do not conflict: the port one governs its port
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "z-port")).find("Accepted=True") != std::string::npos);
    BOOST_TEST(upstream_named(plan, "_443").policy->hostname == "port.example.com");
    BOOST_TEST(upstream_named(plan, "_8443").policy->hostname == "old.example.com");
}

BOOST_AUTO_TEST_CASE(invalid_references_fail_closed)
{
    Plan plan = plan_of(base_manifests() + policy("p", "https", "abc.example.com", "", "missing"));
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "p"))
               == "gw:Accepted=False/NoValidCACertificate gw:ResolvedRefs=False/InvalidCACertificateRef ");
    const Upstream u = upstream_named(plan, "_443");
    BOOST_TEST(u.tls());  // never plaintext
    BOOST_TEST(!u.unusable.empty());
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "p").refs[0].conditions[1].message
               == "ConfigMap ns/missing does not exist");
}

// Option gateway2nginx.io/client-certificate: a kubernetes.io/tls Secret of
// the policy's namespace, written as files and named in its upstreams;
// one that does not resolve fails the policy's traffic closed
BOOST_AUTO_TEST_CASE(a_policy_presents_its_own_client_certificate)
{
    const std::string option = "  options: {gateway2nginx.io/client-certificate: backend-client}\n";
    ResolveReads reads;
    const Plan plan = resolve(parse(base_manifests() + policy("p", "", "abc.example.com") + option + "---\n"
                                    + tls_secret_yaml("backend-client", "ns")),
                              Options{}, &reads);
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "p"))
               == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    const Upstream u = upstream_named(plan, "_443");
    BOOST_TEST_REQUIRE(u.tls());
    BOOST_TEST(u.unusable.empty());
    BOOST_TEST(u.policy->client_certificate == "certs/policy-client_ns_backend-client.crt");
    BOOST_TEST(u.policy->client_key == "certs/policy-client_ns_backend-client.key");
    const auto written = [&](const std::string &path) {
        for (const OutputFile &f : plan.files) {
            if (f.path == path) return f.mode;
        }
        return 0;
    };
    BOOST_TEST(written(u.policy->client_certificate) == 0644);
    BOOST_TEST(written(u.policy->client_key) == 0600);
    BOOST_TEST(reads.readers.at("Secret ns/backend-client") == static_cast<unsigned>(Reader::BackendTLSPolicy));
    const std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("    proxy_ssl_policy_certificate certs/policy-client_ns_backend-client.crt "
                         "certs/policy-client_ns_backend-client.key;\n")
                   != std::string::npos,
               http);

    // missing, not a TLS Secret, or not a name: Invalid, and never sent without it
    for (const auto &[manifests, message] : std::vector<std::pair<std::string, std::string>>{
             {policy("p", "", "abc.example.com") + option,
              "option gateway2nginx.io/client-certificate: Secret ns/backend-client does not exist"},
             {policy("p", "", "abc.example.com") + option + "---\napiVersion: v1\nkind: Secret\n"
                  "metadata: {name: backend-client, namespace: ns}\nstringData: {tls.crt: x}\n",
              "option gateway2nginx.io/client-certificate: Secret ns/backend-client is not a kubernetes.io/tls "
              "Secret with tls.crt and tls.key"},
             {policy("p", "", "abc.example.com") + "  options: {gateway2nginx.io/client-certificate: \"../x\"}\n",
              "option gateway2nginx.io/client-certificate: \"../x\" is not a Secret's name"}}) {
        const Plan refused = plan_of(base_manifests() + manifests);
        const ObjectStatus &st = status_of(refused, "BackendTLSPolicy", "p");
        BOOST_TEST(reasons(st) == "gw:Accepted=False/Invalid gw:ResolvedRefs=True/ResolvedRefs ");
        BOOST_TEST(st.refs[0].conditions[0].message == message);
        const Upstream &closed = upstream_named(refused, "_443");
        BOOST_TEST(closed.tls());
        BOOST_TEST(!closed.unusable.empty());
        BOOST_TEST(render_http_conf(refused).find("proxy_ssl_policy_certificate") == std::string::npos);
    }
}

namespace {

// A ClusterTrustBundle of signer corp.example/roots holding `pem`
std::string cluster_trust_bundle(const std::string &name, const std::string &pem)
{
    return "---\napiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: \"" + name
           + "\"}\nspec:\n  signerName: corp.example/roots\n  trustBundle: |\n" + yaml_block(pem, 4);
}

std::string policy_of_bundle(const std::string &name, const std::string &field = "caCertificateRefs")
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: p, namespace: ns}\n"
           "spec:\n  targetRefs: [{group: \"\", kind: Service, name: svc}]\n  validation:\n    hostname: abc.example.com\n    "
           + field + ": [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: \"" + name + "\"}]\n";
}

std::string ca_file(const Plan &plan, const std::string &path)
{
    for (const OutputFile &f : plan.files) {
        if (f.path == path) return f.content;
    }
    return "";
}

}  // namespace

// GEP-5075: a ClusterTrustBundle named by a policy of any namespace, with no
// ReferenceGrant, is its CA bundle as a ConfigMap's ca.crt would be
BOOST_AUTO_TEST_CASE(a_cluster_trust_bundle_is_a_ca_source)
{
    ResolveReads reads;
    const Plan plan = resolve(parse(base_manifests() + cluster_trust_bundle("corp.example:roots:v1", test_ca())
                                    + policy_of_bundle("corp.example:roots:v1")),
                              Options{}, &reads);
    BOOST_TEST(reasons(status_of(plan, "BackendTLSPolicy", "p"))
               == "gw:Accepted=True/Accepted gw:ResolvedRefs=True/ResolvedRefs ");
    const Upstream &u = upstream_named(plan, "_443");
    BOOST_TEST_REQUIRE(u.policy != nullptr);
    BOOST_TEST(u.unusable.empty());
    // the same bundle as the ConfigMap ns/ca of the same CA gives
    const Plan by_config_map = plan_of(base_manifests() + policy("p", "", "abc.example.com"));
    BOOST_TEST(u.policy->ca == upstream_named(by_config_map, "_443").policy->ca);
    BOOST_TEST(ca_file(plan, u.policy->ca).find("BEGIN CERTIFICATE") != std::string::npos);
    // what a change of it would change is known: its read is recorded
    BOOST_TEST(reads.readers.at("ClusterTrustBundle /corp.example:roots:v1")
               == static_cast<unsigned>(Reader::BackendTLSPolicy));
}

BOOST_AUTO_TEST_CASE(a_missing_or_empty_cluster_trust_bundle_fails_closed)
{
    for (const std::string &bundle : {std::string(), cluster_trust_bundle("corp.example:roots:v1", "no PEM here\n")}) {
        const Plan plan = plan_of(base_manifests() + bundle + policy_of_bundle("corp.example:roots:v1"));
        const ObjectStatus &st = status_of(plan, "BackendTLSPolicy", "p");
        BOOST_TEST(reasons(st) == "gw:Accepted=False/NoValidCACertificate gw:ResolvedRefs=False/InvalidCACertificateRef ");
        BOOST_TEST(st.refs[0].conditions[1].message
                   == (bundle.empty() ? "ClusterTrustBundle corp.example:roots:v1 does not exist"
                                      : "ClusterTrustBundle corp.example:roots:v1 spec.trustBundle holds no PEM "
                                        "certificate, or a block that does not parse"));
        const Upstream &u = upstream_named(plan, "_443");
        BOOST_TEST(u.tls());  // never plaintext
        BOOST_TEST(!u.unusable.empty());
    }
}

// trustedCertificates pins leaves: a bundle of trust anchors is refused
BOOST_AUTO_TEST_CASE(a_cluster_trust_bundle_pins_nothing)
{
    const Plan plan = plan_of(base_manifests() + cluster_trust_bundle("corp.example:roots:v1", test_ca())
                              + policy_of_bundle("corp.example:roots:v1", "trustedCertificates"));
    const std::string r = reasons(status_of(plan, "BackendTLSPolicy", "p"));
    BOOST_TEST(r.find("ResolvedRefs=False/InvalidKind") != std::string::npos, r);
    BOOST_TEST(!upstream_named(plan, "_443").unusable.empty());
}

// The API server's naming rule: a bundle of no signer has no ':' in its
// name, a signer's is named after it; one that breaks it is rejected
// alone, and what names it fails closed
BOOST_AUTO_TEST_CASE(cluster_trust_bundle_names_follow_the_api_server)
{
    const std::string ca = yaml_block(test_ca(), 4);
    const Manifests m = parse(
        "apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: plain}\n"
        "spec:\n  trustBundle: |\n" + ca
        + "---\napiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {name: \"a:b\"}\n"
          "spec:\n  trustBundle: |\n" + ca
        + "---\napiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: \"other.example:x:1\"}\n"
          "spec:\n  signerName: corp.example/roots\n  trustBundle: |\n" + ca
        + "---\napiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: \"Corp:roots:1\"}\n"
          "spec:\n  signerName: Corp/roots\n  trustBundle: |\n" + ca
        + "---\napiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: \"corp.example:roots:1\"}\n"
          "spec:\n  signerName: corp.example/roots\n  trustBundle: |\n" + ca);
    BOOST_TEST_REQUIRE(m.cluster_trust_bundles.size() == 2u);
    BOOST_TEST(m.cluster_trust_bundles[0].meta.name == "plain");
    BOOST_TEST(m.cluster_trust_bundles[0].meta.namespace_ == "");
    BOOST_TEST(m.cluster_trust_bundles[1].meta.name == "corp.example:roots:1");
    BOOST_TEST_REQUIRE(m.rejected.size() == 3u);
    BOOST_TEST(m.rejected[0].message.find("a ClusterTrustBundle of no signer has no ':' in its name")
               != std::string::npos, m.rejected[0].message);
    BOOST_TEST(m.rejected[1].message.find("is named corp.example:roots:...") != std::string::npos,
               m.rejected[1].message);
    BOOST_TEST(m.rejected[2].message.find("RFC 1123 subdomains joined by ':'") != std::string::npos,
               m.rejected[2].message);
    BOOST_TEST(m.rejected[1].meta.name == "other.example:x:1");
    BOOST_TEST(m.rejected[1].meta.namespace_ == "");  // no namespace: none is made up
}

BOOST_AUTO_TEST_CASE(at_most_16_ancestors_and_no_gateway_left_in_plaintext)
{
    std::string yaml = base_manifests() + policy("p", "https", "abc.example.com");
    for (int i = 0; i < 20; i++) {
        std::string n = std::to_string(i);
        yaml += "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g" + n
                + ", namespace: ns}\nspec:\n  gatewayClassName: ours\n  listeners:\n  - {name: http, port: "
                + std::to_string(9000 + i) + ", protocol: HTTP}\n---\napiVersion: gateway.networking.k8s.io/v1\n"
                "kind: HTTPRoute\nmetadata: {name: r" + n + ", namespace: ns}\nspec:\n  parentRefs: [{name: g" + n
                + "}]\n  rules:\n  - backendRefs: [{name: svc, port: 443}]\n";
    }
    Plan plan = plan_of(yaml);
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "p").refs.size() == 16u);
    BOOST_TEST(plan.warnings.size() == 1u);
    // every one of the 21 Gateways reaches the Service through the one verifying upstream
    BOOST_TEST(plan.servers.size() == 21u);
    for (const Server &server : plan.servers) {
        for (const Location &l : server.locations) {
            if (l.match.describe() == "/" && l.return_code == 0) BOOST_TEST(l.backends.at(0).tls);
        }
    }
}

BOOST_AUTO_TEST_CASE(operator_gate_per_gateway)
{
    std::string yaml = base_manifests() + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: lab, namespace: ns}
spec:
  gatewayClassName: ours
  tls: {backend: {validation: {mode: AllowInsecureVerification}}}
  listeners:
  - {name: http, port: 8080, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: lab-route, namespace: ns}
spec:
  parentRefs: [{name: lab}]
  rules:
  - backendRefs: [{name: svc, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: dev, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: svc, sectionName: https}]
  validation:
    mode: InsecureSkipVerification
    hostname: abc.example.com
)";
    Plan plan = plan_of(yaml);
    std::string r = reasons(status_of(plan, "BackendTLSPolicy", "dev"));
    BOOST_TEST(r.find("gw:Accepted=False/InsecureVerificationNotAllowed") != std::string::npos, r);
    BOOST_TEST(r.find("lab:Accepted=True/Accepted") != std::string::npos, r);
    const ObjectStatus lab = status_of(plan, "Gateway", "lab");
    BOOST_TEST(lab.conditions.back().type == "InsecureBackendValidationMode");
    BOOST_TEST(lab.conditions.back().reason == "ConfigurationChanged");
    BOOST_TEST(status_of(plan, "Gateway", "gw").conditions.size() == 2u);

    const Upstream allowed = upstream_named(plan, "ns_svc_443");
    BOOST_TEST(allowed.unusable.empty());
    BOOST_TEST((allowed.policy->mode == gtls::Mode::Skip));
    const Upstream denied = upstream_named(plan, "ns_svc_443_insecure_denied");
    BOOST_TEST(denied.unusable.find("does not allow") != std::string::npos);

    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("\nproxy_ssl_verify_insecure allow;\n") != std::string::npos);
    BOOST_TEST(http.find("    server_name app.example.com;\n    proxy_ssl_verify_insecure deny;\n") != std::string::npos);
    BOOST_TEST(http.find("    proxy_ssl_verify_mode skip;\n    proxy_ssl_policy_name ns/dev;") != std::string::npos, http);
}

BOOST_AUTO_TEST_CASE(missing_target_port)
{
    Plan plan = plan_of(base_manifests() + policy("p", "nope", "abc.example.com"));
    // no route reaches a port that does not exist: the policy has no ancestor
    BOOST_TEST(status_of(plan, "BackendTLSPolicy", "p").refs.empty());
    BOOST_TEST(!upstream_named(plan, "_443").tls());
}

BOOST_AUTO_TEST_SUITE_END()
