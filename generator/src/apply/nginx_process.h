// apply: what touches the host or a running nginx. This file: the nginx
// gateway2nginx run starts itself (--start-nginx), one process model for a
// container: nginx's master is run's child (daemon off), stopped gracefully
// when run is told to stop, and run ends when nginx does, so that whoever
// watches run (a kubelet) sees either of them fail.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

namespace g2n {

class NginxProcess {
public:
    // `nginx_version` as Options has it: from 1.19.5, nginx is told its
    // error log before it reads its configuration (-e), so that it writes
    // nothing outside OUTDIR (a read-only root filesystem)
    NginxProcess(std::string nginx, std::filesystem::path outdir, long nginx_version)
        : nginx_(std::move(nginx)), outdir_(std::move(outdir)), early_error_log_(nginx_version >= 1019005)
    {
    }

    // nginx -p OUTDIR/ -c nginx.conf -g "daemon off;", waited for until its
    // master has written its pid file (it has bound its listeners and
    // loaded the configuration): "" then, else why not.
    std::string start();
    bool started() const { return pid_ > 0; }
    // While it runs, true; once it has ended, false, and *how says how.
    bool running(std::string *how);
    // SIGQUIT: nginx stops accepting and ends once what is in flight is
    // done; waited for, `waiting` told every 10 s. How it ended.
    std::string stop(const std::function<void(const std::string &)> &waiting);
    // Once told to stop: nginx still accepts for `delay_ms` (less when
    // `cut_short()` says so; `meanwhile()` every 100 ms), then stop(), each
    // step told to `say`. How nginx ended.
    std::string accept_then_stop(long delay_ms, const std::function<bool()> &cut_short,
                                 const std::function<void()> &meanwhile,
                                 const std::function<void(const std::string &)> &say);

private:
    std::string nginx_;
    std::filesystem::path outdir_;
    bool early_error_log_;
    pid_t pid_ = 0;
};

}  // namespace g2n
