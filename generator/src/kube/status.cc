#include "kube/status.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>

#include "kube/config.h"
#include "kube/json.h"

namespace g2n::kube {

namespace {

using rapidjson::Document;
using rapidjson::StringBuffer;
using rapidjson::Value;
using rapidjson::Writer;

void string_field(Writer<StringBuffer> &w, const char *key, std::string_view value)
{
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void write_conditions(Writer<StringBuffer> &w, const std::vector<Condition> &conditions, int64_t generation)
{
    w.Key("conditions");
    w.StartArray();
    for (const Condition &c : conditions) {
        w.StartObject();
        string_field(w, "type", c.type);
        string_field(w, "status", c.status);
        string_field(w, "reason", c.reason);
        string_field(w, "message", c.message);
        w.Key("observedGeneration");
        w.Int64(generation);
        w.EndObject();
    }
    w.EndArray();
}

// Each condition of `fresh` keeps the lastTransitionTime of the condition
// of the same type in `old` while its status is the same, else `now`.
void stamp_conditions(Value &fresh, const Value *old, const std::string &now, Document::AllocatorType &alloc)
{
    Value *conditions = fresh.IsObject() && fresh.HasMember("conditions") ? &fresh["conditions"] : nullptr;
    if (conditions == nullptr || !conditions->IsArray()) return;
    const Value *old_conditions = old != nullptr ? member(*old, "conditions") : nullptr;
    for (Value &c : conditions->GetArray()) {
        std::string when = now;
        if (old_conditions != nullptr && old_conditions->IsArray()) {
            for (const Value &o : old_conditions->GetArray()) {
                if (string_member(o, "type") == string_member(c, "type") && string_member(o, "status") == string_member(c, "status")
                    && !string_member(o, "lastTransitionTime").empty()) {
                    when = std::string(string_member(o, "lastTransitionTime"));
                }
            }
        }
        c.AddMember("lastTransitionTime", Value(when.c_str(), static_cast<rapidjson::SizeType>(when.size()), alloc),
                    alloc);
    }
}

const char *ref_name(std::string_view refs_key) { return refs_key == "parents" ? "parentRef" : "ancestorRef"; }

}  // namespace

std::string our_status_json(const ObjectStatus &st, const std::string &controller_name,
                            const std::vector<std::string_view> &supported_features)
{
    StringBuffer buffer;
    Writer<StringBuffer> w(buffer);
    const int64_t generation = st.meta.generation;
    w.StartObject();
    if (st.kind == "GatewayClass") {
        write_conditions(w, st.conditions, generation);
        w.Key("supportedFeatures");
        w.StartArray();
        for (std::string_view feature : supported_features) {
            w.StartObject();
            string_field(w, "name", feature);
            w.EndObject();
        }
        w.EndArray();
    } else if (st.kind == "Gateway" || st.kind == "ListenerSet") {
        if (st.kind == "Gateway") {
            w.Key("addresses");
            w.StartArray();
            for (const ObjectStatus::Address &address : st.addresses) {
                w.StartObject();
                string_field(w, "type", address.type);
                string_field(w, "value", address.value);
                w.EndObject();
            }
            w.EndArray();
            w.Key("attachedListenerSets");
            w.Int(st.attached_listener_sets);
        }
        write_conditions(w, st.conditions, generation);
        w.Key("listeners");
        w.StartArray();
        for (const auto &l : st.listeners) {
            w.StartObject();
            string_field(w, "name", l.name);
            w.Key("attachedRoutes");
            w.Int(l.attached_routes);
            w.Key("supportedKinds");
            w.StartArray();
            for (const std::string &kind : l.supported_kinds) {
                w.StartObject();
                string_field(w, "group", "gateway.networking.k8s.io");
                string_field(w, "kind", kind);
                w.EndObject();
            }
            w.EndArray();
            write_conditions(w, l.conditions, generation);
            w.EndObject();
        }
        w.EndArray();
    } else {
        w.Key(std::string(st.refs_key).c_str());
        w.StartArray();
        for (const auto &ref : st.refs) {
            w.StartObject();
            w.Key(ref_name(st.refs_key));
            w.StartObject();
            string_field(w, "group", ref.group);
            string_field(w, "kind", ref.kind);
            string_field(w, "namespace", ref.namespace_);
            string_field(w, "name", ref.name);
            if (!ref.section_name.empty()) string_field(w, "sectionName", ref.section_name);
            w.EndObject();
            string_field(w, "controllerName", controller_name);
            write_conditions(w, ref.conditions, generation);
            w.EndObject();
        }
        w.EndArray();
    }
    w.EndObject();
    return std::string(buffer.GetString(), buffer.GetSize());
}

std::optional<std::string> merge_status(const std::string &ours_text, const std::string &object_text,
                                        const std::string &controller_name, const std::string &now)
{
    Document object;
    object.Parse(object_text.c_str(), object_text.size());
    if (object.HasParseError() || !object.IsObject()) throw ApiError("the object read back is not JSON");
    Document ours(&object.GetAllocator());
    ours.Parse(ours_text.c_str(), ours_text.size());
    if (ours.HasParseError() || !ours.IsObject()) throw ApiError("our status is not JSON");
    auto &alloc = object.GetAllocator();

    Value old_status(rapidjson::kObjectType);
    if (const Value *current = member(object, "status"); current != nullptr && current->IsObject()) {
        old_status.CopyFrom(*current, alloc);
    }
    Value status(rapidjson::kObjectType);
    status.CopyFrom(old_status, alloc);

    for (auto &field : ours.GetObject()) {
        const std::string key(field.name.GetString(), field.name.GetStringLength());
        const Value *old_field = member(old_status, key.c_str());
        Value fresh(field.value, alloc);
        if (key == "conditions") {
            // stamp_conditions reads an object's "conditions": ours and the old
            Value wrapper(rapidjson::kObjectType);
            wrapper.AddMember("conditions", fresh, alloc);
            stamp_conditions(wrapper, &old_status, now, alloc);
            fresh = wrapper["conditions"];
        } else if (key == "listeners" && fresh.IsArray()) {
            for (Value &listener : fresh.GetArray()) {
                const Value *old_listener = nullptr;
                if (old_field != nullptr && old_field->IsArray()) {
                    for (const Value &o : old_field->GetArray()) {
                        if (string_member(o, "name") == string_member(listener, "name")) old_listener = &o;
                    }
                }
                stamp_conditions(listener, old_listener, now, alloc);
            }
        } else if ((key == "parents" || key == "ancestors") && fresh.IsArray()) {
            const char *ref_key = ref_name(key);
            Value merged(rapidjson::kArrayType);
            if (old_field != nullptr && old_field->IsArray()) {
                for (const Value &o : old_field->GetArray()) {
                    if (string_member(o, "controllerName") != controller_name) merged.PushBack(Value(o, alloc), alloc);
                }
            }
            for (Value &entry : fresh.GetArray()) {
                const Value *old_entry = nullptr;
                if (old_field != nullptr && old_field->IsArray()) {
                    for (const Value &o : old_field->GetArray()) {
                        const Value *old_ref = member(o, ref_key);
                        const Value *new_ref = member(entry, ref_key);
                        if (string_member(o, "controllerName") == controller_name && old_ref != nullptr
                            && new_ref != nullptr && *old_ref == *new_ref) {
                            old_entry = &o;
                        }
                    }
                }
                stamp_conditions(entry, old_entry, now, alloc);
                merged.PushBack(entry, alloc);
            }
            fresh = merged;
        }
        if (status.HasMember(key.c_str())) status[key.c_str()] = fresh;
        else status.AddMember(Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()), alloc), fresh, alloc);
    }
    // compared as text: the fields keep their places, and Value's == finds
    // a repeated key's first value only (the API server never sends one;
    // fuzz_kube did)
    if (json_text(status) == json_text(old_status)) return std::nullopt;
    if (object.HasMember("status")) object["status"] = status;
    else object.AddMember("status", status, alloc);
    StringBuffer buffer;
    Writer<StringBuffer> w(buffer);
    object.Accept(w);
    return std::string(buffer.GetString(), buffer.GetSize());
}

std::string rfc3339_now()
{
    char stamp[32];
    std::time_t now = std::time(nullptr);
    struct tm utc;
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
    return stamp;
}

}  // namespace g2n::kube
