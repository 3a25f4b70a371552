// status.yaml: one document per Gateway, route and BackendTLSPolicy with
// the status Kubernetes would hold. Written by hand rather than through
// yaml-cpp's emitter, which spent 40% of a 10,000-route run deciding how to
// quote each scalar; the rules here are simpler and as safe: a scalar is
// plain only when nothing in it could read as YAML syntax, else it is
// double-quoted with escapes.
#include <cstdio>
#include <sstream>

#include "resolve/features.h"
#include "render/render.h"

namespace g2n {

namespace {

bool plain_safe(std::string_view s)
{
    if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
    if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s.front()) != std::string_view::npos) return false;
    if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) return false;
    for (unsigned char ch : s) {
        if (ch < 0x20 || ch == 0x7f) return false;
    }
    // words YAML 1.1 readers take for booleans or null (none is longer than 5)
    if (s.size() > 5) return true;
    static const char *const special[] = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"};
    char lower[6] = {};
    for (size_t i = 0; i < s.size(); i++) lower[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    for (const char *word : special) {
        if (std::string_view(lower, s.size()) == word) return false;
    }
    return true;
}

void append_quoted(std::string &out, std::string_view s)
{
    out += '"';
    for (unsigned char ch : s) {
        switch (ch) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
            if (ch < 0x20 || ch == 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof(buf), "\\x%02x", ch);
                out += buf;
            } else {
                out += static_cast<char>(ch);
            }
        }
    }
    out += '"';
}

void append_scalar(std::string &out, std::string_view s)
{
    if (plain_safe(s)) {
        out += s;
    } else {
        append_quoted(out, s);
    }
}

// `indent` `key` `value` newline, the value a YAML scalar
void line(std::string &out, std::string_view indent, std::string_view key, std::string_view value)
{
    out += indent;
    out += key;
    append_scalar(out, value);
    out += '\n';
}

void conditions(std::string &out, std::string_view indent, const std::vector<Condition> &conds,
                const StatusMeta &meta)
{
    out += indent;
    out += conds.empty() ? "conditions: []\n" : "conditions:\n";
    // deterministic output: the object's own timestamp stands in
    std::string_view when = meta.creation_timestamp;
    if (when.empty()) when = "1970-01-01T00:00:00Z";
    const std::string generation = std::to_string(meta.generation);
    for (const Condition &c : conds) {
        line(out, indent, "  - type: ", c.type);
        out += indent;
        out += "    status: ";
        append_quoted(out, c.status);
        out += '\n';
        line(out, indent, "    reason: ", c.reason);
        line(out, indent, "    message: ", c.message);
        out += indent;
        out += "    observedGeneration: ";
        out += generation;
        out += '\n';
        line(out, indent, "    lastTransitionTime: ", when);
    }
}

// One YAML document per status, appended to `out`.
void render_one(std::string &out, const ObjectStatus &st, const Options &o)
{
    out += "---\n";
    line(out, "", "apiVersion: ", st.api_version);
    line(out, "", "kind: ", st.kind);
    out += "metadata:\n";
    line(out, "  ", "name: ", st.meta.name);
    if (!st.meta.namespace_.empty()) line(out, "  ", "namespace: ", st.meta.namespace_);
    out += "  generation: " + std::to_string(st.meta.generation) + "\n";
    out += "status:\n";
    if (st.kind == "GatewayClass") {
        conditions(out, "  ", st.conditions, st.meta);
        out += "  supportedFeatures:\n";
        for (std::string_view feature : supported_features()) line(out, "    ", "- name: ", feature);
        return;
    }
    if (st.kind == "Gateway" || st.kind == "ListenerSet") {
        if (st.kind == "Gateway") {
            out += st.addresses.empty() ? "  addresses: []\n" : "  addresses:\n";
            for (const ObjectStatus::Address &address : st.addresses) {
                line(out, "    ", "- type: ", address.type);
                line(out, "      ", "value: ", address.value);
            }
            out += "  attachedListenerSets: " + std::to_string(st.attached_listener_sets) + "\n";
        }
        conditions(out, "  ", st.conditions, st.meta);
        out += st.listeners.empty() ? "  listeners: []\n" : "  listeners:\n";
        for (const auto &l : st.listeners) {
            line(out, "    ", "- name: ", l.name);
            out += "      attachedRoutes: " + std::to_string(l.attached_routes) + "\n";
            out += l.supported_kinds.empty() ? "      supportedKinds: []\n" : "      supportedKinds:\n";
            for (const std::string &kind : l.supported_kinds) {
                out += "        - group: gateway.networking.k8s.io\n";
                line(out, "          ", "kind: ", kind);
            }
            conditions(out, "      ", l.conditions, st.meta);
        }
        return;
    }
    out += "  ";
    out += st.refs_key;
    out += st.refs.empty() ? ": []\n" : ":\n";
    for (const auto &ref : st.refs) {
        out += st.refs_key == "parents" ? "    - parentRef:\n" : "    - ancestorRef:\n";
        line(out, "        ", "group: ", ref.group);
        line(out, "        ", "kind: ", ref.kind);
        line(out, "        ", "namespace: ", ref.namespace_);
        line(out, "        ", "name: ", ref.name);
        if (!ref.section_name.empty()) {
            line(out, "        ", "sectionName: ", ref.section_name);
        }
        line(out, "      ", "controllerName: ", o.controller_name);
        conditions(out, "      ", ref.conditions, st.meta);
    }
}

}  // namespace

std::string render_status(const Plan &plan, const Options &o)
{
    std::ostringstream out;
    render_status(out, plan, o);
    return out.str();
}

void render_status(std::ostream &out, const Plan &plan, const Options &o)
{
    // documents are built in one reused buffer and written a few at a
    // time: one stream call per 64 KB rather than per scalar
    std::string buffer;
    buffer.reserve(1 << 17);
    for (const ObjectStatus &st : *plan.statuses) {
        render_one(buffer, st, o);
        if (buffer.size() >= (1 << 16)) {
            out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
            buffer.clear();
        }
    }
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

}  // namespace g2n
