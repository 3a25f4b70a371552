#include "resolve/trust_objects.h"

#include <set>

#include "resolve/resolve.h"

namespace g2n {

namespace {

constexpr const char *kTrustKinds[] = {"ConfigMap", "Secret", "ClusterTrustBundle"};

template <typename T>
const std::vector<T> &list_of(const Manifests &m);
template <>
const std::vector<ConfigMap> &list_of(const Manifests &m) { return m.config_maps; }
template <>
const std::vector<Secret> &list_of(const Manifests &m) { return m.secrets; }
template <>
const std::vector<ClusterTrustBundle> &list_of(const Manifests &m) { return m.cluster_trust_bundles; }

template <typename T>
std::vector<T> &list_of(Manifests &m)
{
    return const_cast<std::vector<T> &>(list_of<T>(static_cast<const Manifests &>(m)));
}

template <typename T>
bool view_all(const Manifests &m, const char *kind, const std::function<bool(const std::string &)> &read,
              const std::function<bool(const std::string &)> &keep, std::set<std::string> *seen, KeptObjects<T> *kept)
{
    bool usable = true;
    for (const T &o : list_of<T>(m)) {
        const std::string key = read_key(kind, o.meta.namespace_, o.meta.name);
        if (!seen->insert(key).second && read(key)) usable = false;
        if (keep(key)) kept->view(key, o);
    }
    return usable;
}

template <typename T>
void replace(KeptObjects<T> *kept, const std::string &key, const Manifests *now, bool keep)
{
    kept->erase(key);
    if (now != nullptr && keep && !list_of<T>(*now).empty()) kept->copy(key, list_of<T>(*now).front());
}

template <typename T>
void add(const KeptObjects<T> &kept, const std::string &key, Manifests *out)
{
    if (const T *o = kept.find(key)) list_of<T>(*out).push_back(*o);
}

bool starts_with_kind(const std::string &key, const char *kind)
{
    const std::string prefix = std::string(kind) + " ";
    return key.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

bool holds_trust(const std::string &kind)
{
    for (const char *k : kTrustKinds) {
        if (kind == k) return true;
    }
    return false;
}

bool is_trust_read_key(const std::string &key)
{
    for (const char *k : kTrustKinds) {
        if (starts_with_kind(key, k)) return true;
    }
    return false;
}

bool KeptTrustObjects::view(const Manifests &m, const std::function<bool(const std::string &)> &read,
                            const std::function<bool(const std::string &)> &keep)
{
    std::set<std::string> seen;
    const bool config_maps = view_all(m, "ConfigMap", read, keep, &seen, &config_maps_);
    const bool secrets = view_all(m, "Secret", read, keep, &seen, &secrets_);
    const bool bundles = view_all(m, "ClusterTrustBundle", read, keep, &seen, &bundles_);
    return config_maps && secrets && bundles;
}

void KeptTrustObjects::changed(const std::string &key, const Manifests *now, bool keep)
{
    if (starts_with_kind(key, "ConfigMap")) {
        replace(&config_maps_, key, now, keep);
    } else if (starts_with_kind(key, "Secret")) {
        replace(&secrets_, key, now, keep);
    } else if (starts_with_kind(key, "ClusterTrustBundle")) {
        replace(&bundles_, key, now, keep);
    }
}

void KeptTrustObjects::add_to(const std::string &key, Manifests *out) const
{
    add(config_maps_, key, out);
    add(secrets_, key, out);
    add(bundles_, key, out);
}

}  // namespace g2n
