// The fixtures of the resolve and render tests: a Gateway with its
// GatewayClasses, a Service with endpoints and a CA, and an HTTPRoute
// (base_manifests), BackendTLSPolicies on the Service (policy), and
// upstreams by name.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "resolve/features.h"
#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"

namespace g2n_test {

using namespace g2n;

inline std::string base_manifests()
{
    std::string indented;
    std::istringstream lines(test_ca());
    for (std::string line; std::getline(lines, line);) indented += "    " + line + "\n";
    return http_gateway() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: theirs}
spec: {controllerName: example.com/other}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other, namespace: ns}
spec:
  gatewayClassName: theirs
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec:
  ports:
  - {name: https, port: 443}
  - {name: admin, port: 8443}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: svc-1
  namespace: ns
  labels: {kubernetes.io/service-name: svc}
ports: [{name: https, port: 9443}, {name: admin, port: 9444}]
endpoints:
- addresses: ["10.0.0.2", "10.0.0.1"]
- addresses: ["10.0.0.9"]
  conditions: {ready: false}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: ns}
data:
  ca.crt: |
)" + indented + R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route, namespace: ns, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw}, {name: other}]
  hostnames: [app.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{name: svc, port: 443}]
  - matches: [{path: {type: Exact, value: /admin}}]
    backendRefs: [{name: svc, port: 8443}]
)";
}

inline std::string policy(const std::string &name, const std::string &section, const std::string &hostname,
                   const std::string &created = "", const std::string &ca_ref = "ca")
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata:\n  name: "
           + name + "\n  namespace: ns\n"
           + (created.empty() ? "" : "  creationTimestamp: \"" + created + "\"\n")
           + "spec:\n  targetRefs:\n  - {group: \"\", kind: Service, name: svc"
           + (section.empty() ? "" : ", sectionName: " + section) + "}\n  validation:\n"
           + "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: " + ca_ref + "}]\n"
           + "    hostname: " + hostname + "\n";
}

G2N_TEST_NO_DANGLING inline const Upstream &upstream_named(const Plan &plan, const std::string &suffix)
{
    for (const Upstream &u : plan.upstreams) {
        if (u.name.size() >= suffix.size() && u.name.compare(u.name.size() - suffix.size(), suffix.size(), suffix) == 0) return u;
    }
    BOOST_FAIL("no upstream " << suffix);
    return plan.upstreams.front();
}

}  // namespace g2n_test
