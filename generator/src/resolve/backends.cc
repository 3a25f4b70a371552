// backendRefs: the Service port each names, the upstream it feeds, and
// the endpoints a tenant may point it at.
#include "resolve/resolver.h"

namespace g2n {

// The Service and port a backendRef names; null, and why in *refs,
// when the route may not or cannot refer to it.
const ServicePort *Resolver::referenced_port(const HTTPRoute &r, const BackendRef &b, const Service **svc_out,
                                   Condition *refs) const
{
    std::string ns = b.namespace_.empty() ? r.meta.namespace_ : b.namespace_;
    if (!b.group.empty() || b.kind != "Service") {
        *refs = cond::route_invalid_kind("backendRef " + b.name + ": kind " + b.kind + " is not supported");
        return nullptr;
    }
    if (ns != r.meta.namespace_ && !granted(m_, route_kind_name(r.kind), r.meta.namespace_, "Service", ns, b.name)) {
        *refs = cond::route_ref_not_permitted("backendRef Service " + ns + "/" + b.name
                                              + " is in another namespace and no ReferenceGrant allows it");
        return nullptr;
    }
    const Service *svc = ObjectIndex::find(objects_.services, ns, b.name);
    if (svc == nullptr) {
        *refs = cond::route_backend_not_found("Service " + ns + "/" + b.name + " does not exist");
        return nullptr;
    }
    auto port = std::find_if(svc->ports.begin(), svc->ports.end(),
                             [&](const ServicePort &p) { return p.port == b.port; });
    if (port == svc->ports.end()) {
        *refs = cond::route_backend_not_found("Service " + ns + "/" + b.name + " has no port "
                                              + std::to_string(b.port));
        return nullptr;
    }
    *svc_out = svc;
    return &*port;
}

// tries: how many tries a request may make (a rule's retries and the
// first), each to a peer of its own in nginx
bool Resolver::resolve_backend(const HTTPRoute &r, const BackendRef &b, const Gateway &gw, BackendTarget target,
                     WeightedUpstream *out, Condition *refs, int tries)
{
    const Service *svc = nullptr;
    const ServicePort *port = referenced_port(r, b, &svc, refs);
    if (port == nullptr) return false;

    // behind a Passthrough listener the client's TLS reaches the backend
    // untouched: a BackendTLSPolicy has nothing to act on (GEP-1897)
    BoundPolicy *policy = nullptr;
    if (target != BackendTarget::StreamPassthrough) {
        policy = policies_.find(objects_.position(*svc), port->name);
        policies_.reached(objects_.position(*svc), port->name, gw.meta.key());
    }
    out->grpc = target == BackendTarget::Grpc;
    // GEP-1911: the port's appProtocol says what the backend speaks;
    // kubernetes.io/h2c is HTTP/2 by prior knowledge (over TLS where a
    // BackendTLSPolicy applies), which nginx speaks by grpc_pass
    if (target == BackendTarget::Http || target == BackendTarget::Mirror) {
        const std::string &protocol = port->app_protocol;
        out->websocket = protocol == "kubernetes.io/ws" || (protocol == "kubernetes.io/wss" && policy != nullptr);
        out->grpc = protocol == "kubernetes.io/h2c";
        const std::string service_port = "Service " + svc->meta.key() + " port " + std::to_string(port->port);
        if (protocol == "kubernetes.io/wss" && policy == nullptr) {
            *refs = cond::route_unsupported_protocol(service_port + ": appProtocol " + protocol
                                                     + " needs a BackendTLSPolicy to verify the backend");
            return false;
        }
        if (out->grpc && target == BackendTarget::Mirror) {
            *refs = cond::route_unsupported_protocol("RequestMirror to " + service_port
                                                     + ": appProtocol kubernetes.io/h2c is not supported for mirrors");
            return false;
        }
        target = out->grpc ? BackendTarget::Grpc : BackendTarget::Http;
    }
    bool denied = policy && policy->policy->insecure() && !gw.allows_insecure_backends;
    out->upstream = upstream_for(*svc, *port, policy, target, denied ? &gw : nullptr, tries);
    out->tls = policy != nullptr;
    out->weight = b.weight;
    return true;
}

// denied_by: a Gateway whose gate refuses the policy's insecure mode; its
// routes get an upstream of their own that is never reached (a 5xx)
std::string Resolver::upstream_for(const Service &svc, const ServicePort &port, const BoundPolicy *policy,
                         BackendTarget target, const Gateway *denied_by, int tries)
{
    const bool stream = target == BackendTarget::StreamTerminate || target == BackendTarget::StreamPassthrough;
    std::string name = "backend_" + safe_name(svc.meta.namespace_) + "_" + safe_name(svc.meta.name)
                       + "_" + std::to_string(port.port) + (denied_by ? "_insecure_denied" : "")
                       + (target == BackendTarget::StreamPassthrough ? "_passthrough" : "")
                       + (tries > 1 ? "_tries" + std::to_string(tries) : "");
    auto [upstream, added] = (stream ? stream_upstreams_ : upstreams_).get(name);
    Upstream &u = *upstream;
    if (target == BackendTarget::Grpc) u.for_grpc = true;
    if (target == BackendTarget::Http || target == BackendTarget::StreamTerminate) u.for_http = true;
    if (!added) return name;

    u.name = name;
    u.comment = "Service " + svc.meta.key() + " port " + std::to_string(port.port);
    u.tenant = safe_name(svc.meta.namespace_);
    u.tries = tries;
    for (const EndpointSlice *es_ptr : objects_.slices_of_service[objects_.position(svc)]) {
        const EndpointSlice &es = *es_ptr;
        for (const EndpointPort &ep : es.ports) {
            if (ep.name != port.name) continue;
            for (const std::string &addr : es.ready_addresses) {
                std::string host = addr.find(':') != std::string::npos ? "[" + addr + "]" : addr;
                if (!endpoint_allowed(host, addr, ep.port, "EndpointSlice " + es.meta.key())) continue;
                u.servers.push_back(host + ":" + std::to_string(ep.port));
            }
        }
    }
    if (u.servers.empty() && svc.type == "ExternalName"
        && endpoint_allowed(svc.external_name, svc.external_name, port.port,
                            "Service " + svc.meta.key() + " (externalName)")) {
        u.servers.push_back(svc.external_name + ":" + std::to_string(port.port));
    }
    if (u.servers.empty() && !o_.resolver.empty()) {
        // inside the cluster: the Service's stable ClusterIP through its DNS
        // name, resolved when nginx loads the configuration
        u.servers.push_back(svc.meta.name + "." + svc.meta.namespace_ + ".svc.cluster.local:"
                            + std::to_string(port.port));
    }
    std::sort(u.servers.begin(), u.servers.end());
    u.servers.erase(std::unique(u.servers.begin(), u.servers.end()), u.servers.end());
    if (policy != nullptr) {
        u.policy = policy->upstream;
        u.comment += ", BackendTLSPolicy " + policy->policy->meta.key();
        if (!policy->usable) {
            u.unusable = "BackendTLSPolicy " + policy->policy->meta.key() + " cannot be honoured";
        } else if (denied_by != nullptr) {
            u.unusable = "BackendTLSPolicy " + policy->policy->meta.key() + " uses an insecure mode that Gateway "
                         + denied_by->meta.key() + " does not allow";
        }
    }
    return name;
}

// whether a tenant's endpoint may be served (endpoints.h); a refused
// one is left out, with a warning naming its object
bool Resolver::endpoint_allowed(const std::string &host, const std::string &address, int port, const std::string &owner)
{
    const std::string why = endpoint_rules_.refusal(address, port);
    if (why.empty()) return true;
    const std::string endpoint = host + ":" + std::to_string(port);
    if (endpoints_refused_.insert(owner + " " + endpoint).second) {
        plan_->warnings.push_back(owner + ": endpoint " + endpoint + " is not served: it " + why);
    }
    return false;
}

}  // namespace g2n
