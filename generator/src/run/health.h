// gateway2nginx run's own endpoints: the probes (--health-listen:
// /healthz, the loop turns; /readyz, nginx serves the inputs' first
// complete configuration) and /metrics (Prometheus text; --metrics-listen,
// else beside the probes), served by libmicrohttpd on a thread of each's
// own. What they report is counted in RunMetrics by the loop.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace g2n {

// The steady clock in milliseconds: the loop's heartbeat and its readers.
inline int64_t steady_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Why gateway2nginx run reloads nginx: what changed needs one, by the
// part of the skeleton it changed, most telling first (run/digests.h:
// listeners, their certificates, TLSRoute/TCPRoute/UDPRoute servers,
// upstream{} blocks, or else what is left: routes served as locations,
// policies), a push the upstream API refused falls back to one, or the
// search for what a refused reload was refused for tries one.
// kReloadReasons names each in /metrics, in this order.
enum class ReloadReason { Listeners, Certificates, StreamRoutes, Backends, Routes, PushFailed, RefusalSearch };
inline constexpr const char *kReloadReasons[] = {"listeners", "certificates", "stream_routes", "backends",
                                                 "routes",    "push_failed",  "refusal_search"};

struct RunMetrics {
    std::atomic<uint64_t> applies{0}, renders{0}, pushes{0}, push_failures{0}, refused{0}, bad_inputs{0},
        endpoint_updates{0}, trust_updates{0}, route_updates{0};
    // reloads confirmed, and those nginx refused, by ReloadReason
    std::atomic<uint64_t> reloads[std::size(kReloadReasons)] = {}, reload_failures[std::size(kReloadReasons)] = {};
    // the CPU time applying took (the loop's thread), by the way applied:
    // EndpointSlice changes alone (endpoint_updates), with ConfigMaps and
    // Secrets (trust_updates), HTTPRoute and GRPCRoute changes alone
    // (route_updates), or the whole pipeline
    std::atomic<uint64_t> endpoint_cpu_ns{0}, trust_cpu_ns{0}, route_cpu_ns{0}, whole_cpu_ns{0};
    std::atomic<int64_t> heartbeat_ms{0};  // steady clock, the loop's last turn
    std::atomic<bool> ready{false};
    // seconds from a change's first event to nginx serving it
    static constexpr double kBuckets[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
    void observe_latency(double seconds);
    // more lines of the exposition (watch events, status writes, leader)
    std::function<std::string()> more;

    std::string prometheus() const;

private:
    mutable std::mutex latency_mutex_;
    uint64_t latency_counts_[sizeof kBuckets / sizeof kBuckets[0]] = {};
    uint64_t latency_count_ = 0;
    double latency_sum_ = 0;
};

// A main loop's heartbeat in a file (--alive-file of run and supervise),
// for a liveness probe that needs no port: `gateway2nginx alive FILE
// [SECONDS]`. It holds the monotonic clock's milliseconds, which every
// process of the host reads alike, written whole (a new file renamed over
// it) at most once a second; no file, nothing written.
class AliveFile {
public:
    explicit AliveFile(std::string file) : file_(std::move(file)) {}
    // the loop turns at `now_ms` (steady_ms())
    void beat(int64_t now_ms);

private:
    std::string file_;
    int64_t written_ms_ = 0;
};
// 0 when FILE says the loop turned within `seconds`, else 1 (and why, on
// standard error)
int check_alive(const std::string &file, long seconds);

// What a HealthServer answers: a bit set.
inline constexpr unsigned kProbePaths = 1, kMetricsPath = 2;

// Serves RunMetrics on ADDR:PORT until destroyed, to many clients but few
// at a time from one address, none of them idle for long, and each request
// whole within kRequestSeconds of its connection or the answer before:
// one client cannot hold the probes, however it trickles. FLAG names the
// option in errors. Throws std::runtime_error when it cannot listen.
class HealthServer {
public:
    static constexpr unsigned kConnections = 512, kConnectionsPerAddress = 8, kIdleSeconds = 5,
                              kRequestSeconds = 10;

    HealthServer(const char *flag, const std::string &listen, unsigned paths, const RunMetrics *metrics);
    ~HealthServer();
    HealthServer(const HealthServer &) = delete;
    HealthServer &operator=(const HealthServer &) = delete;

    const RunMetrics *metrics() const { return metrics_; }
    unsigned paths() const { return paths_; }

    // libmicrohttpd's notifications: a connection opened or closed, a
    // request answered
    void opened(const void *connection, int fd);
    void closed(const void *connection);
    void answered(const void *connection);

private:
    // Shuts down each connection past its deadline (libmicrohttpd then
    // closes it), until stopping_.
    void sweep();

    const RunMetrics *metrics_;
    unsigned paths_;
    void *daemon_;  // struct MHD_Daemon *
    struct Deadline {
        int fd;
        int64_t due_ms;  // steady_ms()
    };
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::map<const void *, Deadline> deadlines_;  // by struct MHD_Connection *
    std::thread sweeper_;
};

}  // namespace g2n
