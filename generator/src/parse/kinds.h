// The per-kind parsers (private to parse/): every field typed, CRD schema
// and CEL rules re-checked, since no API server stands between the
// manifests and us. parse/objects.cc dispatches by apiVersion and kind.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "parse/fields.h"

namespace g2n {

std::string base64_decode(const Document &doc, const YamlNode &node, const std::string &path,
                          const std::string &text);
void parse_known_object(const Document &doc, const YamlNode &root, const std::string &api_version,
                        const std::string &group, const std::string &kind, Manifests *out);
void parse_namespace(const Document &doc, const YamlNode &root, Manifests *out);
void parse_gateway_class(const Document &doc, const YamlNode &root, Manifests *out);
void parse_gateway(const Document &doc, const YamlNode &root, Manifests *out);
void parse_listener_set(const Document &doc, const YamlNode &root, Manifests *out);
void parse_service(const Document &doc, const YamlNode &root, Manifests *out);
void parse_endpoint_slice(const Document &doc, const YamlNode &root, Manifests *out);
void parse_config_map(const Document &doc, const YamlNode &root, Manifests *out);
void parse_secret(const Document &doc, const YamlNode &root, Manifests *out);
void parse_reference_grant(const Document &doc, const YamlNode &root, Manifests *out);
std::string hash_to_pin(const std::string &type, const std::string &algorithm, const std::string &value,
                        std::string *why);
std::vector<std::pair<std::string, std::string>> split_hash_list(const std::string &list);
void parse_backend_tls_policy(const Document &doc, const YamlNode &root,
                              const std::string &api_version, Manifests *out);

}  // namespace g2n
