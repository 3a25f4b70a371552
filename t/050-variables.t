# Variables: readable in the access log and after error_page, when the
# upstream connection is gone.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: every variable in the access log on success
--- http_config
    log_format verify 'verify=$upstream_ssl_verify mode=$upstream_ssl_verify_mode '
                      'policy=$upstream_ssl_policy by=$upstream_ssl_verified_by '
                      'san=$upstream_ssl_peer_san spki=$upstream_ssl_peer_spki_sha256 '
                      'cert=$upstream_ssl_peer_cert_sha256';
--- config
    access_log logs/access.log verify;
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        proxy_ssl_policy_name shop/payments-tls;
    }
--- request
GET /
--- error_code: 200
--- access_log eval
my $spki = Test::GatewayTLS::spki_pin('spiffe');
$spki =~ s/^sha256-spki://;
my $cert = lc Test::GatewayTLS::cert_pin('spiffe');
$cert =~ s/^sha256-cert://;
$cert =~ s/://g;
["verify=SUCCESS mode=strict policy=shop/payments-tls by=uri:spiffe://abc.example.com/test-identity "
 . "san=uri:spiffe://abc.example.com/test-identity spki=$spki cert=$cert"]

=== TEST 2: the failure reason in the access log
--- http_config
    log_format verify 'verify=$upstream_ssl_verify policy=$upstream_ssl_policy status=$status san=$upstream_ssl_peer_san';
--- config
    access_log logs/access.log verify;
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name shop/failing;
    }
--- request
GET /
--- error_code: 502
--- access_log
verify=FAILED:name policy=shop/failing status=502 san=dns:wrong.example.com

=== TEST 3: the verdict survives error_page into another location
--- config
    location /fail {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_EXPIRED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name shop/expired;
        error_page 502 = /explain;
    }
    location = /explain {
        return 200 "verify=$upstream_ssl_verify policy=$upstream_ssl_policy mode=$upstream_ssl_verify_mode\n";
    }
--- request
GET /fail
--- error_code: 200
--- response_body
verify=FAILED:expired policy=shop/expired mode=strict

=== TEST 4: a location without a policy reports NONE and off
--- config
    location / {
        return 200 "verify=$upstream_ssl_verify mode=$upstream_ssl_verify_mode policy=[$upstream_ssl_policy] san=[$upstream_ssl_peer_san]\n";
    }
--- request
GET /
--- error_code: 200
--- response_body
verify=NONE mode=off policy=[] san=[]

=== TEST 5: pins reported as what verified the peer
--- config
    location / {
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode skip_san;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
        add_header X-Verified-By $upstream_ssl_verified_by always;
    }
--- request
GET /
--- error_code: 200
--- response_headers eval
"X-Verified-By: " . Test::GatewayTLS::spki_pin('selfsigned')
