#include "run/file_input.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "kind_table.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

int64_t realtime_ns()
{
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// The one object a document holds: "Kind namespace/name" in *identity, its
// group and name key in *change; false when it holds none (a comment, a
// kind run does not read). Throws InputError as the parse does; a List or
// an object refused is a runtime_error: the whole way says what of it.
bool object_of(const std::string &file, const std::string &document, std::string *identity, kube::ObjectChange *change)
{
    Manifests one;
    parse_texts({{file, document}}, &one);
    std::vector<std::pair<std::string_view, const ObjectMeta *>> held;
    each_object(one, [&](std::string_view kind, const ObjectMeta &meta) { held.emplace_back(kind, &meta); });
    if (!one.rejected.empty() || held.size() > 1) throw std::runtime_error("not one object");
    if (held.empty()) return false;
    const auto [kind, meta] = held[0];
    const auto &kinds = kind_table();
    auto row = std::find_if(kinds.begin(), kinds.end(), [&](const KindRow &r) { return kind == r.kind; });
    if (row == kinds.end()) throw std::runtime_error("no such kind");
    *identity = std::string(kind) + " " + meta->key();
    *change = kube::ObjectChange{row->group, std::string(kind), meta->key(), file, *identity};
    return true;
}

}  // namespace

FileInput::FileInput(std::vector<std::string> inputs) : inputs_(std::move(inputs))
{
    inotify_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_ < 0) throw std::runtime_error(std::string("inotify: ") + std::strerror(errno));
    watch_paths();
}

FileInput::~FileInput() { ::close(inotify_); }

void FileInput::watch_paths()
{
    const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB;
    for (const std::string &input : inputs_) {
        if (input == "-") continue;
        std::error_code ec;
        if (fs::is_directory(input, ec)) {
            inotify_add_watch(inotify_, input.c_str(), mask);
            for (auto it = fs::recursive_directory_iterator(input, ec); !ec && it != fs::recursive_directory_iterator();
                 it.increment(ec)) {
                if (it->is_directory(ec)) inotify_add_watch(inotify_, it->path().c_str(), mask);
            }
        } else {
            fs::path parent = fs::path(input).parent_path();
            inotify_add_watch(inotify_, parent.empty() ? "." : parent.c_str(), mask);
        }
    }
}

Input::Readable FileInput::on_readable()
{
    char buf[65536];
    if (::read(inotify_, buf, sizeof buf) <= 0) return Readable::Nothing;
    watch_paths();  // directories made since
    return Readable::Changed;
}

bool FileInput::files_now(std::map<std::string, FileText> *now) const
{
    for (const std::string &input : inputs_) {
        if (input == "-") return false;
        std::vector<std::string> files;
        try {
            files = input_files(input);
        } catch (const InputError &) {
            return false;
        }
        for (const std::string &file : files) {
            FileText f;
            if (!DocumentCache::stamp_of(file, &f.stamp)) return false;
            // (one changed in the same tick of the file system's clock as it
            // was read last has its stamp as it was: read again, as the
            // document cache does)
            auto was = files_.find(file);
            if (was != files_.end() && was->second.stamp == f.stamp
                && was->second.read_ns - static_cast<int64_t>(f.stamp.ctime_ns) > DocumentCache::kSettledNs) {
                (*now)[file] = was->second;
                continue;
            }
            f.read_ns = realtime_ns();
            std::ifstream in(file, std::ios::binary);
            if (!in) return false;
            std::ostringstream text;
            text << in.rdbuf();
            f.text = text.str();
            (*now)[file] = std::move(f);
        }
    }
    return true;
}

void FileInput::read(Manifests *out, unsigned jobs, DocumentCache *cache)
{
    // (the files first: one changed while it is parsed is a change the
    // next take_changes() says, applied again at worst)
    known_ = false;
    std::map<std::string, FileText> now;
    const bool readable = files_now(&now);
    for (const std::string &input : inputs_) parse_path(input, out, jobs, cache);
    if (!readable) return;
    files_ = std::move(now);
    file_of_.clear();
    bool twice = false;
    each_object(*out, [&](std::string_view kind, const ObjectMeta &meta) {
        if (!file_of_.emplace(std::string(kind) + " " + meta.key(), meta.pos.file()).second) twice = true;
    });
    known_ = !twice;
}

std::optional<ChangeSet> FileInput::take_changes()
{
    if (!known_) return std::nullopt;
    known_ = false;  // until this is done: the whole way reads afresh
    std::map<std::string, FileText> now;
    if (!files_now(&now)) return std::nullopt;
    // by "Kind namespace/name": the documents gone and new, with their files
    std::map<std::string, std::string> gone;
    std::map<std::string, std::pair<std::string, std::string>> made;  // file, document
    std::map<std::string, kube::ObjectChange> changes;
    std::set<std::string> names;  // the files read last and those there now
    for (const auto &[file, text] : files_) names.insert(file);
    for (const auto &[file, text] : now) names.insert(file);
    try {
        static const std::string none;
        for (const std::string &file : names) {
            auto then = files_.find(file), is = now.find(file);
            const std::string &before = then == files_.end() ? none : then->second.text;
            const std::string &after = is == now.end() ? none : is->second.text;
            if (before == after) continue;
            std::multiset<std::string> old_documents, new_documents;
            for (std::string &d : split_documents(before)) old_documents.insert(std::move(d));
            for (std::string &d : split_documents(after)) {
                auto same = old_documents.find(d);
                if (same != old_documents.end()) {
                    old_documents.erase(same);
                } else {
                    new_documents.insert(std::move(d));
                }
            }
            std::string identity;
            kube::ObjectChange change;
            for (const std::string &d : old_documents) {
                if (object_of(file, d, &identity, &change)) {
                    if (!gone.emplace(identity, file).second) return std::nullopt;
                    changes.emplace(identity, change);
                }
            }
            for (const std::string &d : new_documents) {
                if (object_of(file, d, &identity, &change)) {
                    if (!made.emplace(identity, std::pair{file, d}).second) return std::nullopt;  // in two documents
                    changes[identity] = change;
                }
            }
        }
    } catch (const std::exception &) {
        return std::nullopt;  // the whole way says what
    }
    // an object is in one document at a time, as the whole way takes it:
    // one made that a document unchanged still holds is there twice
    for (const auto &[identity, where] : made) {
        if (file_of_.count(identity) && !gone.count(identity)) return std::nullopt;
    }
    auto texts = std::make_shared<std::map<std::string, std::string>>();
    ChangeSet set;
    for (auto &[identity, change] : changes) {
        if (auto m = made.find(identity); m != made.end()) {
            file_of_[identity] = m->second.first;
            texts->emplace(identity, m->second.second);
        } else {
            file_of_.erase(identity);
        }
        set.objects.push_back(std::move(change));
    }
    set.json_of = [texts](const kube::ObjectChange &c) -> std::optional<std::string> {
        auto it = texts->find(c.key);
        if (it == texts->end()) return std::nullopt;
        return it->second;
    };
    files_ = std::move(now);
    known_ = true;
    return set;
}

}  // namespace g2n
