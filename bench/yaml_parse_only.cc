// The baseline of the generator benchmark: yaml-cpp's event API reading the
// same input and doing nothing with it (no node trees), the least any
// yaml-cpp based reader of the file must spend.
#include <fstream>
#include <iostream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace {

class Discard : public YAML::EventHandler {
public:
    size_t scalars = 0;

    void OnDocumentStart(const YAML::Mark &) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark &, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark &, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark &, const std::string &, YAML::anchor_t, const std::string &) override { scalars++; }
    void OnSequenceStart(const YAML::Mark &, const std::string &, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark &, const std::string &, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::cerr << "usage: yaml_parse_only FILE\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    YAML::Parser parser(in);
    Discard events;
    size_t documents = 0;
    while (parser.HandleNextDocument(events)) documents++;
    std::cout << documents << " documents, " << events.scalars << " scalars\n";
    return 0;
}
