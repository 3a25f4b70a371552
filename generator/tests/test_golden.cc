// Golden tests: each testdata/NAME.in.yaml, read after testdata/gateway.yaml,
// rendered and compared byte for byte with NAME.http.conf, NAME.stream.conf
// and NAME.status.yaml beside it. A change to the output shows as a diff
// of those files: UPDATE_GOLDEN=1 (make golden) writes them afresh.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "parse/parse.h"
#include "render/render.h"
#include "resolve/resolve.h"

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

// What is compared, by the suffix of its golden file
std::vector<std::pair<std::string, std::string>> rendered(const fs::path &input)
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
    const g2n::Plan plan = g2n::resolve(m, o);
    return {{".http.conf", g2n::render_http_conf(plan, o)},
            {".stream.conf", g2n::render_stream_conf(plan, o)},
            {".status.yaml", g2n::render_status(plan, o)}};
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
    BOOST_TEST(cases >= 4u);
}

BOOST_AUTO_TEST_SUITE_END()
