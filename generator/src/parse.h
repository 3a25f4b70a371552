// parse: YAML (as kubectl prints it) to typed objects. Documents are read
// one at a time from a stream; a `kind: List` document holds many objects.
#pragma once

#include <istream>
#include <stdexcept>
#include <string>

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

// Reads every document of the stream into *out, scanning the YAML on
// `jobs` threads when jobs > 1 (the result does not depend on it). Throws
// InputError: the first error in input order.
void parse_stream(std::istream &in, const std::string &file, Manifests *out, unsigned jobs = 1);

// A file, a directory (every *.yaml, *.yml, *.json below it, sorted), or
// "-" for standard input. Throws InputError.
void parse_path(const std::string &path, Manifests *out, unsigned jobs = 1);

}  // namespace g2n
