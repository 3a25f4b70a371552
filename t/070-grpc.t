# grpc_pass with the grpc_ prefix, against an HTTP/2 TLS backend.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: grpc_pass verified by URI SAN
--- config
    location / {
        grpc_pass grpcs://127.0.0.1:$TEST_NGINX_BACKEND_LEAF_H2;
        grpc_ssl_server_name on;
        grpc_ssl_name abc.example.com;
        grpc_ssl_verify_mode strict;
        grpc_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        grpc_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        grpc_ssl_policy_name ns/grpc;
        add_header X-Verify $upstream_ssl_verify always;
        add_header X-Policy $upstream_ssl_policy always;
    }
--- request
GET /pkg.Service/Method
--- error_code: 200
--- response_body
backend=leaf_h2 sni=abc.example.com path=/pkg.Service/Method
--- response_headers
X-Verify: SUCCESS
X-Policy: ns/grpc

=== TEST 2: grpc_pass refused on a pin mismatch, before the request
--- config
    location / {
        grpc_pass grpcs://127.0.0.1:$TEST_NGINX_BACKEND_LEAF_H2;
        grpc_ssl_name abc.example.com;
        grpc_ssl_verify_mode strict;
        grpc_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        grpc_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
        grpc_ssl_policy_name ns/grpc-pinned;
    }
--- request
GET /pkg.Service/Secret
--- error_code: 502
--- error_log
policy "ns/grpc-pinned", upstream
reason "pin"
--- no_backend_log
/pkg.Service/Secret

=== TEST 3: proxy_ policies do not leak into grpc_pass, nor grpc_ into proxy_pass
--- config
    proxy_ssl_verify_mode strict;
    proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    proxy_ssl_verify_san dns:nope.example.com;
    grpc_ssl_verify_mode strict;
    grpc_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    grpc_ssl_verify_san dns:other.example.com;
    location /grpc {
        grpc_pass grpcs://127.0.0.1:$TEST_NGINX_BACKEND_LEAF_H2;
    }
    location /proxy {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
--- request eval
["GET /grpc", "GET /proxy"]
--- error_code eval
[200, 502]
