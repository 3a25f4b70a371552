// FileInput::take_changes(): what changed in the files since the last read
// or take, object by object, as the API's watches say it; none where the
// whole way must read (an object in two documents, a List, standard input).
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "parse/parse.h"
#include "run/file_input.h"

using namespace g2n;

namespace {

struct TempDir {
    std::filesystem::path path;
    TempDir()
    {
        char name[] = "/tmp/gtls-file-input-XXXXXX";
        BOOST_TEST_REQUIRE(::mkdtemp(name) != nullptr);
        path = name;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    void write(const std::string &file, const std::string &text) const
    {
        std::ofstream(path / file, std::ios::trunc) << text;
    }
};

std::string service(const std::string &name)
{
    return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: ns}\nspec:\n  ports: [{name: http, port: 80}]\n";
}

std::string route(const std::string &name, const std::string &path)
{
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name
           + ", namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: "
           + path + "}}]\n    backendRefs: [{name: s1, port: 80}]\n";
}

// "Kind ns/name group" -> the object's text now, or "gone"
std::map<std::string, std::string> said(const ChangeSet &set)
{
    std::map<std::string, std::string> out;
    for (const kube::ObjectChange &c : set.objects) {
        const std::optional<std::string> json = set.json_of(c);
        out[c.kind + " " + c.name_key + " " + c.group] = json ? *json : "gone";
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(file_input)

BOOST_AUTO_TEST_CASE(file_changes_are_said_object_by_object)
{
    TempDir dir;
    dir.write("a.yaml", service("s1") + "---\n" + route("r1", "/a"));
    dir.write("b.yaml", service("s2"));
    FileInput in({dir.path.string()});
    BOOST_TEST(!in.take_changes(), "nothing read yet: the whole way");
    DocumentCache cache;
    Manifests read;
    in.read(&read, 1, &cache);
    std::optional<ChangeSet> set = in.take_changes();
    BOOST_TEST_REQUIRE(set.has_value());
    BOOST_TEST(set->objects.empty());

    // a route changed, one made, a Service deleted: in one file
    dir.write("a.yaml", route("r1", "/b") + "---\n" + route("r2", "/c"));
    set = in.take_changes();
    BOOST_TEST_REQUIRE(set.has_value());
    BOOST_TEST((said(*set) == std::map<std::string, std::string>{
                    {"HTTPRoute ns/r1 gateway.networking.k8s.io", route("r1", "/b")},
                    {"HTTPRoute ns/r2 gateway.networking.k8s.io", route("r2", "/c")},
                    {"Service ns/s1 ", "gone"}}));
    // (parsed alone, each is the object it names)
    for (const kube::ObjectChange &c : set->objects) {
        Manifests one;
        if (auto json = set->json_of(c)) parse_texts({{c.name, *json}}, &one);
    }

    // a route moved to another file: changed where it is now
    dir.write("a.yaml", route("r1", "/b"));
    dir.write("b.yaml", service("s2") + "---\n" + route("r2", "/c"));
    set = in.take_changes();
    BOOST_TEST_REQUIRE(set.has_value());
    BOOST_TEST((said(*set) == std::map<std::string, std::string>{{"HTTPRoute ns/r2 gateway.networking.k8s.io", route("r2", "/c")}}));

    // a document of a comment alone: nothing
    dir.write("b.yaml", service("s2") + "---\n" + route("r2", "/c") + "---\n# a note\n");
    set = in.take_changes();
    BOOST_TEST_REQUIRE(set.has_value());
    BOOST_TEST(set->objects.empty());
    // a file deleted: its objects gone
    std::filesystem::remove(dir.path / "b.yaml");
    set = in.take_changes();
    BOOST_TEST_REQUIRE(set.has_value());
    BOOST_TEST((said(*set) == std::map<std::string, std::string>{{"HTTPRoute ns/r2 gateway.networking.k8s.io", "gone"},
                                                                  {"Service ns/s2 ", "gone"}}));
}

// An object in two documents (the whole way takes the first), a List, or
// a file that does not parse: none, until a read knows the files again
BOOST_AUTO_TEST_CASE(what_only_the_whole_way_reads_is_not_said)
{
    TempDir dir;
    dir.write("a.yaml", route("r1", "/a"));
    dir.write("b.yaml", service("s1"));
    FileInput in({dir.path.string()});
    DocumentCache cache;
    Manifests read;
    in.read(&read, 1, &cache);
    BOOST_TEST_REQUIRE(in.take_changes().has_value());

    dir.write("b.yaml", service("s1") + "---\n" + route("r1", "/b"));
    BOOST_TEST(!in.take_changes(), "a route in two files");
    dir.write("b.yaml", service("s1"));
    BOOST_TEST(!in.take_changes(), "not until the whole way read again");
    Manifests again;
    in.read(&again, 1, &cache);
    BOOST_TEST(in.take_changes().has_value());

    dir.write("a.yaml", route("r1", "/a") + "---\n" + route("r1", "/b"));
    BOOST_TEST(!in.take_changes(), "a route twice in one file");
    Manifests twice;
    in.read(&twice, 1, &cache);
    BOOST_TEST(!in.take_changes(), "read with a route twice");

    dir.write("a.yaml", route("r1", "/a"));
    Manifests once;
    in.read(&once, 1, &cache);
    BOOST_TEST(in.take_changes().has_value());
    dir.write("a.yaml", "apiVersion: v1\nkind: List\nitems:\n"
                        "- {apiVersion: v1, kind: Service, metadata: {name: s8, namespace: ns}, spec: {ports: [{port: 80}]}}\n"
                        "- {apiVersion: v1, kind: Service, metadata: {name: s9, namespace: ns}, spec: {ports: [{port: 80}]}}\n");
    BOOST_TEST(!in.take_changes(), "a List");
    Manifests listed;
    in.read(&listed, 1, &cache);
    BOOST_TEST(listed.services.size() == 3u);
    BOOST_TEST(in.take_changes().has_value());
    dir.write("a.yaml", "kind: [\n");
    BOOST_TEST(!in.take_changes(), "bad YAML");

    FileInput stdin_input({"-"});
    BOOST_TEST(!stdin_input.take_changes());
}

BOOST_AUTO_TEST_SUITE_END()
