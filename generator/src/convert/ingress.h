// convert, read: Ingress objects (networking.k8s.io/v1) as ingress-nginx
// reads them, and beside them the Services and Secrets they name. Every
// field is checked here, where its FILE:LINE:COL is known; annotations are
// kept as written (their meaning is convert.cc's, each one reported).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model.h"

namespace g2n::convert {

struct IngressBackend {
    std::string service;
    int port_number = 0;    // 0: by name
    std::string port_name;  // "": by number
};

struct IngressPath {
    std::string path = "/";
    std::string path_type;  // Prefix, Exact or ImplementationSpecific
    IngressBackend backend;
};

struct IngressRule {
    std::string host;  // "": every host
    std::vector<IngressPath> paths;
};

struct IngressTls {
    std::vector<std::string> hosts;
    std::string secret_name;
};

struct Annotation {
    std::string key;
    std::string value;
};

struct Ingress {
    ObjectMeta meta;
    std::string class_name;  // spec.ingressClassName
    std::vector<Annotation> annotations;  // sorted by key
    std::vector<IngressTls> tls;
    std::vector<IngressRule> rules;
    std::optional<IngressBackend> default_backend;
};

struct ConvertInput {
    std::vector<Ingress> ingresses;  // sorted by namespace/name
    Manifests objects;               // the Services and Secrets beside them
};

// Every Ingress of the files or directories PATHS, and the objects of the
// kinds gateway2nginx reads. Throws InputError (FILE:LINE:COL: message).
ConvertInput read_convert_input(const std::vector<std::string> &paths);

// Ingress objects of one YAML text (a file's), for tests. Throws InputError.
std::vector<Ingress> read_ingresses(const std::string &text, const std::string &file);

}  // namespace g2n::convert
