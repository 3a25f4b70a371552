#include "kube/gateway_service_writer.h"

#include <chrono>

namespace g2n::kube {

GatewayServiceWriter::GatewayServiceWriter(const ApiServer &server, const ObjectStore *objects,
                                           const ApiKind &services, GatewayServiceConfig config,
                                           std::function<bool()> may_write, Log log)
    : server_(server), objects_(objects), services_(services), config_(std::move(config)),
      may_write_(std::move(may_write)), log_(std::move(log)), thread_([this] { loop(); })
{
}

GatewayServiceWriter::~GatewayServiceWriter()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void GatewayServiceWriter::offer(std::vector<GatewayService> services)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        wanted_ = std::move(services);
        offered_ = true;
        offers_++;
    }
    wake_.notify_all();
}

GatewayServiceWriter::Counts GatewayServiceWriter::counts() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
}

void GatewayServiceWriter::act(ApiClient &client, const std::string &method, const std::string &path,
                               const std::string &body, const std::string &what, uint64_t Counts::*count)
{
    // a hung API server holds the next look (and a stop) for 10 s at most
    const Response r = client.request(method, path, body, "application/json", 10000);
    std::lock_guard<std::mutex> lock(mutex_);
    if (r.ok()) {
        counts_.*count += 1;
        log_(what);
        return;
    }
    // 409: the store is behind what the API server holds, 404: it is gone;
    // either way the next look, after the watch has told, decides again
    if (r.status != 409 && r.status != 404) {
        counts_.failed++;
        log_(what + " failed: " + r.describe());
    }
}

void GatewayServiceWriter::reconcile(ApiClient &client, const std::vector<GatewayService> &wanted)
{
    std::set<std::string> names;  // "namespace/name"
    std::set<std::string> sayings;  // what is said once, while it holds
    for (const GatewayService &svc : wanted) {
        const std::string name = gateway_service_name(svc);
        const std::string key = svc.namespace_ + "/" + name;
        const std::string what = "Service " + key + " of Gateway " + svc.namespace_ + "/" + svc.gateway;
        if (!names.insert(key).second) {
            // "a" of class "b-c" and "a-b" of class "c": the first has it
            sayings.insert(what + ": the name of another Gateway's Service; it has none");
            continue;
        }
        const std::optional<std::string> held = objects_->get(services_, key);
        if (!held) {
            act(client, "POST", "/api/v1/namespaces/" + svc.namespace_ + "/services",
                new_gateway_service(svc, config_), what + " created", &Counts::created);
            continue;
        }
        std::string update;
        HeldService state;
        try {
            state = compare_gateway_service(*held, svc, config_, &update);
        } catch (const ApiError &) {
            state = HeldService::Foreign;
        }
        if (state == HeldService::Foreign) {
            sayings.insert(what + ": a Service of that name that gateway2nginx did not make is there; left alone");
        } else if (state == HeldService::Stale) {
            act(client, "PUT", services_.object_path(svc.namespace_, name), update, what + " updated",
                &Counts::updated);
        }
    }
    for (const std::string &saying : sayings) {
        if (!said_.count(saying)) log_(saying);
    }
    said_ = std::move(sayings);
    for (const auto &[key, json] : objects_->of_kind(services_)) {
        if (names.count(key) || !is_gateway_service(*json, config_.controller_name)) continue;
        const size_t slash = key.find('/');
        act(client, "DELETE", services_.object_path(key.substr(0, slash), key.substr(slash + 1)), delete_only(*json),
            "Service " + key + " deleted: no Gateway of ours wants it", &Counts::deleted);
    }
}

void GatewayServiceWriter::loop()
{
    using clock = std::chrono::steady_clock;
    ApiClient client(server_);  // one connection, kept
    uint64_t offers_seen = 0, writes_seen = 0;
    clock::time_point looked{};
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
        wake_.wait_for(lock, std::chrono::seconds(1));
        if (stop_) break;
        const uint64_t writes = objects_->writes(services_);
        const bool due = offers_ != offers_seen || writes != writes_seen || clock::now() - looked > std::chrono::seconds(30);
        if (!offered_ || !due || !may_write_()) continue;
        offers_seen = offers_;
        writes_seen = writes;
        looked = clock::now();
        const std::vector<GatewayService> wanted = wanted_;
        lock.unlock();
        reconcile(client, wanted);
        lock.lock();
        // at most once a second, however often a tenant edits the
        // Service in their namespace
        wake_.wait_until(lock, looked + std::chrono::seconds(1), [this] { return stop_; });
    }
}

}  // namespace g2n::kube
