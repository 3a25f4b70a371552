// The baseline of the generator benchmark: yaml-cpp parsing the same input
// and doing nothing else.
#include <fstream>
#include <iostream>

#include <yaml-cpp/yaml.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::cerr << "usage: yaml_parse_only FILE\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    std::vector<YAML::Node> docs = YAML::LoadAll(in);
    std::cout << docs.size() << " documents\n";
    return 0;
}
