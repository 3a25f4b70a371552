#include "kube/status_writer.h"

#include <chrono>
#include <iterator>

#include "digest.h"
#include "kube/status.h"

namespace g2n::kube {

namespace {

std::string key_of(const StatusUpdate &u) { return u.kind->group + "/" + u.kind->kind + "/" + u.namespace_ + "/" + u.name; }

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

void StatusWriter::offer(std::vector<StatusUpdate> updates)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const bool everything = wants_everything_;
        wants_everything_ = false;
        std::map<std::string, std::string> offered;
        for (StatusUpdate &u : updates) {
            std::string key = key_of(u);
            std::string digest = sha256(u.ours);
            auto it = offered_.find(key);
            // a replica that does not lead keeps no status whole: come to
            // lead, it is offered every one again
            if (leading_ && (everything || it == offered_.end() || it->second != digest)) queued_[key] = std::move(u);
            offered.emplace(std::move(key), std::move(digest));
        }
        // an object no longer offered (deleted, or no longer ours to speak
        // of) is forgotten, and not written
        offered_ = std::move(offered);
        for (auto it = queued_.begin(); it != queued_.end();) {
            it = offered_.count(it->first) ? std::next(it) : queued_.erase(it);
        }
    }
    wake_.notify_all();
}

bool StatusWriter::wants_everything() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return wants_everything_;
}

StatusWriter::Counts StatusWriter::counts() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
}

bool StatusWriter::idle() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return queued_.empty() && !writing_;
}

bool StatusWriter::needs_writing(const StatusUpdate &u) const
{
    const std::optional<std::string> current =
        objects_->get(*u.kind, (u.kind->namespaced ? u.namespace_ : "") + "/" + u.name);
    if (!current) return true;  // not held (yet): write() reads it
    try {
        return merge_status(u.ours, *current, controller_name_, rfc3339_now()).has_value();
    } catch (const std::exception &) {
        return true;  // write() says what is wrong with it
    }
}

bool StatusWriter::write(ApiClient &client, const StatusUpdate &u)
{
    const std::string what = u.kind->kind + " " + (u.namespace_.empty() ? "" : u.namespace_ + "/") + u.name;
    std::optional<std::string> current = objects_->get(*u.kind, (u.kind->namespaced ? u.namespace_ : "") + "/" + u.name);
    for (int attempt = 0; attempt < 4; attempt++) {
        if (!current) {
            const Response r = client.request("GET", u.kind->object_path(u.namespace_, u.name));
            if (r.status == 404) return true;  // gone: nothing to write to
            if (!r.ok()) {
                log_("status of " + what + ": reading it failed (" + r.describe() + ")");
                return false;
            }
            current = r.body;
        }
        std::optional<std::string> merged = merge_status(u.ours, *current, controller_name_, rfc3339_now());
        if (!merged) {
            std::lock_guard<std::mutex> lock(mutex_);
            counts_.unchanged++;
            return true;
        }
        if (!may_write_()) return false;  // not the leader (any more): kept for when it is
        const Response r = client.request("PUT", u.kind->object_path(u.namespace_, u.name) + "/status", *merged);
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
        if (!leader) queued_.clear();
        was_leader = leading_ = leader;
        if (queued_.empty() || !leader) {
            wake_.wait_for(lock, std::chrono::milliseconds(500));
            continue;
        }
        // a status the object holds already costs no request, and no
        // token: at 10,000 routes a new leader, or a restart, looks at
        // every object, and a change queued behind them must not wait
        const auto first = queued_.begin();
        if (!needs_writing(first->second)) {
            queued_.erase(first);
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
        const std::string key = queued_.begin()->first;
        StatusUpdate u = std::move(queued_.begin()->second);
        queued_.erase(queued_.begin());
        writing_ = true;
        lock.unlock();
        bool done = false;
        try {
            done = write(client, u);
        } catch (const std::exception &e) {
            log_("status of " + u.kind->kind + " " + u.name + ": " + e.what());
            done = true;  // the object's JSON is broken: nothing to merge into
        }
        lock.lock();
        writing_ = false;
        // tried again unless gone or offered anew since (queued then)
        if (!done && !queued_.count(key) && offered_.count(key) && offered_.at(key) == sha256(u.ours)) {
            queued_.emplace(key, std::move(u));
            wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
        }
    }
}

}  // namespace g2n::kube
