// apply: what touches the host or a running nginx. This file: reloads,
// confirmed by the new workers nginx starts.
#pragma once

#include <string>

namespace g2n {

// The pid in an nginx pid file; 0 when there is none.
long read_pid(const std::string &pidfile);

// SIGHUP, then new workers (the master's children that were not there
// before): nginx took the configuration, however long its reload took. It
// took none when `error_log` (the configuration's, where nginx reports a
// refused reload) gains an [emerg] line, when the master is gone, or after
// kLongestReload seconds of neither. "" when it did (and *done says so),
// else why not.
inline constexpr long kLongestReload = 600;
std::string reload_and_confirm(const std::string &pidfile, const std::string &error_log, std::string *done);

}  // namespace g2n
