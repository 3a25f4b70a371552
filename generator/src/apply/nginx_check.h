// apply: nginx -t on a configuration gateway2nginx wrote (without a shell,
// and when run as root, as an unprivileged user), and nginx -V.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "plan.h"

namespace g2n {

// nginx -t (the binary `nginx`) on the configuration in `dir` (nginx.conf,
// paths relative to it); nullopt when nginx accepts it, else why not: its
// last error, paths relative to `dir`. `quiet`: nginx's own messages are
// not shown on stderr.
std::optional<std::string> nginx_refusal(const std::string &nginx, const std::filesystem::path &dir, bool quiet);

// How an nginx binary was built, from what `nginx -V` prints.
struct NginxBuild {
    std::string modules_path;  // --modules-path, else PREFIX/modules
    bool stream_dynamic = false;  // --with-stream=dynamic: load_module its .so
    long version = 0;             // nginx/1.26.3 is 1026003; 0 when not said
};
NginxBuild nginx_build_from(const std::string &version_text);
// `nginx -V` of the binary `nginx`; nullopt when it cannot be run.
std::optional<NginxBuild> nginx_build(const std::string &nginx);
// Options for the nginx so built: its stream module's path and its version
// (the caller decides the module directory).
void follow_nginx_build(const NginxBuild &build, Options *options);

}  // namespace g2n
