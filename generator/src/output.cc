#include "output.h"

#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <future>
#include <stdexcept>

#include "render.h"

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

}  // namespace

void write_configuration(const Plan &plan, const Options &options, const fs::path &dir, bool threads)
{
    fs::remove_all(dir);
    fs::create_directories(dir / "logs");
    fs::create_directories(dir / "temp");
    fs::create_directories(dir / "certs");
    ::chmod((dir / "certs").c_str(), 0700);
    auto write_status = [&] {
        write_file(dir / "status.yaml", 0644, [&](std::ostream &out) { render_status(out, plan, options); });
    };
    std::future<void> status = std::async(threads ? std::launch::async : std::launch::deferred, write_status);
    write_file(dir / "nginx.conf", render_nginx_conf(plan, options), 0644);
    write_file(dir / "http.conf", 0644, [&](std::ostream &out) { render_http_conf(out, plan, options); });
    write_file(dir / "stream.conf", render_stream_conf(plan, options), 0644);
    status.get();
    for (const OutputFile &f : plan.files) {
        write_file(dir / f.path, f.content, f.mode);
    }
}

}  // namespace g2n
