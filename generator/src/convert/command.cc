#include "convert/command.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "convert/emit.h"
#include "parse/fields.h"
#include "parse/parse.h"

namespace fs = std::filesystem;

namespace g2n::convert {

namespace {

const char *const kUsage = R"(Usage: gateway2nginx convert -f PATH [-f PATH ...] [-o DIR] [options]

Reads Ingress objects (networking.k8s.io/v1) with ingress-nginx's
nginx.ingress.kubernetes.io/ annotations, and the Services and Secrets they
name, and writes the Gateway API objects that serve them with gateway2nginx:
a Gateway, HTTPRoutes, GRPCRoutes, TLSRoutes, BackendTLSPolicies and
ReferenceGrants. Every annotation met is reported: converted, converted
with a difference, not converted (and why), or ignored.

  -f, --filename PATH     a file, a directory or - (standard input); repeatable
  -o, --output DIR        write DIR/gateway-api.yaml, DIR/report.yaml and
                          DIR/report.txt (else the objects on standard output,
                          the report on standard error)
  --gateway NS/NAME       the Gateway written (default ingress-nginx/ingress-nginx)
  --gateway-class NAME    its GatewayClass (default gateway2nginx)
  --ingress-class NAME    the IngressClass ingress-nginx served (default nginx);
                          Ingresses of another class are reported, not converted
  --strict-backends       leave the Gateway's gate closed to skip-verify: the
                          backends ingress-nginx did not verify get 502 until
                          the operator allows them or gives a CA
  --passthrough-address IP
                          the address of a Gateway of its own for the
                          ssl-passthrough hosts, needed when the Gateway
                          also serves HTTPS on 443 (a port has one protocol)
  -h, --help              this

Exit status: 0 everything converted (perhaps with a stated difference),
3 something not converted (the report says what), 1 bad input
(FILE:LINE:COL: message) or usage; nothing is written then.
)";

[[noreturn]] void usage_error(const std::string &what)
{
    std::cerr << "gateway2nginx convert: " << what << "\nTry 'gateway2nginx convert --help'.\n";
    std::exit(1);
}

// TEXT as DIR/NAME, whole or not at all: a temporary file renamed over it
void write_file(const fs::path &dir, const std::string &name, const std::string &text)
{
    const fs::path tmp = dir / ("." + name + ".tmp");
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();
        if (!out) throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
    fs::rename(tmp, dir / name);
}

}  // namespace

int convert_command(int argc, char **argv)
{
    std::vector<std::string> inputs;
    std::string outdir;
    ConvertOptions options;
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(arg + " takes a value");
            return argv[++i];
        };
        if (arg == "-h" || arg == "--help") {
            std::cout << kUsage;
            return 0;
        } else if (arg == "-f" || arg == "--filename") {
            inputs.push_back(value());
        } else if (arg == "-o" || arg == "--output") {
            outdir = value();
        } else if (arg == "--gateway") {
            const std::string v = value();
            const size_t slash = v.find('/');
            if (slash == std::string::npos || !valid_dns1123_label(v.substr(0, slash))
                || !valid_dns1123_subdomain(v.substr(slash + 1))) {
                usage_error("--gateway takes NAMESPACE/NAME");
            }
            options.gateway_namespace = v.substr(0, slash);
            options.gateway_name = v.substr(slash + 1);
        } else if (arg == "--gateway-class") {
            options.gateway_class = value();
            if (!valid_dns1123_subdomain(options.gateway_class)) usage_error("--gateway-class takes an object name");
        } else if (arg == "--ingress-class") {
            options.ingress_class = value();
        } else if (arg == "--passthrough-address") {
            options.passthrough_address = value();
            if (!valid_ip_address(options.passthrough_address)) usage_error("--passthrough-address takes an IP address");
        } else if (arg == "--strict-backends") {
            options.strict_backends = true;
        } else {
            usage_error("unknown option " + printable(arg));
        }
    }
    if (inputs.empty()) usage_error("no input: give -f PATH");
    Conversion conversion;
    try {
        conversion = convert_ingresses(read_convert_input(inputs), options);
    } catch (const InputError &e) {
        std::cerr << "gateway2nginx convert: " << printable(e.what()) << "\n";
        return 1;
    }
    const std::string objects = manifests_yaml(conversion);
    const std::string text = report_text(conversion);
    if (outdir.empty()) {
        std::cout << objects;
        std::cerr << text;
    } else {
        try {
            fs::create_directories(outdir);
            write_file(outdir, "gateway-api.yaml", objects);
            write_file(outdir, "report.yaml", report_yaml(conversion));
            write_file(outdir, "report.txt", text);
        } catch (const std::exception &e) {
            std::cerr << "gateway2nginx convert: " << printable(e.what()) << "\n";
            return 1;
        }
        std::cerr << text;
    }
    return conversion.dropped() ? 3 : 0;
}

}  // namespace g2n::convert
