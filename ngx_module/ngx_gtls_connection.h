// What both modules keep about backend connections: the verdict a TLS
// connection was verified under, and TLS sessions cached per policy and
// peer so that a session never carries a verdict to another policy.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ngx_gtls_nginx.h"

#include "gtls_verify.h"
#include "ngx_gtls_status.h"

// Hung on the SSL object, owned by the connection's pool.
struct ngx_gtls_connection_t {
    const gtls::Policy                    *policy = nullptr;
    std::shared_ptr<const gtls::Verdict>   verdict;
    std::string                            binding;  // gtls::Binding::key() it was made under
};

struct ngx_gtls_session_entry_t {
    SSL_SESSION                           *session = nullptr;
    std::shared_ptr<const gtls::Verdict>   verdict;
    const gtls::Policy                    *policy = nullptr;  // made under it
};

using ngx_gtls_session_cache_t = std::map<std::string, ngx_gtls_session_entry_t>;

// The SSL ex_data index (one per module .so), made once.
ngx_int_t ngx_gtls_init_connection_index(ngx_log_t *log);
ngx_gtls_connection_t *ngx_gtls_connection(ngx_connection_t *c, bool create);
ngx_gtls_connection_t *ngx_gtls_connection(const SSL *ssl);

// The balancer of a connection made under a policy, wrapped: TLS sessions
// come from and go to the module's cache, keyed by the binding and the
// peer, never nginx's per-peer one; a keepalive connection is reused only
// under the same binding (its verdict then lands in *verdict); every other
// callback gets the balancer's own data back.
struct ngx_gtls_balancer_t {
    const gtls::Policy                     *policy = nullptr;
    gtls::Binding                           binding;  // of this request or session
    ngx_gtls_session_cache_t               *sessions = nullptr;
    std::shared_ptr<const gtls::Verdict>   *verdict = nullptr;

    void                                   *data = nullptr;
    ngx_event_get_peer_pt                   get = nullptr;
    ngx_event_free_peer_pt                  free = nullptr;
    ngx_event_notify_peer_pt                notify = nullptr;
    ngx_event_set_peer_session_pt           set_session = nullptr;
    ngx_event_save_peer_session_pt          save_session = nullptr;
};

void ngx_gtls_wrap_balancer(ngx_peer_connection_t *peer, ngx_gtls_balancer_t *b);

// The backend side of one client request (http) or session (stream): the
// policy it goes out under (null: stock nginx), the verdict on its backend
// connection, and its balancer. Each protocol's state is one of these.
struct ngx_gtls_backend_t {
    const gtls::Policy                    *policy = nullptr;
    std::shared_ptr<const gtls::Verdict>   verdict;
    ngx_gtls_balancer_t                    balancer;
};

// What a backend connection under `policy` is bound to: the name verified
// and sent (`reference_name`) with the upstream's `host`, the TLS context
// of `ssl`, and the client certificate's path where it comes from
// variables (`client_certificate`, else null); all of them outlive it.
gtls::Binding ngx_gtls_binding(const gtls::Policy *policy, const ngx_ssl_t *ssl, std::string_view reference_name,
                               const ngx_str_t &host, const ngx_str_t *client_certificate);

// An init_peer's end, once the protocol's own balancer is in place: under
// a policy, the backend starts without a verdict and its balancer is
// wrapped (ngx_gtls_wrap_balancer) with `binding`. NGX_ERROR, logged, on
// no binding or no memory.
ngx_int_t ngx_gtls_start_backend(ngx_log_t *log, ngx_gtls_backend_t *backend, const gtls::Policy *policy,
                                 std::optional<gtls::Binding> binding, ngx_gtls_session_cache_t *sessions,
                                 ngx_peer_connection_t *peer);

// The handshake's decision on the backend certificate, once the protocol
// found the policy: without one, stock nginx's (OpenSSL's own check, its
// result kept for nginx's check after the handshake; `stock_verify` is
// proxy_ssl_verify, since the module's SSL_CTX always asks for the peer's
// certificate); with one, the verdict, kept by `backend` and by the
// connection (for its session and keepalive), counted in `status`, a
// failure ending the handshake with an alert. What a cert_verify_callback
// returns.
// `reference_name(owner, policy)` gives the name the policy checks (the
// protocol's request or session is the owner); it runs inside the
// decision's exception guard, which nothing may leave into OpenSSL.
using ngx_gtls_reference_name_pt = std::string_view (*)(void *owner, const gtls::Policy *policy);
int ngx_gtls_decide(X509_STORE_CTX *x509_ctx, ngx_connection_t *c, ngx_gtls_backend_t *backend,
                    const gtls::Policy *policy, bool stock_verify, ngx_gtls_reference_name_pt reference_name,
                    void *owner, ngx_str_t *peer_name, ngx_gtls_status_t *status);

// A resumed session skips the certificate: the verdict it was made with
// comes through the connection to the backend that went out under the
// same policy.
void ngx_gtls_resumed_verdict(ngx_gtls_backend_t *backend, const ngx_gtls_connection_t *conn);

// The module's side of a backend handshake: decide under the policy of the
// connection's owner (returns what a cert_verify_callback returns), and
// take a finished handshake's verdict (a resumed session brings the one it
// was made with). A module .so installs one set.
struct ngx_gtls_hooks_t {
    int (*decide)(X509_STORE_CTX *x509_ctx, ngx_connection_t *c);
    void (*handshake_done)(ngx_connection_t *c, ngx_gtls_connection_t *conn);
    // the policy the connection's owner goes out under (null: none)
    const gtls::Policy *(*policy)(ngx_connection_t *c);
};

// Makes the verdict ours in this SSL_CTX: the certificate callback, and
// VERIFY_PEER so that a verdict can fail the handshake whatever stock
// proxy_ssl_verify says; nginx's info callback keeps running. And the
// client certificate: when the backend asks for one, a policy's own
// (proxy_ssl_policy_certificate) is presented over the scope's.
void ngx_gtls_install_ssl_hooks(SSL_CTX *ctx, const ngx_gtls_hooks_t *hooks);

// The one error line per rejected backend, and the handshake's alert.
int ngx_gtls_reject(X509_STORE_CTX *x509_ctx, ngx_log_t *log, const gtls::Policy &policy,
                    ngx_str_t *upstream, const gtls::Verdict &verdict);

// A variable's value: a copy of text in the pool (the verdict it comes from
// may be replaced before the value is used).
ngx_int_t ngx_gtls_variable_text(ngx_pool_t *pool, ngx_variable_value_t *v, const std::string &text);

// A variable's value found: `len` bytes at `data`, which outlive the
// request's use of it (a configuration's, or what the request holds)
inline ngx_int_t ngx_gtls_variable_bytes(ngx_variable_value_t *v, const void *data, size_t len)
{
    v->data = static_cast<u_char *>(const_cast<void *>(data));
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    return NGX_OK;
}

// The variables both modules have: one list, and one rule for a missing
// value. A peer variable before any verdict is not found (either access
// log writes "-"); $upstream_ssl_verify is then NONE, and the mode and
// policy those the backend went out under (off and "" before it did); a
// client variable without a client certificate or pin is "".
enum ngx_gtls_variable_e {
    NGX_GTLS_VAR_VERIFY,
    NGX_GTLS_VAR_VERIFY_MODE,
    NGX_GTLS_VAR_POLICY,
    NGX_GTLS_VAR_PEER_CERT_SHA256,
    NGX_GTLS_VAR_PEER_SPKI_SHA256,
    NGX_GTLS_VAR_PEER_SAN,
    NGX_GTLS_VAR_VERIFIED_BY,
    NGX_GTLS_VAR_CLIENT_SPKI_SHA256,
    NGX_GTLS_VAR_CLIENT_CERT_SHA256,
    NGX_GTLS_VAR_CLIENT_PIN,
};

struct ngx_gtls_variable_t {
    ngx_str_t            name;
    ngx_gtls_variable_e  which;
};

// every variable above, by name; the last has an empty name
extern const ngx_gtls_variable_t ngx_gtls_variables[];

struct ngx_gtls_client_pins_t;

// The value of `which` for a request or session, copied into `pool` (the
// request's, the session's): `backend` its backend side (null before it
// has one), `c` the client's connection and `pins` its server's client
// pins (null: none). Logs to c->log, never throws.
ngx_int_t ngx_gtls_variable(ngx_pool_t *pool, ngx_variable_value_t *v, ngx_gtls_variable_e which,
                            const ngx_gtls_backend_t *backend, ngx_connection_t *c,
                            const ngx_gtls_client_pins_t *pins);
