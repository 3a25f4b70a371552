# ssl_verify_client_pin and ssl_verify_client_pin_certificate (GEP-4078):
# the client's certificate must match a pin, and pass the CA unless
# optional_no_ca; a client that does not is refused in the handshake; a
# session is resumed only under the same pins, across SNI servers too.
# The clients are nginx itself: locations of the plain server proxy to the
# TLS servers with proxy_ssl_certificate (a refused handshake is a 502).
use lib 't/lib';
use Test::GatewayTLS;

run_tests();

__DATA__

=== TEST 1: pins alone (optional_no_ca) admit a self-signed client and refuse others, and clients without a certificate, in the handshake
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED $TEST_NGINX_SPKI_EXPIRED;
        return 200 "verify=$ssl_client_verify pin=$ssl_client_pin spki=$ssl_client_spki_sha256 cert=$ssl_client_cert_sha256\n";
    }
--- config
    location /selfsigned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/selfsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/selfsigned.key;
        proxy_ssl_session_reuse off;
    }
    location /leaf {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        proxy_ssl_session_reuse off;
    }
    location /none {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_session_reuse off;
    }
    location /expired {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/expired.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/expired.key;
        proxy_ssl_session_reuse off;
    }
--- request eval
["GET /selfsigned", "GET /leaf", "GET /none", "GET /expired"]
--- error_code eval
[200, 502, 502, 502]
--- response_body_like eval
my $spki = Test::GatewayTLS::spki_pin('selfsigned');
(my $b64 = $spki) =~ s/^sha256-spki://;
my $cert = lc Test::GatewayTLS::cert_pin('selfsigned');
$cert =~ s/^sha256-cert://;
$cert =~ s/://g;
["^\Qverify=SUCCESS pin=$spki spki=$b64 cert=$cert\E\n\$", "502 Bad Gateway", "502 Bad Gateway", "502 Bad Gateway"]
--- error_log eval
[qr/gateway_tls: client certificate rejected: pins "client\@[^"]+nginx.conf:\d+", reason "pin" \(no pin matches the certificate\), client SANs "dns:abc.example.com,uri:spiffe:\/\/abc.example.com\/test-identity,dns:other.example.com"/,
 qr/gateway_tls: client certificate rejected: pins "client\@[^"]+", reason "expired" \(outside its validity period\)/]

=== TEST 2: with a CA (ssl_verify_client on) the client must pass the CA and match a pin
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client on;
        ssl_verify_depth 3;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        ssl_verify_client_pin $TEST_NGINX_SPKI_LEAF $TEST_NGINX_SPKI_UNTRUSTED;
        return 200 "verify=$ssl_client_verify pin=$ssl_client_pin\n";
    }
--- config
    proxy_ssl_session_reuse off;
    location /leaf {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
    }
    location /wildcard {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/wildcard.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/wildcard.key;
    }
    location /untrusted {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/untrusted.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/untrusted.key;
    }
    location /none {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
    }
--- request eval
["GET /leaf", "GET /wildcard", "GET /untrusted", "GET /none"]
--- error_code eval
[200, 502, 502, 502]
--- response_body_like eval
["^verify=SUCCESS pin=sha256-spki:", "", "", ""]
--- error_log eval
[qr/client certificate rejected: pins "[^"]+", reason "pin"/,
 qr/client certificate rejected: pins "[^"]+", reason "chain" \(unable to (?:get local issuer certificate|verify the first certificate)\), client SANs "dns:abc.example.com"/]

=== TEST 3: pins from a certificate file; the status endpoint counts admissions and refusals
--- http_config
    gateway_tls_status_zone 256k;
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin_certificate $TEST_NGINX_CERTS/selfsigned.leaf.crt;
        return 200 "pin=$ssl_client_pin\n";
    }
--- config
    proxy_ssl_session_reuse off;
    location /selfsigned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/selfsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/selfsigned.key;
    }
    location /leaf {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
    }
    location = /status {
        gateway_tls_status;
        gateway_tls_status_allow 127.0.0.1;
        gateway_tls_status_token_file $TEST_NGINX_OPERATOR_TOKEN_FILE;
    }
--- more_headers
Authorization: Bearer $TEST_NGINX_OPERATOR_TOKEN
--- request eval
["GET /selfsigned", "GET /selfsigned", "GET /leaf", "GET /status"]
--- error_code eval
[200, 200, 502, 200]
--- response_body_like eval
["^pin=sha256-cert:[0-9a-f]{64}\n\$", "", "",
 '\{"name":"client@[^"]+nginx.conf:\d+","kind":"client","mode":"strict","trust":"","sans":\[\],"pins":1,"handshakes":\{"verified":2,"skipped":0,"failed":\{"chain":0,"expired":0,"name":0,"san":0,"pin":1,']

=== TEST 4: a session is resumed only under the same pins, across SNI servers too (TLS 1.2: the session's name keeps the handshake in its server; Host naming the pinned one gets 421)
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl default_server;
        server_name open.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        return 200 "open reused=$ssl_session_reused\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        server_name pinned.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return 200 "pinned reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
--- request eval
# the client (openssl s_client) offers the saved session whatever name it
# asks for next; the wildcard certificate matches no pin
["\@0 TLS sni=open.example.com proto=tls1_2 cert=wildcard out=open host=open.example.com GET /",
 "\@0 TLS sni=open.example.com proto=tls1_2 cert=wildcard in=open host=open.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_2 cert=wildcard in=open host=pinned.example.com GET /"]
--- error_code eval
# 421 where the session is resumed in the server it names; 0 (no HTTP
# answer) where OpenSSL does not resume it for another name (3.6), and the
# pinned server's handshake refuses the unpinned certificate
[200, 200, qr/^(421|0)$/]
--- response_body_like eval
["^open reused=\\.\n", "^open reused=r\n", "^\$|Misdirected Request"]
--- error_log eval
qr/client attempted to request the server name different from the one that was negotiated|the handshake was made for another server \(SNI "open.example.com"\)|client certificate rejected: pins "client@[^"]+", reason "pin"/

=== TEST 4a: a session is resumed only under the same pins, across SNI servers too (TLS 1.3: SNI picks the server, the handshake is refused)
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl default_server;
        server_name open.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        return 200 "open reused=$ssl_session_reused\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        server_name pinned.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return 200 "pinned reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
--- request eval
["\@0 TLS sni=open.example.com proto=tls1_3 cert=wildcard out=open host=open.example.com GET /",
 "\@0 TLS sni=open.example.com proto=tls1_3 cert=wildcard in=open host=open.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_3 cert=wildcard in=open host=pinned.example.com GET /"]
--- error_code eval
# 0: no HTTP answer, the handshake failed
[200, 200, 0]
--- response_body_like eval
["^open reused=\\.\n", "^open reused=r\n", "^\$"]
--- error_log eval
# the module's refusal, or nginx's own where it has one for a session that
# names another server (1.26.3, and Debian's 1.22.1), or, where OpenSSL
# does not resume the session for another name (3.6), the pins refusing
# the unpinned certificate in a full handshake
qr/gateway_tls: TLS session made under other client pins refused for pins "client@[^"]+" \(SNI "pinned.example.com"\)|handshake rejected while SSL handshaking|client certificate rejected: pins "client@[^"]+", reason "pin"/

=== TEST 4b: a session made without SNI (the default server's) is not resumed into a pinned server by a later SNI
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl default_server;
        server_name open.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        return 200 "open reused=$ssl_session_reused\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        server_name pinned.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return 200 "pinned reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
--- request eval
# nginx's own check (1.26.3, Debian's 1.22.1) compares the session's server
# name, of which this one has none
["\@0 TLS proto=tls1_3 cert=wildcard out=open host=open.example.com GET /",
 "\@0 TLS proto=tls1_3 cert=wildcard in=open host=open.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_3 cert=wildcard in=open host=pinned.example.com GET /",
 # a pinned client of the pinned server (not the port's default) resumes there
 "\@0 TLS sni=pinned.example.com proto=tls1_3 cert=selfsigned out=pinned host=pinned.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_3 cert=selfsigned in=pinned host=pinned.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_2 cert=selfsigned out=pinned12 host=pinned.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_2 cert=selfsigned in=pinned12 host=pinned.example.com GET /"]
--- error_code eval
[200, 200, 0, 200, 200, 200, 200]
--- response_body_like eval
["^open reused=\\.\n", "^open reused=r\n", "^\$", "^pinned reused=\\. pin=sha256-spki:",
 "^pinned reused=r pin=sha256-spki:", "^pinned reused=\\. pin=sha256-spki:", "^pinned reused=r pin=sha256-spki:"]
--- error_log eval
# the module's refusal (nginx has none for a session without a name), or,
# where OpenSSL does not resume the session for another name (3.6), the
# pins refusing the unpinned certificate in a full handshake
qr/gateway_tls: TLS session made under other client pins refused for pins "client@[^"]+" \(SNI "pinned.example.com"\)|client certificate rejected: pins "client@[^"]+", reason "pin"/

=== TEST 4c: the pinned server is the port's default: a session made on another server of the port (under the default's context, as OpenSSL makes it) is not resumed into it
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl default_server;
        server_name pinned.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return 200 "pinned reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        server_name open.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        return 200 "open reused=$ssl_session_reused\n";
    }
--- request eval
["\@0 TLS sni=open.example.com proto=tls1_3 cert=wildcard out=open host=open.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_3 cert=wildcard in=open host=pinned.example.com GET /",
 "\@0 TLS proto=tls1_3 cert=wildcard in=open host=pinned.example.com GET /",
 "\@0 TLS sni=open.example.com proto=tls1_2 cert=wildcard out=open12 host=open.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_2 cert=wildcard in=open12 host=pinned.example.com GET /",
 # and the pinned server's own clients still resume there
 "\@0 TLS sni=pinned.example.com proto=tls1_3 cert=selfsigned out=pinned host=pinned.example.com GET /",
 "\@0 TLS sni=pinned.example.com proto=tls1_3 cert=selfsigned in=pinned host=pinned.example.com GET /"]
--- error_code eval
[200, 0, 0, 200, qr/^(421|0)$/, 200, 200]
--- response_body_like eval
["^open reused=\\.\n", "^\$", "^\$", "^open reused=\\.\n", "^\$|Misdirected Request",
 "^pinned reused=\\. pin=sha256-spki:", "^pinned reused=r pin=sha256-spki:"]
--- error_log eval
# the session offered without SNI: only the module refuses it (its server
# name is open.example.com, but there is no other name to compare), or,
# where OpenSSL 3.6 makes a full handshake, the pins
qr/gateway_tls: TLS session made under other client pins refused for pins "client@[^"]+" \(SNI ""\)|client certificate rejected: pins "client@[^"]+", reason "pin"/

=== TEST 5: within the same pins sessions resume, with the identity they were made with
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_CERTPIN_SELFSIGNED;
        return 200 "reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
--- config
    proxy_ssl_session_reuse on;
    location /selfsigned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/selfsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/selfsigned.key;
    }
--- request eval
["GET /selfsigned", "GET /selfsigned"]
--- error_code eval
[200, 200]
--- response_body_like eval
["^reused=\\. pin=sha256-cert:[0-9a-f]{64}\n", "^reused=r pin=sha256-cert:[0-9a-f]{64}\n"]

=== TEST 6: directive errors name the file and line
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
    }
--- must_die
--- error_log eval
[qr/"ssl_verify_client_pin" in \S+nginx.conf:\d+ needs "ssl_verify_client on", "optional" or "optional_no_ca" in its server/]

=== TEST 7: a malformed pin
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin sha256-spki:tooshort;
    }
--- must_die
--- error_log eval
[qr/invalid value "sha256-spki:tooshort" in "ssl_verify_client_pin" directive: .* in \S+nginx.conf:\d+/]

=== TEST 8: pins in a server without TLS
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        ssl_verify_client_pin_certificate $TEST_NGINX_CERTS/selfsigned.leaf.crt;
    }
--- must_die
--- error_log eval
[qr/"ssl_verify_client_pin" in \S+nginx.conf:\d+ needs TLS in its server/]

=== TEST 9: the stream module: pins on a TLS stream listener, refusal in the handshake, the variables in the stream log
--- stream_config
    log_format pins 'pin=$ssl_client_pin spki=$ssl_client_spki_sha256 verify=$ssl_client_verify';
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_3 ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        access_log logs/access.log pins;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        proxy_ssl on;
        proxy_ssl_session_reuse off;
        proxy_ssl_certificate $TEST_NGINX_CERTS/selfsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/selfsigned.key;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_pass 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        proxy_ssl on;
        proxy_ssl_session_reuse off;
        proxy_ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
    }
--- request eval
['@0 GET /pinned', '@1 GET /other']
--- error_code eval
[200, 0]
--- response_body eval
["backend=leaf sni= path=/pinned\n", ""]
--- access_log eval
my $spki = Test::GatewayTLS::spki_pin('selfsigned');
(my $b64 = $spki) =~ s/^sha256-spki://;
["pin=$spki spki=$b64 verify=SUCCESS"]
--- error_log eval
[qr/client certificate rejected: pins "client\@[^"]+", reason "pin"/]
--- no_backend_log
/other

=== TEST 10: stream: pins need ssl_verify_client
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
    }
--- must_die
--- error_log eval
[qr/"ssl_verify_client_pin" in \S+nginx.conf:\d+ needs "ssl_verify_client on", "optional" or "optional_no_ca"/]

=== TEST 11: ssl_verify_client_handshake on: a client the CA refuses fails the handshake (stock nginx answers 400 after it)
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client on;
        ssl_verify_depth 3;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        ssl_verify_client_handshake on;
        return 200 "verify=$ssl_client_verify pin=$ssl_client_pin\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1 ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client on;
        ssl_verify_depth 3;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        return 200 "stock verify=$ssl_client_verify\n";
    }
--- config
    proxy_ssl_session_reuse off;
    location /good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/wildcard.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/wildcard.key;
    }
    location /untrusted {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/untrusted.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/untrusted.key;
    }
    location /none {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
    }
    location /stock-untrusted {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_ssl_certificate $TEST_NGINX_CERTS/untrusted.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/untrusted.key;
    }
--- request eval
["GET /good", "GET /untrusted", "GET /none", "GET /stock-untrusted"]
--- error_code eval
[200, 502, 502, 400]
--- response_body_like eval
["^verify=SUCCESS pin=\n", "502 Bad Gateway", "502 Bad Gateway", "400 Bad Request"]
--- error_log eval
[qr/client certificate rejected: pins "client\@[^"]+", reason "chain"/]

=== TEST 12: ssl_verify_client_handshake needs ssl_verify_client
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client_handshake on;
    }
--- must_die
--- error_log eval
[qr/"ssl_verify_client_handshake" in \S+nginx.conf:\d+ needs "ssl_verify_client on"/]

=== TEST 13: a client's SANs reach the error log escaped: whoever connects cannot write a line of its own
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return 200 "verify=$ssl_client_verify\n";
    }
--- config
    location /forged {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/forged.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/forged.key;
        proxy_ssl_session_reuse off;
    }
--- request
GET /forged
--- error_code: 502
--- error_log
reason "pin" (no pin matches the certificate), client SANs "dns:forged.example.com,dns:x\x0D\x0A2020/01/01 00:00:00 [emerg] 1#1: forged line \x22quoted\x22"
--- no_error_log eval
[qr/^2020\/01\/01 00:00:00 \[emerg\]/m, qr/forged line "quoted"/]

=== TEST 14: a handshake that verified nothing cannot reach a pinned server by Host: no SNI, or an unknown one, lands in the default server and gets 421
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl default_server;
        server_name default.test;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        return 200 "server=default verify=$ssl_client_verify\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        server_name pinned.test;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return 200 "server=pinned verify=$ssl_client_verify\n";
    }
--- config
    proxy_ssl_session_reuse off;
    location /no-sni {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_set_header Host pinned.test;
    }
    location /unknown-sni {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_server_name on;
        proxy_ssl_name unknown.test;
        proxy_set_header Host pinned.test;
    }
    location /default {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_set_header Host default.test;
    }
    location /pinned {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_server_name on;
        proxy_ssl_name pinned.test;
        proxy_set_header Host pinned.test;
        proxy_ssl_certificate $TEST_NGINX_CERTS/selfsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/selfsigned.key;
    }
--- request eval
["GET /no-sni", "GET /unknown-sni", "GET /default", "GET /pinned"]
--- error_code eval
[421, 421, 200, 200]
--- response_body_like eval
["421", "421", "^server=default verify=NONE\n\$", "^server=pinned verify=SUCCESS\n\$"]
--- error_log eval
[qr/client certificate pins "client\@[^"]+": the handshake was made for another server \(SNI ""\), the request is misdirected/,
 qr/client certificate pins "client\@[^"]+": the handshake was made for another server \(SNI "unknown\.test"\), the request is misdirected/]

=== TEST 15: ssl_verify_client_handshake fallback: every client is served, its chain's failure kept for $ssl_client_verify (stock optional_no_ca answers 400 to a signature under the trusted CA's name)
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_depth 3;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        ssl_verify_client_handshake fallback;
        return 200 "verify=$ssl_client_verify\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1 ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_depth 3;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        return 200 "stock verify=$ssl_client_verify\n";
    }
--- config
    proxy_ssl_session_reuse off;
    location /good {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/wildcard.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/wildcard.key;
    }
    location /twin {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/twinsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/twinsigned.key;
    }
    location /expired {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_ssl_certificate $TEST_NGINX_CERTS/expired.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/expired.key;
    }
    location /none {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT;
    }
    location /stock-twin {
        proxy_pass https://127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_ssl_certificate $TEST_NGINX_CERTS/twinsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/twinsigned.key;
    }
--- request eval
["GET /good", "GET /twin", "GET /expired", "GET /none", "GET /stock-twin"]
--- error_code eval
[200, 200, 200, 200, 400]
--- response_body_like eval
["^verify=SUCCESS\n", "^verify=FAILED:unable to verify the first certificate\n",
 "^verify=FAILED:unable to verify the first certificate\n", "^verify=NONE\n", "400 Bad Request"]

=== TEST 16: ssl_verify_client_handshake fallback needs optional_no_ca and no pins: it admits every client
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client on;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        ssl_verify_client_handshake fallback;
    }
--- must_die
--- error_log eval
[qr/"ssl_verify_client_handshake fallback" in \S+nginx.conf:\d+ needs "ssl_verify_client optional_no_ca" and no "ssl_verify_client_pin"/]

=== TEST 17: stream: ssl_verify_client_handshake fallback serves a client that stock optional_no_ca refuses after the handshake
--- stream_config
    log_format fallback 'verify=$ssl_client_verify';
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_3 ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_depth 3;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        ssl_verify_client_handshake fallback;
        access_log logs/access.log fallback;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_2 ssl;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_verify_client optional_no_ca;
        ssl_verify_depth 3;
        ssl_client_certificate $TEST_NGINX_CERTS/ca-and-inter.crt;
        proxy_pass 127.0.0.1:$TEST_NGINX_BACKEND_LEAF;
        proxy_ssl on;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT;
        proxy_pass 127.0.0.1:$TEST_NGINX_STREAM_PORT_3;
        proxy_ssl on;
        proxy_ssl_session_reuse off;
        proxy_ssl_certificate $TEST_NGINX_CERTS/twinsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/twinsigned.key;
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1;
        proxy_pass 127.0.0.1:$TEST_NGINX_STREAM_PORT_2;
        proxy_ssl on;
        proxy_ssl_session_reuse off;
        proxy_ssl_certificate $TEST_NGINX_CERTS/twinsigned.crt;
        proxy_ssl_certificate_key $TEST_NGINX_CERTS/twinsigned.key;
    }
--- request eval
['@0 GET /fallback', '@1 GET /stock']
--- error_code eval
[200, 0]
--- response_body eval
["backend=leaf sni= path=/fallback\n", ""]
--- access_log eval
["verify=FAILED:unable to verify the first certificate"]
--- no_backend_log
/stock

=== TEST 18: stream (nginx 1.25.5 picks stream servers by SNI): a session made without SNI, or under another name, is not resumed into a pinned server
--- min_nginx: 1025005
--- stream_config
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl default_server;
        server_name open.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        return "open reused=$ssl_session_reused\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        server_name pinned.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return "pinned reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
--- request eval
["\@0 TLS raw=1 proto=tls1_3 cert=wildcard out=nosni GET /",
 "\@0 TLS raw=1 proto=tls1_3 cert=wildcard in=nosni GET /",
 "\@0 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=wildcard in=nosni GET /",
 "\@0 TLS raw=1 sni=open.example.com proto=tls1_3 cert=wildcard out=open GET /",
 "\@0 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=wildcard in=open GET /",
 "\@0 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=selfsigned out=pinned GET /",
 "\@0 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=selfsigned in=pinned GET /"]
--- error_code eval
[200, 200, 0, 200, 0, 200, 200]
--- response_body_like eval
["^open reused=\\.\n", "^open reused=r\n", "^\$", "^open reused=\\.\n", "^\$",
 "^pinned reused=\\. pin=sha256-spki:", "^pinned reused=r pin=sha256-spki:"]
--- error_log eval
# the module's refusal after the handshake, or, where OpenSSL does not
# resume a session for another name (3.6), the pins refusing the
# unpinned certificate in a full handshake
qr/gateway_tls: TLS session made under other client pins refused for pins "client@[^"]+" \(SNI "pinned.example.com"\)|client certificate rejected: pins "client@[^"]+", reason "pin"/

=== TEST 19: stream, TLS 1.3 sessions kept in nginx's caches (tickets off: stateful), shared and builtin: the pinned server is the port's default, and a session made on the other server is not resumed into it; its own clients resume
--- min_nginx: 1025005
--- stream_config
    ssl_session_tickets off;
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl default_server;
        server_name pinned.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_session_cache shared:stream_sessions:1m;
        ssl_protocols TLSv1.3;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return "pinned reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT ssl;
        server_name open.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_session_cache shared:stream_sessions:1m;
        ssl_protocols TLSv1.3;
        ssl_verify_client optional_no_ca;
        return "open reused=$ssl_session_reused\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1 ssl default_server;
        server_name pinned.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_session_cache builtin;
        ssl_protocols TLSv1.3;
        ssl_verify_client optional_no_ca;
        ssl_verify_client_pin $TEST_NGINX_SPKI_SELFSIGNED;
        return "pinned reused=$ssl_session_reused pin=$ssl_client_pin\n";
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_STREAM_PORT_1 ssl;
        server_name open.example.com;
        ssl_certificate $TEST_NGINX_CERTS/leaf.crt;
        ssl_certificate_key $TEST_NGINX_CERTS/leaf.key;
        ssl_session_cache builtin;
        ssl_protocols TLSv1.3;
        ssl_verify_client optional_no_ca;
        return "open reused=$ssl_session_reused\n";
    }
--- request eval
["\@0 TLS raw=1 sni=open.example.com proto=tls1_3 cert=wildcard out=open GET /",
 "\@0 TLS raw=1 sni=open.example.com proto=tls1_3 cert=wildcard in=open GET /",
 "\@0 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=wildcard in=open GET /",
 "\@0 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=selfsigned out=pinned GET /",
 "\@0 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=selfsigned in=pinned GET /",
 "\@1 TLS raw=1 sni=open.example.com proto=tls1_3 cert=wildcard out=open1 GET /",
 "\@1 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=wildcard in=open1 GET /",
 "\@1 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=selfsigned out=pinned1 GET /",
 "\@1 TLS raw=1 sni=pinned.example.com proto=tls1_3 cert=selfsigned in=pinned1 GET /"]
--- error_code eval
[200, 200, 0, 200, 200, 200, 0, 200, 200]
--- response_body_like eval
["^open reused=\\.\n", "^open reused=r\n", "^\$", "^pinned reused=\\. pin=sha256-spki:", "^pinned reused=r pin=sha256-spki:",
 "^open reused=\\.\n", "^\$", "^pinned reused=\\. pin=sha256-spki:", "^pinned reused=r pin=sha256-spki:"]
--- error_log eval
# the module's refusal, or nginx's own (the session names another server),
# or, where OpenSSL does not resume a session for another name (3.6), the
# pins in a full handshake
qr/gateway_tls: TLS session made under other client pins refused for pins "client@[^"]+" \(SNI "pinned.example.com"\)|handshake rejected while SSL handshaking|client certificate rejected: pins "client@[^"]+", reason "pin"/
