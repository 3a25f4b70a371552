// A memo of what was computed from inputs named by their digest, kept
// while the last two rounds (two plans, two contents) used it: what did
// not change from one plan to the next is not computed again, and what no
// plan uses any more is let go. Finds and keeps may come from several
// threads at once; a new round begins when none does.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace g2n {

template <typename Value>
class RecentMemo {
public:
    // A new round: what only the round before last used goes
    void next_round()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        round_++;
        for (auto it = entries_.begin(); it != entries_.end();) {
            it = it->second.used + 1 < round_ ? entries_.erase(it) : std::next(it);
        }
    }

    // What was kept for `key`, now used this round too; null when nothing.
    // (Entries never move while the map holds them: a pointer stays good
    // until the next round.)
    const Value *find(const std::string &key)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(key);
        if (it == entries_.end()) return nullptr;
        it->second.used = round_;
        return &it->second.value;
    }

    const Value *keep(const std::string &key, Value value)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        Entry &entry = entries_[key] = Entry{std::move(value), round_};
        return &entry.value;
    }

private:
    struct Entry {
        Value value;
        uint64_t used = 0;
    };
    std::mutex mutex_;
    uint64_t round_ = 0;
    std::unordered_map<std::string, Entry> entries_;
};

}  // namespace g2n
