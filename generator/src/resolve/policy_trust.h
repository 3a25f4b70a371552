// What ConfigMap, Secret and ClusterTrustBundle changes do to a Plan
// resolve made. One that
// resolve never looked up changes nothing; one that only BackendTLSPolicies
// read changes their trust (CA bundle, pins, their own client
// certificate's key pair), recomputed as resolve computes it
// (resolve_ca_refs, upstream_policy, tls_secret_files) with nothing else
// read again. gateway2nginx run pushes such a change to the upstream API in time
// that does not grow with the routes; whatever would change more than the
// trust the API replaces (a listener's certificate, a policy's conditions)
// is left to resolve.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "resolve/kept_objects.h"
#include "resolve/resolve.h"
#include "resolve/trust_objects.h"

namespace g2n {

// The ResolveReads keys of the ConfigMaps, Secrets and ClusterTrustBundles
// a policy refers to
std::vector<std::string> policy_read_keys(const BackendTLSPolicy &p);
// The Services ("ns/name") a policy targets
std::set<std::string> policy_target_services(const BackendTLSPolicy &p);

class PolicyTrust {
public:
    // `plan` is what resolve made of `manifests` with `options`, having
    // looked up `reads`; update() is given that plan (or what update() or
    // ServiceEndpoints made of it) and nothing else.
    // It views manifests' policies and the objects they read: they must
    // stay, or be followed (follow(), copy_objects()).
    PolicyTrust(const Manifests &manifests, const Plan &plan, const Options &options, const ResolveReads &reads);

    // manifests' objects are where `moved` says now (given back to the
    // document cache); false when one went nowhere: it is not usable.
    bool follow(const MovedObjects &moved)
    {
        return policies_.follow(moved) && objects_.follow(moved);
    }
    // manifests' objects are about to go: it copies those it views.
    void copy_objects()
    {
        policies_.copy_viewed();
        objects_.copy_viewed();
    }

    // False when the manifests cannot be followed by key (two ConfigMaps or
    // Secrets of one name, as files may hold): resolve it is.
    bool usable() const { return usable_; }

    // The object of `kind` (holds_trust()) called `key` ("namespace/name",
    // "/name" cluster-wide) is now the one `now` holds, or is gone (null).
    void object_changed(const std::string &kind, const std::string &key, const Manifests *now);
    // The BackendTLSPolicy `key` is now `policy`, reading the objects it
    // read (RouteChanges applied the change): its trust is recomputed with it
    void policy_changed(const std::string &key, const BackendTLSPolicy &policy)
    {
        if (policies_.find(key) != nullptr) policies_.copy(key, policy);
    }

    struct Update {
        // the change needs resolve (a Gateway reads the object, a policy's
        // conditions or replaceability would change); *plan is left as it was
        bool needs_resolve = false;
        std::vector<const UpstreamPolicy *> changed;  // in *plan: whose trust differs
    };
    // The trust of every policy reading an object changed since the last
    // update(), recomputed in *plan.
    Update update(Plan *plan);

private:
    void changed(const std::string &key);

    bool usable_ = true;
    std::unordered_map<std::string, unsigned> readers_;  // ResolveReads::readers
    // the trust-replaceable policies reading objects, by key
    KeptObjects<BackendTLSPolicy> policies_;
    // by object key ("ConfigMap ns/name"): the policies reading it, and
    // whether one that is not trust-replaceable does too
    std::unordered_map<std::string, std::vector<std::string>> read_by_;
    std::set<std::string> read_by_others_;
    // what those objects hold now, by object key
    KeptTrustObjects objects_;
    std::set<std::string> changed_;  // object keys
};

}  // namespace g2n
