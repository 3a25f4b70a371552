// status.yaml: one document per Gateway, route and BackendTLSPolicy with
// the status Kubernetes would hold. Written by hand rather than through
// yaml-cpp's emitter, which spent 40% of a 10,000-route run deciding how to
// quote each scalar; the rules here are simpler and as safe: a scalar is
// plain only when nothing in it could read as YAML syntax, else it is
// double-quoted with escapes.
#include <cstdio>
#include <sstream>

#include "render.h"

namespace g2n {

namespace {

bool plain_safe(std::string_view s)
{
    if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
    if (std::string("-?:,[]{}#&*!|>'\"%@`").find(s.front()) != std::string::npos) return false;
    if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return false;
    for (unsigned char ch : s) {
        if (ch < 0x20 || ch == 0x7f) return false;
    }
    // words YAML 1.1 readers take for booleans or null
    static const char *const special[] = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"};
    std::string lower;
    for (char ch : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (const char *word : special) {
        if (lower == word) return false;
    }
    return true;
}

std::string quoted(std::string_view s)
{
    std::string out = "\"";
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
    return out + "\"";
}

std::string scalar(std::string_view s) { return plain_safe(s) ? std::string(s) : quoted(s); }

void conditions(std::ostream &out, const std::string &indent, const std::vector<Condition> &conds,
                const StatusMeta &meta)
{
    out << indent << "conditions:" << (conds.empty() ? " []" : "") << "\n";
    // deterministic output: the object's own timestamp stands in
    const std::string when = meta.creation_timestamp.empty() ? "1970-01-01T00:00:00Z" : meta.creation_timestamp;
    for (const Condition &c : conds) {
        out << indent << "  - type: " << scalar(c.type) << "\n";
        out << indent << "    status: " << quoted(c.status) << "\n";
        out << indent << "    reason: " << scalar(c.reason) << "\n";
        out << indent << "    message: " << scalar(c.message) << "\n";
        out << indent << "    observedGeneration: " << meta.generation << "\n";
        out << indent << "    lastTransitionTime: " << scalar(when) << "\n";
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
    for (const ObjectStatus &st : plan.statuses) {
        out << "---\n";
        out << "apiVersion: " << scalar(st.api_version) << "\n";
        out << "kind: " << scalar(st.kind) << "\n";
        out << "metadata:\n";
        out << "  name: " << scalar(st.meta.name) << "\n";
        out << "  namespace: " << scalar(st.meta.namespace_) << "\n";
        out << "  generation: " << st.meta.generation << "\n";
        out << "status:\n";
        if (st.kind == "Gateway") {
            conditions(out, "  ", st.conditions, st.meta);
            out << "  listeners:" << (st.listeners.empty() ? " []" : "") << "\n";
            for (const auto &l : st.listeners) {
                out << "    - name: " << scalar(l.name) << "\n";
                out << "      attachedRoutes: " << l.attached_routes << "\n";
                out << "      supportedKinds:" << (l.supported_kinds.empty() ? " []" : "") << "\n";
                for (const std::string &kind : l.supported_kinds) {
                    out << "        - group: gateway.networking.k8s.io\n";
                    out << "          kind: " << scalar(kind) << "\n";
                }
                conditions(out, "      ", l.conditions, st.meta);
            }
            continue;
        }
        out << "  " << st.refs_key << ":" << (st.refs.empty() ? " []" : "") << "\n";
        for (const auto &ref : st.refs) {
            out << "    - " << (st.refs_key == "parents" ? "parentRef" : "ancestorRef") << ":\n";
            out << "        group: " << scalar(ref.group) << "\n";
            out << "        kind: " << scalar(ref.kind) << "\n";
            out << "        namespace: " << scalar(ref.namespace_) << "\n";
            out << "        name: " << scalar(ref.name) << "\n";
            if (!ref.section_name.empty()) {
                out << "        sectionName: " << scalar(ref.section_name) << "\n";
            }
            out << "      controllerName: " << scalar(o.controller_name) << "\n";
            conditions(out, "      ", ref.conditions, st.meta);
        }
    }
}

}  // namespace g2n
