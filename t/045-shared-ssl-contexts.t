# nginx 1.22 makes one SSL context per "proxy_pass https://" or "grpc_pass grpcs://"
# location; with the module loaded, locations whose TLS client settings are
# the same share one (ngx_http_gateway_tls_ssl_share.cc), and a location
# with other settings gets its own, with those settings in it. nginx 1.23.1
# and later share contexts themselves and the share module is not built for
# them: there the same requests must behave the same, the module logs no
# notice of its own, and its .so holds no share module.
use lib 't/lib';
use Test::More;
use Test::GatewayTLS;

sub module_shares { return nginx_version() < 1023001 }
# the module's notice, where it shares contexts
sub sharing_notice { my ($re) = @_; return module_shares() ? $re : () }
# no notice of the module's, where nginx shares them
sub no_sharing_notice { return module_shares() ? () : qr/gateway_tls: \d+ (proxy|grpc) TLS locations? uses? / }

run_tests();

my $so = slurp($ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so');
is(index($so, 'ngx_http_gateway_tls_ssl_share_module') >= 0 ? 1 : 0, module_shares() ? 1 : 0,
   'the share module is in the .so for nginx ' . nginx_version() . ' exactly when nginx does not share contexts itself');

__DATA__

=== TEST 1: locations with the same settings share one context, and each still speaks TLS
--- config
    location /a/ { proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF; }
    location /b/ { proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF; }
    location /c/ {
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_name abc.example.com;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
--- request eval
["GET /a/", "GET /b/", "GET /c/"]
--- response_body_like eval
[qr/^backend=leaf sni= path=\/a\/$/, qr/^backend=leaf sni= path=\/b\/$/, qr/^backend=leaf sni= path=\/c\/$/]
--- error_log eval
main::sharing_notice(qr/\[notice\] .*gateway_tls: 3 proxy TLS locations use 1 SSL context\b/)
--- no_error_log eval
main::no_sharing_notice()


=== TEST 2: a client certificate in one location is presented by that location only
--- http_config
    proxy_ssl_session_reuse off;
--- config
    location /before/ { proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_MTLS; }
    location /cert/ {
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_MTLS;
    }
    location /after/ { proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_MTLS; }
--- request eval
["GET /before/", "GET /cert/", "GET /after/"]
--- response_body_like eval
[qr/client_verify=NONE/, qr/client_verify=SUCCESS client_fingerprint=[0-9a-f]{40}/, qr/client_verify=NONE/]
--- error_log eval
main::sharing_notice(qr/gateway_tls: 3 proxy TLS locations use 2 SSL contexts/)
--- no_error_log eval
main::no_sharing_notice()


=== TEST 3: stock proxy_ssl_verify keeps each location's trusted certificates
--- http_config
    # the locations share one implicit upstream, whose peer would resume
    # /ca/'s session in /unrelated/ (stock nginx does the same)
    proxy_ssl_session_reuse off;
    proxy_ssl_verify_depth 2;
    proxy_ssl_name abc.example.com;
--- config
    location /ca/ {
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate $TEST_NGINX_CERTS/ca.crt;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
    location /unrelated/ {
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate $TEST_NGINX_CERTS/unrelated-ca.crt;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
    location /ca-again/ {
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate $TEST_NGINX_CERTS/ca.crt;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
--- request eval
["GET /ca/", "GET /unrelated/", "GET /ca-again/"]
--- error_code eval
[200, 502, 200]
--- error_log eval
[main::sharing_notice(qr/gateway_tls: 3 proxy TLS locations use 2 SSL contexts/),
 qr/upstream SSL certificate verify error: \(\d+:unable to get (local )?issuer certificate\) while SSL handshaking to upstream, client: \S+, server: \S+, request: "GET \/unrelated\//]
--- no_error_log eval
main::no_sharing_notice()


=== TEST 4: an if{} block and a proxy_pass with variables still speak TLS
--- config
    location /if/ {
        if ($arg_deny) {
            return 403;
        }
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
    location /variable/ {
        set $backend 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_pass https://$backend;
    }
--- request eval
["GET /if/?x=1", "GET /variable/"]
--- response_body_like eval
[qr/^backend=leaf sni= path=\/if\/$/, qr/^backend=leaf sni= path=\/variable\/$/]
--- error_log eval
main::sharing_notice(qr/gateway_tls: 1 proxy TLS location uses 1 SSL context\b/)
--- no_error_log eval
main::no_sharing_notice()


=== TEST 5: proxy_ssl_verify without trusted certificates is still refused
--- config
    location / {
        proxy_ssl_verify on;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
--- must_die
--- error_log eval
qr/\[emerg\] .*no proxy_ssl_trusted_certificate for proxy_ssl_verify/

=== TEST 6: a client certificate without its key is still refused
--- config
    location / {
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_pass https://127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
--- must_die
--- error_log eval
qr/\[emerg\] .*no "proxy_ssl_certificate_key" is defined for certificate "\S+leaf.crt"/

=== TEST 7: grpc_pass grpcs:// locations share theirs too, which still offers h2 by ALPN
--- config
    location /pkg.A/ { grpc_pass grpcs://127.0.0.1:$TEST_NGINX_BACKEND_LEAF_H2; }
    location /pkg.B/ {
        grpc_ssl_verify_mode strict;
        grpc_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        grpc_ssl_name abc.example.com;
        grpc_pass grpcs://127.0.0.1:$TEST_NGINX_BACKEND_LEAF_H2;
    }
--- request eval
["GET /pkg.A/Method", "GET /pkg.B/Method"]
--- response_body_like eval
[qr/^backend=leaf_h2 sni= path=\/pkg.A\/Method$/, qr/^backend=leaf_h2 sni= path=\/pkg.B\/Method$/]
--- error_log eval
main::sharing_notice(qr/\[notice\] .*gateway_tls: 2 grpc TLS locations use 1 SSL context\b/)
--- no_error_log eval
main::no_sharing_notice()

