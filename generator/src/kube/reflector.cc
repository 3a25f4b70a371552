#include "kube/reflector.h"
#include "kube/json.h"
#include "digest.h"
#include "kind_table.h"

#include <malloc.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <random>
#include <set>

namespace g2n::kube {

namespace {

using rapidjson::Document;
using rapidjson::Value;

std::string metadata_member(const Value &object, const char *name)
{
    if (!object.IsObject()) return "";
    auto it = object.FindMember("metadata");
    return it != object.MemberEnd() ? std::string(string_member(it->value, name)) : "";
}

}  // namespace

// With the apiVersion and kind a list's items may leave out.
bool object_text(Value &object, const ApiKind &kind, Document::AllocatorType &alloc, std::string *name_key,
                 std::string *text, std::string *content)
{
    if (!object.IsObject()) return false;
    const std::string name = metadata_member(object, "name");
    if (name.empty()) return false;
    *name_key = metadata_member(object, "namespace") + "/" + name;
    const std::string api_version = kind.api_version();
    auto set = [&](const char *field, const std::string &value) {
        auto it = object.FindMember(field);
        Value v(value.c_str(), static_cast<rapidjson::SizeType>(value.size()), alloc);
        if (it == object.MemberEnd()) object.AddMember(Value(field, alloc), v, alloc);
        else it->value = v;
    };
    set("apiVersion", api_version);
    set("kind", kind.kind);
    // what nothing reads, and can be most of an object applied with
    // kubectl: its field managers and its whole last applied copy
    auto meta = object.FindMember("metadata");
    if (meta != object.MemberEnd() && meta->value.IsObject()) {
        meta->value.EraseMember("managedFields");
        auto annotations = meta->value.FindMember("annotations");
        if (annotations != meta->value.MemberEnd() && annotations->value.IsObject()) {
            annotations->value.EraseMember("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    // nor, of an EndpointSlice, what the EndpointSlice controller writes
    // beside the addresses, ports and conditions: its owner, each
    // endpoint's Pod, node, zone and hints (a Pod moving to another node
    // is no change to gateway2nginx)
    if (kind.kind == "EndpointSlice" && kind.group == "discovery.k8s.io") {
        if (meta != object.MemberEnd() && meta->value.IsObject()) meta->value.EraseMember("ownerReferences");
        auto endpoints = object.FindMember("endpoints");
        if (endpoints != object.MemberEnd() && endpoints->value.IsArray()) {
            for (Value &endpoint : endpoints->value.GetArray()) {
                if (!endpoint.IsObject()) continue;
                for (const char *field : {"targetRef", "nodeName", "zone", "hints", "deprecatedTopology"}) {
                    endpoint.EraseMember(field);
                }
            }
        }
    }
    *text = json_text(object);
    if (content != nullptr) {
        // what gateway2nginx reads of it: not the status of the kinds it
        // writes status to (ours, written back, comes back as an event;
        // a Service's load balancer is read), nor the version stamps
        Value copy(object, alloc);
        if (const KindRow *row = find_kind(kind.group, kind.kind); row != nullptr && row->status_written()) {
            copy.EraseMember("status");  // EraseMember keeps the order: equal objects, equal text
        }
        auto copy_meta = copy.FindMember("metadata");
        if (copy_meta != copy.MemberEnd() && copy_meta->value.IsObject()) {
            copy_meta->value.EraseMember("resourceVersion");
        }
        *content = sha256(json_text(copy));
    }
    return true;
}

namespace {

std::string key_prefix(const ApiKind &kind) { return (kind.group.empty() ? "core" : kind.group) + "/" + kind.kind + "/"; }

// A query value: resourceVersions and continue tokens are opaque
std::string escape_query(const std::string &value)
{
    static const char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : value) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

}  // namespace

// ---- discovery ----------------------------------------------------------------

std::vector<ApiKind> discover_kinds(ApiClient &client, std::vector<std::string> *notes)
{
    // the resources each group version serves, fetched once
    std::map<std::string, std::vector<std::string>> served;
    auto resources = [&](const std::string &group, const std::string &version) -> const std::vector<std::string> & {
        const std::string gv = group.empty() ? version : group + "/" + version;
        auto found = served.find(gv);
        if (found != served.end()) return found->second;
        std::vector<std::string> &names = served[gv];
        const Response r = client.request("GET", (group.empty() ? "/api/" : "/apis/" + group + "/") + version);
        if (r.status == 404) return names;
        if (!r.ok()) throw ApiError("discovery of " + gv + ": " + r.describe());
        Document doc;
        doc.Parse(r.body.c_str(), r.body.size());
        if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("resources") || !doc["resources"].IsArray()) {
            throw ApiError("discovery of " + gv + ": not an APIResourceList");
        }
        for (const Value &res : doc["resources"].GetArray()) names.emplace_back(string_member(res, "name"));
        return names;
    };
    std::vector<ApiKind> kinds;
    for (const KindRow &c : kind_table()) {
        bool found = false;
        for (const char *version : c.versions) {
            const std::vector<std::string> &names = resources(c.group, version);
            if (std::find(names.begin(), names.end(), c.plural) != names.end()) {
                kinds.push_back(ApiKind{c.group, version, c.plural, c.kind, c.namespaced(), ""});
                found = true;
                break;
            }
        }
        if (found) continue;
        std::string versions;
        for (const char *v : c.versions) versions += (versions.empty() ? "" : " or ") + std::string(v);
        const std::string what = std::string(c.kind) + " (" + (*c.group ? c.group : "core") + " " + versions + ")";
        if (c.required()) throw ApiError("the API server does not serve " + what);
        notes->push_back("the API server does not serve " + what + ": none is read");
    }
    return kinds;
}

std::vector<ApiKind> scoped_kinds(const std::vector<ApiKind> &kinds, const std::vector<std::string> &namespaces,
                                  const std::vector<std::pair<std::string, std::string>> &also)
{
    if (namespaces.empty()) return kinds;
    std::vector<ApiKind> scoped;
    for (const ApiKind &k : kinds) {
        if (!k.namespaced) {
            scoped.push_back(k);
            continue;
        }
        std::set<std::string> in(namespaces.begin(), namespaces.end());
        for (const auto &[kind, namespace_] : also) {
            if (kind == k.kind) in.insert(namespace_);
        }
        for (const std::string &n : in) {
            scoped.push_back(k);
            scoped.back().scope = n;
        }
    }
    return scoped;
}

// ---- the store ------------------------------------------------------------------

ObjectStore::ObjectStore() : event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
{
    if (event_fd_ < 0) throw ApiError("eventfd failed");
}

ObjectStore::~ObjectStore() { ::close(event_fd_); }

void ObjectStore::changed()
{
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
}

void ObjectStore::drain_changes() const
{
    uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(event_fd_, &count, sizeof count);
}

void ObjectStore::hold_wanted_only(const ApiKind &kind)
{
    std::lock_guard<std::mutex> lock(mutex_);
    wanted_only_kinds_.insert(key_prefix(kind));
}

std::string ObjectStore::key_of(const ApiKind &kind, const std::string &name_key) { return key_prefix(kind) + name_key; }

bool ObjectStore::wanted_only_kind(const std::string &key) const
{
    const size_t slash = key.find('/', key.find('/') + 1);  // "group/Kind/"
    return wanted_only_kinds_.count(key.substr(0, slash + 1)) != 0;
}

bool ObjectStore::digest_only(const std::string &key) const
{
    return wanted_only_kind(key) && !wanted_.count(key);
}

bool ObjectStore::holds_whole(const ApiKind &kind, const std::string &name_key) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return !digest_only(key_prefix(kind) + name_key);
}

bool ObjectStore::holds_wanted_only(const ApiKind &kind) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return wanted_only_kinds_.count(key_prefix(kind)) != 0;
}

std::vector<std::string> ObjectStore::want(std::set<std::string> keys)
{
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> fetch;
    for (auto &[key, held] : objects_) {
        if (!wanted_only_kind(key)) continue;
        const bool wanted = keys.count(key) != 0;
        if (wanted && held.json == nullptr) fetch.push_back(key);
        if (!wanted) held.json.reset();  // its digest stays: a change is still seen
    }
    wanted_ = std::move(keys);
    return fetch;
}

bool ObjectStore::fill(const ApiKind &kind, const std::string &name_key, std::string json, std::string content)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string key = key_prefix(kind) + name_key;
        auto it = objects_.find(key);
        if (it == objects_.end() || it->second.json != nullptr || digest_only(key)) return false;
        it->second = Held{std::make_shared<const std::string>(std::move(json)), std::move(content)};
        writes_[key_prefix(kind)]++;
        changed_.emplace(key, ObjectChange{kind.group, kind.kind, name_key, "<api " + key + ">", key});
    }
    changed();
    return true;
}

std::pair<size_t, size_t> ObjectStore::held() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    size_t whole = 0;
    for (const auto &[key, held] : objects_) whole += held.json != nullptr;
    return {objects_.size(), whole};
}

void ObjectStore::replace_kind(const ApiKind &kind, std::map<std::string, std::pair<std::string, std::string>> objects)
{
    bool any = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string prefix = key_prefix(kind);
        // a scoped reflector's list says nothing of other namespaces
        const std::string scanned = prefix + (kind.scope.empty() ? "" : kind.scope + "/");
        writes_[prefix]++;
        auto note = [&](const std::string &key, const std::string &name_key) {
            changed_.emplace(key, ObjectChange{kind.group, kind.kind, name_key, "<api " + key + ">", key});
            any = true;
        };
        // what is gone or differs, then what is new; of an object held as
        // a digest, nothing is said (nothing reads it)
        std::set<std::string> held_before;
        auto it = objects_.lower_bound(scanned);
        while (it != objects_.end() && it->first.compare(0, scanned.size(), scanned) == 0) {
            const std::string name_key = it->first.substr(prefix.size());
            const auto now = objects.find(name_key);
            const std::string &held = it->second.content;
            const bool differs = now == objects.end() || held.empty() || now->second.second != held;
            if (differs && !digest_only(it->first)) note(it->first, name_key);
            held_before.insert(it->first);
            it = objects_.erase(it);
        }
        for (auto &[name_key, held] : objects) {
            const std::string key = prefix + name_key;
            const bool whole = !digest_only(key);
            if (!held_before.count(key) && whole) note(key, name_key);
            objects_.emplace(key, Held{whole ? std::make_shared<const std::string>(std::move(held.first)) : nullptr,
                                       std::move(held.second)});
        }
    }
    if (any) changed();
}

void ObjectStore::put(const ApiKind &kind, const std::string &name_key, std::string json, std::string content)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        writes_[key_prefix(kind)]++;
        auto [it, added] = objects_.try_emplace(key_prefix(kind) + name_key);
        const bool whole = !digest_only(it->first);
        // held as a digest until now (fetched once wanted): a change
        const bool same = !added && !content.empty() && it->second.content == content
                          && (it->second.json != nullptr || !whole);
        it->second = Held{whole ? std::make_shared<const std::string>(std::move(json)) : nullptr, std::move(content)};
        if (same || !whole) return;  // only its status or version changed, or nothing reads it
        changed_.emplace(it->first, ObjectChange{kind.group, kind.kind, name_key, "<api " + it->first + ">", it->first});
    }
    changed();
}

void ObjectStore::erase(const ApiKind &kind, const std::string &name_key)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string key = key_prefix(kind) + name_key;
        writes_[key_prefix(kind)]++;
        const bool said = !digest_only(key);
        if (objects_.erase(key) == 0 || !said) return;
        changed_.emplace(key, ObjectChange{kind.group, kind.kind, name_key, "<api " + key + ">", key});
    }
    changed();
}

std::vector<ObjectChange> ObjectStore::take_changes()
{
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<ObjectChange> changes;
    changes.reserve(changed_.size());
    for (auto &[key, change] : changed_) changes.push_back(std::move(change));
    changed_.clear();
    return changes;
}

std::optional<std::string> ObjectStore::json_of(const ObjectChange &change) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(change.key);
    if (it == objects_.end() || it->second.json == nullptr) return std::nullopt;
    return *it->second.json;
}

std::vector<std::pair<std::string, std::shared_ptr<const std::string>>> ObjectStore::texts() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<std::string, std::shared_ptr<const std::string>>> out;
    out.reserve(objects_.size());
    for (const auto &[key, held] : objects_) {
        if (held.json != nullptr) out.emplace_back("<api " + key + ">", held.json);
    }
    return out;
}

std::optional<std::string> ObjectStore::get(const ApiKind &kind, const std::string &name_key) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(key_prefix(kind) + name_key);
    if (it == objects_.end() || it->second.json == nullptr) return std::nullopt;
    return *it->second.json;
}

std::vector<std::pair<std::string, std::shared_ptr<const std::string>>> ObjectStore::of_kind(const ApiKind &kind) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string prefix = key_prefix(kind);
    std::vector<std::pair<std::string, std::shared_ptr<const std::string>>> out;
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        if (it->second.json != nullptr) out.emplace_back(it->first.substr(prefix.size()), it->second.json);
    }
    return out;
}

uint64_t ObjectStore::writes(const ApiKind &kind) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = writes_.find(key_prefix(kind));
    return it == writes_.end() ? 0 : it->second;
}

size_t ObjectStore::size() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return objects_.size();
}

// ---- watch streams ------------------------------------------------------------------

WatchDecoder::Outcome WatchDecoder::feed(std::string_view bytes)
{
    pending_.append(bytes);
    size_t start = 0, end;
    Outcome outcome = Outcome::Continue;
    while (outcome == Outcome::Continue && (end = pending_.find('\n', start)) != std::string::npos) {
        const std::string line = pending_.substr(start, end - start);
        start = end + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        outcome = event(line);
    }
    pending_.erase(0, start);
    return outcome;
}

WatchDecoder::Outcome WatchDecoder::event(const std::string &line)
{
    Document doc;
    doc.Parse(line.c_str(), line.size());
    if (doc.HasParseError() || !doc.IsObject()) {
        error_ = std::string("a watch event of ") + kind_.kind + " is not JSON: "
                 + rapidjson::GetParseError_En(doc.GetParseError()) + " at offset " + std::to_string(doc.GetErrorOffset());
        return Outcome::Failed;
    }
    const std::string type(string_member(doc, "type"));
    auto object_it = doc.FindMember("object");
    if (object_it == doc.MemberEnd() || !object_it->value.IsObject()) {
        error_ = "a watch event of " + kind_.kind + " without an object";
        return Outcome::Failed;
    }
    Value &object = object_it->value;
    if (type == "ERROR") {
        auto code = object.FindMember("code");
        const int status = code != object.MemberEnd() && code->value.IsInt() ? code->value.GetInt() : 0;
        error_ = "watch of " + kind_.kind + ": " + std::string(string_member(object, "message"));
        return status == 410 ? Outcome::Expired : Outcome::Failed;
    }
    const std::string rv = metadata_member(object, "resourceVersion");
    if (type == "BOOKMARK") {
        if (!rv.empty()) resource_version_ = rv;
        return Outcome::Continue;
    }
    std::string name_key, text, content;
    if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") {
        error_ = "a watch event of " + kind_.kind + " of unknown type \"" + type + "\"";
        return Outcome::Failed;
    }
    if (!object_text(object, kind_, doc.GetAllocator(), &name_key, &text, &content)) {
        error_ = "a watch event of " + kind_.kind + " whose object has no name";
        return Outcome::Failed;
    }
    if (type == "DELETED") store_->erase(kind_, name_key);
    else store_->put(kind_, name_key, std::move(text), std::move(content));
    if (!rv.empty()) resource_version_ = rv;
    events_++;
    return Outcome::Continue;
}

// ---- reflectors ------------------------------------------------------------------

Reflectors::Reflectors(const ApiServer &server, std::vector<ApiKind> kinds, ObjectStore *store, Log log)
    : server_(server), kinds_(std::move(kinds)), store_(store), log_(std::move(log)),
      synced_(new std::atomic<bool>[kinds_.size()]), events_(new std::atomic<uint64_t>[kinds_.size()]),
      lists_(new std::atomic<uint64_t>[kinds_.size()]), errors_(new std::atomic<uint64_t>[kinds_.size()])
{
    for (size_t i = 0; i < kinds_.size(); i++) {
        synced_[i] = false;
        events_[i] = lists_[i] = errors_[i] = 0;
    }
    for (size_t i = 0; i < kinds_.size(); i++) threads_.emplace_back([this, i] { reflect(i); });
}

Reflectors::~Reflectors()
{
    {
        std::lock_guard<std::mutex> lock(sleep_mutex_);
        stop_ = true;
    }
    sleep_cv_.notify_all();
    for (std::thread &t : threads_) t.join();
}

bool Reflectors::synced() const
{
    for (size_t i = 0; i < kinds_.size(); i++) {
        if (!synced_[i]) return false;
    }
    return true;
}

std::string Reflectors::unsynced() const
{
    std::string out;
    for (size_t i = 0; i < kinds_.size(); i++) {
        if (!synced_[i]) out += (out.empty() ? "" : ", ") + kinds_[i].described();
    }
    return out;
}

std::vector<Reflectors::KindCounts> Reflectors::counts() const
{
    // a kind's reflectors (one per watched namespace) counted as one
    std::vector<KindCounts> out;
    for (size_t i = 0; i < kinds_.size(); i++) {
        auto same = std::find_if(out.begin(), out.end(), [&](const KindCounts &c) { return c.kind == kinds_[i].kind; });
        if (same == out.end()) same = out.insert(out.end(), {kinds_[i].kind, 0, 0, 0});
        same->events += events_[i];
        same->lists += lists_[i];
        same->errors += errors_[i];
    }
    return out;
}

bool Reflectors::sleep_for(std::chrono::milliseconds delay)
{
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    return !sleep_cv_.wait_for(lock, delay, [this] { return stop_.load(); });
}

std::chrono::milliseconds Backoff::next()
{
    std::uniform_real_distribution<double> jitter(1.0, 2.0);
    const auto delay = std::chrono::milliseconds(static_cast<long>(backoff_.count() * jitter(random_)));
    backoff_ = std::min<std::chrono::milliseconds>(backoff_ * 2, kLongest);
    return delay;
}

bool Reflectors::wait_after_error(size_t index, Backoff &backoff, const std::string &what)
{
    errors_[index]++;
    const std::chrono::milliseconds delay = backoff.next();
    log_(what + "; again in " + std::to_string(delay.count()) + " ms");
    return sleep_for(delay);
}

// client-go's ListAndWatch: list (in pages), then watch from the list's
// resourceVersion for as long as the server keeps the stream, again from
// the last version seen when it ends; a new list after 410 Gone; after an
// error, an exponential backoff with jitter (800 ms doubling to 30 s, reset
// after a good watch).
void Reflectors::reflect(size_t index)
{
    const ApiKind &kind = kinds_[index];
    ApiClient client(server_);
    std::mt19937_64 random(std::random_device{}() + index);
    Backoff backoff(random());
    while (!stop_) {
        std::optional<Listed> listed = list_all(index, client, backoff);
        if (!listed) return;
        const size_t count = listed->objects.size();
        lists_[index]++;
        store_->replace_kind(kind, std::move(listed->objects));
        if (!synced_[index]) {
            log_("listed " + std::to_string(count) + " " + kind.kind + "(s)" + (kind.scope.empty() ? "" : " in " + kind.scope)
                 + " at resourceVersion " + listed->resource_version);
        }
        synced_[index] = true;
        if (!watch_from(index, client, backoff, listed->resource_version, random)) return;
    }
}

// Every object of the kind, page by page; none once stopped. Pages of 500
// as client-go's; of a kind held whole only while wanted (tenants'
// ConfigMaps and Secrets, up to 1.5 MB each), of 25: a page is held three
// times while it is read (body, document, texts).
std::optional<Reflectors::Listed> Reflectors::list_all(size_t index, ApiClient &client, Backoff &backoff)
{
    const ApiKind &kind = kinds_[index];
    const bool wanted_only = store_->holds_wanted_only(kind);
    const std::string limit = wanted_only ? "25" : "500";
    Listed listed;
    std::string next;
    while (!stop_) {
        const Response r = client.request(
            "GET", kind.path() + "?limit=" + limit + (next.empty() ? "" : "&continue=" + escape_query(next)), "",
            "application/json", 60000, &stop_);
        if (stop_) return std::nullopt;
        if (r.status == 410 && !next.empty()) {  // the continue token expired: the whole list again
            listed.objects.clear();
            next.clear();
            continue;
        }
        Document doc;
        std::string fault;
        if (!r.ok()) {
            fault = "listing " + kind.described() + " failed (" + r.describe() + ")";
        } else {
            doc.Parse(r.body.c_str(), r.body.size());
            if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("items") || !doc["items"].IsArray()) {
                fault = "listing " + kind.described() + ": the answer is not a list";
            }
        }
        if (!fault.empty()) {
            if (!wait_after_error(index, backoff, fault)) return std::nullopt;
            listed.objects.clear();
            next.clear();
            continue;
        }
        for (Value &item : doc["items"].GetArray()) {
            std::string name_key, text, content;
            if (object_text(item, kind, doc.GetAllocator(), &name_key, &text, &content)) {
                if (!store_->holds_whole(kind, name_key)) std::string().swap(text);  // a digest is all it keeps
                listed.objects[name_key] = {std::move(text), std::move(content)};
            }
        }
        listed.resource_version = metadata_member(doc, "resourceVersion");
        next = metadata_member(doc, "continue");
        if (wanted_only) {
            // what the page took (body, document, texts: up to 3 x 25
            // objects of 1.5 MB) handed back before the next
            doc = Document();
            ::malloc_trim(0);
        }
        if (next.empty()) return listed;
    }
    return std::nullopt;
}

// Watches from `resource_version`, resumed from the last version seen
// each time the server ends the stream, until the version expires (true:
// list again) or run stops (false).
bool Reflectors::watch_from(size_t index, ApiClient &client, Backoff &backoff, const std::string &resource_version,
                            std::mt19937_64 &random)
{
    const ApiKind &kind = kinds_[index];
    WatchDecoder decoder(kind, store_);
    decoder.set_resource_version(resource_version);
    while (!stop_) {
        std::uniform_int_distribution<int> minutes(300, 600);  // client-go: 5 to 10 minutes
        const std::string path = kind.path() + "?watch=1&allowWatchBookmarks=true&timeoutSeconds="
                                 + std::to_string(minutes(random)) + "&resourceVersion="
                                 + escape_query(decoder.resource_version());
        WatchDecoder::Outcome outcome = WatchDecoder::Outcome::Continue;
        const size_t events_before = decoder.events();
        const auto started = std::chrono::steady_clock::now();
        const Response r = client.stream(path, [&](std::string_view bytes) {
            const size_t seen = decoder.events();
            outcome = decoder.feed(bytes);
            events_[index] += decoder.events() - seen;
            return outcome == WatchDecoder::Outcome::Continue;
        }, stop_);
        if (stop_) return false;
        if (r.status == 410 || outcome == WatchDecoder::Outcome::Expired) {
            log_("watch of " + kind.described() + " expired at resourceVersion " + decoder.resource_version()
                 + " (410 Gone): listing again");
            return true;
        }
        if (outcome == WatchDecoder::Outcome::Failed || !r.ok()) {
            const std::string fault = outcome == WatchDecoder::Outcome::Failed
                                          ? decoder.error()
                                          : "watching " + kind.described() + " failed (" + r.describe() + ")";
            if (!wait_after_error(index, backoff, fault)) return false;
            continue;
        }
        // a watch the server ends at once, again and again, is not let spin
        if (decoder.events() == events_before && std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) {
            if (!sleep_for(std::chrono::seconds(1))) return false;
        } else {
            backoff.reset();
        }
    }
    return false;
}

}  // namespace g2n::kube
