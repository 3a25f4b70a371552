#include "run/process.h"

#include <ctime>
#include <iostream>
#include <mutex>

#include "parse/parse.h"

namespace g2n {

volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_stops = 0;

namespace {

void on_stop(int)
{
    g_stop = 1;
    g_stops = g_stops + 1;
}

}  // namespace

void count_stop_signals()
{
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
}

void say(const std::string &what)
{
    static std::mutex mutex;
    char stamp[32];
    std::time_t now = std::time(nullptr);
    struct tm utc;
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
    const std::string line = "gateway2nginx: " + std::string(stamp) + " " + printable(what) + "\n";
    std::lock_guard<std::mutex> lock(mutex);
    std::cerr << line << std::flush;
}

}  // namespace g2n
