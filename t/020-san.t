# proxy_ssl_verify_san: the accepted SAN list replaces the SNI name as the
# name checked (GEP-1897), typed DNS / URI / IP / e-mail, or PCRE2.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: DNS SAN match, with SNI decoupled from the verified name
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_server_name on;
        proxy_ssl_name sni-only.example.net;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:other.example.com;
        add_header X-Verified-By $upstream_ssl_verified_by always;
    }
--- request
GET /
--- error_code: 200
--- response_body
backend=leaf sni=sni-only.example.net path=/
--- response_headers
X-Verified-By: dns:other.example.com

=== TEST 2: SAN mismatch fails even though the SNI name matches the certificate
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:nope.example.com;
        proxy_ssl_policy_name ns/mismatch;
    }
--- request
GET /secret
--- error_code: 502
--- error_log
policy "ns/mismatch"
reason "san" (no SAN matches the accepted list), peer SANs "dns:abc.example.com,uri:spiffe://abc.example.com/test-identity,dns:other.example.com"
--- no_backend_log
/secret

=== TEST 3: URI (SPIFFE) SAN match against a URI-only certificate
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        add_header X-Verified-By $upstream_ssl_verified_by always;
    }
--- request
GET /
--- error_code: 200
--- response_headers
X-Verified-By: uri:spiffe://abc.example.com/test-identity

=== TEST 4: URI SAN mismatch (another SPIFFE ID, and a DNS name that is not a URI)
--- config
    location /other-id {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/another-identity;
    }
    location /dns-is-not-uri {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:https://abc.example.com;
    }
    location /sni-alone {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request eval
["GET /other-id", "GET /dns-is-not-uri", "GET /sni-alone"]
--- error_code eval
[502, 502, 502]
--- error_log
reason "san"
reason "name"

=== TEST 5: regular expressions are anchored
--- config
    location /uri-re {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san "uri~spiffe://abc\.example\.com/test-.+";
    }
    location /dns-re {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san "dns~[a-z]+\.example\.com";
    }
    location /unanchored-would-match {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san "dns~wrong";
    }
--- request eval
["GET /uri-re", "GET /dns-re", "GET /unanchored-would-match"]
--- error_code eval
[200, 200, 502]

=== TEST 6: several SANs, in one directive and across directives: any one matches
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:abc.example.com dns:nope.example.com;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        add_header X-Verified-By $upstream_ssl_verified_by always;
    }
--- request
GET /
--- error_code: 200
--- response_headers
X-Verified-By: uri:spiffe://abc.example.com/test-identity

=== TEST 7: IP and e-mail SANs
--- config
    location /ip {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_IPEMAIL;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san ip:127.0.0.1;
    }
    location /email {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_IPEMAIL;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san email:ops@example.com;
    }
    location /wrong-ip {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_IPEMAIL;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san ip:127.0.0.2;
    }
--- request eval
["GET /ip", "GET /email", "GET /wrong-ip"]
--- error_code eval
[200, 200, 502]

=== TEST 8: skip_san verifies the chain but no name
--- config
    location /wrong-name {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:abc.example.com;
    }
    location /wrong-ca {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_UNTRUSTED;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- request eval
["GET /wrong-name", "GET /wrong-ca"]
--- error_code eval
[200, 502]
--- error_log
reason "chain"

=== TEST 9: a backend's SANs reach logs and variables escaped: a CR, LF or quote in its certificate starts no line
--- config
    location /verified {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_FORGED;
        proxy_ssl_name forged.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        add_header X-Peer-San $upstream_ssl_peer_san always;
    }
    location /refused {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_FORGED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/forged;
    }
--- request eval
["GET /verified", "GET /refused"]
--- error_code eval
[200, 502]
--- response_headers eval
['X-Peer-San: dns:forged.example.com,dns:x\x0D\x0A2020/01/01 00:00:00 [emerg] 1#1: forged line \x22quoted\x22', '']
--- error_log
reason "name" (certificate does not match "abc.example.com"), peer SANs "dns:forged.example.com,dns:x\x0D\x0A2020/01/01 00:00:00 [emerg] 1#1: forged line \x22quoted\x22"
--- no_error_log eval
[qr/^2020\/01\/01 00:00:00 \[emerg\]/m, qr/forged line "quoted"/]
