// libFuzzer target for what the API server sends (kube/): arbitrary bytes
// as a watch stream, cut where the first byte says, into the store; as
// the object our status is merged into; and as the Service held under a
// Gateway's Service's name. Nothing may crash, what is merged is JSON our
// merge accepts again without a change, and a Service replaced is then
// as wanted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kube/gateway_services.h"
#include "kube/reflector.h"
#include "kube/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const size_t cut = data[0];
    const std::string input(reinterpret_cast<const char *>(data) + 1, size - 1);

    g2n::kube::ObjectStore store;
    const g2n::kube::ApiKind routes{"gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", true, ""};
    g2n::kube::WatchDecoder decoder(routes, &store);
    for (size_t at = 0; at < input.size(); at += cut + 1) {
        if (decoder.feed(std::string_view(input).substr(at, cut + 1)) != g2n::kube::WatchDecoder::Outcome::Continue) break;
    }
    store.texts();

    const std::string ours =
        R"({"parents":[{"parentRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","namespace":"ns","name":"gw"},)"
        R"("controllerName":"c","conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"",)"
        R"("observedGeneration":1}]}]})";
    try {
        std::optional<std::string> merged = g2n::kube::merge_status(ours, input, "c", "now");
        if (merged && g2n::kube::merge_status(ours, *merged, "c", "later")) std::abort();  // not idempotent
    } catch (const g2n::kube::ApiError &) {
    }

    const g2n::GatewayService svc{"ns", "gw", "uid", "ours", {{"team", "a"}}, {{"note", "b"}}, {{80, "TCP"}}};
    const g2n::kube::GatewayServiceConfig config{"gateway2nginx.gateway-system.svc.cluster.local", "c"};
    try {
        std::string update;
        if (g2n::kube::compare_gateway_service(input, svc, config, &update) == g2n::kube::HeldService::Stale
            && g2n::kube::compare_gateway_service(update, svc, config, &update) != g2n::kube::HeldService::Current) {
            std::abort();  // replaced, and still not as wanted: it would be written forever
        }
        if (g2n::kube::is_gateway_service(input, "c")) g2n::kube::delete_only(input);
    } catch (const g2n::kube::ApiError &) {
    }
    return 0;
}
