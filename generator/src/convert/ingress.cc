#include "convert/ingress.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <fstream>
#include <memory>
#include <sstream>

#include "parse/fields.h"
#include "parse/parse.h"
#include "parse/yaml_tree.h"

namespace g2n::convert {

namespace {

IngressBackend parse_backend(const Document &doc, const YamlNode &node, const std::string &path)
{
    doc.only(node, path, {"service", "resource"});
    if (node.get("resource").defined()) {
        doc.fail(node.get("resource"), path + ".resource",
                 "a backend resource is not a Service: ingress-nginx does not serve it, nor does Gateway API");
    }
    const std::string svc_path = path + ".service";
    YamlNode service = doc.child(node, path, "service");
    if (!service.defined()) doc.fail(node, svc_path, "required field is missing");
    doc.only(service, svc_path, {"name", "port"});
    IngressBackend b;
    b.service = doc.string(service, svc_path, "name", true);
    if (!valid_dns1035_label(b.service)) {
        doc.fail(service.get("name"), svc_path + ".name",
                 "a Service name must be an RFC 1035 label (lower case letters, digits, '-', starting with a letter, "
                 "at most 63 characters)");
    }
    YamlNode port = doc.child(service, svc_path, "port");
    if (!port.defined()) doc.fail(service, svc_path + ".port", "required field is missing");
    doc.only(port, svc_path + ".port", {"number", "name"});
    b.port_number = doc.integer(port, svc_path + ".port", "number", 1, 65535);
    b.port_name = doc.string(port, svc_path + ".port", "name");
    if ((b.port_number == 0) == b.port_name.empty()) {
        doc.fail(port, svc_path + ".port", "expected one of number and name");
    }
    if (!b.port_name.empty() && !valid_dns1123_label(b.port_name)) {
        doc.fail(port.get("name"), svc_path + ".port.name", "a port name must be an RFC 1123 label");
    }
    return b;
}

bool has_control(const std::string &s)
{
    return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

Ingress parse_ingress(const Document &doc, const YamlNode &root)
{
    const std::string api_version = doc.string(root, "", "apiVersion", true);
    if (api_version != "networking.k8s.io/v1") {
        doc.fail(root.get("apiVersion"), "apiVersion", "an Ingress is read as networking.k8s.io/v1, not " + api_version);
    }
    Ingress in;
    in.meta = doc.meta(root);
    YamlNode metadata = doc.child(root, "", "metadata");
    for (const auto &[key, value] : doc.string_map(metadata, "metadata", "annotations")) {
        in.annotations.push_back({key, value});
    }
    YamlNode spec = doc.child(root, "", "spec");
    if (!spec.defined()) return in;
    in.class_name = doc.string(spec, "spec", "ingressClassName");
    if (YamlNode d = doc.child(spec, "spec", "defaultBackend"); d.defined()) {
        in.default_backend = parse_backend(doc, d, "spec.defaultBackend");
    }
    int t = 0;
    for (const YamlNode &tls : doc.list(spec, "spec", "tls")) {
        const std::string path = "spec.tls[" + std::to_string(t++) + "]";
        doc.only(tls, path, {"hosts", "secretName"});
        IngressTls out;
        out.secret_name = doc.string(tls, path, "secretName");
        if (!out.secret_name.empty() && !valid_dns1123_subdomain(out.secret_name)) {
            doc.fail(tls.get("secretName"), path + ".secretName", "must be an RFC 1123 subdomain");
        }
        int h = 0;
        for (const YamlNode &host : doc.list(tls, path, "hosts")) {
            const std::string where = path + ".hosts[" + std::to_string(h++) + "]";
            if (!host.is_scalar() || !valid_hostname(host.scalar(), true)) {
                doc.fail(host, where, "expected a hostname (RFC 1123, a wildcard only as the first label)");
            }
            out.hosts.push_back(host.scalar());
        }
        in.tls.push_back(std::move(out));
    }
    int r = 0;
    for (const YamlNode &rule : doc.list(spec, "spec", "rules")) {
        const std::string path = "spec.rules[" + std::to_string(r++) + "]";
        doc.only(rule, path, {"host", "http"});
        IngressRule out;
        out.host = doc.string(rule, path, "host");
        if (!out.host.empty() && !valid_hostname(out.host, true)) {
            doc.fail(rule.get("host"), path + ".host", "expected a hostname (RFC 1123, a wildcard only as the first label)");
        }
        YamlNode http = doc.child(rule, path, "http");
        doc.only(http, path + ".http", {"paths"});
        int p = 0;
        for (const YamlNode &item : doc.list(http, path + ".http", "paths", http.defined())) {
            const std::string where = path + ".http.paths[" + std::to_string(p++) + "]";
            doc.only(item, where, {"path", "pathType", "backend"});
            IngressPath ip;
            ip.path = doc.string(item, where, "path", false, "/");
            ip.path_type = doc.string(item, where, "pathType", true);
            if (ip.path_type != "Prefix" && ip.path_type != "Exact" && ip.path_type != "ImplementationSpecific") {
                doc.fail(item.get("pathType"), where + ".pathType", "expected Prefix, Exact or ImplementationSpecific");
            }
            if (ip.path.empty() || ip.path[0] != '/' || has_control(ip.path) || ip.path.size() > 1024) {
                doc.fail(item.get("path"), where + ".path",
                         "expected an absolute path (beginning with '/', no control character, at most 1024 bytes)");
            }
            YamlNode backend = doc.child(item, where, "backend");
            if (!backend.defined()) doc.fail(item, where + ".backend", "required field is missing");
            ip.backend = parse_backend(doc, backend, where + ".backend");
            out.paths.push_back(std::move(ip));
        }
        in.rules.push_back(std::move(out));
    }
    return in;
}

// The Ingresses of one document (an object, or a List of them)
void ingresses_of(const YamlTree &tree, const std::shared_ptr<const std::string> &file, int line_offset,
                  std::vector<Ingress> *out)
{
    const YamlNode root = tree.root();
    if (!root.defined() || root.is_null() || !root.is_map()) return;  // parse_path says what is wrong
    Document doc(file, line_offset);
    std::vector<YamlNode> objects = {root};
    if (root.get("kind").scalar() == "List") objects = doc.list(root, "", "items");
    for (const YamlNode &object : objects) {
        if (object.is_map() && object.get("kind").scalar() == "Ingress") out->push_back(parse_ingress(doc, object));
    }
}

void sort_ingresses(std::vector<Ingress> *ingresses)
{
    std::sort(ingresses->begin(), ingresses->end(),
              [](const Ingress &a, const Ingress &b) { return a.meta.key() < b.meta.key(); });
    for (size_t i = 1; i < ingresses->size(); i++) {
        if ((*ingresses)[i].meta.key() == (*ingresses)[i - 1].meta.key()) {
            throw InputError((*ingresses)[i].meta.pos.text() + ": Ingress " + (*ingresses)[i].meta.key()
                             + " is given twice");
        }
    }
}

}  // namespace

std::vector<Ingress> read_ingresses(const std::string &text, const std::string &file)
{
    auto name = std::make_shared<const std::string>(file);
    std::vector<Ingress> out;
    std::istringstream in(text);
    std::string document, line;
    int line_no = 0, start = 0;
    auto flush = [&] {
        ingresses_of(YamlTree::parse(document, file, start), name, start, &out);
        document.clear();
    };
    while (std::getline(in, line)) {
        if (is_document_marker(line)) {
            flush();
            start = line_no + 1;
        } else {
            document += line;
            document += '\n';
        }
        line_no++;
    }
    flush();
    return out;
}

ConvertInput read_convert_input(const std::vector<std::string> &paths)
{
    ConvertInput input;
    for (const std::string &path : paths) {
        for (const std::string &file : input_files(path)) {
            std::ifstream in(file == "-" ? "/dev/stdin" : file, std::ios::binary);
            if (!in) throw InputError(file + ":0:0: cannot read: " + std::strerror(errno));
            std::ostringstream text;
            text << in.rdbuf();
            std::istringstream objects(text.str());
            parse_stream(objects, file, &input.objects);  // Services, Secrets...; an Ingress is ignored there
            std::vector<Ingress> read = read_ingresses(text.str(), file);
            std::move(read.begin(), read.end(), std::back_inserter(input.ingresses));
        }
    }
    sort_ingresses(&input.ingresses);
    return input;
}

}  // namespace g2n::convert
