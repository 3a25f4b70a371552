// Leader election with a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection does: the holder renews the Lease every retry period; a
// replica that has not renewed for the renew deadline stops leading at
// once; the others take the Lease over once they have seen it unrenewed
// for the lease duration; the holder gives it up when it stops.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kube/client.h"

namespace g2n::kube {

struct LeaseConfig {
    std::string namespace_ = "default";
    std::string name = "gateway2nginx";
    std::string identity;  // this replica: the pod's name
    std::chrono::milliseconds duration{15000};
    std::chrono::milliseconds renew_deadline{10000};
    std::chrono::milliseconds retry_period{2000};
};

class LeaderElector {
public:
    using Log = std::function<void(const std::string &)>;
    LeaderElector(const ApiServer &server, LeaseConfig config, Log log);
    // Gives the Lease up if held.
    ~LeaderElector();

    // Holds the Lease, renewed within the renew deadline.
    bool is_leader() const;
    const LeaseConfig &config() const { return config_; }

private:
    void loop();
    // One try to acquire or renew; true when this replica holds the Lease.
    bool try_acquire_or_renew(ApiClient &client);
    void release(ApiClient &client);

    ApiServer server_;
    LeaseConfig config_;
    Log log_;
    std::atomic<bool> leading_{false};
    std::atomic<int64_t> renewed_ms_{0};  // steady clock, ms
    // what was last seen of the Lease, and when (the local clock: no
    // agreement on time is assumed)
    std::string observed_;
    std::chrono::steady_clock::time_point observed_at_{};
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

// metav1.MicroTime as the API server writes it.
std::string micro_time_now();

}  // namespace g2n::kube
