# Pins (GEP-4152): SPKI and certificate hashes, pinned certificate files,
# pins alone for self-signed backends, pins plus a CA requiring both; skip.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: an SPKI pin alone trusts a self-signed backend
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
        add_header X-Verify $upstream_ssl_verify always;
        add_header X-Verified-By $upstream_ssl_verified_by always;
    }
--- request
GET /
--- error_code: 200
--- response_headers
X-Verify: SUCCESS
X-Verified-By: abc.example.com

=== TEST 2: an SPKI pin mismatch is refused before the request
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_LEAF;
        proxy_ssl_policy_name ns/pinned;
    }
--- request
GET /secret
--- error_code: 502
--- error_log
policy "ns/pinned"
reason "pin" (no pin matches the certificate)
--- no_backend_log
/secret

=== TEST 3: a certificate pin (colon-separated upper-case hex, as openssl prints it)
--- config
    location /match {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_CERTPIN_SELFSIGNED;
    }
    location /mismatch {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_CERTPIN_LEAF;
    }
--- request eval
["GET /match", "GET /mismatch"]
--- error_code eval
[200, 502]

=== TEST 4: pinned certificate files (GEP-4152 trustedCertificates)
--- config
    location /match {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin_certificate $TEST_NGINX_CERTS/selfsigned.leaf.crt;
    }
    location /mismatch {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin_certificate $TEST_NGINX_CERTS/leaf.leaf.crt;
    }
--- request eval
["GET /match", "GET /mismatch"]
--- error_code eval
[200, 502]

=== TEST 5: pin plus CA requires both
--- config
    location /both {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_LEAF;
    }
    location /ca-only {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WILDCARD;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_LEAF;
    }
    location /pin-only {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
    }
--- request eval
["GET /both", "GET /ca-only", "GET /pin-only"]
--- error_code eval
[200, 502, 502]
--- error_log
reason "pin"
reason "chain"

=== TEST 6: the pin proves the key; the name is still checked
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name other.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
    }
--- request
GET /
--- error_code: 502
--- error_log
reason "name"

=== TEST 7: a pinned but expired leaf needs allow_expired
--- config
    location /strict {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_CERTPIN_EXPIRED;
    }
    location /lenient {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_pin $TEST_NGINX_CERTPIN_EXPIRED;
    }
--- request eval
["GET /strict", "GET /lenient"]
--- error_code eval
[502, 200]

=== TEST 8: skip talks TLS to a self-signed backend, checks nothing, says so
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip;
        proxy_ssl_policy_name dev/anything-goes;
        add_header X-Verify $upstream_ssl_verify always;
        add_header X-Mode $upstream_ssl_verify_mode always;
    }
--- request
GET /
--- error_code: 200
--- response_body
backend=selfsigned sni=abc.example.com path=/
--- response_headers
X-Verify: SKIPPED
X-Mode: skip
--- error_log eval
qr/\[warn\] .*insecure backend verification "proxy_ssl_verify_mode skip" for policy "dev\/anything-goes" in \S+nginx.conf:\d+/
