#include "run/health.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace g2n {

namespace {

MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method, const char *,
                  const char *, size_t *, void **)
{
    const auto *server = static_cast<const HealthServer *>(cls);
    const RunMetrics *metrics = server->metrics();
    const bool probes = server->paths() & kProbePaths, metrics_path = server->paths() & kMetricsPath;
    unsigned int code = 200;
    std::string body;
    const char *type = "text/plain; charset=utf-8";
    if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
        code = 405;
        body = "GET only\n";
    } else if (probes && std::strcmp(url, "/healthz") == 0) {
        // the loop turns at least once a second; 30 s without is stuck
        const bool alive = steady_ms() - metrics->heartbeat_ms < 30000;
        code = alive ? 200 : 503;
        body = alive ? "ok\n" : "the main loop has not turned for 30 s\n";
    } else if (probes && std::strcmp(url, "/readyz") == 0) {
        code = metrics->ready ? 200 : 503;
        body = metrics->ready ? "ok\n" : "nginx does not serve a complete configuration yet\n";
    } else if (metrics_path && std::strcmp(url, "/metrics") == 0) {
        body = metrics->prometheus();
        type = "text/plain; version=0.0.4; charset=utf-8";
    } else {
        code = 404;
        body = std::string(probes ? "/healthz, /readyz" : "") + (probes && metrics_path ? ", " : "")
               + (metrics_path ? "/metrics" : "") + "\n";
    }
    struct MHD_Response *response =
        MHD_create_response_from_buffer(body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(response, "Content-Type", type);
    const MHD_Result r = MHD_queue_response(connection, code, response);
    MHD_destroy_response(response);
    return r;
}

void on_connection(void *cls, struct MHD_Connection *connection, void **, enum MHD_ConnectionNotificationCode code)
{
    auto *server = static_cast<HealthServer *>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (info != nullptr) server->opened(connection, info->connect_fd);
    } else {
        server->closed(connection);  // before libmicrohttpd closes its socket
    }
}

void on_request_done(void *cls, struct MHD_Connection *connection, void **, enum MHD_RequestTerminationCode)
{
    static_cast<HealthServer *>(cls)->answered(connection);
}

}  // namespace

void AliveFile::beat(int64_t now_ms)
{
    if (file_.empty() || now_ms - written_ms_ < 1000) return;
    written_ms_ = now_ms;
    const std::string text = std::to_string(now_ms) + "\n";
    const std::string temporary = file_ + ".new";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;  // the probe says so, in time
    const bool whole = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (whole) ::rename(temporary.c_str(), file_.c_str());
}

int check_alive(const std::string &file, long seconds)
{
    std::ifstream in(file);
    long long beat = 0;
    if (!(in >> beat)) {
        std::cerr << "gateway2nginx alive: " << file << " holds no heartbeat\n";
        return 1;
    }
    const int64_t age = steady_ms() - beat;
    if (age > seconds * 1000) {
        std::cerr << "gateway2nginx alive: the main loop has not turned for " << age / 1000 << " s\n";
        return 1;
    }
    return 0;
}

void HealthServer::opened(const void *connection, int fd)
{
    std::lock_guard<std::mutex> lock(mutex_);
    deadlines_[connection] = {fd, steady_ms() + kRequestSeconds * 1000};
}

void HealthServer::closed(const void *connection)
{
    std::lock_guard<std::mutex> lock(mutex_);
    deadlines_.erase(connection);
}

void HealthServer::answered(const void *connection)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = deadlines_.find(connection);
    if (it != deadlines_.end()) it->second.due_ms = steady_ms() + kRequestSeconds * 1000;
}

void HealthServer::sweep()
{
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; })) {
        const int64_t now = steady_ms();
        for (auto &[connection, deadline] : deadlines_) {
            if (deadline.due_ms > now) continue;
            // its socket stays libmicrohttpd's to close: closed() comes first
            ::shutdown(deadline.fd, SHUT_RDWR);
            deadline.due_ms = INT64_MAX;
        }
    }
}

void RunMetrics::observe_latency(double seconds)
{
    std::lock_guard<std::mutex> lock(latency_mutex_);
    for (size_t i = 0; i < sizeof kBuckets / sizeof kBuckets[0]; i++) {
        if (seconds <= kBuckets[i]) latency_counts_[i]++;
    }
    latency_count_++;
    latency_sum_ += seconds;
}

std::string RunMetrics::prometheus() const
{
    std::ostringstream out;
    auto counter = [&](const char *name, const char *help, uint64_t value) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << value << "\n";
    };
    counter("gateway2nginx_applies_total", "Changes applied.", applies);
    counter("gateway2nginx_renders_total", "Configurations rendered and checked for a reload.", renders);
    auto by_reason = [&](const char *name, const char *help, const std::atomic<uint64_t> *values) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n";
        for (size_t i = 0; i < std::size(kReloadReasons); i++) {
            out << name << "{reason=\"" << kReloadReasons[i] << "\"} " << values[i] << "\n";
        }
    };
    by_reason("gateway2nginx_reloads_total", "nginx reloads confirmed, by why they were needed.", reloads);
    by_reason("gateway2nginx_reload_failures_total", "nginx reloads that failed, by why they were tried.",
              reload_failures);
    counter("gateway2nginx_endpoint_updates_total",
            "EndpointSlice changes applied by recomputing only the Services they name.", endpoint_updates);
    counter("gateway2nginx_trust_updates_total",
            "ConfigMap, Secret and ClusterTrustBundle changes applied by recomputing only the trust of the policies reading them.",
            trust_updates);
    counter("gateway2nginx_route_updates_total",
            "HTTPRoute, GRPCRoute, Service and ReferenceGrant changes applied by resolving only the routes they touch.",
            route_updates);
    counter("gateway2nginx_pushes_total", "Changes pushed to the upstream API.", pushes);
    counter("gateway2nginx_push_failures_total", "Pushes that failed (a reload followed).", push_failures);
    counter("gateway2nginx_refused_total", "Configurations nginx -t refused.", refused);
    counter("gateway2nginx_bad_inputs_total", "Reads of the inputs that failed as a whole.", bad_inputs);
    out << "# HELP gateway2nginx_apply_cpu_seconds_total CPU time of applying changes, by the way applied.\n"
           "# TYPE gateway2nginx_apply_cpu_seconds_total counter\n"
        << "gateway2nginx_apply_cpu_seconds_total{way=\"endpoints\"} " << endpoint_cpu_ns / 1e9 << "\n"
        << "gateway2nginx_apply_cpu_seconds_total{way=\"trust\"} " << trust_cpu_ns / 1e9 << "\n"
        << "gateway2nginx_apply_cpu_seconds_total{way=\"routes\"} " << route_cpu_ns / 1e9 << "\n"
        << "gateway2nginx_apply_cpu_seconds_total{way=\"whole\"} " << whole_cpu_ns / 1e9 << "\n";
    out << "# HELP gateway2nginx_ready Whether nginx serves a complete configuration.\n"
           "# TYPE gateway2nginx_ready gauge\ngateway2nginx_ready "
        << (ready ? 1 : 0) << "\n";
    {
        std::lock_guard<std::mutex> lock(latency_mutex_);
        const char *name = "gateway2nginx_change_to_traffic_seconds";
        out << "# HELP " << name << " From a change's first event to nginx serving it.\n# TYPE " << name
            << " histogram\n";
        for (size_t i = 0; i < sizeof kBuckets / sizeof kBuckets[0]; i++) {
            out << name << "_bucket{le=\"" << kBuckets[i] << "\"} " << latency_counts_[i] << "\n";
        }
        out << name << "_bucket{le=\"+Inf\"} " << latency_count_ << "\n"
            << name << "_sum " << latency_sum_ << "\n"
            << name << "_count " << latency_count_ << "\n";
    }
    if (more) out << more();
    return out.str();
}

HealthServer::HealthServer(const char *flag, const std::string &listen, unsigned paths, const RunMetrics *metrics)
    : metrics_(metrics), paths_(paths)
{
    const size_t colon = listen.rfind(':');
    std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
    const std::string port_text = colon == std::string::npos ? listen : listen.substr(colon + 1);
    char *end = nullptr;
    const long port = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || port < 1 || port > 65535) {
        throw std::runtime_error(std::string(flag) + " " + listen + ": not ADDRESS:PORT");
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    sockaddr_in6 v6{};
    sockaddr_in v4{};
    const sockaddr *address = nullptr;
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (host.empty() || host == "0.0.0.0" || inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(static_cast<uint16_t>(port));
        if (host.empty()) v4.sin_addr.s_addr = htonl(INADDR_ANY);
        address = reinterpret_cast<const sockaddr *>(&v4);
    } else if (inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(static_cast<uint16_t>(port));
        address = reinterpret_cast<const sockaddr *>(&v6);
        flags |= MHD_USE_IPv6;
    } else {
        throw std::runtime_error(std::string(flag) + " " + listen + ": not an IP address");
    }
    daemon_ = MHD_start_daemon(flags, static_cast<uint16_t>(port), nullptr, nullptr, &answer, this,
                               MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_CONNECTION_LIMIT, kConnections,
                               MHD_OPTION_PER_IP_CONNECTION_LIMIT, kConnectionsPerAddress,
                               MHD_OPTION_CONNECTION_TIMEOUT, kIdleSeconds,
                               MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(8192),
                               MHD_OPTION_NOTIFY_CONNECTION, &on_connection, this,
                               MHD_OPTION_NOTIFY_COMPLETED, &on_request_done, this, MHD_OPTION_END);
    if (daemon_ == nullptr) throw std::runtime_error(std::string(flag) + " " + listen + ": cannot listen there");
    sweeper_ = std::thread([this] { sweep(); });
}

HealthServer::~HealthServer()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    sweeper_.join();
    MHD_stop_daemon(static_cast<struct MHD_Daemon *>(daemon_));
}

}  // namespace g2n
