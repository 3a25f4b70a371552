#include "parse/parse.h"
#include "digest.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <ctime>
#include <numeric>
#include <fstream>
#include <deque>
#include <future>
#include <iostream>
#include <sstream>

#include "parse/fields.h"

namespace g2n {

std::string printable(const std::string &text)
{
    std::string out;
    for (unsigned char ch : text) {
        if (ch < 0x20 || ch == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\x%02x", ch);
            out += buf;
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out;
}

const std::string &SourcePos::file() const
{
    static const std::string none;
    return file_name ? *file_name : none;
}

std::string SourcePos::text() const
{
    return file() + ":" + std::to_string(line) + ":" + std::to_string(column);
}

SourcePos Document::pos(const YamlNode &node) const
{
    SourcePos p;
    p.file_name = file_;
    // a missing parent has no position: the document's start stands in
    p.line = line_offset_ + (node.defined() ? node.line() : 0) + 1;
    p.column = node.defined() ? node.column() + 1 : 1;
    return p;
}

void Document::fail(const YamlNode &node, const std::string &path, const std::string &what) const
{
    throw InputError(pos(node).text() + ": " + path + ": " + what);
}

YamlNode Document::child(const YamlNode &node, const std::string &path, const char *key) const
{
    if (!node.defined() || node.is_null()) {
        return YamlNode();
    }
    if (!node.is_map()) {
        fail(node, path, "expected a mapping");
    }
    return node.get(key);
}

YamlNode Document::field(const YamlNode &node, const std::string &path, const char *key,
                           bool required, std::string *where) const
{
    YamlNode value = child(node, path, key);
    *where = path.empty() ? key : path + "." + key;
    if (!value.defined() || value.is_null()) {
        if (required) {
            fail(node, *where, "required field is missing");
        }
        return YamlNode();
    }
    return value;
}

std::string Document::string(const YamlNode &node, const std::string &path, const char *key,
                             bool required, const std::string &fallback) const
{
    std::string where;
    YamlNode value = field(node, path, key, required, &where);
    if (!value.defined()) {
        return fallback;
    }
    if (!value.is_scalar()) {
        fail(value, where, "expected a string");
    }
    return value.scalar();
}

int Document::integer(const YamlNode &node, const std::string &path, const char *key, int min,
                      int max, bool required, int fallback) const
{
    std::string where;
    YamlNode value = field(node, path, key, required, &where);
    if (!value.defined()) {
        return fallback;
    }
    return integer(value, where, min, max);
}

int Document::integer(const YamlNode &value, const std::string &where, int min, int max) const
{
    if (!value.is_scalar()) {
        fail(value, where, "expected an integer");
    }
    const std::string &text = value.scalar();
    char *end = nullptr;
    errno = 0;
    long n = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0 || n < min || n > max) {
        fail(value, where,
             "expected an integer from " + std::to_string(min) + " to " + std::to_string(max)
                 + ", got \"" + text + "\"");
    }
    return static_cast<int>(n);
}

std::vector<YamlNode> Document::list(const YamlNode &node, const std::string &path,
                                       const char *key, bool required) const
{
    std::string where;
    YamlNode value = field(node, path, key, required, &where);
    std::vector<YamlNode> out;
    if (!value.defined()) {
        return out;
    }
    if (!value.is_sequence()) {
        fail(value, where, "expected a list");
    }
    return value.items();
}

std::map<std::string, std::string> Document::string_map(const YamlNode &node,
                                                        const std::string &path,
                                                        const char *key) const
{
    std::string where;
    YamlNode value = field(node, path, key, false, &where);
    std::map<std::string, std::string> out;
    if (!value.defined()) {
        return out;
    }
    if (!value.is_map()) {
        fail(value, where, "expected a mapping of strings");
    }
    for (const auto &entry : value.entries()) {
        if (!entry.second.is_scalar()) {
            fail(entry.second, where + "." + entry.first.scalar(), "expected a string");
        }
        out[entry.first.scalar()] = entry.second.scalar();
    }
    return out;
}

std::vector<std::string> Document::unknown(const YamlNode &node, const std::string &,
                                           std::initializer_list<const char *> known) const
{
    std::vector<std::string> out;
    if (!node.is_map()) {
        return out;
    }
    for (const auto &entry : node.entries()) {
        const std::string &key = entry.first.scalar();
        if (std::none_of(known.begin(), known.end(),
                         [&](const char *k) { return key == k; })) {
            out.push_back(key);
        }
    }
    return out;
}

void Document::only(const YamlNode &node, const std::string &path,
                    std::initializer_list<const char *> known) const
{
    for (const std::string &key : unknown(node, path, known)) {
        fail(node.get(key.c_str()), path.empty() ? key : path + "." + key, "unknown field");
    }
}

ObjectMeta Document::meta(const YamlNode &root, bool namespaced, std::map<std::string, std::string> *labels) const
{
    ObjectMeta m;
    YamlNode metadata = child(root, "", "metadata");
    if (!metadata.defined()) {
        fail(root, "metadata", "required field is missing");
    }
    m.pos = pos(root);
    m.name = string(metadata, "metadata", "name", true);
    m.namespace_ = namespaced ? string(metadata, "metadata", "namespace", false, "default") : "";
    // the API server's own rules: names reach file names, upstream names,
    // policy names and status
    const std::string kind = root.get("kind").scalar();
    if (!valid_object_name(kind, m.name)) {
        fail(metadata.get("name"), "metadata.name",
             kind == "Service" ? "a Service name must be an RFC 1035 label (lower case letters, digits, '-', "
                                 "starting with a letter, at most 63 characters)"
             : kind == "ClusterTrustBundle"
                 ? "must be RFC 1123 subdomains joined by ':' (lower case letters, digits, '-', '.' and ':', "
                   "at most 253 characters)"
                 : "must be an RFC 1123 subdomain (lower case letters, digits, '-' and '.', "
                   "at most 253 characters)");
    }
    if (namespaced && !valid_dns1123_label(m.namespace_)) {
        fail(metadata.get("namespace"), "metadata.namespace",
             "must be an RFC 1123 label (lower case letters, digits and '-', at most 63 characters)");
    }
    m.generation = integer(metadata, "metadata", "generation", 0, INT_MAX, false, 1);
    m.creation_timestamp = string(metadata, "metadata", "creationTimestamp");
    m.uid = string(metadata, "metadata", "uid");
    std::map<std::string, std::string> read_labels = string_map(metadata, "metadata", "labels");
    for (const auto &[key, value] : read_labels) {
        if (!valid_label_value(value)) {
            fail(metadata.get("labels"), "metadata.labels." + key, kLabelValueRule);
        }
    }
    if (labels != nullptr) *labels = std::move(read_labels);
    return m;
}

bool is_document_marker(const std::string &line)
{
    return (line.compare(0, 3, "---") == 0 || line.compare(0, 3, "...") == 0)
           && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

namespace {

void parse_root(const Document &doc, const YamlNode &root, Manifests *out);

// Its objects, each stamped with the digest of the document's text
void parse_document(const YamlTree &tree, const std::shared_ptr<const std::string> &file, int line_offset,
                    size_t content, Manifests *out)
{
    Document doc(file, line_offset);
    Manifests objects;
    parse_root(doc, tree.root(), &objects);
    auto stamp = [content](auto &list) {
        for (auto &object : list) object.meta.content = content;
    };
    stamp(objects.namespaces);
    stamp(objects.gateway_classes);
    stamp(objects.gateways);
    stamp(objects.listener_sets);
    stamp(objects.http_routes);
    stamp(objects.stream_routes);
    stamp(objects.services);
    stamp(objects.endpoint_slices);
    stamp(objects.config_maps);
    stamp(objects.secrets);
    stamp(objects.cluster_trust_bundles);
    stamp(objects.reference_grants);
    stamp(objects.backend_tls_policies);
    append_manifests(out, std::move(objects));
}

void parse_root(const Document &doc, const YamlNode &root, Manifests *out)
{
    if (!root.defined() || root.is_null()) {
        return;  // an empty document
    }
    if (!root.is_map()) {
        doc.fail(root, "", "expected an object (a mapping with apiVersion and kind)");
    }

    if (doc.string(root, "", "kind", true) == "List") {
        for (const YamlNode &item : doc.list(root, "", "items")) {
            parse_object(doc, item, out);
        }
        return;
    }
    parse_object(doc, root, out);
}

}  // namespace

namespace {

// f(list of m...) for each of Manifests' lists, the same list of each
template <typename F, typename... M>
void each_list(F f, M &...m)
{
    f(m.namespaces...);
    f(m.gateway_classes...);
    f(m.gateways...);
    f(m.listener_sets...);
    f(m.http_routes...);
    f(m.stream_routes...);
    f(m.services...);
    f(m.endpoint_slices...);
    f(m.config_maps...);
    f(m.secrets...);
    f(m.cluster_trust_bundles...);
    f(m.reference_grants...);
    f(m.backend_tls_policies...);
    f(m.ignored...);
    f(m.rejected...);
}

std::array<size_t, kManifestLists> list_sizes(const Manifests &m)
{
    std::array<size_t, kManifestLists> sizes{};
    size_t i = 0;
    each_list([&](const auto &list) { sizes[i++] = list.size(); }, m);
    return sizes;
}

template <class Sizes>
size_t total_of(const Sizes &sizes)
{
    return std::accumulate(sizes.begin(), sizes.end(), size_t{0});
}

}  // namespace

DocumentCache::OneObject DocumentCache::take_one(Manifests &m, size_t list, size_t index)
{
    DocumentCache::OneObject one;
    one.list = list;
    size_t i = 0;
    each_list([&](auto &from) {
                  if (i++ != list) return;
                  using T = typename std::decay_t<decltype(from)>::value_type;
                  one.object = std::unique_ptr<void, void (*)(void *)>(new T(std::move(from[index])),
                                                                     [](void *p) { delete static_cast<T *>(p); });
              },
              m);
    return one;
}

void DocumentCache::put_one(DocumentCache::OneObject &one, Manifests *out)
{
    size_t i = 0;
    each_list([&](auto &to) {
                  if (i++ != one.list) return;
                  using T = typename std::decay_t<decltype(to)>::value_type;
                  to.push_back(std::move(*static_cast<T *>(one.object.get())));
              },
              *out);
    one.object.reset();
}

bool DocumentCache::knows(const std::string &key)
{
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.lent) return false;
    it->second.used = true;
    return true;
}

void DocumentCache::lend(const std::string &key, Manifests *out)
{
    begin_read();
    Entry &entry = entries_.at(key);
    Lent lent{&entry, {}};
    if (entry.one.object) {
        lent.sizes[entry.one.list] = 1;
        put_one(entry.one, out);
    } else if (entry.objects) {
        const std::array<size_t, kManifestLists> sizes = list_sizes(*entry.objects);
        std::copy(sizes.begin(), sizes.end(), lent.sizes.begin());
        append_manifests(out, std::move(*entry.objects));
        entry.objects.reset();
    }
    lent_.push_back(lent);
    entry.lent = true;
}

void DocumentCache::lend(std::string key, Manifests parsed, Manifests *out)
{
    Entry &entry = entries_[key];
    entry = Entry{};
    const std::array<size_t, kManifestLists> sizes = list_sizes(parsed);
    if (total_of(sizes) == 1) {
        const size_t list = static_cast<size_t>(std::find(sizes.begin(), sizes.end(), size_t{1}) - sizes.begin());
        entry.one = take_one(parsed, list, 0);
    } else if (total_of(sizes) > 1) {
        entry.objects = std::make_unique<Manifests>(std::move(parsed));
    }
    lend(key, out);
}

void DocumentCache::give_back(Manifests &&given, MovedObjects *moved)
{
    Manifests read = std::move(given);  // freed here, list by list, not by the caller after
    std::array<size_t, kManifestLists> moved_list{};  // read's lists in *moved
    if (moved != nullptr) {
        size_t i = 0;
        each_list([&](const auto &list) { moved_list[i++] = moved->add_list(list.data(), list.size(), sizeof(list[0])); },
                  read);
    }
    const std::vector<Lent> lent = std::move(lent_);
    lent_.clear();
    last_read_ = list_sizes(read);
    last_lent_ = lent.size();
    std::array<size_t, kManifestLists> total{};
    for (const Lent &l : lent) {
        for (size_t i = 0; i < total.size(); i++) total[i] += l.sizes[i];
    }
    if (total != list_sizes(read)) return;  // not what was lent: those documents are scanned again
    std::vector<Entry *> taking;  // by Lent; null: lent twice in the read, the first one's taken
    for (const Lent &l : lent) {
        taking.push_back(l.entry->lent ? l.entry : nullptr);
        if (l.entry->lent && total_of(l.sizes) > 1) l.entry->objects = std::make_unique<Manifests>();
        l.entry->lent = false;
    }
    // one list at a time, each freed once taken back: the objects' lists
    // are never all held twice
    for (size_t list = 0; list < total.size(); list++) {
        size_t at = 0;
        for (size_t k = 0; k < lent.size(); k++) {
            const size_t first = at, count = lent[k].sizes[list];
            at += count;
            if (taking[k] == nullptr || count == 0) continue;
            if (!taking[k]->objects) {
                taking[k]->one = take_one(read, list, first);
                if (moved != nullptr) moved->moved(moved_list[list], first, taking[k]->one.object.get());
                continue;
            }
            size_t i = 0;
            each_list([&](auto &from, auto &to) {
                          if (i++ != list) return;
                          auto begin = from.begin() + static_cast<std::ptrdiff_t>(first);
                          to.assign(std::make_move_iterator(begin),
                                    std::make_move_iterator(begin + static_cast<std::ptrdiff_t>(count)));
                          for (size_t j = 0; moved != nullptr && j < count; j++) {
                              moved->moved(moved_list[list], first + j, &to[j]);
                          }
                      },
                      read, *taking[k]->objects);
        }
        size_t i = 0;
        each_list([&](auto &from) {
                      if (i++ == list) std::decay_t<decltype(from)>().swap(from);
                  },
                  read);
    }
}

void DocumentCache::reserve_as_last(Manifests *out)
{
    size_t i = 0;
    each_list([&](auto &list) { list.reserve(list.size() + last_read_[i++]); }, *out);
    begin_read();
    lent_.reserve(lent_.size() + last_lent_);
}

void DocumentCache::begin_read()
{
    if (read_done_) {
        lent_.clear();  // a read never given back: what it held stays out
        read_done_ = false;
    }
}

namespace {

// The values of `map` the last read did not use go; the others are
// unused again, for the next read to mark
template <typename Map>
void drop_unused(Map &map)
{
    for (auto it = map.begin(); it != map.end();) {
        if (!it->second.used) {
            it = map.erase(it);
        } else {
            it->second.used = false;
            ++it;
        }
    }
}

}  // namespace

void DocumentCache::forget_unused()
{
    if (read_done_) lent_.clear();  // an earlier read's, never given back: it points at what may go now
    drop_unused(entries_);
    for (auto it = shared_keys_.begin(); it != shared_keys_.end();) {
        it = it->second.text.expired() ? shared_keys_.erase(it) : std::next(it);
    }
    drop_unused(files_);
    read_done_ = true;
}

bool DocumentCache::stamp_of(const std::string &file, FileStamp *stamp)
{
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return false;
    *stamp = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
              static_cast<uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(st.st_mtim.tv_nsec),
              static_cast<uint64_t>(st.st_ctim.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(st.st_ctim.tv_nsec)};
    return true;
}

const std::vector<std::string> *DocumentCache::file_documents(const std::string &file, const FileStamp &stamp)
{
    auto it = files_.find(file);
    if (it == files_.end() || !(it->second.stamp == stamp)) return nullptr;
    for (const std::string &key : it->second.keys) {
        auto entry = entries_.find(key);
        if (entry == entries_.end() || entry->second.lent) return nullptr;
    }
    for (const std::string &key : it->second.keys) entries_.find(key)->second.used = true;
    it->second.used = true;
    return &it->second.keys;
}

void DocumentCache::keep_file_documents(const std::string &file, const FileStamp &stamp, int64_t now_ns,
                                        std::vector<std::string> keys)
{
    files_read_++;
    if (static_cast<int64_t>(stamp.ctime_ns) > now_ns - settled_ns_) {
        files_.erase(file);  // changed just before the read: its stamp may not tell the next change
        return;
    }
    files_[file] = FileDocuments{stamp, std::move(keys), true};
}

const std::string *DocumentCache::shared_key(const SharedText &text) const
{
    auto it = shared_keys_.find(text.get());
    return it != shared_keys_.end() && !it->second.text.expired() ? &it->second.key : nullptr;
}

void DocumentCache::keep_shared_key(const SharedText &text, std::string key)
{
    shared_keys_[text.get()] = SharedKey{text, std::move(key)};
}

void append_manifests(Manifests *out, Manifests &&more)
{
    each_list([](auto &to, auto &from) {
                  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
              },
              *out, more);
}

void shrink_manifests(Manifests *m)
{
    each_list([](auto &list) { list.shrink_to_fit(); }, *m);
}

namespace {

// The documents of one or more files, in input order. Batches of texts go
// to the scanners (most of the run), their trees are typed here, in input
// order, while later batches, of this file or the next, are still being
// scanned: a directory of many small files, or a watch stream of many
// objects, is scanned on every thread as one large file is.
class DocumentReader {
public:
    DocumentReader(Manifests *out, unsigned jobs, DocumentCache *cache)
        : out_(out), cache_(cache), scanners_(jobs > 1 ? jobs : 0), in_flight_(2 * (scanners_.threads() + 1))
    {
    }

    // Every document of `in`, named `file` in errors. Throws InputError.
    void read(std::istream &in, const std::string &file)
    {
        file_ = std::make_shared<const std::string>(file);
        std::string text, line;
        int line_no = 0, start = 0;
        while (std::getline(in, line)) {
            if (is_document_marker(line)) {
                add_document(std::move(text), start);
                text = std::string();
                start = line_no + 1;
                if (batch_bytes_ >= kBatchBytes) {
                    submit();
                }
            } else {
                text += line;
                text += '\n';
            }
            line_no++;
        }
        add_document(std::move(text), start);
        submit();  // a batch holds one file's documents
    }

    // A text shared with its holder, as read() reads it; but one the cache
    // took before as one whole document, and holds yet, is lent by the key
    // kept for the text, neither split nor hashed again
    void read_shared(const SharedText &text, const std::string &file)
    {
        if (cache_ != nullptr) {
            if (const std::string *key = cache_->shared_key(text); key != nullptr && cache_->knows(*key)) {
                // nothing to scan: it waits in the batch the next text
                // submits (a batch of its own costs the scanners a task)
                keys_.push_back(*key);
                YamlDocument doc;
                doc.known = true;
                batch_.push_back(std::move(doc));
                return;
            }
        }
        std::istringstream in(*text);
        read(in, file);
        if (cache_ != nullptr && read_keys_.size() == 1) cache_->keep_shared_key(text, std::move(read_keys_.front()));
    }

    // A file's documents: lent by the keys the cache kept for it while it
    // is unchanged (neither read, split nor hashed again), else read. False
    // when it cannot be opened (errno says why).
    bool read_file(const std::string &file)
    {
        DocumentCache::FileStamp stamp;
        const bool stamped = cache_ != nullptr && DocumentCache::stamp_of(file, &stamp);
        if (stamped) {
            if (const std::vector<std::string> *keys = cache_->file_documents(file, stamp)) {
                for (const std::string &key : *keys) {
                    keys_.push_back(key);
                    YamlDocument doc;
                    doc.known = true;
                    batch_.push_back(std::move(doc));
                }
                return true;
            }
        }
        std::ifstream in(file);
        if (!in) return false;
        timespec now{};
        ::clock_gettime(CLOCK_REALTIME, &now);
        file_keys_.clear();
        read(in, file);
        if (stamped) {
            cache_->keep_file_documents(file, stamp, static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec,
                                        std::move(file_keys_));
        }
        return true;
    }

    // Types what is still being scanned. Throws InputError: the first
    // error in input order.
    void finish()
    {
        if (!batch_.empty()) submit();  // known documents read_shared left
        while (!scanned_.empty()) {
            type_next();
        }
    }

private:
    static constexpr size_t kBatchBytes = 32 * 1024;

    struct Scanned {
        std::future<YamlScanPool::Batch> batch;
        std::shared_ptr<const std::string> file;
    };

    // a document's key, and whether the cache knows it
    void add_document(std::string document, int first_line)
    {
        batch_bytes_ += document.size();
        YamlDocument doc{std::move(document), first_line, {}, {}};
        if (cache_ != nullptr) {
            // a digest: the cache holds no second copy of every input
            const std::string key = sha256(*file_ + '\0' + std::to_string(first_line) + '\0' + doc.text);
            doc.known = cache_->knows(key);
            if (first_line == 0) read_keys_.clear();  // a text's documents, for read_shared
            read_keys_.push_back(key);
            file_keys_.push_back(key);
            keys_.push_back(std::move(key));
        }
        batch_.push_back(std::move(doc));
    }

    void submit()
    {
        scanned_.push_back({scanners_.submit(std::move(batch_), *file_), file_});
        batch_ = YamlScanPool::Batch();
        batch_bytes_ = 0;
        if (scanned_.size() >= in_flight_) {
            type_next();
        }
    }

    void type_next()
    {
        Scanned next = std::move(scanned_.front());
        scanned_.pop_front();
        YamlScanPool::Batch batch = next.batch.get();
        for (const YamlDocument &doc : batch) {
            if (!doc.error.empty()) {
                throw InputError(doc.error);
            }
            if (cache_ == nullptr) {
                parse_document(doc.tree, next.file, doc.line_offset, doc.content, out_);
                continue;
            }
            std::string key = std::move(keys_.front());
            keys_.pop_front();
            if (doc.known) {
                cache_->lend(key, out_);
                continue;
            }
            Manifests objects;
            parse_document(doc.tree, next.file, doc.line_offset, doc.content, &objects);
            cache_->lend(std::move(key), std::move(objects), out_);
        }
    }

    Manifests *out_;
    DocumentCache *cache_;
    YamlScanPool scanners_;
    const size_t in_flight_;
    std::deque<Scanned> scanned_;
    std::deque<std::string> keys_;  // of the documents submitted, with a cache
    std::vector<std::string> read_keys_;  // of the text read last
    std::vector<std::string> file_keys_;  // of the file being read
    YamlScanPool::Batch batch_;
    size_t batch_bytes_ = 0;
    // being read (none yet: known documents alone); shared by its objects' positions
    std::shared_ptr<const std::string> file_ = std::make_shared<const std::string>();
};

}  // namespace

// The files `path` names, in the order they are read: itself, or every
// *.yaml, *.yml, *.json below a directory, sorted.
std::vector<std::string> input_files(const std::string &path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (path == "-" || !fs::is_directory(path, ec)) {
        return {path};
    }
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        std::string ext = it->path().extension().string();
        if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
            files.push_back(it->path().string());
        }
    }
    if (ec) {
        throw InputError(path + ":0:0: cannot read directory: " + ec.message());
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::vector<std::string> split_documents(const std::string &text)
{
    std::vector<std::string> documents(1);
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (is_document_marker(line)) {
            documents.emplace_back();
        } else {
            documents.back() += line;
            documents.back() += '\n';
        }
    }
    return documents;
}

void parse_stream(std::istream &in, const std::string &file, Manifests *out, unsigned jobs, DocumentCache *cache)
{
    DocumentReader reader(out, jobs, cache);
    reader.read(in, file);
    reader.finish();
}

void parse_texts(const std::vector<std::pair<std::string, std::string>> &texts, Manifests *out, unsigned jobs,
                 DocumentCache *cache)
{
    DocumentReader reader(out, jobs, cache);
    for (const auto &[name, text] : texts) {
        std::istringstream in(text);
        reader.read(in, name);
    }
    reader.finish();
}

void parse_texts(const std::vector<std::pair<std::string, SharedText>> &texts, Manifests *out, unsigned jobs,
                 DocumentCache *cache)
{
    DocumentReader reader(out, jobs, cache);
    for (const auto &[name, text] : texts) reader.read_shared(text, name);
    reader.finish();
}

void parse_path(const std::string &path, Manifests *out, unsigned jobs, DocumentCache *cache)
{
    DocumentReader reader(out, jobs, cache);
    for (const std::string &file : input_files(path)) {
        if (file == "-") {
            reader.read(std::cin, "<stdin>");
            continue;
        }
        if (!reader.read_file(file)) {
            const int error = errno;
            reader.finish();  // an error of the files before comes first
            throw InputError(file + ":0:0: cannot open: " + std::strerror(error));
        }
    }
    reader.finish();
}

// RFC 1123 subdomain: dot-separated labels of [a-z0-9-], starting and
// ending alphanumeric. Hand-written: std::regex costs more than the YAML.
bool valid_dns1123_subdomain(const std::string &s)
{
    if (s.empty() || s.size() > 253) return false;
    size_t label = 0;
    char prev = '.';
    for (char ch : s) {
        if (ch == '.') {
            if (label == 0 || prev == '-') return false;
            label = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
            label++;
        } else if (ch == '-' && label > 0) {
            label++;
        } else {
            return false;
        }
        prev = ch;
    }
    return label > 0 && prev != '-';
}

bool valid_dns1123_label(const std::string &s)
{
    return s.size() <= 63 && s.find('.') == std::string::npos && valid_dns1123_subdomain(s);
}

bool valid_dns1035_label(const std::string &s)
{
    return valid_dns1123_label(s) && s[0] >= 'a' && s[0] <= 'z';
}

bool valid_label_value(const std::string &s)
{
    if (s.empty()) return true;
    auto alnum = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'); };
    if (s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
    return std::all_of(s.begin(), s.end(), [&](char ch) { return alnum(ch) || ch == '-' || ch == '_' || ch == '.'; });
}

bool valid_qualified_name(const std::string &s)
{
    size_t slash = s.find('/');
    std::string name = slash == std::string::npos ? s : s.substr(slash + 1);
    if (slash != std::string::npos && !valid_dns1123_subdomain(s.substr(0, slash))) return false;
    return !name.empty() && valid_label_value(name);
}

bool valid_ip_address(const std::string &s)
{
    unsigned char buf[16];
    return s.find('\0') == std::string::npos
           && (inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1);
}

bool valid_object_name(const std::string &kind, const std::string &name)
{
    // Services are DNS names inside the cluster: RFC 1035 labels
    if (kind == "Service") return valid_dns1035_label(name);
    if (kind == "ClusterTrustBundle") {
        // a signer's bundle is named "signer.example:name:anything"
        if (name.size() > 253) return false;
        for (size_t from = 0, colon = 0; colon != std::string::npos; from = colon + 1) {
            colon = name.find(':', from);
            if (!valid_dns1123_subdomain(name.substr(from, colon == std::string::npos ? colon : colon - from))) {
                return false;
            }
        }
        return true;
    }
    return valid_dns1123_subdomain(name);
}

// Gateway API PreciseHostname / Hostname (a wildcard only as the first label).
bool valid_hostname(const std::string &s, bool allow_wildcard)
{
    if (s.size() > 2 && s[0] == '*' && s[1] == '.') {
        return allow_wildcard && valid_dns1123_subdomain(s.substr(2));
    }
    return valid_dns1123_subdomain(s);
}

}  // namespace g2n
