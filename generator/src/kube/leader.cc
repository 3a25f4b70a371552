#include "kube/leader.h"
#include "kube/json.h"

#include <rapidjson/document.h>

#include <ctime>
#include <sys/time.h>

namespace g2n::kube {

namespace {

using rapidjson::Document;
using rapidjson::Value;

int64_t steady_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string string_at(const Value &object, const char *a, const char *b)
{
    if (!object.IsObject() || !object.HasMember(a)) return "";
    return std::string(string_member(object[a], b));
}

void set_string(Value &object, const char *key, const std::string &value, Document::AllocatorType &alloc)
{
    Value v(value.c_str(), static_cast<rapidjson::SizeType>(value.size()), alloc);
    if (object.HasMember(key)) object[key] = v;
    else object.AddMember(Value(key, alloc), v, alloc);
}

void set_int(Value &object, const char *key, int64_t value, Document::AllocatorType &alloc)
{
    if (object.HasMember(key)) object[key].SetInt64(value);
    else object.AddMember(Value(key, alloc), Value().SetInt64(value), alloc);
}

}  // namespace

std::string micro_time_now()
{
    struct timeval tv;
    ::gettimeofday(&tv, nullptr);
    struct tm utc;
    gmtime_r(&tv.tv_sec, &utc);
    char stamp[40];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    char micros[16];
    std::snprintf(micros, sizeof micros, ".%06ldZ", static_cast<long>(tv.tv_usec));
    return std::string(stamp) + micros;
}

LeaderElector::LeaderElector(const ApiServer &server, LeaseConfig config, Log log)
    : server_(server), config_(std::move(config)), log_(std::move(log)), thread_([this] { loop(); })
{
}

LeaderElector::~LeaderElector()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

bool LeaderElector::is_leader() const
{
    return leading_ && steady_ms() - renewed_ms_ < config_.renew_deadline.count();
}

void LeaderElector::loop()
{
    ApiClient client(server_);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
        lock.unlock();
        const bool held = try_acquire_or_renew(client);
        lock.lock();
        if (held && !leading_) {
            log_("leading: holds Lease " + config_.namespace_ + "/" + config_.name + " as " + config_.identity);
        }
        if (held) {
            renewed_ms_ = steady_ms();
            leading_ = true;
        } else if (leading_ && !is_leader()) {
            leading_ = false;
            log_("no longer leading: Lease " + config_.namespace_ + "/" + config_.name
                 + " not renewed within the renew deadline; status is not written");
        }
        wake_.wait_for(lock, config_.retry_period, [this] { return stop_; });
    }
    if (leading_) {
        leading_ = false;
        lock.unlock();
        release(client);
    }
}

bool LeaderElector::try_acquire_or_renew(ApiClient &client)
{
    const std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + config_.namespace_ + "/leases/" + config_.name;
    const std::string now = micro_time_now();
    const int64_t duration_s = std::max<int64_t>(1, config_.duration.count() / 1000);
    Response r = client.request("GET", path, "", "application/json", 5000);
    if (r.status == 404) {
        Document lease(rapidjson::kObjectType);
        auto &a = lease.GetAllocator();
        set_string(lease, "apiVersion", "coordination.k8s.io/v1", a);
        set_string(lease, "kind", "Lease", a);
        Value meta(rapidjson::kObjectType);
        set_string(meta, "name", config_.name, a);
        set_string(meta, "namespace", config_.namespace_, a);
        lease.AddMember("metadata", meta, a);
        Value spec(rapidjson::kObjectType);
        set_string(spec, "holderIdentity", config_.identity, a);
        set_int(spec, "leaseDurationSeconds", duration_s, a);
        set_string(spec, "acquireTime", now, a);
        set_string(spec, "renewTime", now, a);
        set_int(spec, "leaseTransitions", 0, a);
        lease.AddMember("spec", spec, a);
        r = client.request("POST", "/apis/coordination.k8s.io/v1/namespaces/" + config_.namespace_ + "/leases",
                           json_text(lease), "application/json", 5000);
        return r.ok();
    }
    if (!r.ok()) {
        if (leading_) log_("renewing the Lease failed (" + r.describe() + ")");
        return false;
    }
    Document lease;
    lease.Parse(r.body.c_str(), r.body.size());
    if (lease.HasParseError() || !lease.IsObject()) return false;
    auto &a = lease.GetAllocator();
    if (!lease.HasMember("spec") || !lease["spec"].IsObject()) lease.AddMember("spec", Value(rapidjson::kObjectType), a);
    Value &spec = lease["spec"];
    const std::string holder = string_at(lease, "spec", "holderIdentity");
    const std::string record = holder + "|" + string_at(lease, "spec", "renewTime");
    const auto seen_now = std::chrono::steady_clock::now();
    if (record != observed_) {
        observed_ = record;
        observed_at_ = seen_now;
    }
    int64_t their_duration_s = duration_s;
    if (spec.HasMember("leaseDurationSeconds") && spec["leaseDurationSeconds"].IsInt64()) {
        their_duration_s = spec["leaseDurationSeconds"].GetInt64();
    }
    const bool ours = holder == config_.identity;
    const bool expired = holder.empty() || seen_now > observed_at_ + std::chrono::seconds(their_duration_s);
    if (!ours && !expired) return false;
    if (!ours) {
        set_string(spec, "acquireTime", now, a);
        int64_t transitions = spec.HasMember("leaseTransitions") && spec["leaseTransitions"].IsInt64()
                                  ? spec["leaseTransitions"].GetInt64()
                                  : 0;
        set_int(spec, "leaseTransitions", transitions + 1, a);
        set_string(spec, "holderIdentity", config_.identity, a);
    }
    set_string(spec, "renewTime", now, a);
    set_int(spec, "leaseDurationSeconds", duration_s, a);
    // the resourceVersion read: a replica that renewed meanwhile wins (409)
    r = client.request("PUT", path, json_text(lease), "application/json", 5000);
    return r.ok();
}

void LeaderElector::release(ApiClient &client)
{
    const std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + config_.namespace_ + "/leases/" + config_.name;
    Response r = client.request("GET", path, "", "application/json", 2000);
    if (!r.ok()) return;
    Document lease;
    lease.Parse(r.body.c_str(), r.body.size());
    if (lease.HasParseError() || string_at(lease, "spec", "holderIdentity") != config_.identity) return;
    auto &a = lease.GetAllocator();
    set_string(lease["spec"], "holderIdentity", "", a);
    set_int(lease["spec"], "leaseDurationSeconds", 1, a);
    set_string(lease["spec"], "renewTime", micro_time_now(), a);
    if (client.request("PUT", path, json_text(lease), "application/json", 2000).ok()) {
        log_("gave up Lease " + config_.namespace_ + "/" + config_.name);
    }
}

}  // namespace g2n::kube
