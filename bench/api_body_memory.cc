// What reading an upstream API body costs in memory (issue 35, finding 9):
// the peak resident size added while gtls::parse_api_update reads the body
// in FILE, against the body's own size. Prints "BODY_BYTES PEAK_ADDED_BYTES
// STATUS" (STATUS: 200 read, else the refusal's).
#include <sys/resource.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "gtls_upstream_api.h"

namespace {

long peak_kilobytes()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::cerr << "usage: api_body_memory FILE\n";
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    const long before = peak_kilobytes();
    int status = 200;
    size_t servers = 0;
    try {
        gtls::ApiUpdate update = gtls::parse_api_update(body);
        for (const gtls::UpstreamServers &u : update.upstreams) servers += u.servers.size();
    } catch (const gtls::ApiError &e) {
        status = e.status();
    }
    std::cout << body.size() << " " << (peak_kilobytes() - before) * 1024 << " " << status << " " << servers << "\n";
    return 0;
}
