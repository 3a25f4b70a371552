// Every kind gateway2nginx reads, one row each: what the API server serves
// it as, who writes it, what run does when one changes, and its parser.
// Discovery (kube/), parse's dispatch and version check, the tenant rule,
// run's applies without resolve and deploy/rbac.yaml (held against the
// table by generator/tests/test_kinds.cc) all read it: a new kind is one
// row and its parser.
#pragma once

#include <string>
#include <vector>

namespace g2n {

class Document;
class YamlNode;
struct Manifests;

// What run does with a change to one object of the kind while it keeps
// the plan nginx runs
enum class KindChange {
    Whole,      // the whole way again: resolved, rendered, pushed or reloaded
    Endpoints,  // the servers of the Services it names (resolve/service_endpoints.h)
    Trust,      // the trust of the policies reading it (resolve/policy_trust.h)
    Routes,     // the route table entries of the hostnames it serves (a Service: the routes naming it; a
                // ReferenceGrant: those naming a Service of its namespace from another; a BackendTLSPolicy:
                // those naming its targets, and its trust) (resolve/route_changes.h)
};

enum KindFlag : unsigned {
    Namespaced = 1,
    Required = 2,             // run cannot start when the API server does not serve it
    Tenant = 4,               // tenants write it (or trust bundles): a failure rejects that object alone
    StatusWritten = 8,        // status written back (RBAC: get, update of .../status)
    FetchedWhenReferred = 16, // held as a digest until something refers to it (RBAC: get)
};

using KindParser = void (*)(const Document &doc, const YamlNode &root, Manifests *out);

struct KindRow {
    const char *group;                   // "" for the core group
    std::vector<const char *> versions;  // read; discovery takes the first the API server serves
    const char *plural;
    const char *kind;
    unsigned flags;  // KindFlag
    KindChange change;
    KindParser parse;

    bool namespaced() const { return flags & Namespaced; }
    bool required() const { return flags & Required; }
    bool tenant() const { return flags & Tenant; }
    bool status_written() const { return flags & StatusWritten; }
    bool fetched_when_referred() const { return flags & FetchedWhenReferred; }
    bool reads_version(const std::string &api_version) const;
    // "v1, v1alpha2 or v1alpha3": the versions read, for messages
    std::string versions_read() const;
};

const std::vector<KindRow> &kind_table();

// The row of KIND in GROUP ("" for the core group), or null.
const KindRow *find_kind(const std::string &group, const std::string &kind);

}  // namespace g2n
