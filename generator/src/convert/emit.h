// convert, write: a Conversion as Gateway API manifests (YAML, through
// yaml-cpp's emitter: every value quoted as YAML needs) and its report,
// as text for a terminal and as YAML for a script. Deterministic: the same
// input gives the same bytes.
#pragma once

#include <string>

#include "convert/convert.h"

namespace g2n::convert {

std::string manifests_yaml(const Conversion &c);
std::string report_yaml(const Conversion &c);
std::string report_text(const Conversion &c);

}  // namespace g2n::convert
