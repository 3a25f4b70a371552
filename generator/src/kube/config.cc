#include "kube/config.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace g2n::kube {

namespace {

std::string read_whole(const std::string &path, const std::string &what)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ApiError(what + ": cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// base64 of a kubeconfig *-data field (OpenSSL's decoder)
std::string decode_base64(const std::string &in, const std::string &what)
{
    std::string text;
    for (char c : in) {
        if (c != '\n' && c != '\r' && c != ' ') text.push_back(c);
    }
    if (text.size() % 4 != 0) throw ApiError(what + ": not base64");
    std::string out(text.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                  reinterpret_cast<const unsigned char *>(text.data()), static_cast<int>(text.size()));
    if (n < 0) throw ApiError(what + ": not base64");
    size_t padding = 0;
    while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') padding++;
    out.resize(static_cast<size_t>(n) - padding);
    return out;
}

YAML::Node named(const YAML::Node &list, const std::string &name, const char *field, const std::string &file)
{
    if (list && list.IsSequence()) {
        for (const YAML::Node &entry : list) {
            if (entry["name"] && entry["name"].as<std::string>() == name) return entry;
        }
    }
    throw ApiError("kubeconfig " + file + ": no " + field + " named \"" + name + "\"");
}

}  // namespace

ApiServer load_kubeconfig(const std::string &path)
{
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::Exception &e) {
        throw ApiError("kubeconfig " + path + ": " + e.what());
    }
    const fs::path base = fs::absolute(path).parent_path();
    auto relative = [&](const std::string &file) { return fs::path(file).is_absolute() ? file : (base / file).string(); };
    try {
        const std::string context_name = root["current-context"] ? root["current-context"].as<std::string>() : "";
        if (context_name.empty()) throw ApiError("kubeconfig " + path + ": no current-context");
        const YAML::Node context = named(root["contexts"], context_name, "context", path)["context"];
        const std::string cluster_name = context["cluster"] ? context["cluster"].as<std::string>() : "";
        const std::string user_name = context["user"] ? context["user"].as<std::string>() : "";
        const YAML::Node cluster = named(root["clusters"], cluster_name, "cluster", path)["cluster"];
        ApiServer s;
        s.origin = "kubeconfig " + path + " (context " + context_name + ")";
        const std::string where = "kubeconfig " + path + ": clusters[" + cluster_name + "].cluster.";
        s.url = cluster["server"] ? cluster["server"].as<std::string>() : "";
        if (s.url.rfind("https://", 0) != 0) throw ApiError(where + "server: must be an https:// URL, not \"" + s.url + "\"");
        while (s.url.size() > 8 && s.url.back() == '/') s.url.pop_back();
        for (const char *refused : {"insecure-skip-tls-verify", "proxy-url", "tls-server-name"}) {
            if (cluster[refused] && !(cluster[refused].IsScalar() && cluster[refused].as<std::string>() == "false")) {
                throw ApiError(where + refused + ": not supported");
            }
        }
        if (cluster["certificate-authority-data"]) {
            s.ca_pem = decode_base64(cluster["certificate-authority-data"].as<std::string>(), where + "certificate-authority-data");
        } else if (cluster["certificate-authority"]) {
            s.ca_pem = read_whole(relative(cluster["certificate-authority"].as<std::string>()), where + "certificate-authority");
        }
        if (!user_name.empty()) {
            const YAML::Node user = named(root["users"], user_name, "user", path)["user"];
            const std::string uwhere = "kubeconfig " + path + ": users[" + user_name + "].user.";
            for (const char *refused : {"exec", "auth-provider", "username", "password", "as", "impersonate"}) {
                if (user[refused]) throw ApiError(uwhere + refused + ": not supported (certificates and tokens are)");
            }
            if (user["client-certificate-data"]) {
                s.client_cert_pem = decode_base64(user["client-certificate-data"].as<std::string>(), uwhere + "client-certificate-data");
            } else if (user["client-certificate"]) {
                s.client_cert_pem = read_whole(relative(user["client-certificate"].as<std::string>()), uwhere + "client-certificate");
            }
            if (user["client-key-data"]) {
                s.client_key_pem = decode_base64(user["client-key-data"].as<std::string>(), uwhere + "client-key-data");
            } else if (user["client-key"]) {
                s.client_key_pem = read_whole(relative(user["client-key"].as<std::string>()), uwhere + "client-key");
            }
            if (s.client_cert_pem.empty() != s.client_key_pem.empty()) {
                throw ApiError(uwhere + "client-certificate and client-key go together");
            }
            if (user["token"]) s.token = user["token"].as<std::string>();
            if (user["tokenFile"]) s.token_file = relative(user["tokenFile"].as<std::string>());
        }
        return s;
    } catch (const YAML::Exception &e) {
        throw ApiError("kubeconfig " + path + ": " + e.what());
    }
}

namespace {

std::string service_account_dir()
{
    const char *dir = std::getenv("GATEWAY2NGINX_SERVICE_ACCOUNT_DIR");
    return dir != nullptr && *dir != '\0' ? dir : "/var/run/secrets/kubernetes.io/serviceaccount";
}

}  // namespace

std::string pod_namespace(bool in_cluster)
{
    if (in_cluster) {
        std::ifstream in(service_account_dir() + "/namespace");
        std::string ns;
        if (std::getline(in, ns) && !ns.empty()) return ns;
    }
    return "default";
}

std::string replica_identity()
{
    const char *pod = std::getenv("POD_NAME");
    if (pod != nullptr && *pod != '\0') return pod;
    char host[256] = "";
    ::gethostname(host, sizeof host - 1);
    return std::string(host) + "_" + std::to_string(::getpid());
}

ApiServer in_cluster()
{
    const char *host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char *port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
        throw ApiError("--in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a pod?)");
    }
    const std::string dir = service_account_dir();
    ApiServer s;
    const std::string h = host;
    s.url = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
    s.ca_pem = read_whole(dir + "/ca.crt", "--in-cluster");
    s.token_file = dir + "/token";
    read_whole(s.token_file, "--in-cluster");
    s.origin = "in-cluster " + s.url + " (service account " + dir + ")";
    return s;
}

}  // namespace g2n::kube
