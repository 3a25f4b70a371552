// gateway_tls_certificate, in http and stream servers: a server's
// certificate replaced through the upstream API for new handshakes, with
// no reload. Every server{} naming a certificate gets a certificate
// callback on its SSL context; a handshake there takes the key pair last
// pushed (held by the handshake while it lasts: a push never changes it
// under one in flight), or the configured ssl_certificate when none was.
// The http module's upstream API takes the pushes for both modules: the
// stream module's certificates reach it through its export
// (ngx_gtls_nginx_layout.h).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "gtls_certificate.h"
#include "ngx_gtls_nginx.h"

// What another worker took through the API, taken by this one too: the
// http module's catch-up, which it gives the stream module at init_module.
struct ngx_gtls_catch_up_t {
    void  (*run)(void *data) = nullptr;
    void   *data = nullptr;
};

struct ngx_gtls_certificate_t {
    std::string                            name;
    const ngx_gtls_catch_up_t             *catch_up = nullptr;
    std::string                            configured_sha256;  // the configured leaf's
    uint64_t                               configured_fingerprint = 0;  // what a state entry replaced
    std::shared_ptr<const gtls::KeyPair>   pushed;  // null: as configured
    uint64_t                               sequence = 0;  // the state entry it came from
};

using ngx_gtls_certificates_t = std::map<std::string, ngx_gtls_certificate_t>;

// merge_srv_conf: `name` given to the server's SSL context (its
// ssl_certificate without variables), in `*certificates` (made on first
// use); servers naming one certificate must be configured with the same
// leaf.
char *ngx_gtls_name_certificate(ngx_conf_t *cf, ngx_gtls_certificates_t **certificates,
                                const ngx_gtls_catch_up_t *catch_up, const ngx_str_t &name, ngx_ssl_t *ssl,
                                bool variables);

ngx_gtls_certificate_t *ngx_gtls_find_certificate(ngx_gtls_certificates_t *certificates, const std::string &name);

// A kept state entry's key pair put in place here (`json` as
// listener_certificate_json wrote it); false, with a log line, when it
// cannot be read (the configured certificate is served).
bool ngx_gtls_take_certificate(ngx_log_t *log, ngx_gtls_certificate_t *c, const std::string &json,
                               uint64_t sequence);
