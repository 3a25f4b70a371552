// parse: YAML and JSON as kubectl prints them, to the typed objects of
// model.h. Documents are read one at a time from a stream; a `kind: List`
// document holds many objects. Every field is checked here, where its
// FILE:LINE:COL is known, including nginx's limits on one argument.
// May not: look at other objects (references are resolve's), or decide
// what nginx serves.
#pragma once

#include <array>
#include <cstdint>
#include <istream>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model.h"

namespace g2n {

// Bad input: what() is "FILE:LINE:COL: message".
class InputError : public std::runtime_error {
public:
    explicit InputError(const std::string &message) : std::runtime_error(message) {}
};

// Text for a diagnostic line on a terminal or in a log: input in it
// (names, values quoted in messages) cannot start a line of its own or send
// control sequences. Control bytes and DEL become \xNN.
std::string printable(const std::string &text);

// A text shared with whoever holds it (an API object's JSON): never
// copied whole.
using SharedText = std::shared_ptr<const std::string>;

// The typed objects of documents read before, by file, first line and
// text (the whole text is the key: no two documents can share an entry):
// gateway2nginx run, rereading its inputs after a change, scans and types
// again only the documents that changed. The objects are lent to the
// read, not copied: once done with it, give_back() returns them (a read
// never given back only costs the next read its scanning). Not
// thread-safe.
class DocumentCache {
public:
    // A file as stat(2) saw it: while it is the same file, unchanged, its
    // documents are those read from it last, and it is not read again
    struct FileStamp {
        uint64_t device = 0, inode = 0, size = 0, mtime_ns = 0, ctime_ns = 0;
        bool operator==(const FileStamp &o) const
        {
            return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns
                   && ctime_ns == o.ctime_ns;
        }
    };
    // `file`'s stamp as stat(2) gives it; false when it cannot be stat'ed
    static bool stamp_of(const std::string &file, FileStamp *stamp);
    // `settled`: a file changed (its ctime) less than that before it was
    // read is read again next time, whatever its stamp says: a change in
    // the same tick of the file system's clock leaves the stamp as it was
    static constexpr int64_t kSettledNs = 2'000'000'000;
    explicit DocumentCache(int64_t settled_ns = kSettledNs) : settled_ns_(settled_ns) {}

    // Whether it holds that document's objects (a hit counts as used)
    bool knows(const std::string &key);
    // That known document's objects moved to the end of *out's lists
    void lend(const std::string &key, Manifests *out);
    // A new document's, kept for when they are given back
    void lend(std::string key, Manifests parsed, Manifests *out);
    // `read`, holding what was lent since the last give_back() (in the
    // order lent, as its lists hold it), taken back by document. Lists of
    // other lengths take nothing back: those documents are scanned again.
    // *moved, when given, says where each of read's objects is now (in the
    // cache, until it is lent again or forgotten).
    void give_back(Manifests &&read, MovedObjects *moved = nullptr);
    // *out's lists made room for as many more objects as the last read
    // given back held: a read as big as the last doubles none of them (at
    // 10,000 routes their doubling left 9 MB unused)
    void reserve_as_last(Manifests *out);
    // After a whole read: drops the documents it did not meet
    void forget_unused();
    // The key a shared text was read under as one document, found by the
    // text's identity while its holder keeps it (an API object's text is
    // the same string while the object is unchanged): null when none. Such
    // a text is not split and hashed again at each read.
    const std::string *shared_key(const SharedText &text) const;
    void keep_shared_key(const SharedText &text, std::string key);
    // The keys of the documents `file` held when it was read last, if it
    // has `stamp` still and the cache holds every one; else null
    const std::vector<std::string> *file_documents(const std::string &file, const FileStamp &stamp);
    // `file`, read with `stamp` (taken before the read), held the documents
    // of `keys`; `now_ns`: the time of the read (CLOCK_REALTIME)
    void keep_file_documents(const std::string &file, const FileStamp &stamp, int64_t now_ns,
                             std::vector<std::string> keys);
    // files read whole (kept or not by their stamp) since the cache was made
    size_t files_read() const { return files_read_; }
    size_t size() const { return entries_.size(); }

private:
    // A document of one object (every object read from the API) holds
    // that object alone, not a Manifests of 14 lists around it (320 bytes
    // a document, 40,000 documents at 10,000 routes); while lent, an entry
    // holds nothing.
    struct OneObject {
        size_t list = 0;  // which of Manifests' lists it belongs in
        std::unique_ptr<void, void (*)(void *)> object{nullptr, nullptr};
    };
    // a new read's first lend (or reservation) after forget_unused()
    void begin_read();
    // element `index` of list `list` of `m`, moved to the heap alone
    static OneObject take_one(Manifests &m, size_t list, size_t index);
    // `one` moved to the end of its list in *out
    static void put_one(OneObject &one, Manifests *out);
    struct Entry {
        std::unique_ptr<Manifests> objects;  // a document of more objects, or none
        OneObject one;
        bool used = true;
        bool lent = false;
    };
    struct Lent {
        Entry *entry;  // nodes of entries_ stay where they are; used by the read, so kept
        std::array<uint32_t, kManifestLists> sizes;  // of each of Manifests' lists
    };
    std::unordered_map<std::string, Entry> entries_;
    struct SharedKey {
        std::weak_ptr<const std::string> text;  // expired: another text may have its address now
        std::string key;
    };
    std::unordered_map<const std::string *, SharedKey> shared_keys_;
    struct FileDocuments {
        FileStamp stamp;
        std::vector<std::string> keys;
        bool used = true;
    };
    std::unordered_map<std::string, FileDocuments> files_;
    const int64_t settled_ns_;
    size_t files_read_ = 0;
    std::vector<Lent> lent_;  // in the order lent
    std::array<size_t, kManifestLists> last_read_{};  // the sizes of the lists the last read gave back
    size_t last_lent_ = 0;
    bool read_done_ = false;  // forget_unused() since the last lend
};

// `more`'s objects after *out's.
void append_manifests(Manifests *out, Manifests &&more);
// Each list's spare room, left by its growth, given back: a read's lists
// are each up to twice their objects' size, and last as long as they do.
void shrink_manifests(Manifests *m);

// Reads every document of the stream into *out, scanning the YAML on
// `jobs` threads when jobs > 1 (the result does not depend on it, nor on
// `cache`, which only spares work). Throws InputError: the first error in
// input order.
void parse_stream(std::istream &in, const std::string &file, Manifests *out, unsigned jobs = 1,
                  DocumentCache *cache = nullptr);

// Named texts, each read as a file of that name (a watch stream's
// objects), their YAML scanned together on `jobs` threads. Throws
// InputError, as parse_stream.
void parse_texts(const std::vector<std::pair<std::string, std::string>> &texts, Manifests *out, unsigned jobs = 1,
                 DocumentCache *cache = nullptr);
// The same of texts shared with whoever holds them (the API objects' JSON):
// never copied whole.
void parse_texts(const std::vector<std::pair<std::string, SharedText>> &texts, Manifests *out, unsigned jobs = 1,
                 DocumentCache *cache = nullptr);

// A file, a directory (every *.yaml, *.yml, *.json below it, sorted, their
// YAML scanned together on `jobs` threads), or "-" for standard input.
// Throws InputError.
void parse_path(const std::string &path, Manifests *out, unsigned jobs = 1, DocumentCache *cache = nullptr);
// The files parse_path reads for `path`, in its order. Throws InputError.
std::vector<std::string> input_files(const std::string &path);
// Whether a line ends one YAML document and begins the next ("---", "...")
bool is_document_marker(const std::string &line);
// The documents of a text, as parse_path splits a file (at "---" and "...")
std::vector<std::string> split_documents(const std::string &text);

// Each object `m` holds (its kind's name, its metadata), list by list; not
// the ignored or rejected
template <class F>
void each_object(const Manifests &m, F f)
{
    for (const Namespace &o : m.namespaces) f("Namespace", o.meta);
    for (const GatewayClass &o : m.gateway_classes) f("GatewayClass", o.meta);
    for (const Gateway &o : m.gateways) f("Gateway", o.meta);
    for (const ListenerSet &o : m.listener_sets) f("ListenerSet", o.meta);
    for (const Route &o : m.http_routes) f(route_kind_name(o.kind), o.meta);
    for (const Route &o : m.stream_routes) f(route_kind_name(o.kind), o.meta);
    for (const Service &o : m.services) f("Service", o.meta);
    for (const EndpointSlice &o : m.endpoint_slices) f("EndpointSlice", o.meta);
    for (const ConfigMap &o : m.config_maps) f("ConfigMap", o.meta);
    for (const Secret &o : m.secrets) f("Secret", o.meta);
    for (const ClusterTrustBundle &o : m.cluster_trust_bundles) f("ClusterTrustBundle", o.meta);
    for (const ReferenceGrant &o : m.reference_grants) f("ReferenceGrant", o.meta);
    for (const BackendTLSPolicy &o : m.backend_tls_policies) f("BackendTLSPolicy", o.meta);
}

}  // namespace g2n
