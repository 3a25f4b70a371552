# Security invariants: a verdict never crosses policies through a resumed
# TLS session or a reused keepalive connection; no plaintext fallback.
# nginx 1.22 caches upstream TLS sessions per peer and matches keepalive
# connections by address only, so without the module's isolation the second
# request of TESTs 2 and 4 would be served (200) unverified.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: sessions still resume within one policy
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        add_header X-Verify $upstream_ssl_verify always;
        add_header X-Verified-By $upstream_ssl_verified_by always;
    }
--- request eval
["GET /first", "GET /second"]
--- error_code eval
[200, 200]
--- response_headers eval
["X-Backend-Session-Reused: .\nX-Verify: SUCCESS\nX-Verified-By: abc.example.com",
 "X-Backend-Session-Reused: r\nX-Verify: SUCCESS\nX-Verified-By: abc.example.com"]

=== TEST 2: a session made under a lenient policy is not resumed under a strict one
--- config
    location /lenient {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode skip;
    }
    location /strict {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:nope.example.com;
        proxy_ssl_policy_name ns/strict;
    }
--- request eval
["GET /lenient", "GET /lenient", "GET /strict"]
--- error_code eval
[200, 200, 502]
--- response_headers eval
["X-Backend-Session-Reused: .", "X-Backend-Session-Reused: r", ""]
--- error_log
policy "ns/strict", upstream
reason "san"
--- no_backend_log
/strict

=== TEST 3: nor is a session made by stock nginx (mode off)
--- config
    location /stock {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
    location /strict {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/another-identity;
    }
--- request eval
["GET /stock", "GET /stock", "GET /strict"]
--- error_code eval
[200, 200, 502]
--- response_headers eval
["", "X-Backend-Session-Reused: r", ""]
--- no_backend_log
/strict

=== TEST 4: a keepalive connection verified under one policy is not reused under another
--- http_config
    upstream shared_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        keepalive 8;
    }
--- config
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_ssl_session_reuse off;
    location /lenient {
        proxy_pass https://shared_backend;
        proxy_ssl_verify_mode skip;
    }
    location /strict {
        proxy_pass https://shared_backend;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:nope.example.com;
    }
--- request eval
["GET /lenient", "GET /lenient", "GET /strict"]
--- error_code eval
[200, 200, 502]
--- response_headers eval
["X-Backend-Connection-Requests: 1", "X-Backend-Connection-Requests: 2", ""]
--- error_log
not reusing a keepalive connection to "127.0.0.1:
reason "san"
--- no_backend_log
/strict

=== TEST 5: keepalive connections are reused within one policy, with its verdict
--- http_config
    upstream shared_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        keepalive 8;
    }
--- config
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    location / {
        proxy_pass https://shared_backend;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        add_header X-Verify $upstream_ssl_verify always;
    }
--- request eval
["GET /a", "GET /b"]
--- error_code eval
[200, 200]
--- response_headers eval
["X-Backend-Connection-Requests: 1\nX-Verify: SUCCESS", "X-Backend-Connection-Requests: 2\nX-Verify: SUCCESS"]
--- no_error_log
not reusing a keepalive connection

=== TEST 6: a keepalive connection made by stock nginx is not reused under a policy
--- http_config
    upstream shared_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        keepalive 8;
    }
--- config
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    location /stock {
        proxy_pass https://shared_backend;
    }
    location /strict {
        proxy_pass https://shared_backend;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request eval
["GET /stock", "GET /strict"]
--- error_code eval
[200, 502]
--- no_backend_log
/strict

=== TEST 7: a policy over a plaintext proxy_pass fails closed with 500
--- config
    location /plain {
        proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/never;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/plain;
    }
    location /never {
        return 200 "plaintext reached\n";
    }
--- request
GET /plain
--- error_code: 500
--- error_log
gateway_tls: policy "ns/plain" requires TLS, but upstream "127.0.0.1" is proxied in plaintext
--- no_error_log
plaintext reached
--- access_log eval
[qr/"GET \/plain HTTP\/1.1" 500/]

=== TEST 8: a session made with one client certificate is not resumed with another, under one upstream{} policy
--- http_config
    upstream mtls_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/mtls;
    }
--- config
    location /internal {
        proxy_pass https://mtls_backend;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
    }
    location /public {
        proxy_pass https://mtls_backend;
        proxy_ssl_certificate $TEST_NGINX_CERTS/spiffe.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/spiffe.key;
    }
--- request eval
["GET /internal", "GET /internal", "GET /public", "GET /internal"]
--- error_code eval
[200, 200, 200, 200]
--- response_body_like eval
[map { "client_fingerprint=" . Test::GatewayTLS::client_fingerprint($_) } qw(leaf leaf spiffe leaf)]

=== TEST 9: nor is a keepalive connection reused with another client certificate
--- http_config
    upstream mtls_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/mtls;
        keepalive 8;
    }
--- config
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    location /internal {
        proxy_pass https://mtls_backend;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
    }
    location /public {
        proxy_pass https://mtls_backend;
        proxy_ssl_certificate $TEST_NGINX_CERTS/spiffe.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/spiffe.key;
    }
--- request eval
["GET /internal", "GET /public"]
--- error_code eval
[200, 200]
--- response_body_like eval
[map { "client_fingerprint=" . Test::GatewayTLS::client_fingerprint($_) } qw(leaf spiffe)]
--- error_log
not reusing a keepalive connection to "127.0.0.1:

=== TEST 10: a session verified for one name is not resumed for another (proxy_ssl_name from the request)
--- http_config
    upstream named_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/named;
    }
--- config
    location / {
        proxy_pass https://named_backend;
        proxy_ssl_server_name on;
        proxy_ssl_name $arg_name;
    }
--- request eval
["GET /a?name=abc.example.com", "GET /b?name=b.example.com"]
--- error_code eval
[200, 502]
--- error_log
reason "name" (certificate does not match "b.example.com")
--- no_backend_log
/b?name

=== TEST 11: nor is a keepalive connection verified for one name reused for another
--- http_config
    upstream named_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/named;
        keepalive 8;
    }
--- config
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    location / {
        proxy_pass https://named_backend;
        proxy_ssl_server_name on;
        proxy_ssl_name $arg_name;
    }
--- request eval
["GET /a?name=abc.example.com", "GET /c?name=abc.example.com", "GET /b?name=b.example.com"]
--- error_code eval
[200, 200, 502]
--- response_headers eval
["X-Backend-Connection-Requests: 1", "X-Backend-Connection-Requests: 2", ""]
--- error_log
not reusing a keepalive connection to "127.0.0.1:
reason "name" (certificate does not match "b.example.com")
--- no_backend_log
/b?name
