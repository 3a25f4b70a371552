#include "apply/nginx_control.h"

#include <curl/curl.h>
#include <microhttpd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "apply/reload.h"
#include "kube/json.h"

namespace g2n {

namespace {

std::string outcome_json(const ReloadOutcome &o)
{
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    for (const auto &[key, value] : {std::pair{"failed", &o.failed}, {"done", &o.done}, {"refusal", &o.refusal}}) {
        w.Key(key);
        w.String(value->data(), static_cast<rapidjson::SizeType>(value->size()));
    }
    w.EndObject();
    return std::string(buffer.GetString(), buffer.GetSize());
}

MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method, const char *,
                  const char *, size_t *upload_data_size, void **request)
{
    // the headers first; a request is answered once it is whole (what a
    // body holds means nothing here, and is read past)
    static int seen;
    if (*request == nullptr) {
        *request = &seen;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    unsigned int code = 200;
    std::string body;
    if (std::strcmp(url, "/reload") != 0) {
        code = 404;
        body = "POST /reload\n";
    } else if (std::strcmp(method, "POST") != 0) {
        code = 405;
        body = "POST only\n";
    } else {
        body = outcome_json(static_cast<const NginxControlServer *>(cls)->reload());
    }
    struct MHD_Response *response = MHD_create_response_from_buffer(body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(response, "Content-Type", code == 200 ? "application/json" : "text/plain; charset=utf-8");
    const MHD_Result r = MHD_queue_response(connection, code, response);
    MHD_destroy_response(response);
    return r;
}

size_t on_reply_data(char *data, size_t size, size_t count, void *user)
{
    auto *reply = static_cast<std::string *>(user);
    if (reply->size() + size * count > 1 << 20) return 0;  // an answer is a few lines
    reply->append(data, size * count);
    return size * count;
}

}  // namespace

NginxControlServer::NginxControlServer(const std::string &path, std::function<ReloadOutcome()> reload)
    : path_(path), reload_(std::move(reload))
{
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof address.sun_path) {
        throw std::runtime_error("--control " + path + ": a socket's path is 1 to " +
                                 std::to_string(sizeof address.sun_path - 1) + " bytes");
    }
    std::memcpy(address.sun_path, path.data(), path.size());
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) throw std::runtime_error("--control " + path + ": something else is there");
        ::unlink(path.c_str());  // a socket left by a supervisor before this one
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    // made 0660, never wider even for a moment
    const mode_t was = ::umask(0117);
    const int bound = ::bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address);
    const int bind_errno = errno;
    ::umask(was);
    if (bound != 0 || ::listen(fd, 16) != 0) {
        const std::string why = std::strerror(bound != 0 ? bind_errno : errno);
        ::close(fd);
        throw std::runtime_error("--control " + path + ": cannot listen there: " + why);
    }
    daemon_ = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, nullptr, nullptr, &answer, this,
                               MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 16u,
                               MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                               static_cast<size_t>(8192), MHD_OPTION_END);
    if (daemon_ == nullptr) {
        ::close(fd);
        ::unlink(path.c_str());
        throw std::runtime_error("--control " + path + ": libmicrohttpd cannot serve it");
    }
}

NginxControlServer::~NginxControlServer()
{
    MHD_stop_daemon(static_cast<struct MHD_Daemon *>(daemon_));
    ::unlink(path_.c_str());
}

int NginxControlServer::fd() const
{
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(static_cast<struct MHD_Daemon *>(daemon_), MHD_DAEMON_INFO_EPOLL_FD);
    return info != nullptr ? info->epoll_fd : -1;
}

void NginxControlServer::run() { MHD_run(static_cast<struct MHD_Daemon *>(daemon_)); }

ReloadOutcome reload_through(const std::string &path)
{
    std::unique_ptr<CURL, void (*)(CURL *)> curl(curl_easy_init(), curl_easy_cleanup);
    if (curl == nullptr) return ReloadOutcome::failure("libcurl: cannot make a handle");
    std::string reply;
    curl_easy_setopt(curl.get(), CURLOPT_UNIX_SOCKET_PATH, path.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_URL, "http://supervisor/reload");
    curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    // nginx loading its configuration says nothing until it is done
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, kLongestReload + 30L);
    curl_easy_setopt(curl.get(), CURLOPT_POST, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_reply_data);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &reply);
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(curl.get());
    const std::string where = "nginx's supervisor at " + path;
    if (rc == CURLE_COULDNT_CONNECT) {
        return ReloadOutcome::failure("nothing answers at " + path + " (nginx's supervisor is not there yet)", true);
    }
    if (rc != CURLE_OK) {
        return ReloadOutcome::failure(where + ": " + (error[0] != '\0' ? error : curl_easy_strerror(rc)));
    }
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    rapidjson::Document answer;
    answer.Parse(reply.data(), reply.size());
    if (status != 200 || answer.HasParseError() || !answer.IsObject()) {
        return ReloadOutcome::failure(where + " answered HTTP " + std::to_string(status)
                                      + ", not what a reload comes to: " + reply);
    }
    ReloadOutcome outcome;
    outcome.failed = kube::string_member(answer, "failed");
    outcome.done = kube::string_member(answer, "done");
    outcome.refusal = kube::string_member(answer, "refusal");
    if (outcome.failed.empty() && outcome.done.empty()) outcome.failed = where + " said neither that nginx took it nor why not";
    return outcome;
}

}  // namespace g2n
