#include "apply/output.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <stdexcept>

#include <openssl/rand.h>

#include "gtls_access.h"
#include "gtls_spec.h"

#include "render/render.h"

namespace fs = std::filesystem;

namespace g2n {

namespace {

void write_file(const fs::path &path, int mode, const std::function<void(std::ostream &)> &write)
{
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    write(out);
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path.string());
    ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

void write_file(const fs::path &path, const std::string &content, int mode)
{
    write_file(path, mode, [&](std::ostream &out) { out << content; });
}

std::string random_token()
{
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes for an access token");
    return gtls::to_hex(bytes, sizeof bytes);
}

std::string token_in(const fs::path &file)
{
    std::ifstream in(file, std::ios::binary);
    std::string token;
    std::getline(in, token);
    return gtls::valid_access_token(token) ? token : random_token();
}

// a new token where none was loaded (a test's Options)
void write_token(const fs::path &file, const std::string &token, bool shared_with_group)
{
    const std::string text = token.empty() ? random_token() : token;
    // created 0600, never readable by others even for a moment
    const mode_t was = ::umask(077);
    std::ofstream out(file, std::ios::binary);
    out << text << "\n";
    out.close();
    ::umask(was);
    if (!out) throw std::runtime_error("cannot write " + file.string());
    ::chmod(file.c_str(), shared_with_group ? 0640 : 0600);
}

}  // namespace

void load_operator_tokens(const fs::path &outdir, Options *options)
{
    options->upstream_api_token = token_in(outdir / kUpstreamApiTokenFile);
    options->status_token = token_in(outdir / kStatusTokenFile);
    if (options->instance.empty()) {
        std::ifstream in(outdir / kInstanceFile, std::ios::binary);
        std::getline(in, options->instance);
        if (!valid_instance_name(options->instance)) options->instance = random_token().substr(0, 16);
    }
}

bool valid_instance_name(const std::string &name)
{
    return !name.empty() && name.size() <= 64
           && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

void write_configuration(const Plan &plan, const Options &options, const fs::path &dir, bool threads)
{
    fs::remove_all(dir);
    fs::create_directories(dir / "logs");
    fs::create_directories(dir / "temp");
    fs::create_directories(dir / "certs");
    const bool shared = options.shared_with_group;
    ::chmod((dir / "certs").c_str(), shared ? 0750 : 0700);
    if (shared) {
        // nginx, another user of the group, writes its pid file, logs and
        // buffered bodies there
        for (const fs::path &d : {dir, dir / "logs", dir / "temp"}) ::chmod(d.c_str(), 0770);
    }
    auto write_status = [&] {
        write_file(dir / "status.yaml", 0644, [&](std::ostream &out) { render_status(out, plan, options); });
    };
    std::future<void> status = std::async(threads ? std::launch::async : std::launch::deferred, write_status);
    write_file(dir / "nginx.conf", render_nginx_conf(plan, options), 0644);
    write_file(dir / "http.conf", 0644, [&](std::ostream &out) { render_http_conf(out, plan, options); });
    write_file(dir / "stream.conf", render_stream_conf(plan, options), 0644);
    if (options.routes == "table") {
        write_file(dir / kRouteTablesFile, render_route_tables(plan, options), 0644);
    } else {
        std::error_code ignored;
        fs::remove(dir / kRouteTablesFile, ignored);  // what nginx runs has no table to fill
    }
    status.get();
    for (const OutputFile &f : plan.files) {
        // what only the owner reads (keys), the group reads too when nginx is of it
        write_file(dir / f.path, f.content, shared && (f.mode & 0400) ? f.mode | 0040 : f.mode);
    }
    if (options.upstream_api != "off") write_token(dir / kUpstreamApiTokenFile, options.upstream_api_token, shared);
    if (options.status_listen != "off") write_token(dir / kStatusTokenFile, options.status_token, shared);
    if (options.instance_kept) write_file(dir / kInstanceFile, options.instance + "\n", 0644);
}

void replace_dir(const fs::path &staged, const fs::path &outdir, const fs::path &previous)
{
    if (!fs::exists(outdir)) {
        fs::rename(staged, outdir);
        return;
    }
    // a running nginx keeps its pid file, logs and buffered bodies: they
    // move into the new directory before the swap
    for (const char *state : {"nginx.pid", "logs", "temp"}) {
        if (fs::exists(outdir / state)) {
            fs::remove_all(staged / state);
            fs::rename(outdir / state, staged / state);
        }
    }
    if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, outdir.c_str(), RENAME_EXCHANGE) != 0) {
        throw std::runtime_error("cannot replace " + outdir.string() + ": " + std::strerror(errno));
    }
    // staged now holds the previous configuration
    if (previous.empty()) {
        fs::remove_all(staged);
        return;
    }
    fs::remove_all(previous);
    fs::rename(staged, previous);
}

}  // namespace g2n
