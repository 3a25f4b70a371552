// Shared by the route parsers (private to parse/).
#pragma once

#include <string>
#include <vector>

#include "parse/fields.h"

namespace g2n {

// what a path may hold (the CRD's pattern), as an error message
extern const char *const kPathCharacters;
// the characters a header name may have to be an nginx variable's name
extern const char *const kVariableSafe;

bool crd_path_characters(const std::string &path);
BackendRef parse_backend_ref(const Document &doc, const YamlNode &node, const std::string &path,
                             bool weighted = true);
RouteFilter parse_filter(const Document &doc, const YamlNode &node, const std::string &path,
                         std::string *unsupported);
void check_filters(const Document &doc, const YamlNode &node, const std::string &path,
                   const std::vector<RouteFilter> &filters, const std::vector<RouteMatch> &matches);

}  // namespace g2n
