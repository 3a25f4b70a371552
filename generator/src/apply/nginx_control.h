// apply: what touches the host or a running nginx. This file: the control
// socket between `gateway2nginx run` and the nginx it configures when the
// two run apart, each in a container of its own and as a user of its own
// (the nginx container holds no cluster credential): HTTP on a unix socket
// in the directory both share, served by `gateway2nginx supervise` beside
// nginx (libmicrohttpd) and asked by run (libcurl). Who may connect is
// what the socket's mode and group say: no token.
#pragma once

#include <functional>
#include <string>

namespace g2n {

// What a reload asked for over the socket came to, as reload_and_confirm
// says it: `failed` "" when nginx took the configuration (`done` says how),
// else why not, with nginx's own words in `refusal` when it said why.
// `unreachable`: nothing answered on the socket (no supervisor there yet).
struct ReloadOutcome {
    std::string failed, done, refusal;
    bool unreachable = false;

    static ReloadOutcome failure(std::string why, bool unreachable = false)
    {
        ReloadOutcome o;
        o.failed = std::move(why);
        o.unreachable = unreachable;
        return o;
    }
    static ReloadOutcome success(std::string how)
    {
        ReloadOutcome o;
        o.done = std::move(how);
        return o;
    }
};

// The supervisor's side: POST /reload starts nginx on OUTDIR, or reloads
// the one that runs, as `reload` does it; answered as JSON
// {"failed":..., "done":..., "refusal":...}. Requests are answered on the
// thread that calls run(), one at a time: nginx is that thread's alone.
class NginxControlServer {
public:
    // Listens at `path` (a stale socket there replaced), mode 0660: the
    // user and group of this process. Throws std::runtime_error when it
    // cannot.
    NginxControlServer(const std::string &path, std::function<ReloadOutcome()> reload);
    ~NginxControlServer();
    NginxControlServer(const NginxControlServer &) = delete;
    NginxControlServer &operator=(const NginxControlServer &) = delete;

    // poll() it for POLLIN, then run()
    int fd() const;
    // answers whatever is ready, without waiting for more
    void run();

    ReloadOutcome reload() const { return reload_(); }

private:
    std::string path_;
    std::function<ReloadOutcome()> reload_;
    void *daemon_;  // struct MHD_Daemon *
};

// run's side: POST /reload to the supervisor at `path`, waited for as long
// as nginx may take to load a configuration (kLongestReload).
ReloadOutcome reload_through(const std::string &path);

}  // namespace g2n
