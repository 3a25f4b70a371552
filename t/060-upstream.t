# Policies bound to upstream{} (a Service): one location can split traffic
# over upstreams with different policies; $upstream_ssl_policy_hostname
# carries each upstream's hostname to SNI.
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: one location, two upstreams, two policies, each with its own SNI
--- http_config
    upstream svc_dns {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/dns;
        proxy_ssl_policy_hostname other.example.com;
    }
    upstream svc_spiffe {
        server 127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        proxy_ssl_policy_name ns/spiffe;
        proxy_ssl_policy_hostname abc.example.com;
    }
    upstream svc_plainsni {
        server 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
    }
    map $arg_to $backend {
        dns     svc_dns;
        spiffe  svc_spiffe;
        stock   svc_plainsni;
    }
--- config
    location / {
        proxy_pass https://$backend;
        proxy_ssl_server_name on;
        proxy_ssl_name $upstream_ssl_policy_hostname;
        add_header X-Policy $upstream_ssl_policy always;
        add_header X-Verified-By $upstream_ssl_verified_by always;
    }
--- request eval
["GET /?to=dns", "GET /?to=spiffe", "GET /?to=stock"]
--- error_code eval
[200, 200, 200]
--- response_body eval
["backend=leaf sni=other.example.com path=/\n",
 "backend=spiffe sni=abc.example.com path=/\n",
 "backend=selfsigned sni=svc_plainsni path=/\n"]
--- response_headers eval
["X-Policy: ns/dns\nX-Verified-By: other.example.com",
 "X-Policy: ns/spiffe\nX-Verified-By: uri:spiffe://abc.example.com/test-identity",
 ""]

=== TEST 2: the upstream's policy governs, whatever the location says
--- http_config
    upstream svc_strict {
        server 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_name ns/strict-service;
        proxy_ssl_policy_hostname abc.example.com;
    }
--- config
    location / {
        proxy_pass https://svc_strict;
        proxy_ssl_verify_mode skip;
        proxy_ssl_policy_name ns/lenient-route;
    }
--- request
GET /secret
--- error_code: 502
--- error_log
policy "ns/strict-service", upstream
reason "chain"
--- no_backend_log
/secret

=== TEST 3: a failing upstream policy is a 502 for its share only
--- http_config
    upstream svc_good {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_policy_hostname abc.example.com;
    }
    upstream svc_bad {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_pin $TEST_NGINX_SPKI_SELFSIGNED;
        proxy_ssl_policy_name ns/bad;
    }
    map $arg_to $backend {
        good svc_good;
        bad  svc_bad;
    }
--- config
    location / {
        proxy_pass https://$backend;
        proxy_ssl_name $upstream_ssl_policy_hostname;
    }
--- request eval
["GET /?to=good", "GET /?to=bad", "GET /?to=good"]
--- error_code eval
[200, 502, 200]
--- error_log
policy "ns/bad", upstream
reason "pin"

=== TEST 4: upstream{} policies for grpc_pass use the grpc_ prefix
--- http_config
    upstream grpc_backend {
        server 127.0.0.1:$TEST_NGINX_BACKEND_LEAF_H2;
        grpc_ssl_verify_mode strict;
        grpc_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        grpc_ssl_verify_san dns:nope.example.com;
        grpc_ssl_policy_name ns/grpc-upstream;
    }
--- config
    location / {
        grpc_pass grpcs://grpc_backend;
    }
--- request
GET /
--- error_code: 502
--- error_log
policy "ns/grpc-upstream", upstream
reason "san"
