#include "kube/status_writer.h"

#include <chrono>

#include "kube/status.h"

namespace g2n::kube {

namespace {

std::string key_of(const StatusUpdate &u) { return u.kind.group + "/" + u.kind.kind + "/" + u.namespace_ + "/" + u.name; }

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
        std::map<std::string, StatusUpdate> offered;
        for (StatusUpdate &u : updates) {
            const std::string key = key_of(u);
            auto it = offered_.find(key);
            if (it == offered_.end() || it->second.ours != u.ours) queued_[key] = u;
            offered.emplace(key, std::move(u));
        }
        // an object no longer offered (deleted, or no longer ours to speak
        // of) is forgotten: what is held stays what the last offer holds
        offered_ = std::move(offered);
    }
    wake_.notify_all();
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

bool StatusWriter::write(ApiClient &client, const StatusUpdate &u)
{
    const std::string what = u.kind.kind + " " + (u.namespace_.empty() ? "" : u.namespace_ + "/") + u.name;
    std::optional<std::string> current = objects_->get(u.kind, (u.kind.namespaced ? u.namespace_ : "") + "/" + u.name);
    for (int attempt = 0; attempt < 4; attempt++) {
        if (!current) {
            const Response r = client.request("GET", u.kind.object_path(u.namespace_, u.name));
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
        const Response r = client.request("PUT", u.kind.object_path(u.namespace_, u.name) + "/status", *merged);
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
            // a new leader writes what the old one may not have
            for (const auto &[key, u] : offered_) queued_[key] = u;
        }
        was_leader = leader;
        if (queued_.empty() || !leader) {
            wake_.wait_for(lock, std::chrono::milliseconds(500));
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
        StatusUpdate u = queued_.begin()->second;
        const std::string key = queued_.begin()->first;
        queued_.erase(queued_.begin());
        writing_ = true;
        lock.unlock();
        bool done = false;
        try {
            done = write(client, u);
        } catch (const std::exception &e) {
            log_("status of " + u.kind.kind + " " + u.name + ": " + e.what());
            done = true;  // the object's JSON is broken: nothing to merge into
        }
        lock.lock();
        writing_ = false;
        if (!done && !queued_.count(key)) {
            queued_[key] = std::move(u);
            wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
        }
    }
}

}  // namespace g2n::kube
