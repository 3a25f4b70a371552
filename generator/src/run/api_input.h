// gateway2nginx run --kubeconfig/--in-cluster: its input from the
// Kubernetes API (kube/'s reflectors, one per kind) and its status written
// back by the replica the Lease elects.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "kube/kube.h"
#include "parse/parse.h"
#include "plan.h"
#include "resolve/resolve.h"
#include "run/input.h"

namespace g2n {

class ApiInput : public Input {
public:
    using Log = std::function<void(const std::string &)>;
    // Reads the configuration (kube::ApiError when it is bad), finds the
    // kinds the cluster serves (again, with backoff, while the API server
    // does not answer; null once `stop` is set), then lists and watches,
    // and takes part in the election.
    static std::unique_ptr<ApiInput> start(const Args &args, const volatile sig_atomic_t &stop, Log log);

    int fd() const override { return objects_.change_fd(); }
    Readable on_readable() override;
    FirstApply first_apply() const override { return FirstApply::OnceSynced; }
    // Every kind listed once; said when they are, and every 10 s while not.
    bool synced() override;
    void read(Manifests *out, unsigned jobs, DocumentCache *cache) override;
    // The objects changed since the last call (kube::ObjectStore).
    std::optional<ChangeSet> take_changes() override;

    // What `plan` says of each object, offered to the status writer; a
    // Gateway is not Programmed before a running nginx serves it.
    void offer_status(const Plan &plan, const Options &options, bool nginx_runs,
                      const std::vector<int64_t> *from = nullptr) override;
    // The last statuses are not held beside the configuration made from
    // the start (their writes wait for its offer).
    void withdraw_status() override { writer_->withdraw(); }
    bool wants_status() const override { return writer_->wants_everything(); }
    // The ConfigMaps and Secrets a resolve looked up are the ones held
    // whole; those held as a digest until now are fetched (GET).
    bool want(const ResolveReads &reads) override;
    // The API client's part.
    std::string metrics() const override;

private:
    ApiInput() = default;
    std::vector<kube::ApiKind> kinds_;
    kube::ObjectStore objects_;
    kube::ApiServer server_;
    Log log_;
    std::unique_ptr<kube::ApiClient> client_;  // want()'s fetches, on the caller's thread
    std::atomic<uint64_t> fetches_{0};
    std::unique_ptr<kube::Reflectors> reflectors_;
    std::unique_ptr<kube::LeaderElector> elector_;
    std::unique_ptr<kube::StatusWriter> writer_;
    std::unique_ptr<kube::GatewayServiceWriter> gateway_services_;  // --gateway-service-external-name
    bool synced_ = false;
    bool offered_runs_ = false;  // the nginx_runs of the last offer
    std::chrono::steady_clock::time_point say_waiting_ = std::chrono::steady_clock::now() + std::chrono::seconds(10);
};

}  // namespace g2n
