#include "resolve/policy_trust.h"

#include <algorithm>
#include <map>

#include "plan/upstreams.h"

namespace g2n {

namespace {

// "ConfigMap ns/name", "Secret ns/name" or "ClusterTrustBundle /name" of a
// policy's reference, as ObjectIndex records what it looked up; "" for a
// kind it does not look up
std::string object_key(const std::string &ns, const LocalObjectRef &ref)
{
    const RefKind kind = ref.refers_to();
    if (!holds_certificates(kind)) return "";
    return read_key(ref.kind, kind == RefKind::ClusterTrustBundle ? "" : ns, ref.name);
}

}  // namespace

std::vector<std::string> policy_read_keys(const BackendTLSPolicy &p)
{
    std::vector<std::string> keys;
    for (const auto *refs : {&p.ca_certificate_refs, &p.trusted_certificates}) {
        for (const LocalObjectRef &ref : *refs) {
            std::string key = object_key(p.meta.namespace_, ref);
            if (!key.empty() && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(std::move(key));
        }
    }
    if (!p.client_certificate.empty()) keys.push_back(read_key("Secret", p.meta.namespace_, p.client_certificate));
    return keys;
}

std::set<std::string> policy_target_services(const BackendTLSPolicy &p)
{
    std::set<std::string> services;
    for (const PolicyTargetRef &t : p.target_refs) {
        if (t.refers_to() == RefKind::Service) services.insert(p.meta.namespace_ + "/" + t.name);
    }
    return services;
}

namespace {

std::set<std::string> replaceable_names(const Plan &plan, const Options &options)
{
    std::set<std::string> names;
    for (const auto &[name, policy] : trust_replaceable_policies(plan, options)) names.insert(name);
    return names;
}

// The key pair of `p`'s own client certificate as its Secret holds it now,
// put in place of the files `was` names in *plan (named by the Secret, so
// a renewal keeps the names). False when it no longer resolves, or to other
// files: resolve it is. *changed: whether it differs from what the plan
// held before this update (`replaced`: the files' content then, by index).
bool replace_client_certificate(const ObjectIndex &index, const BackendTLSPolicy &p, const UpstreamPolicy &was,
                                Plan *plan, std::map<size_t, std::string> *replaced, bool *changed)
{
    Plan read;
    std::set<std::string> written;
    const SecretFiles files = tls_secret_files(index, "BackendTLSPolicy", p.meta.namespace_,
                                               {"", "Secret", p.client_certificate, ""}, "policy-client", &read,
                                               &written, Reader::BackendTLSPolicy);
    if (!files.ok() || files.certificate != was.client_certificate || files.key != was.client_key) return false;
    *changed = false;
    for (OutputFile &f : read.files) {
        auto at = std::find_if(plan->files.begin(), plan->files.end(),
                               [&](const OutputFile &o) { return o.path == f.path; });
        if (at == plan->files.end()) return false;
        const size_t i = static_cast<size_t>(at - plan->files.begin());
        auto then = replaced->find(i);
        if ((then != replaced->end() ? then->second : at->content) != f.content) *changed = true;
        if (at->content == f.content) continue;
        if (then == replaced->end()) replaced->emplace(i, std::move(at->content));
        at->content = std::move(f.content);
    }
    return true;
}

}  // namespace

PolicyTrust::PolicyTrust(const Manifests &manifests, const Plan &plan, const Options &options,
                         const ResolveReads &reads)
    : readers_(reads.readers)
{
    const std::set<std::string> replaceable = replaceable_names(plan, options);
    std::set<std::string> policy_keys;
    for (const BackendTLSPolicy &p : manifests.backend_tls_policies) {
        const std::string key = p.meta.key();
        if (!policy_keys.insert(key).second) usable_ = false;
        const std::vector<std::string> objects = policy_read_keys(p);
        if (objects.empty()) continue;
        const bool tracked = replaceable.count(key) > 0;
        if (tracked) policies_.view(key, p);
        for (const std::string &object : objects) {
            if (tracked) {
                read_by_[object].push_back(key);
            } else {
                read_by_others_.insert(object);
            }
        }
    }
    // what the tracked policies read, kept; two objects of one name are
    // not followed (resolve takes the first)
    if (!objects_.view(
            manifests, [&](const std::string &key) { return readers_.count(key) > 0; },
            [&](const std::string &key) { return read_by_.count(key) > 0; })) {
        usable_ = false;
    }
}

void PolicyTrust::object_changed(const std::string &kind, const std::string &key, const Manifests *now)
{
    const std::string object = read_key_of(kind, key);
    objects_.changed(object, now, read_by_.count(object) > 0);
    changed_.insert(object);
}

PolicyTrust::Update PolicyTrust::update(Plan *plan)
{
    Update update;
    std::set<std::string> affected;
    for (const std::string &object : changed_) {
        auto read = readers_.find(object);
        if (read == readers_.end()) continue;  // resolve never looked it up
        auto policies = read_by_.find(object);
        if ((read->second & static_cast<unsigned>(Reader::Gateway)) || read_by_others_.count(object)
            || policies == read_by_.end()) {
            update.needs_resolve = true;
        } else {
            affected.insert(policies->second.begin(), policies->second.end());
        }
    }
    changed_.clear();
    if (update.needs_resolve || affected.empty()) return update;

    ResolveScope scope(plan->texts.get());
    const size_t files_before = plan->files.size();
    struct Replacement {
        std::shared_ptr<const UpstreamPolicy> was, now;
    };
    std::vector<Replacement> replacements;
    std::map<size_t, std::string> files_then;  // plan->files' content before, by index
    std::unordered_map<std::string, std::shared_ptr<const UpstreamPolicy>> in_plan;
    const UpstreamPolicy *last = nullptr;  // a policy's upstreams are mostly side by side
    for (const std::vector<Upstream> *upstreams : {&plan->upstreams, &plan->stream_upstreams}) {
        for (const Upstream &u : *upstreams) {
            if (u.policy && u.policy.get() != last && affected.count(u.policy->name)) {
                in_plan.emplace(u.policy->name, u.policy);
            }
            last = u.policy.get();
        }
    }
    for (const std::string &key : affected) {
        const BackendTLSPolicy &p = *policies_.find(key);
        Manifests held;  // what it reads now
        for (const std::string &object : policy_read_keys(p)) objects_.add_to(object, &held);
        const ObjectIndex index(held);
        const CaResult ca = resolve_ca_refs(index, p.meta.namespace_, p.ca_certificate_refs, false, Reader::BackendTLSPolicy);
        const CaResult trusted = resolve_ca_refs(index, p.meta.namespace_, p.trusted_certificates, true, Reader::BackendTLSPolicy);
        // it was trust-replaceable, so every reference resolved: one that
        // no longer does changes its conditions and its traffic
        if (!ca.invalid_refs.empty() || !ca.invalid_kinds.empty() || !trusted.invalid_refs.empty()
            || !trusted.invalid_kinds.empty()) {
            update.needs_resolve = true;
            break;
        }
        auto found = in_plan.find(key);
        if (found == in_plan.end()) {
            update.needs_resolve = true;
            break;
        }
        const std::shared_ptr<const UpstreamPolicy> &was = found->second;
        // its own client certificate, renewed, is pushed with its trust
        bool client_changed = false;
        if (p.client_certificate.empty() != was->client_certificate.empty()
            || (!p.client_certificate.empty()
                && !replace_client_certificate(index, p, *was, plan, &files_then, &client_changed))) {
            update.needs_resolve = true;
            break;
        }
        UpstreamPolicy now = upstream_policy(p, ca, trusted, plan);
        now.client_certificate = was->client_certificate;
        now.client_key = was->client_key;
        if (now.ca == was->ca && now.pins == was->pins && !client_changed) continue;
        now.names_pushed = was->names_pushed;  // its upstreams are as they were
        // what else made it replaceable (its upstreams) is as it was
        if (!trust_replaceable(now)) {
            update.needs_resolve = true;
            break;
        }
        replacements.push_back({was, std::make_shared<const UpstreamPolicy>(std::move(now))});
    }
    if (update.needs_resolve) {
        for (auto &[i, content] : files_then) plan->files[i].content = std::move(content);
        plan->files.resize(files_before);  // the bundles it added
        return update;
    }
    std::unordered_map<const UpstreamPolicy *, std::shared_ptr<const UpstreamPolicy>> to;
    for (const Replacement &r : replacements) to.emplace(r.was.get(), r.now);
    for (std::vector<Upstream> *upstreams : {&plan->upstreams, &plan->stream_upstreams}) {
        for (Upstream &u : *upstreams) {
            if (auto it = to.find(u.policy.get()); u.policy && it != to.end()) u.policy = it->second;
        }
    }
    std::set<std::string> replaced;  // bundles, left where nothing else names them
    for (const Replacement &r : replacements) replaced.insert(r.was->ca);
    if (!replaced.empty()) drop_unnamed_bundles(plan, std::move(replaced));
    for (const Replacement &r : replacements) update.changed.push_back(r.now.get());
    return update;
}

}  // namespace g2n
