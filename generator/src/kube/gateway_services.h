// The Service gateway2nginx keeps for each Gateway it accepts (GEP-1762,
// run --gateway-service-external-name): in the Gateway's namespace, named
// "<gateway>-<class>", an ExternalName alias of the operator's Service in
// front of nginx (a Service cannot select pods of another namespace),
// labelled with the Gateway's name and carrying its spec.infrastructure
// labels and annotations (GEP-1867), owned by the Gateway. Pure functions
// on the API's JSON: the writing is GatewayServiceWriter's.
#pragma once

#include <string>

#include "plan.h"

namespace g2n::kube {

struct GatewayServiceConfig {
    std::string external_name;    // the DNS name the Services alias
    std::string controller_name;  // ours: a Service is ours when it names it
};

// "<gateway>-<class>" when that is an RFC 1035 label; else its first
// letters made one, and 8 hex digits of its SHA-256: always one.
std::string gateway_service_name(const GatewayService &svc);

// The Service to create (POST) for `svc`.
std::string new_gateway_service(const GatewayService &svc, const GatewayServiceConfig &config);

enum class HeldService {
    Foreign,  // not ours: left alone
    Current,  // ours, as wanted
    Stale,    // ours, to be replaced (PUT) by *update
};
// What to do with `held`, the JSON of the Service of svc's name the API
// server holds. Labels and annotations others put on it are kept; those
// it carried for the Gateway and no longer should are removed. Throws
// ApiError when `held` is not a JSON object.
HeldService compare_gateway_service(const std::string &held, const GatewayService &svc,
                                    const GatewayServiceConfig &config, std::string *update);

// Whether `held` (a Service's JSON) is a Service gateway2nginx made for a
// Gateway, under `controller_name`.
bool is_gateway_service(const std::string &held, const std::string &controller_name);

// DeleteOptions that delete `held` only: its uid and resourceVersion.
std::string delete_only(const std::string &held);

}  // namespace g2n::kube
