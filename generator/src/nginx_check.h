// nginx -t on a configuration gateway2nginx wrote: without a shell, and
// when run as root, as an unprivileged user.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace g2n {

// nginx -t (the binary `nginx`) on the configuration in `dir` (nginx.conf,
// paths relative to it); nullopt when nginx accepts it, else why not: its
// last error, paths relative to `dir`. `quiet`: nginx's own messages are
// not shown on stderr.
std::optional<std::string> nginx_refusal(const std::string &nginx, const std::filesystem::path &dir, bool quiet);

// Whether nginx on this host could listen on the IP address `address`
// (a socket binds to it; any port): a Gateway's static address.
bool address_is_local(const std::string &address);

}  // namespace g2n
