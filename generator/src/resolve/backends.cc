// backendRefs: the Service port each names, the upstream it feeds, and
// the endpoints a tenant may point it at.
#include "resolve/resolver.h"

namespace g2n {

// The Service and port a backendRef names; null, and why in *refs,
// when the route may not or cannot refer to it.
const ServicePort *Resolver::referenced_port(const Route &r, const BackendRef &b, const Service **svc_out,
                                   Condition *refs) const
{
    std::string ns = b.namespace_.empty() ? r.meta.namespace_ : b.namespace_;
    const Reader reader = r.kind == RouteKind::HTTPRoute || r.kind == RouteKind::GRPCRoute ? Reader::Route
                                                                                           : Reader::StreamRoute;
    if (b.refers_to() != RefKind::Service) {
        *refs = cond::route_invalid_kind("backendRef " + b.name + ": kind " + b.kind + " is not supported");
        return nullptr;
    }
    if (ns != r.meta.namespace_ && !objects_.granted(route_kind_name(r.kind), r.meta.namespace_, "Service", ns, b.name, reader)) {
        *refs = cond::route_ref_not_permitted("backendRef Service " + ns + "/" + b.name
                                              + " is in another namespace and no ReferenceGrant allows it");
        return nullptr;
    }
    const Service *svc = objects_.service(ns, b.name, reader);
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
bool Resolver::resolve_backend(const Route &r, const BackendRef &b, const Gateway &gw, BackendTarget target,
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
        if (ResolveReads *reads = objects_.reads()) reads->reached[svc->meta.key() + ":" + port->name + " " + gw.meta.key()]++;
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
    u.service = svc.meta.key();
    u.service_port = port.port;
    u.servers = service_port_servers(svc, port, objects_.slices_of_service[objects_.position(svc)], endpoint_rules_, o_,
                                     [this](const std::string &owner, const std::string &endpoint, const std::string &why) {
                                         // each said once, though many upstreams share a slice
                                         if (endpoints_refused_.insert(owner + " " + endpoint).second) {
                                             plan_->warnings.push_back(owner + ": endpoint " + endpoint
                                                                       + " is not served: it " + why);
                                         }
                                     });
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

}  // namespace g2n
