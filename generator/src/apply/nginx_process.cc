#include "apply/nginx_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "apply/reload.h"
#include "parse/parse.h"

namespace g2n {

namespace {

std::string how_it_ended(int status)
{
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + ::strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

}  // namespace

std::string NginxProcess::start()
{
    const std::string prefix = outdir_.string() + "/";
    std::vector<std::string> args{nginx_, "-p", prefix, "-c", "nginx.conf", "-g", "daemon off;"};
    if (early_error_log_) args.insert(args.end(), {"-e", "logs/error.log"});
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::error_code ec;
    std::filesystem::remove(outdir_ / "nginx.pid", ec);  // a stale one names nothing of ours
    std::cout.flush();
    std::cerr.flush();
    const pid_t pid = ::fork();
    if (pid < 0) return std::string("cannot start nginx: fork: ") + std::strerror(errno);
    if (pid == 0) {
        // its own process group: a terminal's ^C is run's to pass on
        ::setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execv(argv[0], argv.data());
        std::fprintf(stderr, "gateway2nginx: cannot run %s: %s\n", printable(nginx_).c_str(), std::strerror(errno));
        ::_exit(127);
    }
    pid_ = pid;
    // as long as loading its configuration takes (10,000 routes: seconds)
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kLongestReload);
    while (read_pid((outdir_ / "nginx.pid").string()) != pid) {
        std::string how;
        if (!running(&how)) return "nginx ended before it served (" + how + "); its messages are above";
        if (std::chrono::steady_clock::now() > deadline) return "nginx wrote no pid file in " + std::to_string(kLongestReload) + " s";
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
}

bool NginxProcess::running(std::string *how)
{
    if (pid_ <= 0) return false;
    // as a container's first process, run is also the parent of whatever
    // nginx leaves behind (workers outliving their master): reaped too
    for (;;) {
        int status = 0;
        const pid_t got = ::waitpid(-1, &status, WNOHANG);
        if (got == 0) return true;
        if (got < 0) {
            *how = std::string("waitpid: ") + std::strerror(errno);
            break;
        }
        if (got == pid_) {
            *how = how_it_ended(status);
            break;
        }
    }
    pid_ = 0;
    return false;
}

std::string NginxProcess::stop(const std::function<void(const std::string &)> &waiting)
{
    std::string how;
    if (!running(&how)) return how.empty() ? "not running" : how;
    ::kill(pid_, SIGQUIT);
    auto next_word = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (running(&how)) {
        if (std::chrono::steady_clock::now() > next_word) {
            waiting("nginx still finishes what is in flight");
            next_word += std::chrono::seconds(10);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return how;
}

std::string NginxProcess::accept_then_stop(long delay_ms, const std::function<bool()> &cut_short,
                                           const std::function<void()> &meanwhile,
                                           const std::function<void(const std::string &)> &say)
{
    std::string how;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms);
    while (std::chrono::steady_clock::now() < until && !cut_short() && running(&how)) {
        meanwhile();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!how.empty()) {
        say("nginx ended (" + how + ")");
        return how;
    }
    say("stopping nginx: it finishes what is in flight");
    how = stop(say);
    say("nginx stopped (" + how + ")");
    return how;
}

}  // namespace g2n
