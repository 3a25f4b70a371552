// When run applies what changed: after a quiet spell of --debounce, or,
// when events never fall quiet (one tenant touching an object again and
// again), once the first has waited kLongestDebounceWaits quiet spells: no
// tenant holds back the others' changes.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

namespace g2n {

inline constexpr int kLongestDebounceWaits = 4;

class Debounce {
public:
    using clock = std::chrono::steady_clock;

    explicit Debounce(std::chrono::milliseconds quiet_spell)
        : quiet_spell_(quiet_spell), longest_wait_(kLongestDebounceWaits * quiet_spell)
    {
    }

    // something changed at `now`
    void changed(clock::time_point now)
    {
        if (!pending_) first_ = now;
        pending_ = true;
        last_ = now;
    }
    // something changed long enough ago to be applied at once
    void changed_long_ago(clock::time_point now) { changed(now - quiet_spell_); }

    bool pending() const { return pending_; }
    // when what changed is to be applied (none: nothing is pending)
    std::optional<clock::time_point> due() const
    {
        if (!pending_) return std::nullopt;
        return std::min(last_ + quiet_spell_, first_ + longest_wait_);
    }
    // what is pending taken to be applied now, or not yet; the first
    // event's time in *first
    bool take(clock::time_point now, bool at_once, clock::time_point *first)
    {
        if (!pending_ || (!at_once && now < *due())) return false;
        pending_ = false;
        *first = first_;
        return true;
    }

private:
    std::chrono::milliseconds quiet_spell_, longest_wait_;
    bool pending_ = false;
    clock::time_point first_{}, last_{};
};

}  // namespace g2n
