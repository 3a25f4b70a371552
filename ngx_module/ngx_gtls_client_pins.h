// Client certificate pinning on listeners (GEP-4078), shared
// by the http and stream modules: ssl_verify_client_pin and
// ssl_verify_client_pin_certificate in a server, enforced in the TLS
// handshake of that server's SSL_CTX.
#pragma once

#include <string>
#include <vector>

#include "ngx_gtls_nginx.h"

#include "gtls_verify.h"
#include "ngx_gtls_status.h"

// The values of ngx_http_ssl_module's and ngx_stream_ssl_module's
// ssl_verify_client (their ngx_conf_enum_t tables; nginx names none).
enum {
    NGX_GTLS_VERIFY_CLIENT_OFF = 0,
    NGX_GTLS_VERIFY_CLIENT_ON = 1,
    NGX_GTLS_VERIFY_CLIENT_OPTIONAL = 2,
    NGX_GTLS_VERIFY_CLIENT_OPTIONAL_NO_CA = 3
};

// ssl_verify_client_handshake: off, on (a client that fails is refused in
// the handshake), fallback (every client is admitted, GEP-91
// AllowInsecureFallback, whatever its chain's error).
enum {
    NGX_GTLS_CLIENT_HANDSHAKE_OFF = 0,
    NGX_GTLS_CLIENT_HANDSHAKE_ON = 1,
    NGX_GTLS_CLIENT_HANDSHAKE_FALLBACK = 2
};

// What a server's handshakes check, built once at configuration time.
struct ngx_gtls_client_pins_t {
    gtls::Policy        record;   // the pins, and the name the status shows
    ngx_uint_t          verify;   // ssl_verify_client (NGX_GTLS_VERIFY_CLIENT_*)
    ngx_uint_t          handshake;  // NGX_GTLS_CLIENT_HANDSHAKE_*
    ngx_gtls_status_t  *status;   // where refusals and admissions are counted
    std::string         session_context;  // the SSL_CTX's session ID context
};

// The directives of one server.
typedef struct {
    ngx_array_t             *pins;              // ngx_str_t SPECs
    ngx_array_t             *pin_certificates;  // ngx_str_t "sha256-cert:" SPECs
    ngx_uint_t               handshake;         // ssl_verify_client_handshake (NGX_GTLS_CLIENT_HANDSHAKE_*)
    ngx_str_t                file;              // where the first one was set
    ngx_uint_t               line;
    ngx_gtls_client_pins_t  *built;             // null: no client pins here
} ngx_gtls_client_pin_conf_t;

void ngx_gtls_init_client_pin_conf(ngx_gtls_client_pin_conf_t *conf);
// The words of ssl_verify_client_handshake (ngx_conf_set_enum_slot's table).
extern ngx_conf_enum_t ngx_gtls_client_handshakes[];

// Directive handlers, as nginx's ngx_conf_set_*_slot: the
// ngx_gtls_client_pin_conf_t at cmd->offset of the srv conf (for the
// handshake, its handshake field).
char *ngx_gtls_conf_client_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *srv_conf);
char *ngx_gtls_conf_client_pin_certificate(ngx_conf_t *cf, ngx_command_t *cmd, void *srv_conf);
char *ngx_gtls_conf_client_handshake(ngx_conf_t *cf, ngx_command_t *cmd, void *srv_conf);

// Checks the server's TLS settings and hooks the pins (or, with
// ssl_verify_client_handshake alone, the CA) into its SSL_CTX: the client's
// certificate must match a pin, if any, and, unless optional_no_ca, pass
// the CA, or the handshake fails with an alert; the session ID
// context carries the pins, so no session made under other pins (or none)
// is resumed here, whichever server issued it.
ngx_int_t ngx_gtls_install_client_pins(ngx_conf_t *cf, ngx_gtls_client_pin_conf_t *conf, ngx_ssl_t *ssl,
                                       ngx_uint_t verify, ngx_gtls_status_t *status);

// Sessions and servers with client pins. OpenSSL makes a session, and
// checks one offered, under the server a handshake began in (the port's
// default), before SNI picks another (CVE-2025-23419's class, which nginx
// 1.26.3 mends for sessions that carry another server name, not for those
// made without SNI). So each session made, or ticketed, is marked with the
// server SNI picked (gtls::mark_session_for), and a resumed session goes on
// in a server with pins (or ssl_verify_client_handshake) only if it was
// made for that server.
//
// ngx_gtls_client_session_mark: for a handshake whose server SNI has
// picked, marks its new session (none when the session is resumed).
void ngx_gtls_client_session_mark(ngx_ssl_conn_t *ssl);
// ngx_gtls_client_session_check: SSL_TLSEXT_ERR_OK, or, with a line in the
// log, SSL_TLSEXT_ERR_ALERT_FATAL and the alert in `ad`, for a session
// resumed into a pinned server it was not made for.
int ngx_gtls_client_session_check(ngx_ssl_conn_t *ssl, int *ad);
// Where SNI picks the server but the module cannot step in after it (the
// stream SSL module's SNI step is private): marks new sessions when their
// tickets are made, on every server context of the port. (Sessions kept in
// nginx's caches instead, `ssl_session_tickets off`, stay unmarked and
// count by their context; nginx 1.26.3 refuses those that name another
// server itself.)
ngx_int_t ngx_gtls_client_session_ticket_marks(ngx_conf_t *cf, SSL_CTX *ctx);

// $ssl_client_spki_sha256, $ssl_client_cert_sha256, $ssl_client_pin of a
// connection (empty without a client certificate or a matching pin).
enum ngx_gtls_client_variable_e { NGX_GTLS_CLIENT_SPKI, NGX_GTLS_CLIENT_CERT, NGX_GTLS_CLIENT_PIN };
std::string ngx_gtls_client_variable(ngx_connection_t *c, const ngx_gtls_client_pins_t *pins,
                                     ngx_gtls_client_variable_e which);
