// BackendTLSPolicy (GEP-1897): targets, conflicts, CA references and the
// conditions of each policy, per ancestor Gateway.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "digest.h"
#include "gtls_spec.h"
#include "resolve/conditions.h"
#include "parse/pem.h"
#include "resolve/resolve.h"

namespace g2n {

namespace {

constexpr size_t kMaxAncestors = 16;

// The certificates of a bundle re-encoded ("" when none, or when a block
// does not parse). Thousands of policies usually share a few bundles: each
// distinct one is parsed once.
const std::string &bundle_certificates(const std::string &pem)
{
    std::unordered_map<std::string, std::string> &seen = ResolveScope::current().bundle_certificates;
    auto it = seen.find(pem);
    if (it == seen.end()) it = seen.emplace(pem, certificates_pem(pem)).first;
    return it->second;
}

// SHA-256 pins ("sha256-cert:HEX") of every certificate in a PEM text.
std::vector<std::string> certificate_pins(const std::string &pem)
{
    std::vector<std::string> pins;
    BIO *bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    while (X509 *cert = bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        X509_digest(cert, EVP_sha256(), md, &len);
        pins.push_back("sha256-cert:" + gtls::to_hex(md, len));
        X509_free(cert);
    }
    BIO_free(bio);
    return pins;
}

// caCertificateRefs (key ca.crt) or, with `trusted`, GEP-4152
// trustedCertificates (key ca.crt, tls.crt or tls.pem... any PEM value)
}  // namespace

CaResult resolve_ca_refs(const ObjectIndex &objects, const std::string &ns,
                         const std::vector<LocalObjectRef> &refs, bool trusted, Reader reader)
{
    CaResult out;
    const char *field = trusted ? "trustedCertificates" : "caCertificateRefs";
    for (const LocalObjectRef &ref : refs) {
        const std::map<std::string, std::string> *data = nullptr;
        const std::string *ca_pem = nullptr;  // the certificates of a ClusterTrustBundle
        std::string what;
        const RefKind kind = ref.refers_to();
        if (kind == RefKind::ConfigMap) {
            what = "ConfigMap " + ns + "/" + ref.name;
            if (const ConfigMap *cm = objects.config_map(ns, ref.name, reader)) data = &cm->data;
        } else if (kind == RefKind::Secret) {
            what = "Secret " + ns + "/" + ref.name;
            if (const Secret *s = objects.secret(ns, ref.name, reader)) data = &s->data;
        } else if (kind == RefKind::ClusterTrustBundle && !trusted) {
            what = "ClusterTrustBundle " + ref.name;
            if (const ClusterTrustBundle *b = objects.cluster_trust_bundle(ref.name, reader)) ca_pem = &b->trust_bundle;
        } else {
            // a bundle of the cluster's trust anchors is no set of leaves to pin
            out.invalid_kinds.push_back(std::string(field) + ": kind \"" + ref.kind + "\" in group \"" + ref.group
                                        + "\" (" + ref.name + ") is not supported; use a ConfigMap"
                                        + (trusted ? " or a Secret" : ", a Secret or a ClusterTrustBundle"));
            continue;
        }
        if (data == nullptr && ca_pem == nullptr) {
            out.invalid_refs.push_back(what + " does not exist");
            continue;
        }
        if (trusted) {
            // every value of the object is a PEM leaf (or several)
            std::string pem;
            for (const auto &[key, value] : *data) pem += value + "\n";
            std::vector<std::string> pins = bundle_certificates(pem).empty() ? std::vector<std::string>{}
                                                                              : certificate_pins(pem);
            if (pins.empty()) {
                out.invalid_refs.push_back(what + " holds no PEM certificate");
                continue;
            }
            out.pins.insert(out.pins.end(), pins.begin(), pins.end());
            out.valid++;
            continue;
        }
        std::string where = what + " spec.trustBundle";
        if (ca_pem == nullptr) {
            auto it = data->find("ca.crt");
            if (it == data->end()) {
                out.invalid_refs.push_back(what + " has no key ca.crt");
                continue;
            }
            ca_pem = &it->second;
            where = what + " key ca.crt";
        }
        const std::string &certificates = bundle_certificates(*ca_pem);
        if (certificates.empty()) {
            out.invalid_refs.push_back(where + " holds no PEM certificate, or a block that does not parse");
            continue;
        }
        // what is written is OpenSSL's encoding of what parsed
        out.bundle += certificates;
        out.valid++;
    }
    return out;
}

namespace {

std::string content_id(const std::string &content)
{
    const std::string digest = sha256(content);
    return gtls::to_hex(reinterpret_cast<const unsigned char *>(digest.data()), 8);
}

// A CA bundle's id: bundles are large, and 10,000 policies may share one
const std::string &bundle_id(const std::string &bundle)
{
    std::unordered_map<std::string, std::string> &seen = ResolveScope::current().bundle_ids;
    auto it = seen.find(bundle);
    if (it == seen.end()) it = seen.emplace(bundle, content_id(bundle)).first;
    return it->second;
}

std::string join(const std::vector<std::string> &parts)
{
    std::string out;
    for (const std::string &p : parts) {
        out += out.empty() ? p : "; " + p;
    }
    return out;
}

}  // namespace

bool older_first(const ObjectMeta &a, const ObjectMeta &b)
{
    if (a.creation_timestamp != b.creation_timestamp) {
        if (a.creation_timestamp.empty()) return false;
        if (b.creation_timestamp.empty()) return true;
        return a.creation_timestamp < b.creation_timestamp;
    }
    return key_less(a, b);
}

std::string safe_name(const std::string &text)
{
    std::string out;
    for (char ch : text) {
        out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
    }
    return out;
}

std::string object_file_stem(const std::string &prefix, const std::string &ns, const std::string &name)
{
    std::string stem = prefix + "_" + safe_name(ns) + "_" + safe_name(name);
    if (safe_name(ns) != ns || safe_name(name) != name || ns.find('_') != std::string::npos
        || name.find('_') != std::string::npos) {
        stem += "_" + content_id(std::to_string(ns.size()) + ":" + ns + name);  // where ns ends is part of it
    }
    return stem;
}

BoundPolicy *PolicyIndex::find(size_t service, const std::string &port_name) const
{
    BoundPolicy *whole = nullptr;
    for (const auto &[section, policy] : naming[service]) {
        if (!port_name.empty() && section == port_name) return policy;
        if (section.empty() && whole == nullptr) whole = policy;
    }
    return whole;
}

void PolicyIndex::reached(size_t service, const std::string &port_name, const std::string &gateway)
{
    for (auto &[section, bound] : naming[service]) {
        if (section.empty() || section == port_name) {
            // nearly always one Gateway: a sorted vector, not a tree of nodes
            auto at = std::lower_bound(bound->ancestors.begin(), bound->ancestors.end(), gateway);
            if (at == bound->ancestors.end() || *at != gateway) bound->ancestors.insert(at, gateway);
        }
    }
}

ObjectIndex::ObjectIndex(const Manifests &m, ResolveReads *reads)
    : grants_(&m.reference_grants), services_base_(m.services.data()), reads_(reads)
{
    services_.reserve(m.services.size());
    config_maps_.reserve(m.config_maps.size());
    secrets_.reserve(m.secrets.size());
    // the first of two objects with one name wins, as the input order says
    for (const Service &o : m.services) services_.emplace(o.meta.key(), &o);
    for (const ConfigMap &o : m.config_maps) config_maps_.emplace(o.meta.key(), &o);
    for (const Secret &o : m.secrets) secrets_.emplace(o.meta.key(), &o);
    for (const ClusterTrustBundle &o : m.cluster_trust_bundles) cluster_trust_bundles_.emplace(o.meta.key(), &o);
    for (const Namespace &o : m.namespaces) namespaces.emplace(o.meta.name, &o);
    slices_of_service.resize(m.services.size());
    for (const EndpointSlice &o : m.endpoint_slices) {
        if (const Service *svc = find(services_, o.meta.namespace_, o.service_name)) {
            slices_of_service[position(*svc)].push_back(&o);
        }
    }
}

std::string read_key(const std::string &kind, const std::string &ns, const std::string &name)
{
    return kind + " " + ns + "/" + name;
}

std::string read_key_of(const std::string &kind, const std::string &name_key)
{
    const size_t slash = name_key.find('/');
    if (slash == std::string::npos) return read_key(kind, "", name_key);
    return read_key(kind, name_key.substr(0, slash), name_key.substr(slash + 1));
}

const ConfigMap *ObjectIndex::config_map(const std::string &ns, const std::string &name, Reader reader) const
{
    if (reads_ != nullptr) reads_->readers[read_key("ConfigMap", ns, name)] |= static_cast<unsigned>(reader);
    return find(config_maps_, ns, name);
}

const Secret *ObjectIndex::secret(const std::string &ns, const std::string &name, Reader reader) const
{
    if (reads_ != nullptr) reads_->readers[read_key("Secret", ns, name)] |= static_cast<unsigned>(reader);
    return find(secrets_, ns, name);
}

const ClusterTrustBundle *ObjectIndex::cluster_trust_bundle(const std::string &name, Reader reader) const
{
    if (reads_ != nullptr) {
        reads_->readers[read_key("ClusterTrustBundle", "", name)] |= static_cast<unsigned>(reader);
    }
    return find(cluster_trust_bundles_, "", name);
}

const Service *ObjectIndex::service(const std::string &ns, const std::string &name, Reader reader) const
{
    if (reads_ != nullptr) reads_->readers[read_key("Service", ns, name)] |= static_cast<unsigned>(reader);
    return find(services_, ns, name);
}

bool ObjectIndex::granted(const std::string &from_kind, const std::string &from_ns, const std::string &to_kind,
                          const std::string &to_ns, const std::string &to_name, Reader reader) const
{
    if (reads_ != nullptr) reads_->readers[read_key("ReferenceGrant", to_ns, "*")] |= static_cast<unsigned>(reader);
    const std::string from_group = "gateway.networking.k8s.io";  // Gateway and every route kind
    for (const ReferenceGrant &g : *grants_) {
        if (g.meta.namespace_ != to_ns) continue;
        bool from = std::any_of(g.from.begin(), g.from.end(), [&](const ReferenceGrantFrom &f) {
            return f.group == from_group && f.kind == from_kind && f.namespace_ == from_ns;
        });
        bool to = std::any_of(g.to.begin(), g.to.end(), [&](const ReferenceGrantTo &t) {
            return t.group.empty() && t.kind == to_kind && (t.name.empty() || t.name == to_name);
        });
        if (from && to) return true;
    }
    return false;
}

PolicyIndex resolve_policies(const Manifests &m, const ObjectIndex &objects, Plan *plan)
{
    PolicyIndex index;
    index.bound.resize(m.backend_tls_policies.size());
    index.naming.resize(m.services.size());

    // conflicts go to the oldest, then to the first by namespace/name
    std::vector<const BackendTLSPolicy *> order;
    order.reserve(m.backend_tls_policies.size());
    for (const BackendTLSPolicy &p : m.backend_tls_policies) order.push_back(&p);
    // stable: two objects with one name (a manifest given twice) keep input order
    std::stable_sort(order.begin(), order.end(), [](const BackendTLSPolicy *a, const BackendTLSPolicy *b) {
        return older_first(a->meta, b->meta);
    });

    std::set<std::string> client_files;  // written once however many policies name them
    for (const BackendTLSPolicy *p : order) {
        const std::string key = p->meta.key();
        const std::string &ns = p->meta.namespace_;
        BoundPolicy &bound = index.bound[static_cast<size_t>(p - m.backend_tls_policies.data())];
        bound.policy = p;

        std::vector<std::string> invalid = p->invalid_reasons;
        if (!p->well_known_ca_certificates.empty() && p->well_known_ca_certificates != "System") {
            invalid.push_back("wellKnownCACertificates \"" + p->well_known_ca_certificates
                              + "\" is not supported; only \"System\" is");
        }
        CaResult ca = resolve_ca_refs(objects, p->meta.namespace_, p->ca_certificate_refs, false, Reader::BackendTLSPolicy);
        CaResult trusted = resolve_ca_refs(objects, p->meta.namespace_, p->trusted_certificates, true, Reader::BackendTLSPolicy);
        UpstreamPolicy upstream = upstream_policy(*p, ca, trusted, plan);
        if (!p->client_certificate.empty()) {
            // a Secret of its own namespace: no ReferenceGrant to ask for
            const SecretFiles files = tls_secret_files(objects, "BackendTLSPolicy", ns, {"", "Secret", p->client_certificate, ""},
                                                       "policy-client", plan, &client_files, Reader::BackendTLSPolicy);
            if (files.ok()) {
                upstream.client_certificate = files.certificate;
                upstream.client_key = files.key;
            } else {
                invalid.push_back("option gateway2nginx.io/client-certificate: " + files.why);
            }
        }
        bound.upstream = std::make_shared<const UpstreamPolicy>(std::move(upstream));
        ca.invalid_refs.insert(ca.invalid_refs.end(), trusted.invalid_refs.begin(), trusted.invalid_refs.end());
        ca.invalid_kinds.insert(ca.invalid_kinds.end(), trusted.invalid_kinds.begin(), trusted.invalid_kinds.end());

        // fail closed: any reference that does not resolve makes the traffic fail
        bound.usable = invalid.empty() && ca.invalid_refs.empty() && ca.invalid_kinds.empty();

        // targets: Services (and their ports) in the policy's namespace
        std::vector<std::string> missing, conflicts;
        size_t bound_targets = 0;
        for (const PolicyTargetRef &t : p->target_refs) {
            std::string what = "Service " + ns + "/" + t.name
                               + (t.section_name.empty() ? "" : " port " + t.section_name);
            if (t.refers_to() != RefKind::Service) {
                missing.push_back("target " + t.kind + " " + t.name + " is not a Service");
                continue;
            }
            const Service *svc = objects.service(ns, t.name, Reader::BackendTLSPolicy);
            if (svc == nullptr) {
                missing.push_back(what + " does not exist");
                continue;
            }
            if (!t.section_name.empty()
                && std::none_of(svc->ports.begin(), svc->ports.end(),
                                [&](const ServicePort &sp) { return sp.name == t.section_name; })) {
                missing.push_back(what + " does not exist");
                continue;
            }
            auto &naming = index.naming[objects.position(*svc)];
            auto winner = std::find_if(naming.begin(), naming.end(),
                                       [&](const auto &named) { return named.first == t.section_name; });
            if (winner != naming.end()) {
                conflicts.push_back(winner->second->policy->meta.key());
            } else {
                bound_targets++;
            }
            naming.emplace_back(t.section_name, &bound);  // conflicts too: they get ancestors
        }

        std::vector<Condition> &conds = bound.conditions;
        if (!invalid.empty()) {
            conds.push_back(cond::policy_invalid(join(invalid)));
        } else if (bound_targets == 0 && conflicts.empty()) {
            conds.push_back(cond::policy_target_not_found(join(missing)));
        } else if (!p->ca_certificate_refs.empty() && ca.valid == 0) {
            conds.push_back(cond::policy_no_valid_ca(
                "no valid CA certificate: " + join(ca.invalid_refs.empty() ? ca.invalid_kinds : ca.invalid_refs)));
        } else if (bound_targets == 0) {
            conds.push_back(cond::policy_conflicted(conflicts.front()));
        } else {
            conds.push_back(cond::policy_accepted());
        }
        if (!ca.invalid_kinds.empty()) {
            conds.push_back(cond::refs_invalid_kind(join(ca.invalid_kinds)));
        } else if (!ca.invalid_refs.empty()) {
            conds.push_back(cond::refs_invalid_ca(join(ca.invalid_refs)));
        } else {
            conds.push_back(cond::refs_resolved());
        }
    }
    return index;
}

void policy_statuses(const PolicyIndex &index, Plan *plan, StatusList *statuses)
{
    std::vector<const BoundPolicy *> order;
    order.reserve(index.bound.size());
    for (const BoundPolicy &b : index.bound) order.push_back(&b);
    // two objects with one name (the same manifest given twice) keep input order
    std::stable_sort(order.begin(), order.end(), [](const BoundPolicy *a, const BoundPolicy *b) {
        return key_less(a->policy->meta, b->policy->meta);
    });

    for (const BoundPolicy *bp : order) {
        const BoundPolicy &bound = *bp;
        const BackendTLSPolicy *p = bound.policy;
        ObjectStatus st;
        st.api_version = intern(p->api_version);
        st.kind = "BackendTLSPolicy";
        st.meta = status_meta(p->meta);
        st.refs_key = "ancestors";
        // Kubernetes keeps at most 16 ancestors; the rest still get the
        // policy's verification (rendering never depends on this list)
        size_t n = 0;
        for (const std::string &gw : bound.ancestors) {
            if (n++ == kMaxAncestors) {
                plan->warnings.push_back("BackendTLSPolicy " + p->meta.key()
                                         + ": more than 16 ancestor Gateways, status lists the first 16");
                break;
            }
            ObjectStatus::RefStatus ref;
            ref.namespace_ = gw.substr(0, gw.find('/'));
            ref.name = gw.substr(gw.find('/') + 1);
            ref.conditions = bound.conditions;
            // GEP-4152 gate: accepted behind one Gateway, refused behind another
            if (p->insecure() && !index.insecure_allowed.count(gw) && !ref.conditions.empty()
                && ref.conditions[0].status == "True") {
                ref.conditions[0] = cond::policy_insecure_not_allowed(gw, gtls::mode_name(p->mode));
            }
            st.refs.push_back(std::move(ref));
        }
        statuses->push_back(std::move(st));
    }
}

UpstreamPolicy upstream_policy(const BackendTLSPolicy &p, const CaResult &ca, const CaResult &trusted, Plan *plan)
{
    UpstreamPolicy upstream;
    upstream.name = p.meta.key();
    upstream.mode = p.mode;
    upstream.hostname = p.hostname;
    for (const gtls::SanMatcher &san : p.subject_alt_names) upstream.sans.push_back(san.spec);
    upstream.pins = p.pins;
    upstream.pins.insert(upstream.pins.end(), trusted.pins.begin(), trusted.pins.end());
    if (!p.well_known_ca_certificates.empty()) {
        upstream.ca = "system";
    } else if (ca.valid > 0) {
        // named by content: policies trusting the same CAs share one file,
        // and the module loads each file once
        upstream.ca = ca_bundle_file(ca.bundle, plan);
    }
    return upstream;
}

void drop_unnamed_bundles(Plan *plan)
{
    std::set<std::string> bundles;
    for (const OutputFile &f : plan->files) {
        if (f.path.rfind("certs/ca-", 0) == 0) bundles.insert(f.path);
    }
    drop_unnamed_bundles(plan, std::move(bundles));
}

void drop_unnamed_bundles(Plan *plan, std::set<std::string> candidates)
{
    // one policy object names a bundle for all its upstreams
    const UpstreamPolicy *last = nullptr;
    for (const std::vector<Upstream> *upstreams : {&plan->upstreams, &plan->stream_upstreams}) {
        for (const Upstream &u : *upstreams) {
            if (u.policy && u.policy.get() != last) candidates.erase(u.policy->ca);
            last = u.policy.get();
        }
    }
    for (const Server &s : plan->servers) candidates.erase(s.client.ca);
    for (const StreamServer &s : plan->stream_servers) candidates.erase(s.client.ca);
    if (candidates.empty()) return;
    plan->files.erase(std::remove_if(plan->files.begin(), plan->files.end(),
                                     [&](const OutputFile &f) { return candidates.count(f.path) > 0; }),
                      plan->files.end());
}

std::string ca_bundle_file(const std::string &bundle, Plan *plan)
{
    std::string path = "certs/ca-" + bundle_id(bundle) + ".pem";
    bool have = std::any_of(plan->files.begin(), plan->files.end(),
                            [&](const OutputFile &f) { return f.path == path; });
    if (!have) plan->files.push_back({path, bundle, 0644});
    return path;
}

}  // namespace g2n
