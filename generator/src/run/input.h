// Where run reads the objects it applies: one of three, chosen once by
// the command line (as Envoy Gateway's providers): the -f files and
// directories (file_input.h), kubectl's watch-event stream on standard
// input (watch_events.h), the Kubernetes API (api_input.h). The loop polls
// fd(), tells on_readable(), and after a quiet spell the applier reads it
// all, or only what take_changes() names.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kube/reflector.h"
#include "options.h"
#include "parse/parse.h"
#include "plan.h"
#include "resolve/resolve.h"

namespace g2n {

// What an input says changed since the last apply, and how to read each
// object's JSON now (none: deleted).
struct ChangeSet {
    std::vector<kube::ObjectChange> objects;
    std::function<std::optional<std::string>(const kube::ObjectChange &)> json_of;
};

class Input {
public:
    enum class Readable { Nothing, Changed, Ended };
    // When run applies it first: at once (files), at its first change (a
    // watch stream), or once synced() (the API: every kind listed)
    enum class FirstApply { AtStart, AtFirstChange, OnceSynced };

    virtual ~Input() = default;

    // What poll() waits on: readable when the input may have changed.
    virtual int fd() const = 0;
    virtual Readable on_readable() = 0;
    virtual FirstApply first_apply() const = 0;
    // OnceSynced: whether it is, said as it becomes so.
    virtual bool synced() { return true; }
    // Every object it holds now.
    virtual void read(Manifests *out, unsigned jobs, DocumentCache *cache) = 0;
    // What changed since the last call, when the input can say; none:
    // anything may have.
    virtual std::optional<ChangeSet> take_changes() { return std::nullopt; }

    // The status of what was applied, for an input that writes it back:
    // what `plan` says of each object, and whether a running nginx serves
    // it; withdrawn while a configuration is made from the start; asked
    // for again by a writer come to lead. `from`, when given: for each
    // status, its position in the last offer, unchanged, or -1.
    virtual void offer_status(const Plan &, const Options &, bool /*nginx_runs*/,
                              const std::vector<int64_t> * /*from*/ = nullptr)
    {
    }
    virtual void withdraw_status() {}
    virtual bool wants_status() const { return false; }
    // What a resolve looked up; true when that changed the input (the
    // objects newly wanted were fetched): read it again.
    virtual bool want(const ResolveReads &) { return false; }
    // Its part of /metrics.
    virtual std::string metrics() const { return ""; }
};

}  // namespace g2n
