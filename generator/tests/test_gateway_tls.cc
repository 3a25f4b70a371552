// A Gateway's own TLS: GEP-91 client certificate validation (default and
// perPort, with GEP-4078 pins) and the GEP-3155 client certificate to
// backends.
#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <vector>

#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

const char *const kSpki = "sha256-spki:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

std::string setup(const std::string &gateway_tls, const std::string &listener_tls_extra = "")
{
    return class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
)" + gateway_tls + R"(  listeners:
  - name: http
    port: 80
    protocol: HTTP
  - name: https
    port: 443
    protocol: HTTPS
    tls:
      certificateRefs: [{name: cert}]
)" + listener_tls_extra + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: missing, port: 80}]}]
)" + ca_configmap_yaml("client-ca");
}

std::string listener(const ObjectStatus &gw, const std::string &name)
{
    std::string out;
    for (const auto &l : gw.listeners) {
        if (l.name != name) continue;
        for (const Condition &c : l.conditions) out += std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason) + " ";
    }
    return out;
}

std::string gateway_conditions(const ObjectStatus &gw)
{
    std::string out;
    for (const Condition &c : gw.conditions) out += std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason) + " ";
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gateway_tls)

BOOST_AUTO_TEST_CASE(frontend_validation_renders_on_tls_listeners_only)
{
    Plan plan = plan_of(setup(R"(  tls:
    frontend:
      default:
        validation:
          caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}]
          trustedCertificateHashes: [{type: SPKI, algorithm: SHA256, value: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}]
)"));
    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("    ssl_verify_client on;\n    ssl_verify_client_handshake on;\n    ssl_client_certificate certs/ca-")
                   != std::string::npos,
               http);
    BOOST_TEST(http.find(std::string("    ssl_verify_client_pin ") + kSpki + ";\n") != std::string::npos, http);
    // the HTTP listener's server carries none of it
    size_t plain = http.find("listen 0.0.0.0:80");
    BOOST_TEST_REQUIRE(plain != std::string::npos);
    BOOST_TEST(http.substr(plain, http.find("}", plain) - plain).find("ssl_verify_client") == std::string::npos);
    const ObjectStatus gw = status_of(plan, "Gateway", "gw");
    BOOST_TEST(listener(gw, "https") == "Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs ");
    BOOST_TEST(gateway_conditions(gw).find("InsecureFrontendValidationMode") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(per_port_overrides_default_and_fallback_is_reported)
{
    Plan plan = plan_of(setup(R"(  tls:
    frontend:
      default:
        validation:
          caCertificateRefs: [{group: "", kind: ConfigMap, name: nope}]
      perPort:
      - port: 443
        tls:
          validation:
            mode: AllowInsecureFallback
            caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}]
)"));
    std::string http = render_http_conf(plan);
    // every client is served, whatever its chain's error (the module's fallback)
    BOOST_TEST(http.find("    ssl_verify_client optional_no_ca;\n    ssl_verify_client_handshake fallback;\n"
                         "    ssl_client_certificate certs/ca-") != std::string::npos, http);
    BOOST_TEST(http.find("ssl_verify_client_handshake on") == std::string::npos, http);
    const ObjectStatus gw = status_of(plan, "Gateway", "gw");
    BOOST_TEST(listener(gw, "https").find("Accepted=True/Accepted") == 0u);
    BOOST_TEST(gateway_conditions(gw).find("InsecureFrontendValidationMode=True/ConfigurationChanged") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(invalid_ca_references_take_the_listener_down)
{
    for (const auto &[ref, reason] : std::vector<std::pair<std::string, std::string>>{
             {"{group: \"\", kind: ConfigMap, name: nope}", "InvalidCACertificateRef"},
             {"{group: \"\", kind: Service, name: client-ca}", "InvalidCACertificateKind"},
             {"{group: \"\", kind: ConfigMap, name: client-ca, namespace: other}", "RefNotPermitted"}}) {
        Plan plan = plan_of(setup("  tls:\n    frontend:\n      default:\n        validation:\n          caCertificateRefs: ["
                                  + ref + "]\n") + ca_configmap_yaml("client-ca", "other"));
        const ObjectStatus gw = status_of(plan, "Gateway", "gw");
        BOOST_TEST(listener(gw, "https") == "Accepted=False/NoValidCACertificate Programmed=False/Invalid ResolvedRefs=False/"
                                                + reason + " ",
                   ref);
        BOOST_TEST(listener(gw, "http").find("Accepted=True/Accepted") == 0u);
        BOOST_TEST(render_http_conf(plan).find("listen 0.0.0.0:443") == std::string::npos);
    }
}

// GEP-5075: the cluster's trust anchors validate clients of a Gateway of
// any namespace, with no ReferenceGrant; a missing bundle takes the
// listener down as a missing ConfigMap does
BOOST_AUTO_TEST_CASE(a_cluster_trust_bundle_validates_clients)
{
    const std::string validation = "  tls:\n    frontend:\n      default:\n        validation:\n          caCertificateRefs: "
                                   "[{group: certificates.k8s.io, kind: ClusterTrustBundle, name: clients}]\n";
    const std::string bundle = "---\napiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: clients}\n"
                               "spec:\n  trustBundle: |\n" + yaml_block(test_ca(), 4);
    ResolveReads reads;
    const Plan plan = resolve(parse(setup(validation) + bundle), Options{}, &reads);
    BOOST_TEST(listener(status_of(plan, "Gateway", "gw"), "https")
               == "Accepted=True/Accepted Programmed=True/Programmed ResolvedRefs=True/ResolvedRefs ");
    const std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("    ssl_verify_client on;\n    ssl_verify_client_handshake on;\n    ssl_client_certificate certs/ca-")
                   != std::string::npos, http);
    // the same CA file as the ConfigMap of the same CA
    const Plan by_config_map = plan_of(setup(
        "  tls:\n    frontend:\n      default:\n        validation:\n          caCertificateRefs: [{group: \"\", kind: ConfigMap, name: client-ca}]\n"));
    auto client_ca = [](const Plan &p) {
        for (const Server &server : p.servers) {
            if (server.listener_port == 443) return server.client.ca;
        }
        return std::string();
    };
    BOOST_TEST_REQUIRE(!client_ca(plan).empty());
    BOOST_TEST(client_ca(plan) == client_ca(by_config_map));
    BOOST_TEST(reads.readers.at("ClusterTrustBundle /clients") == static_cast<unsigned>(Reader::Gateway));

    const Plan missing = plan_of(setup(validation));
    BOOST_TEST(listener(status_of(missing, "Gateway", "gw"), "https")
               == "Accepted=False/NoValidCACertificate Programmed=False/Invalid ResolvedRefs=False/InvalidCACertificateRef ");
    BOOST_TEST(render_http_conf(missing).find("listen 0.0.0.0:443") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(listener_option_pins_alone)
{
    Plan plan = plan_of(setup("", std::string("      options: {gateway2nginx.io/client-certificate-pins: \"SPKI:")
                                      + (kSpki + 12) + "\"}\n"));
    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find(std::string("    ssl_verify_client optional_no_ca;\n    ssl_verify_client_pin ") + kSpki + ";\n")
                   != std::string::npos,
               http);
    BOOST_TEST(error_of(setup("", "      options: {gateway2nginx.io/client-certificate-pins: \"SPKI:short\"}\n"))
                   .find("options[gateway2nginx.io/client-certificate-pins]: \"SPKI:short\": value: not a SHA-256 SPKI hash")
               != std::string::npos);
}

BOOST_AUTO_TEST_CASE(listener_option_client_verify_depth)
{
    const std::string validation =
        "  tls:\n    frontend:\n      default:\n        validation:\n"
        "          caCertificateRefs: [{group: \"\", kind: ConfigMap, name: client-ca}]\n";
    const std::string depth1 = "      options: {gateway2nginx.io/client-verify-depth: \"1\"}\n";
    BOOST_TEST(render_http_conf(plan_of(setup(validation))).find("    ssl_verify_depth 4;\n") != std::string::npos);
    const std::string http = render_http_conf(plan_of(setup(validation, depth1)));
    BOOST_TEST(http.find("    ssl_verify_depth 1;\n") != std::string::npos, http);
    BOOST_TEST(http.find("ssl_verify_depth 4;") == std::string::npos);

    const Plan alone = plan_of(setup("", depth1));
    BOOST_TEST(render_http_conf(alone).find("ssl_verify_depth") == std::string::npos);
    BOOST_TEST_REQUIRE(alone.warnings.size() == 1u);
    BOOST_TEST(alone.warnings[0].find("client-verify-depth has no effect without a CA") != std::string::npos);

    for (const char *bad : {"17", "-1", "", "1x", "099"}) {
        BOOST_TEST(error_of(setup(validation, std::string("      options: {gateway2nginx.io/client-verify-depth: \"")
                                                  + bad + "\"}\n"))
                       .find(std::string("options[gateway2nginx.io/client-verify-depth]: \"") + bad
                             + "\": expected 0 to 16")
                   != std::string::npos,
                   bad);
    }
}

BOOST_AUTO_TEST_CASE(crd_rules_of_frontend_validation)
{
    BOOST_TEST(error_of(setup(R"(  tls:
    frontend:
      perPort:
      - {port: 443, tls: {validation: {caCertificateRefs: [{kind: ConfigMap, name: a}]}}}
      - {port: 443, tls: {validation: {caCertificateRefs: [{kind: ConfigMap, name: b}]}}}
)")).find("spec.tls.frontend.perPort[1].port: Port for TLS configuration must be unique within the Gateway")
               != std::string::npos);
    BOOST_TEST(error_of(setup(R"(  tls:
    frontend:
      default: {validation: {mode: Sometimes, caCertificateRefs: [{kind: ConfigMap, name: a}]}}
)")).find("spec.tls.frontend.default.validation.mode: expected AllowValidOnly or AllowInsecureFallback")
               != std::string::npos);
}

BOOST_AUTO_TEST_CASE(backend_client_certificate)
{
    Plan plan = plan_of(setup("  tls:\n    backend:\n      clientCertificateRef: {name: cert}\n"));
    std::string http = render_http_conf(plan);
    BOOST_TEST(http.find("    proxy_ssl_certificate certs/backend-client_ns_cert.crt;\n"
                         "    proxy_ssl_certificate_key certs/backend-client_ns_cert.key;\n"
                         "    grpc_ssl_certificate certs/backend-client_ns_cert.crt;\n")
                   != std::string::npos,
               http);
    BOOST_TEST(gateway_conditions(status_of(plan, "Gateway", "gw")).find("ResolvedRefs=True/ResolvedRefs") != std::string::npos);
    bool key_private = false;
    for (const OutputFile &f : plan.files) key_private |= f.path == "certs/backend-client_ns_cert.key" && f.mode == 0600;
    BOOST_TEST(key_private);

    plan = plan_of(setup("  tls:\n    backend:\n      clientCertificateRef: {name: cert, namespace: other}\n"));
    BOOST_TEST(gateway_conditions(status_of(plan, "Gateway", "gw")).find("Accepted=True/Accepted") == 0u);
    BOOST_TEST(gateway_conditions(status_of(plan, "Gateway", "gw")).find("ResolvedRefs=False/RefNotPermitted")
               != std::string::npos);
    plan = plan_of(setup("  tls:\n    backend:\n      clientCertificateRef: {name: nope}\n"));
    BOOST_TEST(gateway_conditions(status_of(plan, "Gateway", "gw")).find("ResolvedRefs=False/InvalidClientCertificateRef")
               != std::string::npos);
    BOOST_TEST(render_http_conf(plan).find("proxy_ssl_certificate") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(tls_terminate_listeners_get_both_too)
{
    std::string yaml = setup(R"(  tls:
    backend:
      clientCertificateRef: {name: cert}
    frontend:
      default:
        validation:
          caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}]
)", R"(  - name: tls
    port: 8443
    protocol: TLS
    tls:
      mode: Terminate
      certificateRefs: [{name: cert}]
)") + R"(---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: ns}
spec: {ports: [{name: tls, port: 5432}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: db-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: db}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}]
    hostname: db.internal
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [db.example.com]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
)";
    std::string stream = render_stream_conf(plan_of(yaml), Options());
    BOOST_TEST(stream.find("    ssl_verify_client on;\n    ssl_verify_client_handshake on;\n    ssl_client_certificate certs/ca-")
                   != std::string::npos,
               stream);
    BOOST_TEST(stream.find("    proxy_ssl_certificate certs/backend-client_ns_cert.crt;\n"
                           "    proxy_ssl_certificate_key certs/backend-client_ns_cert.key;\n")
                   != std::string::npos,
               stream);
    BOOST_TEST(stream.find("grpc_ssl_certificate") == std::string::npos);
}

// No two objects share a file under certs/ (Secret payments/prod-tls and
// payments-prod/tls once did): every namespace and name of a small
// alphabet that holds the separators, names no Kubernetes object may
// have included.
BOOST_AUTO_TEST_CASE(no_two_objects_share_certificate_files)
{
    std::vector<std::string> texts = {""};
    for (size_t length = 1; length <= 4; length++) {
        std::vector<std::string> longer;
        for (const std::string &t : texts) {
            if (t.size() + 1 != length) continue;
            for (char c : std::string("a-._/")) longer.push_back(t + c);
        }
        texts.insert(texts.end(), longer.begin(), longer.end());
    }
    std::map<std::string, std::string> owner;  // stem -> "ns/name"
    size_t pairs = 0;
    for (const std::string &ns : texts) {
        if (ns.empty()) continue;
        for (const std::string &name : texts) {
            if (name.empty()) continue;
            const std::string stem = g2n::object_file_stem("listener", ns, name);
            BOOST_TEST(stem.find('/') == std::string::npos, stem);
            auto [it, added] = owner.emplace(stem, ns + "\n" + name);
            BOOST_TEST(added, stem << " is both " << it->second << " and " << ns << "\n" << name);
            pairs++;
        }
    }
    BOOST_TEST(pairs > 100000u);
}

BOOST_AUTO_TEST_SUITE_END()
