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
