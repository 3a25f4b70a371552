// Writes our status back to the objects, in a thread of its own: only
// while this replica may (it holds the lease), the latest status of each
// object, never one the object already has, at most `qps` writes a second
// (bursts of `burst`), a conflict (409) read again and retried.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <deque>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kube/client.h"
#include "kube/reflector.h"

namespace g2n::kube {

// The statuses of one configuration, offered all at once: each object's
// name, and our part of its status (our_status_json) built only when it is
// compared or written, not held for the thousands waiting their turn.
// Immutable: the writer reads it on its own thread until the next offer.
class StatusOffer {
public:
    struct Object {
        const ApiKind *kind;  // one of the reflectors' kinds, which outlive the writer; null: not written
        std::string_view namespace_, name;
        std::string_view uid;  // one made again under its name is another object
    };
    virtual ~StatusOffer() = default;
    virtual size_t size() const = 0;
    virtual Object object(size_t i) const = 0;
    virtual std::string ours(size_t i) const = 0;
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
    // `from`, when given: for each position of `offer`, the position of
    // the same status in the last offer, unchanged, or -1 (new, or
    // changed): only those are digested, and looked up by their object.
    void offer(std::shared_ptr<const StatusOffer> offer, const std::vector<int64_t> *from = nullptr);
    // A configuration is being made (at 10,000 routes the last one's
    // statuses are 11 MB beside it): those offered last are let go until
    // the next offer when every one is written. Ones still queued are kept
    // and written meanwhile: a tenant changing routes again and again
    // holds back no one's status.
    void withdraw();
    // It came to lead since the last offer: it is to write what the replica
    // before it may not have, and holds only digests of what was offered,
    // so the next offer (to be made now) queues every status.
    bool wants_everything() const;

    struct Counts {
        uint64_t written = 0, unchanged = 0, conflicts = 0, failed = 0;
        size_t queued = 0;   // statuses still to be looked at, and written where they differ
        size_t offered = 0;  // the statuses of the last offer
        uint64_t digested = 0;  // statuses made into JSON and digested when offered
    };
    Counts counts() const;
    // Nothing is queued (for tests and logs).
    bool idle() const;

private:
    void loop();
    void offer_whole(std::shared_ptr<const StatusOffer> offer, bool everything);
    void offer_in_place(std::shared_ptr<const StatusOffer> offer, const std::vector<int64_t> &from);
    // Whether what the store holds of the object is not yet `ours`.
    bool needs_writing(const StatusOffer::Object &object, const std::string &ours) const;
    // Writes one; false when it should be tried again later.
    bool write(ApiClient &client, const StatusOffer::Object &object, const std::string &ours);

    ApiServer server_;
    const ObjectStore *objects_;
    std::string controller_name_;
    std::function<bool()> may_write_;
    Log log_;
    double qps_;
    int burst_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::shared_ptr<const StatusOffer> offer_;  // the last
    struct Offered {
        std::string digest;  // SHA-256 of our status
        uint32_t index;      // in offer_
        uint64_t generation;  // of the offer that last named it
        bool queued;          // still to be written when the next offer came
    };
    uint64_t offer_generation_ = 0;
    size_t offered_count_ = 0;  // objects of the last offer whose status is written
    std::unordered_map<std::string, Offered> offered_;  // by object
    using OfferedEntry = std::pair<const std::string, Offered>;
    std::vector<OfferedEntry *> by_index_;  // offered_'s entries by position in offer_ (null: not written)
    // to be written, first come first served (one that failed goes to the
    // back, behind those that may not): indexes in offer_
    std::deque<uint32_t> queue_;
    std::vector<bool> queued_;  // by index in offer_: in queue_
    bool wants_everything_ = false;
    bool leading_ = false;  // as the loop last saw
    bool stop_ = false;
    bool writing_ = false;
    Counts counts_;
    std::thread thread_;
};

}  // namespace g2n::kube
