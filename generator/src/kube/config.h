// Where the API server is and how we prove who we are: from a kubeconfig
// file (its current context) or from inside a pod (the service account).
#pragma once

#include <stdexcept>
#include <string>

namespace g2n::kube {

struct ApiError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ApiServer {
    std::string url;              // https://HOST:PORT, no trailing slash
    std::string ca_pem;           // the CA the server's certificate chains to; empty: the system's
    std::string client_cert_pem;  // a client certificate and its key, or none
    std::string client_key_pem;
    std::string token;            // a bearer token, or
    std::string token_file;       // a file holding one, read again for every request (it rotates)
    std::string origin;           // where this came from, for messages
    std::string user_agent = "gateway2nginx";  // and the replica, for the API server's audit log
};

// The current context of a kubeconfig file: server, certificate-authority
// (-data), client-certificate/-key (-data), token, tokenFile. What kubectl
// can do and we do not (exec and auth-provider plugins, username and
// password, proxies, insecure-skip-tls-verify) is refused by name. Throws
// ApiError naming the file and the field.
ApiServer load_kubeconfig(const std::string &path);

// KUBERNETES_SERVICE_HOST and _PORT, with the token and CA the kubelet
// mounts in DIR (default /var/run/secrets/kubernetes.io/serviceaccount,
// or $GATEWAY2NGINX_SERVICE_ACCOUNT_DIR). Throws ApiError.
ApiServer in_cluster();

// The namespace of the pod (its service account's "namespace" file) when
// `in_cluster`, else "default".
std::string pod_namespace(bool in_cluster);
// Who this replica is to the others: $POD_NAME, else HOSTNAME_PID.
std::string replica_identity();

}  // namespace g2n::kube
