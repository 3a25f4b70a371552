#include "run/file_input.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace g2n {

FileInput::FileInput(std::vector<std::string> inputs) : inputs_(std::move(inputs))
{
    inotify_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_ < 0) throw std::runtime_error(std::string("inotify: ") + std::strerror(errno));
    watch_paths();
}

FileInput::~FileInput() { ::close(inotify_); }

void FileInput::watch_paths()
{
    const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB;
    for (const std::string &input : inputs_) {
        if (input == "-") continue;
        std::error_code ec;
        if (fs::is_directory(input, ec)) {
            inotify_add_watch(inotify_, input.c_str(), mask);
            for (auto it = fs::recursive_directory_iterator(input, ec); !ec && it != fs::recursive_directory_iterator();
                 it.increment(ec)) {
                if (it->is_directory(ec)) inotify_add_watch(inotify_, it->path().c_str(), mask);
            }
        } else {
            fs::path parent = fs::path(input).parent_path();
            inotify_add_watch(inotify_, parent.empty() ? "." : parent.c_str(), mask);
        }
    }
}

Input::Readable FileInput::on_readable()
{
    char buf[65536];
    if (::read(inotify_, buf, sizeof buf) <= 0) return Readable::Nothing;
    watch_paths();  // directories made since
    return Readable::Changed;
}

void FileInput::read(Manifests *out, unsigned jobs, DocumentCache *cache)
{
    for (const std::string &input : inputs_) parse_path(input, out, jobs, cache);
}

}  // namespace g2n
