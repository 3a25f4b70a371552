# A listener's certificate replaced with no reload (issue 55):
# gateway_tls_certificate NAME in a server{} lets the upstream API give
# new handshakes another key pair (as cert-manager renews a Secret). Every
# worker presents it from its next handshake; a connection made before
# goes on; other servers keep theirs; bad input changes nothing; a reload
# keeps it unless the configured certificate changed.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use JSON::PP;

plan 'no_plan';
setup();
my $dir = servroot();
my $certs = certs_dir();
my $port = server_port();
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
make_path("$dir/gw/logs", "$dir/gw/tmp");

# the configured certificate of a.example.com lives in files of the test's own
sub configure_a {
    my $name = shift;
    spit("$dir/gw/a.crt", slurp("$certs/$name.crt"));
    spit("$dir/gw/a.key", slurp("$certs/$name.key"));
}
configure_a('leaf');
sub conf {
    my $extra = shift // '';
    return <<"EOF";
load_module $module;
worker_processes 2;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    gateway_tls_upstream_state_zone 256k;
    server {
        listen 127.0.0.1:$port ssl reuseport;
        server_name b.example.com;
        ssl_certificate $certs/spiffe.crt;
        ssl_certificate_key $certs/spiffe.key;
        return 200 "b \$pid\\n";
    }
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.example.com;
        ssl_certificate a.crt;
        ssl_certificate_key a.key;
        gateway_tls_certificate gw-a;
        return 200 "a \$pid\\n";
    }
$extra
    server {
        listen 127.0.0.1:@{[$port + 1]};
        location /api {
            gateway_tls_upstream_api;
            gateway_tls_upstream_api_allow 127.0.0.1;
            gateway_tls_upstream_api_token_file @{[operator_token_file()]};
            client_max_body_size 1m;
            client_body_buffer_size 1m;
        }
    }
}
EOF
}
spit("$dir/gw/nginx.conf", conf());
start_nginx("$dir/gw", 'nginx.conf', $port);
my $master = slurp("$dir/gw/logs/nginx.pid");
chomp $master;
my $workers = worker_pids($master);

my $name_of = certificate_names(qw(leaf wildcard spiffe untrusted));
my %sha = reverse %$name_of;

# 20 handshakes: the certificates presented, joined where they differ, and
# how many workers answered
sub presented {
    my ($certificates, $workers) = presented_certificates($port, shift, $name_of, 20, qr/^\w (\d+)$/m);
    return ($certificates, scalar grep { $_ ne '-' } @$workers);
}
my $json = JSON::PP->new->canonical;
sub api { my ($method, $body) = @_; return api_request($port + 1, '/api', $method, $body) }
sub push_certificate {
    my ($name, $crt, $key) = @_;
    return api('PUT', $json->encode({certificates => {$name => {certificate => $crt, key => $key}}}));
}
sub log_since { my $from = shift; return substr(slurp("$dir/gw/logs/error.log"), $from) }

# ---- as configured -----------------------------------------------------------
my ($got, $answered) = presented('a.example.com');
is($got, 'leaf', 'as configured: a.example.com presents its ssl_certificate');
is($answered, 2, 'from both workers');
is((presented('b.example.com'))[0], 'spiffe', 'b.example.com its own');
like((api('GET'))[1], qr/"certificates":\{"gw-a":\{"generation":0,"source":"configuration","sha256":"$sha{leaf}"\}\}/,
     'GET lists the certificate as configured');

# a connection made before the push, kept open across it
my ($in_flight, $from_kept, $to_kept) = open_kept_tls($port, 'a.example.com');
sub ask_kept {
    print $to_kept "GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n";
    $to_kept->flush;
    my $text = '';
    while (defined(my $line = <$from_kept>)) {
        $text .= $line;
        last if $line =~ /^a \d+$/;
    }
    return $text;
}
my $kept_first = ask_kept();
like($kept_first, qr/^HTTP\/1\.1 200.*^a \d+$/ms, 'a connection opened before the push is served');

# ---- a new key pair: every worker, the next handshake -------------------------
my $log_at = -s "$dir/gw/logs/error.log";
my ($code, $reply) = push_certificate('gw-a', slurp("$certs/wildcard.crt"), slurp("$certs/wildcard.key"));
is($code, 200, 'a new certificate for gw-a is taken') or diag $reply;
like($reply, qr/"certificates":\{"gw-a":\{"generation":[1-9]\d*\}\}/, 'and says its generation');
($got, $answered) = presented('a.example.com');
is($got, 'wildcard', 'at once, every handshake gets the new certificate');
is($answered, 2, 'in both workers');
is((presented('b.example.com'))[0], 'spiffe', 'the other server keeps its own');
is(worker_pids($master), $workers, 'with no reload: the same workers');
my $kept_second = ask_kept();
like($kept_second, qr/^HTTP\/1\.1 200.*^a \d+$/ms, 'the connection opened before goes on');
is(($kept_second =~ /^a (\d+)$/m)[0], ($kept_first =~ /^a (\d+)$/m)[0], 'in the same worker');
like(log_since($log_at), qr/certificate "gw-a" now presents $sha{wildcard} to new handshakes \(from the API, entry \d+\)/,
     'the change is logged');
my (undef, $listed) = api('GET');
like($listed, qr/"gw-a":\{"generation":[1-9]\d*,"source":"api","sha256":"$sha{wildcard}"\}/, 'GET lists the pushed certificate');
unlike($listed, qr/PRIVATE|BEGIN/, 'and never its key or PEM');
unlike(slurp("$dir/gw/logs/error.log"), qr/BEGIN/, 'nor does the log');
close_kept_tls($in_flight, $to_kept);

# ---- bad input changes nothing -----------------------------------------------
my $encrypted = `openssl pkey -in $certs/untrusted.key -aes128 -passout pass:secret 2>/dev/null`;
for my $r (
    [['gw-b', slurp("$certs/untrusted.crt"), slurp("$certs/untrusted.key")], 404,
     qr/no certificate \\"gw-b\\" \(gateway_tls_certificate of a server\)/, 'an unknown certificate'],
    [['gw-a', slurp("$certs/untrusted.crt"), slurp("$certs/leaf.key")], 400,
     qr/certificates\[\\"gw-a\\"\]\.key: is not the private key of the first certificate/, 'a key of another certificate'],
    [['gw-a', slurp("$certs/untrusted.crt"), $encrypted], 400, qr/only PRIVATE KEY or RSA PRIVATE KEY or EC PRIVATE KEY PEM blocks/,
     'an encrypted key'],
    [['gw-a', slurp("$certs/untrusted.key"), slurp("$certs/untrusted.key")], 400, qr/only CERTIFICATE PEM blocks may be given/,
     'a key for a certificate'],
) {
    my ($args, $status, $text, $what) = @$r;
    my ($got_code, $why) = push_certificate(@$args);
    is($got_code, $status, "$what: $status");
    like($why, $text, "$what: says why");
}
my ($mixed) = api('PUT', $json->encode({certificates => {'gw-a' => {certificate => slurp("$certs/untrusted.crt"),
                                                                     key => slurp("$certs/untrusted.key")}},
                                          upstreams => {nope => {servers => []}}}));
is($mixed, 404, 'a good certificate beside an unknown upstream: refused as a whole');
is((api('GET'))[1], $listed, 'after every refusal the list is unchanged');
is((presented('a.example.com'))[0], 'wildcard', 'and so is what handshakes get');

# ---- reloads -----------------------------------------------------------------
sub replaced {
    my %old = map { $_ => 1 } split ' ', shift;
    my @now = split ' ', worker_pids($master);
    return @now && !grep { $old{$_} } @now;
}
sub reload {
    my $before = worker_pids($master);
    system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null") == 0 or diag 'reload failed';
    ok(wait_for(sub { replaced($before) }), shift);
}
reload('a reload of the same configuration');
is((presented('a.example.com'))[0], 'wildcard', 'keeps the certificate last pushed');
like((api('GET'))[1], qr/"gw-a":\{"generation":[1-9]\d*,"source":"api","sha256":"$sha{wildcard}"/, 'and lists it');

configure_a('untrusted');
reload('a reload onto another configured certificate');
is((presented('a.example.com'))[0], 'untrusted', 'serves the configured one: the push it replaced is dropped');
like((api('GET'))[1], qr/"gw-a":\{"generation":0,"source":"configuration","sha256":"$sha{untrusted}"/,
     'and lists it as configured');

# ---- what the directive asks of its server -------------------------------------
my $other = $port + 2;
for my $r (
    ["server { listen 127.0.0.1:$other; server_name c.example.com; gateway_tls_certificate gw-c; }",
     qr/gateway_tls_certificate "gw-c" is for a server with ssl_certificate \(without variables\)/, 'no certificate'],
    ["server { listen 127.0.0.1:$other ssl; server_name c.example.com; ssl_certificate \$ssl_server_name.crt;"
     . " ssl_certificate_key \$ssl_server_name.key; gateway_tls_certificate gw-c; }",
     qr/gateway_tls_certificate "gw-c" is for a server with ssl_certificate \(without variables\)/, 'a certificate of variables'],
    ["server { listen 127.0.0.1:$other ssl; server_name c.example.com; ssl_certificate $certs/spiffe.crt;"
     . " ssl_certificate_key $certs/spiffe.key; gateway_tls_certificate gw-a; }",
     qr/gateway_tls_certificate "gw-a" names servers whose ssl_certificate differ/, 'one name, two certificates'],
    ["server { listen 127.0.0.1:$other ssl; server_name c.example.com; ssl_certificate $certs/spiffe.crt;"
     . " ssl_certificate_key $certs/spiffe.key; gateway_tls_certificate \"a;b\"; }",
     qr/gateway_tls_certificate "a;b": not a name the upstream API takes/, 'a name the API cannot take'],
) {
    my ($server, $error, $what) = @$r;
    spit("$dir/gw/bad.conf", conf($server));
    my $out = `nginx -p $dir/gw/ -c bad.conf -t 2>&1`;
    isnt($?, 0, "$what: nginx -t refuses it");
    like($out, $error, "$what: and says why");
}

# ---- a certificate named by two servers: both take a push ------------------------
spit("$dir/gw/nginx.conf", conf("server { listen 127.0.0.1:$port ssl; server_name a2.example.com; ssl_certificate a.crt;"
                                . " ssl_certificate_key a.key; gateway_tls_certificate gw-a; return 200 \"a \$pid\\n\"; }"));
reload('a second server naming gw-a');
($code) = push_certificate('gw-a', slurp("$certs/wildcard.crt"), slurp("$certs/wildcard.key"));
is($code, 200, 'one push');
is((presented('a.example.com'))[0] . ' / ' . (presented('a2.example.com'))[0], 'wildcard / wildcard', 'reaches both servers');

stop_nginx("$dir/gw");
