# proxy_ssl_policy_certificate: an upstream{} policy's own client
# certificate, presented when the backend asks for one, over the scope's
# proxy_ssl_certificate, whether sessions are reused or not; sessions and
# keepalive connections of one policy's certificate never serve another's.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: each upstream{} presents its policy's certificate, requests interleaved
--- http_config
    upstream leaf_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/leaf-client;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/leaf.crt $TEST_NGINX_CERTS/leaf.key;
    }
    upstream spiffe_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/spiffe-client;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/spiffe.crt $TEST_NGINX_CERTS/spiffe.key;
    }
--- config
    location /leaf {
        proxy_pass https://leaf_client;
    }
    location /spiffe {
        proxy_pass https://spiffe_client;
    }
--- request eval
["GET /leaf", "GET /spiffe", "GET /leaf", "GET /spiffe"]
--- error_code eval
[200, 200, 200, 200]
--- response_body_like eval
[map { "client_verify=SUCCESS client_fingerprint=" . Test::GatewayTLS::client_fingerprint($_) } qw(leaf spiffe leaf spiffe)]

=== TEST 2: the policy's certificate over the location's proxy_ssl_certificate, with sessions not reused
--- http_config
    upstream spiffe_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/spiffe-client;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/spiffe.crt $TEST_NGINX_CERTS/spiffe.key;
    }
--- config
    location /policy {
        proxy_pass https://spiffe_client;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        proxy_ssl_session_reuse off;
    }
    location /scope {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
    }
--- request eval
["GET /policy", "GET /scope", "GET /policy"]
--- error_code eval
[200, 200, 200]
--- response_body_like eval
[map { "client_fingerprint=" . Test::GatewayTLS::client_fingerprint($_) } qw(spiffe leaf spiffe)]

=== TEST 3: a keepalive connection of one policy's certificate is not reused by another's
--- http_config
    upstream leaf_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/leaf-client;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/leaf.crt $TEST_NGINX_CERTS/leaf.key;
        keepalive 8;
    }
    upstream spiffe_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/spiffe-client;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/spiffe.crt $TEST_NGINX_CERTS/spiffe.key;
        keepalive 8;
    }
--- config
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    location /leaf {
        proxy_pass https://leaf_client;
    }
    location /spiffe {
        proxy_pass https://spiffe_client;
    }
--- request eval
["GET /leaf", "GET /spiffe", "GET /leaf"]
--- error_code eval
[200, 200, 200]
--- response_body_like eval
[map { "client_fingerprint=" . Test::GatewayTLS::client_fingerprint($_) } qw(leaf spiffe leaf)]

=== TEST 4: stream: the policy's certificate
--- stream_config
    upstream spiffe_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_name ns/spiffe-client;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/spiffe.crt $TEST_NGINX_CERTS/spiffe.key;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass spiffe_client;
        proxy_ssl on;
    }
--- stream
--- request
GET /
--- error_code: 200
--- response_body_like eval
"client_fingerprint=" . Test::GatewayTLS::client_fingerprint('spiffe')

=== TEST 5: a key that is not the certificate's fails nginx -t, naming the file
--- http_config
    upstream leaf_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/leaf.crt $TEST_NGINX_CERTS/spiffe.key;
    }
--- config
    location / {
        proxy_pass https://leaf_client;
    }
--- must_die
--- error_log eval
qr/invalid value "\S+\/leaf.crt" in "proxy_ssl_policy_certificate" directive: "\S+\/spiffe.key" is not the private key of the first certificate in \S+nginx.conf:\d+/

=== TEST 6: a certificate of no policy fails nginx -t (never left unsent unnoticed)
--- http_config
    upstream leaf_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/leaf.crt $TEST_NGINX_CERTS/leaf.key;
    }
--- config
    location / {
        proxy_pass https://leaf_client;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_policy_certificate "\S+\/leaf.crt"" needs "proxy_ssl_verify_mode"/

=== TEST 7: only in upstream{}, once
--- http_config
    upstream leaf_client {
        server 127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/leaf.crt $TEST_NGINX_CERTS/leaf.key;
        proxy_ssl_policy_certificate $TEST_NGINX_CERTS/spiffe.crt $TEST_NGINX_CERTS/spiffe.key;
    }
--- config
    location / {
        proxy_pass https://leaf_client;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_policy_certificate" directive is duplicate in \S+nginx.conf:\d+/
