// kube/: kubeconfig files read as kubectl reads them (and what we refuse,
// by name), and watch streams cut into events however the bytes arrive.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kube/kube.h"
#include "plan.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace g2n::kube;

namespace {

struct TempDir {
    fs::path path;
    TempDir()
    {
        char name[] = "/tmp/g2n-kube-XXXXXX";
        path = ::mkdtemp(name);
    }
    ~TempDir() { fs::remove_all(path); }
    std::string write(const std::string &name, const std::string &text) const
    {
        std::ofstream(path / name) << text;
        return (path / name).string();
    }
};

std::string kubeconfig(const std::string &cluster, const std::string &user)
{
    return "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
           "clusters:\n- name: k\n  cluster:\n" + cluster + "users:\n- name: u\n  user:\n" + user;
}

std::string error_of(const std::string &path)
{
    try {
        load_kubeconfig(path);
    } catch (const ApiError &e) {
        return e.what();
    }
    return "";
}

const ApiKind kRoutes{"gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", true, ""};

}  // namespace

BOOST_AUTO_TEST_SUITE(kube)

BOOST_AUTO_TEST_CASE(kubeconfig_as_kubectl_reads_it)
{
    TempDir dir;
    const std::string ca = g2n_test::test_ca();
    dir.write("ca.crt", ca);
    dir.write("token", "s3cret\n");
    // relative files are relative to the kubeconfig, as for kubectl
    ApiServer s = load_kubeconfig(dir.write("config", kubeconfig(
        "    server: https://10.0.0.1:6443/\n    certificate-authority: ca.crt\n", "    tokenFile: token\n")));
    BOOST_TEST(s.url == "https://10.0.0.1:6443");
    BOOST_TEST(s.ca_pem == ca);
    BOOST_TEST(s.token_file == (dir.path / "token").string());
    BOOST_TEST(s.origin.find("context c") != std::string::npos);

    // *-data fields are base64 (decoded by OpenSSL)
    s = load_kubeconfig(dir.write("data", kubeconfig(
        "    server: https://[fd00::1]:443\n    certificate-authority-data: aGVsbG8gQ0E=\n",
        "    client-certificate-data: Y2VydA==\n    client-key-data: a2V5\n    token: t\n")));
    BOOST_TEST(s.ca_pem == "hello CA");
    BOOST_TEST(s.client_cert_pem == "cert");
    BOOST_TEST(s.client_key_pem == "key");
    BOOST_TEST(s.token == "t");
}

BOOST_AUTO_TEST_CASE(kubeconfig_refusals_name_the_field)
{
    TempDir dir;
    const std::string server = "    server: https://k:6443\n";
    BOOST_TEST(error_of(dir.write("a", kubeconfig("    server: http://k:8080\n", "    token: t\n")))
                   .find("clusters[k].cluster.server: must be an https:// URL") != std::string::npos);
    BOOST_TEST(error_of(dir.write("b", kubeconfig(server + "    insecure-skip-tls-verify: true\n", "    token: t\n")))
                   .find("insecure-skip-tls-verify: not supported") != std::string::npos);
    BOOST_TEST(error_of(dir.write("c", kubeconfig(server, "    exec: {command: aws}\n")))
                   .find("users[u].user.exec: not supported") != std::string::npos);
    BOOST_TEST(error_of(dir.write("d", kubeconfig(server, "    client-certificate-data: Y2VydA==\n")))
                   .find("client-certificate and client-key go together") != std::string::npos);
    BOOST_TEST(error_of(dir.write("e", kubeconfig(server, "    client-key-data: '%%%'\n")))
                   .find("client-key-data: not base64") != std::string::npos);
    BOOST_TEST(error_of(dir.write("f", "apiVersion: v1\nkind: Config\n")).find("no current-context") != std::string::npos);
    BOOST_TEST(error_of(dir.write("g", "current-context: x\ncontexts: []\n")).find("no context named \"x\"")
               != std::string::npos);
    BOOST_TEST(error_of(dir.write("h", kubeconfig(server + "    certificate-authority: missing.crt\n", "")))
                   .find("cannot read") != std::string::npos);
    BOOST_TEST(error_of((dir.path / "none").string()).find("kubeconfig") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(in_cluster_reads_the_service_account)
{
    TempDir dir;
    dir.write("ca.crt", "CA");
    dir.write("token", "tok");
    ::setenv("GATEWAY2NGINX_SERVICE_ACCOUNT_DIR", dir.path.c_str(), 1);
    ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ApiServer s = in_cluster();
    BOOST_TEST(s.url == "https://[fd00::1]:443");
    BOOST_TEST(s.ca_pem == "CA");
    BOOST_TEST(s.token_file == (dir.path / "token").string());
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    BOOST_CHECK_THROW(in_cluster(), ApiError);
    ::unsetenv("KUBERNETES_SERVICE_PORT");
    ::unsetenv("GATEWAY2NGINX_SERVICE_ACCOUNT_DIR");
}

// The same stream, whole or cut at every byte: the same objects, the
// same resourceVersion; a list item's missing apiVersion and kind added.
BOOST_AUTO_TEST_CASE(watch_streams_cut_anywhere)
{
    const std::string stream =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"5\"},"
        "\"spec\":{\"x\":\"line\\nbreak\"}}}\n"
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"6\"}}}\n"
        "\n"
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"HTTPRoute\",\"metadata\":{\"resourceVersion\":\"9\"}}}\n"
        "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"10\"}}}\n";
    std::mt19937 random(7);
    for (int round = 0; round < 200; round++) {
        ObjectStore store;
        WatchDecoder decoder(kRoutes, &store);
        for (size_t at = 0; at < stream.size();) {
            const size_t n = round == 0 ? stream.size() : 1 + random() % 40;
            BOOST_TEST_REQUIRE((decoder.feed(std::string_view(stream).substr(at, n)) == WatchDecoder::Outcome::Continue));
            at += n;
        }
        BOOST_TEST_REQUIRE(store.size() == 1u);
        BOOST_TEST(decoder.resource_version() == "10");
        BOOST_TEST(decoder.events() == 3u);
        const auto texts = store.texts();
        BOOST_TEST(texts[0].first == "<api gateway.networking.k8s.io/HTTPRoute/ns/b>");
        BOOST_TEST(texts[0].second->find("\"apiVersion\":\"gateway.networking.k8s.io/v1\"") != std::string::npos);
        BOOST_TEST(texts[0].second->find("\"kind\":\"HTTPRoute\"") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(watch_errors)
{
    ObjectStore store;
    WatchDecoder gone(kRoutes, &store);
    BOOST_TEST((gone.feed("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
                          "\"message\":\"too old resource version: 1 (5)\"}}\n") == WatchDecoder::Outcome::Expired));
    BOOST_TEST(gone.error().find("too old resource version") != std::string::npos);
    WatchDecoder other(kRoutes, &store);
    BOOST_TEST((other.feed("{\"type\":\"ERROR\",\"object\":{\"code\":500,\"message\":\"x\"}}\n")
                == WatchDecoder::Outcome::Failed));
    for (const char *bad : {"not json\n", "{\"type\":\"ADDED\"}\n", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}\n",
                            "{\"type\":\"RENAMED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n", "[1,2]\n"}) {
        WatchDecoder decoder(kRoutes, &store);
        BOOST_TEST((decoder.feed(bad) == WatchDecoder::Outcome::Failed), bad);
        BOOST_TEST(!decoder.error().empty(), bad);
    }
    BOOST_TEST(store.size() == 0u);
}

// A status write (ours comes back as an event) is held but applies
// nothing; a change of anything else does.
BOOST_AUTO_TEST_CASE(status_only_changes_signal_nothing)
{
    ObjectStore store;
    WatchDecoder decoder(kRoutes, &store);
    uint64_t count = 0;
    auto signalled = [&] { return ::read(store.change_fd(), &count, sizeof count) == static_cast<ssize_t>(sizeof count); };
    decoder.feed(R"({"type":"ADDED","object":{"metadata":{"name":"r","namespace":"ns","resourceVersion":"1"},"spec":{"a":1}}})" "\n");
    BOOST_TEST(signalled());
    decoder.feed(R"({"type":"MODIFIED","object":{"metadata":{"name":"r","namespace":"ns","resourceVersion":"2",)"
                 R"("managedFields":[{"manager":"x"}]},"spec":{"a":1},"status":{"parents":[]}}})" "\n");
    BOOST_TEST(!signalled());
    BOOST_TEST(store.texts().at(0).second->find(R"("resourceVersion":"2")") != std::string::npos, "the JSON held is the newest");
    decoder.feed(R"({"type":"MODIFIED","object":{"metadata":{"name":"r","namespace":"ns","resourceVersion":"3"},"spec":{"a":2}}})" "\n");
    BOOST_TEST(signalled());

    // a Service's status is its load balancer's addresses: read, so a change
    const ApiKind services{"", "v1", "services", "Service", true, ""};
    WatchDecoder service(services, &store);
    service.feed(R"({"type":"ADDED","object":{"metadata":{"name":"gw","namespace":"ns","resourceVersion":"4"},"spec":{}}})" "\n");
    BOOST_TEST(signalled());
    service.feed(R"({"type":"MODIFIED","object":{"metadata":{"name":"gw","namespace":"ns","resourceVersion":"5"},"spec":{},)"
                 R"("status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.9"}]}}}})" "\n");
    BOOST_TEST(signalled());
}

// What nothing reads is not kept: field managers, kubectl's last applied
// copy (often most of an object applied with kubectl).
BOOST_AUTO_TEST_CASE(store_keeps_what_is_read)
{
    ObjectStore store;
    WatchDecoder decoder(kRoutes, &store);
    decoder.feed(R"({"type":"ADDED","object":{"metadata":{"name":"r","namespace":"ns","resourceVersion":"1",)"
                 R"("managedFields":[{"manager":"kubectl"}],"annotations":{"keep":"me",)"
                 R"("kubectl.kubernetes.io/last-applied-configuration":"{\"spec\":{\"a\":1}}"}},"spec":{"a":1}}})" "\n");
    const std::string held = *store.texts().at(0).second;
    BOOST_TEST(held.find("managedFields") == std::string::npos, held);
    BOOST_TEST(held.find("last-applied") == std::string::npos, held);
    BOOST_TEST(held.find(R"("annotations":{"keep":"me"})") != std::string::npos, held);
    BOOST_TEST(held.find(R"("resourceVersion":"1")") != std::string::npos, held);
}

// Of an EndpointSlice, what the EndpointSlice controller writes beside
// addresses, ports and conditions is not kept either, and a change there
// alone (a Pod on another node) is no change.
BOOST_AUTO_TEST_CASE(store_keeps_of_a_slice_what_is_read)
{
    const ApiKind slices{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, ""};
    ObjectStore store;
    WatchDecoder decoder(slices, &store);
    uint64_t count = 0;
    auto signalled = [&] { return ::read(store.change_fd(), &count, sizeof count) == static_cast<ssize_t>(sizeof count); };
    auto slice = [](const std::string &version, const std::string &node, const std::string &address) {
        return R"({"type":"MODIFIED","object":{"metadata":{"name":"s","namespace":"ns","resourceVersion":")" + version
               + R"(","labels":{"kubernetes.io/service-name":"web"},"ownerReferences":[{"kind":"Service","name":"web"}]},)"
               R"("addressType":"IPv4","ports":[{"name":"https","port":8443}],"endpoints":[{"addresses":[")" + address
               + R"("],"conditions":{"ready":true},"nodeName":")" + node + R"(","zone":"z1",)"
               R"("targetRef":{"kind":"Pod","namespace":"ns","name":"web-1","uid":"0f8e5c1a"},"hints":{"forZones":[{"name":"z1"}]}}]}})" "\n";
    };
    decoder.feed(slice("1", "node-a", "10.0.0.1"));
    BOOST_TEST(signalled());
    const std::string held = *store.texts().at(0).second;
    for (const char *gone : {"ownerReferences", "targetRef", "nodeName", "zone", "hints"}) {
        BOOST_TEST(held.find(gone) == std::string::npos, gone << " in " << held);
    }
    for (const char *kept : {R"("addresses":["10.0.0.1"])", R"("conditions":{"ready":true})", R"("port":8443)",
                             R"("kubernetes.io/service-name":"web")"}) {
        BOOST_TEST(held.find(kept) != std::string::npos, kept << " not in " << held);
    }
    decoder.feed(slice("2", "node-b", "10.0.0.1"));
    BOOST_TEST(!signalled(), "the Pod on another node: no change");
    decoder.feed(slice("3", "node-b", "10.0.0.2"));
    BOOST_TEST(signalled(), "another address: a change");
}

// A ConfigMap nothing wants is held as a digest: not read, its changes
// not said; once wanted it is fetched (fill) and said; let go again when
// no longer wanted; a watch event that comes first wins over a fetch.
BOOST_AUTO_TEST_CASE(store_holds_unwanted_config_maps_as_digests)
{
    const ApiKind config_maps{"", "v1", "configmaps", "ConfigMap", true, ""};
    ObjectStore store;
    store.hold_wanted_only(config_maps);
    WatchDecoder decoder(config_maps, &store);
    uint64_t count = 0;
    auto signalled = [&] { return ::read(store.change_fd(), &count, sizeof count) == static_cast<ssize_t>(sizeof count); };
    auto event = [](const std::string &type, const std::string &name, const std::string &value) {
        return R"({"type":")" + type + R"(","object":{"metadata":{"name":")" + name
               + R"(","namespace":"ns","resourceVersion":"1"},"data":{"big":")" + value + R"("}}})" "\n";
    };
    const std::string big(100000, 'x');
    decoder.feed(event("ADDED", "junk", big));
    decoder.feed(event("ADDED", "ca", "pem"));
    BOOST_TEST(!signalled(), "nothing wants them: no change");
    BOOST_TEST(store.texts().empty());
    BOOST_TEST(!store.get(config_maps, "ns/junk").has_value());
    BOOST_TEST(store.held().first == 2u);
    BOOST_TEST(store.held().second == 0u);
    decoder.feed(event("MODIFIED", "junk", big + "y"));
    BOOST_TEST(!signalled(), "a change of one nothing wants: none");

    const std::string ca = ObjectStore::key_of(config_maps, "ns/ca");
    const std::vector<std::string> fetch = store.want({ca, ObjectStore::key_of(config_maps, "ns/missing")});
    BOOST_TEST(fetch == std::vector<std::string>{ca}, "only what is held as a digest is fetched");
    BOOST_TEST(store.fill(config_maps, "ns/ca", R"({"data":{"big":"pem"}})", "digest"));
    BOOST_TEST(signalled(), "fetched: a change");
    BOOST_TEST(store.texts().size() == 1u);
    BOOST_TEST(!store.fill(config_maps, "ns/ca", "{}", "digest"), "held whole already: nothing to fill");
    decoder.feed(event("MODIFIED", "ca", "pem2"));
    BOOST_TEST(signalled(), "a change of one wanted: said");
    BOOST_TEST(store.get(config_maps, "ns/ca")->find("pem2") != std::string::npos);
    // a wanted one made later is held whole at once
    decoder.feed(event("ADDED", "missing", "late"));
    BOOST_TEST(signalled());
    BOOST_TEST(store.held().second == 2u);

    BOOST_TEST(store.want({}).empty());
    BOOST_TEST(store.held().second == 0u, "let go once no longer wanted");
    BOOST_TEST(!store.fill(config_maps, "ns/ca", "{}", "digest"), "not wanted: not filled");
    decoder.feed(event("DELETED", "junk", big));
    BOOST_TEST(!signalled(), "one nothing wants, deleted: no change");
    BOOST_TEST(store.held().first == 2u);
}

// What changed since the changes were last taken, as the objects are now;
// a relist says only what differs.
BOOST_AUTO_TEST_CASE(store_says_what_changed)
{
    ObjectStore store;
    const ApiKind slices{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, ""};
    auto said = [&] {
        std::string out;
        for (const ObjectChange &c : store.take_changes()) {
            const std::optional<std::string> json = store.json_of(c);
            out += c.kind + " " + c.name_key + "=" + (json ? *json : "(deleted)") + " ";
        }
        return out;
    };
    store.put(slices, "ns/a", "{1}", "a1");
    store.put(slices, "ns/b", "{1}", "b1");
    store.put(slices, "ns/a", "{2}", "a2");
    BOOST_TEST(said() == "EndpointSlice ns/a={2} EndpointSlice ns/b={1} ");
    BOOST_TEST(said() == "");
    store.put(slices, "ns/a", "{3}", "a2");  // its status or version only
    BOOST_TEST(said() == "");
    store.erase(slices, "ns/b");
    store.erase(slices, "ns/nothing");
    BOOST_TEST(said() == "EndpointSlice ns/b=(deleted) ");
    store.put(kRoutes, "ns/r", "{r}", "r1");
    // a relist: a unchanged, c new; the route is another kind's
    store.replace_kind(slices, {{"ns/a", {"{4}", "a2"}}, {"ns/c", {"{1}", "c1"}}});
    BOOST_TEST(said() == "EndpointSlice ns/c={1} HTTPRoute ns/r={r} ");
    store.replace_kind(slices, {{"ns/c", {"{1}", "c2"}}});
    BOOST_TEST(said() == "EndpointSlice ns/a=(deleted) EndpointSlice ns/c={1} ");
}

BOOST_AUTO_TEST_CASE(store_replaces_one_kind_and_signals)
{
    ObjectStore store;
    const ApiKind services{"", "v1", "services", "Service", true, ""};
    store.put(services, "ns/a", "{}");
    store.put(kRoutes, "ns/r", "{}");
    store.replace_kind(services, {{"ns/b", {"{}", "{}"}}, {"ns/c", {"{}", "{}"}}});
    std::string keys;
    for (const auto &[name, text] : store.texts()) keys += name + " ";
    BOOST_TEST(keys == "<api core/Service/ns/b> <api core/Service/ns/c> <api gateway.networking.k8s.io/HTTPRoute/ns/r> ");
    uint64_t count = 0;
    BOOST_TEST(::read(store.change_fd(), &count, sizeof count) == static_cast<ssize_t>(sizeof count));
    BOOST_TEST(count == 3u);
    store.drain_changes();
}


// ---- status written back ----------------------------------------------------

namespace {

g2n::ObjectStatus route_status(const char *accepted)
{
    g2n::ObjectStatus st;
    st.api_version = "gateway.networking.k8s.io/v1";
    st.kind = "HTTPRoute";
    st.meta.name = "r";
    st.meta.namespace_ = "ns";
    st.meta.generation = 3;
    st.refs_key = "parents";
    g2n::ObjectStatus::RefStatus ref;
    ref.namespace_ = "ns";
    ref.name = "gw";
    ref.conditions.push_back(g2n::Condition{"Accepted", accepted, "Accepted", "fine"});
    ref.conditions.push_back(g2n::Condition{"ResolvedRefs", "True", "ResolvedRefs", "fine"});
    st.refs.push_back(ref);
    return st;
}

const std::string kForeign =
    R"({"parentRef":{"name":"gw"},"controllerName":"example.com/other","conditions":[{"type":"X","weird":[1,{"a":null}]}]})";

// HTTPRoute ns/NAME as the API server holds it
std::string route_object(const std::string &name)
{
    return R"({"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",)"
           R"("metadata":{"name":")" + name + R"(","namespace":"ns","resourceVersion":"7"},"spec":{}})";
}

// Whether `done` came true within 10 s
bool eventually(const std::function<bool()> &done)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
}

// An API server that is not there: every write fails, and says so
ApiServer nowhere()
{
    ApiServer server;
    server.url = "https://127.0.0.1:1";
    return server;
}

// Statuses offered as ready JSON, one (kind, namespace, name, ours) each
struct Update {
    const ApiKind *kind;
    std::string namespace_, name, ours;
    std::string uid = {};  // (none: as in files)
};

class Updates : public StatusOffer {
public:
    explicit Updates(std::vector<Update> updates) : updates_(std::move(updates)) {}
    size_t size() const override { return updates_.size(); }
    Object object(size_t i) const override
    {
        return {updates_[i].kind, updates_[i].namespace_, updates_[i].name, updates_[i].uid};
    }
    std::string ours(size_t i) const override { return updates_[i].ours; }

private:
    std::vector<Update> updates_;
};

std::shared_ptr<const StatusOffer> offer_of(std::vector<Update> updates)
{
    return std::make_shared<Updates>(std::move(updates));
}

}  // namespace

// A status the objects hold already takes no token of the write rate: a
// thousand of them go by at once, though the writer may write one a minute.
BOOST_AUTO_TEST_CASE(unchanged_statuses_cost_no_write_and_no_wait)
{
    const std::string controller = "gateway2nginx.io/controller";
    const std::string ours = our_status_json(route_status("True"), controller, {});
    ObjectStore store;
    std::vector<Update> updates;
    for (int i = 0; i < 1000; i++) {
        const std::string name = "r" + std::to_string(i);
        std::optional<std::string> written = merge_status(ours, route_object(name), controller, "2026-01-01T00:00:00Z");
        BOOST_TEST_REQUIRE(written.has_value());
        store.put(kRoutes, "ns/" + name, *written);
        updates.push_back(Update{&kRoutes, "ns", name, ours});
    }
    StatusWriter writer(nowhere(), &store, controller, [] { return true; }, [](const std::string &) {},
                        /*qps=*/1.0 / 60, /*burst=*/1);
    BOOST_TEST_REQUIRE(eventually([&] { return writer.wants_everything(); }), "it leads");
    writer.offer(offer_of(updates));
    eventually([&] { return writer.counts().unchanged >= 1000; });
    BOOST_TEST(writer.counts().unchanged == 1000u);
    BOOST_TEST(writer.counts().written == 0u);
    BOOST_TEST(writer.counts().failed == 0u);
}

// A replica that does not lead keeps no status whole (only digests of
// what it was offered): come to lead, it asks for every status again, and
// writes what that offer holds, not what earlier ones held (an object left
// out since, deleted or no longer ours, is not written).
BOOST_AUTO_TEST_CASE(a_new_leader_writes_what_it_is_offered_again)
{
    const std::string controller = "gateway2nginx.io/controller";
    const std::string ours = our_status_json(route_status("True"), controller, {});
    ObjectStore store;
    std::vector<Update> updates;
    for (const std::string name : {"kept", "gone"}) {
        store.put(kRoutes, "ns/" + name, route_object(name));
        updates.push_back(Update{&kRoutes, "ns", name, ours});
    }
    std::atomic<bool> leading{false};
    std::mutex logged_mutex;
    std::vector<std::string> logged;
    StatusWriter writer(nowhere(), &store, controller, [&] { return leading.load(); },
                        [&](const std::string &line) {
                            std::lock_guard<std::mutex> lock(logged_mutex);
                            logged.push_back(line);
                        });
    writer.offer(offer_of(updates));
    BOOST_TEST(writer.idle(), "a follower queues nothing");
    BOOST_TEST(!writer.wants_everything());
    leading = true;
    BOOST_TEST_REQUIRE(eventually([&] { return writer.wants_everything(); }), "come to lead, it asks for every status");
    writer.offer(offer_of({updates[0]}));  // what run offers then: "gone" is gone
    BOOST_TEST(!writer.wants_everything());
    auto tried = [&](const std::string &name) {
        std::lock_guard<std::mutex> lock(logged_mutex);
        return std::any_of(logged.begin(), logged.end(),
                           [&](const std::string &l) { return l.find("HTTPRoute ns/" + name + ":") != std::string::npos; });
    };
    BOOST_TEST(eventually([&] { return tried("kept"); }), "the status offered again is written (and fails: no API server)");
    BOOST_TEST(!tried("gone"));
}

// A writer that leads and whose every write fails (no API server: each is
// tried again after a second), its log lines kept: which objects it tried
struct FailingWriter {
    explicit FailingWriter(const std::vector<std::string> &routes)
    {
        for (const std::string &name : routes) store.put(kRoutes, "ns/" + name, route_object(name));
        BOOST_TEST_REQUIRE(eventually([&] { return writer.wants_everything(); }), "it leads");
    }
    // whether `name` was tried after the first `from` log lines
    bool tried_since(const std::string &name, size_t from)
    {
        std::lock_guard<std::mutex> lock(logged_mutex);
        return std::any_of(logged.begin() + static_cast<std::ptrdiff_t>(std::min(from, logged.size())), logged.end(),
                           [&](const std::string &l) { return l.find("HTTPRoute ns/" + name + ":") != std::string::npos; });
    }
    size_t logged_now()
    {
        std::lock_guard<std::mutex> lock(logged_mutex);
        return logged.size();
    }

    const std::string controller = "gateway2nginx.io/controller";
    ObjectStore store;
    std::mutex logged_mutex;
    std::vector<std::string> logged;
    StatusWriter writer{nowhere(), &store, controller, [] { return true; },
                        [this](const std::string &line) {
                            std::lock_guard<std::mutex> lock(logged_mutex);
                            logged.push_back(line);
                        }};
};

// A status still to be written when the next offer comes stays queued,
// found again in the new offer (where its place may differ); one no longer
// offered is not tried again.
BOOST_AUTO_TEST_CASE(a_queued_status_is_found_again_in_the_next_offer)
{
    FailingWriter w({"a", "b", "c", "d"});
    const std::string ours = our_status_json(route_status("True"), w.controller, {});
    w.writer.offer(offer_of({{&kRoutes, "ns", "a", ours}, {&kRoutes, "ns", "b", ours}, {&kRoutes, "ns", "c", ours}}));
    w.writer.offer(offer_of({{&kRoutes, "ns", "c", ours}, {&kRoutes, "ns", "d", ours}}));
    const size_t mark = w.logged_now();
    BOOST_TEST(eventually([&] { return w.tried_since("c", mark) && w.tried_since("d", mark); }),
               "c, still queued, and d, new, are tried");
    const size_t later = w.logged_now();
    BOOST_TEST(eventually([&] { return w.tried_since("c", later) && w.tried_since("d", later); }), "and tried again");
    BOOST_TEST(!w.tried_since("a", later));
    BOOST_TEST(!w.tried_since("b", later));
}

// A status new or changed goes before the backlog (those still queued):
// a new route's status is not held back behind thousands re-written.
BOOST_AUTO_TEST_CASE(a_new_status_goes_before_those_still_queued)
{
    std::vector<std::string> names;
    for (int i = 0; i < 40; i++) names.push_back("old" + std::to_string(i));
    FailingWriter w(names);
    const std::string ours = our_status_json(route_status("True"), w.controller, {});
    std::vector<Update> updates;
    for (const std::string &name : names) updates.push_back({&kRoutes, "ns", name, ours});
    w.writer.offer(offer_of(updates));
    BOOST_TEST_REQUIRE(eventually([&] { return w.tried_since("old0", 0); }));
    updates.push_back({&kRoutes, "ns", "new", ours});
    w.store.put(kRoutes, "ns/new", route_object("new"));
    const size_t mark = w.logged_now();
    w.writer.offer(offer_of(updates));
    BOOST_TEST_REQUIRE(eventually([&] { return w.tried_since("new", mark); }));
    // of the backlog, at most the write under way when it came, and the
    // next the rate allowed, went first
    size_t before = 0;
    {
        std::lock_guard<std::mutex> lock(w.logged_mutex);
        for (size_t i = mark; i < w.logged.size() && w.logged[i].find("HTTPRoute ns/new:") == std::string::npos; i++) before++;
    }
    BOOST_TEST(before <= 2u);
}

// An offer made in place (run's route changes: a few statuses new or
// changed, every other where the last offer had it, moved by them) looks
// only at those it names: the others are not queued again, the one gone
// is forgotten, and the writer counts what is offered.
BOOST_AUTO_TEST_CASE(an_offer_in_place_looks_only_at_what_it_names)
{
    FailingWriter w({});
    const std::string ours = our_status_json(route_status("True"), w.controller, {});
    const std::string other = our_status_json(route_status("False"), w.controller, {});
    std::vector<Update> updates;
    for (int i = 0; i < 100; i++) {
        const std::string name = "r" + std::to_string(i);
        w.store.put(kRoutes, "ns/" + name, *merge_status(ours, route_object(name), w.controller, "2026-01-01T00:00:00Z"));
        updates.push_back({&kRoutes, "ns", name, ours});
    }
    w.writer.offer(offer_of(updates));
    BOOST_TEST_REQUIRE(eventually([&] { return w.writer.idle() && w.writer.counts().unchanged == 100u; }));
    // r5 gone, "new" before r3 (at 3), r7 changed; the rest moved
    std::vector<Update> now;
    std::vector<int64_t> from;
    for (int i = 0; i < 100; i++) {
        if (i == 3) {
            now.push_back({&kRoutes, "ns", "new", ours});
            from.push_back(-1);
        }
        if (i == 5) continue;
        now.push_back({&kRoutes, "ns", "r" + std::to_string(i), i == 7 ? other : ours});
        from.push_back(i == 7 ? -1 : i);
    }
    w.store.put(kRoutes, "ns/new", route_object("new"));
    const uint64_t digested = w.writer.counts().digested;
    w.writer.offer(offer_of(now), &from);
    BOOST_TEST(w.writer.counts().offered == 100u);
    BOOST_TEST(w.writer.counts().digested - digested == 2u, "only the two it names were digested");
    BOOST_TEST(eventually([&] { return w.tried_since("new", 0) && w.tried_since("r7", 0); }),
               "the new and the changed are written (and fail: no API server)");
    BOOST_TEST(w.writer.counts().unchanged == 100u, "no other was looked at again");
    // a whole offer of the same after it: r7 and new still queued (they
    // failed), r5 not offered, nothing else written
    w.writer.offer(offer_of(now));
    const size_t mark = w.logged_now();
    BOOST_TEST(eventually([&] { return w.tried_since("new", mark) && w.tried_since("r7", mark); }));
    BOOST_TEST(!w.tried_since("r5", 0));
    BOOST_TEST(w.writer.counts().unchanged == 100u);
}

// A status still queued that an offer in place names again, unchanged,
// stays queued: it is still to be written.
BOOST_AUTO_TEST_CASE(an_offer_in_place_keeps_what_is_still_queued)
{
    const std::string controller = "gateway2nginx.io/controller";
    const std::string ours = our_status_json(route_status("True"), controller, {});
    ObjectStore store;
    std::vector<Update> updates;
    for (const std::string name : {"a", "b", "c"}) {
        store.put(kRoutes, "ns/" + name, route_object(name));
        updates.push_back(Update{&kRoutes, "ns", name, ours});
    }
    std::mutex logged_mutex;
    std::vector<std::string> logged;
    // one write a minute: the first is tried (and fails: no API server),
    // the other two wait their turn
    StatusWriter writer(nowhere(), &store, controller, [] { return true; },
                        [&](const std::string &line) {
                            std::lock_guard<std::mutex> lock(logged_mutex);
                            logged.push_back(line);
                        },
                        /*qps=*/1.0 / 60, /*burst=*/1);
    BOOST_TEST_REQUIRE(eventually([&] { return writer.wants_everything(); }), "it leads");
    writer.offer(offer_of(updates));
    BOOST_TEST_REQUIRE(eventually([&] {
        std::lock_guard<std::mutex> lock(logged_mutex);
        return !logged.empty();
    }));
    BOOST_TEST_REQUIRE(eventually([&] { return writer.counts().queued == 3u; }), "all three still to be written");
    const std::vector<int64_t> from = {0, -1, 2};  // b named anew, the same
    writer.offer(offer_of(updates), &from);
    BOOST_TEST(writer.counts().queued == 3u, "b is still to be written");
}

// An object deleted and made again under its name (kubectl replace
// --force, within one debounce) is offered the same status: it is another
// object, without it, and it is written, whether offered whole or in place.
BOOST_AUTO_TEST_CASE(an_object_made_again_is_written_though_its_status_is_the_same)
{
    for (const bool in_place : {false, true}) {
        FailingWriter w({});
        const std::string ours = our_status_json(route_status("True"), w.controller, {});
        w.store.put(kRoutes, "ns/r", *merge_status(ours, route_object("r"), w.controller, "2026-01-01T00:00:00Z"));
        w.writer.offer(offer_of({{&kRoutes, "ns", "r", ours, "uid-1"}}));
        BOOST_TEST_REQUIRE(eventually([&] { return w.writer.idle() && w.writer.counts().unchanged == 1u; }));
        w.store.put(kRoutes, "ns/r", route_object("r"));  // made again: no status
        const std::vector<int64_t> from = {-1};
        w.writer.offer(offer_of({{&kRoutes, "ns", "r", ours, "uid-2"}}), in_place ? &from : nullptr);
        BOOST_TEST(eventually([&] { return w.tried_since("r", 0); }),
                   (in_place ? "in place" : "whole") << ": the object made again is written (and fails: no API server)");
    }
}

// While a configuration is made from the start, the last one's statuses
// are let go once every one is written; while some are still queued they
// are kept and written all the same
BOOST_AUTO_TEST_CASE(a_withdrawn_offer_is_let_go_once_written)
{
    FailingWriter w({"a", "b"});
    const std::string ours = our_status_json(route_status("True"), w.controller, {});
    auto failing = offer_of({{&kRoutes, "ns", "a", ours}, {&kRoutes, "ns", "b", ours}});
    std::weak_ptr<const StatusOffer> held = failing;
    w.writer.offer(std::move(failing));
    BOOST_TEST_REQUIRE(eventually([&] { return w.tried_since("a", 0) && w.tried_since("b", 0); }));
    w.writer.withdraw();
    const size_t mark = w.logged_now();
    BOOST_TEST(eventually([&] { return w.tried_since("a", mark) && w.tried_since("b", mark); }),
               "still queued: kept, and tried again");
    BOOST_TEST(!held.expired());
    // statuses the objects already have: nothing queued once looked at
    w.store.put(kRoutes, "ns/c", *merge_status(ours, route_object("c"), w.controller, "2026-01-01T00:00:00Z"));
    auto written = offer_of({{&kRoutes, "ns", "c", ours}});
    held = written;
    w.writer.offer(std::move(written));
    BOOST_TEST_REQUIRE(eventually([&] { return w.writer.idle(); }), "a and b no longer offered, c has its status");
    BOOST_TEST(!held.expired());
    w.writer.withdraw();
    BOOST_TEST(eventually([&] { return held.expired(); }), "every one written: let go");
}

BOOST_AUTO_TEST_CASE(status_merge_keeps_other_controllers)
{
    const std::string controller = "gateway2nginx.io/controller";
    const std::string ours = our_status_json(route_status("True"), controller, {});
    const std::string object = R"({"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",)"
                               R"("metadata":{"name":"r","namespace":"ns","resourceVersion":"7"},"spec":{},)"
                               R"("status":{"parents":[)" + kForeign + "]}}";
    std::optional<std::string> first = merge_status(ours, object, controller, "2026-01-01T00:00:00Z");
    BOOST_TEST_REQUIRE(first.has_value());
    BOOST_TEST(first->find(kForeign) != std::string::npos, "the other controller's entry, byte for byte");
    BOOST_TEST(first->find("\"resourceVersion\":\"7\"") != std::string::npos);
    BOOST_TEST(first->find("\"observedGeneration\":3,\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"") != std::string::npos);

    // the same status again: nothing to write, whatever the time
    BOOST_TEST(!merge_status(ours, *first, controller, "2026-06-01T00:00:00Z").has_value());

    // a condition that changes status takes the new time; one that stays keeps its own
    const std::string changed = our_status_json(route_status("False"), controller, {});
    std::optional<std::string> second = merge_status(changed, *first, controller, "2026-06-01T00:00:00Z");
    BOOST_TEST_REQUIRE(second.has_value());
    BOOST_TEST(second->find(R"("type":"Accepted","status":"False")") != std::string::npos);
    BOOST_TEST(second->find("2026-06-01T00:00:00Z") != std::string::npos);
    BOOST_TEST(second->find(R"("reason":"ResolvedRefs","message":"fine","observedGeneration":3,"lastTransitionTime":"2026-01-01T00:00:00Z")")
               != std::string::npos);
    BOOST_TEST(second->find(kForeign) != std::string::npos);

    // no parent of ours any more: our entry goes, theirs stays
    g2n::ObjectStatus detached = route_status("True");
    detached.refs.clear();
    std::optional<std::string> third = merge_status(our_status_json(detached, controller, {}), *second, controller, "t");
    BOOST_TEST_REQUIRE(third.has_value());
    BOOST_TEST(third->find(controller) == std::string::npos);
    BOOST_TEST(third->find(kForeign) != std::string::npos);

    BOOST_CHECK_THROW(merge_status(ours, "not json", controller, "t"), ApiError);
}

// found by fuzz_kube: merging twice must change nothing the second time,
// whatever else the object's status holds
BOOST_AUTO_TEST_CASE(status_merge_is_idempotent)
{
    const std::string controller = "c";
    const std::string ours = our_status_json(route_status("True"), controller, {});
    for (const std::string &object : {
             std::string(R"({"type":"ADDED","status":{"metadata":{"ns":"ns","x":"1"},"metadata":{"resourceVersion":"2"}}})"),
             std::string(R"({"status":{"parents":[{"controllerName":"c"},{"controllerName":"c","parentRef":{}}]}})"),
             std::string(R"({"status":{"parents":"not a list"}})"), std::string(R"({"status":[]})")}) {
        std::optional<std::string> once = merge_status(ours, object, controller, "now");
        BOOST_TEST_REQUIRE(once.has_value(), object);
        std::optional<std::string> twice = merge_status(ours, *once, controller, "later");
        BOOST_TEST(!twice.has_value(), object << "\n -> " << *once << "\n -> " << twice.value_or(""));
    }
}

BOOST_AUTO_TEST_CASE(status_of_a_gateway_is_ours_whole)
{
    g2n::ObjectStatus gw;
    gw.api_version = "gateway.networking.k8s.io/v1";
    gw.kind = "Gateway";
    gw.meta.name = "gw";
    gw.meta.generation = 2;
    gw.addresses = {{"IPAddress", "10.0.0.1"}, {"Hostname", "lb.example.com"}};
    gw.conditions.push_back(g2n::Condition{"Programmed", "True", "Programmed", ""});
    g2n::ObjectStatus::ListenerStatus l;
    l.name = "http";
    l.attached_routes = 4;
    l.supported_kinds = {"HTTPRoute"};
    l.conditions.push_back(g2n::Condition{"Accepted", "True", "Accepted", ""});
    gw.listeners.push_back(l);
    const std::string ours = our_status_json(gw, "c", {});
    std::optional<std::string> out = merge_status(
        ours, R"({"metadata":{"name":"gw"},"status":{"listeners":[{"name":"http","attachedRoutes":1,)"
              R"("conditions":[{"type":"Accepted","status":"True","lastTransitionTime":"then"}]}],"extra":1}})",
        "c", "now");
    BOOST_TEST_REQUIRE(out.has_value());
    BOOST_TEST(out->find(R"("addresses":[{"type":"IPAddress","value":"10.0.0.1"},{"type":"Hostname","value":"lb.example.com"}])") != std::string::npos);
    BOOST_TEST(out->find(R"("attachedRoutes":4)") != std::string::npos);
    BOOST_TEST(out->find(R"("lastTransitionTime":"then")") != std::string::npos, "the listener's condition kept its time");
    BOOST_TEST(out->find(R"("extra":1)") != std::string::npos, "fields we do not write are left");
    BOOST_TEST(!merge_status(ours, *out, "c", "later").has_value());
}


// --watch-namespace: a reflector per watched namespace of each namespaced
// kind; its list replaces its namespace's objects and no one else's.
BOOST_AUTO_TEST_CASE(watched_namespaces_are_listed_and_replaced_apart)
{
    const ApiKind classes{"gateway.networking.k8s.io", "v1", "gatewayclasses", "GatewayClass", false, ""};
    const ApiKind services{"", "v1", "services", "Service", true, ""};
    const std::vector<ApiKind> kinds{classes, kRoutes, services};
    BOOST_TEST(scoped_kinds(kinds, {}).size() == 3u, "no namespace named: every kind whole");
    const std::vector<ApiKind> scoped = scoped_kinds(kinds, {"a", "b"}, {{"Service", "gateway-system"}});
    std::vector<std::string> paths;
    for (const ApiKind &k : scoped) paths.push_back(k.path());
    const std::vector<std::string> expected{
        "/apis/gateway.networking.k8s.io/v1/gatewayclasses",
        "/apis/gateway.networking.k8s.io/v1/namespaces/a/httproutes",
        "/apis/gateway.networking.k8s.io/v1/namespaces/b/httproutes",
        "/api/v1/namespaces/a/services",
        "/api/v1/namespaces/b/services",
        "/api/v1/namespaces/gateway-system/services",
    };
    BOOST_TEST(paths == expected, boost::test_tools::per_element());
    BOOST_TEST(scoped[3].described() == "Service in a");
    // an object's own path is its namespace's, whatever the scope
    BOOST_TEST(scoped[3].object_path("x", "web") == "/api/v1/namespaces/x/services/web");

    ObjectStore store;
    auto object = [](const std::string &ns, const std::string &name) {
        return std::make_pair(R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns + R"("}})", ns + name);
    };
    store.replace_kind(scoped[3], {{"a/web", object("a", "web")}});
    store.replace_kind(scoped[4], {{"b/web", object("b", "web")}, {"b/db", object("b", "db")}});
    BOOST_TEST(store.of_kind(services).size() == 3u);
    store.take_changes();
    store.replace_kind(scoped[3], {});  // a's list: empty now
    const auto held = store.of_kind(services);
    BOOST_TEST_REQUIRE(held.size() == 2u, "b's objects stay");
    BOOST_TEST(held[0].first == "b/db");
    const std::vector<ObjectChange> changes = store.take_changes();
    BOOST_TEST_REQUIRE(changes.size() == 1u);
    BOOST_TEST(changes[0].name_key == "a/web", "a's is gone, and said");
}

// client-go's backoff: each delay between the backoff and twice it, the
// backoff doubling from 800 ms to 30 s; back to 800 ms after a reset.
BOOST_AUTO_TEST_CASE(backoff_doubles_with_jitter_up_to_30_s)
{
    using ms = std::chrono::milliseconds;
    for (uint64_t seed = 0; seed < 50; seed++) {
        g2n::kube::Backoff backoff(seed);
        ms base(800);
        for (int i = 0; i < 10; i++) {
            const ms delay = backoff.next();
            BOOST_TEST(delay.count() >= base.count());
            BOOST_TEST(delay.count() < 2 * base.count());
            base = std::min<ms>(base * 2, ms(30000));
        }
        BOOST_TEST(base.count() == 30000);
        backoff.reset();
        const ms delay = backoff.next();
        BOOST_TEST((delay.count() >= 800 && delay.count() < 1600), delay.count());
    }
}

BOOST_AUTO_TEST_SUITE_END()
