#include "kube/client.h"

#include <curl/curl.h>
#include <rapidjson/document.h>

#include <fstream>
#include <mutex>
#include <sstream>

namespace g2n::kube {

namespace {

std::once_flag g_curl_init;

struct Transfer {
    std::string body;
    const std::function<bool(std::string_view)> *on_data = nullptr;
    const std::atomic<bool> *stop = nullptr;
    long status = 0;
    CURL *curl = nullptr;
};

size_t on_write(char *data, size_t size, size_t n, void *user)
{
    auto *t = static_cast<Transfer *>(user);
    const size_t len = size * n;
    if (t->on_data != nullptr) {
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
        if (t->status >= 200 && t->status < 300) return (*t->on_data)(std::string_view(data, len)) ? len : 0;
    }
    if (t->body.size() < (1u << 30)) t->body.append(data, len);
    return len;
}

int on_progress(void *user, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
{
    auto *t = static_cast<Transfer *>(user);
    return t->stop != nullptr && t->stop->load() ? 1 : 0;
}

curl_blob blob_of(const std::string &pem)
{
    return curl_blob{const_cast<char *>(pem.data()), pem.size(), CURL_BLOB_COPY};
}

std::string token_of(const ApiServer &s)
{
    if (s.token_file.empty()) return s.token;
    std::ifstream in(s.token_file);
    std::string token;
    std::getline(in, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
    return token;
}

}  // namespace

std::string Response::describe() const
{
    if (status == 0) return error.empty() ? "no answer" : error;
    std::string what = "HTTP " + std::to_string(status);
    rapidjson::Document doc;
    doc.Parse(body.c_str(), body.size());
    if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("message") && doc["message"].IsString()) {
        what += ": " + std::string(doc["message"].GetString(), doc["message"].GetStringLength());
    }
    return what;
}

ApiClient::ApiClient(ApiServer server) : server_(std::move(server))
{
    std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
    if (curl_ == nullptr) throw ApiError("libcurl: cannot make a handle");
}

ApiClient::~ApiClient() { curl_easy_cleanup(static_cast<CURL *>(curl_)); }

namespace {

Response perform(CURL *curl, const ApiServer &server, const std::string &method, const std::string &path,
                 const std::string &body, const std::string &content_type, long timeout_ms,
                 const std::function<bool(std::string_view)> *on_data, const std::atomic<bool> *stop)
{
    curl_easy_reset(curl);
    Transfer t;
    t.on_data = on_data;
    t.stop = stop;
    t.curl = curl;
    const std::string url = server.url + path;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_blob ca = blob_of(server.ca_pem), cert = blob_of(server.client_cert_pem), key = blob_of(server.client_key_pem);
    if (!server.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
    if (!server.client_cert_pem.empty()) {
        curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
    }
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (method != "GET") {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    if (stop != nullptr) {
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    }
    curl_easy_setopt(curl, CURLOPT_USERAGENT, server.user_agent.c_str());
    struct curl_slist *headers = nullptr;
    headers = curl_slist_append(headers, "Accept: application/json");
    if (method != "GET") headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
    const std::string token = token_of(server);
    const std::string authorization = "Authorization: Bearer " + token;
    if (!token.empty()) headers = curl_slist_append(headers, authorization.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    Response r;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
    r.body = std::move(t.body);
    // a stream its reader ended, or `stop` ended, ended well
    const bool ended_by_us = (rc == CURLE_ABORTED_BY_CALLBACK && on_data != nullptr)
                             || (rc == CURLE_WRITE_ERROR && on_data != nullptr);
    if (rc != CURLE_OK && !ended_by_us) {
        r.error = server.url + ": " + (error[0] != '\0' ? std::string(error) : std::string(curl_easy_strerror(rc)));
        r.status = 0;
    }
    return r;
}

}  // namespace

Response ApiClient::request(const std::string &method, const std::string &path, const std::string &body,
                            const std::string &content_type, long timeout_ms, const std::atomic<bool> *stop)
{
    return perform(static_cast<CURL *>(curl_), server_, method, path, body, content_type, timeout_ms, nullptr, stop);
}

Response ApiClient::stream(const std::string &path, const std::function<bool(std::string_view)> &on_data,
                           const std::atomic<bool> &stop)
{
    return perform(static_cast<CURL *>(curl_), server_, "GET", path, "", "", 0L, &on_data, &stop);
}

}  // namespace g2n::kube
