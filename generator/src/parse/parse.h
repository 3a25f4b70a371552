// parse: YAML and JSON as kubectl prints them, to the typed objects of
// model.h. Documents are read one at a time from a stream; a `kind: List`
// document holds many objects. Every field is checked here, where its
// FILE:LINE:COL is known, including nginx's limits on one argument.
// May not: look at other objects (references are resolve's), or decide
// what nginx serves.
#pragma once

#include <istream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model.h"

namespace g2n {

// Bad input: what() is "FILE:LINE:COL: message".
class InputError : public std::runtime_error {
public:
    explicit InputError(const std::string &message) : std::runtime_error(message) {}
};

// Text for a diagnostic line on a terminal or in a log: input in it
// (names, values quoted in messages) cannot start a line of its own or send
// control sequences. Control bytes and DEL become \xNN.
std::string printable(const std::string &text);

// The typed objects of documents read before, by file, first line and
// text (the whole text is the key: no two documents can share an entry):
// gateway2nginx run, rereading its inputs after a change, scans and types
// again only the documents that changed. Not thread-safe.
class DocumentCache {
public:
    // The objects of that document, or null; a hit counts as used
    const Manifests *find(const std::string &key);
    void keep(std::string key, Manifests objects);
    // After a whole read: drops the documents it did not meet
    void forget_unused();
    size_t size() const { return entries_.size(); }

private:
    struct Entry {
        Manifests objects;
        bool used = true;
    };
    std::unordered_map<std::string, Entry> entries_;
};

// `more`'s objects after *out's.
void append_manifests(Manifests *out, const Manifests &more);
void append_manifests(Manifests *out, Manifests &&more);

// Reads every document of the stream into *out, scanning the YAML on
// `jobs` threads when jobs > 1 (the result does not depend on it, nor on
// `cache`, which only spares work). Throws InputError: the first error in
// input order.
void parse_stream(std::istream &in, const std::string &file, Manifests *out, unsigned jobs = 1,
                  DocumentCache *cache = nullptr);

// Named texts, each read as a file of that name (a watch stream's
// objects), their YAML scanned together on `jobs` threads. Throws
// InputError, as parse_stream.
void parse_texts(const std::vector<std::pair<std::string, std::string>> &texts, Manifests *out, unsigned jobs = 1,
                 DocumentCache *cache = nullptr);

// A file, a directory (every *.yaml, *.yml, *.json below it, sorted, their
// YAML scanned together on `jobs` threads), or "-" for standard input.
// Throws InputError.
void parse_path(const std::string &path, Manifests *out, unsigned jobs = 1, DocumentCache *cache = nullptr);

}  // namespace g2n
