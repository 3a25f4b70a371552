// Objects of one kind by key, as ServiceEndpoints and PolicyTrust keep
// them between changes: views of the objects a read holds, followed to
// where they go when it is taken apart (the document cache), and copies
// only of those that changed since, or of all when the read's objects go
// nowhere a view can follow. 10,000 Services, EndpointSlices and policies
// are thus held once, not once more beside the cache.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "model.h"

namespace g2n {

template <class T>
class KeptObjects {
public:
    // `object`, held by its read, kept under `key`; false when the key
    // is kept already
    bool view(const std::string &key, const T &object) { return at_.emplace(key, &object).second; }

    // `object`, copied: what changed since the read
    void copy(const std::string &key, const T &object)
    {
        T &copied = owned_.insert_or_assign(key, object).first->second;
        at_[key] = &copied;
    }

    void erase(const std::string &key)
    {
        at_.erase(key);
        owned_.erase(key);
    }

    size_t size() const { return at_.size(); }

    const T *find(const std::string &key) const
    {
        auto it = at_.find(key);
        return it == at_.end() ? nullptr : it->second;
    }

    // `key` is now `now`, or gone: kept so, `index(object, false)` told
    // what it was and `index(object, true)` what it is
    template <class Index>
    void replace(const std::string &key, const std::optional<T> &now, const Index &index)
    {
        if (const T *before = find(key)) index(*before, false);
        if (now) {
            copy(key, *now);
            index(*now, true);
        } else {
            erase(key);
        }
    }

    // The read's objects are where `moved` says; false when one went
    // nowhere (then nothing kept is to be read again).
    bool follow(const MovedObjects &moved)
    {
        for (auto &[key, object] : at_) {
            if (owned_.count(key)) continue;
            object = moved.where(object);
            if (object == nullptr) return false;
        }
        return true;
    }

    // The read's objects are about to go: copies of them kept instead.
    void copy_viewed()
    {
        for (auto &[key, object] : at_) {
            if (!owned_.count(key)) object = &owned_.emplace(key, *object).first->second;
        }
    }

private:
    std::unordered_map<std::string, const T *> at_;
    std::unordered_map<std::string, T> owned_;  // nodes stay where they are
};

}  // namespace g2n
