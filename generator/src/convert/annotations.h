// convert, read: one Ingress's ingress-nginx annotations, each reported
// once as convert reads it (kAnnotations, the table of those it knows, is
// annotations.cc's).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "convert/convert.h"

namespace g2n::convert {

// Whether outcome A says more is lost than B
bool worse(Outcome a, Outcome b);

// One Ingress's ingress-nginx annotations: each read is reported once,
// those never read are reported as not converted
class Annotations {
public:
    Annotations(const Ingress &in, std::vector<ReportEntry> *report);

    std::optional<std::string> get(const std::string &key) const;
    // KEY's value is WORD (FALLBACK when KEY is unset)
    bool is(const std::string &key, const char *word, bool fallback) const;
    // What became of KEY (when it is set, or ALWAYS: its default matters).
    // Reported once: a later use that fares worse (one path of several)
    // replaces what was said.
    void report(const std::string &key, Outcome outcome, const std::string &note, bool always = false);
    // The rest: set and never reported
    void report_rest();

private:
    std::string ingress_;
    std::vector<ReportEntry> *report_;
    std::map<std::string, std::string> values_;
    std::map<std::string, size_t> reported_;  // the index of its entry
};

}  // namespace g2n::convert
