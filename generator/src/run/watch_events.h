// gateway2nginx run --watch-events: what kubectl's --output-watch-events
// stream on standard input holds, cut into events and read by RapidJSON.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kube/reflector.h"
#include "parse/parse.h"
#include "run/input.h"

namespace g2n {

// The objects a watch-event stream holds now, by kind, namespace and name.
class WatchedObjects {
public:
    // One event ({"type": ..., "object": {...}}); false when it is not one.
    bool apply(const std::string &event_text, std::string *why);
    void read(Manifests *out, unsigned jobs, DocumentCache *cache) const;
    // The objects changed since the last call, as they are now.
    std::vector<kube::ObjectChange> take_changes();
    // The JSON of a changed object now; none when it is gone.
    std::optional<std::string> json_of(const kube::ObjectChange &change) const;

private:
    std::map<std::string, std::string> objects_;  // "apiVersion/Kind/namespace/name" -> JSON
    std::map<std::string, kube::ObjectChange> changed_;  // by key
};

// run --watch-events: standard input, an event applied as soon as it is
// whole; the stream's end ends run.
class WatchEventInput : public Input {
public:
    WatchEventInput();  // standard input made non-blocking

    int fd() const override { return 0; }
    Readable on_readable() override;
    FirstApply first_apply() const override { return FirstApply::AtFirstChange; }
    void read(Manifests *out, unsigned jobs, DocumentCache *cache) override;
    std::optional<ChangeSet> take_changes() override;

private:
    WatchedObjects objects_;
    std::string pending_;  // bytes not yet a whole event
};

// The end of the first complete JSON value in `text` from `from` (skipping
// whitespace before it), or std::string::npos while it is incomplete
// (RapidJSON's reader decides); past the fault when it is not JSON.
size_t json_value_end(const std::string &text, size_t from);

}  // namespace g2n
