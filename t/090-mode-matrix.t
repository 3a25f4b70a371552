# Every verification mode against every kind of backend certificate:
# CA-signed and good, expired, wrong SAN, self-signed, from another CA.
#              good  expired  wrong SAN  self-signed  untrusted
# strict        200    502       502         502         502
# allow_expired 200    200       502         502         502
# skip_san      200    502       200         502         502
# skip          200    200       200         200         200
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: the mode matrix
--- config
    location = /strict/good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /strict/expired {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /strict/wrongsan {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /strict/selfsigned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /strict/untrusted {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_UNTRUSTED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /allow_expired/good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /allow_expired/expired {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /allow_expired/wrongsan {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /allow_expired/selfsigned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /allow_expired/untrusted {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_UNTRUSTED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode allow_expired;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /skip_san/good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /skip_san/expired {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /skip_san/wrongsan {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /skip_san/selfsigned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /skip_san/untrusted {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_UNTRUSTED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
    }
    location = /skip/good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip;
    }
    location = /skip/expired {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip;
    }
    location = /skip/wrongsan {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip;
    }
    location = /skip/selfsigned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip;
    }
    location = /skip/untrusted {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_UNTRUSTED/;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip;
    }
--- request eval
["GET /strict/good", "GET /strict/expired", "GET /strict/wrongsan", "GET /strict/selfsigned", "GET /strict/untrusted", "GET /allow_expired/good", "GET /allow_expired/expired", "GET /allow_expired/wrongsan", "GET /allow_expired/selfsigned", "GET /allow_expired/untrusted", "GET /skip_san/good", "GET /skip_san/expired", "GET /skip_san/wrongsan", "GET /skip_san/selfsigned", "GET /skip_san/untrusted", "GET /skip/good", "GET /skip/expired", "GET /skip/wrongsan", "GET /skip/selfsigned", "GET /skip/untrusted"]
--- error_code eval
[200, 502, 502, 502, 502, 200, 200, 502, 502, 502, 200, 502, 200, 502, 502, 200, 200, 200, 200, 200]
