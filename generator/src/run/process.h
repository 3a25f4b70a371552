// run: what the long-running commands (gateway2nginx run, gateway2nginx
// supervise) share as processes: their log lines, and SIGTERM and SIGINT
// counted (a first one stops them gracefully, a second cuts a shutdown
// delay short).
#pragma once

#include <csignal>
#include <string>

namespace g2n {

// One line of the log on standard error, stamped; threads may say things too.
void say(const std::string &what);

// SIGTERM and SIGINT counted from now on: how many came so far
void count_stop_signals();
extern volatile std::sig_atomic_t g_stop;   // one came
extern volatile std::sig_atomic_t g_stops;  // how many

}  // namespace g2n
