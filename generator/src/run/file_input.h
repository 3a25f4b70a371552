// run -f FILE|DIR...: the manifests in files and directories, read again
// after any of them changes (inotify): the files whose stamp changed
// (DocumentCache::FileStamp), the others lent from the document cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "run/input.h"

namespace g2n {

class FileInput : public Input {
public:
    // std::runtime_error when inotify cannot start
    explicit FileInput(std::vector<std::string> inputs);
    ~FileInput() override;
    FileInput(const FileInput &) = delete;
    FileInput &operator=(const FileInput &) = delete;

    int fd() const override { return inotify_; }
    Readable on_readable() override;
    FirstApply first_apply() const override { return FirstApply::AtStart; }
    void read(Manifests *out, unsigned jobs, DocumentCache *cache) override;

private:
    // every input watched, and each directory under one (made since too)
    void watch_paths();

    std::vector<std::string> inputs_;
    int inotify_ = -1;
};

}  // namespace g2n
