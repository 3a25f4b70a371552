// Helpers the generator's test suites share: YAML in, typed objects, a
// Plan, or the InputError it raises; statuses by kind and name.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "parse.h"
#include "resolve.h"

namespace g2n_test {

inline g2n::Manifests parse(const std::string &yaml)
{
    g2n::Manifests m;
    std::istringstream in(yaml);
    g2n::parse_stream(in, "in.yaml", &m);
    return m;
}

// The message of the InputError parsing `yaml` raises (a failure if none).
inline std::string error_of(const std::string &yaml)
{
    try {
        parse(yaml);
    } catch (const g2n::InputError &e) {
        return e.what();
    }
    BOOST_FAIL("expected an InputError for:\n" << yaml);
    return {};
}

inline g2n::Plan plan_of(const std::string &yaml) { return g2n::resolve(parse(yaml), g2n::Options{}); }

inline const g2n::ObjectStatus &status_of(const g2n::Plan &plan, const std::string &kind, const std::string &name)
{
    for (const g2n::ObjectStatus &st : plan.statuses) {
        if (st.kind == kind && st.meta.name == name) return st;
    }
    BOOST_FAIL("no status for " << kind << " " << name);
    return plan.statuses.front();
}

// "gateway:Type=Status/Reason " for each condition of each parent or ancestor.
inline std::string reasons(const g2n::ObjectStatus &st)
{
    std::string out;
    for (const auto &ref : st.refs) {
        for (const g2n::Condition &c : ref.conditions) out += ref.name + ":" + std::string(c.type) + "=" + std::string(c.status) + "/" + std::string(c.reason) + " ";
    }
    return out;
}

// Our GatewayClass "ours" and a listener certificate Secret ns/cert, for
// the documents that follow.
inline const char *const kClassAndCertificate = R"(apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: ns}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==, tls.key: a2V5}
---
)";

// The CA certificate of the set t/lib/make-certs.sh made (GTLS_TEST_CERTS).
inline std::string test_ca()
{
    const char *dir = std::getenv("GTLS_TEST_CERTS");
    BOOST_TEST_REQUIRE(dir != nullptr, "GTLS_TEST_CERTS is not set");
    std::ifstream in(std::string(dir) + "/ca.crt");
    std::stringstream text;
    text << in.rdbuf();
    BOOST_TEST_REQUIRE(!text.str().empty());
    return text.str();
}

// A YAML ConfigMap NAME in namespace NS whose ca.crt is the test CA.
inline std::string ca_configmap_yaml(const std::string &name, const std::string &ns = "ns")
{
    std::string indented;
    std::istringstream lines(test_ca());
    for (std::string line; std::getline(lines, line);) indented += "    " + line + "\n";
    return "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns
           + "}\ndata:\n  ca.crt: |\n" + indented;
}

}  // namespace g2n_test
