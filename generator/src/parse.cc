#include "parse.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "parse_fields.h"

namespace g2n {

std::string SourcePos::text() const
{
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

SourcePos Document::pos(const YAML::Node &node) const
{
    SourcePos p;
    p.file = file_;
    // a missing parent has no position: the document's start stands in
    YAML::Mark mark = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
    p.line = mark.is_null() ? line_offset_ + 1 : line_offset_ + mark.line + 1;
    p.column = mark.is_null() ? 1 : mark.column + 1;
    return p;
}

void Document::fail(const YAML::Node &node, const std::string &path, const std::string &what) const
{
    throw InputError(pos(node).text() + ": " + path + ": " + what);
}

YAML::Node Document::child(const YAML::Node &node, const std::string &path, const char *key) const
{
    if (!node.IsDefined() || node.IsNull()) {
        return YAML::Node(YAML::NodeType::Undefined);
    }
    if (!node.IsMap()) {
        fail(node, path, "expected a mapping");
    }
    return node[key];
}

YAML::Node Document::field(const YAML::Node &node, const std::string &path, const char *key,
                           bool required, std::string *where) const
{
    YAML::Node value = child(node, path, key);
    *where = path.empty() ? key : path + "." + key;
    if (!value.IsDefined() || value.IsNull()) {
        if (required) {
            fail(node, *where, "required field is missing");
        }
        return YAML::Node(YAML::NodeType::Undefined);
    }
    return value;
}

std::string Document::string(const YAML::Node &node, const std::string &path, const char *key,
                             bool required, const std::string &fallback) const
{
    std::string where;
    YAML::Node value = field(node, path, key, required, &where);
    if (!value.IsDefined()) {
        return fallback;
    }
    if (!value.IsScalar()) {
        fail(value, where, "expected a string");
    }
    return value.Scalar();
}

int Document::integer(const YAML::Node &node, const std::string &path, const char *key, int min,
                      int max, bool required, int fallback) const
{
    std::string where;
    YAML::Node value = field(node, path, key, required, &where);
    if (!value.IsDefined()) {
        return fallback;
    }
    if (!value.IsScalar()) {
        fail(value, where, "expected an integer");
    }
    const std::string &text = value.Scalar();
    char *end = nullptr;
    errno = 0;
    long n = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || n < min || n > max) {
        fail(value, where,
             "expected an integer from " + std::to_string(min) + " to " + std::to_string(max)
                 + ", got \"" + text + "\"");
    }
    return static_cast<int>(n);
}

std::vector<YAML::Node> Document::list(const YAML::Node &node, const std::string &path,
                                       const char *key, bool required) const
{
    std::string where;
    YAML::Node value = field(node, path, key, required, &where);
    std::vector<YAML::Node> out;
    if (!value.IsDefined()) {
        return out;
    }
    if (!value.IsSequence()) {
        fail(value, where, "expected a list");
    }
    for (const YAML::Node &item : value) {
        out.push_back(item);
    }
    return out;
}

std::map<std::string, std::string> Document::string_map(const YAML::Node &node,
                                                        const std::string &path,
                                                        const char *key) const
{
    std::string where;
    YAML::Node value = field(node, path, key, false, &where);
    std::map<std::string, std::string> out;
    if (!value.IsDefined()) {
        return out;
    }
    if (!value.IsMap()) {
        fail(value, where, "expected a mapping of strings");
    }
    for (const auto &entry : value) {
        if (!entry.second.IsScalar()) {
            fail(entry.second, where + "." + entry.first.Scalar(), "expected a string");
        }
        out[entry.first.Scalar()] = entry.second.Scalar();
    }
    return out;
}

std::vector<std::string> Document::unknown(const YAML::Node &node, const std::string &,
                                           std::initializer_list<const char *> known) const
{
    std::vector<std::string> out;
    if (!node.IsMap()) {
        return out;
    }
    for (const auto &entry : node) {
        const std::string &key = entry.first.Scalar();
        if (std::none_of(known.begin(), known.end(),
                         [&](const char *k) { return key == k; })) {
            out.push_back(key);
        }
    }
    return out;
}

void Document::only(const YAML::Node &node, const std::string &path,
                    std::initializer_list<const char *> known) const
{
    for (const std::string &key : unknown(node, path, known)) {
        fail(node[key], path.empty() ? key : path + "." + key, "unknown field");
    }
}

ObjectMeta Document::meta(const YAML::Node &root, bool namespaced) const
{
    ObjectMeta m;
    YAML::Node metadata = child(root, "", "metadata");
    if (!metadata.IsDefined()) {
        fail(root, "metadata", "required field is missing");
    }
    m.pos = pos(root);
    m.name = string(metadata, "metadata", "name", true);
    m.namespace_ = namespaced ? string(metadata, "metadata", "namespace", false, "default") : "";
    m.generation = integer(metadata, "metadata", "generation", 0, INT_MAX, false, 1);
    m.creation_timestamp = string(metadata, "metadata", "creationTimestamp");
    m.labels = string_map(metadata, "metadata", "labels");
    return m;
}

namespace {

void parse_root(const Document &doc, const YAML::Node &root, Manifests *out);

bool is_document_marker(const std::string &line)
{
    return (line.compare(0, 3, "---") == 0 || line.compare(0, 3, "...") == 0)
           && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

void parse_document(const std::string &text, const std::string &file, int line_offset,
                    Manifests *out)
{
    Document doc(file, line_offset);
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception &e) {
        SourcePos p{file, line_offset + e.mark.line + 1, e.mark.column + 1};
        throw InputError(p.text() + ": invalid YAML: " + e.msg);
    }
    try {
        parse_root(doc, root, out);
    } catch (const YAML::Exception &e) {
        // a shape the field readers did not foresee: still bad input, not a crash
        SourcePos p{file, line_offset + e.mark.line + 1, e.mark.column + 1};
        throw InputError(p.text() + ": " + e.msg);
    }
}

void parse_root(const Document &doc, const YAML::Node &root, Manifests *out)
{
    if (!root.IsDefined() || root.IsNull()) {
        return;  // an empty document
    }
    if (!root.IsMap()) {
        doc.fail(root, "", "expected an object (a mapping with apiVersion and kind)");
    }

    if (doc.string(root, "", "kind", true) == "List") {
        for (const YAML::Node &item : doc.list(root, "", "items")) {
            parse_object(doc, item, out);
        }
        return;
    }
    parse_object(doc, root, out);
}

}  // namespace

void parse_stream(std::istream &in, const std::string &file, Manifests *out)
{
    // One document at a time: the input as a whole is never held as a tree.
    std::string text, line;
    int line_no = 0, start = 0;
    while (std::getline(in, line)) {
        if (is_document_marker(line)) {
            parse_document(text, file, start, out);
            text.clear();
            start = line_no + 1;
        } else {
            text += line;
            text += '\n';
        }
        line_no++;
    }
    parse_document(text, file, start, out);
}

void parse_path(const std::string &path, Manifests *out)
{
    namespace fs = std::filesystem;

    if (path == "-") {
        parse_stream(std::cin, "<stdin>", out);
        return;
    }

    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        std::vector<std::string> files;
        for (auto it = fs::recursive_directory_iterator(path, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            std::string ext = it->path().extension().string();
            if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
                files.push_back(it->path().string());
            }
        }
        if (ec) {
            throw InputError(path + ":0:0: cannot read directory: " + ec.message());
        }
        std::sort(files.begin(), files.end());
        for (const std::string &file : files) {
            parse_path(file, out);
        }
        return;
    }

    std::ifstream in(path);
    if (!in) {
        throw InputError(path + ":0:0: cannot open: " + std::strerror(errno));
    }
    parse_stream(in, path, out);
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

// Gateway API PreciseHostname / Hostname (a wildcard only as the first label).
bool valid_hostname(const std::string &s, bool allow_wildcard)
{
    if (s.size() > 2 && s[0] == '*' && s[1] == '.') {
        return allow_wildcard && valid_dns1123_subdomain(s.substr(2));
    }
    return valid_dns1123_subdomain(s);
}

}  // namespace g2n
