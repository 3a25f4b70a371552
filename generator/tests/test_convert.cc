// gateway2nginx convert: each testdata/convert/NAME.in.yaml (Ingresses as
// ingress-nginx's documentation writes them, and their Services and
// Secrets) converted and compared byte for byte with NAME.out.yaml (the
// Gateway API objects) and NAME.report.yaml (UPDATE_GOLDEN=1 writes them
// afresh); the objects served by gateway2nginx with every condition True;
// every annotation reported; tenant-written annotations unable to change
// the output's shape.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "convert/convert.h"
#include "convert/emit.h"
#include "convert/ingress.h"
#include "render/render.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace g2n::convert;

namespace {

const fs::path kCases = fs::path(__FILE__).parent_path() / "testdata" / "convert";

std::string read_text(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<fs::path> cases()
{
    std::vector<fs::path> out;
    for (const fs::directory_entry &e : fs::directory_iterator(kCases)) {
        const std::string name = e.path().filename().string();
        if (name.size() > 8 && name.compare(name.size() - 8, 8, ".in.yaml") == 0) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string stem_of(const fs::path &input)
{
    const std::string name = input.filename().string();
    return name.substr(0, name.size() - 8);
}

const char *const kOurClass = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\n"
                              "metadata: {name: gateway2nginx}\nspec: {controllerName: gateway2nginx.io/controller}\n";

// The status gateway2nginx gives the converted objects beside the input's
std::string served_status(const std::string &objects, const fs::path &input)
{
    g2n::Manifests m;
    std::istringstream cls(kOurClass), out(objects), in(read_text(input));
    g2n::parse_stream(cls, "class.yaml", &m);
    g2n::parse_stream(out, "gateway-api.yaml", &m);
    g2n::parse_stream(in, input.filename().string(), &m);
    g2n::Options o;
    o.instance = "convert";
    o.instance_kept = false;
    return g2n::render_status(g2n::resolve(m, o), o);
}

// An Ingress of one path to Service "app" with ANNOTATIONS (YAML lines)
std::string ingress_with(const std::string &annotations)
{
    return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: app\n  namespace: shop\n"
           "  annotations:\n" + annotations +
           "spec:\n  rules:\n  - host: app.example.com\n    http:\n      paths:\n      - path: /\n"
           "        pathType: Prefix\n        backend: {service: {name: app, port: {number: 8443}}}\n";
}

Conversion convert_text(const std::string &yaml)
{
    ConvertInput input;
    input.ingresses = read_ingresses(yaml, "in.yaml");
    return convert_ingresses(input, ConvertOptions{});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(convert)

BOOST_AUTO_TEST_CASE(every_case_converts_as_its_golden_files)
{
    const bool update = std::getenv("UPDATE_GOLDEN") != nullptr;
    for (const fs::path &input : cases()) {
        const Conversion c = convert_ingresses(read_convert_input({input.string()}), ConvertOptions{});
        for (const auto &[ext, text] : {std::pair<std::string, std::string>{".out.yaml", manifests_yaml(c)},
                                        {".report.yaml", report_yaml(c)}}) {
            const fs::path golden = kCases / (stem_of(input) + ext);
            if (update) {
                std::ofstream(golden, std::ios::binary) << text;
                continue;
            }
            BOOST_TEST_CONTEXT(golden.string() << " (UPDATE_GOLDEN=1 writes it afresh)")
            {
                BOOST_TEST_REQUIRE(fs::exists(golden));
                BOOST_TEST(text == read_text(golden));
            }
        }
    }
    BOOST_TEST(cases().size() >= 1u);
}

// What convert writes, gateway2nginx serves: every Gateway, route, policy
// and grant Accepted, its references resolved
BOOST_AUTO_TEST_CASE(every_case_is_served_with_no_condition_false)
{
    for (const fs::path &input : cases()) {
        const Conversion c = convert_ingresses(read_convert_input({input.string()}), ConvertOptions{});
        const std::string status = served_status(manifests_yaml(c), input);
        BOOST_TEST(g2n_test::refusals_in(status) == 0u, input.filename() << ":\n" << status);
        BOOST_TEST(status.find("kind: HTTPRoute") != std::string::npos, input.filename());
    }
}

// Nothing dropped silently: every annotation of every Ingress is in the
// report once, and what is not converted says so in the exit status
BOOST_AUTO_TEST_CASE(every_annotation_met_is_reported_once)
{
    for (const fs::path &input : cases()) {
        const ConvertInput in = read_convert_input({input.string()});
        const Conversion c = convert_ingresses(in, ConvertOptions{});
        std::map<std::string, int> reported;
        for (const ReportEntry &e : c.report) reported[e.ingress + " " + e.item]++;
        for (const Ingress &ingress : in.ingresses) {
            const bool ours = ingress.class_name.empty() || ingress.class_name == "nginx";
            for (const Annotation &a : ingress.annotations) {
                BOOST_TEST(reported[ingress.meta.key() + " " + a.key] == (ours ? 1 : 0),
                           input.filename() << ": " << ingress.meta.key() << " " << a.key);
            }
        }
        const bool not_converted = std::any_of(c.report.begin(), c.report.end(), [](const ReportEntry &e) {
            return e.outcome == Outcome::NotConverted;
        });
        BOOST_TEST(c.dropped() == not_converted);
    }
}

BOOST_AUTO_TEST_CASE(verify_off_is_an_audited_skip_behind_the_gate)
{
    const std::string yaml = ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n");
    Conversion c = convert_text(yaml);
    BOOST_TEST_REQUIRE(c.policies.size() == 1u);
    BOOST_TEST(c.policies[0].skip_verify);
    BOOST_TEST(c.gateway.allows_insecure_backends);
    ConvertOptions strict;
    strict.strict_backends = true;
    ConvertInput input;
    input.ingresses = read_ingresses(yaml, "in.yaml");
    c = convert_ingresses(input, strict);
    BOOST_TEST(!c.gateway.allows_insecure_backends);
    const std::string report = report_text(c);
    BOOST_TEST(report.find("proxy-ssl-verify=\"(unset)\": differs: off: InsecureSkipVerification, refused by the "
                           "Gateway") != std::string::npos, report);
}

BOOST_AUTO_TEST_CASE(verify_on_without_a_ca_fails_closed)
{
    const Conversion c = convert_text(ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n"
                                                   "    nginx.ingress.kubernetes.io/proxy-ssl-verify: \"on\"\n"));
    BOOST_TEST_REQUIRE(c.policies.size() == 1u);
    BOOST_TEST(!c.policies[0].skip_verify);
    BOOST_TEST(!c.gateway.allows_insecure_backends);
    BOOST_TEST(c.dropped());
    BOOST_TEST(manifests_yaml(c).find("name: app-backend-tls-ca-missing") != std::string::npos);
}

// A CA in another namespace cannot be a policy's: not converted, and the
// policy fails closed rather than skip verification
BOOST_AUTO_TEST_CASE(a_ca_of_another_namespace_is_not_taken)
{
    const Conversion c = convert_text(ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n"
                                                   "    nginx.ingress.kubernetes.io/proxy-ssl-verify: \"on\"\n"
                                                   "    nginx.ingress.kubernetes.io/proxy-ssl-secret: other/ca\n"));
    BOOST_TEST_REQUIRE(c.policies.size() == 1u);
    BOOST_TEST(!c.policies[0].skip_verify);
    BOOST_TEST(c.policies[0].ca_secret == "");
    BOOST_TEST(c.dropped());
}

// proxy-ssl-secret's client certificates: the first by namespace/name is
// the Gateway's; another of the Ingress's namespace its policy's own; one
// of another namespace is not converted, and says where it must be
BOOST_AUTO_TEST_CASE(a_second_client_certificate_is_the_policy_s_own)
{
    const auto named = [](const std::string &ingress, const std::string &service, const std::string &secret) {
        return std::regex_replace(
            std::regex_replace(ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n"
                                            "    nginx.ingress.kubernetes.io/proxy-ssl-secret: " + secret + "\n"),
                               std::regex("name: app\n"), "name: " + ingress + "\n"),
            std::regex("name: app,"), "name: " + service + ",");
    };
    ConvertInput input;
    input.ingresses = read_ingresses(named("a", "first", "shop/client-a") + "---\n" + named("b", "second", "shop/client-b")
                                         + "---\n" + named("c", "third", "vault/client-c"),
                                     "in.yaml");
    for (const auto &[ns, name] : {std::pair<std::string, std::string>{"shop", "client-a"}, {"shop", "client-b"},
                                   {"vault", "client-c"}}) {
        g2n::Secret secret;
        secret.meta.namespace_ = ns;
        secret.meta.name = name;
        secret.type = "kubernetes.io/tls";
        secret.data = {{"tls.crt", "(certificate)"}, {"tls.key", "(key)"}};
        input.objects.secrets.push_back(secret);
    }
    const Conversion c = convert_ingresses(input, ConvertOptions{});
    BOOST_TEST(c.gateway.client_certificate_name == "client-a");
    std::map<std::string, std::string> own;
    for (const PolicyOut &p : c.policies) own[p.service] = p.client_secret;
    BOOST_TEST(own["first"] == "");
    BOOST_TEST(own["second"] == "client-b");
    BOOST_TEST(own["third"] == "");
    std::map<std::string, std::string> reported;
    for (const ReportEntry &e : c.report) {
        if (e.item == "nginx.ingress.kubernetes.io/proxy-ssl-secret") {
            reported[e.ingress] = std::string(outcome_name(e.outcome)) + ": " + e.note;
        }
    }
    BOOST_TEST(reported["shop/b"].find("converted: tls.crt: the policy's own client certificate") == 0u, reported["shop/b"]);
    BOOST_TEST(reported["shop/c"].find("not-converted:") == 0u, reported["shop/c"]);
    BOOST_TEST(reported["shop/c"].find("copy the Secret there") != std::string::npos, reported["shop/c"]);
    BOOST_TEST(c.dropped());
    BOOST_TEST(manifests_yaml(c).find("gateway2nginx.io/client-certificate: client-b\n") != std::string::npos);
}

// Ingresses that differ over one Service: a port is TLS or not for every
// client, so the policy is the one that verifies most, whatever the order
BOOST_AUTO_TEST_CASE(the_ingress_that_verifies_most_sets_the_policy)
{
    const std::string plain = ingress_with("    nginx.ingress.kubernetes.io/ssl-redirect: \"false\"\n");
    const std::string skip = std::regex_replace(ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n"),
                                                std::regex("name: app\n"), "name: b-skip\n");
    const std::string verify = std::regex_replace(
        ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n"
                     "    nginx.ingress.kubernetes.io/proxy-ssl-verify: \"on\"\n"
                     "    nginx.ingress.kubernetes.io/proxy-ssl-secret: shop/ca\n"),
        std::regex("name: app\n"), "name: 0-verify\n");
    for (const std::string &yaml : {plain + "---\n" + skip + "---\n" + verify, verify + "---\n" + skip + "---\n" + plain}) {
        const Conversion c = convert_text(yaml);
        BOOST_TEST_REQUIRE(c.policies.size() == 1u);
        BOOST_TEST(!c.policies[0].skip_verify);
        BOOST_TEST(c.policies[0].ca_secret == "ca");
        size_t lost = 0;
        for (const ReportEntry &e : c.report) {
            if (e.item == "backend shop/app") {
                lost++;
                BOOST_TEST(std::string(outcome_name(e.outcome)) == "not-converted");
                BOOST_TEST(e.ingress != "shop/0-verify");
            }
        }
        BOOST_TEST(lost == 2u);
    }
}

// auth-tls-*: Gateway API validates clients per port, so one Ingress
// asking makes port 443 ask every client; what cannot be honoured leaves
// the Ingress's routes out rather than admit clients ingress-nginx refused
BOOST_AUTO_TEST_CASE(client_validation_is_per_port_and_fails_closed)
{
    const std::string tls = "spec:\n  tls: [{hosts: [app.example.com], secretName: app-tls}]\n";
    auto with_tls = [&](const std::string &annotations, const std::string &name = "app") {
        return std::regex_replace(std::regex_replace(ingress_with(annotations), std::regex("spec:\n"), tls),
                                  std::regex("  name: app\n"), "  name: " + name + "\n");
    };
    const std::string on = "    nginx.ingress.kubernetes.io/auth-tls-secret: shop/ca\n";
    Conversion c = convert_text(with_tls(on));
    BOOST_TEST_REQUIRE(c.gateway.frontend.has_value());
    BOOST_TEST(!c.gateway.frontend->insecure_fallback);
    BOOST_TEST((c.gateway.frontend->ca_secrets == std::vector<std::pair<std::string, std::string>>{{"shop", "ca"}}));
    BOOST_TEST(c.gateway.listeners.at(1).client_verify_depth == 1);  // ingress-nginx's default
    BOOST_TEST(!c.dropped(), report_text(c));
    BOOST_TEST(report_text(c).find("auth-tls-secret=\"shop/ca\": differs: ca.crt: the Gateway's frontend "
                                   "validation") != std::string::npos,  // the Secret not given: said
               report_text(c));
    const std::string out = manifests_yaml(c);
    BOOST_TEST(out.find("gateway2nginx.io/client-verify-depth: \"1\"") != std::string::npos, out);
    BOOST_TEST(out.find("mode: AllowValidOnly") != std::string::npos, out);
    BOOST_TEST_REQUIRE(c.grants.size() == 1u);  // the CA granted to the Gateway
    BOOST_TEST((c.grants[0].secrets == std::vector<std::string>{"app-tls", "ca"}));

    c = convert_text(with_tls(on + "    nginx.ingress.kubernetes.io/auth-tls-verify-client: optional\n"
                                   "    nginx.ingress.kubernetes.io/auth-tls-verify-depth: \"3\"\n"));
    BOOST_TEST_REQUIRE(c.gateway.frontend.has_value());
    BOOST_TEST(c.gateway.frontend->insecure_fallback);
    BOOST_TEST(c.gateway.listeners.at(1).client_verify_depth == 3);

    c = convert_text(with_tls(on + "    nginx.ingress.kubernetes.io/auth-tls-verify-client: \"off\"\n"));
    BOOST_TEST(!c.gateway.frontend.has_value());
    BOOST_TEST(!c.dropped());

    // what Gateway API cannot check: not served at all
    for (const std::string &refused : {on + "    nginx.ingress.kubernetes.io/auth-tls-match-cn: \"CN=a\"\n",
                                       std::string("    nginx.ingress.kubernetes.io/auth-tls-secret: \"a/b/c\"\n")}) {
        c = convert_text(with_tls(refused));
        BOOST_TEST(c.routes.empty(), refused);
        BOOST_TEST(!c.gateway.frontend.has_value());
        BOOST_TEST(c.dropped());
    }

    // an Ingress asking nothing, on the port another validates: told so,
    // and validated (fail closed), whatever the order
    const std::string strict = with_tls(on, "a-strict"), loose = with_tls("    x: y\n", "b-loose"),
                      optional = with_tls(on + "    nginx.ingress.kubernetes.io/auth-tls-verify-client: optional\n",
                                          "c-optional");
    for (const std::string &yaml : {strict + "---\n" + loose + "---\n" + optional,
                                    optional + "---\n" + loose + "---\n" + strict}) {
        c = convert_text(yaml);
        BOOST_TEST_REQUIRE(c.gateway.frontend.has_value());
        BOOST_TEST(!c.gateway.frontend->insecure_fallback);
        std::set<std::string> told;
        for (const ReportEntry &e : c.report) {
            if (e.item == "client certificates" && e.outcome == Outcome::NotConverted) told.insert(e.ingress);
        }
        BOOST_TEST((told == std::set<std::string>{"shop/b-loose", "shop/c-optional"}), report_text(c));
    }
}

// proxy-*-timeout: one backendRequest timeout, the longest, which bounds
// each wait; a difference unless all three agree
BOOST_AUTO_TEST_CASE(timeouts_become_the_backend_request_timeout)
{
    auto outcome_of = [](const Conversion &c, const std::string &key) {
        for (const ReportEntry &e : c.report) {
            if (e.item == "nginx.ingress.kubernetes.io/" + key) return std::string(outcome_name(e.outcome));
        }
        return std::string("(none)");
    };
    Conversion c = convert_text(ingress_with("    nginx.ingress.kubernetes.io/proxy-read-timeout: \"120\"\n"));
    BOOST_TEST_REQUIRE(c.routes.size() == 1u);
    BOOST_TEST(c.routes[0].rules.at(0).backend_timeout == "120s");
    BOOST_TEST(outcome_of(c, "proxy-read-timeout") == "differs");     // connect: 5 at ingress-nginx
    BOOST_TEST(outcome_of(c, "proxy-connect-timeout") == "differs");  // unset, reported all the same
    g2n::Manifests m;
    std::istringstream out(manifests_yaml(c));
    g2n::parse_stream(out, "out.yaml", &m);
    BOOST_TEST_REQUIRE(m.http_routes.size() == 1u);
    BOOST_TEST(m.http_routes[0].rules.at(0).backend_timeout_ms == 120000);

    c = convert_text(ingress_with("    nginx.ingress.kubernetes.io/proxy-read-timeout: \"7\"\n"
                                  "    nginx.ingress.kubernetes.io/proxy-send-timeout: \"7\"\n"
                                  "    nginx.ingress.kubernetes.io/proxy-connect-timeout: \"7\"\n"));
    BOOST_TEST(c.routes.at(0).rules.at(0).backend_timeout == "7s");
    BOOST_TEST(outcome_of(c, "proxy-send-timeout") == "converted");
    BOOST_TEST(!c.dropped());

    c = convert_text(ingress_with("    nginx.ingress.kubernetes.io/proxy-read-timeout: 10s\n"));
    BOOST_TEST(c.routes.at(0).rules.at(0).backend_timeout == "");
    BOOST_TEST(outcome_of(c, "proxy-read-timeout") == "not-converted");

    c = convert_text(ingress_with("    nginx.ingress.kubernetes.io/ssl-redirect: \"false\"\n"));
    BOOST_TEST(c.routes.at(0).rules.at(0).backend_timeout == "");
    BOOST_TEST(outcome_of(c, "proxy-read-timeout") == "(none)");
}

// backend-protocol GRPC and GRPCS: GRPCRoutes, whose matches are calls
BOOST_AUTO_TEST_CASE(grpc_paths_become_grpcroute_calls)
{
    const std::string grpcs = ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: grpcs\n"
                                           "    nginx.ingress.kubernetes.io/rewrite-target: /x\n");
    for (const auto &[path, type, service, method] :
         std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
             {"/", "Prefix", "", ""},
             {"/pkg.Echo", "Prefix", "pkg.Echo", ""},
             {"/pkg.Echo/", "Prefix", "pkg.Echo", ""},
             {"/pkg.Echo/Say", "Exact", "pkg.Echo", "Say"},
             {"/pkg.Echo/Say", "ImplementationSpecific", "pkg.Echo", "Say"}}) {
        const Conversion c = convert_text(std::regex_replace(
            std::regex_replace(grpcs, std::regex("path: /\n"), "path: " + path + "\n"),
            std::regex("pathType: Prefix"), "pathType: " + type));
        BOOST_TEST_REQUIRE(c.routes.size() == 1u, path);
        BOOST_TEST((c.routes[0].kind == RouteKind::GRPC));
        BOOST_TEST(c.routes[0].rules.at(0).match.service == service);
        BOOST_TEST(c.routes[0].rules.at(0).match.method == method);
        BOOST_TEST(c.routes[0].rules.at(0).rewrite_full_path == "");
        BOOST_TEST_REQUIRE(c.policies.size() == 1u);  // GRPCS: over TLS
        BOOST_TEST(c.dropped());  // rewrite-target: GRPCRoute has none
        const std::string out = manifests_yaml(c);
        BOOST_TEST(out.find("kind: GRPCRoute") != std::string::npos, out);
    }
    for (const char *path : {"/static-files/", "/pkg.Echo/Say/x", "/v1/pkg.Echo/Say"}) {
        const Conversion c = convert_text(std::regex_replace(grpcs, std::regex("path: /\n"), std::string("path: \"") + path + "\"\n"));
        BOOST_TEST(c.routes.empty(), path);
    }
    const Conversion h2c = convert_text(ingress_with("    nginx.ingress.kubernetes.io/backend-protocol: GRPC\n"));
    BOOST_TEST_REQUIRE(h2c.routes.size() == 1u);
    BOOST_TEST((h2c.routes[0].kind == RouteKind::GRPC));
    BOOST_TEST(h2c.policies.empty());
    BOOST_TEST(!h2c.dropped());
}

// ssl-passthrough: TLSRoutes on TLS listeners, on the Gateway, or on one
// of their own where the Gateway serves HTTPS on 443
BOOST_AUTO_TEST_CASE(ssl_passthrough_is_a_tlsroute_by_sni)
{
    const std::string pass = ingress_with("    nginx.ingress.kubernetes.io/ssl-passthrough: \"True\"\n"
                                          "    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n");
    Conversion c = convert_text(pass);
    BOOST_TEST_REQUIRE(c.routes.size() == 1u);
    BOOST_TEST((c.routes[0].kind == RouteKind::TLS));
    BOOST_TEST(c.routes[0].gateway == "ingress-nginx");
    BOOST_TEST(c.routes[0].sections == std::vector<std::string>{"tls-app.example.com"});
    BOOST_TEST(c.policies.empty());  // the TLS is the backend's own
    BOOST_TEST(!c.passthrough.has_value());
    BOOST_TEST(c.gateway.listeners.back().protocol == "TLS");
    BOOST_TEST(!c.dropped(), report_text(c));

    // beside a host with TLS terminated: a Gateway of its own, said
    const std::string terminated =
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n"
        "  tls: [{hosts: [web.example.com], secretName: web-tls}]\n  rules:\n  - host: web.example.com\n"
        "    http:\n      paths:\n      - path: /\n        pathType: Prefix\n"
        "        backend: {service: {name: web, port: {number: 80}}}\n";
    c = convert_text(pass + "---\n" + terminated);
    BOOST_TEST(!c.passthrough.has_value());  // no address for it: not converted
    BOOST_TEST(c.routes.size() == 2u);       // the HTTPS route and its redirect
    BOOST_TEST(c.dropped());
    ConvertInput input;
    input.ingresses = read_ingresses(pass + "---\n" + terminated, "in.yaml");
    ConvertOptions with_address;
    with_address.passthrough_address = "192.0.2.7";
    c = convert_ingresses(input, with_address);
    BOOST_TEST_REQUIRE(c.passthrough.has_value());
    BOOST_TEST(c.passthrough->address == "192.0.2.7");
    BOOST_TEST(c.passthrough->name == "ingress-nginx-passthrough");
    BOOST_TEST(c.passthrough->listeners.size() == 1u);
    for (const ListenerOut &l : c.gateway.listeners) BOOST_TEST(l.protocol != "TLS");
    for (const RouteOut &r : c.routes) {
        BOOST_TEST(r.gateway == (r.kind == RouteKind::TLS ? "ingress-nginx-passthrough" : "ingress-nginx"));
    }
    BOOST_TEST(report_text(c).find("listener tls-app.example.com=\"app.example.com\": differs") != std::string::npos,
               report_text(c));

    // the same host twice: the first keeps it
    c = convert_text(pass + "---\n" + std::regex_replace(pass, std::regex("  name: app\n"), "  name: second\n"));
    BOOST_TEST(c.routes.size() == 1u);
    BOOST_TEST(c.dropped());
}

BOOST_AUTO_TEST_CASE(bad_ingresses_are_named_where)
{
    const std::string no_type = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a, namespace: s}\n"
                                "spec:\n  rules:\n  - http:\n      paths:\n      - path: /\n"
                                "        backend: {service: {name: app, port: {number: 80}}}\n";
    BOOST_CHECK_EXCEPTION(read_ingresses(no_type, "in.yaml"), g2n::InputError, [](const g2n::InputError &e) {
        return std::string(e.what()).find("in.yaml:8:") == 0
               && std::string(e.what()).find("spec.rules[0].http.paths[0].pathType") != std::string::npos;
    });
    const std::string bad_path = std::regex_replace(no_type, std::regex("path: /\n"), "path: \"/a\\nb\"\n        pathType: Prefix\n");
    BOOST_CHECK_THROW(read_ingresses(bad_path, "in.yaml"), g2n::InputError);
    BOOST_CHECK_THROW(read_ingresses("apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: a}\n", "in.yaml"),
                      g2n::InputError);
}

// Annotations are the tenants': whatever a value any annotation convert
// reads holds, the output has the same objects (one Gateway, the route,
// the policy), and gateway2nginx reads it back
BOOST_AUTO_TEST_CASE(no_annotation_value_changes_the_output_shape)
{
    const std::vector<std::string> hostile = {
        "\"a\\nkind: Secret\"", "\"x\\n---\\napiVersion: v1\\nkind: Secret\"", "\"'\\\"{}[]#&*!|>%@`\"",
        "\"$host\"", "\"/$1\\r\\nLocation: evil\"", "\"\\u0000\"", "\"*.example.com\"", "\"" + std::string(300, 'a') + "\"",
        "\"on\"", "\"true\"", "\"GRPCS\"", "\"optional\"", "\"shop/../x\"", "\"/x\\nkind: Secret\"", "\"/x\\r\\nLocation: evil\""};
    for (const AnnotationRow &row : kAnnotations) {  // every annotation convert reads
        const char *key = row.key;
        const std::string others = std::string(std::string(key) == "backend-protocol"
                                                   ? ""
                                                   : "    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n")
                                   + (std::string(key) == "auth-tls-secret"
                                          ? ""
                                          : "    nginx.ingress.kubernetes.io/auth-tls-secret: shop/ca\n");
        for (const std::string &value : hostile) {
            BOOST_TEST_CONTEXT(key << ": " << value)
            {
                std::string yaml = std::regex_replace(
                    ingress_with(std::string("    nginx.ingress.kubernetes.io/") + key + ": " + value + "\n" + others),
                    std::regex("spec:\n"), "spec:\n  tls: [{hosts: [app.example.com], secretName: app-tls}]\n");
                Conversion c;
                try {
                    c = convert_text(yaml);
                } catch (const g2n::InputError &) {
                    continue;  // refused whole, named (a NUL byte)
                }
                const std::string out = manifests_yaml(c);
                g2n::Manifests m;
                std::istringstream in(out);
                BOOST_REQUIRE_NO_THROW(g2n::parse_stream(in, "out.yaml", &m));
                BOOST_TEST(m.gateways.size() == 1u);
                BOOST_TEST(m.secrets.empty());
                BOOST_TEST(m.http_routes.size() <= 2u);
                BOOST_TEST(m.backend_tls_policies.size() <= 1u);
                BOOST_TEST(out.find("Location: evil") == std::string::npos);
                BOOST_TEST(out.find("\nkind: Secret") == std::string::npos);  // no document of its own
            }
        }
    }
}

// docs/migrating-from-ingress-nginx.md is the annotation table: a row for
// each annotation convert knows, and none it does not
BOOST_AUTO_TEST_CASE(the_migration_guide_lists_every_annotation)
{
    const std::string doc = read_text(fs::path(__FILE__).parent_path().parent_path().parent_path() / "docs"
                                      / "migrating-from-ingress-nginx.md");
    BOOST_TEST_REQUIRE(!doc.empty());
    std::set<std::string> listed;
    const std::regex row(R"(^\| `([a-z0-9-]+)` \|)");
    std::istringstream lines(doc);
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_search(line, m, row)) listed.insert(m[1]);
    }
    std::set<std::string> known;
    for (const AnnotationRow &r : kAnnotations) known.insert(r.key);
    BOOST_TEST(listed == known);
}

BOOST_AUTO_TEST_SUITE_END()
