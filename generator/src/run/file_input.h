// run -f FILE|DIR...: the manifests in files and directories, read again
// after any of them changes (inotify): the files whose stamp changed
// (DocumentCache::FileStamp), the others lent from the document cache.
// What changed since is said object by object (take_changes()), as the
// API's watches say it: the documents of the files that changed, those
// new and those gone, each parsed alone for the object it holds.
#pragma once

#include <map>
#include <memory>
#include <optional>
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
    // None when the files cannot say: standard input among them, a file
    // that cannot be read or parsed (the whole way says why), a document
    // of several objects (a List) or of an object refused, an object in
    // two files (the whole way takes the first), or no read yet
    std::optional<ChangeSet> take_changes() override;

    // A file's text as read last, and when
    struct FileText {
        DocumentCache::FileStamp stamp;
        int64_t read_ns = 0;  // CLOCK_REALTIME
        std::string text;
    };

private:
    // every input watched, and each directory under one (made since too)
    void watch_paths();
    // the inputs' files as they are now (a file unchanged since `files_`
    // by its stat(2), and read long enough after its last change, is not
    // read again); false when one cannot be
    bool files_now(std::map<std::string, FileText> *now) const;

    std::vector<std::string> inputs_;
    int inotify_ = -1;
    // as the last read or take_changes() found them: the files, and by
    // "Kind namespace/name" the file of each object
    bool known_ = false;
    std::map<std::string, FileText> files_;
    std::map<std::string, std::string> file_of_;
};

}  // namespace g2n
