// The table of kinds (kind_table.h) as what reads it sees it: parse's
// dispatch and version check, the tenant rule, run's applies, and the
// RBAC rules of deploy/rbac.yaml, which must grant what the table needs
// and nothing more.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <set>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "kind_table.h"
#include "test_support.h"

namespace fs = std::filesystem;
using g2n::KindRow;
using g2n_test::parse;

namespace {

std::string api_version_of(const KindRow &row, const std::string &version)
{
    return *row.group ? std::string(row.group) + "/" + version : version;
}

// (group, resource, verb) of every rule of the ClusterRole `name`
using Grant = std::tuple<std::string, std::string, std::string>;
std::set<Grant> grants_of(const std::vector<YAML::Node> &documents, const std::string &name)
{
    std::set<Grant> grants;
    bool found = false;
    for (const YAML::Node &doc : documents) {
        if (doc["kind"].as<std::string>() != "ClusterRole" || doc["metadata"]["name"].as<std::string>() != name) continue;
        found = true;
        for (const YAML::Node &rule : doc["rules"]) {
            for (const YAML::Node &group : rule["apiGroups"]) {
                for (const YAML::Node &resource : rule["resources"]) {
                    for (const YAML::Node &verb : rule["verbs"]) {
                        grants.emplace(group.as<std::string>(), resource.as<std::string>(), verb.as<std::string>());
                    }
                }
            }
        }
    }
    BOOST_TEST_REQUIRE(found, "no ClusterRole " << name << " in deploy/rbac.yaml");
    return grants;
}

std::string described(const std::set<Grant> &grants)
{
    std::string out;
    for (const auto &[group, resource, verb] : grants) {
        out += " " + (group.empty() ? "core" : group) + "/" + resource + ":" + verb;
    }
    return out.empty() ? " none" : out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kind_table)

BOOST_AUTO_TEST_CASE(rows_are_unique_and_complete)
{
    std::set<std::pair<std::string, std::string>> seen;
    for (const KindRow &row : g2n::kind_table()) {
        BOOST_TEST(seen.emplace(row.group, row.kind).second, "two rows of " << row.kind);
        BOOST_TEST(!row.versions.empty(), row.kind);
        BOOST_TEST(row.parse != nullptr, row.kind);
        BOOST_TEST(g2n::find_kind(row.group, row.kind) == &row);
        // only a tenant's object is rejected alone; what run follows
        // without resolve is a tenant's too
        if (row.change != g2n::KindChange::Whole) BOOST_TEST(row.tenant(), row.kind);
    }
    BOOST_TEST(g2n::find_kind("apps", "Deployment") == nullptr);
    BOOST_TEST(g2n::find_kind("", "HTTPRoute") == nullptr);
}

// Every row's parser is reached at each version it is read as, and any
// other version is refused naming the versions read: as bad input as a
// whole for the operator's kinds, as that object's rejection alone for
// tenants'.
BOOST_AUTO_TEST_CASE(parse_dispatches_by_the_table)
{
    for (const KindRow &row : g2n::kind_table()) {
        const std::string metadata = std::string("metadata: {name: x") + (row.namespaced() ? ", namespace: ns}" : "}");
        for (const char *version : row.versions) {
            const std::string yaml =
                "apiVersion: " + api_version_of(row, version) + "\nkind: " + row.kind + "\n" + metadata + "\n";
            g2n::Manifests m;
            std::string error;
            try {
                m = parse(yaml);
            } catch (const g2n::InputError &e) {
                error = e.what();
            }
            // reached its parser: whatever it says of an empty object, it
            // is not the version
            BOOST_TEST(error.find("is read as") == std::string::npos, row.kind << " " << version << ": " << error);
            BOOST_TEST(m.ignored.empty(), row.kind << " " << version);
            for (const g2n::RejectedObject &r : m.rejected) {
                BOOST_TEST(r.message.find("is read as") == std::string::npos, row.kind << ": " << r.message);
            }
        }
        const std::string other = api_version_of(row, "v0");
        const std::string yaml = "apiVersion: " + other + "\nkind: " + row.kind + "\n" + metadata + "\n";
        const std::string expected = std::string(row.kind) + " is read as " + row.versions_read() + ", not " + other;
        if (row.tenant()) {
            const g2n::Manifests m = parse(yaml);
            BOOST_TEST_REQUIRE(m.rejected.size() == 1u, row.kind);
            BOOST_TEST(m.rejected[0].message.find(expected) != std::string::npos, m.rejected[0].message);
        } else {
            BOOST_CHECK_EXCEPTION(parse(yaml), g2n::InputError, [&](const g2n::InputError &e) {
                return std::string(e.what()).find(expected) != std::string::npos;
            });
        }
    }
    const g2n::Manifests m = parse("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: ns}\n");
    BOOST_TEST_REQUIRE(m.ignored.size() == 1u);
    BOOST_TEST(m.ignored[0] == "Deployment ns/x");
}

BOOST_AUTO_TEST_CASE(versions_read_for_messages)
{
    BOOST_TEST(g2n::find_kind("gateway.networking.k8s.io", "TLSRoute")->versions_read() == "v1, v1alpha2 or v1alpha3");
    BOOST_TEST(g2n::find_kind("gateway.networking.k8s.io", "ListenerSet")->versions_read() == "v1");
    BOOST_TEST(g2n::find_kind("", "Secret")->reads_version("v1"));
    BOOST_TEST(!g2n::find_kind("", "Secret")->reads_version("core/v1"));
    BOOST_TEST(g2n::find_kind("discovery.k8s.io", "EndpointSlice")->reads_version("discovery.k8s.io/v1"));
    BOOST_TEST(!g2n::find_kind("discovery.k8s.io", "EndpointSlice")->reads_version("discovery.k8s.io/v1beta1"));
}

// deploy/rbac.yaml grants each kind what reading it needs (list, watch;
// get of what is fetched once referred to, or read again after a
// conflict on its status; update of the status written), in the
// ClusterRole for cluster-wide kinds or the one bound per namespace, and
// nothing the table does not ask for.
BOOST_AUTO_TEST_CASE(rbac_grants_what_the_table_needs)
{
    const fs::path rbac = fs::path(__FILE__).parent_path() / "../../deploy/rbac.yaml";
    const std::vector<YAML::Node> documents = YAML::LoadAllFromFile(rbac.string());
    std::set<Grant> cluster, namespaced;
    for (const KindRow &row : g2n::kind_table()) {
        std::set<Grant> &role = row.namespaced() ? namespaced : cluster;
        for (const char *verb : {"list", "watch"}) role.emplace(row.group, row.plural, verb);
        if (row.fetched_when_referred() || row.status_written()) role.emplace(row.group, row.plural, "get");
        if (row.status_written()) role.emplace(row.group, std::string(row.plural) + "/status", "update");
    }
    for (const auto &[name, needed] : {std::make_pair("gateway2nginx", cluster),
                                       std::make_pair("gateway2nginx-namespaced", namespaced)}) {
        const std::set<Grant> granted = grants_of(documents, name);
        std::set<Grant> missing, extra;
        std::set_difference(needed.begin(), needed.end(), granted.begin(), granted.end(),
                            std::inserter(missing, missing.end()));
        std::set_difference(granted.begin(), granted.end(), needed.begin(), needed.end(),
                            std::inserter(extra, extra.end()));
        BOOST_TEST(missing.empty(), "ClusterRole " << name << " lacks" << described(missing));
        BOOST_TEST(extra.empty(), "ClusterRole " << name << " grants beyond the table" << described(extra));
    }
}

BOOST_AUTO_TEST_SUITE_END()
