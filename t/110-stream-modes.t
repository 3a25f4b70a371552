# The stream proxy mirrors the http tests: every verification mode against
# every kind of backend certificate, DNS SANs with the SNI decoupled from the
# verified name, certificate pins, and the peer variables in the stream log.
#              good  expired  wrong SAN  self-signed  untrusted
# strict        ok    closed    closed      closed      closed
# allow_expired ok    ok        closed      closed      closed
# skip_san      ok    closed    ok          closed      closed
# skip          ok    ok        ok          ok          ok
use lib 't/lib';
use Test::GatewayTLS;

our @Kinds = qw(leaf expired wrongsan selfsigned untrusted);

# One stream server per backend kind, on $TEST_NGINX_STREAM_PORT_0 ... _4.
sub mode_servers {
    my $mode = shift;
    my $out = "    proxy_ssl_verify_insecure allow;\n    log_format modes '\$server_port \$upstream_ssl_verify \$upstream_ssl_verify_mode';\n";
    for my $i (0 .. $#Kinds) {
        my $kind = uc $Kinds[$i];
        my $ca = $mode eq 'skip' ? '' : "        proxy_ssl_verify_ca \$TEST_NGINX_CERTS/ca.crt;\n";
        $out .= "    server {\n        listen 127.0.0.1:\$TEST_NGINX_STREAM_PORT_$i;\n"
              . "        access_log logs/access.log modes;\n"
              . "        proxy_pass 127.0.0.1:\$TEST_NGINX_BACKEND_$kind;\n        proxy_ssl on;\n"
              . "        proxy_ssl_name abc.example.com;\n        proxy_ssl_verify_mode $mode;\n$ca    }\n";
    }
    return $out;
}

sub mode_requests { [map { "\@$_ GET /$Kinds[$_]" } 0 .. $#Kinds] }

run_tests();

__DATA__

=== TEST 1: strict
--- stream_config eval: main::mode_servers('strict')
--- request eval: main::mode_requests()
--- error_code eval
[200, 0, 0, 0, 0]
--- error_log eval
[qr/reason "expired"/, qr/reason "name"/, qr/reason "chain"/]

=== TEST 2: allow_expired
--- stream_config eval: main::mode_servers('allow_expired')
--- request eval: main::mode_requests()
--- error_code eval
[200, 200, 0, 0, 0]
--- access_log eval
[qr/ SUCCESS allow_expired$/m]

=== TEST 3: skip_san
--- stream_config eval: main::mode_servers('skip_san')
--- request eval: main::mode_requests()
--- error_code eval
[200, 0, 200, 0, 0]

=== TEST 4: skip
--- stream_config eval: main::mode_servers('skip')
--- request eval: main::mode_requests()
--- error_code eval
[200, 200, 200, 200, 200]
--- access_log eval
[qr/ SKIPPED skip$/m]
--- error_log eval
[qr/\[warn\] .*insecure backend verification "proxy_ssl_verify_mode skip"/]

=== TEST 5: DNS SAN with the SNI decoupled from the verified name
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
        proxy_ssl_server_name on;
        proxy_ssl_name other.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:abc.example.com;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_WRONGSAN;
        proxy_ssl on;
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san dns:abc.example.com;
    }
--- request eval
['@0 GET /decoupled', '@1 GET /wrong']
--- error_code eval
[200, 0]
--- response_body eval
["backend=leaf sni=other.example.com path=/decoupled\n", ""]
--- no_backend_log
/wrong

=== TEST 6: certificate pins: the right one trusts a self-signed backend, another refuses it
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_CERTPIN_SELFSIGNED;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SELFSIGNED;
        proxy_ssl on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $TEST_NGINX_CERTPIN_LEAF;
        proxy_ssl_policy_name tcp/pinned;
    }
--- request eval
['@0 GET /pinned', '@1 GET /other-pin']
--- error_code eval
[200, 0]
--- error_log
policy "tcp/pinned"
reason "pin"

=== TEST 7: the peer's hashes and SANs in the stream log, as openssl computes them
--- stream_config
    log_format peer 'san=$upstream_ssl_peer_san spki=$upstream_ssl_peer_spki_sha256 cert=$upstream_ssl_peer_cert_sha256 by=$upstream_ssl_verified_by';
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        access_log logs/access.log peer;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_SPIFFE;
        proxy_ssl on;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $TEST_NGINX_CERTS/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
    }
--- stream
--- request
GET /
--- error_code: 200
--- access_log eval
my $spki = Test::GatewayTLS::spki_pin('spiffe');
$spki =~ s/^sha256-spki://;
my $cert = lc Test::GatewayTLS::cert_pin('spiffe');
$cert =~ s/^sha256-cert://;
$cert =~ s/://g;
["san=uri:spiffe://abc.example.com/test-identity spki=$spki cert=$cert by=uri:spiffe://abc.example.com/test-identity"]
