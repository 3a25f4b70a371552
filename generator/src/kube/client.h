// Requests to the API server over HTTPS, with libcurl: one connection kept
// per client (one client per thread), the server verified against the
// configured CA, a client certificate or a bearer token (its file read
// again for every request: projected tokens rotate).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kube/config.h"

namespace g2n::kube {

struct Response {
    long status = 0;     // the HTTP status; 0 when the request failed before one came
    std::string body;
    std::string error;   // why no status came (connection refused, TLS, timeout)

    bool ok() const { return status >= 200 && status < 300; }
    // "HTTP 409: message of the Status body", or the transport error
    std::string describe() const;
};

class ApiClient {
public:
    explicit ApiClient(ApiServer server);
    ~ApiClient();
    ApiClient(const ApiClient &) = delete;
    ApiClient &operator=(const ApiClient &) = delete;

    // METHOD PATH (with its query) and a body of `content_type`; at most
    // `timeout_ms` in all, and given up within a second once `stop` is set.
    Response request(const std::string &method, const std::string &path, const std::string &body = "",
                     const std::string &content_type = "application/json", long timeout_ms = 30000,
                     const std::atomic<bool> *stop = nullptr);

    // GET PATH, its body handed to `on_data` as it arrives (a watch), until
    // the server ends it, `on_data` returns false or `stop` is set. The
    // returned body is empty unless the status was not 2xx.
    Response stream(const std::string &path, const std::function<bool(std::string_view)> &on_data,
                    const std::atomic<bool> &stop);

    const ApiServer &server() const { return server_; }

private:
    ApiServer server_;
    void *curl_;  // CURL *
};

}  // namespace g2n::kube
