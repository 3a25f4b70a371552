#include "run/digests.h"

#include <fstream>
#include <iterator>
#include <set>

#include "digest.h"
#include "plan/upstreams.h"
#include "render/nginx_text.h"
#include "render/render.h"
#include "resolve/resolve.h"

namespace fs = std::filesystem;

namespace g2n {

// Left out of the skeleton: the servers of replaceable upstreams, the
// trust of replaceable policies (their CA and pins, and the CA bundles
// only they name), and the key pairs of replaceable listener certificates. A cryptographic digest: tenants write what goes into
// it. A bundle named elsewhere too is in that other text by its name,
// which is its content's digest.
namespace {

// The files of the skeleton: all but the CA bundles only replaceable
// policies name, the replaceable listener certificates' files, and the
// client certificates only replaceable policies present (their files are
// named by their Secret, not their content: one a policy the API does not
// reach presents too is the skeleton's)
void digest_skeleton_files(Sha256Stream &out, const Plan &plan, const Options &options)
{
    std::set<std::string> replaceable;
    const auto policies = trust_replaceable_policies(plan, options);
    for (const auto &[name, policy] : policies) {
        replaceable.insert(policy->ca);
        if (!policy->client_certificate.empty()) replaceable.insert({policy->client_certificate, policy->client_key});
    }
    for (const std::vector<Upstream> *upstreams : {&plan.upstreams, &plan.stream_upstreams}) {
        for (const Upstream &u : *upstreams) {
            if (!u.tls() || u.policy->client_certificate.empty()) continue;
            auto p = policies.find(u.policy->name);
            if (p == policies.end() || p->second->client_certificate != u.policy->client_certificate) {
                replaceable.erase(u.policy->client_certificate);
                replaceable.erase(u.policy->client_key);
            }
        }
    }
    for (const auto &[name, c] : replaceable_certificates(plan, options)) replaceable.insert({c.certificate, c.key});
    for (const OutputFile &f : plan.files) {
        if (replaceable.count(f.path)) continue;
        out << "\n\x01" << f.path << " " << f.mode << "\n" << f.content;
    }
}

}  // namespace

std::string skeleton_digest(const Plan &plan, const Options &options)
{
    Options skeleton = options;
    skeleton.endpoint_skeleton = true;
    Sha256Stream text;
    text << render_nginx_conf(plan, skeleton) << "\n\x01http\n";
    render_http_conf(text, plan, skeleton);
    text << "\n\x01stream\n" << render_stream_conf(plan, skeleton);
    digest_skeleton_files(text, plan, options);
    return text.digest();
}

SkeletonParts skeleton_parts(const Plan &plan, const Options &options)
{
    Options skeleton = options;
    skeleton.endpoint_skeleton = true;
    SkeletonParts parts;
    Sha256Stream listeners, certificates, backends;
    listeners << render_nginx_conf(plan, skeleton);
    auto listener = [&](const std::string &listen, bool ssl, const std::string &certificate, const std::string &key,
                        const ClientValidation &client) {
        listeners << "\n\x01" << listen << " " << ssl << " " << certificate << " " << key << " "
                  << static_cast<int>(client.verify) << " " << client.ca;
        for (const std::string &pin : client.pins) listeners << " " << pin;
    };
    for (const Server &s : plan.servers) {
        if (s.served_by_listener) continue;
        listener(s.listen, s.ssl, s.certificate, s.certificate_key, s.client);
        listeners << " " << s.server_name << " " << s.listener_hostname << " " << s.insecure_allowed << " "
                  << s.backend_client.certificate << " " << s.backend_client.key;
    }
    for (const StreamServer &s : plan.stream_servers) {
        listener(s.listen, s.terminate, s.certificate, s.certificate_key, s.client);
    }
    digest_skeleton_files(certificates, plan, options);
    nginx::Writer w(backends);
    // (zones named alike on both sides of a comparison: any prefix does)
    render_upstreams(w, plan.upstreams, api_replaceable, "z", trust_replaceable_policies(plan, options), skeleton);
    parts.listeners = listeners.digest();
    parts.certificates = certificates.digest();
    parts.stream = sha256(render_stream_conf(plan, skeleton));
    parts.backends = backends.digest();
    return parts;
}

ReloadReason reload_reason(const SkeletonParts &before, const SkeletonParts &after)
{
    if (before.listeners != after.listeners) return ReloadReason::Listeners;
    if (before.certificates != after.certificates) return ReloadReason::Certificates;
    if (before.stream != after.stream) return ReloadReason::StreamRoutes;
    if (before.backends != after.backends) return ReloadReason::Backends;
    return ReloadReason::Routes;
}

// digested as it is rendered
std::string status_digest(const Plan &plan, const Options &options)
{
    Sha256Stream text;
    render_status(text, plan, options);
    return text.digest();
}

namespace {

std::string file_text(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    return in ? std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) : std::string("\x01");
}

std::string file_digest(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return "";
    Sha256Stream digest;
    digest << in.rdbuf();
    return digest.digest();
}

}  // namespace

bool outdir_holds(const fs::path &outdir, const Plan &plan, const Options &options)
{
    // http.conf by digest: at 10,000 routes, neither it nor its
    // rendering is held whole
    Sha256Stream http;
    render_http_conf(http, plan, options);
    if (file_text(outdir / "nginx.conf") != render_nginx_conf(plan, options)
        || file_digest(outdir / "http.conf") != http.digest()
        || file_text(outdir / "stream.conf") != render_stream_conf(plan, options)) {
        return false;
    }
    for (const OutputFile &f : plan.files) {
        if (file_text(outdir / f.path) != f.content) return false;
    }
    return true;
}

}  // namespace g2n
