// FileInput::take_changes(): what changed in the files since the last read
// or take, object by object, as the API's watches say it; none where the
// whole way must read (an object in two documents, a List, standard input).
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <vector>
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

// Property: after any sequence of edits to a few files (documents changed
// in place, made, deleted, moved to another file, files deleted, comments),
// the objects the change sets said, applied in turn, are what the files
// hold, object by object; and where the files hold an object twice, no
// change set is said (the whole way reads them, as here)
BOOST_AUTO_TEST_CASE(change_sets_follow_any_edits)
{
    TempDir dir;
    std::mt19937 random(20261201);
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    // the files as the test holds them: documents by file, each "Kind ns/name" and its text
    struct Doc {
        std::string identity, text;
    };
    std::map<std::string, std::vector<Doc>> files;
    auto make_doc = [&]() {
        if (pick(5) == 0) return Doc{"", "# a note " + std::to_string(pick(100)) + "\n"};
        if (pick(3) == 0) {
            const std::string name = "s" + std::to_string(pick(10));
            return Doc{"Service ns/" + name, service(name)};
        }
        const std::string name = "r" + std::to_string(pick(30));
        return Doc{"HTTPRoute ns/" + name, route(name, "/p" + std::to_string(pick(50)))};
    };
    auto write = [&](const std::string &file) {
        std::string text;
        for (size_t i = 0; i < files[file].size(); i++) text += (i ? "---\n" : "") + files[file][i].text;
        dir.write(file, text);
    };
    // what the files hold by identity; false when one is there twice
    auto held = [&](std::map<std::string, std::string> *out) {
        out->clear();
        bool once = true;
        for (const auto &[file, docs] : files) {
            for (const Doc &d : docs) {
                if (!d.identity.empty() && !out->emplace(d.identity, d.text).second) once = false;
            }
        }
        return once;
    };
    const char *names[] = {"a.yaml", "b.yaml", "c.yaml"};
    for (const char *f : names) {
        files[f] = {make_doc()};
        write(f);
    }
    FileInput in({dir.path.string()});
    DocumentCache cache;
    auto read_whole = [&] {
        Manifests m;
        in.read(&m, 1, &cache);
    };
    std::map<std::string, std::string> model, want;
    bool once = held(&model);
    read_whole();
    int said = 0, refused = 0;
    for (int step = 0; step < 300; step++) {
        const std::string file = names[pick(3)];
        std::vector<Doc> &docs = files[file];
        const int op = pick(6);
        if (op == 0 || docs.empty()) {
            docs.push_back(make_doc());
        } else if (op == 1) {
            docs.erase(docs.begin() + pick(static_cast<int>(docs.size())));
        } else if (op == 2) {
            const size_t i = static_cast<size_t>(pick(static_cast<int>(docs.size())));
            const std::string other = names[pick(3)];
            Doc d = docs[i];
            docs.erase(docs.begin() + static_cast<long>(i));
            files[other].push_back(d);
            write(other);
        } else if (op == 3 && pick(4) == 0) {
            docs.clear();
        } else {
            Doc &d = docs[static_cast<size_t>(pick(static_cast<int>(docs.size())))];
            if (d.identity.rfind("HTTPRoute", 0) == 0) d.text = route(d.identity.substr(13), "/p" + std::to_string(pick(50)));
        }
        if (docs.empty()) {
            std::filesystem::remove(dir.path / file);
            files.erase(file);
        } else {
            write(file);
        }
        const bool was_once = once;
        once = held(&want);
        BOOST_TEST_CONTEXT("step " << step)
        {
            const std::optional<ChangeSet> set = in.take_changes();
            if (!set) {
                refused++;
                read_whole();  // as the whole way reads
                model = want;
                continue;
            }
            BOOST_TEST(once, "an object twice: the whole way");
            BOOST_TEST(was_once, "an object twice at the last read: the whole way until one finds it once");
            said++;
            for (const kube::ObjectChange &c : set->objects) {
                if (std::optional<std::string> text = set->json_of(c)) {
                    model[c.key] = *text;
                } else {
                    model.erase(c.key);
                }
            }
            BOOST_TEST((model == want));
        }
    }
    BOOST_TEST_MESSAGE(said << " change sets said, " << refused << " times the whole way");
    BOOST_TEST(said > 150);
    BOOST_TEST(refused > 10);
}

BOOST_AUTO_TEST_SUITE_END()
