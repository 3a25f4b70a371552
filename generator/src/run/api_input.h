// gateway2nginx run --kubeconfig/--in-cluster: its input from the
// Kubernetes API (kube/'s reflectors, one per kind) and its status written
// back by the replica the Lease elects.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "kube/kube.h"
#include "parse/parse.h"
#include "plan.h"
#include "resolve/resolve.h"

namespace g2n {

class ApiInput {
public:
    using Log = std::function<void(const std::string &)>;
    // Reads the configuration (kube::ApiError when it is bad), finds the
    // kinds the cluster serves (again, with backoff, while the API server
    // does not answer; null once `stop` is set), then lists and watches,
    // and takes part in the election.
    static std::unique_ptr<ApiInput> start(const Args &args, const volatile sig_atomic_t &stop, Log log);

    int change_fd() const { return objects_.change_fd(); }
    bool synced() const { return reflectors_->synced(); }
    std::string unsynced() const { return reflectors_->unsynced(); }
    size_t size() const { return objects_.size(); }
    void read(Manifests *out, unsigned jobs, DocumentCache *cache) const;
    // The ConfigMaps and Secrets a resolve looked up are the ones held
    // whole; those held as a digest until now are fetched (GET). True when
    // one was: the input changed, read it again.
    bool want(const ResolveReads &reads);
    // The objects changed since the last call (kube::ObjectStore).
    std::vector<kube::ObjectChange> take_changes() { return objects_.take_changes(); }
    std::optional<std::string> json_of(const kube::ObjectChange &change) const { return objects_.json_of(change); }

    // What `plan` says of each object, offered to the status writer; a
    // Gateway is not Programmed before a running nginx serves it.
    void offer_status(const Plan &plan, const Options &options, bool nginx_runs);
    // A configuration is being made from the start: the last one's statuses
    // are not held beside it (their writes wait for its offer).
    void withdraw_status() { writer_->withdraw(); }
    // The status writer, come to lead, wants every status offered again.
    bool wants_status() const { return writer_->wants_everything(); }
    // The API client's part of /metrics.
    std::string metrics() const;

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
};

}  // namespace g2n
