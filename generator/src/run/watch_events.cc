#include "run/watch_events.h"
#include "kube/json.h"
#include "run/process.h"

#include <fcntl.h>
#include <unistd.h>

#include <rapidjson/document.h>
#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <utility>
#include <vector>

namespace g2n {

using kube::json_text;
using kube::string_member;

bool WatchedObjects::apply(const std::string &event_text, std::string *why)
{
    rapidjson::Document event;
    event.Parse(event_text.c_str(), event_text.size());
    if (event.HasParseError() || !event.IsObject()) {
        *why = std::string("a watch event is not JSON: ") + rapidjson::GetParseError_En(event.GetParseError())
               + " at offset " + std::to_string(event.GetErrorOffset());
        return false;
    }
    const std::string type(string_member(event, "type"));
    auto object = event.FindMember("object");
    if (type == "BOOKMARK") return true;
    if (type == "ERROR" || object == event.MemberEnd() || !object->value.IsObject()) {
        *why = "watch event " + (type.empty() ? std::string("without a type") : type);
        return false;
    }
    const rapidjson::Value &o = object->value;
    const auto meta = o.FindMember("metadata");
    const rapidjson::Value empty;
    const rapidjson::Value &m = meta != o.MemberEnd() ? meta->value : empty;
    const std::string name_key = std::string(string_member(m, "namespace")) + "/" + std::string(string_member(m, "name"));
    const std::string kind(string_member(o, "kind"));
    const std::string api_version(string_member(o, "apiVersion"));
    const std::string key = api_version + "/" + kind + "/" + name_key;
    if (type == "DELETED") {
        if (objects_.erase(key) == 0) return true;
    } else if (type == "ADDED" || type == "MODIFIED") {
        std::string text = json_text(o);
        auto [it, added] = objects_.try_emplace(key);
        if (!added && it->second == text) return true;
        it->second = std::move(text);
    } else {
        *why = "unknown watch event type " + type;
        return false;
    }
    const size_t slash = api_version.find('/');
    const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    changed_.emplace(key, kube::ObjectChange{group, kind, name_key, "<watch event " + key + ">", key});
    return true;
}

std::vector<kube::ObjectChange> WatchedObjects::take_changes()
{
    std::vector<kube::ObjectChange> changes;
    for (auto &[key, change] : changed_) changes.push_back(std::move(change));
    changed_.clear();
    return changes;
}

std::optional<std::string> WatchedObjects::json_of(const kube::ObjectChange &change) const
{
    auto it = objects_.find(change.key);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
}

// Each object as a file of its own, named by the object: its text is its
// own, so the cache knows it until it changes
void WatchedObjects::read(Manifests *out, unsigned jobs, DocumentCache *cache) const
{
    std::vector<std::pair<std::string, std::string>> texts;
    texts.reserve(objects_.size());
    for (const auto &[key, text] : objects_) texts.emplace_back("<watch event " + key + ">", text);
    parse_texts(texts, out, jobs, cache);
}

WatchEventInput::WatchEventInput()
{
    ::fcntl(0, F_SETFL, ::fcntl(0, F_GETFL) | O_NONBLOCK);
    say("reading watch events on standard input");
}

Input::Readable WatchEventInput::on_readable()
{
    char buf[65536];
    const ssize_t got = ::read(0, buf, sizeof buf);
    if (got == 0) return Readable::Ended;
    if (got < 0) return Readable::Nothing;
    pending_.append(buf, static_cast<size_t>(got));
    Readable readable = Readable::Nothing;
    size_t end;
    while ((end = json_value_end(pending_, 0)) != std::string::npos) {
        std::string why;
        if (!objects_.apply(pending_.substr(0, end), &why)) say(why + "; ignored");
        pending_.erase(0, end);
        readable = Readable::Changed;
    }
    return readable;
}

void WatchEventInput::read(Manifests *out, unsigned jobs, DocumentCache *cache)
{
    objects_.read(out, jobs, cache);
    out->server_timestamps = true;  // kubectl's: the API server's
}

std::optional<ChangeSet> WatchEventInput::take_changes()
{
    return ChangeSet{objects_.take_changes(), [this](const kube::ObjectChange &c) { return objects_.json_of(c); }};
}

size_t json_value_end(const std::string &text, size_t from)
{
    const size_t start = text.find_first_not_of(" \t\r\n", from);
    if (start == std::string::npos) return std::string::npos;
    rapidjson::MemoryStream bytes(text.data() + start, text.size() - start);
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(bytes);
    rapidjson::Reader reader;
    rapidjson::BaseReaderHandler<> ignore;
    reader.Parse<rapidjson::kParseStopWhenDoneFlag>(in, ignore);
    if (!reader.HasParseError()) {
        const size_t end = start + in.Tell();
        // a number or literal that ends with the text may go on in the next read
        const char first = text[start];
        if (end == text.size() && first != '{' && first != '[' && first != '"') return std::string::npos;
        return end;
    }
    // the reader came to the end of the text (inside a string, an escape,
    // a number...) before the value ended: wait for more
    if (in.Tell() >= text.size() - start) return std::string::npos;
    // not JSON: cut after the fault, and the piece is reported as such
    return start + reader.GetErrorOffset() + 1;
}

}  // namespace g2n
