// apply: what touches the host or a running nginx. This file: reloads,
// confirmed by the new workers nginx starts.
#pragma once

#include <set>
#include <string>

namespace g2n {

// The pid in an nginx pid file; 0 when there is none.
long read_pid(const std::string &pidfile);

// The processes whose parent is `parent`, from /proc. Processes come and go
// while it reads: one gone between the listing and the read is not a child.
// Never throws: it runs after the signal, when a reload may be under way.
std::set<long> children_of(long parent);

// SIGHUP, then new workers (the master's children that were not there
// before): nginx took the configuration, however long its reload took. It
// took none when `error_log` (the configuration's, where nginx reports a
// refused reload) gains an [emerg] line, when the master is gone, or after
// kLongestReload seconds of neither. "" when it did (and *done says so),
// else why not, and *refusal nginx's own words when it said why ("socket()
// 127.0.0.1:8080 failed (24: Too many open files)"), paths relative to
// the directory of `error_log`'s directory (OUTDIR, of OUTDIR/logs/).
inline constexpr long kLongestReload = 600;
std::string reload_and_confirm(const std::string &pidfile, const std::string &error_log, std::string *done,
                               std::string *refusal = nullptr);

}  // namespace g2n
