// Helpers the generator's test suites share: YAML in, typed objects, a
// Plan, or the InputError it raises; statuses by kind and name.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "parse/parse.h"
#include "resolve/resolve.h"

// On a helper that returns a reference into its first argument: the
// strings it takes only name what to find, so a temporary one leaves the
// reference valid (GCC 14's -Wdangling-reference cannot know)
#if defined(__has_cpp_attribute) && __has_cpp_attribute(gnu::no_dangling)
#define G2N_TEST_NO_DANGLING [[gnu::no_dangling]]
#else
#define G2N_TEST_NO_DANGLING
#endif

namespace g2n_test {

inline g2n::Manifests parse(const std::string &yaml)
{
    g2n::Manifests m;
    std::istringstream in(yaml);
    g2n::parse_stream(in, "in.yaml", &m);
    return m;
}

// `yaml` read through `cache`, as gateway2nginx run reads its inputs: the
// objects are the cache's, lent until given back
inline g2n::Manifests read_through(g2n::DocumentCache *cache, const std::string &yaml)
{
    g2n::Manifests m;
    cache->reserve_as_last(&m);
    std::istringstream in(yaml);
    g2n::parse_stream(in, "in.yaml", &m, 1, cache);
    cache->forget_unused();
    return m;
}

// Why `yaml` is refused: the InputError parsing it raises (bad input as a
// whole: YAML, Gateways, GatewayClasses), or the rejection of its one
// tenant object, which costs nobody else. A failure if neither.
inline std::string error_of(const std::string &yaml)
{
    g2n::Manifests m;
    try {
        m = parse(yaml);
    } catch (const g2n::InputError &e) {
        return e.what();
    }
    BOOST_TEST_REQUIRE(m.rejected.size() == 1u, "expected an InputError or one rejected object for:\n" << yaml);
    return m.rejected[0].message;
}

inline g2n::Plan plan_of(const std::string &yaml) { return g2n::resolve(parse(yaml), g2n::Options{}); }

G2N_TEST_NO_DANGLING inline const g2n::ObjectStatus &status_of(const g2n::Plan &plan, const std::string &kind, const std::string &name)
{
    for (const g2n::ObjectStatus &st : *plan.statuses) {
        if (st.kind == kind && st.meta.name == name) return st;
    }
    BOOST_FAIL("no status for " << kind << " " << name);
    return plan.statuses->front();
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

// A file of the set t/lib/make-certs.sh made (GTLS_TEST_CERTS); no Boost
// macro: also read while the suites' static data is built.
inline std::string test_cert_file(const std::string &name)
{
    const char *dir = std::getenv("GTLS_TEST_CERTS");
    std::ifstream in(std::string(dir ? dir : "build/test-certs") + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// `text` as a YAML block scalar's lines, indented by `indent` spaces.
inline std::string yaml_block(const std::string &text, int indent)
{
    std::string out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) out += std::string(static_cast<size_t>(indent), ' ') + line + "\n";
    return out;
}

// A kubernetes.io/tls Secret NS/NAME holding the test leaf and its key.
inline std::string tls_secret_yaml(const std::string &name, const std::string &ns)
{
    return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + ", namespace: " + ns
           + "}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n" + yaml_block(test_cert_file("leaf.crt"), 4)
           + "  tls.key: |\n" + yaml_block(test_cert_file("leaf.key"), 4);
}

// How many Accepted, ResolvedRefs or Programmed conditions of a status
// document are False: a case that does not say it shows refusals has
// none (an input refused by mistake renders nothing it claims to show)
inline size_t refusals_in(const std::string &status)
{
    std::istringstream lines(status);
    size_t refused = 0;
    std::string previous;
    for (std::string line; std::getline(lines, line); previous = line) {
        if (line.find("status: \"False\"") == std::string::npos) continue;
        for (const char *type : {"type: Accepted", "type: ResolvedRefs", "type: Programmed"}) {
            if (previous.find(type) != std::string::npos) refused++;
        }
    }
    return refused;
}

// A file of generator/tests/testdata; no Boost macro: also read while the
// suites' static data is built.
inline std::string testdata_file(const std::string &name)
{
    std::ifstream in(std::string(__FILE__).substr(0, std::string(__FILE__).rfind('/') + 1) + "testdata/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Our GatewayClass "ours" and Gateway ns/gw with one HTTP listener on 80
// (testdata/http-gateway.yaml), ending in "---" for the documents that follow.
inline std::string http_gateway() { return testdata_file("http-gateway.yaml"); }

// http_gateway(), a Service ns/web (port "http", 80) and an HTTPRoute ns/r
// sending everything to it: the upstream whose servers a test is about.
inline std::string web_route()
{
    return http_gateway() + R"(apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: web, port: 80}]
)";
}

// Our GatewayClass "ours" and a listener certificate Secret ns/cert, for
// the documents that follow.
inline std::string class_and_certificate()
{
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: ours}\n"
           "spec: {controllerName: gateway2nginx.io/controller}\n---\n"
           + tls_secret_yaml("cert", "ns") + "---\n";
}

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
