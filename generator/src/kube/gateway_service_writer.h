// Keeps each accepted Gateway's Service (kube/gateway_services.h) as the
// last configuration says, in a thread of its own and only while this
// replica may write (it holds the lease): creates the missing, replaces
// the stale, deletes ours no Gateway wants any more, and leaves alone a
// Service of that name it did not make. It reads what the API server holds
// from the reflectors' store, looks again when the Services there change
// or a configuration is offered, and every 30 s in any case.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/gateway_services.h"
#include "kube/reflector.h"

namespace g2n::kube {

class GatewayServiceWriter {
public:
    using Log = std::function<void(const std::string &)>;
    // `services`: the reflectors' Service kind, which outlives the writer.
    GatewayServiceWriter(const ApiServer &server, const ObjectStore *objects, const ApiKind &services,
                         GatewayServiceConfig config, std::function<bool()> may_write, Log log);
    ~GatewayServiceWriter();

    // The Gateways' Services of a configuration nginx runs, all of them.
    void offer(std::vector<GatewayService> services);

    struct Counts {
        uint64_t created = 0, updated = 0, deleted = 0, failed = 0;
    };
    Counts counts() const;

private:
    void loop();
    // One look at every Service wanted and every one of ours held.
    void reconcile(ApiClient &client, const std::vector<GatewayService> &wanted);
    // One write; counted under `count` when it succeeds, as failed when
    // the API server refuses it (not a 409 or 404: the next look decides).
    void act(ApiClient &client, const std::string &method, const std::string &path, const std::string &body,
             const std::string &what, uint64_t Counts::*count);

    ApiServer server_;
    const ObjectStore *objects_;
    const ApiKind &services_;
    GatewayServiceConfig config_;
    std::function<bool()> may_write_;
    Log log_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<GatewayService> wanted_;
    bool offered_ = false;  // none is deleted before the first offer
    uint64_t offers_ = 0;
    std::set<std::string> said_;  // by the last look: not said again while it holds (the loop's own)
    Counts counts_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace g2n::kube
