# The stream module: proxy_ssl to TLS backends verified by the module, the
# same directives, invariants and variables as http. Requests are HTTP over
# the plain TCP front of a stream server (--- stream).
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: SAN URI match through the stream proxy, variables in the stream log
--- stream_config
    log_format verify '$upstream_ssl_verify $upstream_ssl_verify_mode $upstream_ssl_policy $upstream_ssl_verified_by';
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        access_log logs/access.log verify;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl on;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        proxy_ssl_policy_name tcp/spiffe;
    }
--- stream
--- request
GET /over-tcp
--- error_code: 200
--- response_body
backend=spiffe sni=abc.example.com path=/over-tcp
--- access_log
SUCCESS strict tcp/spiffe uri:spiffe://abc.example.com/test-identity

=== TEST 2: a SAN mismatch closes the stream before a byte reaches the backend
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:nope.example.com;
        proxy_ssl_policy_name tcp/mismatch;
    }
--- stream
--- request
GET /secret
--- error_code: 0
--- error_log
gateway_tls: backend certificate rejected: policy "tcp/mismatch"
reason "san"
--- no_backend_log
/secret

=== TEST 3: pins, expiry and skip in stream
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
    }
--- stream
--- request
GET /pinned
--- error_code: 200
--- response_body
backend=selfsigned sni= path=/pinned

=== TEST 4: expired leaf refused by strict
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- stream
--- request
GET /old
--- error_code: 0
--- error_log
reason "expired"

=== TEST 5: a policy without proxy_ssl on fails nginx -t (never plaintext)
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_verify_mode strict" in \S+nginx.conf:\d+ needs "proxy_ssl on"/

=== TEST 6: the gate and the audit line in stream
--- stream_config
    proxy_ssl_verify_insecure deny;
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl on;
        proxy_ssl_verify_mode skip;
    }
--- must_die
--- error_log eval
[qr/\[warn\] .*insecure backend verification "proxy_ssl_verify_mode skip"/,
 qr/"proxy_ssl_verify_mode skip" in \S+nginx.conf:\d+ is not allowed by "proxy_ssl_verify_insecure deny"/]

=== TEST 7: sessions resume within a policy, never across two (stock nginx caches them per peer)
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
        proxy_ssl_verify_mode skip;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:nope.example.com;
    }
--- stream
--- request eval
["GET /lenient", "GET /lenient", '@1 GET /strict']
--- error_code eval
[200, 200, 0]
--- response_headers eval
["X-Backend-Session-Reused: .", "X-Backend-Session-Reused: r", ""]
--- error_log
reason "san"
--- no_backend_log
/strict

=== TEST 8: upstream{} policies: each upstream verified under its own
--- stream_config
    log_format verify '$upstream_ssl_verify $upstream_ssl_policy';
    upstream dns_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name tcp/dns;
        proxy_ssl_policy_hostname other.example.com;
    }
    upstream pinned_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
        proxy_ssl_policy_name tcp/pinned;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        access_log logs/access.log verify;
        proxy_pass dns_backend;
        proxy_ssl on;
        proxy_ssl_server_name on;
        proxy_ssl_name $upstream_ssl_policy_hostname;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_pass pinned_backend;
        proxy_ssl on;
    }
--- stream
--- request eval
["GET /dns", '@1 GET /pinned']
--- error_code eval
[200, 0]
--- response_body_like eval
["^backend=leaf sni=other.example.com path=/dns\n\$", ""]
--- access_log
SUCCESS tcp/dns
--- error_log
policy "tcp/pinned", upstream
reason "pin"
--- no_backend_log
/pinned

=== TEST 9: an upstream{} policy behind a server without proxy_ssl fails closed
--- stream_config
    upstream guarded {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name tcp/guarded;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass guarded;
    }
--- stream
--- request
GET /plain
--- error_code: 0
--- error_log
gateway_tls: policy "tcp/guarded" requires TLS, but upstream "guarded" is proxied without "proxy_ssl on"
--- no_backend_log
/plain

=== TEST 10: http and stream policies in one nginx: each module keeps its own hooks and state
--- config
    location /http {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name web/leaf;
        add_header X-Verify $upstream_ssl_verify always;
        add_header X-Policy $upstream_ssl_policy always;
    }
--- stream_config
    log_format verify '$upstream_ssl_verify $upstream_ssl_policy';
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        access_log logs/access.log verify;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl on;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        proxy_ssl_policy_name tcp/spiffe;
    }
--- request eval
['GET /http', '@0 GET /stream', 'GET /http', '@0 GET /stream']
--- error_code eval
[200, 200, 200, 200]
--- response_headers eval
["X-Verify: SUCCESS\nX-Policy: web/leaf", "", "X-Verify: SUCCESS\nX-Policy: web/leaf", ""]
--- access_log
SUCCESS tcp/spiffe
--- no_error_log
signal 11
[alert]

=== TEST 11: the gate holds where the peer is chosen: an insecure upstream{} reached through a variable is refused
--- stream_config
    upstream insecure_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_verify_mode skip;
        proxy_ssl_policy_name tcp/insecure;
    }
    map $server_port $gtls_backend {
        default insecure_backend;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_verify_insecure deny;
        proxy_pass $gtls_backend;
        proxy_ssl on;
    }
--- stream
--- request
GET /insecure
--- error_code: 0
--- error_log
gateway_tls: policy "tcp/insecure" of upstream "insecure_backend" ("proxy_ssl_verify_mode skip") is not allowed by "proxy_ssl_verify_insecure deny" in this server
--- no_backend_log
/insecure

=== TEST 12: one rule for what is missing, as in http: no policy, no verdict, every peer variable "-"
--- stream_config
    log_format all 'verify=$upstream_ssl_verify mode=$upstream_ssl_verify_mode policy=[$upstream_ssl_policy] san=$upstream_ssl_peer_san cert=$upstream_ssl_peer_cert_sha256 spki=$upstream_ssl_peer_spki_sha256 by=$upstream_ssl_verified_by';
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        access_log logs/access.log all;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
    }
--- stream
--- request
GET /stock
--- error_code: 200
--- access_log
verify=NONE mode=off policy=[] san=- cert=- spki=- by=-
