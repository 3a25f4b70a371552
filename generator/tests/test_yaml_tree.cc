// The compact YAML tree the parse stage reads, and documents scanned on
// several threads: same objects, same first error, whatever the jobs.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"
#include "parse/yaml_tree.h"

using namespace g2n;

namespace {

YamlTree tree_of(const std::string &text) { return YamlTree::parse(text, "t.yaml", 0); }

// N routes with their Service, EndpointSlice and BackendTLSPolicy, as the
// benchmark writes them, behind one Gateway.
std::string many_documents(int n)
{
    std::ostringstream y;
    y << "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: c}\n"
         "spec: {controllerName: gateway2nginx.io/controller}\n---\n"
         "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: ns}\n"
         "spec:\n  gatewayClassName: c\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n---\n"
         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ca, namespace: ns}\ndata: {ca.crt: x}\n";
    for (int i = 0; i < n; i++) {
        std::string s = "svc-" + std::to_string(i);
        y << "---\napiVersion: v1\nkind: Service\nmetadata: {name: " << s << ", namespace: ns}\n"
          << "spec:\n  ports: [{name: https, port: 443}]\n"
          << "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
          << "metadata: {name: " << s << "-x, namespace: ns, labels: {kubernetes.io/service-name: " << s << "}}\n"
          << "ports: [{name: https, port: 8443}]\nendpoints: [{addresses: [\"10.0.0." << i % 250 << "\"]}]\n"
          << "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\n"
          << "metadata: {name: p-" << i << ", namespace: ns}\nspec:\n"
          << "  targetRefs: [{group: \"\", kind: Service, name: " << s << "}]\n"
          << "  validation:\n    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n"
          << "    hostname: " << s << ".example.com\n"
          << "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
          << "metadata: {name: r-" << i << ", namespace: ns}\nspec:\n  parentRefs: [{name: g}]\n"
          << "  rules:\n  - matches: [{path: {type: PathPrefix, value: /" << s << "}}]\n"
          << "    backendRefs: [{name: " << s << ", port: 443}]\n";
    }
    return y.str();
}

std::string error_with_jobs(const std::string &yaml, unsigned jobs)
{
    Manifests m;
    std::istringstream in(yaml);
    try {
        parse_stream(in, "in.yaml", &m, jobs);
    } catch (const InputError &e) {
        return e.what();
    }
    BOOST_FAIL("expected an InputError");
    return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(yaml_tree)

BOOST_AUTO_TEST_CASE(shapes_scalars_nulls_and_positions)
{
    YamlTree t = tree_of("a: 1\nb: [x, 'y']\nc:\nd: ~\ne: \"null\"\nf: {g: h}\na: 2\n");
    YamlNode root = t.root();
    BOOST_TEST(root.is_map());
    BOOST_TEST(root.get("a").scalar() == "1");  // the first of repeated keys
    BOOST_TEST(root.get("b").is_sequence());
    BOOST_TEST_REQUIRE(root.get("b").items().size() == 2u);
    BOOST_TEST(root.get("b").items()[1].scalar() == "y");
    BOOST_TEST(root.get("c").is_null());
    BOOST_TEST(root.get("d").is_null());
    BOOST_TEST(root.get("e").is_scalar());  // quoted: a string, not null
    BOOST_TEST(root.get("f").get("g").scalar() == "h");
    BOOST_TEST(!root.get("missing").defined());
    BOOST_TEST(!root.get("a").get("x").defined());  // a scalar has no fields
    BOOST_TEST(root.get("b").line() == 1);
    BOOST_TEST(root.get("b").column() == 3);
    BOOST_TEST_REQUIRE(root.entries().size() == 7u);
    BOOST_TEST(root.entries()[6].first.scalar() == "a");
    BOOST_TEST(root.entries()[6].second.scalar() == "2");
    BOOST_TEST(!tree_of("").root().defined());
    BOOST_TEST(!tree_of("# only a comment\n").root().defined());
}

BOOST_AUTO_TEST_CASE(aliases_are_refused_with_their_position)
{
    try {
        YamlTree::parse("base: &b {port: 443, name: https}\nports: [*b, *b]\n", "f.yaml", 10);
        BOOST_FAIL("an alias was accepted");
    } catch (const InputError &e) {
        BOOST_TEST(std::string(e.what()).find("f.yaml:12:9: invalid YAML: aliases (*name) are not accepted") == 0u,
                   e.what());
    }
    // an anchor alone is harmless
    BOOST_TEST(tree_of("base: &b {port: 443}\n").root().get("base").get("port").scalar() == "443");
}

// Finding 5 of issue 16: 2 KB of nested aliases took 800 MB and 8 s. A
// route of 100 aliased rules of 100 aliased matches, listed 100 times, is
// refused at its first alias: no tree, no objects.
BOOST_AUTO_TEST_CASE(an_alias_bomb_is_refused_at_its_first_alias)
{
    std::string yaml = "apiVersion: v1\nkind: List\nx-match: &m {path: {type: PathPrefix, value: /a}}\n"
                       "x-rule: &r {matches: [";
    for (int i = 0; i < 100; i++) yaml += std::string(i ? ", " : "") + "*m";
    yaml += "]}\nx-route: &route {apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, "
            "metadata: {name: r, namespace: ns}, spec: {parentRefs: [{name: gw}], rules: [";
    for (int i = 0; i < 100; i++) yaml += std::string(i ? ", " : "") + "*r";
    yaml += "]}}\nitems: [";
    for (int i = 0; i < 100; i++) yaml += std::string(i ? ", " : "") + "*route";
    yaml += "]\n";
    BOOST_TEST(yaml.size() < 3000u);
    g2n::Manifests m;
    std::istringstream in(yaml);
    try {
        g2n::parse_stream(in, "bomb.yaml", &m);
        BOOST_FAIL("the alias bomb was accepted");
    } catch (const InputError &e) {
        BOOST_TEST(std::string(e.what()).find("bomb.yaml:4:") == 0u, e.what());
    }
    BOOST_TEST(m.http_routes.empty());
}

BOOST_AUTO_TEST_CASE(invalid_yaml_names_the_line_from_the_offset)
{
    try {
        YamlTree::parse("a: [1,\n", "f.yaml", 10);
        BOOST_FAIL("no error");
    } catch (const InputError &e) {
        BOOST_TEST(std::string(e.what()).find("f.yaml:12:") == 0u, e.what());
    }
    BOOST_CHECK_THROW(YamlTree::parse("a: *nowhere\n", "f.yaml", 0), InputError);
}

BOOST_AUTO_TEST_CASE(scanning_on_threads_changes_nothing)
{
    std::string yaml = many_documents(300);
    std::string outputs[3];
    unsigned jobs[3] = {1, 2, 5};
    for (int k = 0; k < 3; k++) {
        Manifests m;
        std::istringstream in(yaml);
        parse_stream(in, "in.yaml", &m, jobs[k]);
        BOOST_TEST(m.http_routes.size() == 300u);
        BOOST_TEST(m.backend_tls_policies.size() == 300u);
        // positions count over the whole file: line 1 + 2 of the last route's document
        std::istringstream lines(yaml);
        std::string line;
        for (int i = 0; i < m.http_routes[299].meta.pos.line + 2 && std::getline(lines, line); i++) {}
        BOOST_TEST(line == "metadata: {name: r-299, namespace: ns}", "jobs " << jobs[k]);
        Plan plan = resolve(m, Options{});
        std::ostringstream status;
        render_status(status, plan, Options{});
        outputs[k] = render_http_conf(plan) + status.str();
    }
    BOOST_TEST(outputs[0].size() > 100000u);
    BOOST_TEST(outputs[1] == outputs[0]);
    BOOST_TEST(outputs[2] == outputs[0]);
}

BOOST_AUTO_TEST_CASE(the_first_error_in_input_order_wins_whatever_the_jobs)
{
    std::string good = many_documents(40);
    // a typed error early (in a Gateway: bad input as a whole), invalid
    // YAML later: the typed one is reported
    std::string typed = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: a}\nspec:\n"
                        "  gatewayClassName: ours\n  listeners: {port: 1}\n";
    std::string yaml = good + "---\n" + typed + "---\nkey: [unclosed\n---\n" + good;
    std::string expected = error_with_jobs(yaml, 1);
    BOOST_TEST(expected.find("spec.listeners: expected a list") != std::string::npos, expected);
    for (int round = 0; round < 20; round++) {
        BOOST_TEST(error_with_jobs(yaml, 3) == expected);
    }
    // and invalid YAML first: its line, counted over the whole file
    std::string yaml_first = good + "---\nkey: [unclosed\n---\n" + typed + "---\n" + good;
    std::string e = error_with_jobs(yaml_first, 4);
    BOOST_TEST(e == error_with_jobs(yaml_first, 1));
    BOOST_TEST(e.find("invalid YAML") != std::string::npos, e);
}

namespace {

// many_documents(n), a text per document
std::vector<std::pair<std::string, std::string>> one_text_each(int n)
{
    std::vector<std::pair<std::string, std::string>> texts;
    std::string yaml = many_documents(n) + "---\n";
    for (size_t at = 0, end; (end = yaml.find("---\n", at)) != std::string::npos; at = end + 4) {
        texts.emplace_back("<object " + std::to_string(texts.size()) + ">", yaml.substr(at, end - at));
    }
    return texts;
}

std::string rendered(const Manifests &m)
{
    Plan plan = resolve(m, Options{});
    std::ostringstream status;
    render_status(status, plan, Options{});
    return render_http_conf(plan) + status.str();
}

std::string error_of_texts(const std::vector<std::pair<std::string, std::string>> &texts, unsigned jobs)
{
    Manifests m;
    try {
        parse_texts(texts, &m, jobs);
    } catch (const InputError &e) {
        return e.what();
    }
    BOOST_FAIL("expected an InputError");
    return {};
}

}  // namespace

// A watch stream's objects, or a directory's files, are scanned together
// on the threads (not one small file at a time): the same objects, named
// by their own text, and the first error in input order.
BOOST_AUTO_TEST_CASE(many_texts_and_files_scanned_together_change_nothing)
{
    const std::vector<std::pair<std::string, std::string>> texts = one_text_each(150);
    BOOST_TEST_REQUIRE(texts.size() == 603u);
    std::string expected;
    {
        Manifests whole;
        std::istringstream in(many_documents(150));
        parse_stream(in, "in.yaml", &whole, 1);
        expected = rendered(whole);
    }
    DocumentCache cache;
    for (unsigned jobs : {1u, 2u, 5u}) {
        for (DocumentCache *c : {static_cast<DocumentCache *>(nullptr), &cache, &cache}) {
            Manifests m;
            parse_texts(texts, &m, jobs, c);
            BOOST_TEST(rendered(m) == expected, "jobs " << jobs);
            // each object's position is in its own text
            BOOST_TEST_REQUIRE(m.http_routes.size() == 150u);
            BOOST_TEST(m.http_routes[149].meta.pos.file() == "<object 602>");
            BOOST_TEST(m.http_routes[149].meta.pos.line == 1);
        }
    }
    BOOST_TEST(cache.size() == 603u);

    // a typed error in one object, invalid YAML in a later one: the first wins
    std::vector<std::pair<std::string, std::string>> bad = texts;
    bad[40].second = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: a}\nspec:\n"
                     "  gatewayClassName: ours\n  listeners: {port: 1}\n";
    bad[300].second = "key: [unclosed\n";
    const std::string first = error_of_texts(bad, 1);
    BOOST_TEST(first.find("<object 40>:") == 0u, first);
    BOOST_TEST(first.find("spec.listeners: expected a list") != std::string::npos, first);
    for (int round = 0; round < 10; round++) BOOST_TEST(error_of_texts(bad, 4) == first);
    bad[40] = texts[40];
    const std::string later = error_of_texts(bad, 4);
    BOOST_TEST((later.find("<object 300>:") == 0u && later.find("invalid YAML") != std::string::npos), later);

    // a directory of a file per object: read as the texts are
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("g2n-files-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "sub");
    for (size_t i = 0; i < texts.size(); i++) {
        char name[32];
        std::snprintf(name, sizeof name, "%s%04zu.yaml", i % 2 ? "sub/" : "", i);
        std::ofstream(dir / name) << texts[i].second;
    }
    for (unsigned jobs : {1u, 4u}) {
        Manifests m;
        parse_path(dir.string(), &m, jobs);
        BOOST_TEST(rendered(m) == expected, "jobs " << jobs);
    }
    std::ofstream(dir / "0000.yaml") << "key: [unclosed\n";
    Manifests m;
    BOOST_CHECK_EXCEPTION(parse_path(dir.string(), &m, 4), InputError, [&](const InputError &e) {
        const std::string what = e.what();
        return what.find((dir / "0000.yaml").string() + ":") == 0 && what.find("invalid YAML") != std::string::npos;
    });
    fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
