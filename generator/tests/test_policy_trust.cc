// PolicyTrust: ConfigMap, Secret and ClusterTrustBundle changes followed by recomputing only
// the trust of the policies reading them. Property: after any sequence of
// changes the plan renders, writes, pushes and reports what resolve makes
// of the same objects, and the index asks for resolve exactly when more
// than the upstream API's trust would change.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "apply/upstream_api.h"
#include "digest.h"
#include "plan/upstreams.h"
#include "render/render.h"
#include "resolve/policy_trust.h"
#include "resolve/resolve.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

// Services a0..a2 in ns and t1 behind an HTTP listener, each with a
// BackendTLSPolicy: CAs from ConfigMaps (one shared, one own), from a
// Secret and a ClusterTrustBundle, two references at once, t1's a1 its
// own client certificate (Secret t1/client),
// trustedCertificates (pins); a policy that loses a conflict; a TLSRoute's
// backend (stream{}); an HTTPS listener whose client CAs are ConfigMaps
// (one of them a policy's too) and a ClusterTrustBundle, and whose
// certificate a Secret (what a Gateway reads is resolve's).
std::string objects_yaml()
{
    std::string yaml = class_and_certificate() + R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: ours
  tls:
    frontend:
      default:
        validation:
          caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}, {group: "", kind: ConfigMap, name: shared},
                              {group: certificates.k8s.io, kind: ClusterTrustBundle, name: "corp.example:signer:clients"}]
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - name: https
    port: 443
    protocol: HTTPS
    hostname: secure.example.com
    tls: {certificateRefs: [{name: cert}]}
    allowedRoutes: {namespaces: {from: All}}
  - {name: tls, port: 8443, protocol: TLS, hostname: db.example.com, tls: {mode: Terminate, certificateRefs: [{name: cert}]}, allowedRoutes: {namespaces: {from: All}, kinds: [{kind: TLSRoute}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [db.example.com]
  rules: [{backendRefs: [{name: a2, port: 443}]}]
)";
    const char *refs[] = {
        "caCertificateRefs: [{group: \"\", kind: ConfigMap, name: shared}]",
        "caCertificateRefs: [{group: \"\", kind: ConfigMap, name: own}, {group: \"\", kind: Secret, name: secret-ca}]",
        "caCertificateRefs: [{group: \"\", kind: Secret, name: secret-ca}, "
        "{group: certificates.k8s.io, kind: ClusterTrustBundle, name: \"corp.example:signer:roots\"}]",
    };
    for (const char *ns : {"ns", "t1"}) {
        const std::string n = ns;
        yaml += "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: " + n
                + "}\nspec:\n  parentRefs: [{name: gw, namespace: ns, sectionName: http}]\n  rules:\n";
        for (int i = 0; i < 3; i++) {
            const std::string a = "a" + std::to_string(i);
            yaml += "  - matches: [{path: {type: PathPrefix, value: /" + a + "}}]\n    backendRefs: [{name: " + a
                    + ", port: 443}]\n";
        }
        for (int i = 0; i < 3; i++) {
            const std::string a = "a" + std::to_string(i);
            yaml += "---\napiVersion: v1\nkind: Service\nmetadata: {name: " + a + ", namespace: " + n
                    + "}\nspec:\n  ports: [{name: https, port: 443}]\n"
                      "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: " + a + "-1, namespace: " + n
                    + ", labels: {kubernetes.io/service-name: " + a + "}}\nports: [{name: https, port: 8443}]\n"
                      "endpoints: [{addresses: [\"10.0.0." + std::to_string(i + 1) + "\"]}]\n"
                      "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: p-" + a
                    + ", namespace: " + n + ", creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n"
                    + (n == "t1" && i == 1 ? "  options: {gateway2nginx.io/client-certificate: client}\n" : "")
                    + "  targetRefs: [{group: \"\", kind: Service, name: " + a + "}]\n  validation:\n    hostname: abc.example.com\n    "
                    + refs[i] + "\n";
        }
    }
    // in t1: a0 also has a policy that loses the conflict (newer); in ns,
    // Service pinned a policy of trustedCertificates
    yaml += R"(---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: p-late, namespace: t1, creationTimestamp: "2026-06-01T00:00:00Z"}
spec:
  targetRefs: [{group: "", kind: Service, name: a0}]
  validation: {hostname: abc.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: late}]}
---
apiVersion: v1
kind: Service
metadata: {name: pinned, namespace: ns}
spec: {ports: [{name: https, port: 443}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: pinned, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules: [{matches: [{path: {type: PathPrefix, value: /pinned}}], backendRefs: [{name: pinned, port: 443}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: p-pinned, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: pinned}]
  validation:
    hostname: abc.example.com
    trustedCertificates: [{group: "", kind: ConfigMap, name: leaves}]
)";
    return yaml;
}

// What one of the objects holds: a CA, another, both, no PEM, no key ca.crt
std::string data_yaml(int variant)
{
    static const std::string ca = test_cert_file("ca.crt"), other = test_cert_file("unrelated-ca.crt"),
                             leaf = test_cert_file("leaf.leaf.crt");
    switch (variant) {
    case 0: return "  ca.crt: |\n" + yaml_block(ca, 4);
    case 1: return "  ca.crt: |\n" + yaml_block(other, 4);
    case 2: return "  ca.crt: |\n" + yaml_block(ca + other, 4);
    case 3: return "  ca.crt: not a certificate\n";
    case 4: return "  tls.crt: |\n" + yaml_block(leaf, 4);
    default: return "  ca.crt: |\n" + yaml_block(ca, 4) + "  extra: |\n" + yaml_block(leaf, 4);
    }
}

std::string object_yaml(const std::string &kind, const std::string &ns, const std::string &name, int variant)
{
    if (name == "client") {
        // a key pair, renewed, or one that is not
        static const std::string pairs[] = {"leaf", "spiffe"};
        const std::string data = variant == 5 ? "  tls.crt: not a certificate\n  tls.key: nor a key\n"
                                              : "  tls.crt: |\n" + yaml_block(test_cert_file(pairs[variant % 2] + ".crt"), 4)
                                                    + "  tls.key: |\n"
                                                    + yaml_block(test_cert_file(pairs[variant % 2] + ".key"), 4);
        return "---\napiVersion: v1\nkind: Secret\nmetadata: {name: client, namespace: " + ns
               + "}\ntype: kubernetes.io/tls\nstringData:\n" + data;
    }
    std::string data = data_yaml(variant);
    if (kind == "ClusterTrustBundle") {
        // one PEM text: the variant's values, one after the other
        std::string pem, line;
        std::istringstream lines(data);
        while (std::getline(lines, line)) {
            if (line.rfind("    ", 0) == 0) {
                pem += line + "\n";
            } else if (line.back() != '|') {
                pem += "    " + line.substr(line.find(": ") + 2) + "\n";  // not a certificate
            }
        }
        return "---\napiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: \"" + name
               + "\"}\nspec:\n  signerName: corp.example/signer\n  trustBundle: |\n"
               + pem;
    }
    if (kind == "Secret") {
        // Secrets' data is base64: stringData says the same in plain text
        return "---\napiVersion: v1\nkind: Secret\nmetadata: {name: " + name + ", namespace: " + ns
               + "}\ntype: Opaque\nstringData:\n" + data;
    }
    return "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata:\n" + data;
}

// What a reload would change: the configuration without the trust of
// the policies the upstream API replaces, and the files it names but the
// bundles and client certificates only those policies name (a policy that
// lost a conflict has its bundle written, named by nothing)
std::string skeleton(const Plan &plan, Options o)
{
    o.endpoint_skeleton = true;
    const auto replaceable = trust_replaceable_policies(plan, o);
    std::set<std::string> pushed, written;
    for (const auto &[name, p] : replaceable) pushed.insert({p->ca, p->client_certificate, p->client_key});
    for (const std::vector<Upstream> *upstreams : {&plan.upstreams, &plan.stream_upstreams}) {
        for (const Upstream &u : *upstreams) {
            if (u.policy && !replaceable.count(u.policy->name)) {
                written.insert({u.policy->ca, u.policy->client_certificate, u.policy->client_key});
            }
        }
    }
    for (const Server &s : plan.servers) written.insert(s.client.ca);
    for (const StreamServer &s : plan.stream_servers) written.insert(s.client.ca);
    std::string text = render_nginx_conf(plan, o) + render_http_conf(plan, o) + "\n" + render_stream_conf(plan, o);
    std::map<std::string, std::string> files;
    for (const OutputFile &f : plan.files) {
        const bool bundle = f.path.rfind("certs/ca-", 0) == 0;
        if (written.count(f.path) || (!bundle && !pushed.count(f.path))) files[f.path] = f.content;
    }
    for (const auto &[path, content] : files) text += "\n" + path + "\n" + content;
    return text;
}

// BackendTLSPolicy ns/p: web_route()'s Service, its CA ConfigMap ns/ca
std::string web_policy_yaml()
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: p, namespace: ns}\n"
           "spec:\n  targetRefs: [{group: \"\", kind: Service, name: web}]\n"
           "  validation: {hostname: abc.example.com, caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]}\n";
}

std::map<std::string, std::string> files_of(const Plan &plan)
{
    std::map<std::string, std::string> files;
    for (const OutputFile &f : plan.files) files[f.path] = f.content;
    return files;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(policy_trust)

BOOST_AUTO_TEST_CASE(object_changes_recompute_what_resolve_would)
{
    Options o;
    o.upstream_api = "127.0.0.1:9114";
    const std::string base = objects_yaml();
    struct Object {
        std::string kind, ns, name;
    };
    const std::vector<Object> objects = {
        {"ConfigMap", "ns", "shared"}, {"ConfigMap", "t1", "shared"}, {"ConfigMap", "ns", "own"},
        {"ConfigMap", "t1", "own"},    {"Secret", "ns", "secret-ca"}, {"Secret", "t1", "secret-ca"},
        {"ConfigMap", "t1", "late"},   {"ClusterTrustBundle", "", "corp.example:signer:roots"},
        {"ConfigMap", "ns", "leaves"}, {"Secret", "t1", "client"},     {"ConfigMap", "ns", "client-ca"},
        {"ClusterTrustBundle", "", "corp.example:signer:clients"}, {"ConfigMap", "ns", "unread"},
        {"Secret", "ns", "unread"},    {"Secret", "ns", "cert"},
    };
    std::map<size_t, int> held;  // object -> variant; absent: deleted
    for (size_t i = 0; i < objects.size(); i++) held[i] = objects[i].name == "leaves" ? 4 : 0;
    auto all_yaml = [&] {
        std::string yaml = base;
        for (const auto &[i, variant] : held) {
            if (objects[i].name != "cert") yaml += object_yaml(objects[i].kind, objects[i].ns, objects[i].name, variant);
        }
        return yaml;
    };

    // as run keeps it: made of a read, which goes back to the document
    // cache and is followed there, or (objects nginx -t refused left out
    // of a copy of the read) copied before the read goes
    DocumentCache cache;
    std::unique_ptr<PolicyTrust> index;
    int made = 0;
    auto make_index = [&](const Plan &plan, const ResolveReads &reads) {
        index.reset();  // before the cache lends what it views
        Manifests m = read_through(&cache, all_yaml());
        index = std::make_unique<PolicyTrust>(m, plan, o, reads);
        if (made++ % 3 == 2) {
            index->copy_objects();
            cache.give_back(std::move(m));
            return;
        }
        MovedObjects moved;
        cache.give_back(std::move(m), &moved);
        BOOST_TEST_REQUIRE(index->follow(moved));
    };
    ResolveReads reads;
    Plan plan = resolve(parse(all_yaml()), o, &reads);
    make_index(plan, reads);
    BOOST_TEST_REQUIRE(index->usable());
    BOOST_TEST_REQUIRE(trust_replaceable_policies(plan, o).size() >= 6u);

    std::mt19937 random(20261127);
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    int fast = 0, pushed = 0, resolved = 0, client_pushed = 0;
    for (int round = 0; round < 400; round++) {
        const int changes = 1 + pick(2);
        std::string changed;
        bool read_elsewhere = false;  // by a Gateway, or a policy whose trust the API cannot replace
        for (int c = 0; c < changes; c++) {
            // mostly the CAs the policies read; at times a Gateway's or
            // one nothing reads
            const size_t i = pick(3) ? static_cast<size_t>(pick(10)) : static_cast<size_t>(10 + pick(5));
            const Object &object = objects[i];
            changed += " " + object.kind + " " + object.ns + "/" + object.name;
            // by a Gateway, or by a policy whose trust the API does not replace
            static const std::map<std::string, std::vector<std::string>> policies_reading = {
                {"shared", {"p-a0"}}, {"own", {"p-a1"}}, {"secret-ca", {"p-a1", "p-a2"}},
                {"late", {"p-late"}}, {"leaves", {"p-pinned"}}, {"client", {"p-a1"}}, {"client-ca", {}}, {"cert", {}},
                {"unread", {}},
                {"corp.example:signer:roots", {"p-a2"}}, {"corp.example:signer:clients", {}}};
            const auto replaceable = trust_replaceable_policies(plan, o);
            read_elsewhere |= object.name == "cert" || object.name == "client-ca" || object.name == "corp.example:signer:clients"
                              || (object.name == "shared" && object.ns == "ns");
            // a ClusterTrustBundle is read from every namespace
            const std::vector<std::string> readers_ns =
                object.ns.empty() ? std::vector<std::string>{"ns", "t1"} : std::vector<std::string>{object.ns};
            for (const std::string &policy : policies_reading.at(object.name)) {
                for (const std::string &ns : readers_ns) read_elsewhere |= !replaceable.count(ns + "/" + policy);
            }
            if (object.name == "cert") {
                index->object_changed("Secret", object.ns + "/" + object.name, nullptr);  // said changed, as it was
                continue;
            }
            if (pick(6) == 0) {
                held.erase(i);
            } else {
                held[i] = pick(3) ? pick(3) : pick(6);
                changed += "=" + std::to_string(held[i]);
            }
            Manifests one = held.count(i) ? parse(object_yaml(object.kind, object.ns, object.name, held[i])) : Manifests{};
            const std::string key = object.ns + "/" + object.name;
            index->object_changed(object.kind, key, held.count(i) ? &one : nullptr);
        }
        ResolveReads want_reads;
        const Manifests now = parse(all_yaml());
        const Plan want = resolve(now, o, &want_reads);
        std::string status_before, status_want;
        {
            Sha256Stream a, b;
            render_status(a, plan, o);
            render_status(b, want, o);
            status_before = a.digest();
            status_want = b.digest();
        }
        const bool only_trust = skeleton(want, o) == skeleton(plan, o) && status_want == status_before;
        const std::string before = render_http_conf(plan, o) + render_stream_conf(plan, o);
        const PolicyTrust::Update update = index->update(&plan);
        BOOST_TEST_CONTEXT("round " << round << ", changed:" << changed)
        {
            if (update.needs_resolve) {
                BOOST_TEST(render_http_conf(plan, o) + render_stream_conf(plan, o) == before);  // left as it was
                // resolve is asked for what it could have pushed only where
                // another reader of the object may have changed
                BOOST_TEST((!only_trust || read_elsewhere), "resolve asked for what the API could replace");
                resolved++;
                plan = want;
                make_index(plan, want_reads);
                continue;
            }
            BOOST_TEST(skeleton(want, o) == skeleton(plan, o));
            BOOST_TEST(status_want == status_before, render_status(plan, o) + "\n----\n" + render_status(want, o));
            BOOST_TEST_REQUIRE(only_trust);
            fast++;
            if (!update.changed.empty()) pushed++;
            for (const UpstreamPolicy *p : update.changed) client_pushed += !p->client_certificate.empty();
            BOOST_TEST(render_http_conf(plan, o) == render_http_conf(want, o));
            BOOST_TEST(render_stream_conf(plan, o) == render_stream_conf(want, o));
            BOOST_TEST((files_of(plan) == files_of(want)));
            const ApiContent got = api_content(plan, o), wanted = api_content(want, o);
            BOOST_TEST((got.trust == wanted.trust));
            BOOST_TEST((got.servers == wanted.servers));
            for (const UpstreamPolicy *p : update.changed) {
                BOOST_TEST(wanted.trust.count(p->name) == 1u, p->name);
            }
        }
    }
    // every way taken, often
    BOOST_TEST_MESSAGE("fast " << fast << " pushed " << pushed << " (a client certificate " << client_pushed
                               << ") resolved " << resolved);
    BOOST_TEST(fast > 60);
    BOOST_TEST(client_pushed > 10);
    BOOST_TEST(pushed > 40);
    BOOST_TEST(resolved > 40);
}

BOOST_AUTO_TEST_CASE(what_resolve_never_looked_up_changes_nothing)
{
    Options o;
    o.upstream_api = "127.0.0.1:9114";
    const std::string yaml = web_route() + ca_configmap_yaml("ca");
    ResolveReads reads;
    const Manifests m = parse(yaml);
    Plan plan = resolve(m, o, &reads);
    // no policy, no listener certificate: the route's Service alone
    BOOST_TEST(reads.readers.size() == 1u);
    BOOST_TEST(reads.readers[read_key("Service", "ns", "web")] == static_cast<unsigned>(Reader::Route));
    PolicyTrust index(m, plan, o, reads);
    Manifests one;
    one.config_maps.emplace_back().meta.namespace_ = "ns";
    one.config_maps.back().meta.name = "ca";
    index.object_changed("ConfigMap", "ns/ca", &one);
    index.object_changed("ConfigMap", "ns/other", nullptr);
    const PolicyTrust::Update update = index.update(&plan);
    BOOST_TEST(!update.needs_resolve);
    BOOST_TEST(update.changed.empty());
}

BOOST_AUTO_TEST_CASE(the_upstream_api_off_every_trust_change_needs_resolve)
{
    // without the API the CA is in the configuration: a reload's
    Options o;
    const std::string yaml = web_route() + ca_configmap_yaml("ca") + web_policy_yaml();
    ResolveReads reads;
    const Manifests m = parse(yaml);
    Plan plan = resolve(m, o, &reads);
    BOOST_TEST(reads.readers.count("ConfigMap ns/ca") == 1u);
    PolicyTrust index(m, plan, o, reads);
    index.object_changed("ConfigMap", "ns/ca", nullptr);
    BOOST_TEST(index.update(&plan).needs_resolve);
}

BOOST_AUTO_TEST_CASE(two_objects_of_one_name_cannot_be_followed)
{
    Options o;
    o.upstream_api = "127.0.0.1:9114";
    const std::string yaml = web_route() + ca_configmap_yaml("ca") + ca_configmap_yaml("ca") + web_policy_yaml();
    ResolveReads reads;
    const Manifests m = parse(yaml);
    const Plan plan = resolve(m, o, &reads);
    BOOST_TEST(!PolicyTrust(m, plan, o, reads).usable());
}

BOOST_AUTO_TEST_SUITE_END()
