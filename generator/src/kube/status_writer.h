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
    const ApiKind *kind;  // one of the reflectors' kinds, which outlive the writer
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
    // queued one); all of them after wants_everything().
    void offer(std::vector<StatusUpdate> updates);
    // It came to lead since the last offer: it is to write what the replica
    // before it may not have, and holds only digests of what was offered,
    // so the next offer (to be made now) queues every status.
    bool wants_everything() const;

    struct Counts {
        uint64_t written = 0, unchanged = 0, conflicts = 0, failed = 0;
    };
    Counts counts() const;
    // Nothing is queued (for tests and logs).
    bool idle() const;

private:
    void loop();
    // Whether what the store holds of the object is not yet `update`.
    bool needs_writing(const StatusUpdate &update) const;
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
    std::map<std::string, std::string> offered_;  // by object: the SHA-256 of the status last offered
    std::map<std::string, StatusUpdate> queued_;  // to be written
    bool wants_everything_ = false;
    bool leading_ = false;  // as the loop last saw
    bool stop_ = false;
    bool writing_ = false;
    Counts counts_;
    std::thread thread_;
};

}  // namespace g2n::kube
