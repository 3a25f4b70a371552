// Golden tests: each testdata/NAME.in.yaml, read after testdata/gateway.yaml,
// rendered and compared byte for byte with NAME.http.conf, NAME.stream.conf
// and NAME.status.yaml beside it (and NAME.route-tables.json with --routes
// table), with the options its "# options:" line
// names; refusals in its status only where a "# refusals:" line says why. A change to the output shows as a diff of those files:
// UPDATE_GOLDEN=1 (make golden) writes them afresh.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

const fs::path kTestdata = fs::path(__FILE__).parent_path() / "testdata";

std::string read_file(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// What a case asks of the options, named in a line "# options: NAME ..."
// of its input
const std::map<std::string, void (*)(g2n::Options *)> kCaseOptions = {
    // as gateway2nginx run renders: upstreams in zones the API changes
    {"upstream-api", [](g2n::Options *o) { o->upstream_api = "127.0.0.1:9114"; }},
    // for the nginx of Debian 13 (1.26): HTTP/2 by "http2 on", not the module
    {"nginx-1.26", [](g2n::Options *o) { o->nginx_version = 1026003; }},
    // --routes table: and what route-tables.json fills the tables with
    {"route-tables", [](g2n::Options *o) { o->routes = "table"; }},
    // --spare-backends 2: spare upstreams, two that take TLS, two plaintext
    {"spare-backends", [](g2n::Options *o) { o->spare_backends = 2; }},
};

// The rest of a case's header line (the comments its input begins with)
// that begins with KEY ("# options:"); none when there is no such line
std::optional<std::string> header_line(const fs::path &input, const std::string &key)
{
    std::ifstream in(input);
    for (std::string line; std::getline(in, line) && line.rfind("#", 0) == 0;) {
        if (line.rfind(key, 0) == 0) return line.substr(key.size());
    }
    return std::nullopt;
}

void apply_case_options(const fs::path &input, g2n::Options *o)
{
    std::istringstream names(header_line(input, "# options:").value_or(""));
    for (std::string name; names >> name;) {
        auto option = kCaseOptions.find(name);
        BOOST_TEST_REQUIRE((option != kCaseOptions.end()), input << ": no case option " << name);
        option->second(o);
    }
}

// What is compared, by the suffix of its golden file
std::vector<std::pair<std::string, std::string>> rendered(const fs::path &input, bool dual_stack = false)
{
    g2n::Manifests m;
    for (const fs::path &file : {kTestdata / "gateway.yaml", input}) {
        std::ifstream in(file);
        BOOST_TEST_REQUIRE(in.good(), "cannot read " << file);
        g2n::parse_stream(in, file.filename().string(), &m);
    }
    g2n::Options o;
    o.instance = "golden";
    o.instance_kept = false;
    o.listen_ipv6_too = dual_stack;
    apply_case_options(input, &o);
    const g2n::Plan plan = g2n::resolve(m, o);
    std::vector<std::pair<std::string, std::string>> out = {{".http.conf", g2n::render_http_conf(plan, o)},
                                                            {".stream.conf", g2n::render_stream_conf(plan, o)},
                                                            {".status.yaml", g2n::render_status(plan, o)}};
    if (o.routes == "table") out.emplace_back(".route-tables.json", g2n::render_route_tables(plan, o));
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(golden)

BOOST_AUTO_TEST_CASE(every_case_renders_as_its_golden_files)
{
    const bool update = std::getenv("UPDATE_GOLDEN") != nullptr;
    size_t cases = 0;
    for (const fs::directory_entry &entry : fs::directory_iterator(kTestdata)) {
        const std::string name = entry.path().filename().string();
        const std::string suffix = ".in.yaml";
        if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
            continue;
        }
        cases++;
        const std::string stem = name.substr(0, name.size() - suffix.size());
        for (const auto &[ext, text] : rendered(entry.path())) {
            if (ext == ".status.yaml") {
                // a case shows refusals exactly when a "# refusals:" line says which
                const bool said = header_line(entry.path(), "# refusals:").has_value();
                const size_t refused = g2n_test::refusals_in(text);
                BOOST_TEST((refused > 0) == said, name << ": " << refused << " condition(s) refused; a \"# refusals:\" line "
                                                       << (said ? "says some" : "would say so"));
            }
            const fs::path golden = kTestdata / (stem + ext);
            if (update) {
                std::ofstream(golden, std::ios::binary) << text;
                continue;
            }
            BOOST_TEST_CONTEXT(golden.string() << " (UPDATE_GOLDEN=1 writes it afresh)")
            {
                BOOST_TEST_REQUIRE(fs::exists(golden));
                BOOST_TEST(text == read_file(golden));
            }
        }
    }
    BOOST_TEST(cases >= 16u);
}

// nginx decodes $uri ("%0D%0A" becomes a line break): written into a
// response field (return's Location, add_header) it would end the field
// and start one of the client's choosing. No case writes it there.
BOOST_AUTO_TEST_CASE(no_response_field_holds_what_nginx_decoded)
{
    const std::regex writes_field(R"(^\s*(return|add_header)\s)");
    const std::regex decoded(R"(\$\{?(uri|document_uri|request_filename)\b)");
    size_t lines = 0;
    for (const fs::directory_entry &entry : fs::directory_iterator(kTestdata)) {
        const std::string name = entry.path().filename().string();
        if (name.size() < 10 || name.compare(name.size() - 10, 10, ".http.conf") != 0) continue;
        std::istringstream text(read_file(entry.path()));
        for (std::string line; std::getline(text, line);) {
            if (!std::regex_search(line, writes_field)) continue;
            lines++;
            BOOST_TEST(!std::regex_search(line, decoded), name << ": " << line);
        }
    }
    BOOST_TEST(lines > 100u);
}

// --listen-address 0.0.0.0 --listen-address ::: every listen directive of
// a listener on every IPv4 address, in every case, http and stream, has
// its twin on every IPv6 address, the same parameters, and nothing else
// changes.
BOOST_AUTO_TEST_CASE(dual_stack_listens_twice_wherever_every_address_is)
{
    size_t twins = 0;
    for (const fs::directory_entry &entry : fs::directory_iterator(kTestdata)) {
        const std::string name = entry.path().filename().string();
        if (name.size() <= 8 || name.compare(name.size() - 8, 8, ".in.yaml") != 0) continue;
        const auto single = rendered(entry.path()), dual = rendered(entry.path(), true);
        for (size_t i = 0; i < single.size(); i++) {
            BOOST_TEST_CONTEXT(name << single[i].first)
            {
                std::istringstream lines(single[i].second);
                std::string expected;
                for (std::string line; std::getline(lines, line);) {
                    expected += line + "\n";
                    const size_t at = line.find("listen 0.0.0.0:");
                    BOOST_TEST(line.find("[::]") == std::string::npos);
                    if (at == std::string::npos) continue;
                    // (a token with brackets is quoted, as nginx reads it alike)
                    const size_t port_end = line.find_first_not_of("0123456789", at + 15);
                    expected += line.substr(0, at) + "listen \"[::]:" + line.substr(at + 15, port_end - at - 15) + "\""
                                + line.substr(port_end) + "\n";
                    twins++;
                }
                if (dual[i].second != expected) {
                    size_t at = 0;
                    while (at < expected.size() && at < dual[i].second.size() && expected[at] == dual[i].second[at]) at++;
                    BOOST_ERROR("differs at " << at << ": " << dual[i].second.substr(at > 80 ? at - 80 : 0, 200)
                                << "\n--- expected: " << expected.substr(at > 80 ? at - 80 : 0, 200));
                }
            }
        }
    }
    BOOST_TEST(twins >= 10u, twins << " listens on every address");
}

BOOST_AUTO_TEST_SUITE_END()
