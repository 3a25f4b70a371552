// The objects CA references name (ConfigMaps, Secrets, ClusterTrustBundles),
// kept by read_key() between changes, as PolicyTrust and RouteChanges keep
// those resolve looked up: one place for every kind that holds trust, so a
// new one is added here and in the kind table.
#pragma once

#include <functional>
#include <string>

#include "resolve/kept_objects.h"

namespace g2n {

// Whether `kind` holds what CA references name
bool holds_trust(const std::string &kind);
// Whether a read_key() is of one of those objects
bool is_trust_read_key(const std::string &key);

class KeptTrustObjects {
public:
    // Views m's objects whose read_key() `keep` holds; false when an
    // object `read` holds comes twice (files may hold two of one name:
    // resolve takes the first, and a change cannot be followed by key).
    bool view(const Manifests &m, const std::function<bool(const std::string &)> &read,
              const std::function<bool(const std::string &)> &keep);
    bool follow(const MovedObjects &moved)
    {
        return config_maps_.follow(moved) && secrets_.follow(moved) && bundles_.follow(moved);
    }
    void copy_viewed()
    {
        config_maps_.copy_viewed();
        secrets_.copy_viewed();
        bundles_.copy_viewed();
    }

    // Object `key` (read_key()) is now the one `now` holds, kept when
    // `keep`, or gone (null)
    void changed(const std::string &key, const Manifests *now, bool keep);
    // Object `key`, where kept, added to `out`
    void add_to(const std::string &key, Manifests *out) const;

private:
    KeptObjects<ConfigMap> config_maps_;
    KeptObjects<Secret> secrets_;
    KeptObjects<ClusterTrustBundle> bundles_;
};

}  // namespace g2n
