# gateway_tls_status: per-policy counters in shared memory that move by
# exactly the handshakes made, JSON and Prometheus text (promtool checks
# it), the audit list, and counters kept across workers and reloads.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: counters move by exactly the handshakes made, per policy and reason
--- main_config
    worker_processes 2;
--- http_config
    gateway_tls_status_zone 256k;
--- config
    proxy_ssl_session_reuse off;
    location /good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        proxy_ssl_policy_name shop/good;
    }
    location /bad {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name shop/bad;
    }
    location /expired {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name shop/expired;
    }
    location /dev {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_verify_mode skip;
        proxy_ssl_policy_name dev/anything;
    }
    location = /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request eval
["GET /good", "GET /good", "GET /good", "GET /bad", "GET /bad", "GET /expired", "GET /dev", "GET /status"]
--- error_code eval
[200, 200, 200, 502, 502, 502, 200, 200]
--- response_body_like eval
["", "", "", "", "", "", "",
 '^\{"policies":\[' .
 '\{"name":"shop/good","kind":"proxy","mode":"strict","trust":"[^"]+/ca.crt","sans":\["uri:spiffe://abc.example.com/test-identity"\],"pins":0,"handshakes":\{"verified":3,"skipped":0,"failed":\{"chain":0,"expired":0,"name":0,"san":0,"pin":0,"no_certificate":0\}\},"earliest_expiry_days":36[45]\},' .
 '\{"name":"shop/bad","kind":"proxy","mode":"strict","trust":"[^"]+","sans":\[\],"pins":0,"handshakes":\{"verified":0,"skipped":0,"failed":\{"chain":0,"expired":0,"name":2,"san":0,"pin":0,"no_certificate":0\}\},"earliest_expiry_days":36[45]\},' .
 '\{"name":"shop/expired",[^{]+\{"verified":0,"skipped":0,"failed":\{"chain":0,"expired":1,[^}]+\}\},"earliest_expiry_days":-\d+\},' .
 '\{"name":"dev/anything","kind":"proxy","mode":"skip","trust":"","sans":\[\],"pins":0,"handshakes":\{"verified":0,"skipped":1,[^}]+\}\},"earliest_expiry_days":36[45]\}' .
 '\],"audit":\[\{"file":"[^"]+nginx.conf","line":\d+,"policy":"dev/anything","kind":"proxy","mode":"skip"\}\]\}$']

=== TEST 2: Prometheus text that promtool accepts
--- http_config
    gateway_tls_status_zone 256k;
--- config
    proxy_ssl_session_reuse off;
    location /good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name "shop/quoted \"name\"";
    }
    location /lenient {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name shop/lenient;
    }
    # nginx's quoted strings may hold CR and LF: neither may split a line
    location /odd {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name "shop/line\r\nbreak";
    }
    location = /metrics {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request eval
["GET /good", "GET /lenient", "GET /odd", "GET /metrics?format=prometheus"]
--- error_code eval
[200, 200, 200, 200]
--- response_headers eval
["", "", "", "Content-Type: text/plain; version=0.0.4"]
--- response_body_like eval
["", "", "",
 'gateway_tls_handshakes_total\{policy="shop/quoted \\\\"name\\\\"",kind="proxy",result="verified",reason=""\} 1\n(?s:.*)' .
 'gateway_tls_handshakes_total\{policy="shop/lenient",kind="proxy",result="verified",reason=""\} 1\n(?s:.*)' .
 'gateway_tls_handshakes_total\{policy="shop/line\x5c\x5cx0D\x5cnbreak",kind="proxy",result="verified",reason=""\} 1\n(?s:.*)' .
 'gateway_tls_certificate_expiry_seconds\{policy="shop/lenient",kind="proxy"\} -\d+\n(?s:.*)' .
 'gateway_tls_insecure_scope\{policy="shop/lenient",kind="proxy",mode="allow_expired",file="[^"]+",line="\d+"\} 1\n']
--- promtool

=== TEST 3: the status location without a zone is a configuration that answers 500
--- config
    location = /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request
GET /status
--- error_code: 500
--- error_log
gateway_tls_status needs "gateway_tls_status_zone" in the http block

=== TEST 4: a zone too small is refused by nginx -t
--- http_config
    gateway_tls_status_zone 1k;
--- must_die
--- error_log eval
qr/invalid value "1k" in "gateway_tls_status_zone" directive: expected a size of at least \d+/

=== TEST 5: counters survive "nginx -s reload"
--- http_config
    gateway_tls_status_zone 256k;
--- config
    proxy_ssl_session_reuse off;
    location /good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name shop/good;
    }
    location = /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request eval
["GET /good", "GET /good", "RELOAD", "GET /good", "GET /status"]
--- error_code eval
[200, 200, 0, 200, 200]
--- response_body_like eval
["", "", "", "", '"name":"shop/good".*"verified":3,']
--- error_log
signal 1 (SIGHUP) received

=== TEST 7: stream policies are counted in the same zone and shown beside the http ones
--- main_config
    worker_processes 2;
--- http_config
    gateway_tls_status_zone 256k;
--- config
    location = /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- stream_config
    proxy_ssl_verify_insecure allow;
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
        proxy_ssl_session_reuse off;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name tcp/db;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name tcp/wrong;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_2;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl on;
        proxy_ssl_verify_mode skip;
        proxy_ssl_policy_name tcp/dev;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request eval
['@0 GET /a', '@0 GET /b', '@1 GET /c', '@2 GET /d', 'GET /status', 'GET /status?format=prometheus']
--- error_code eval
[200, 200, 0, 200, 200, 200]
--- response_body_like eval
["", "", "", "",
 '^\{"policies":\[' .
 '\{"name":"tcp/db","kind":"stream","mode":"strict","trust":"[^"]+/ca.crt","sans":\[\],"pins":0,"handshakes":\{"verified":2,"skipped":0,"failed":\{"chain":0,"expired":0,"name":0,"san":0,"pin":0,"no_certificate":0\}\},"earliest_expiry_days":36[45]\},' .
 '\{"name":"tcp/wrong","kind":"stream",[^{]+\{"verified":0,"skipped":0,"failed":\{"chain":0,"expired":0,"name":1,[^}]+\}\},[^}]+\},' .
 '\{"name":"tcp/dev","kind":"stream","mode":"skip",[^{]+\{"verified":0,"skipped":1,[^}]+\}\},[^}]+\}' .
 '\],"audit":\[\{"file":"[^"]+nginx.conf","line":\d+,"policy":"tcp/dev","kind":"stream","mode":"skip"\}\]\}$',
 'gateway_tls_handshakes_total\{policy="tcp/db",kind="stream",result="verified",reason=""\} 2\n']
--- promtool
