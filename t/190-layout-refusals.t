# What the modules assume about nginx's private structs is checked at
# nginx -t (ngx_module/ngx_gtls_nginx_layout.cc): modules built with
# those assumptions deliberately wrong (the Makefile's layout-fault
# build, NGX_GTLS_LAYOUT_FAULT) is refused with the module's line, and
# nginx neither starts nor crashes. The same configurations pass with the
# stream module as built.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use Cwd qw(abs_path);

my $fault = $ENV{GTLS_LAYOUT_FAULT_MODULE} || 'build/nginx-layout-fault/objs/ngx_stream_gateway_tls_module.so';
plan(skip_all => "no layout-fault module: $fault (make test builds it)") unless -f $fault;
$fault = abs_path($fault);
plan 'no_plan';
setup();
my $dir = servroot() . '/layout';
mkdir $dir;
mkdir "$dir/logs";
my $module = abs_path($ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so');
(my $stream = $module) =~ s/ngx_http_gateway_tls_module\.so$/ngx_stream_gateway_tls_module.so/;
my $port = server_port();
my $certs = certs_dir();

# nginx -t with the http module and STREAM_SO on a stream{} block; returns
# (exit status, what nginx printed)
sub check {
    my ($stream_so, $stream_block) = @_;
    spit("$dir/nginx.conf", join "\n",
         "load_module $module;", nginx_stream_module(), "load_module $stream_so;",
         'pid logs/nginx.pid;', 'events { worker_connections 16; }',
         "stream {\n$stream_block\n}", '');
    my $out = `'${\ nginx_binary()}' -t -e stderr -p '$dir/' -c nginx.conf 2>&1`;
    return ($? >> 8, $out);
}

# the ngx_ssl_t read one field too far: the field there is not the proxy's
my $tls_proxy = <<"CONF";
    server {
        listen 127.0.0.1:$port;
        proxy_ssl on;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $certs/ca.crt;
        proxy_pass 127.0.0.1:9;
    }
CONF
my ($rc, $out) = check($stream, $tls_proxy);
is($rc, 0, 'the stream module as built: nginx -t passes') or diag $out;
($rc, $out) = check($fault, $tls_proxy);
is($rc, 1, 'a wrong stream proxy layout: nginx -t fails (exit 1, not a crash)') or diag $out;
like($out, qr/\[emerg\] .*gateway_tls: this nginx \(nginx\/[\d.]+\) is not laid out as the module was built to read: (the field after proxy_ssl_conf_command in the stream proxy's conf is not its ngx_ssl_t|no ngx_ssl_t after proxy_ssl_conf_command)/,
     'the refusal names the assumption and the nginx');

# a proxy_pass with variables leaves the field after the ngx_ssl_t null, so
# the layout check passes; the status export of another build is refused
my $variable_proxy = <<"CONF";
    server {
        listen 127.0.0.1:$port;
        set \$backend 127.0.0.1:9;
        proxy_pass \$backend;
    }
CONF
($rc, $out) = check($stream, $variable_proxy);
is($rc, 0, 'the stream module as built, without TLS to the backend: nginx -t passes') or diag $out;
($rc, $out) = check($fault, $variable_proxy);
is($rc, 1, 'a stream module of another build: nginx -t fails') or diag $out;
# the export version this build reads, from the header that sets it
my ($version) = slurp(abs_path($0) =~ s{/t/[^/]+$}{}r . "/ngx_module/ngx_gtls_nginx_layout.h") =~ /kVersion = NGX_GTLS_LAYOUT_FAULT \? 1000 : (\d+);/
    or die 'no export version in ngx_gtls_nginx_layout.h';
like($out, qr/\[emerg\] .*gateway_tls: ngx_stream_gateway_tls_module\.so is of another build than ngx_http_gateway_tls_module\.so \(export version 1000, this one reads $version\): install both from one build/,
     'the refusal says which .so and what to do');

# the http module expecting proxy's upstream conf one field further
(my $fault_http = $fault) =~ s/ngx_stream_gateway_tls_module\.so$/ngx_http_gateway_tls_module.so/;
sub check_http {
    my ($http_so) = @_;
    spit("$dir/nginx.conf", join "\n",
         "load_module $http_so;", 'pid logs/nginx.pid;', 'events { worker_connections 16; }',
         "http {\n    server { listen 127.0.0.1:$port; location / { proxy_pass http://127.0.0.1:9; } }\n}", '');
    my $out = `'${\ nginx_binary()}' -t -e stderr -p '$dir/' -c nginx.conf 2>&1`;
    return ($? >> 8, $out);
}
($rc, $out) = check_http($module);
is($rc, 0, 'the http module as built: nginx -t passes') or diag $out;
($rc, $out) = check_http($fault_http);
is($rc, 1, 'a wrong proxy layout: nginx -t fails') or diag $out;
like($out, qr/\[emerg\] .*gateway_tls: this nginx \(nginx\/[\d.]+\) is not laid out as the module was built to read: ngx_http_proxy_module's loc conf does not begin with its ngx_http_upstream_conf_t/,
     'the refusal names the proxy and the assumption');
