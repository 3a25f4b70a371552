// The per-kind parsers (private to parse/, named in kind_table.h):
// every field typed, CRD schema and CEL rules re-checked, since no API
// server stands between the manifests and us. parse/objects.cc dispatches
// by the table, once the apiVersion is one the kind is read as.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "parse/fields.h"

namespace g2n {

std::string base64_decode(const Document &doc, const YamlNode &node, const std::string &path,
                          const std::string &text);
void parse_namespace(const Document &doc, const YamlNode &root, Manifests *out);
void parse_gateway_class(const Document &doc, const YamlNode &root, Manifests *out);
void parse_gateway(const Document &doc, const YamlNode &root, Manifests *out);
void parse_listener_set(const Document &doc, const YamlNode &root, Manifests *out);
void parse_service(const Document &doc, const YamlNode &root, Manifests *out);
void parse_endpoint_slice(const Document &doc, const YamlNode &root, Manifests *out);
void parse_config_map(const Document &doc, const YamlNode &root, Manifests *out);
void parse_secret(const Document &doc, const YamlNode &root, Manifests *out);
void parse_cluster_trust_bundle(const Document &doc, const YamlNode &root, Manifests *out);
void parse_reference_grant(const Document &doc, const YamlNode &root, Manifests *out);
std::string hash_to_pin(const std::string &type, const std::string &algorithm, const std::string &value,
                        std::string *why);
std::vector<std::pair<std::string, std::string>> split_hash_list(const std::string &list);
void parse_backend_tls_policy(const Document &doc, const YamlNode &root, Manifests *out);
void parse_http_route(const Document &doc, const YamlNode &root, Manifests *out);
void parse_grpc_route(const Document &doc, const YamlNode &root, Manifests *out);
void parse_tls_route(const Document &doc, const YamlNode &root, Manifests *out);
void parse_tcp_route(const Document &doc, const YamlNode &root, Manifests *out);
void parse_udp_route(const Document &doc, const YamlNode &root, Manifests *out);

}  // namespace g2n
