#include "render/listen.h"

namespace g2n {

void render_listen(nginx::Writer &w, const std::string &listen, const std::vector<nginx::Token> &params,
                   const Options &options)
{
    std::vector<std::string> addresses{listen};
    const std::string every_ipv4 = "0.0.0.0:";
    if (options.listen_ipv6_too && listen.compare(0, every_ipv4.size(), every_ipv4) == 0) {
        addresses.push_back("[::]:" + listen.substr(every_ipv4.size()));
    }
    for (const std::string &address : addresses) {
        std::vector<nginx::Token> args{nginx::Token::value(address)};
        args.insert(args.end(), params.begin(), params.end());
        w.directive("listen", args);
    }
}

}  // namespace g2n
