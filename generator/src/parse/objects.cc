// One object of any kind: dispatched to its kind's parser, or rejected
// with the reason (unknown kinds, other controllers' objects, NUL bytes).
#include "parse/kinds.h"

#include "kind_table.h"
#include "parse/fields.h"

namespace g2n {

namespace {

void parse_known_object(const Document &doc, const YamlNode &root, const std::string &api_version,
                        const KindRow *row, Manifests *out);

}  // namespace

// What can still be read of a rejected object, each part only when valid:
// its name for the status, a route's parents, a policy's targets (so that
// the traffic the policy was meant to protect fails closed, never plain).
void reject(const Document &doc, const YamlNode &root, const std::string &api_version,
            const std::string &kind, bool namespaced, const std::string &message, Manifests *out)
{
    RejectedObject r;
    r.api_version = api_version;
    r.kind = kind;
    r.message = message;
    r.meta.pos = doc.pos(root);
    YamlNode metadata = root.get("metadata");
    const std::string &name = metadata.get("name").scalar();
    std::string ns = !namespaced                          ? ""
                     : metadata.get("namespace").defined() ? metadata.get("namespace").scalar()
                                                           : "default";
    if (valid_object_name(kind, name) && (!namespaced || valid_dns1123_label(ns))) {
        r.meta.name = name;
        r.meta.namespace_ = ns;
        r.meta.creation_timestamp = metadata.get("creationTimestamp").scalar();
        const std::string &generation = metadata.get("generation").scalar();
        if (!generation.empty() && generation.size() < 10
            && generation.find_first_not_of("0123456789") == std::string::npos) {
            r.meta.generation = std::stoll(generation);
        } else {
            r.meta.generation = 1;
        }
    }
    YamlNode spec = root.get("spec");
    auto valid_ref = [](const YamlNode &ref) {
        const std::string &ref_name = ref.get("name").scalar();
        const std::string &section = ref.get("sectionName").scalar();
        return valid_dns1123_subdomain(ref_name) && (section.empty() || valid_dns1123_subdomain(section));
    };
    if (kind != "BackendTLSPolicy") {
        std::vector<YamlNode> refs = spec.get("parentRefs").items();
        if (kind == "ListenerSet") refs = {spec.get("parentRef")};
        for (const YamlNode &ref : refs) {
            const std::string &ref_ns = ref.get("namespace").scalar();
            const std::string &ref_kind = ref.get("kind").scalar();
            if (!valid_ref(ref) || !(ref_ns.empty() || valid_dns1123_label(ref_ns))) continue;
            const std::string &ref_group = ref.get("group").scalar();
            if ((ref_kind != "" && ref_kind != "Gateway" && ref_kind != "ListenerSet")
                || (!ref_group.empty() && ref_group != kGatewayGroup)) {
                continue;
            }
            ParentRef p;
            p.kind = ref_kind.empty() ? "Gateway" : ref_kind;
            p.name = ref.get("name").scalar();
            p.namespace_ = ref_ns;
            p.section_name = ref.get("sectionName").scalar();
            r.parent_refs.push_back(p);
        }
    } else if (!r.meta.name.empty()) {
        BackendTLSPolicy p;
        p.meta = r.meta;
        p.api_version = api_version;
        for (const YamlNode &ref : spec.get("targetRefs").items()) {
            if (!valid_ref(ref)) continue;
            p.target_refs.push_back({ref.get("group").scalar(), ref.get("kind").scalar(), ref.get("name").scalar(),
                                     ref.get("sectionName").scalar()});
        }
        p.invalid_reasons.push_back(message);
        out->backend_tls_policies.push_back(std::move(p));
    }
    out->rejected.push_back(std::move(r));
}

void parse_object(const Document &doc, const YamlNode &root, Manifests *out)
{
    std::string api_version = doc.string(root, "", "apiVersion", true);
    std::string kind = doc.string(root, "", "kind", true);
    std::string group = api_version.find('/') == std::string::npos
                            ? std::string()
                            : api_version.substr(0, api_version.find('/'));
    const KindRow *row = find_kind(group, kind);
    if (row == nullptr || !row->tenant()) {
        parse_known_object(doc, root, api_version, row, out);
        return;
    }
    try {
        parse_known_object(doc, root, api_version, row, out);
    } catch (const InputError &e) {
        reject(doc, root, api_version, kind, row->namespaced(), e.what(), out);
    }
}

// No text of an object may hold a NUL byte: checks that read a C string
// (an address through inet_pton, a number through strtol) would stop
// there and pass what nginx's configuration cannot hold, and the whole
// rendering would fail instead of this one object.
void refuse_nul(const Document &doc, const YamlNode &node, const std::string &where)
{
    if (node.is_scalar()) {
        if (node.scalar().find('\0') != std::string::npos) doc.fail(node, where, "holds a NUL byte");
        return;
    }
    size_t i = 0;
    for (const YamlNode &item : node.items()) refuse_nul(doc, item, where + "[" + std::to_string(i++) + "]");
    for (const auto &[key, value] : node.entries()) {
        const std::string at = (where.empty() ? "" : where + ".") + key.scalar();
        if (key.scalar().find('\0') != std::string::npos) doc.fail(key, at, "holds a NUL byte");
        refuse_nul(doc, value, at);
    }
}

namespace {

// An object of a kind read (`row`, null for any other kind, which is
// ignored) by its kind's parser, at a version the kind is read as.
void parse_known_object(const Document &doc, const YamlNode &root, const std::string &api_version,
                        const KindRow *row, Manifests *out)
{
    refuse_nul(doc, root, "");
    if (row == nullptr) {
        ObjectMeta meta = doc.meta(root);
        out->ignored.push_back(doc.string(root, "", "kind", true) + " " + meta.key());
        return;
    }
    if (!row->reads_version(api_version)) {
        doc.fail(root, "apiVersion",
                 std::string(row->kind) + " is read as " + row->versions_read() + ", not " + api_version);
    }
    row->parse(doc, root, out);
}

}  // namespace

}  // namespace g2n
