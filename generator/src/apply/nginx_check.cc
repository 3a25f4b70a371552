#include "apply/nginx_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <stdexcept>
#include <vector>

#include "parse/parse.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

// Changes the owner of everything below `dir` (not following links).
void chown_tree(const fs::path &dir, uid_t uid, gid_t gid)
{
    if (::lchown(dir.c_str(), uid, gid) != 0) {
        throw std::runtime_error("cannot change the owner of " + dir.string() + ": " + std::strerror(errno));
    }
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
        if (::lchown(it->path().c_str(), uid, gid) != 0) {
            throw std::runtime_error("cannot change the owner of " + it->path().string() + ": " + std::strerror(errno));
        }
    }
}

// Becomes uid/gid with one capability left, CAP_NET_BIND_SERVICE, kept
// across execv as an ambient capability: nginx -t binds the listeners
// (ports 80 and 443 among them) and may do nothing else a root could.
bool drop_privileges(uid_t uid, gid_t gid)
{
    if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || ::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0
        || ::setuid(uid) != 0) {
        return false;
    }
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    data[0].effective = data[0].permitted = data[0].inheritable = 1u << CAP_NET_BIND_SERVICE;
    return ::syscall(SYS_capset, &header, data) == 0
           && ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0) == 0;
}

// Why nginx refuses a configuration, from the error log of nginx -t: its
// last error, with the checked directory's prefix taken off the paths.
std::string refusal_in_log(const fs::path &log, const std::string &prefix, int status)
{
    std::ifstream in(log);
    std::string last;
    for (std::string line; std::getline(in, line);) {
        for (const char *level : {"[emerg] ", "[alert] ", "[crit] "}) {
            if (std::optional<std::string> words = nginx_log_words(line, level, prefix)) {
                last = std::move(*words);
                break;
            }
        }
    }
    return last.empty() ? "nginx -t exited with status " + std::to_string(status) : last;
}

}  // namespace

std::optional<std::string> nginx_log_words(const std::string &line, const char *level, const std::string &prefix)
{
    const size_t at = line.find(level);
    if (at == std::string::npos) return std::nullopt;
    const size_t text = line.find(": ", at);  // after "PID#TID"
    std::string words = text == std::string::npos ? line.substr(at) : line.substr(text + 2);
    for (size_t p; !prefix.empty() && (p = words.find(prefix)) != std::string::npos;) words.erase(p, prefix.size());
    return words;
}

// Started with fork and execv: no shell ever sees a path. Run as root,
// the check runs as the unprivileged user nobody, on a copy of the
// configuration in a fresh directory under /tmp that belongs to that user
// (the output's own directory may be out of its reach): whatever the
// configuration makes nginx load runs without our privileges but binding
// ports. Rendered paths are relative to the prefix, so the copy checks
// what will be served. `quiet`: nginx's own messages are not shown.
// nginx -t itself, below
static std::optional<std::string> nginx_test(const std::string &nginx, const fs::path &staged, bool quiet);

namespace {

// bind() of a socket of `type` to HOST:PORT as nginx binds (SO_REUSEADDR,
// IPv6 only): 0, else its errno; -1 when HOST is not an IP address
int try_bind(const std::string &host, int port, int type)
{
    sockaddr_in v4{};
    sockaddr_in6 v6{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<uint16_t>(port));
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<uint16_t>(port));
    const bool is_v4 = inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1;
    if (!is_v4 && inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) != 1) return -1;
    const int fd = ::socket(is_v4 ? AF_INET : AF_INET6, type | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (!is_v4) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    const bool bound = is_v4 ? ::bind(fd, reinterpret_cast<sockaddr *>(&v4), sizeof v4) == 0
                             : ::bind(fd, reinterpret_cast<sockaddr *>(&v6), sizeof v6) == 0;
    const int error = bound ? 0 : errno;
    ::close(fd);
    return error;
}

// "ADDRESS:PORT" and "ADDRESS:PORT udp" of every listen directive in the
// .conf files of `dir` (as render writes them: one a line)
std::set<std::string> listens_in(const fs::path &dir)
{
    std::set<std::string> listens;
    if (dir.empty() || !fs::is_directory(dir)) return listens;
    static const std::regex listen(R"(^\s*listen\s+([^\s;]+)([^;]*);)");
    for (const fs::directory_entry &e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".conf") continue;
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line);) {
            std::smatch m;
            if (!std::regex_search(line, m, listen) || m[1].str().rfind("unix:", 0) == 0) continue;
            static const std::regex udp_flag(R"(\budp\b)");
            const bool udp = std::regex_search(m[2].str(), udp_flag);
            listens.insert(m[1].str() + (udp ? " udp" : ""));
        }
    }
    return listens;
}

}  // namespace

std::optional<std::string> unbindable_listen(const fs::path &dir, const fs::path &running)
{
    const std::set<std::string> held = listens_in(running);
    for (const std::string &listen : listens_in(dir)) {
        if (held.count(listen)) continue;  // the running nginx's socket, inherited on reload
        const bool udp = listen.size() > 4 && listen.compare(listen.size() - 4, 4, " udp") == 0;
        const std::string address = udp ? listen.substr(0, listen.size() - 4) : listen;
        const size_t colon = address.rfind(':');
        if (colon == std::string::npos) continue;
        std::string host = address.substr(0, colon);
        if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
        const int error = try_bind(host, std::atoi(address.c_str() + colon + 1), udp ? SOCK_DGRAM : SOCK_STREAM);
        if (error == EADDRINUSE || error == EADDRNOTAVAIL) {  // else nginx -t's to judge
            return "bind() to " + listen + " failed (" + std::to_string(error) + ": " + std::strerror(error)
                   + "), which nginx -t does not try";
        }
    }
    return std::nullopt;
}

std::optional<std::string> nginx_refusal(const std::string &nginx, const fs::path &staged, bool quiet,
                                         const fs::path *running)
{
    if (std::optional<std::string> refused = nginx_test(nginx, staged, quiet)) return refused;
    if (running == nullptr) return std::nullopt;
    return unbindable_listen(staged, *running);
}

static std::optional<std::string> nginx_test(const std::string &nginx, const fs::path &staged, bool quiet)
{
    const bool root = ::geteuid() == 0;
    uid_t uid = 65534;
    gid_t gid = 65534;
    fs::path dir = staged;
    if (root) {
        if (const struct passwd *pw = ::getpwnam("nobody")) {
            uid = pw->pw_uid;
            gid = pw->pw_gid;
        }
        std::string tmpl = (fs::temp_directory_path() / "gateway2nginx-check-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            throw std::runtime_error("cannot make a directory for nginx -t: " + std::string(std::strerror(errno)));
        }
        dir = tmpl;
        fs::copy(staged, dir, fs::copy_options::recursive);
        chown_tree(dir, uid, gid);
    }
    const std::string prefix = dir.string() + "/";
    std::vector<std::string> args{nginx, "-t", "-q", "-e", "logs/check.log", "-p", prefix, "-c", "nginx.conf"};
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cout.flush();
    std::cerr.flush();
    pid_t pid = ::fork();
    if (pid == 0) {
        if (quiet) {
            int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (null >= 0) ::dup2(null, STDERR_FILENO);  // dup2 clears close-on-exec on stderr
        }
        if (root && !drop_privileges(uid, gid)) {
            std::perror("gateway2nginx: cannot drop privileges for nginx -t");
            ::_exit(127);
        }
        ::execv(argv[0], argv.data());
        std::fprintf(stderr, "gateway2nginx: cannot run %s: %s\n", printable(nginx).c_str(), std::strerror(errno));
        ::_exit(127);
    }
    int status = 0;
    bool ok = pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::optional<std::string> refusal;
    if (!ok) {
        refusal = refusal_in_log(dir / "logs" / "check.log", prefix, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    std::error_code ec;
    if (root) {
        fs::remove_all(dir, ec);
    } else {
        // what nginx -t opened and made in the configuration's own logs/ and
        // temp/ is not left to the nginx that runs it: when that nginx runs
        // as another user (--nginx-control), it makes them its own
        for (const char *made : {"logs", "temp"}) {
            for (const fs::directory_entry &e : fs::directory_iterator(dir / made, ec)) fs::remove_all(e.path(), ec);
        }
    }
    return refusal;
}

NginxBuild nginx_build_from(const std::string &text)
{
    // configure's arguments hold no spaces in a value nginx could use as a path
    auto option = [&](const std::string &name) -> std::optional<std::string> {
        for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
            if (at != 0 && text[at - 1] != ' ') continue;
            size_t end = text.find_first_of(" \n", at);
            return text.substr(at + name.size(), end == std::string::npos ? std::string::npos : end - at - name.size());
        }
        return std::nullopt;
    };
    NginxBuild build;
    if (std::optional<std::string> modules = option("--modules-path=")) {
        build.modules_path = *modules;
    } else {
        build.modules_path = option("--prefix=").value_or("/usr/local/nginx") + "/modules";
    }
    build.stream_dynamic = option("--with-stream=").value_or("") == "dynamic";
    const std::string marker = "nginx version: nginx/";
    if (size_t at = text.find(marker); at != std::string::npos) {
        unsigned major = 0, minor = 0, patch = 0;
        if (std::sscanf(text.c_str() + at + marker.size(), "%u.%u.%u", &major, &minor, &patch) == 3 && major < 100
            && minor < 1000 && patch < 1000) {
            build.version = major * 1000000L + minor * 1000L + patch;
        }
    }
    return build;
}

void follow_nginx_build(const NginxBuild &build, Options *options)
{
    options->stream_module = build.stream_dynamic ? build.modules_path + "/ngx_stream_module.so" : "";
    if (build.version != 0) options->nginx_version = build.version;
}

std::optional<NginxBuild> nginx_build(const std::string &nginx)
{
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
    std::cout.flush();
    std::cerr.flush();
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(out[1], STDERR_FILENO);  // nginx -V prints to stderr
        char *argv[] = {const_cast<char *>(nginx.c_str()), const_cast<char *>("-V"), nullptr};
        ::execv(argv[0], argv);
        ::_exit(127);
    }
    ::close(out[1]);
    std::string text;
    char buf[4096];
    // read to the end (a child blocked on a full pipe would never exit),
    // keeping the first MiB
    for (ssize_t n; pid > 0 && (n = ::read(out[0], buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        if (text.size() < (1 << 20)) text.append(buf, static_cast<size_t>(n));
    }
    ::close(out[0]);
    int status = 0;
    bool ok = pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok || text.find("nginx version: ") == std::string::npos) return std::nullopt;
    return nginx_build_from(text);
}

bool host_address_is_local(const std::string &address) { return try_bind(address, 0, SOCK_DGRAM) == 0; }

}  // namespace g2n
