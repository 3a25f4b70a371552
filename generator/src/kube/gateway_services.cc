#include "kube/gateway_services.h"

#include <rapidjson/document.h>

#include <map>
#include <set>

#include "digest.h"
#include "gtls_spec.h"
#include "kube/config.h"
#include "kube/json.h"
#include "parse/fields.h"

namespace g2n::kube {

namespace {

using rapidjson::Document;
using rapidjson::Value;
using Allocator = Document::AllocatorType;
using Strings = std::map<std::string, std::string>;

constexpr const char *kGatewayNameLabel = "gateway.networking.k8s.io/gateway-name";
constexpr const char *kGatewayClassLabel = "gateway.networking.k8s.io/gateway-class-name";
constexpr const char *kManagedByLabel = "app.kubernetes.io/managed-by";
constexpr const char *kManagedBy = "gateway2nginx";
constexpr const char *kControllerAnnotation = "gateway2nginx.io/controller-name";
// the keys of spec.infrastructure it carries, as JSON: removed once the
// Gateway no longer has them, while what others add stays
constexpr const char *kPropagatedAnnotation = "gateway2nginx.io/infrastructure-keys";

// (an absent member's view has no data, which RapidJSON does not take)
Value text(std::string_view s, Allocator &alloc)
{
    return Value(s.empty() ? "" : s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

Strings strings_of(const Value *map)
{
    Strings out;
    if (map == nullptr || !map->IsObject()) return out;
    for (const auto &m : map->GetObject()) {
        if (m.value.IsString()) out.emplace(m.name.GetString(), m.value.GetString());
    }
    return out;
}

Value object_of(const Strings &strings, Allocator &alloc)
{
    Value out(rapidjson::kObjectType);
    for (const auto &[k, v] : strings) out.AddMember(text(k, alloc), text(v, alloc), alloc);
    return out;
}

std::string propagated_keys(const GatewayService &svc)
{
    Document doc(rapidjson::kObjectType);
    Allocator &alloc = doc.GetAllocator();
    for (const auto &[name, map] : {std::pair{"labels", &svc.labels}, std::pair{"annotations", &svc.annotations}}) {
        Value keys(rapidjson::kArrayType);
        for (const auto &entry : *map) keys.PushBack(text(entry.first, alloc), alloc);
        doc.AddMember(rapidjson::StringRef(name), keys, alloc);
    }
    return json_text(doc);
}

// The keys of `which` ("labels" or "annotations") a Service says it
// carries for its Gateway.
std::set<std::string> carried_keys(const Strings &annotations, const char *which)
{
    std::set<std::string> out;
    auto it = annotations.find(kPropagatedAnnotation);
    if (it == annotations.end()) return out;
    Document doc;
    doc.Parse(it->second.c_str(), it->second.size());
    const Value *keys = doc.HasParseError() ? nullptr : member(doc, which);
    if (keys == nullptr || !keys->IsArray()) return out;
    for (const Value &k : keys->GetArray()) {
        if (k.IsString()) out.insert(k.GetString());
    }
    return out;
}

Strings wanted_labels(const GatewayService &svc)
{
    Strings out = svc.labels;
    // a label value has at most 63 bytes: longer names go without
    if (valid_label_value(svc.gateway)) out[kGatewayNameLabel] = svc.gateway;
    if (valid_label_value(svc.gateway_class)) out[kGatewayClassLabel] = svc.gateway_class;
    out[kManagedByLabel] = kManagedBy;
    return out;
}

Strings wanted_annotations(const GatewayService &svc, const GatewayServiceConfig &config)
{
    Strings out = svc.annotations;
    out[kControllerAnnotation] = config.controller_name;
    out[kPropagatedAnnotation] = propagated_keys(svc);
    return out;
}

// `held` less the keys it carried for the Gateway, with `wanted` over it.
Strings merged(Strings held, const std::set<std::string> &carried, const Strings &wanted)
{
    for (const std::string &key : carried) held.erase(key);
    for (const auto &[k, v] : wanted) held[k] = v;
    return held;
}

Value owner_references(const GatewayService &svc, Allocator &alloc)
{
    Value refs(rapidjson::kArrayType);
    if (svc.gateway_uid.empty()) return refs;
    Value ref(rapidjson::kObjectType);
    ref.AddMember("apiVersion", "gateway.networking.k8s.io/v1", alloc);
    ref.AddMember("kind", "Gateway", alloc);
    ref.AddMember("name", text(svc.gateway, alloc), alloc);
    ref.AddMember("uid", text(svc.gateway_uid, alloc), alloc);
    // no blockOwnerDeletion: setting it needs the Gateway's finalizers
    ref.AddMember("controller", true, alloc);
    refs.PushBack(ref, alloc);
    return refs;
}

std::string port_name(const std::pair<int, std::string> &port)
{
    return (port.second == "UDP" ? "udp-" : "tcp-") + std::to_string(port.first);
}

Value ports_of(const GatewayService &svc, Allocator &alloc)
{
    Value ports(rapidjson::kArrayType);
    for (const auto &p : svc.ports) {
        Value port(rapidjson::kObjectType);
        port.AddMember("name", text(port_name(p), alloc), alloc);
        port.AddMember("protocol", text(p.second, alloc), alloc);
        port.AddMember("port", p.first, alloc);
        port.AddMember("targetPort", p.first, alloc);
        ports.PushBack(port, alloc);
    }
    return ports;
}

void set_member(Value &object, const char *key, Value value, Allocator &alloc)
{
    auto it = object.FindMember(key);
    if (it != object.MemberEnd()) {
        it->value = value;
    } else {
        object.AddMember(rapidjson::StringRef(key), value, alloc);
    }
}

// every `key` of `object` (JSON may repeat one)
void remove_member(Value &object, const char *key)
{
    while (object.RemoveMember(key)) {
    }
}

// spec as wanted, what else it holds (defaults the API server filled in) kept
void set_spec(Value &spec, const GatewayService &svc, const GatewayServiceConfig &config, Allocator &alloc)
{
    if (std::string_view(string_member(spec, "type")) != "ExternalName") {
        for (const char *key : {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"}) remove_member(spec, key);
    }
    remove_member(spec, "selector");  // an alias selects no pod
    set_member(spec, "type", Value("ExternalName"), alloc);
    set_member(spec, "externalName", text(config.external_name, alloc), alloc);
    if (svc.ports.empty()) {
        remove_member(spec, "ports");
    } else {
        set_member(spec, "ports", ports_of(svc, alloc), alloc);
    }
}

bool spec_current(const Value *spec, const GatewayService &svc, const GatewayServiceConfig &config)
{
    if (spec == nullptr || !spec->IsObject() || string_member(*spec, "type") != "ExternalName"
        || string_member(*spec, "externalName") != config.external_name || spec->HasMember("selector")) {
        return false;
    }
    const Value *ports = member(*spec, "ports");
    const size_t held = ports != nullptr && ports->IsArray() ? ports->Size() : 0;
    if (held != svc.ports.size()) return false;
    for (size_t i = 0; i < held; i++) {
        const Value &p = (*ports)[static_cast<rapidjson::SizeType>(i)];
        const Value *number = member(p, "port");
        if (string_member(p, "name") != port_name(svc.ports[i]) || string_member(p, "protocol") != svc.ports[i].second
            || number == nullptr || !number->IsInt() || number->GetInt() != svc.ports[i].first) {
            return false;
        }
    }
    return true;
}

Document parse_object(const std::string &json)
{
    Document doc;
    doc.Parse(json.c_str(), json.size());
    if (doc.HasParseError() || !doc.IsObject()) throw ApiError("a Service held is not a JSON object");
    return doc;
}

// Whether the Service `object` carries our marks, under `controller_name`.
bool made_by(const Value &object, const std::string &controller_name)
{
    const Value *meta = member(object, "metadata");
    return meta != nullptr && strings_of(member(*meta, "labels"))[kManagedByLabel] == kManagedBy
           && strings_of(member(*meta, "annotations"))[kControllerAnnotation] == controller_name;
}

}  // namespace

std::string gateway_service_name(const GatewayService &svc)
{
    const std::string name = svc.gateway + "-" + svc.gateway_class;
    if (valid_dns1035_label(name)) return name;
    // lower case letters, digits and '-' from the name, starting with a
    // letter, and the digest that keeps two such names apart
    std::string made = "gw";
    for (char c : name) {
        if (made.size() == 53) break;
        made += (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
    }
    const std::string digest = sha256(svc.namespace_ + "/" + name);
    return made + "-" + gtls::to_hex(reinterpret_cast<const unsigned char *>(digest.data()), 4);
}

std::string new_gateway_service(const GatewayService &svc, const GatewayServiceConfig &config)
{
    Document doc(rapidjson::kObjectType);
    Allocator &alloc = doc.GetAllocator();
    doc.AddMember("apiVersion", "v1", alloc);
    doc.AddMember("kind", "Service", alloc);
    Value meta(rapidjson::kObjectType);
    meta.AddMember("name", text(gateway_service_name(svc), alloc), alloc);
    meta.AddMember("namespace", text(svc.namespace_, alloc), alloc);
    meta.AddMember("labels", object_of(wanted_labels(svc), alloc), alloc);
    meta.AddMember("annotations", object_of(wanted_annotations(svc, config), alloc), alloc);
    Value refs = owner_references(svc, alloc);
    if (!refs.Empty()) meta.AddMember("ownerReferences", refs, alloc);
    doc.AddMember("metadata", meta, alloc);
    Value spec(rapidjson::kObjectType);
    set_spec(spec, svc, config, alloc);
    doc.AddMember("spec", spec, alloc);
    return json_text(doc);
}

bool is_gateway_service(const std::string &held, const std::string &controller_name)
{
    Document doc;
    doc.Parse(held.c_str(), held.size());
    return !doc.HasParseError() && made_by(doc, controller_name);
}

HeldService compare_gateway_service(const std::string &held, const GatewayService &svc,
                                    const GatewayServiceConfig &config, std::string *update)
{
    Document doc = parse_object(held);  // broken JSON is said, not taken for someone else's
    if (!made_by(doc, config.controller_name)) return HeldService::Foreign;
    Allocator &alloc = doc.GetAllocator();
    Value &meta = doc["metadata"];
    const Strings held_labels = strings_of(member(meta, "labels"));
    const Strings held_annotations = strings_of(member(meta, "annotations"));
    const Strings labels = merged(held_labels, carried_keys(held_annotations, "labels"), wanted_labels(svc));
    const Strings annotations = merged(held_annotations, carried_keys(held_annotations, "annotations"),
                                       wanted_annotations(svc, config));
    Value refs = owner_references(svc, alloc);
    const Value *held_refs = member(meta, "ownerReferences");
    const bool refs_current = held_refs != nullptr ? *held_refs == refs : refs.Empty();
    if (labels == held_labels && annotations == held_annotations && refs_current
        && spec_current(member(doc, "spec"), svc, config)) {
        return HeldService::Current;
    }
    set_member(meta, "labels", object_of(labels, alloc), alloc);
    set_member(meta, "annotations", object_of(annotations, alloc), alloc);
    if (refs.Empty()) {
        remove_member(meta, "ownerReferences");
    } else {
        set_member(meta, "ownerReferences", std::move(refs), alloc);
    }
    if (!doc.HasMember("spec") || !doc["spec"].IsObject()) set_member(doc, "spec", Value(rapidjson::kObjectType), alloc);
    set_spec(doc["spec"], svc, config, alloc);
    *update = json_text(doc);
    return HeldService::Stale;
}

std::string delete_only(const std::string &held)
{
    Document doc = parse_object(held);
    const Value *meta = member(doc, "metadata");
    Document out(rapidjson::kObjectType);
    Allocator &alloc = out.GetAllocator();
    out.AddMember("kind", "DeleteOptions", alloc);
    out.AddMember("apiVersion", "v1", alloc);
    Value preconditions(rapidjson::kObjectType);
    // an empty one would be compared, and never match
    for (const char *key : {"uid", "resourceVersion"}) {
        const std::string_view value = meta != nullptr ? string_member(*meta, key) : std::string_view();
        if (!value.empty()) preconditions.AddMember(rapidjson::StringRef(key), text(value, alloc), alloc);
    }
    out.AddMember("preconditions", preconditions, alloc);
    return json_text(out);
}

}  // namespace g2n::kube
