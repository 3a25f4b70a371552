// What is written back to an object's /status: our part of it (the
// computed ObjectStatus as JSON), merged into the status the API server
// holds with every other controller's entries left exactly as they were.
// Pure functions: the writing itself is run/'s.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan.h"

namespace g2n::kube {

// Our part of `status` as a JSON object: a GatewayClass's conditions and
// supportedFeatures, a Gateway's addresses, conditions and listeners, or
// the "parents"/"ancestors" entries of a route or policy, each with our
// controllerName. Conditions carry observedGeneration, and no
// lastTransitionTime: merge_status gives them one.
std::string our_status_json(const ObjectStatus &status, const std::string &controller_name,
                            const std::vector<std::string_view> &supported_features);

// `object` (its JSON as the API server holds it) with our part replaced by
// `ours` (our_status_json): for routes and policies only the entries with
// our controllerName, for Gateways and GatewayClasses the fields we write.
// A condition keeps its lastTransitionTime while its status stays, else
// takes `now`. The whole object to PUT to /status (its resourceVersion as
// read: a stale one is a 409), or nothing when the status would not
// change. Throws ApiError when `object` is not a JSON object.
std::optional<std::string> merge_status(const std::string &ours, const std::string &object,
                                        const std::string &controller_name, const std::string &now);

// The time as Kubernetes writes it: RFC 3339, UTC, seconds.
std::string rfc3339_now();

}  // namespace g2n::kube
