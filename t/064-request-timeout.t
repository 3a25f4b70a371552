# gateway_tls_request_timeout: a request its backends have not begun to
# answer within the timeout (every try included) gets 504, where nginx's
# own timeouts bound each wait only; an answer begun in time is finished.
# The backend here is a server of the same nginx whose limit_req holds a
# second request back (for two seconds less the time since the first, or
# a second in TEST 3; its answers are made in the content phase, after
# limit_req's).
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: no answer within the timeout: 504, and a line says why
--- http_config
    limit_req_zone $server_port zone=one_in_two_seconds:1m rate=30r/m;
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        location / {
            limit_req zone=one_in_two_seconds burst=5;
            empty_gif;
        }
    }
--- config
    location / {
        gateway_tls_request_timeout 300ms;
        proxy_pass http://127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
    }
    location /untimed {
        proxy_pass http://127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
    }
--- request eval
["GET /first", "GET /held", "GET /untimed"]
--- error_code eval
[200, 504, 200]
--- error_log
gateway_tls: no answer within the request timeout of 300ms

=== TEST 2: an answer begun in time is finished
--- http_config eval
"    server {
        listen 127.0.0.1:\$TEST_NGINX_STREAM_PORT_3;
        location / {
            limit_rate 2k;
            return 200 \"" . ("x" x 3000) . "\";
        }
    }
"
--- config
    location / {
        gateway_tls_request_timeout 300ms;
        proxy_pass http://127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
    }
--- request
GET /slow-body
--- error_code: 200
--- response_body eval
"x" x 3000
--- no_error_log
no answer within the request timeout

=== TEST 3: every try counts: tries cut short by the deadline
--- http_config
    limit_req_zone $server_port zone=one_a_second:1m rate=1r/s;
    upstream tried {
        server 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        server 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        server 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        server 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        location / {
            limit_req zone=one_a_second burst=5;
            try_files /nothing =500;
        }
    }
--- config
    location / {
        gateway_tls_request_timeout 1500ms;
        proxy_read_timeout 5s;
        proxy_next_upstream error timeout http_500;
        proxy_next_upstream_tries 4;
        proxy_pass http://tried;
    }
--- request
GET /retried
--- error_code: 504
--- error_log
gateway_tls: no answer within the request timeout of 1500ms

=== TEST 4: an invalid time
--- config
    location / {
        gateway_tls_request_timeout soon;
    }
--- must_die
--- error_log eval
qr/"gateway_tls_request_timeout" directive invalid value in \S+nginx.conf:\d+/
