# Directive arguments: every malformed one fails "nginx -t" naming the
# directive, the value and file:line; the operator gate; the audit lines.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: unknown verification mode
--- config
    location / {
        proxy_ssl_verify_mode on;
    }
--- must_die
--- error_log eval
qr/invalid value "on" in "proxy_ssl_verify_mode" directive: expected off, strict, allow_expired, skip_san or skip in \S+nginx.conf:\d+/

=== TEST 2: SAN SPEC without a type
--- config
    location / {
        proxy_ssl_verify_san abc.example.com;
    }
--- must_die
--- error_log eval
qr/invalid value "abc.example.com" in "proxy_ssl_verify_san" directive: unknown SPEC type.* in \S+nginx.conf:\d+/

=== TEST 3: wildcard in a DNS SPEC
--- config
    location / {
        proxy_ssl_verify_san dns:abc.example.com dns:*.example.com;
    }
--- must_die
--- error_log eval
qr/invalid value "dns:\*.example.com" in "proxy_ssl_verify_san" directive: wildcards are not allowed/

=== TEST 4: bad regular expression
--- config
    location / {
        grpc_ssl_verify_san "uri~spiffe://(unclosed";
    }
--- must_die
--- error_log eval
qr/invalid value "uri~spiffe:\/\/\(unclosed" in "grpc_ssl_verify_san" directive: bad regular expression/

=== TEST 5: bad IP and e-mail SPECs
--- config
    location /a {
        proxy_ssl_verify_san ip:300.0.0.1;
    }
--- must_die
--- error_log eval
qr/invalid value "ip:300.0.0.1" in "proxy_ssl_verify_san" directive: not an IP address/

=== TEST 6: pin of the wrong length
--- config
    location / {
        proxy_ssl_verify_pin sha256-spki:AAAA;
    }
--- must_die
--- error_log eval
qr/invalid value "sha256-spki:AAAA" in "proxy_ssl_verify_pin" directive: expected the base64 of a 32-byte SHA-256 digest/

=== TEST 7: pin of an unknown type
--- config
    location / {
        proxy_ssl_verify_pin sha1-cert:00;
    }
--- must_die
--- error_log eval
qr/invalid value "sha1-cert:00" in "proxy_ssl_verify_pin" directive: unknown pin type/

=== TEST 8: certificate pin with a bad hex digit
--- config
    location / {
        proxy_ssl_verify_pin sha256-cert:zz;
    }
--- must_die
--- error_log eval
qr/invalid value "sha256-cert:zz" in "proxy_ssl_verify_pin" directive: expected 64 hex digits/

=== TEST 9: CA file that does not exist
--- config
    location / {
        proxy_ssl_verify_ca /nonexistent/ca.pem;
    }
--- must_die
--- error_log eval
qr/invalid value "\/nonexistent\/ca.pem" in "proxy_ssl_verify_ca" directive: cannot load CA certificates from "\/nonexistent\/ca.pem"/

=== TEST 10: CA file that holds no certificate
--- config
    location / {
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.key;
    }
--- must_die
--- error_log eval
qr/in "proxy_ssl_verify_ca" directive: (no certificate in|cannot load CA certificates)/

=== TEST 11: pin certificate file that is not PEM
--- config
    location / {
        proxy_ssl_verify_pin_certificate $TEST_NGINX_CERTS/ca.cnf;
    }
--- must_die
--- error_log eval
qr/in "proxy_ssl_verify_pin_certificate" directive: cannot read a PEM certificate/

=== TEST 12: a verifying mode needs a trust source
--- config
    location / {
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_san dns:abc.example.com;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_verify_mode strict" in \S+nginx.conf:\d+ needs a trust source/

=== TEST 13: duplicate mode
--- config
    location / {
        proxy_ssl_verify_mode skip;
        proxy_ssl_verify_mode strict;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_verify_mode" directive is duplicate/

=== TEST 14: the policy hostname belongs in upstream{}
--- config
    location / {
        proxy_ssl_policy_hostname abc.example.com;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_policy_hostname" directive is not allowed here/

=== TEST 15: the gate denies an insecure mode below it
--- http_config
    proxy_ssl_verify_insecure deny;
--- config
    location / {
        proxy_ssl_verify_mode skip;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_verify_mode skip" in \S+nginx.conf:\d+ is not allowed by "proxy_ssl_verify_insecure deny"/

=== TEST 16: the gate denies an insecure upstream{} policy too
--- http_config
    proxy_ssl_verify_insecure deny;
    upstream insecure_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
--- config
    location / {
        proxy_pass https://insecure_backend;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_verify_mode allow_expired" in \S+nginx.conf:\d+ is not allowed by "proxy_ssl_verify_insecure deny"/

=== TEST 17: the gate at server level lets strict through and is per server
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_SERVER_PORT;
        server_name denied.test;
        proxy_ssl_verify_insecure deny;
        location / {
            proxy_ssl_verify_mode strict;
            proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
            proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        }
    }
--- config
    proxy_ssl_verify_insecure allow;
    location / {
        proxy_ssl_verify_mode skip;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
    }
--- request
GET /
--- error_code: 200
--- error_log eval
qr/\[warn\] .*gateway_tls: insecure backend verification "proxy_ssl_verify_mode skip" for policy "" in \S+nginx.conf:\d+/

=== TEST 18: a warn line per insecure scope at load, naming the policy
--- config
    location /a {
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/a;
    }
    location /b {
        grpc_ssl_verify_mode allow_expired;
        grpc_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        grpc_ssl_policy_name ns/b;
    }
    location /c {
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/c;
    }
--- request
GET /nothing
--- error_code: 404
--- error_log eval
[qr/\[warn\] .*insecure backend verification "proxy_ssl_verify_mode skip_san" for policy "ns\/a" in \S+nginx.conf:\d+/,
 qr/\[warn\] .*insecure backend verification "grpc_ssl_verify_mode allow_expired" for policy "ns\/b"/]
--- no_error_log
policy "ns/c" in

=== TEST 19: stock proxy_ssl_verify is superseded, with a notice
--- config
    location / {
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        proxy_ssl_name spiffe.example.com;
        proxy_ssl_server_name on;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
    }
--- request
GET /
--- error_code: 200
--- error_log eval
qr/\[notice\] .*"proxy_ssl_verify_mode strict" in \S+nginx.conf:\d+ supersedes "proxy_ssl_verify on"/

=== TEST 20: empty policy name
--- config
    location / {
        proxy_ssl_policy_name "";
    }
--- must_die
--- error_log eval
qr/invalid value "" in "proxy_ssl_policy_name" directive: empty name in \S+nginx.conf:\d+/

=== TEST 21: policy hostname that is not a DNS name
--- http_config
    upstream svc {
        server 127.0.0.1:1;
        proxy_ssl_policy_hostname "not a name";
    }
--- must_die
--- error_log eval
qr/invalid value "not a name" in "proxy_ssl_policy_hostname" directive: not a DNS name in \S+nginx.conf:\d+/

=== TEST 22: unknown gate value
--- http_config
    proxy_ssl_verify_insecure maybe;
--- must_die
--- error_log eval
qr/invalid value "maybe" in "proxy_ssl_verify_insecure" directive: expected allow or deny in \S+nginx.conf:\d+/

=== TEST 23: the gate is an http/server directive
--- config
    location / {
        proxy_ssl_verify_insecure deny;
    }
--- must_die
--- error_log eval
qr/"proxy_ssl_verify_insecure" directive is not allowed here in \S+nginx.conf:\d+/

=== TEST 24: grpc_ directives are checked the same way
--- config
    location / {
        grpc_ssl_verify_mode insecure;
    }
--- must_die
--- error_log eval
qr/invalid value "insecure" in "grpc_ssl_verify_mode" directive/

=== TEST 25: an upstream{} policy needs a trust source too
--- http_config
    upstream svc {
        server 127.0.0.1:1;
        grpc_ssl_verify_mode strict;
    }
--- must_die
--- error_log eval
qr/"grpc_ssl_verify_mode strict" in \S+nginx.conf:\d+ needs a trust source/

=== TEST 26: the gate holds where the peer is chosen: an insecure upstream{} reached through a variable is refused
--- http_config
    upstream insecure_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_verify_mode skip;
        proxy_ssl_policy_name ns/insecure;
    }
    upstream strict_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/strict;
    }
--- config
    proxy_ssl_verify_insecure deny;
    location /insecure {
        set $backend insecure_backend;
        proxy_pass https://$backend;
    }
    location /strict {
        set $backend strict_backend;
        proxy_ssl_name abc.example.com;
        proxy_pass https://$backend;
    }
--- request eval
["GET /insecure/secret", "GET /strict"]
--- error_code eval
[500, 200]
--- error_log
gateway_tls: policy "ns/insecure" of upstream "insecure_backend" ("proxy_ssl_verify_mode skip") is not allowed by "proxy_ssl_verify_insecure deny" in this server
--- no_backend_log
/insecure/secret

=== TEST 27: gateway_tls_share: N of every D requests, evenly spread, each variable counting its own
--- http_config
    gateway_tls_share $third 1/3;
    gateway_tls_share $half 1/2;
    gateway_tls_share $none 0/7;
--- config
    location /third {
        return 200 "[$third]\n";
    }
    location /half {
        return 200 "[$half]\n";
    }
    location /none {
        return 200 "[$none]\n";
    }
--- request eval
["GET /third", "GET /half", "GET /third", "GET /third", "GET /half", "GET /third", "GET /none", "GET /third",
 "GET /third"]
--- response_body eval
["[]\n", "[]\n", "[]\n", "[1]\n", "[1]\n", "[]\n", "[]\n", "[]\n", "[1]\n"]

=== TEST 28: gateway_tls_share: a share that is not N/D with N <= D <= 2147483647
--- http_config
    gateway_tls_share $share 3/2;
--- config
    location / {
        return 200;
    }
--- must_die
--- error_log eval
qr/invalid share "3\/2": NUMERATOR\/DENOMINATOR, 0 <= NUMERATOR <= DENOMINATOR <= 2147483647 in \S+nginx.conf:\d+/

=== TEST 29: gateway_tls_share: the variable is named with $, once
--- http_config
    gateway_tls_share $share 1/2;
    gateway_tls_share $share 1/3;
--- config
    location / {
        return 200;
    }
--- must_die
--- error_log eval
qr/the duplicate "share" variable in \S+nginx.conf:\d+/

=== TEST 30: gateway_tls_share: a variable name without $
--- http_config
    gateway_tls_share share 1/2;
--- config
    location / {
        return 200;
    }
--- must_die
--- error_log eval
qr/invalid variable name "share" in \S+nginx.conf:\d+/

=== TEST 31: gateway_tls_upstream_api without a state zone: a reload would lose what was pushed
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_allow 127.0.0.1;
        gateway_tls_upstream_api_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- must_die
--- error_log eval
qr/gateway_tls_upstream_api needs "gateway_tls_upstream_state_zone" in the http block/

=== TEST 32: gateway_tls_upstream_api_allow takes addresses, not "all"
--- http_config
    gateway_tls_upstream_state_zone 64k;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_allow 127.0.0.1 all;
        gateway_tls_upstream_api_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- must_die
--- error_log eval
qr/invalid value "all" in "gateway_tls_upstream_api_allow": an address, ADDRESS\/PREFIX or "unix:" was expected in \S+nginx.conf:\d+/

=== TEST 33: a state zone too small
--- http_config
    gateway_tls_upstream_state_zone 1k;
--- config
    location / {
        return 200;
    }
--- must_die
--- error_log eval
qr/invalid value "1k" in "gateway_tls_upstream_state_zone" directive: expected a size of at least \d+/

=== TEST 34: the API with no allow list refuses everyone
--- http_config
    gateway_tls_upstream_state_zone 64k;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request
GET /api
--- error_code: 403
--- response_body_like: "this address may not use the upstream API"
--- error_log eval
qr/upstream API refused to 127.0.0.1: not in gateway_tls_upstream_api_allow/

=== TEST 35: the upstream API without a token file: an address is no credential
--- http_config
    gateway_tls_upstream_state_zone 64k;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_allow 127.0.0.1;
    }
--- must_die
--- error_log eval
qr/"gateway_tls_upstream_api" in location "\/api" needs "gateway_tls_upstream_api_token_file": an address is no credential/

=== TEST 36: the status endpoint without a token file
--- http_config
    gateway_tls_status_zone 64k;
--- config
    location /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
    }
--- must_die
--- error_log eval
qr/"gateway_tls_status" in location "\/status" needs "gateway_tls_status_token_file"/

=== TEST 37: a token file others may read is refused
--- http_config
    gateway_tls_status_zone 64k;
--- config
    location /status {
        gateway_tls_status;
        gateway_tls_status_token_file /etc/passwd;
    }
--- must_die
--- error_log eval
qr/"gateway_tls_status_token_file": access token file "\/etc\/passwd" may be read or written by its group or others \(mode 0644\): it must be 0600 or 0400 in \S+nginx.conf:\d+/

=== TEST 37a: a token file the group may read, refused unless the directive says "group"
--- http_config
    gateway_tls_status_zone 64k;
--- config
    location /status {
        gateway_tls_status;
        gateway_tls_status_token_file $TEST_NGINX_GROUP_TOKEN_FILE;
    }
--- must_die
--- error_log eval
qr/"gateway_tls_status_token_file": access token file "\S+" may be read or written by its group or others \(mode 0640\): it must be 0600 or 0400 in \S+nginx.conf:\d+/

=== TEST 37b: with "group", the group may read it
--- http_config
    gateway_tls_status_zone 64k;
--- config
    location /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_GROUP_TOKEN_FILE group;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request
GET /status
--- error_code: 200

=== TEST 37c: but not write it, nor others read it
--- http_config
    gateway_tls_upstream_state_zone 64k;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_token_file /etc/passwd group;
    }
--- must_die
--- error_log eval
qr/"gateway_tls_upstream_api_token_file": access token file "\/etc\/passwd" may be written by its group, or read or written by others \(mode 0644\): it must be 0640, 0600, 0440 or 0400 in \S+nginx.conf:\d+/

=== TEST 37d: "group" is the only parameter
--- http_config
    gateway_tls_upstream_state_zone 64k;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE others;
    }
--- must_die
--- error_log eval
qr/invalid parameter "others": "group" or nothing was expected in \S+nginx.conf:\d+/

=== TEST 38: the token file may be set for the server, and a location inherits it
--- http_config
    gateway_tls_upstream_state_zone 64k;
    gateway_tls_upstream_api_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_allow 127.0.0.1;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request
GET /api
--- response_body_like: "upstreams"

=== TEST 39: the API from an allowed address without its token: 401
--- http_config
    gateway_tls_upstream_state_zone 64k;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_allow 127.0.0.1;
        gateway_tls_upstream_api_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- request
GET /api
--- error_code: 401
--- response_headers
WWW-Authenticate: Bearer
--- response_body_like: "the upstream API needs its bearer token"
--- error_log eval
qr/upstream API refused to 127.0.0.1: no bearer token/

=== TEST 40: the API with another token: 401
--- http_config
    gateway_tls_upstream_state_zone 64k;
--- config
    location /api {
        gateway_tls_upstream_api;
        gateway_tls_upstream_api_allow 127.0.0.1;
        gateway_tls_upstream_api_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN-x
--- request
GET /api
--- error_code: 401
--- error_log eval
qr/upstream API refused to 127.0.0.1: not its bearer token/

=== TEST 41: the status endpoint without its token: 401, and nothing of its counters
--- http_config
    gateway_tls_status_zone 64k;
--- config
    location /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer not-the-token-0123456789abcdef0123456789
--- request
GET /status
--- error_code: 401
--- response_headers
WWW-Authenticate: Bearer
--- error_log eval
qr/status endpoint refused to 127.0.0.1: not its bearer token/

=== TEST 42: the status endpoint from an address not in its allow list: 403
--- http_config
    gateway_tls_status_zone 64k;
--- config
    location /status {
        gateway_tls_status;
        gateway_tls_status_allow 10.0.0.0/8;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request
GET /status
--- error_code: 403
--- error_log eval
qr/status endpoint refused to 127.0.0.1: not in gateway_tls_status_allow/

=== TEST 43: the status endpoint with its address and token
--- http_config
    gateway_tls_status_zone 64k;
--- config
    location /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request
GET /status
--- response_body_like: "policies"

=== TEST 44: keywords are nginx's enums: any case, each directive once
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode STRICT;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_name abc.example.com;
        add_header X-Mode $upstream_ssl_verify_mode always;
    }
--- request
GET /
--- error_code: 200
--- response_headers
X-Mode: strict

=== TEST 45: ssl_verify_client_handshake takes on, off or fallback
--- config
    ssl_verify_client_handshake maybe;
--- must_die
--- error_log eval
qr/invalid value "maybe" in "ssl_verify_client_handshake" directive: expected on, off or fallback in \S+nginx.conf:\d+/

=== TEST 46: ssl_verify_client_handshake once per server
--- config
    ssl_verify_client_handshake off;
    ssl_verify_client_handshake on;
--- must_die
--- error_log eval
qr/"ssl_verify_client_handshake" directive is duplicate in \S+nginx.conf:\d+/
