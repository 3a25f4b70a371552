#include "kube/status_writer.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <set>

#include "digest.h"
#include "kube/status.h"

namespace g2n::kube {

namespace {

// (with its uid: an object deleted and made again, the same status
// offered for it, is written again)
std::string key_of(const StatusOffer::Object &o)
{
    return o.kind->group + "/" + o.kind->kind + "/" + std::string(o.namespace_) + "/" + std::string(o.name) + "/"
           + std::string(o.uid);
}

std::string name_key(const StatusOffer::Object &o)
{
    return (o.kind->namespaced ? std::string(o.namespace_) : std::string()) + "/" + std::string(o.name);
}

}  // namespace

StatusWriter::StatusWriter(const ApiServer &server, const ObjectStore *objects, std::string controller_name,
                           std::function<bool()> may_write, Log log, double qps, int burst)
    : server_(server), objects_(objects), controller_name_(std::move(controller_name)),
      may_write_(std::move(may_write)), log_(std::move(log)), qps_(qps), burst_(burst), thread_([this] { loop(); })
{
}

StatusWriter::~StatusWriter()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void StatusWriter::offer(std::shared_ptr<const StatusOffer> offer, const std::vector<int64_t> *from)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const bool everything = wants_everything_;
        wants_everything_ = false;
        if (from != nullptr && !everything && offer_ != nullptr && from->size() == offer->size()
            && by_index_.size() == offer_->size()) {
            offer_in_place(std::move(offer), *from);
        } else {
            offer_whole(std::move(offer), everything);
        }
    }
    wake_.notify_all();
}

// Every status of `offer` digested, and matched by its object with what
// was offered before
void StatusWriter::offer_whole(std::shared_ptr<const StatusOffer> offer, bool everything)
{
    // what is still to be written stays queued, at its new place
    for (uint32_t i : queue_) {
        if (by_index_.size() > i && by_index_[i] != nullptr) by_index_[i]->second.queued = true;
    }
    queue_.clear();
    queued_.assign(offer->size(), false);
    by_index_.assign(offer->size(), nullptr);
    // updated in place, not built beside the last (20,000 entries at
    // 10,000 routes)
    offer_generation_++;
    // new and changed statuses first, then those still queued and,
    // come to lead, every other: a new route's status is not held back
    // behind thousands re-written
    std::vector<uint32_t> backlog;
    offered_count_ = 0;
    for (size_t i = 0; i < offer->size(); i++) {
        const StatusOffer::Object object = offer->object(i);
        if (object.kind == nullptr) continue;
        offered_count_++;
        std::string digest = sha256(offer->ours(i));
        counts_.digested++;
        auto [it, added] = offered_.try_emplace(key_of(object));
        // a replica that does not lead keeps no status whole: come to
        // lead, it is offered every one again
        const bool changed = added || it->second.digest != digest;
        if (leading_ && (changed || everything || it->second.queued)) {
            if (changed) {
                queue_.push_back(static_cast<uint32_t>(i));
            } else {
                backlog.push_back(static_cast<uint32_t>(i));
            }
            queued_[i] = true;
        }
        it->second = Offered{std::move(digest), static_cast<uint32_t>(i), offer_generation_, false};
        by_index_[i] = &*it;
    }
    queue_.insert(queue_.end(), backlog.begin(), backlog.end());
    // an object no longer offered (deleted, or no longer ours to speak
    // of) is forgotten, and not written
    for (auto it = offered_.begin(); it != offered_.end();) {
        it = it->second.generation == offer_generation_ ? std::next(it) : offered_.erase(it);
    }
    offer_ = std::move(offer);
}

// `offer` is the last one but for its positions whose `from` is -1: the
// others are the statuses at those positions of the last, unchanged. Only
// the new ones are digested, and looked up by their object.
void StatusWriter::offer_in_place(std::shared_ptr<const StatusOffer> offer, const std::vector<int64_t> &from)
{
    std::vector<OfferedEntry *> now(offer->size(), nullptr);
    std::vector<int64_t> to(by_index_.size(), -1);  // the last offer's positions, where they are now
    for (size_t i = 0; i < from.size(); i++) {
        if (from[i] < 0) continue;
        const size_t was = static_cast<size_t>(from[i]);
        now[i] = by_index_.at(was);
        to[was] = static_cast<int64_t>(i);
        if (now[i] != nullptr) now[i]->second.index = static_cast<uint32_t>(i);
    }
    // (one still to be written, offered anew though unchanged, stays queued)
    std::set<const OfferedEntry *> renewed, was_queued;
    for (uint32_t i : queue_) was_queued.insert(by_index_[i]);
    std::vector<uint32_t> first;
    for (size_t i = 0; i < from.size(); i++) {
        if (from[i] >= 0) continue;
        const StatusOffer::Object object = offer->object(i);
        if (object.kind == nullptr) continue;
        std::string digest = sha256(offer->ours(i));
        counts_.digested++;
        auto [it, added] = offered_.try_emplace(key_of(object));
        if (leading_ && (added || it->second.digest != digest || was_queued.count(&*it))) {
            first.push_back(static_cast<uint32_t>(i));
        }
        it->second = Offered{std::move(digest), static_cast<uint32_t>(i), offer_generation_, false};
        now[i] = &*it;
        renewed.insert(&*it);
    }
    // what the last offer had and this one has not, forgotten
    for (size_t was = 0; was < by_index_.size(); was++) {
        OfferedEntry *entry = by_index_[was];
        if (to[was] >= 0 || entry == nullptr || renewed.count(entry)) continue;
        offered_.erase(entry->first);
    }
    // new and changed first, then what was queued, at its new place
    std::deque<uint32_t> queue(first.begin(), first.end());
    for (uint32_t was : queue_) {
        if (was < to.size() && to[was] >= 0) queue.push_back(static_cast<uint32_t>(to[was]));
    }
    queue_ = std::move(queue);
    queued_.assign(offer->size(), false);
    for (uint32_t i : queue_) queued_[i] = true;
    by_index_ = std::move(now);
    offered_count_ = static_cast<size_t>(std::count_if(by_index_.begin(), by_index_.end(), [](const OfferedEntry *e) { return e != nullptr; }));
    offer_ = std::move(offer);
}

void StatusWriter::withdraw()
{
    std::lock_guard<std::mutex> lock(mutex_);
    if (!queue_.empty()) return;  // still being written: not held back while a configuration is made
    queued_.clear();
    by_index_.clear();
    offer_.reset();
}

bool StatusWriter::wants_everything() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return wants_everything_;
}

StatusWriter::Counts StatusWriter::counts() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    Counts counts = counts_;
    counts.queued = queue_.size() + (writing_ ? 1 : 0);
    counts.offered = offered_count_;
    return counts;
}

bool StatusWriter::idle() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.empty() && !writing_;
}

bool StatusWriter::needs_writing(const StatusOffer::Object &object, const std::string &ours) const
{
    const std::optional<std::string> current = objects_->get(*object.kind, name_key(object));
    if (!current) return true;  // not held (yet): write() reads it
    try {
        return merge_status(ours, *current, controller_name_, rfc3339_now()).has_value();
    } catch (const std::exception &) {
        return true;  // write() says what is wrong with it
    }
}

bool StatusWriter::write(ApiClient &client, const StatusOffer::Object &object, const std::string &ours)
{
    const std::string ns(object.namespace_), name(object.name);
    const std::string what = object.kind->kind + " " + (ns.empty() ? "" : ns + "/") + name;
    std::optional<std::string> current = objects_->get(*object.kind, name_key(object));
    for (int attempt = 0; attempt < 4; attempt++) {
        if (!current) {
            const Response r = client.request("GET", object.kind->object_path(ns, name));
            if (r.status == 404) return true;  // gone: nothing to write to
            if (!r.ok()) {
                log_("status of " + what + ": reading it failed (" + r.describe() + ")");
                return false;
            }
            current = r.body;
        }
        std::optional<std::string> merged = merge_status(ours, *current, controller_name_, rfc3339_now());
        if (!merged) {
            std::lock_guard<std::mutex> lock(mutex_);
            counts_.unchanged++;
            return true;
        }
        if (!may_write_()) return false;  // not the leader (any more): kept for when it is
        const Response r = client.request("PUT", object.kind->object_path(ns, name) + "/status", *merged);
        if (r.ok()) {
            std::lock_guard<std::mutex> lock(mutex_);
            counts_.written++;
            return true;
        }
        if (r.status == 404) return true;
        if (r.status != 409) {
            log_("status of " + what + ": writing it failed (" + r.describe() + ")");
            std::lock_guard<std::mutex> lock(mutex_);
            counts_.failed++;
            return false;
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            counts_.conflicts++;
        }
        current.reset();  // 409: read it again, merge again
    }
    log_("status of " + what + ": still in conflict after 4 tries; later");
    return false;
}

void StatusWriter::loop()
{
    using clock = std::chrono::steady_clock;
    double tokens = burst_;
    clock::time_point refilled = clock::now();
    bool was_leader = false;
    ApiClient client(server_);  // one connection, kept
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
        const bool leader = may_write_();
        if (leader && !was_leader) {
            // a new leader writes what the old one may not have: every
            // status, offered again
            wants_everything_ = true;
        }
        if (!leader) {
            queue_.clear();
            queued_.assign(queued_.size(), false);
        }
        was_leader = leading_ = leader;
        if (queue_.empty() || !leader) {
            wake_.wait_for(lock, std::chrono::milliseconds(500));
            continue;
        }
        // a status the object holds already costs no request, and no
        // token: at 10,000 routes a new leader, or a restart, looks at
        // every object, and a change queued behind them must not wait
        const uint32_t index = queue_.front();
        const std::shared_ptr<const StatusOffer> offer = offer_;  // the object's views stay valid
        const StatusOffer::Object object = offer->object(index);
        const std::string ours = offer->ours(index);
        if (!needs_writing(object, ours)) {
            queue_.pop_front();
            queued_[index] = false;
            counts_.unchanged++;
            continue;
        }
        const auto now = clock::now();
        tokens = std::min<double>(burst_, tokens + qps_ * std::chrono::duration<double>(now - refilled).count());
        refilled = now;
        if (tokens < 1) {
            wake_.wait_for(lock, std::chrono::milliseconds(static_cast<long>(1000 * (1 - tokens) / qps_) + 1));
            continue;
        }
        tokens -= 1;
        queue_.pop_front();
        queued_[index] = false;
        writing_ = true;
        lock.unlock();
        bool done = false;
        try {
            done = write(client, object, ours);
        } catch (const std::exception &e) {
            log_("status of " + object.kind->kind + " " + std::string(object.name) + ": " + e.what());
            done = true;  // the object's JSON is broken: nothing to merge into
        }
        lock.lock();
        writing_ = false;
        // tried again unless gone or offered anew since (queued then)
        if (!done) {
            auto it = offered_.find(key_of(object));
            if (offer_ == nullptr) {
                // withdrawn meanwhile: the next offer queues it again
                if (it != offered_.end() && it->second.digest == sha256(ours)) it->second.queued = true;
            } else if (it != offered_.end() && it->second.digest == sha256(ours) && !queued_[it->second.index]) {
                queue_.push_back(it->second.index);
                queued_[it->second.index] = true;
                wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
            }
        }
    }
}

}  // namespace g2n::kube
