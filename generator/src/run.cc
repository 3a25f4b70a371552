#include "run.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "gtls_upstream_api.h"
#include "nginx_check.h"
#include "output.h"
#include "render.h"
#include "resolve.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

void say(const std::string &what)
{
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::cerr << "gateway2nginx: " << stamp << " " << printable(what) << std::endl;
}

std::string sha256(const std::string &text)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
        throw std::runtime_error("SHA-256 failed");
    }
    return std::string(reinterpret_cast<const char *>(digest), len);
}

// What a reload would change: every file nginx reads, with the servers of
// replaceable upstreams left out (a cryptographic digest: tenants write
// what goes into it).
std::string skeleton_digest(const Plan &plan, const Options &options)
{
    Options skeleton = options;
    skeleton.endpoint_skeleton = true;
    std::string text = render_nginx_conf(plan, skeleton);
    text += "\n\x01http\n" + render_http_conf(plan, skeleton) + "\n\x01stream\n" + render_stream_conf(plan);
    for (const OutputFile &f : plan.files) text += "\n\x01" + f.path + " " + std::to_string(f.mode) + "\n" + f.content;
    return sha256(text);
}

std::map<std::string, std::string> replaceable_servers(const Plan &plan, const Options &options)
{
    std::map<std::string, std::string> servers;
    if (options.upstream_api == "off") return servers;
    for (const Upstream &u : plan.upstreams) {
        if (api_replaceable(u)) servers[u.name] = upstream_servers_api_json(u);
    }
    return servers;
}

// ---- nginx: the API, and reloads -----------------------------------------

// PUT `body` to gateway_tls_upstream_api at `listen`; "" on 200, else why not.
std::string push_servers(const std::string &listen, const std::string &body)
{
    gtls::UpstreamServer api;
    try {
        api = gtls::parse_server_address(listen, "--upstream-api");
    } catch (const gtls::ApiError &e) {
        return e.what();
    }
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (api.family == 6) {
        auto *v6 = reinterpret_cast<sockaddr_in6 *>(&ss);
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(api.port);
        std::memcpy(&v6->sin6_addr, api.ip.data(), 16);
        len = sizeof *v6;
    } else {
        auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
        v4->sin_family = AF_INET;
        v4->sin_port = htons(api.port);
        std::memcpy(&v4->sin_addr, api.ip.data(), 4);
        len = sizeof *v4;
    }
    int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&ss), len) != 0) {
        ::close(fd);
        return "cannot connect to " + listen + ": " + std::strerror(errno);
    }
    if (fd < 0) return std::string("socket: ") + std::strerror(errno);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const std::string request = "PUT /upstreams HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    for (size_t sent = 0; sent < request.size();) {
        ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            ::close(fd);
            return std::string("cannot send to the upstream API: ") + std::strerror(errno);
        }
        sent += static_cast<size_t>(n);
    }
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
    ::close(fd);
    if (reply.rfind("HTTP/1.1 200 ", 0) == 0) return "";
    const size_t body_at = reply.find("\r\n\r\n");
    return "the upstream API answered " + reply.substr(0, reply.find("\r\n"))
           + (body_at != std::string::npos ? ": " + reply.substr(body_at + 4) : "");
}

long read_pid(const std::string &pidfile)
{
    std::ifstream in(pidfile);
    long pid = 0;
    return (in >> pid) && pid > 0 ? pid : 0;
}

std::set<long> children_of(long parent)
{
    std::set<long> children;
    for (const auto &entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const size_t paren = stat.rfind(')');
        if (paren == std::string::npos) continue;
        std::istringstream rest(stat.substr(paren + 1));
        std::string state;
        long ppid = 0;
        if (rest >> state >> ppid && ppid == parent) children.insert(std::stol(name));
    }
    return children;
}

std::string pids_text(const std::set<long> &pids)
{
    std::string text;
    for (long p : pids) text += (text.empty() ? "" : " ") + std::to_string(p);
    return text;
}

// SIGHUP, then new workers (the master's children that were not there
// before) within 15 s: nginx took the configuration. "" when it did.
std::string reload_and_confirm(const std::string &pidfile)
{
    const long master = read_pid(pidfile);
    if (master == 0) return "no nginx to reload (" + pidfile + ")";
    const std::set<long> before = children_of(master);
    if (::kill(static_cast<pid_t>(master), SIGHUP) != 0) {
        return "cannot signal nginx " + std::to_string(master) + ": " + std::strerror(errno);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
        std::set<long> now = children_of(master);
        std::set<long> fresh;
        for (long p : now) {
            if (!before.count(p)) fresh.insert(p);
        }
        if (!fresh.empty()) {
            say("nginx reloaded: workers " + pids_text(before) + " -> " + pids_text(fresh));
            return "";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "nginx " + std::to_string(master) + " started no new workers within 15 s: it still serves the previous "
           "configuration (its error log says why)";
}

// ---- inputs ----------------------------------------------------------------

// The objects a watch-event stream holds now, by kind, namespace and name.
class WatchedObjects {
public:
    // One event ({"type": ..., "object": {...}}); false when it is not one.
    bool apply(const std::string &event_text, std::string *why)
    {
        try {
            YAML::Node event = YAML::Load(event_text);
            const std::string type = event["type"] ? event["type"].as<std::string>() : "";
            YAML::Node object = event["object"];
            if (type == "BOOKMARK") return true;
            if (type == "ERROR" || !object || !object.IsMap()) {
                *why = "watch event " + (type.empty() ? std::string("without a type") : type);
                return false;
            }
            const std::string key = value(object, "apiVersion") + "/" + value(object, "kind") + "/"
                                    + value(object["metadata"], "namespace") + "/" + value(object["metadata"], "name");
            if (type == "DELETED") {
                objects_.erase(key);
            } else if (type == "ADDED" || type == "MODIFIED") {
                objects_[key] = YAML::Dump(object);
            } else {
                *why = "unknown watch event type " + type;
                return false;
            }
            return true;
        } catch (const YAML::Exception &e) {
            *why = std::string("a watch event is not JSON: ") + e.what();
            return false;
        }
    }

    void read(Manifests *out, unsigned jobs) const
    {
        std::string all;
        for (const auto &entry : objects_) all += "---\n" + entry.second + "\n";
        std::istringstream in(all);
        parse_stream(in, "<watch events>", out, jobs);
    }

private:
    static std::string value(const YAML::Node &node, const char *key)
    {
        return node && node.IsMap() && node[key] && node[key].IsScalar() ? node[key].as<std::string>() : "";
    }

    std::map<std::string, std::string> objects_;
};

void watch_paths(int inotify, const std::vector<std::string> &inputs)
{
    const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB;
    for (const std::string &input : inputs) {
        if (input == "-") continue;
        std::error_code ec;
        if (fs::is_directory(input, ec)) {
            inotify_add_watch(inotify, input.c_str(), mask);
            for (auto it = fs::recursive_directory_iterator(input, ec); !ec && it != fs::recursive_directory_iterator();
                 it.increment(ec)) {
                if (it->is_directory(ec)) inotify_add_watch(inotify, it->path().c_str(), mask);
            }
        } else {
            fs::path parent = fs::path(input).parent_path();
            inotify_add_watch(inotify, parent.empty() ? "." : parent.c_str(), mask);
        }
    }
}

// ---- applying ----------------------------------------------------------------

class RunningGateway {
public:
    explicit RunningGateway(const Args &args) : args_(args)
    {
        outdir_ = fs::absolute(args.outdir).lexically_normal();
        if (outdir_.filename().empty()) outdir_ = outdir_.parent_path();
        staged_ = outdir_.parent_path() / ("." + outdir_.filename().string() + ".new-" + std::to_string(::getpid()));
    }

    void apply(const std::function<void(Manifests *)> &read)
    {
        Manifests manifests;
        try {
            read(&manifests);
        } catch (const InputError &e) {
            say(std::string("bad input, nothing changed: ") + e.what());
            return;
        }
        try {
            Plan plan = resolve(manifests, args_.options);
            const std::string skeleton = skeleton_digest(plan, args_.options);
            std::map<std::string, std::string> servers = replaceable_servers(plan, args_.options);
            if (applied_ && skeleton == skeleton_) {
                apply_servers(plan, servers);
            } else {
                apply_configuration(manifests, std::move(plan));
            }
        } catch (const std::exception &e) {
            std::error_code ec;
            fs::remove_all(staged_, ec);
            say(std::string("error, nothing changed: ") + e.what());
        }
    }

private:
    // Same configuration but for servers: push what changed, then OUTDIR
    // (and status.yaml) catches up, with no reload.
    void apply_servers(const Plan &plan, const std::map<std::string, std::string> &servers)
    {
        std::string body;
        size_t changed = 0;
        for (const auto &[name, json] : servers) {
            auto it = servers_.find(name);
            if (it != servers_.end() && it->second == json) continue;
            body += std::string(body.empty() ? "" : ",") + gtls::json_string(name) + ":{\"servers\":" + json + "}";
            changed++;
        }
        if (changed > 0) {
            if (std::string failed = push_servers(args_.options.upstream_api, "{\"upstreams\":{" + body + "}}");
                !failed.empty()) {
                say("pushing servers failed (" + failed + "): reloading instead");
                applied_ = false;
                Manifests none;
                apply_configuration(none, Plan(plan), /*can_isolate=*/false);
                return;
            }
            servers_ = servers;
            say("servers of " + std::to_string(changed) + " upstream(s) pushed to nginx, no reload");
        }
        const std::string status = sha256(render_status(plan, args_.options));
        if (changed == 0 && status == status_) {
            say("no change to the configuration or the status");
            return;
        }
        write_configuration(plan, args_.options, staged_, false);
        replace_dir(staged_, outdir_);
        status_ = status;
    }

    void apply_configuration(const Manifests &manifests, Plan plan, bool can_isolate = true)
    {
        write_configuration(plan, args_.options, staged_, false);
        if (std::optional<std::string> refusal = nginx_refusal(args_.nginx, staged_, false)) {
            std::optional<Plan> isolated =
                can_isolate ? stage_without_refused(manifests, *refusal, args_, staged_) : std::nullopt;
            if (!isolated) {
                fs::remove_all(staged_);
                say("nginx -t refuses the configuration; nginx keeps the one it runs");
                return;
            }
            plan = std::move(*isolated);
        }
        for (const std::string &w : plan.warnings) say("warning: " + w);
        const std::string skeleton = skeleton_digest(plan, args_.options);
        if (applied_ && skeleton == skeleton_) {
            // what nginx runs already (the objects nginx refuses are left out again)
            replace_dir(staged_, outdir_);
            status_ = sha256(render_status(plan, args_.options));
            say("the configuration nginx runs is unchanged, no reload");
            return;
        }
        replace_dir(staged_, outdir_);
        status_ = sha256(render_status(plan, args_.options));
        if (read_pid(args_.reload_pidfile) == 0) {
            say("configuration written; no nginx is running on it yet");
        } else if (std::string failed = reload_and_confirm(args_.reload_pidfile); !failed.empty()) {
            say(failed);
            applied_ = false;  // the next change reloads again
            return;
        }
        applied_ = true;
        skeleton_ = skeleton;
        servers_ = replaceable_servers(plan, args_.options);
    }

    const Args &args_;
    fs::path outdir_, staged_;
    bool applied_ = false;
    std::string skeleton_, status_;
    std::map<std::string, std::string> servers_;
};

}  // namespace

size_t json_value_end(const std::string &text, size_t from)
{
    size_t i = from;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) i++;
    if (i >= text.size()) return std::string::npos;
    int depth = 0;
    bool in_string = false;
    for (; i < text.size(); i++) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '{' || c == '[') depth++;
        else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
        else if (depth == 0 && std::isspace(static_cast<unsigned char>(c))) return i;  // a bare scalar
    }
    return std::string::npos;
}

int run_gateway(const Args &args)
{
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);

    RunningGateway gateway(args);
    WatchedObjects watched;
    auto read = [&](Manifests *m) {
        if (args.watch_events) {
            watched.read(m, args.jobs);
        } else {
            for (const std::string &input : args.inputs) parse_path(input, m, args.jobs);
        }
    };

    int inotify = -1;
    if (!args.watch_events) {
        inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (inotify < 0) {
            std::cerr << "gateway2nginx: inotify: " << std::strerror(errno) << "\n";
            return 1;
        }
        watch_paths(inotify, args.inputs);
        say("watching " + std::to_string(args.inputs.size()) + " input(s); applying what they hold");
        gateway.apply(read);
    } else {
        ::fcntl(0, F_SETFL, ::fcntl(0, F_GETFL) | O_NONBLOCK);
        say("reading watch events on standard input");
    }

    using clock = std::chrono::steady_clock;
    bool dirty = false, eof = false;
    clock::time_point last_event{};
    std::string pending;  // watch-event bytes not yet a whole event
    while (!g_stop) {
        pollfd fd{args.watch_events ? 0 : inotify, POLLIN, 0};
        int timeout = 1000;
        if (dirty) {
            auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - last_event).count();
            timeout = static_cast<int>(std::max<long>(0, args.debounce_ms - quiet));
        }
        int n = eof ? 0 : ::poll(&fd, 1, timeout);
        if (n > 0) {
            char buf[65536];
            ssize_t got = ::read(fd.fd, buf, sizeof buf);
            if (got > 0) {
                if (args.watch_events) {
                    pending.append(buf, static_cast<size_t>(got));
                    size_t end;
                    while ((end = json_value_end(pending, 0)) != std::string::npos) {
                        std::string why;
                        if (!watched.apply(pending.substr(0, end), &why)) say(why + "; ignored");
                        pending.erase(0, end);
                        dirty = true;
                    }
                } else {
                    dirty = true;
                    watch_paths(inotify, args.inputs);  // directories made since
                }
                last_event = clock::now();
            } else if (got == 0 && args.watch_events) {
                eof = true;
            }
            continue;
        }
        if (dirty && (eof || clock::now() - last_event >= std::chrono::milliseconds(args.debounce_ms))) {
            dirty = false;
            gateway.apply(read);
        }
        if (eof && !dirty) {
            say("the watch stream ended");
            break;
        }
    }
    return 0;
}

}  // namespace g2n
