# Chain verification and the SNI name: the module decides in the handshake,
# so a rejected backend gives 502 and never sees the request.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: CA-signed leaf, chain through an intermediate the backend sends
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        add_header X-Verify $upstream_ssl_verify always;
    }
--- request
GET /hello
--- error_code: 200
--- response_body
backend=leaf sni=abc.example.com path=/hello
--- response_headers
X-Verify: SUCCESS
--- backend_log
abc.example.com /hello

=== TEST 2: a leaf from an unrelated CA is refused, before the request
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_UNTRUSTED;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/untrusted;
    }
--- request
GET /secret
--- error_code: 502
--- error_log eval
qr/\[error\] .*gateway_tls: backend certificate rejected: policy "ns\/untrusted", upstream "127.0.0.1:\d+", reason "chain" \(unable to get local issuer certificate\), peer SANs "dns:abc.example.com", peer SPKI sha256 "[A-Za-z0-9+\/]{43}="/
--- no_backend_log
/secret

=== TEST 3: a self-signed backend is refused by a CA policy
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request
GET /secret
--- error_code: 502
--- error_log
reason "chain"
--- no_backend_log
/secret

=== TEST 4: the trust anchor may be the intermediate's CA bundle too
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca-and-inter.crt;
    }
--- request
GET /
--- error_code: 200

=== TEST 5: the SNI name must match the certificate (hostname mismatch)
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request
GET /secret
--- error_code: 502
--- error_log
reason "name" (certificate does not match "abc.example.com"), peer SANs "dns:wrong.example.com"
--- no_backend_log
/secret

=== TEST 6: another SAN of the certificate is another valid SNI name
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_server_name on;
        proxy_ssl_name other.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request
GET /
--- error_code: 200
--- response_body
backend=leaf sni=other.example.com path=/

=== TEST 7: a wildcard certificate covers one label
--- config
    location /one {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WILDCARD;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location /two {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WILDCARD;
        proxy_ssl_server_name on;
        proxy_ssl_name a.b.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request eval
["GET /one", "GET /two"]
--- error_code eval
[200, 502]

=== TEST 8: without proxy_ssl_name an IP literal is checked against IP SANs
--- config
    location /ip {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_IPEMAIL;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location /dnsleaf {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request eval
["GET /ip", "GET /dnsleaf"]
--- error_code eval
[200, 502]

=== TEST 9: expired leaf: strict refuses (reason expired), allow_expired accepts
--- config
    location /strict {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/strict;
    }
    location /lenient {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/lenient;
        add_header X-Verify $upstream_ssl_verify always;
    }
--- request eval
["GET /strict", "GET /lenient"]
--- error_code eval
[502, 200]
--- response_headers eval
["", "X-Verify: SUCCESS"]
--- error_log
policy "ns/strict", upstream
reason "expired" (certificate has expired)
--- no_backend_log
/strict

=== TEST 10: a not-yet-valid leaf counts as a validity error too
--- config
    location /strict {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_NOTYET;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location /lenient {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_NOTYET;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request eval
["GET /strict", "GET /lenient"]
--- error_code eval
[502, 200]
--- error_log
reason "expired" (certificate is not yet valid

=== TEST 11: allow_expired forgives dates only, not the issuer
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_UNTRUSTED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request
GET /
--- error_code: 502
--- error_log
reason "chain"

=== TEST 12: the system store (Debian's CA bundle) does not trust the test CA
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca system;
    }
--- request
GET /
--- error_code: 502
--- error_log
reason "chain"

=== TEST 13: mode off leaves stock nginx alone (no verification, no variables)
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        add_header X-Verify $upstream_ssl_verify always;
        add_header X-Mode $upstream_ssl_verify_mode always;
    }
--- request
GET /
--- error_code: 200
--- response_headers
X-Verify: NONE
X-Mode: off

=== TEST 14: mode off with stock proxy_ssl_verify keeps stock behaviour
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_name abc.example.com;
    }
--- request
GET /secret
--- error_code: 502
--- error_log
upstream SSL certificate verify error
--- no_backend_log
/secret
