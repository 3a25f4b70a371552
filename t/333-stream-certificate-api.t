# A TLS listener's certificate in stream{} (a TLSRoute's Terminate
# listener) replaced with no reload (issue 55): gateway_tls_certificate
# NAME in a stream server{}, pushed through the http module's upstream API
# as an http server's is. Every worker presents it from its next
# handshake; a connection made before goes on; a reload keeps it unless the
# configured certificate changed; one name may not be both an http and a
# stream server's.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use JSON::PP;

plan 'no_plan';
setup();
my $dir = servroot();
my $certs = certs_dir();
my $port = server_port();          # stream: answers with its worker's pid
my $proxied = $port + 1;           # stream: proxied to $plain, kept alive
my $api_port = $port + 2;
my $plain = $port + 3;             # http, cleartext: behind $proxied
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
(my $stream_module = $module) =~ s/ngx_http_gateway_tls_module\.so$/ngx_stream_gateway_tls_module.so/;
my $stream_load = nginx_stream_module();
make_path("$dir/gw/logs", "$dir/gw/tmp");

sub configure_s {
    my $name = shift;
    spit("$dir/gw/s.crt", slurp("$certs/$name.crt"));
    spit("$dir/gw/s.key", slurp("$certs/$name.key"));
}
configure_s('leaf');
sub conf {
    my %extra = @_;
    my ($http, $stream) = ($extra{http} // '', $extra{stream} // '');
    return <<"EOF";
$stream_load
load_module $module;
load_module $stream_module;
worker_processes 2;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 256; }
stream {
    server {
        listen 127.0.0.1:$port ssl reuseport;
        ssl_certificate s.crt;
        ssl_certificate_key s.key;
        gateway_tls_certificate gw-s;
        return "s \$pid\\n";
    }
    server {
        listen 127.0.0.1:$proxied ssl;
        ssl_certificate s.crt;
        ssl_certificate_key s.key;
        gateway_tls_certificate gw-s;
        proxy_pass 127.0.0.1:$plain;
    }
$stream
}
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    gateway_tls_upstream_state_zone 256k;
    server {
        listen 127.0.0.1:$plain;
        return 200 "backend=plain\\n";
    }
    server {
        listen 127.0.0.1:$api_port;
        location /api {
            gateway_tls_upstream_api;
            gateway_tls_upstream_api_allow 127.0.0.1;
            gateway_tls_upstream_api_token_file @{[operator_token_file()]};
            client_max_body_size 1m;
            client_body_buffer_size 1m;
        }
    }
$http
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
    my ($certificates, $workers) = presented_certificates(shift // $port, 'tcp.example.com', $name_of, 20, qr/^s (\d+)$/m);
    return ($certificates, scalar grep { $_ ne '-' } @$workers);
}
my $json = JSON::PP->new->canonical;
sub api { my ($method, $body) = @_; return api_request($api_port, '/api', $method, $body) }
sub push_certificate {
    my ($name, $crt, $key) = @_;
    return api('PUT', $json->encode({certificates => {$name => {certificate => $crt, key => $key}}}));
}
sub log_since { my $from = shift; return substr(slurp("$dir/gw/logs/error.log"), $from) }

# ---- as configured -----------------------------------------------------------
my ($got, $answered) = presented();
is($got, 'leaf', 'as configured: the stream server presents its ssl_certificate');
is($answered, 2, 'from both workers');
like((api('GET'))[1], qr/"certificates":\{"gw-s":\{"generation":0,"source":"configuration","sha256":"$sha{leaf}"\}\}/,
     'GET lists the stream certificate as configured');

# a connection made before the push, kept open across it
my ($in_flight, $from_kept, $to_kept) = open_kept_tls($proxied, 'tcp.example.com');
sub ask_kept { return ask_kept_alive($to_kept, $from_kept, 'tcp.example.com', '/') }
is(ask_kept(), '200 plain', 'a connection opened before the push is proxied');

# ---- a new key pair: every worker, the next handshake -------------------------
my $log_at = -s "$dir/gw/logs/error.log";
my ($code, $reply) = push_certificate('gw-s', slurp("$certs/wildcard.crt"), slurp("$certs/wildcard.key"));
is($code, 200, 'a new certificate for gw-s is taken') or diag $reply;
like($reply, qr/"certificates":\{"gw-s":\{"generation":[1-9]\d*\}\}/, 'and says its generation');
($got, $answered) = presented();
is($got, 'wildcard', 'at once, every handshake gets the new certificate');
is($answered, 2, 'in both workers');
is((presented($proxied))[0], 'wildcard', 'so does the other stream server naming gw-s');
is(worker_pids($master), $workers, 'with no reload: the same workers');
is(ask_kept(), '200 plain', 'the connection opened before goes on');
like(log_since($log_at), qr/certificate "gw-s" now presents $sha{wildcard} to new handshakes \(from the API, entry \d+\)/,
     'the change is logged');
like((api('GET'))[1], qr/"gw-s":\{"generation":[1-9]\d*,"source":"api","sha256":"$sha{wildcard}"\}/,
     'GET lists the pushed certificate');
close_kept_tls($in_flight, $to_kept);

my ($bad) = push_certificate('gw-s', slurp("$certs/untrusted.crt"), slurp("$certs/leaf.key"));
is($bad, 400, 'a key of another certificate is refused');
is((presented())[0], 'wildcard', 'and changes nothing');

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
is((presented())[0], 'wildcard', 'keeps the certificate last pushed');

configure_s('untrusted');
reload('a reload onto another configured certificate');
is((presented())[0], 'untrusted', 'serves the configured one: the push it replaced is dropped');
like((api('GET'))[1], qr/"gw-s":\{"generation":0,"source":"configuration","sha256":"$sha{untrusted}"/,
     'and lists it as configured');

# ---- what the directive asks -------------------------------------------------
my $other = $port + 4;
for my $r (
    [stream => "server { listen 127.0.0.1:$other; gateway_tls_certificate gw-t; return x; }",
     qr/gateway_tls_certificate "gw-t" is for a server with ssl_certificate \(without variables\)/, 'no certificate'],
    [stream => "server { listen 127.0.0.1:$other ssl; ssl_certificate $certs/spiffe.crt;"
     . " ssl_certificate_key $certs/spiffe.key; gateway_tls_certificate gw-s; return x; }",
     qr/gateway_tls_certificate "gw-s" names servers whose ssl_certificate differ/, 'one name, two certificates'],
    [http => "server { listen 127.0.0.1:$other ssl; ssl_certificate s.crt; ssl_certificate_key s.key;"
     . " gateway_tls_certificate gw-s; }",
     qr/gateway_tls_certificate "gw-s" names both an http and a stream server/, 'one name in http and stream'],
) {
    my ($block, $server, $error, $what) = @$r;
    spit("$dir/gw/bad.conf", conf($block => $server));
    my $out = `nginx -p $dir/gw/ -c bad.conf -t 2>&1`;
    isnt($?, 0, "$what: nginx -t refuses it");
    like($out, $error, "$what: and says why");
}

stop_nginx("$dir/gw");
