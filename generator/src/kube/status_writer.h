// Writes our status back to the objects, in a thread of its own: only
// while this replica may (it holds the lease), the latest status of each
// object, never one the object already has, at most `qps` writes a second
// (bursts of `burst`), a conflict (409) read again and retried.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/reflector.h"

namespace g2n::kube {

struct StatusUpdate {
    ApiKind kind;
    std::string namespace_, name;
    std::string ours;  // our_status_json
};

class StatusWriter {
public:
    using Log = std::function<void(const std::string &)>;
    StatusWriter(const ApiServer &server, const ObjectStore *objects, std::string controller_name,
                 std::function<bool()> may_write, Log log, double qps = 20, int burst = 40);
    ~StatusWriter();

    // The statuses of a configuration nginx runs, all of them. Those that
    // differ from the ones offered before are queued (a newer one replaces a
    // queued one).
    void offer(std::vector<StatusUpdate> updates);

    struct Counts {
        uint64_t written = 0, unchanged = 0, conflicts = 0, failed = 0;
    };
    Counts counts() const;
    // Nothing is queued (for tests and logs).
    bool idle() const;

private:
    void loop();
    // Writes one; false when it should be tried again later.
    bool write(ApiClient &client, const StatusUpdate &update);

    ApiServer server_;
    const ObjectStore *objects_;
    std::string controller_name_;
    std::function<bool()> may_write_;
    Log log_;
    double qps_;
    int burst_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::map<std::string, StatusUpdate> offered_;  // by object: the last offered
    std::map<std::string, StatusUpdate> queued_;
    bool stop_ = false;
    bool writing_ = false;
    Counts counts_;
    std::thread thread_;
};

}  // namespace g2n::kube
