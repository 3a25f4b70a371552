#include "apply/reload.h"
#include "apply/nginx_check.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace g2n {

namespace {

std::string pids_text(const std::set<long> &pids)
{
    std::string text;
    for (long p : pids) text += (text.empty() ? "" : " ") + std::to_string(p);
    return text;
}

// /proc/PID/stat, "" when the process is gone: one reaped between the
// listing and the read fails the read with ESRCH, which an ifstream throws.
std::string proc_stat(const fs::path &path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

}  // namespace

std::set<long> children_of(long parent)
{
    std::set<long> children;
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
        const fs::directory_entry &entry = *it;
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = proc_stat(entry.path() / "stat");
        const size_t paren = stat.rfind(')');
        if (paren == std::string::npos) continue;
        std::istringstream rest(stat.substr(paren + 1));
        std::string state;
        long ppid = 0;
        if (rest >> state >> ppid && ppid == parent) children.insert(std::stol(name));
    }
    return children;
}

long read_pid(const std::string &pidfile)
{
    std::ifstream in(pidfile);
    long pid = 0;
    return (in >> pid) && pid > 0 ? pid : 0;
}

// SIGHUP, then new workers (the master's children that were not there
// before): nginx took the configuration. However long the reload takes:
// nginx says in its error log when it refuses one ([emerg]), and a master
// that is gone took nothing. "" when it did.
std::string reload_and_confirm(const std::string &pidfile, const std::string &error_log, std::string *done,
                               std::string *refusal)
{
    const long master = read_pid(pidfile);
    if (master == 0) return "no nginx to reload (" + pidfile + ")";
    const std::set<long> before = children_of(master);
    std::error_code ec;
    const uintmax_t logged = fs::exists(error_log, ec) ? fs::file_size(error_log, ec) : 0;
    const std::string prefix = fs::path(error_log).parent_path().parent_path().string() + "/";
    if (::kill(static_cast<pid_t>(master), SIGHUP) != 0) {
        return "cannot signal nginx " + std::to_string(master) + ": " + std::strerror(errno);
    }
    const auto start = std::chrono::steady_clock::now();
    auto waited = [&start] {
        return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count();
    };
    for (int round = 0;; round++) {
        std::set<long> fresh;
        for (long p : children_of(master)) {
            if (!before.count(p)) fresh.insert(p);
        }
        if (!fresh.empty()) {
            *done = "nginx reloaded: workers " + pids_text(before) + " -> " + pids_text(fresh)
                    + (waited() >= 15 ? " (after " + std::to_string(waited()) + " s)" : "");
            return "";
        }
        if (::kill(static_cast<pid_t>(master), 0) != 0) {
            return "nginx " + std::to_string(master) + " is gone: it took no configuration";
        }
        if (round % 20 == 0) {
            // what nginx logged since the signal: a refusal ends the wait
            std::ifstream in(error_log, std::ios::binary);
            in.seekg(static_cast<std::streamoff>(logged));
            for (std::string line; std::getline(in, line);) {
                if (std::optional<std::string> words = nginx_log_words(line, "[emerg] ", prefix)) {
                    if (refusal != nullptr) *refusal = std::move(*words);
                    return "nginx " + std::to_string(master) + " refused the configuration and serves the previous "
                           "one: " + line.substr(line.find("[emerg]"));
                }
            }
        }
        if (waited() >= kLongestReload) {
            return "nginx " + std::to_string(master) + " started no new workers within "
                   + std::to_string(kLongestReload) + " s and said nothing of it (" + error_log + ")";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace g2n
