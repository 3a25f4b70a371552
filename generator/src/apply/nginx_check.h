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
// With `running` (the configuration the nginx about to take this one
// serves; an empty path: an nginx about to start), the sockets of `dir` it
// does not hold must also be free to bind here, which nginx -t does not
// try (a reload or a start would fail on its bind()).
std::optional<std::string> nginx_refusal(const std::string &nginx, const std::filesystem::path &dir, bool quiet,
                                         const std::filesystem::path *running = nullptr);

// The first socket the configuration in `dir` listens on that the one in
// `running` (may be empty) does not, and that cannot be bound on this host now (another
// process holds it, or the address is not this host's): nginx's words for
// it, "bind() to ADDRESS:PORT failed (...)"; nullopt when there is none.
std::optional<std::string> unbindable_listen(const std::filesystem::path &dir, const std::filesystem::path &running);

// What nginx says in a line of its error log at `level` ("[emerg] "):
// the text after "PID#TID: ", with every `prefix` (the directory it ran
// on, "/.../") taken out, so that paths read relative to it; nullopt when
// the line is not of that level. nginx -t's refusals and a refused
// reload are read alike.
std::optional<std::string> nginx_log_words(const std::string &line, const char *level, const std::string &prefix);

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
