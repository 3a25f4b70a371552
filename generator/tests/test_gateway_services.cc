// Each accepted Gateway's own Service (GEP-1762, GEP-1867): spec.infrastructure
// read with the CRD's rules, what resolve wants for each Gateway, and the
// Service's JSON: made, compared with what the API server holds (others'
// labels kept, ours removed once the Gateway drops them, someone else's
// Service left alone), deleted only as held.
#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include "kube/gateway_services.h"
#include "kube/config.h"
#include "kube/json.h"
#include "parse/fields.h"
#include "resolve/features.h"
#include "test_support.h"

using namespace g2n;
using namespace g2n_test;

namespace {

std::string gateway(const std::string &infrastructure, const std::string &name = "gw",
                    const std::string &cls = "ours")
{
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: " + name
           + ", namespace: ns, uid: 1f0e-" + name + "}\nspec:\n  gatewayClassName: " + cls + "\n"
           + (infrastructure.empty() ? "" : "  infrastructure:\n" + infrastructure)
           + "  listeners:\n  - {name: http, port: 80, protocol: HTTP}\n  - {name: http-b, port: 80, protocol: HTTP, hostname: b.example.com}\n"
             "  - {name: dns, port: 53, protocol: UDP}\n";
}

GatewayService service(const std::string &yaml)
{
    Plan plan = plan_of(class_and_certificate() + yaml);
    BOOST_TEST_REQUIRE(plan.gateway_services.size() == 1u);
    return plan.gateway_services[0];
}

const kube::GatewayServiceConfig kConfig{"gateway2nginx.gateway-system.svc.cluster.local", "gateway2nginx.io/controller"};

rapidjson::Document json(const std::string &text)
{
    rapidjson::Document doc;
    doc.Parse(text.c_str());
    BOOST_TEST_REQUIRE(!doc.HasParseError());
    return doc;
}

// what the API server holds once it has created `svc`: its own fields added
std::string held(const GatewayService &svc)
{
    rapidjson::Document doc = json(kube::new_gateway_service(svc, kConfig));
    auto &alloc = doc.GetAllocator();
    doc["metadata"].AddMember("uid", "5e7c", alloc);
    doc["metadata"].AddMember("resourceVersion", "41", alloc);
    doc["spec"].AddMember("sessionAffinity", "None", alloc);
    return kube::json_text(doc);
}

std::string with_label(const std::string &object, const char *key, const char *value)
{
    rapidjson::Document doc = json(object);
    doc["metadata"]["labels"].AddMember(rapidjson::StringRef(key), rapidjson::StringRef(value), doc.GetAllocator());
    return kube::json_text(doc);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gateway_services)

BOOST_AUTO_TEST_CASE(infrastructure_as_the_crd_has_it)
{
    Manifests m = parse(class_and_certificate()
                        + gateway("    labels: {key2: value2, example.com/team: a_b.c}\n    annotations: {key1: value1, example.com/note: \"any text: at all\"}\n"));
    BOOST_TEST_REQUIRE(m.gateways.size() == 1u);
    BOOST_TEST(m.gateways[0].meta.uid == "1f0e-gw");
    BOOST_TEST(m.gateways[0].infrastructure_labels.at("key2") == "value2");
    BOOST_TEST(m.gateways[0].infrastructure_labels.at("example.com/team") == "a_b.c");
    BOOST_TEST(m.gateways[0].infrastructure_annotations.at("example.com/note") == "any text: at all");

    auto error = [](const std::string &infrastructure) { return error_of(class_and_certificate() + gateway(infrastructure)); };
    std::string nine;
    for (int i = 0; i < 9; i++) nine += (i ? ", k" : "k") + std::to_string(i) + ": v";
    BOOST_TEST(error("    labels: {" + nine + "}\n").find("spec.infrastructure.labels: at most 8 labels") != std::string::npos);
    BOOST_TEST(error("    labels: {\"bad key!\": v}\n").find("spec.infrastructure.labels.bad key!: a key is") != std::string::npos);
    BOOST_TEST(error("    labels: {\"Example.com/x\": v}\n").find("spec.infrastructure.labels.Example.com/x") != std::string::npos);
    BOOST_TEST(error("    labels: {k: \"-v\"}\n").find("spec.infrastructure.labels.k: a label value") != std::string::npos);
    BOOST_TEST(error("    labels: {k: " + std::string(64, 'v') + "}\n").find("a label value") != std::string::npos);
    BOOST_TEST(error("    annotations: {k: " + std::string(4097, 'v') + "}\n")
                   .find("spec.infrastructure.annotations.k: at most 4096 bytes") != std::string::npos);
    BOOST_TEST(error("    size: large\n").find("spec.infrastructure.size: unknown field") != std::string::npos);
    BOOST_TEST(error("    labels: {k: v}\n    annotations: {\"a/b/c\": v}\n").find("spec.infrastructure.annotations.a/b/c") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_accepted_gateway_wants_one)
{
    GatewayService svc = service(gateway("    labels: {key2: value2}\n    annotations: {key1: value1}\n"));
    BOOST_TEST(svc.namespace_ == "ns");
    BOOST_TEST(svc.gateway == "gw");
    BOOST_TEST(svc.gateway_uid == "1f0e-gw");
    BOOST_TEST(svc.gateway_class == "ours");
    BOOST_TEST(svc.labels.at("key2") == "value2");
    BOOST_TEST(svc.annotations.at("key1") == "value1");
    // one port for the two listeners on 80, sorted
    BOOST_TEST_REQUIRE(svc.ports.size() == 2u);
    BOOST_TEST((svc.ports[0] == std::pair<int, std::string>{53, "UDP"}));
    BOOST_TEST((svc.ports[1] == std::pair<int, std::string>{80, "TCP"}));

    // none for a Gateway of another class, or one not accepted
    BOOST_TEST(plan_of(class_and_certificate() + gateway("", "gw", "theirs")).gateway_services.empty());
    BOOST_TEST(plan_of(class_and_certificate() + gateway("    parametersRef: {group: example.com, kind: Params, name: p}\n"))
                   .gateway_services.empty());
}

BOOST_AUTO_TEST_CASE(reserved_keys_stay_ours)
{
    Plan plan = plan_of(class_and_certificate()
                        + gateway("    labels: {app.kubernetes.io/managed-by: someone, gateway.networking.k8s.io/gateway-name: other, "
                                  "team: a}\n    annotations: {gateway2nginx.io/controller-name: example.com/other}\n"));
    BOOST_TEST_REQUIRE(plan.gateway_services.size() == 1u);
    const GatewayService &svc = plan.gateway_services[0];
    BOOST_TEST(svc.labels.size() == 1u);
    BOOST_TEST(svc.labels.at("team") == "a");
    BOOST_TEST(svc.annotations.empty());
    std::string warnings;
    for (const std::string &w : plan.warnings) warnings += w + "\n";
    BOOST_TEST(warnings.find("Gateway ns/gw: spec.infrastructure.labels.app.kubernetes.io/managed-by is not propagated") != std::string::npos);
    BOOST_TEST(warnings.find("spec.infrastructure.annotations.gateway2nginx.io/controller-name is not propagated") != std::string::npos);

    rapidjson::Document doc = json(kube::new_gateway_service(svc, kConfig));
    BOOST_TEST(std::string(doc["metadata"]["labels"]["app.kubernetes.io/managed-by"].GetString()) == "gateway2nginx");
    BOOST_TEST(std::string(doc["metadata"]["labels"]["gateway.networking.k8s.io/gateway-name"].GetString()) == "gw");
    BOOST_TEST(std::string(doc["metadata"]["annotations"]["gateway2nginx.io/controller-name"].GetString())
               == "gateway2nginx.io/controller");
}

BOOST_AUTO_TEST_CASE(its_name)
{
    GatewayService svc{"ns", "gw", "", "ours", {}, {}, {}};
    BOOST_TEST(kube::gateway_service_name(svc) == "gw-ours");
    // a Gateway name may hold dots, be 253 long, start with a digit: a
    // Service name may not
    for (const std::string &name : {std::string("a.b"), std::string("1gw"), std::string(253, 'x'), std::string("gw.") + std::string(60, 'y')}) {
        svc.gateway = name;
        const std::string made = kube::gateway_service_name(svc);
        BOOST_TEST(valid_dns1035_label(made), made);
        BOOST_TEST(made.size() <= 63u);
    }
    // names made alike stay apart
    svc.gateway = "a.b";
    const std::string dotted = kube::gateway_service_name(svc);
    svc.gateway = "a-b";
    BOOST_TEST(kube::gateway_service_name(svc) == "a-b-ours");
    BOOST_TEST(dotted != "a-b-ours");
    svc.namespace_ = "other";
    svc.gateway = "a.b";
    BOOST_TEST(kube::gateway_service_name(svc) != dotted);
}

BOOST_AUTO_TEST_CASE(made_as_wanted)
{
    GatewayService svc = service(gateway("    labels: {key2: value2}\n    annotations: {key1: value1}\n"));
    rapidjson::Document doc = json(kube::new_gateway_service(svc, kConfig));
    const auto &meta = doc["metadata"];
    BOOST_TEST(std::string(doc["kind"].GetString()) == "Service");
    BOOST_TEST(std::string(meta["name"].GetString()) == "gw-ours");
    BOOST_TEST(std::string(meta["namespace"].GetString()) == "ns");
    BOOST_TEST(std::string(meta["labels"]["key2"].GetString()) == "value2");
    BOOST_TEST(std::string(meta["labels"]["gateway.networking.k8s.io/gateway-class-name"].GetString()) == "ours");
    BOOST_TEST(std::string(meta["annotations"]["key1"].GetString()) == "value1");
    BOOST_TEST(std::string(meta["annotations"]["gateway2nginx.io/infrastructure-keys"].GetString())
               == R"({"labels":["key2"],"annotations":["key1"]})");
    BOOST_TEST_REQUIRE(meta["ownerReferences"].Size() == 1u);
    BOOST_TEST(std::string(meta["ownerReferences"][0]["uid"].GetString()) == "1f0e-gw");
    BOOST_TEST(std::string(meta["ownerReferences"][0]["kind"].GetString()) == "Gateway");
    BOOST_TEST(meta["ownerReferences"][0]["controller"].GetBool());
    BOOST_TEST(!meta["ownerReferences"][0].HasMember("blockOwnerDeletion"));
    BOOST_TEST(std::string(doc["spec"]["type"].GetString()) == "ExternalName");
    BOOST_TEST(std::string(doc["spec"]["externalName"].GetString()) == kConfig.external_name);
    BOOST_TEST(!doc["spec"].HasMember("selector"));
    BOOST_TEST_REQUIRE(doc["spec"]["ports"].Size() == 2u);
    BOOST_TEST(std::string(doc["spec"]["ports"][0]["name"].GetString()) == "udp-53");
    BOOST_TEST(std::string(doc["spec"]["ports"][1]["protocol"].GetString()) == "TCP");
    BOOST_TEST(doc["spec"]["ports"][1]["port"].GetInt() == 80);
}

BOOST_AUTO_TEST_CASE(compared_with_what_is_held)
{
    GatewayService svc = service(gateway("    labels: {key2: value2}\n    annotations: {key1: value1}\n"));
    std::string update;
    const std::string current = held(svc);
    BOOST_TEST((kube::compare_gateway_service(current, svc, kConfig, &update) == kube::HeldService::Current));
    // a label someone else added is theirs: kept, and no reason to write
    const std::string labelled = with_label(current, "team", "x");
    BOOST_TEST((kube::compare_gateway_service(labelled, svc, kConfig, &update) == kube::HeldService::Current));

    // the Gateway drops key2 and adds key3: ours go, theirs stay
    GatewayService changed = svc;
    changed.labels = {{"key3", "value3"}};
    BOOST_TEST_REQUIRE((kube::compare_gateway_service(labelled, changed, kConfig, &update) == kube::HeldService::Stale));
    rapidjson::Document doc = json(update);
    BOOST_TEST(!doc["metadata"]["labels"].HasMember("key2"));
    BOOST_TEST(std::string(doc["metadata"]["labels"]["key3"].GetString()) == "value3");
    BOOST_TEST(std::string(doc["metadata"]["labels"]["team"].GetString()) == "x");
    BOOST_TEST(std::string(doc["metadata"]["resourceVersion"].GetString()) == "41");  // a stale one is a 409
    BOOST_TEST(std::string(doc["spec"]["sessionAffinity"].GetString()) == "None");
    BOOST_TEST((kube::compare_gateway_service(update, changed, kConfig, &update) == kube::HeldService::Current));

    // a Gateway made anew (another uid), other ports, an edited spec: replaced
    GatewayService renewed = svc;
    renewed.gateway_uid = "2a0b";
    BOOST_TEST((kube::compare_gateway_service(current, renewed, kConfig, &update) == kube::HeldService::Stale));
    BOOST_TEST(std::string(json(update)["metadata"]["ownerReferences"][0]["uid"].GetString()) == "2a0b");
    GatewayService ports = svc;
    ports.ports.pop_back();
    BOOST_TEST((kube::compare_gateway_service(current, ports, kConfig, &update) == kube::HeldService::Stale));
    BOOST_TEST(json(update)["spec"]["ports"].Size() == 1u);
    rapidjson::Document selecting = json(current);
    selecting["spec"].AddMember("selector", rapidjson::Value(rapidjson::kObjectType), selecting.GetAllocator());
    BOOST_TEST((kube::compare_gateway_service(kube::json_text(selecting), svc, kConfig, &update) == kube::HeldService::Stale));
    BOOST_TEST(!json(update)["spec"].HasMember("selector"));
    const kube::GatewayServiceConfig elsewhere{"other.example.com", kConfig.controller_name};
    BOOST_TEST((kube::compare_gateway_service(current, svc, elsewhere, &update) == kube::HeldService::Stale));
}

BOOST_AUTO_TEST_CASE(someone_elses_is_left_alone)
{
    GatewayService svc = service(gateway(""));
    std::string update;
    const std::string plain = R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"gw-ours","namespace":"ns"},"spec":{"type":"ClusterIP"}})";
    BOOST_TEST((kube::compare_gateway_service(plain, svc, kConfig, &update) == kube::HeldService::Foreign));
    BOOST_TEST(!kube::is_gateway_service(plain, kConfig.controller_name));
    // another install's, under another controllerName
    const std::string theirs = kube::new_gateway_service(svc, {kConfig.external_name, "example.com/other"});
    BOOST_TEST((kube::compare_gateway_service(theirs, svc, kConfig, &update) == kube::HeldService::Foreign));
    BOOST_TEST(!kube::is_gateway_service(theirs, kConfig.controller_name));
    BOOST_TEST(kube::is_gateway_service(held(svc), kConfig.controller_name));
    BOOST_CHECK_THROW(kube::compare_gateway_service("{not json", svc, kConfig, &update), kube::ApiError);
}

BOOST_AUTO_TEST_CASE(deleted_only_as_held)
{
    rapidjson::Document doc = json(kube::delete_only(held(service(gateway("")))));
    BOOST_TEST(std::string(doc["kind"].GetString()) == "DeleteOptions");
    BOOST_TEST(std::string(doc["preconditions"]["uid"].GetString()) == "5e7c");
    BOOST_TEST(std::string(doc["preconditions"]["resourceVersion"].GetString()) == "41");
    // what the watch held may lack them (found by the kube fuzz target: an
    // absent member aborted): no precondition then, rather than one never met
    rapidjson::Document bare = json(kube::delete_only(R"({"metadata":{"name":"gw-ours"}})"));
    BOOST_TEST(bare["preconditions"].ObjectEmpty());
}

BOOST_AUTO_TEST_CASE(claimed_only_where_made)
{
    const auto claims = [](bool made) {
        const auto all = supported_features(made);
        return std::count(all.begin(), all.end(), "GatewayInfrastructurePropagation");
    };
    BOOST_TEST(claims(false) == 0);
    BOOST_TEST(claims(true) == 1);
    const auto all = supported_features(true);
    BOOST_TEST(std::is_sorted(all.begin(), all.end()));
}

BOOST_AUTO_TEST_SUITE_END()
