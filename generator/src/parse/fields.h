// Typed access to the fields of one YAML document, with errors that name
// FILE:LINE:COL and the field path. Used by the per-kind parsers.
#pragma once

#include <string>
#include <vector>


#include "model.h"
#include "parse/parse.h"
#include "parse/yaml_tree.h"

namespace g2n {

class Document {
public:
    Document(std::shared_ptr<const std::string> file, int line_offset) : file_(std::move(file)), line_offset_(line_offset) {}

    SourcePos pos(const YamlNode &node) const;
    [[noreturn]] void fail(const YamlNode &node, const std::string &path,
                           const std::string &what) const;

    // A mapping child, or an undefined node when absent. Fails when `node`
    // is not a mapping.
    YamlNode child(const YamlNode &node, const std::string &path, const char *key) const;

    // The value of `key` under `node`, undefined when absent or null (a
    // failure when required); *where gets the field's path.
    YamlNode field(const YamlNode &node, const std::string &path, const char *key,
                     bool required, std::string *where) const;
    std::string string(const YamlNode &node, const std::string &path, const char *key,
                       bool required = false, const std::string &fallback = "") const;
    int integer(const YamlNode &node, const std::string &path, const char *key, int min,
                int max, bool required = false, int fallback = 0) const;
    // VALUE itself (a list's item), at WHERE
    int integer(const YamlNode &value, const std::string &where, int min, int max) const;
    // A sequence child (empty when absent); fails when it is not a sequence.
    std::vector<YamlNode> list(const YamlNode &node, const std::string &path,
                                 const char *key, bool required = false) const;
    std::map<std::string, std::string> string_map(const YamlNode &node,
                                                  const std::string &path,
                                                  const char *key) const;
    // Fails on any key of `node` not in `known`.
    void only(const YamlNode &node, const std::string &path,
              std::initializer_list<const char *> known) const;
    // The keys of `node` not in `known`, for kinds that report them as a
    // condition instead.
    std::vector<std::string> unknown(const YamlNode &node, const std::string &path,
                                     std::initializer_list<const char *> known) const;

    // Its labels are checked, and kept only where LABELS asks for them
    ObjectMeta meta(const YamlNode &root, bool namespaced = true,
                    std::map<std::string, std::string> *labels = nullptr) const;

    const std::string &file() const { return *file_; }

private:
    std::shared_ptr<const std::string> file_;
    int line_offset_;
};

inline const char *const kGatewayGroup = "gateway.networking.k8s.io";

// RFC 1123 subdomain, and Gateway API Hostname / PreciseHostname (a
// wildcard only as the first label).
bool valid_dns1123_subdomain(const std::string &s);
// RFC 1123 label (namespaces, port names) and RFC 1035 label (Service names).
bool valid_dns1123_label(const std::string &s);
bool valid_dns1035_label(const std::string &s);
// A label value as the API server checks it, and the rule in words.
bool valid_label_value(const std::string &s);
inline constexpr const char *kLabelValueRule =
    "a label value has at most 63 letters, digits, '-', '_' and '.', beginning and ending alphanumeric";
// A qualified name ([DNS subdomain "/"] name, as label keys and a Service
// port's appProtocol are checked).
bool valid_qualified_name(const std::string &s);
// An IPv4 or IPv6 address in its textual form.
bool valid_ip_address(const std::string &s);
// metadata.name as the API server checks it for `kind`.
bool valid_object_name(const std::string &kind, const std::string &name);
bool valid_hostname(const std::string &s, bool allow_wildcard);

// One object of any kind (parse/objects.cc), by its kind's parser
// (parse/kinds.h, listed in kind_table.h).
void parse_object(const Document &doc, const YamlNode &root, Manifests *out);

}  // namespace g2n
