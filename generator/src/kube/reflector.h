// Every kind gateway2nginx reads, listed and watched as client-go's
// reflectors do: paginated lists, watches resumed from the last
// resourceVersion with bookmarks, a new list after "410 Gone", backoff
// with jitter after errors and outages. What they hold is the JSON of each
// object, for parse/ as any other input.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "kube/client.h"

namespace g2n::kube {

struct ApiKind {
    std::string group;  // "" for the core group
    std::string version;
    std::string plural;
    std::string kind;
    bool namespaced = true;
    // a reflector's: only this namespace's objects listed and watched
    // (run --watch-namespace); empty: every namespace's
    std::string scope;

    std::string api_version() const { return group.empty() ? version : group + "/" + version; }
    std::string path() const
    {
        return (group.empty() ? "/api/" : "/apis/" + group + "/") + version
               + (scope.empty() ? "" : "/namespaces/" + scope) + "/" + plural;
    }
    // for messages: "Service", "Service in apps"
    std::string described() const { return scope.empty() ? kind : kind + " in " + scope; }
    std::string object_path(const std::string &namespace_, const std::string &name) const
    {
        return (group.empty() ? "/api/" : "/apis/" + group + "/") + version
               + (namespaced ? "/namespaces/" + namespace_ : "") + "/" + plural + "/" + name;
    }
};

// The kinds gateway2nginx reads, each at the first version the server
// serves of those it can read (BackendTLSPolicy v1 or v1alpha3, TLSRoute
// v1, v1alpha3 or v1alpha2, ReferenceGrant v1 or v1beta1). A kind the
// server does not serve at all is left out, and said in `notes`, but for
// the ones without which nothing works (GatewayClass, Gateway, Service,
// EndpointSlice, Secret, ConfigMap, Namespace): ApiError.
std::vector<ApiKind> discover_kinds(ApiClient &client, std::vector<std::string> *notes);

// What the reflectors list and watch of `kinds` when only `namespaces` are
// watched (none: everything): each namespaced kind once in each of them,
// the cluster-scoped ones (GatewayClass, Namespace) whole; and `also`,
// (kind, namespace) pairs needed beyond them (the Service whose load
// balancer gives Gateways their addresses).
std::vector<ApiKind> scoped_kinds(const std::vector<ApiKind> &kinds, const std::vector<std::string> &namespaces,
                                  const std::vector<std::pair<std::string, std::string>> &also = {});

// An object changed since the changes were last taken: its Kind, its
// "namespace/name" (a cluster-scoped object's "/name"), the name its text
// goes to parse/ by, and its key where it is held (its JSON is read from
// there when wanted: a relist changes every object, and a copy of each
// would be wasted on the whole way, which reads them all anyway).
struct ObjectChange {
    std::string group;  // "" for the core group
    std::string kind;
    std::string name_key;
    std::string name;
    std::string key;
};

// The objects the reflectors hold, by kind, namespace and name; shared
// between their threads and the reader.
class ObjectStore {
public:
    ObjectStore();
    ~ObjectStore();
    ObjectStore(const ObjectStore &) = delete;
    ObjectStore &operator=(const ObjectStore &) = delete;

    // Every object of `kind` (of its scope's namespace when it has one), by
    // "namespace/name": (JSON, content as put() takes it).
    void replace_kind(const ApiKind &kind, std::map<std::string, std::pair<std::string, std::string>> objects);
    // `content`: a digest of the object without its status (of the kinds
    // whose status gateway2nginx writes) and version stamps; a put
    // whose content is what the store holds already (a status write, ours
    // or another controller's) changes the JSON held and signals nothing.
    void put(const ApiKind &kind, const std::string &name_key, std::string json, std::string content = "");
    void erase(const ApiKind &kind, const std::string &name_key);

    // The JSON of one object, if held.
    std::optional<std::string> get(const ApiKind &kind, const std::string &name_key) const;
    // Objects of `kind` are held whole only while wanted: the others as
    // their identity and a digest, no more (ConfigMaps and Secrets: a
    // tenant's unreferenced ones must not grow every replica's memory).
    void hold_wanted_only(const ApiKind &kind);
    // Whether an object of `kind` is held whole.
    bool holds_whole(const ApiKind &kind, const std::string &name_key) const;
    // Whether objects of `kind` are held whole only while wanted.
    bool holds_wanted_only(const ApiKind &kind) const;
    // The objects of those kinds now wanted ("group/Kind/namespace/name",
    // as held): those held as a digest until now are returned, to be
    // fetched and put(); those no longer wanted are let go.
    std::vector<std::string> want(std::set<std::string> keys);
    static std::string key_of(const ApiKind &kind, const std::string &name_key);
    // A wanted object held as a digest, fetched: held whole, and a change
    // (false, and nothing done, when it is no longer held as a digest: a
    // watch event came first, or it is gone).
    bool fill(const ApiKind &kind, const std::string &name_key, std::string json, std::string content);
    // What the store holds, for /metrics: objects, and those held whole.
    std::pair<size_t, size_t> held() const;

    // Every object of `kind` as ("namespace/name", its JSON), in key order.
    std::vector<std::pair<std::string, std::shared_ptr<const std::string>>> of_kind(const ApiKind &kind) const;
    // How often objects of `kind` were put, erased or replaced, a status
    // or version change included: polled by a reader that acts on them.
    uint64_t writes(const ApiKind &kind) const;
    // Each object as (a name for messages, its JSON), in key order; the
    // JSON shared, not copied.
    std::vector<std::pair<std::string, std::shared_ptr<const std::string>>> texts() const;
    // The objects whose content changed since the last call, in key order;
    // a relist says only what differs from before.
    std::vector<ObjectChange> take_changes();
    // The JSON of a changed object now; none when it is gone.
    std::optional<std::string> json_of(const ObjectChange &change) const;
    size_t size() const;
    // Readable after a change; read() it to wait for the next.
    int change_fd() const { return event_fd_; }
    void drain_changes() const;

private:
    void changed();
    mutable std::mutex mutex_;
    struct Held {
        std::shared_ptr<const std::string> json;  // null: not wanted, only its digest held
        std::string content;  // what put() compares (a digest)
    };
    // whether a key is of a kind hold_wanted_only() named, and of those
    // not wanted (mutex_ held)
    bool wanted_only_kind(const std::string &key) const;
    bool digest_only(const std::string &key) const;
    std::map<std::string, Held> objects_;  // "group/Kind/namespace/name" -> ...
    std::set<std::string> wanted_only_kinds_;  // "group/Kind/"
    std::set<std::string> wanted_;             // their objects wanted whole
    std::map<std::string, uint64_t> writes_;  // "group/Kind/" -> ...
    std::map<std::string, ObjectChange> changed_;  // by key
    int event_fd_ = -1;
};

// `object` (of `kind`, from a list, a watch or a get) as the text parse/
// reads, its "namespace/name" and the digest put() compares; false when
// it has no name.
bool object_text(rapidjson::Value &object, const ApiKind &kind, rapidjson::Document::AllocatorType &alloc,
                 std::string *name_key, std::string *text, std::string *content = nullptr);

// After an error, client-go's backoff: 800 ms doubling to 30 s, each
// delay drawn between it and twice it; reset after a good watch.
class Backoff {
public:
    explicit Backoff(uint64_t seed) : random_(seed) {}
    std::chrono::milliseconds next();
    void reset() { backoff_ = kFirst; }

    static constexpr std::chrono::milliseconds kFirst{800}, kLongest{30000};

private:
    std::mt19937_64 random_;
    std::chrono::milliseconds backoff_ = kFirst;
};

// One thread per kind, each with its own connection, listing and watching
// into `store`. Stopped and joined when destroyed.
class Reflectors {
public:
    using Log = std::function<void(const std::string &)>;
    Reflectors(const ApiServer &server, std::vector<ApiKind> kinds, ObjectStore *store, Log log);
    ~Reflectors();

    // Every kind listed at least once.
    bool synced() const;
    // The kinds not listed yet, for a message.
    std::string unsynced() const;

    struct KindCounts {
        std::string kind;
        uint64_t events, lists, errors;
    };
    std::vector<KindCounts> counts() const;

private:
    struct Listed {
        std::map<std::string, std::pair<std::string, std::string>> objects;  // name key -> (JSON, digest)
        std::string resource_version;
    };
    void reflect(size_t index);
    std::optional<Listed> list_all(size_t index, ApiClient &client, Backoff &backoff);
    bool watch_from(size_t index, ApiClient &client, Backoff &backoff, const std::string &resource_version,
                    std::mt19937_64 &random);
    bool wait_after_error(size_t index, Backoff &backoff, const std::string &what);
    bool sleep_for(std::chrono::milliseconds delay);

    ApiServer server_;
    std::vector<ApiKind> kinds_;
    ObjectStore *store_;
    Log log_;
    std::atomic<bool> stop_{false};
    std::unique_ptr<std::atomic<bool>[]> synced_;
    std::unique_ptr<std::atomic<uint64_t>[]> events_, lists_, errors_;
    std::mutex sleep_mutex_;
    std::condition_variable sleep_cv_;
    std::vector<std::thread> threads_;
};

// Splits a watch stream into its events (one JSON object per line, as the
// API server writes them) and applies them. Exposed for tests.
class WatchDecoder {
public:
    enum class Outcome { Continue, Expired, Failed };
    WatchDecoder(const ApiKind &kind, ObjectStore *store) : kind_(kind), store_(store) {}
    // Bytes of the stream; Expired after a 410 ERROR event, Failed after
    // any other ERROR or a line that is not an event (`error` says which).
    Outcome feed(std::string_view bytes);
    const std::string &resource_version() const { return resource_version_; }
    void set_resource_version(std::string rv) { resource_version_ = std::move(rv); }
    const std::string &error() const { return error_; }
    size_t events() const { return events_; }

private:
    Outcome event(const std::string &line);
    const ApiKind &kind_;
    ObjectStore *store_;
    std::string pending_, resource_version_, error_;
    size_t events_ = 0;
};

}  // namespace g2n::kube
