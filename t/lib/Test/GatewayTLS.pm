package Test::GatewayTLS;

# A small Test::Nginx work-alike on Test::Base (Debian's libtest-base-perl):
# the same block format, run by prove, against Debian's nginx with the
# module built by this tree. Each test file gets its own server root with a
# fresh certificate set (t/lib/make-certs.sh) and TLS backends: nginx
# servers that echo the SNI they saw, the path and whether the TLS session
# was resumed, and that log every request they receive.
#
# Sections: main_config, http_config, config, request (or "request eval"
# for a list), more_headers, error_code, response_body, response_body_like,
# response_headers, error_log, no_error_log, access_log, backend_log,
# no_backend_log, must_die, log_level.

use strict;
use warnings;

use Test::Base;  # blocks() reads the test file's __DATA__; ok, is, like ...
use Exporter 'import';

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path remove_tree);
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

our @EXPORT = qw(run_tests servroot certs_dir backend_port server_port spki_pin cert_pin
                 setup start_backends stop_backends start_nginx stop_nginx http_request
                 run_generator read_status gateway_manifests serve_manifests stop_served request
                 status_port service_manifests tls_exchange slurp spit
                 conformance_manifests conformance_setup tls_secret_yaml serve_conformance_gateway
                 conformance_conditions stop_conformance_gateway conformance_begin nginx_binary
                 nginx_stream_module nginx_version worker_pids parent_pid churn_lists endpoint_membership api_request
                 operator_token operator_token_file bearer wait_for count_in put_file
                 start_numbered_backends start_run start_gateway2nginx slow_app_manifests kustomize_deploy module_dir routes_from_all_namespaces
                 listener_sets_from_all_namespaces web_route_yaml listener_set_yaml
                 start_kube_api kubectl kubeconfig kube_apply kubectl_missing kube_web_yaml kube_slice_yaml
                 kube_route_yaml rbac_check audit_requests start_slow_backend track_child
                 unread_by_server connections_to conformance_has start_ready_server conformance_newer_route
                 conformance_drop_kind weighted_shares);

my $Root = abs_path(dirname(__FILE__) . '/../../..');
my $Module = $ENV{GTLS_MODULE} || "$Root/build/nginx/objs/ngx_http_gateway_tls_module.so";
(my $StreamModule = $Module) =~ s/ngx_http_gateway_tls_module\.so$/ngx_stream_gateway_tls_module.so/;
# TEST_NGINX_BINARY: another nginx, or a wrapper (make SANITIZE=1 preloads
# the ASan and UBSan runtimes into nginx alone through one)
my $Nginx = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
sub nginx_binary { return $Nginx }

# How nginx was built, from `nginx -V`: the load_module line of its stream
# module (empty when stream is built in) and its version as a number
# (1022001 for 1.22.1).
my ($NginxStreamModule, $NginxVersion) = _nginx_build($Nginx);
sub nginx_stream_module { return $NginxStreamModule }
sub nginx_version { return $NginxVersion }

sub _nginx_build {
    my ($nginx) = @_;
    my $v = `'$nginx' -V 2>&1`;
    die "cannot run $nginx -V: $v" if $? != 0;
    my ($version) = $v =~ m{nginx/(\d+\.\d+\.\d+)} or die "no version in $nginx -V: $v";
    my ($prefix) = $v =~ /--prefix=(\S+)/;
    my ($modules) = $v =~ /--modules-path=(\S+)/;
    $modules //= ($prefix // '/usr/local/nginx') . '/modules';
    my $stream = $v =~ /--with-stream=dynamic/ ? "load_module $modules/ngx_stream_module.so;" : '';
    return ($stream, sprintf('%d%03d%03d', split /\./, $version));
}

# The backends every test can reach, by certificate name. leaf_h2 is the
# leaf certificate again, speaking HTTP/2 for grpc_pass.
my @Backends = qw(leaf spiffe wrongsan expired notyet selfsigned untrusted wildcard ipemail leaf_h2 forged);
# TCP backends in stream{}: "tcp" answers in plaintext whether what it got
# began with a TLS ClientHello and the SNI in it; "tcp_tls" terminates TLS
# with the leaf certificate and answers the SNI it saw.
my @StreamBackends = qw(tcp tcp_tls);
# More http backends: "plain" answers cleartext HTTP; "mtls" (the leaf
# certificate) asks for a client certificate signed by the test CA and
# answers the fingerprint and subject it got.
my @MoreBackends = qw(plain mtls);

my ($ServRoot, $BasePort);
my $ConformanceRunning;  # the out dir of the nginx serve_conformance_gateway started

sub servroot { $ServRoot }
sub certs_dir { "$ServRoot/certs" }
sub server_port { $BasePort }

# Where a block's stream_config listens: requests go there with --- stream
# ($TEST_NGINX_STREAM_PORT_1 ... _3 for more servers, "@1 GET /" to reach them).
sub stream_port { $BasePort + 12 }

sub backend_port {
    my $name = shift;
    for my $i (0 .. $#Backends) {
        return $BasePort + 1 + $i if $Backends[$i] eq $name;
    }
    for my $i (0 .. $#StreamBackends) {
        return $BasePort + 22 + $i if $StreamBackends[$i] eq $name;
    }
    for my $i (0 .. $#MoreBackends) {
        return $BasePort + 24 + $i if $MoreBackends[$i] eq $name;
    }
    die "no backend named $name\n";
}

# "sha256-spki:BASE64" and "sha256-cert:HEX" of a test certificate's leaf,
# computed with the openssl CLI, independently of the module.
sub spki_pin {
    my $leaf = certs_dir() . "/" . shift() . ".leaf.crt";
    my $b64 = `openssl x509 -in $leaf -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`;
    chomp $b64;
    return "sha256-spki:$b64";
}

sub cert_pin {
    my $leaf = certs_dir() . "/" . shift() . ".leaf.crt";
    my $out = `openssl x509 -in $leaf -noout -fingerprint -sha256`;
    $out =~ /=([0-9A-F:]+)/ or die "no fingerprint for $leaf\n";
    return "sha256-cert:$1";
}

# nginx's $ssl_client_fingerprint of a test certificate's leaf (SHA-1,
# lowercase hex), computed with the openssl CLI.
sub client_fingerprint {
    my $leaf = certs_dir() . "/" . shift() . ".leaf.crt";
    my $out = `openssl x509 -in $leaf -noout -fingerprint -sha1`;
    $out =~ /=([0-9A-F:]+)/ or die "no fingerprint for $leaf\n";
    (my $hex = lc $1) =~ s/://g;
    return $hex;
}

sub _port_free {
    my ($port, $address) = @_;
    my $sock = IO::Socket::INET->new(LocalAddr => $address // '127.0.0.1', LocalPort => $port,
                                     Proto => 'tcp', ReuseAddr => 1, Listen => 1);
    return 0 unless $sock;
    close $sock;
    return 1;
}

# How far above the test's first port it may listen: the conformance tests
# put a Gateway's listener port P at base + P - 413 (443 -> base + 30,
# 8883 -> base + 8470), so listener ports up to 10013 fit. start_nginx
# refuses a configuration that listens beyond it.
my $ListenSpan = 9600;
my $EphemeralStart = 32768;
if (open my $fh, '<', '/proc/sys/net/ipv4/ip_local_port_range') {
    ($EphemeralStart) = split ' ', scalar <$fh>;
}

# The first port of the test's block. Every port a test listens on, up to
# base + $ListenSpan, stays below the kernel's ephemeral range: a port that
# an outgoing connection (curl, an upstream keepalive) may take as its own
# at any time cannot be counted on for a listen that comes later.
sub _pick_ports {
    my $span = 24 + @MoreBackends;
    my $slots = int(($EphemeralStart - $ListenSpan - 1 - 20000) / 16);
    die "no room for test ports below the ephemeral range ($EphemeralStart)\n" if $slots < 1;
    for (my $try = 0; $try < 200; $try++) {
        my $base = 20000 + (($$ + $try * 37) % $slots) * 16;
        return $base unless grep { !_port_free($_) } $base .. $base + $span - 1;
    }
    die "no free loopback ports\n";
}

# Dies unless every port the configuration files under DIR listen on is
# in the test's block (one beyond it may fall in the ephemeral range, and
# a bind() there fails whenever an outgoing connection holds the port) and
# free: a process left listening there (another test's, or one an earlier
# run of this one left) is named as such, not met as nginx's bind() error.
sub _check_listen_ports {
    my $dir = shift;
    my @files = grep { -f } glob("$dir/*.conf $dir/*/*.conf $dir/*/*/*.conf");
    my %seen;
    for my $file (@files) {
        my $text = slurp($file);
        while ($text =~ /^\s*listen\s+(?:(\d+\.\d+\.\d+\.\d+|\*):)?(\d+)\b([^;]*)/mg) {
            my ($address, $port, $rest) = ($1 // '*', $2, $3);
            die "$file listens on $port, beyond this test's ports ($BasePort .. "
                . ($BasePort + $ListenSpan) . ", below the ephemeral range from $EphemeralStart): "
                . "a bind() there fails whenever an outgoing connection holds the port\n"
                if $port > $BasePort + $ListenSpan;
            next if $rest =~ /\budp\b/ || $seen{"$address:$port"}++;
            die "$file listens on $address:$port, which another process holds (a test's nginx left running?)\n"
                unless _port_free($port, $address eq '*' ? '0.0.0.0' : $address);
        }
    }
}

sub _setup {
    my $name = $0;
    $name =~ s{.*/}{};
    $name =~ s{\.(?:t|pl)$}{};
    $ServRoot = "$Root/t/servroot-$name";
    remove_tree($ServRoot);
    make_path("$ServRoot/conf", "$ServRoot/logs", "$ServRoot/tmp");
    system('sh', "$Root/t/lib/make-certs.sh", certs_dir()) == 0
        or die "cannot make the test certificates\n";
    -f $Module or die "module not built: $Module (run make)\n";
    $BasePort = _pick_ports();
    # the bearer token of the operator interfaces in hand-written configurations
    my $token = join '', map { sprintf '%02x', int rand 256 } 1 .. 24;
    my $old = umask 077;
    spit(operator_token_file(), "test-operator-$token\n");
    umask $old;
    # the same token, a file the group may read too ($TEST_NGINX_GROUP_TOKEN_FILE)
    spit(group_token_file(), "test-operator-$token\n");
    chmod 0640, group_token_file();
}

# The bearer token of the upstream API and the status endpoint in the
# blocks' configurations ($TEST_NGINX_OPERATOR_TOKEN_FILE), 0600.
sub operator_token_file { "$ServRoot/conf/operator.token" }
sub group_token_file { "$ServRoot/conf/group.token" }
sub operator_token { my $t = slurp(operator_token_file()); chomp $t; $t }
# "Authorization: Bearer TOKEN" with the token in FILE (a generated
# OUTDIR's upstream-api.token or status.token).
sub bearer { my $t = slurp(shift); chomp $t; "Authorization: Bearer $t" }

# $TEST_NGINX_* in sections, as Test::Nginx does.
sub _expand {
    my $text = shift;
    return '' unless defined $text;
    $text =~ s/\$TEST_NGINX_SERVER_PORT\b/$BasePort/g;
    $text =~ s/\$TEST_NGINX_STREAM_PORT(?:_(\d+))?\b/stream_port() + ($1 \/\/ 0)/ge;
    $text =~ s/\$TEST_NGINX_CERTS\b/certs_dir()/ge;
    $text =~ s/\$TEST_NGINX_SERVROOT\b/$ServRoot/g;
    $text =~ s/\$TEST_NGINX_OPERATOR_TOKEN_FILE\b/operator_token_file()/ge;
    $text =~ s/\$TEST_NGINX_GROUP_TOKEN_FILE\b/group_token_file()/ge;
    $text =~ s/\$TEST_NGINX_OPERATOR_TOKEN\b/operator_token()/ge;
    $text =~ s/\$TEST_NGINX_BACKEND_(\w+)\b/backend_port(lc $1)/ge;
    $text =~ s/\$TEST_NGINX_SPKI_(\w+)\b/spki_pin(lc $1)/ge;
    $text =~ s/\$TEST_NGINX_CERTPIN_(\w+)\b/cert_pin(lc $1)/ge;
    return $text;
}

sub _backend_servers {
    my $certs = certs_dir();
    my $out = "    log_format gtls_backend '\$server_port \$ssl_server_name \$request_uri';\n";
    for my $name (@Backends) {
        my $cert = $name eq 'leaf_h2' ? 'leaf' : $name;
        my $h2 = $name eq 'leaf_h2' ? ' http2' : '';
        my $port = backend_port($name);
        $out .= <<"EOF";
    server {
        listen 127.0.0.1:$port ssl$h2;
        ssl_certificate $certs/$cert.crt;
        ssl_certificate_key $certs/$cert.key;
        ssl_session_cache shared:GTLS_$name:1m;
        access_log logs/backend.log gtls_backend;
        location / {
            add_header X-Backend $name always;
            add_header X-Backend-Session-Reused \$ssl_session_reused always;
            add_header X-Backend-Connection-Requests \$connection_requests always;
            add_header X-Echo-Host \$http_host always;
            add_header X-Echo-Set \$http_x_set always;
            add_header X-Echo-Add \$http_x_add always;
            add_header X-Echo-Drop \$http_x_drop always;
            add_header X-Echo-Upgrade \$http_upgrade always;
            add_header X-Echo-Connection \$http_connection always;
            add_header Access-Control-Allow-Origin \$http_x_backend_allows_origin always;
            return 200 "backend=$name sni=\$ssl_server_name path=\$uri\\n";
        }
    }
EOF
    }
    my ($plain, $mtls) = (backend_port('plain'), backend_port('mtls'));
    $out .= <<"EOF";
    server {
        listen 127.0.0.1:$plain;
        access_log logs/backend.log gtls_backend;
        return 200 "backend=plain host=\$host path=\$uri\\n";
    }
    server {
        listen 127.0.0.1:$mtls ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        ssl_verify_client optional;
        ssl_verify_depth 3;
        ssl_client_certificate $certs/ca-and-inter.crt;
        access_log logs/backend.log gtls_backend;
        return 200 "backend=mtls sni=\$ssl_server_name client_verify=\$ssl_client_verify client_fingerprint=\$ssl_client_fingerprint\\n";
    }
EOF
    return $out;
}

sub _stream_backend_servers {
    my $certs = certs_dir();
    my ($tcp, $tcp_tls) = (backend_port('tcp'), backend_port('tcp_tls'));
    return <<"EOF";
    map \$ssl_preread_protocol \$gtls_backend_tls { "" no; default yes; }
    server {
        listen 127.0.0.1:$tcp;
        ssl_preread on;
        preread_timeout 5s;
        return "backend=tcp tls=\$gtls_backend_tls sni=\$ssl_preread_server_name\\n";
    }
    server {
        listen 127.0.0.1:$tcp_tls ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        return "backend=tcp_tls tls=yes sni=\$ssl_server_name\\n";
    }
EOF
}

# Sends PAYLOAD over TLS to 127.0.0.1:PORT with SNI, verifying the server
# against CA (and NAME); returns what came back, "" when the handshake or
# the connection failed.
sub tls_exchange {
    my ($port, $sni, $payload, $ca, $name) = @_;
    my $verify = $ca ? "-CAfile $ca -verify_return_error" . ($name ? " -verify_hostname $name" : '') : '';
    my $in = "$ServRoot/tmp/tls_exchange.in";
    open my $fh, '>', $in or die "$in: $!";
    print $fh $payload;
    close $fh;
    my $out = `timeout 10 openssl s_client -connect 127.0.0.1:$port -servername $sni $verify -quiet < $in 2>/dev/null`;
    return $? == 0 ? $out : '';
}

# Temporary files inside the server root, not Debian's /var/lib/nginx.
sub _temp_paths {
    return join '', map { "    ${_}_temp_path tmp/$_;\n" } qw(client_body proxy fastcgi uwsgi scgi);
}

sub _write_config {
    my $block = shift;
    my $level = $block->log_level || 'info';
    chomp $level;
    my $main = _expand($block->main_config);
    my $workers = $main =~ /\bworker_processes\b/ ? '' : 'worker_processes 1;';
    my $http = _expand($block->http_config);
    my $config = _expand($block->config);
    my $backends = _backend_servers();
    my $temp_paths = _temp_paths();
    my $stream = '';
    my $stream_modules = '';
    if (defined $block->stream_config) {
        $stream = "stream {\n" . _expand($block->stream_config) . "\n" . _stream_backend_servers() . "}\n";
        $stream_modules = "$NginxStreamModule\nload_module $StreamModule;\n";
    }
    my $conf = <<"EOF";
load_module $Module;
$stream_modules
daemon on;
master_process on;
$workers
pid logs/nginx.pid;
error_log logs/error.log $level;
$main
events {
    worker_connections 256;
}
http {
    access_log logs/access.log;
$temp_paths
$backends
$http
    server {
        listen 127.0.0.1:$BasePort;
        server_name localhost;
$config
    }
}
$stream
EOF
    open my $fh, '>', "$ServRoot/conf/nginx.conf" or die "$!";
    print $fh $conf;
    close $fh;
}

sub _nginx {
    my @args = @_;
    my $out = `$Nginx -p $ServRoot/ -c conf/nginx.conf @args 2>&1`;
    return ($? >> 8, $out);
}

sub _stop { stop_nginx($ServRoot) }

# The daemonised master is not our child: once it exits it stays a zombie
# until init reaps it, which counts as gone.
sub _alive {
    my $pid = shift;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my $stat = <$fh> // '';
    close $fh;
    return $stat !~ /^\d+ \(.*\) [ZX] /;
}

# SIGHUP, then wait until the new configuration's workers are up.
sub _reload {
    open my $fh, '<', "$ServRoot/logs/nginx.pid" or die "no pid file\n";
    my $pid = <$fh>;
    close $fh;
    chomp $pid;
    my $before = () = _read_log('error.log') =~ /start worker process/g;
    kill 'HUP', $pid;
    my $deadline = time + 10;
    while (time < $deadline) {
        my $now = () = _read_log('error.log') =~ /start worker process/g;
        last if $now > $before;
        sleep 0.05;
    }
    sleep 0.2;
}

sub _truncate_logs {
    for my $log (qw(error.log access.log backend.log)) {
        open my $fh, '>', "$ServRoot/logs/$log";
        close $fh;
    }
}

sub _read_log {
    my $name = shift;
    open my $fh, '<', "$ServRoot/logs/$name" or return '';
    local $/;
    my $text = <$fh>;
    close $fh;
    return $text // '';
}

sub _wait_listening {
    my $deadline = time + 5;
    while (time < $deadline) {
        my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $BasePort,
                                         Proto => 'tcp');
        if ($sock) {
            close $sock;
            return 1;
        }
        sleep 0.02;
    }
    return 0;
}

# One HTTP/1.1 request over a fresh connection; returns (status, headers, body).
# An HTTP/1.0 request over TLS from openssl s_client, which offers a saved
# session whatever name it connects with: TLS = {sni => NAME (none: no
# SNI), proto => tls1_2|tls1_3, cert => client certificate name, in =>
# session to offer, out => where to save the session, host => Host, raw =>
# 1: what came back is not HTTP, status 200 when anything came).
# Returns (status, headers, body) as _http; status 0 when no HTTP answer
# came (the handshake failed). $ssl_session_reused in a body tells whether
# the session was resumed.
sub _tls_http {
    my ($port, $tls, $request) = @_;
    $request =~ s/^\s+|\s+$//g;
    my ($method, $uri) = split /\s+/, $request;
    my $dir = "$ServRoot/tmp";
    my $in = "$dir/tls_http.in";
    spit($in, "$method $uri HTTP/1.0\r\nHost: " . ($tls->{host} // 'localhost') . "\r\n\r\n");
    my @args = ('-connect', "127.0.0.1:$port", '-quiet',
                defined $tls->{sni} ? ('-servername', $tls->{sni}) : ('-noservername'));
    push @args, "-$tls->{proto}" if $tls->{proto};
    push @args, '-cert', certs_dir() . "/$tls->{cert}.crt", '-key', certs_dir() . "/$tls->{cert}.key" if $tls->{cert};
    push @args, '-sess_in', "$dir/$tls->{in}.session" if $tls->{in};
    push @args, '-sess_out', "$dir/$tls->{out}.session" if $tls->{out};
    my $cmd = join ' ', 'timeout 10 openssl s_client', (map { "'$_'" } @args), "< '$in' 2>'$dir/tls_http.err'";
    my $out = `$cmd`;
    return (length $out ? 200 : 0, {}, $out) if $tls->{raw};  # a stream server's own answer
    my ($status, $rest) = $out =~ m{^HTTP/1\.\d (\d{3})[^\n]*\n(.*)}s or return (0, {}, '');
    my ($head_text, $body) = split /\r\n\r\n/, $rest, 2;
    my %headers;
    for (split /\r\n/, $head_text // '') {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        $headers{lc $k} = $v;
    }
    return ($status, \%headers, $body // '');
}

sub _http {
    my ($port, $request, $more_headers) = @_;
    $request =~ s/^\s+|\s+$//g;
    my ($method, $uri) = split /\s+/, $request;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                     Proto => 'tcp', Timeout => 10)
        or return (0, {}, "cannot connect: $!");
    my $head = "$method $uri HTTP/1.1\r\nConnection: close\r\n";
    $head .= "Host: localhost\r\n" unless ($more_headers // '') =~ /^Host:/mi;
    for my $line (split /\n/, $more_headers // '') {
        $head .= "$line\r\n" if $line =~ /\S/;
    }
    print $sock "$head\r\n";
    local $/;
    my $raw = <$sock> // '';
    close $sock;

    my ($head_text, $body) = split /\r\n\r\n/, $raw, 2;
    $body //= '';
    my @lines = split /\r\n/, $head_text // '';
    my $status_line = shift @lines // '';
    my ($status) = $status_line =~ m{^HTTP/1\.\d (\d{3})};
    my %headers;
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        # a header sent twice shows as both values, as a client would combine them
        $headers{lc $k} = exists $headers{lc $k} ? "$headers{lc $k}, $v" : $v;
    }
    if (($headers{'transfer-encoding'} // '') =~ /chunked/i) {
        my $decoded = '';
        while ($body =~ s/^([0-9a-fA-F]+)\r\n//) {
            my $len = hex $1;
            last if $len == 0;
            $decoded .= substr($body, 0, $len, '');
            $body =~ s/^\r\n//;
        }
        $body = $decoded;
    }
    return ($status // 0, \%headers, $body);
}

sub _list {
    my $value = shift;
    return () unless defined $value;
    return ref $value eq 'ARRAY' ? @$value : ($value);
}

sub _patterns {
    my $value = shift;
    return map { ref $_ ? $_ : (/\S/ ? $_ : ()) }
           map { ref $_ ? $_ : split /\n/ } _list($value);
}

sub _check_log {
    my ($block, $what, $text, $section, $expect) = @_;
    my $name = $block->name;
    for my $pattern (_patterns($block->$section)) {
        my $found = ref $pattern ? $text =~ $pattern : index($text, $pattern) >= 0;
        ok($expect ? $found : !$found,
           "$name - $what " . ($expect ? 'has' : 'does not have') . " \"$pattern\"");
    }
}

sub _run_block {
    my $block = shift;
    my $name = $block->name;

    # "--- min_nginx: 1025005": what the block tests exists from that nginx on
    if (defined $block->min_nginx && $NginxVersion < $block->min_nginx) {
        Test::More::note("$name: skipped, nginx $NginxVersion is before " . $block->min_nginx);
        return;
    }

    _stop();
    _truncate_logs();
    _write_config($block);

    if (defined $block->must_die) {
        my ($rc, $out) = _nginx('-t');
        isnt($rc, 0, "$name - nginx -t fails");
        _check_log($block, 'nginx -t output', $out, 'error_log', 1);
        _check_log($block, 'nginx -t output', $out, 'no_error_log', 0);
        return;
    }

    my ($rc, $out) = _nginx();
    if ($rc != 0 || !_wait_listening()) {
        fail("$name - nginx starts: $out");
        return;
    }

    my @requests = _list($block->request);
    my @codes = _list($block->error_code);
    my @bodies = _list($block->response_body);
    my @likes = _list($block->response_body_like);
    my @headers = _list($block->response_headers);

    my $last_body = '';
    for my $i (0 .. $#requests) {
        if ($requests[$i] eq 'RELOAD') {  # "nginx -s reload" between requests
            _reload();
            next;
        }
        my $port = defined $block->stream ? stream_port() : $BasePort;
        my $request = $requests[$i];
        # "@N GET /x": to the stream server on $TEST_NGINX_STREAM_PORT + N
        $port = stream_port() + $1 if $request =~ s/^\@(\d+)\s+//;
        # "TLS key=value... GET /x": over TLS, as _tls_http says
        my %tls;
        if ($request =~ s/^TLS((?:\s+\w+=\S*)*)\s+//) {
            %tls = map { split /=/, $_, 2 } grep { length } split /\s+/, $1;
        }
        my ($status, $hdrs, $body) = %tls ? _tls_http($port, \%tls, $request, _expand($block->more_headers))
                                          : _http($port, $request, _expand($block->more_headers));
        $last_body = $body;
        my $label = @requests > 1 ? "$name - request $i" : "$name";
        my $code = @codes > 1 ? $codes[$i] : $codes[0];
        $code = 200 unless defined $code;
        if (ref $code eq 'Regexp') {  # where nginx versions refuse in more than one way
            like($status, $code, "$label - status code");
        } else {
            chomp $code;
            is($status, $code, "$label - status code");
        }
        my $expect_body = @bodies > 1 ? $bodies[$i] : $bodies[0];
        is($body, $expect_body, "$label - response body") if defined $expect_body;
        my $like = @likes > 1 ? $likes[$i] : $likes[0];
        if (defined $like) {
            chomp $like;
            like($body, qr/$like/, "$label - response body like");
        }
        my $expect_headers = @headers > 1 ? $headers[$i] : $headers[0];
        for my $line (split /\n/, $expect_headers // '') {
            next unless $line =~ /^([^:]+):\s*(.*)$/;
            is($hdrs->{lc $1}, $2, "$label - header $1");
        }
    }

    # --- promtool: the last response is Prometheus text that promtool accepts
    if (defined $block->promtool) {
        open my $fh, '>', "$ServRoot/metrics.txt" or die "$!";
        print $fh $last_body;
        close $fh;
        my $out = `promtool check metrics < $ServRoot/metrics.txt 2>&1`;
        is($? >> 8, 0, "$name - promtool check metrics") or diag $out;
    }

    # let the worker finish its log phase and keepalive bookkeeping
    sleep 0.1;
    _stop();

    # what nginx says while it reads its configuration goes to stderr
    my $errors = $out . _read_log('error.log');
    _check_log($block, 'error log', $errors, 'error_log', 1);
    _check_log($block, 'error log', $errors, 'no_error_log', 0);
    _check_log($block, 'access log', _read_log('access.log'), 'access_log', 1);
    _check_log($block, 'backend log', _read_log('backend.log'), 'backend_log', 1);
    _check_log($block, 'backend log', _read_log('backend.log'), 'no_backend_log', 0);
}

# ---- for tests that run the generator's configuration -----------------

sub setup { _setup() }

# The TLS backends alone, in an nginx of their own under servroot/backends.
sub start_backends {
    my $dir = "$ServRoot/backends";
    make_path("$dir/conf", "$dir/logs", "$dir/tmp");
    my $backends = _backend_servers();
    my $stream_backends = _stream_backend_servers();
    open my $fh, '>', "$dir/conf/nginx.conf" or die "$!";
    print $fh <<"CONF";
$NginxStreamModule
daemon on;
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 256; }
http {
    access_log off;
@{[_temp_paths()]}
$backends
}
stream {
$stream_backends
}
CONF
    close $fh;
    start_nginx($dir, 'conf/nginx.conf', backend_port('leaf'));
}

sub stop_backends { stop_nginx("$ServRoot/backends") }

# What this test file started, stopped when it ends however it ends (a
# test that dies half-way leaves no nginx, run or simulation behind to hold
# the next file's ports): nginx prefixes, and pids of processes it forked.
my %Started;
my @Children;
my $MainPid = $$;
END {
    if ($$ == $MainPid) {  # not in a forked child that ends
        local $?;
        # still our children (not reaped: the pid is not someone else's by now)
        kill 'TERM', grep { waitpid($_, POSIX::WNOHANG()) == 0 } @Children;
        stop_nginx($_) for sort keys %Started;
    }
}

# The bytes of the connection from 127.0.0.1:PEER to 127.0.0.1:PORT the
# server has not read yet (/proc/net/tcp's rx_queue of its end), -1 while
# there is none: a test waits for 0 to know nginx has read what it sent.
sub unread_by_server {
    my ($port, $peer) = @_;
    my ($local, $remote) = map { sprintf '0100007F:%04X', $_ } $port, $peer;
    for (split /\n/, slurp('/proc/net/tcp')) {
        my @f = split ' ';
        return hex((split /:/, $f[4])[1]) if ($f[1] // '') eq $local && ($f[2] // '') eq $remote;
    }
    return -1;
}

# How many connections to 127.0.0.1:PORT are established (/proc/net/tcp):
# a test waits for a load generator's before it counts on the load.
sub connections_to {
    my $port = shift;
    my $local = sprintf '0100007F:%04X', $port;
    return scalar grep { my @f = split ' '; ($f[1] // '') eq $local && ($f[3] // '') eq '01' }
        split /\n/, slurp('/proc/net/tcp');
}

# PID, a process the test forked, ended with the test file if still running.
sub track_child { push @Children, @_ }

# Starts nginx -p DIR -c CONF and waits until PORT accepts connections.
sub start_nginx {
    my ($dir, $conf, $port, $address, $proto) = @_;
    _check_listen_ports($conf =~ m{^/} ? dirname($conf) : dirname("$dir/$conf"));
    my $out = `$Nginx -p $dir/ -c $conf 2>&1`;
    die "nginx in $dir did not start: $out\n" if $? != 0;
    $Started{$dir} = 1;
    my $deadline = time + 5;
    while (time < $deadline) {
        # a UDP port nginx holds is one this process cannot bind
        my $sock = ($proto // 'tcp') eq 'udp'
            ? !IO::Socket::INET->new(LocalAddr => $address // '127.0.0.1', LocalPort => $port, Proto => 'udp')
            : IO::Socket::INET->new(PeerAddr => $address // '127.0.0.1', PeerPort => $port, Proto => 'tcp');
        if ($sock) {
            close $sock if ref $sock;
            return $out;
        }
        sleep 0.02;
    }
    die "nginx in $dir does not listen on $port" . (($proto // 'tcp') eq 'udp' ? ' (udp)' : '') . "\n";
}

sub stop_nginx {
    my ($dir, $signal) = @_;
    delete $Started{$dir};
    for my $pidfile ("$dir/logs/nginx.pid", "$dir/nginx.pid") {
        next unless -f $pidfile;
        open my $fh, '<', $pidfile or next;
        my $pid = <$fh>;
        close $fh;
        chomp $pid;
        next unless $pid;
        # a graceful stop waits for what workers still serve (a UDP
        # session, until it idles out); then a fast one; then the master
        # and its workers killed, none left behind
        my @workers = _children($pid);
        for my $try ([$signal // 'QUIT', 10], ['TERM', 5]) {
            kill $try->[0], $pid;
            my $deadline = time + $try->[1];
            sleep 0.02 while _alive($pid) && time < $deadline;
            last unless _alive($pid);
        }
        kill 'KILL', $pid, @workers if _alive($pid);
        unlink $pidfile;
    }
}

# The processes whose parent is PID, now.
sub _children {
    my $parent = shift;
    my @pids;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $fh, '<', $stat or next;
        my $text = <$fh> // '';
        push @pids, $1 if $text =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $parent;
    }
    return sort @pids;
}

# The worker pids of the nginx whose master is MASTER ("PID PID ...", from
# /proc: no procps needed), once the master has started them all: the same
# set twice, 0.3 s apart (start_nginx returns when the port listens, which
# may be before the last worker runs).
sub worker_pids {
    my $master = shift;
    my $read = sub { join ' ', _children($master) };
    my ($before, $now) = ('', $read->());
    for (1 .. 30) {
        last if $now ne '' && $now eq $before;
        sleep 0.3;
        ($before, $now) = ($now, $read->());
    }
    return $now;
}

# The parent of process PID, from /proc (0 if it is gone): procps is not
# in every release's minimal system, so no ps.
sub parent_pid {
    my $pid = shift;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my $text = <$fh> // '';
    return $text =~ /^\d+ \(.*\) \S (\d+) / ? $1 : 0;
}

# GET PATH on 127.0.0.1:PORT with a Host header; returns (status, headers, body).
sub http_request {
    my ($port, $path, $host) = @_;
    return _http($port, "GET $path", "Host: $host");
}

# What the tests' gateway2nginx is told besides ARGS: their backends are on
# loopback, which endpoints may point at only where the operator allows.
our @TestEndpoints = ('--allow-endpoints', '127.0.0.0/8', '--allow-endpoints', '::1/128');

# `gateway2nginx run ARGS...` in the background (with the test endpoints,
# and the nginx the tests run for its nginx -t unless ARGS name one), its
# standard error appended to LOG; returns its pid.
sub start_run {
    my ($log, @args) = @_;
    return start_gateway2nginx([], $log, 'run', @args, @TestEndpoints);
}

# `PREFIX... gateway2nginx ARGS...` (PREFIX: such as setpriv and its
# options, to run it as another user) in the background, with the nginx
# the tests run unless ARGS name one, its standard error appended to LOG;
# returns its pid (the prefix execs what it runs).
sub start_gateway2nginx {
    my ($prefix, $log, @args) = @_;
    my $bin = $ENV{GATEWAY2NGINX} || "$Root/build/gateway2nginx";
    push @args, '--nginx', $Nginx if $ENV{TEST_NGINX_BINARY} && !grep { $_ eq '--nginx' } @args;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>>', $log or die "$log: $!";
        exec(@$prefix, $bin, @args) or die "$bin: $!";
    }
    track_child($pid);
    return $pid;
}

# Runs gateway2nginx with ARGS (and @TestEndpoints, unless ARGS say
# --allow-endpoints or --no-test-endpoints); returns (exit code, its output).
sub run_generator {
    my @args = @_;
    if (grep { $_ eq '--no-test-endpoints' } @args) {
        @args = grep { $_ ne '--no-test-endpoints' } @args;
    } elsif (!grep { $_ eq '--allow-endpoints' } @args) {
        push @args, @TestEndpoints;
    }
    my $bin = $ENV{GATEWAY2NGINX} || "$Root/build/gateway2nginx";
    # the nginx the tests run: its --check, and its build's module paths
    unshift @args, '--nginx', $Nginx if $ENV{TEST_NGINX_BINARY};
    my $cmd = join ' ', map { "'$_'" } $bin, @args;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# Where the module under test is (--module-dir): $GTLS_MODULE's directory.
sub module_dir { (my $dir = $ENV{GTLS_MODULE} || $Module) =~ s{/[^/]+$}{}; return $dir }

# gateway_manifests() YAML whose listener takes routes of every namespace.
# Dies when there is no such listener: an edit that misses its mark must
# not leave a test quietly testing something else.
sub routes_from_all_namespaces {
    my ($yaml) = @_;
    $yaml =~ s/^(  - \{name: http, port: 80, protocol: HTTP)\}$/$1, allowedRoutes: {namespaces: {from: All}}}/m
        or die "routes_from_all_namespaces: no HTTP listener on port 80 in the manifests\n";
    return $yaml;
}

# YAML with its Gateway (the one of gatewayClassName ours) admitting
# ListenerSets from every namespace
sub listener_sets_from_all_namespaces {
    my ($yaml) = @_;
    $yaml =~ s/^(  gatewayClassName: ours\n)/$1  allowedListeners: {namespaces: {from: All}}\n/m
        or die "listener_sets_from_all_namespaces: no Gateway of class ours in the manifests\n";
    return $yaml;
}

# ListenerSet team/NAME on Gateway ns/gw with LISTENERS (each a line of
# YAML, flow style: {name: ..., port: ..., protocol: ...})
sub listener_set_yaml {
    my ($name, @listeners) = @_;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: $name, namespace: team}\n"
         . "spec:\n  parentRef: {kind: Gateway, group: gateway.networking.k8s.io, name: gw, namespace: ns}\n  listeners:\n"
         . join('', map { "  - $_\n" } @listeners);
}

# HTTPRoute ns/NAME on Gateway ns/gw: each of PATHS (PathPrefix) to Service
# ns/web port 443
sub web_route_yaml {
    my ($name, @paths) = @_;
    my $rules = join '', map { "  - matches: [{path: {value: $_}}]\n    backendRefs: [{name: web, port: 443}]\n" } @paths;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: $name, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n$rules";
}

# deploy/ rendered by `kubectl kustomize`, through an overlay in DIR that
# takes COMPONENTS (names under deploy/components/) when there are any, as
# a platform team's overlay would; the text is written to DIR/NAME.yaml.
# Returns (exit code, the text or kubectl's complaint, the objects by
# "Kind/name").
sub kustomize_deploy {
    my ($dir, $name, @components) = @_;
    my $target = "$Root/deploy";
    if (@components) {
        my $overlay = "$dir/$name.overlay";
        make_path($overlay);
        # kustomize takes relative paths only
        my $up = join '/', map { '..' } grep { length } split m{/}, $overlay;
        spit("$overlay/kustomization.yaml", "resources:\n- $up$Root/deploy\ncomponents:\n"
             . join('', map { "- $up$Root/deploy/components/$_\n" } @components));
        $target = $overlay;
    }
    my $text = `kubectl kustomize '$target' 2>&1`;
    my $rc = $? >> 8;
    spit("$dir/$name.yaml", $text);
    return ($rc, $text, {}) if $rc != 0;
    my $json = `python3 -c 'import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))' '$dir/$name.yaml'`;
    return ($rc, $text, { map { ("$_->{kind}/$_->{metadata}{name}" => $_) } @{ JSON::PP::decode_json($json) } });
}

# gateway_manifests() and Service ns/app (port 80, plain HTTP) whose one
# endpoint is 127.0.0.1:PORT (start_slow_backend's), with HTTPRoute ns/r
# sending each of PATHS (PathPrefix) there.
sub slow_app_manifests {
    my ($port, @paths) = @_;
    my $rules = join '', map { "  - matches: [{path: {type: PathPrefix, value: $_}}]\n    backendRefs: [{name: app, port: 80}]\n" } @paths;
    return gateway_manifests() . <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: ns}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: app-1, namespace: ns, labels: {kubernetes.io/service-name: app}}
ports: [{name: http, port: $port}]
endpoints: [{addresses: ["127.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
$rules
YAML
}

# Manifests for tests of routes: our GatewayClass, Gateway ns/gw with an
# HTTP listener on port 80 (generator/tests/testdata/http-gateway.yaml), and for each NAME => BACKEND a Service ns/NAME
# whose endpoint is that local TLS backend, verified by a BackendTLSPolicy
# (the test CA, hostname abc.example.com).
sub gateway_manifests {
    my %services = @_;
    my $ca = do { local (@ARGV, $/) = (certs_dir() . '/ca.crt'); <> };
    $ca =~ s/^/    /mg;
    my $yaml = do { local (@ARGV, $/) = ("$Root/generator/tests/testdata/http-gateway.yaml"); <> };
    $yaml .= <<"YAML";
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: ns}
data:
  ca.crt: |
$ca
YAML
    for my $name (sort keys %services) {
        $yaml .= service_manifests($name, $services{$name},
                                   "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n");
    }
    return $yaml;
}

# A Service ns/NAME whose endpoint is the local TLS backend BACKEND, and a
# BackendTLSPolicy ns/NAME for it: hostname abc.example.com and VALIDATION
# (more YAML lines of spec.validation, indented by four).
sub service_manifests {
    my ($name, $backend, $validation) = @_;
    my $port = backend_port($backend);
    return <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: $name, namespace: ns}
spec:
  ports: [{name: https, port: 443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $name-local
  namespace: ns
  labels: {kubernetes.io/service-name: $name}
ports: [{name: https, port: $port}]
endpoints: [{addresses: ["127.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: $name-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: $name}]
  validation:
    hostname: abc.example.com
$validation
YAML
}

# Writes YAML under the server root, runs gateway2nginx on it (with
# --check), starts the backends and the generated nginx; returns the port
# of the Gateway's port-80 listener (in list context, and the generator's
# output). stop_served() stops both.
sub serve_manifests {
    my $yaml = shift;
    my $dir = servroot();
    open my $fh, '>', "$dir/manifests.yaml" or die "$!";
    print $fh $yaml;
    close $fh;
    my $offset = server_port() + 20 - 80;
    my $module = $ENV{GTLS_MODULE} || $Module;
    (my $module_dir = $module) =~ s{/[^/]+$}{};
    my ($rc, $out) = run_generator('-f', "$dir/manifests.yaml", '-o', "$dir/out", '--port-offset', $offset,
                                   '--listen-address', '127.0.0.1', '--module-dir', $module_dir, '--check',
                                   '--status-listen', '127.0.0.1:' . status_port());
    Test::More::is($rc, 0, 'gateway2nginx writes a configuration that passes nginx -t')
        or Test::More::diag($out);
    start_backends();
    start_nginx("$dir/out", 'nginx.conf', 80 + $offset);
    return wantarray ? (80 + $offset, $out) : 80 + $offset;
}

# Where a served configuration's gateway_tls_status answers.
sub status_port { server_port() + 19 }

sub stop_conformance_gateway {
    stop_nginx($ConformanceRunning, 'TERM') if $ConformanceRunning;
    $ConformanceRunning = undef;
}

sub stop_served {
    stop_nginx(servroot() . '/out');
    stop_backends();
}

# One request to a served configuration: (status, headers, body).
sub request {
    my ($port, $method, $path, @headers) = @_;
    return _http($port, "$method $path", join("\n", @headers));
}

# status.yaml as { "Kind ns/name" => [ "GATEWAY-NS/NAME: Type=Status/Reason", ... ] }
# (a GatewayClass: "GatewayClass name"; a Gateway's addresses: "address=IP";
# "generation=N"; a condition whose observedGeneration is not N: "REF: stale TYPE ..."),
# read with a small line parser (Debian's base perl has no YAML module).
# METHOD http://127.0.0.1:PORT/PATH with BODY, as an operator's tool
# would (curl), with the bearer TOKEN (default: operator_token(); '' for
# none): (status, reply).
sub api_request {
    my ($port, $path, $method, $body, $token) = @_;
    $token //= operator_token();
    my $file = "$ServRoot/api-body.json";
    spit($file, $body // '');
    my $auth = $token eq '' ? '' : "-H 'Authorization: Bearer $token'";
    my $out = `curl -s -w '\\n%{http_code}' $auth -X $method --data-binary \@$file http://127.0.0.1:$port$path`;
    my ($reply, $code) = $out =~ /^(.*)\n(\d+)$/s;
    return ($code // 0, $reply // '');
}

# True as soon as CODE returns true, within SECONDS (10); the last value.
sub wait_for {
    my ($what, $seconds) = @_;
    my $deadline = time + ($seconds // 10);
    my $ok;
    sleep 0.02 until ($ok = $what->()) || time > $deadline;
    return $ok;
}

# How often RE matches the text of FILE (none before FILE is made: the
# waits that ask may start before the process they wait for opens it).
sub count_in { my ($file, $re) = @_; return 0 unless -e $file; my $n = () = slurp($file) =~ /$re/g; return $n }

# t/lib/kube-apiserver-sim on 127.0.0.1:PORT over HTTPS (the ipemail
# certificate: SAN 127.0.0.1), its objects kept in servroot/kube-api.json
# across restarts, and servroot/kubeconfig for it (the test CA, a bearer
# token). More arguments go to the simulation. Returns its pid once it
# answers.
sub kubeconfig { "$ServRoot/kubeconfig" }
sub start_kube_api {
    my ($port, @more) = @_;
    my $certs = certs_dir();
    my $token = "$ServRoot/kube-api.token";
    unless (-f $token) {
        spit($token, join('', map { sprintf '%02x', int rand 256 } 1 .. 16) . "\n");
        spit(kubeconfig(), <<"YAML");
apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: {server: "https://127.0.0.1:$port", certificate-authority: $certs/ca.crt}
users:
- name: gateway
  user: {tokenFile: $token}
contexts:
- name: sim
  context: {cluster: sim, user: gateway}
current-context: sim
YAML
    }
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>>', "$ServRoot/kube-api.log" or die;
        exec('python3', "$Root/t/lib/kube-apiserver-sim", '--listen', "127.0.0.1:$port",
             '--cert', "$certs/ipemail.crt", '--key', "$certs/ipemail.key", '--token-file', $token,
             '--state', "$ServRoot/kube-api.json", @more) or die;
    }
    track_child($pid);
    wait_for(sub { !_port_free($port) }, 10) or die "the API server simulation does not listen on $port\n";
    return $pid;
}

# kubectl ARGS against start_kube_api's simulation: (exit code, output).
sub kubectl {
    my $cmd = join ' ', map { "'$_'" } 'kubectl', '--kubeconfig', kubeconfig(), @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# Why the tests that drive the API server simulation with kubectl cannot
# run here, or '' when they can: kubectl 1.27 or later (it leaves field
# validation to a server whose OpenAPI v3 says it does it).
sub kubectl_missing {
    my $version = `kubectl version --client 2>/dev/null`;
    return 'kubectl is not installed (make deps installs Debian\'s kubernetes-client where the release has one)'
        if $? != 0 && $version eq '';
    my ($minor) = $version =~ /Client Version: v1\.(\d+)/;
    return "kubectl 1.27 or later is needed, not: $version" unless defined $minor && $minor >= 27;
    return '';
}

# What the tests of the API client apply first: Namespace ns, the shared
# HTTP Gateway with the test CA (gateway_manifests), Service ns/web and its
# BackendTLSPolicy web-tls (abc.example.com, the CA).
sub kube_web_yaml {
    return "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n" . gateway_manifests() . <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec: {ports: [{name: https, port: 443}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: web-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: web}]
  validation: {hostname: abc.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}
YAML
}

# EndpointSlice ns/web-abc of Service web: 127.0.0.N:PORT for each N.
sub kube_slice_yaml {
    my ($port, @n) = @_;
    my $addresses = join ', ', map { "\"127.0.0.$_\"" } @n;
    return "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
         . "metadata: {name: web-abc, namespace: ns, labels: {kubernetes.io/service-name: web}}\n"
         . "ports: [{name: https, port: $port}]\nendpoints: [{addresses: [$addresses]}]\n";
}

# HTTPRoute ns/r on ns/gw: a PathPrefix rule to web:443 for each PATH.
sub kube_route_yaml {
    my $rules = join '', map { "  - matches: [{path: {type: PathPrefix, value: $_}}]\n    backendRefs: [{name: web, port: 443}]\n" } @_;
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n$rules";
}

# A plain HTTP backend on ADDRESS:PORT, in a process of its own (its pid
# returned): /slow answered "slow" after 3 s, having made the file
# ACCEPTED (a test waits for it: the request is at the backend), anything
# else "fast" at once.
sub start_slow_backend {
    my ($address, $port, $accepted) = @_;
    my $listener = IO::Socket::INET->new(LocalAddr => $address, LocalPort => $port, Listen => 16, ReuseAddr => 1)
        or die "listen on $address:$port: $!\n";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        $SIG{CHLD} = 'IGNORE';
        while (my $c = $listener->accept) {
            next if fork;
            my $request = '';
            while (my $line = <$c>) { $request .= $line; last if $line eq "\r\n" }
            my ($path) = $request =~ m{^GET (\S+)};
            my $slow = ($path // '') =~ m{^/slow};
            if ($slow) {
                spit($accepted, "$path\n");
                sleep 3;
            }
            my $body = $slow ? 'slow' : 'fast';
            print $c "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\n$body";
            close $c;
            exit 0;
        }
        exit 0;
    }
    close $listener;
    return $pid;
}

# The requests gateway2nginx made, from the API server simulation's
# --audit log (one JSON line each): the simulation appends while a test
# reads, so a last line not yet ended is left for the next read.
sub audit_requests {
    my $audit = shift;
    my $text = -e $audit ? slurp($audit) : '';
    $text =~ s/[^\n]*\z//;
    return map { JSON::PP::decode_json($_) } grep { /"user_agent": "gateway2nginx\// } split /\n/, $text;
}

# What a gateway2nginx run asked of the API server simulation (its
# --audit log at AUDIT), against RBAC rules: (the requests neither the
# cluster RULES nor the rules granted in their namespace allow (NAMESPACED,
# {namespace => rules}, or rules granted in NAMESPACE), the rules no
# request used, how many requests), each '' when none.
sub rbac_check {
    my ($audit, $cluster_rules, $namespaced, $namespace) = @_;
    # NAMESPACED: rules by the namespace they are granted in, or one list
    # granted in NAMESPACE
    $namespaced = { $namespace => $namespaced } if ref $namespaced eq 'ARRAY';
    my @requests = audit_requests($audit);
    my $resource_of = sub { $_[0]{resource} . ($_[0]{subresource} ? "/$_[0]{subresource}" : '') };
    my $used = sub {
        my ($verb, $resource) = @_;
        scalar grep { $_->{verb} eq $verb && $resource_of->($_) eq $resource } @requests;
    };
    my $allowed = sub {
        my ($rules, $r) = @_;
        grep {
            my $rule = $_;
            (grep { $_ eq ($r->{group} // '') } @{ $rule->{apiGroups} })
                && (grep { $_ eq $resource_of->($r) } @{ $rule->{resources} })
                && (grep { $_ eq $r->{verb} } @{ $rule->{verbs} })
        } @$rules;
    };
    my @denied = grep {
        !$allowed->($cluster_rules, $_) && !($namespaced->{ $_->{namespace} // '' } && $allowed->($namespaced->{ $_->{namespace} }, $_))
    } @requests;
    my @unused;
    for my $rule (@$cluster_rules, map { @$_ } values %$namespaced) {
        for my $resource (@{ $rule->{resources} }) {
            for my $verb (@{ $rule->{verbs} }) {
                # grpcroutes, tlsroutes, tcproutes, udproutes and
                # listenersets: the same calls as httproutes; a get after a conflict: the same call
                # for every kind whose status is written, made for whichever
                # met the 409
                (my $like = $resource) =~ s/^(grpcroutes|tlsroutes|tcproutes|udproutes|listenersets)/httproutes/;
                my $status_kind = $verb eq 'get' && $rule->{apiGroups}[0] eq 'gateway.networking.k8s.io';
                push @unused, "$verb $resource"
                    unless $used->($verb, $resource) || $used->($verb, $like)
                        || ($status_kind && grep { $_->{verb} eq 'get' && ($_->{group} // '') eq 'gateway.networking.k8s.io' } @requests);
            }
        }
    }
    return (join("\n", map { "$_->{verb} " . ($_->{group} // '') . "/" . $resource_of->($_) . " in "
                                . ($_->{namespace} // '(cluster)') } @denied),
            join(' ', @unused), scalar @requests);
}

# `kubectl apply -f` of YAML (kept as servroot/NAME.yaml); the exit code
# is a test.
sub kube_apply {
    my ($name, $yaml) = @_;
    spit("$ServRoot/$name.yaml", $yaml);
    my ($rc, $out) = kubectl('apply', '-f', "$ServRoot/$name.yaml");
    Test::More::is($rc, 0, "kubectl apply -f $name.yaml") or Test::More::diag($out);
}

# DIR/NAME replaced the way kubectl cp or a config sync does: written
# aside, renamed.
sub put_file {
    my ($dir, $name, $text) = @_;
    spit("$dir/.$name.tmp", $text);
    rename "$dir/.$name.tmp", "$dir/$name" or die "$dir/$name: $!";
}

# An nginx under servroot/backends with a TLS server (the leaf
# certificate) on 127.0.0.N:PORT for N in 1 .. COUNT (or NET.N), each
# answering "endpoint=127.0.0.N path=URI": endpoints of one port.
sub start_numbered_backends {
    my ($count, $port, $net) = @_;
    $net //= '127.0.0';
    my $dir = "$ServRoot/backends";
    make_path("$dir/logs", "$dir/tmp");
    my $certs = certs_dir();
    my $servers = join '', map { <<"EOF" } 1 .. $count;
    server {
        listen $net.$_:$port ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        location / { return 200 "endpoint=$net.$_ path=\$uri\\n"; }
    }
EOF
    spit("$dir/nginx.conf", <<"EOF");
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path tmp/client_body;
$servers
}
EOF
    start_nginx($dir, 'nginx.conf', $port, "$net.1");
}

# Endpoint churn (t/310, t/335): COUNT lists of PORTS that scale up and
# down over a moving window of up to MOST endpoints, and every EVERY-th a
# rollout onto three endpoints the previous list (the first: FIRST) did
# not have.
sub churn_lists {
    my ($count, $every, $most, $ports, @previous) = @_;
    my @lists;
    for my $i (1 .. $count) {
        my @list;
        if ($i % $every == 0) {
            my %old = map { $_ => 1 } @previous;
            @list = (grep { !$old{$_} } @$ports)[0 .. 2];
        } else {
            my $start = ($i * 5) % @$ports;
            @list = map { $ports->[($start + $_) % @$ports] } 0 .. $i % $most;
        }
        push @lists, [@list];
        @previous = @list;
    }
    return @lists;
}

# When each endpoint was in the lists pushed, from the CONFIGURED ones on:
# `$joined->(TIME, LIST)` takes a list pushed at TIME and returns the
# endpoints new in it; `$strays->(LOG, SLACK, FROM, SKIP...)` reads a
# backend's access log of "PORT MSEC" lines from time FROM on, leaving out
# the SKIP ports, and returns how many lines it read and those of an
# endpoint outside its time in the lists (SLACK seconds either side: what
# was in flight at a change).
sub endpoint_membership {
    my %since = map { $_ => 0 } @_;   # port => when it joined (current members)
    my @intervals;                     # [port, from, to]
    my $joined = sub {
        my ($now, @list) = @_;
        my %in = map { $_ => 1 } @list;
        push @intervals, map { [$_, delete $since{$_}, $now] } grep { !$in{$_} } sort keys %since;
        my @new = grep { !exists $since{$_} } @list;
        $since{$_} = $now for @new;
        return @new;
    };
    my $strays = sub {
        my ($log, $slack, $from, @skip) = @_;
        my %skip = map { $_ => 1 } @skip;
        my @all = (@intervals, map { [$_, $since{$_}, 9e9] } keys %since);
        my ($lines, @strays) = (0);
        for (split /\n/, slurp($log)) {
            my ($p, $t) = split ' ';
            next if $skip{$p} || $t < $from;
            $lines++;
            push @strays, "$p at $t" unless grep { $_->[0] == $p && $t >= $_->[1] - $slack && $t <= $_->[2] + $slack } @all;
        }
        return ($lines, @strays);
    };
    return ($joined, $strays);
}

sub slurp { local (@ARGV, $/) = @_; <> }
sub spit { my ($f, $t) = @_; open my $fh, '>', $f or die "$f: $!"; print $fh $t; close $fh }

# The Gateway API conformance suite: GATEWAY_API_DIR/conformance, where
# GATEWAY_API_DIR is a checkout (or release tree) of kubernetes-sigs/gateway-api.
sub conformance_dir {
    my $api = $ENV{GATEWAY_API_DIR};
    return undef unless defined $api && length $api;
    return "$api/conformance";
}

# Whether the suite (conformance_dir()) holds the manifests named: those of
# a test newer than its release (a copy of a tag) are not there, and such a
# test is not in that release (not run, not counted).
sub conformance_has {
    my $shared = conformance_dir();
    return !grep { !-f "$shared/tests/$_.yaml" } @_;
}

# The start of a conformance replay: skips, saying why, without the suite,
# else sets up servroot; returns the suite's directory and the directory
# the manifests go to.
sub conformance_begin {
    my $shared = conformance_dir();
    Test::More::plan(skip_all => 'GATEWAY_API_DIR is not set: no Gateway API conformance manifests to replay '
                                 . '(set it to a checkout of kubernetes-sigs/gateway-api)') unless defined $shared;
    Test::More::plan(skip_all => "GATEWAY_API_DIR=$ENV{GATEWAY_API_DIR} has no conformance/ directory: "
                                 . 'no Gateway API conformance manifests to replay') unless -d $shared;
    Test::More::plan('no_plan');
    _setup();
    make_path("$ServRoot/manifests");
    return ($shared, "$ServRoot/manifests");
}

# The Gateway API conformance suite (conformance_dir()): its
# base manifests and the manifests of TESTS, with our GatewayClass name, as
# DIR/00-base.yaml and DIR/10-TEST.yaml; returns all of them as one text.
# Those the suite does not hold (conformance_has) are left out.
sub conformance_manifests {
    my ($shared, $dir, @tests) = @_;
    my $all = '';
    for my $file (['00-base.yaml', "$shared/base/manifests.yaml"],
                  map { ["10-$_.yaml", "$shared/tests/$_.yaml"] } grep { conformance_has($_) } @tests) {
        (my $text = slurp($file->[1])) =~ s/\{GATEWAY_CLASS_NAME\}/gateway2nginx/g;
        spit("$dir/$file->[0]", $text);
        $all .= "\n---\n$text";
    }
    return $all;
}

# A kubernetes.io/tls Secret in the suite's namespace (or NAMESPACE)
# holding certificate NAME.
sub tls_secret_yaml {
    my ($secret, $cert, $ns) = @_;
    $ns //= 'gateway-conformance-infra';
    my $b64 = sub { my $t = `base64 -w0 $_[0]`; $t };
    return "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: $secret\n  namespace: $ns\n"
         . "type: kubernetes.io/tls\ndata:\n  tls.crt: " . $b64->(certs_dir() . "/$cert.crt") . "\n"
         . "  tls.key: " . $b64->(certs_dir() . "/$cert.key") . "\n";
}

# What the suite creates at start: our GatewayClass, the CA ConfigMap
# tls-checks-ca-certificate (the test set's CA) and mismatch-ca-certificate
# (a CA that signed none of the backends' certificates).
sub conformance_setup {
    my $ca_map = sub {
        my ($name, $file) = @_;
        (my $ca = slurp(certs_dir() . "/$file")) =~ s/^/    /mg;
        return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: $name\n"
             . "  namespace: gateway-conformance-infra\ndata:\n  ca.crt: |\n$ca";
    };
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: gateway2nginx\n"
         . "spec:\n  controllerName: gateway2nginx.io/controller\n"
         . $ca_map->('tls-checks-ca-certificate', 'ca.crt') . $ca_map->('mismatch-ca-certificate', 'unrelated-ca.crt');
}

# Starts COMMAND (a list), which prints "ready" once it listens; it is
# stopped when the test ends (track_child).
sub start_ready_server {
    my @command = @_;
    pipe(my $ready, my $w) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $ready;
        open STDOUT, '>&', $w or die;
        exec @command or die "exec: $!";
    }
    close $w;
    track_child($pid);
    my $line = <$ready> // '';
    die "$command[1] did not start\n" unless $line eq "ready\n";
    return $pid;
}

# The newer route the suite's MultipleRoutesAttachment tests create a second
# after the older one (KIND NEWER on listener SECTION of GATEWAY, to BACKEND
# port PORT), added to manifest FILE with the creationTimestamps the API
# server would set both; returns the file's text before, to put back.
sub conformance_newer_route {
    my ($file, $kind, $older, $newer, $gateway, $section, $backend, $port) = @_;
    my $orig = slurp($file);
    (my $text = $orig) =~ s/^(  name: \Q$older\E\n)/$1  creationTimestamp: "2026-01-01T00:00:00Z"\n/m
        or die "no $older in $file\n";
    spit($file, $text . "\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: $kind\nmetadata:\n  name: $newer\n"
               . "  namespace: gateway-conformance-infra\n  creationTimestamp: \"2026-01-01T00:00:01Z\"\n"
               . "spec:\n  parentRefs:\n  - name: $gateway\n    sectionName: $section\n  rules:\n  - backendRefs:\n"
               . "    - name: $backend\n      port: $port\n");
    return $orig;
}

# Manifest FILE without its objects of KIND (the suite deleting them);
# returns its text before, to put back.
sub conformance_drop_kind {
    my ($file, $kind) = @_;
    my $orig = slurp($file);
    spit($file, join '---', grep { !/^kind: \Q$kind\E\s*$/m } split /^---/m, $orig);
    return $orig;
}

# The suite's weight.TestWeightedDistribution: TOTAL answers from SAMPLE (a
# sub returning the backend that answered, or undef), each backend's share
# of WANT (backend -> share) within 0.05, tried up to weight.MaxTestRetries
# (10) times; '' when a try was within, else what was off in the last.
sub weighted_shares {
    my ($sample, $want, $total) = @_;
    my @off;
    for (1 .. 10) {
        my %count;
        $count{$sample->() // 'none'}++ for 1 .. $total;
        @off = map { sprintf('%s has %.3f, %.2f wanted', $_, ($count{$_} // 0) / $total, $want->{$_}) }
               grep { abs(($count{$_} // 0) / $total - $want->{$_}) > 0.05 } sort keys %$want;
        push @off, "$count{none} not answered" if $count{none};
        return '' unless @off;
    }
    return join '; ', @off;
}

# Renders one Gateway of the suite's namespace alone (--gateway, nginx -t
# included) into servroot/out-GATEWAY with every listener port + OFFSET and,
# given FIRST_PORT (a TCP port, or a UDP one with PROTO 'udp'), starts its
# nginx (stopping the one started before); returns its status, keyed as
# read_status does.
sub serve_conformance_gateway {
    my ($manifests, $gateway, $offset, $first_port, $proto) = @_;
    stop_nginx($ConformanceRunning, 'TERM') if $ConformanceRunning;  # its test is over
    $ConformanceRunning = undef;
    my $out = "$ServRoot/out-$gateway";
    my $module_dir = $Module =~ s{/[^/]+$}{}r;
    my ($rc, $output) = run_generator('-f', $manifests, '-o', $out, '--gateway', "gateway-conformance-infra/$gateway",
                                      '--port-offset', $offset, '--listen-address', '127.0.0.1',
                                      '--module-dir', $module_dir, '--status-listen', 'off', '--check');
    Test::More::is($rc, 0, "$gateway: gateway2nginx writes a configuration that passes nginx -t")
        or Test::More::diag($output);
    if ($first_port) {
        start_nginx($out, 'nginx.conf', $first_port + $offset, undef, $proto);
        $ConformanceRunning = $out;
    }
    return read_status("$out/status.yaml");
}

# The conditions (and listener entries) of one object of the suite's namespace.
sub conformance_conditions {
    my ($status, $kind, $name) = @_;
    return join "\n", @{$status->{"$kind gateway-conformance-infra/$name"} || []};
}

sub read_status {
    my $file = shift;
    open my $fh, '<', $file or die "$file: $!\n";
    local $/;
    my $text = <$fh>;
    close $fh;
    my %status;
    for my $doc (split /^---\s*$/m, $text) {
        my ($kind) = $doc =~ /^kind: (\S+)/m or next;
        my ($name) = $doc =~ /^  name: (\S+)/m;
        my ($ns) = $doc =~ /^  namespace: (\S+)/m;
        my (@entries, %cond);
        my ($ref, $in_ref, $ref_kind) = ('', 0, '');
        my ($generation) = $doc =~ /^  generation: (\d+)/m;
        push @entries, "generation=$generation" if defined $generation;
        my $listeners = $kind eq 'Gateway' || $kind eq 'ListenerSet';
        for my $line (split /\n/, $doc) {
            # a Gateway's (a ListenerSet's) listeners: "listener NAME: ..." entries
            if ($listeners && $line =~ /^    - name: (\S+)/) {
                ($ref, $in_ref) = ("listener $1", 0);
            } elsif ($listeners && $line =~ /^      attachedRoutes: (\d+)/) {
                push @entries, "$ref: attachedRoutes=$1";
            } elsif ($listeners && $line =~ /^          kind: (\S+)/) {
                push @entries, "$ref: supportedKind=$1";
            } elsif ($kind eq 'Gateway' && $line =~ /^      value: (\S+)/) {
                push @entries, "address=$1";
            } elsif ($kind eq 'Gateway' && $line =~ /^  attachedListenerSets: (\d+)/) {
                push @entries, "attachedListenerSets=$1";
            } elsif ($kind eq 'GatewayClass' && $line =~ /^    - name: (\S+)/) {
                push @entries, "supportedFeature=$1";
            } elsif ($line =~ /^\s+- (?:ancestorRef|parentRef):/) {
                ($ref, $in_ref, $ref_kind) = ('', 1, '');
            } elsif ($in_ref && $line =~ /^\s+kind: (\S+)/) {
                $ref_kind = $1;
            } elsif ($in_ref && $line =~ /^\s+namespace: (\S+)/) {
                # a route's ListenerSet parent: "ListenerSet NS/NAME"
                $ref = ($ref_kind eq 'ListenerSet' ? 'ListenerSet ' : '') . $1;
            } elsif ($in_ref && $line =~ /^\s+name: (\S+)/) {
                $ref .= "/$1";
                $in_ref = 0;
            } elsif ($line =~ /^\s+- type: (\S+)/) {
                %cond = (type => $1);
            } elsif ($line =~ /^\s+status: "(\w+)"/) {
                $cond{status} = $1;
            } elsif ($line =~ /^\s+reason: (\S+)/) {
                push @entries, "$ref: $cond{type}=$cond{status}/$1";
            } elsif ($line =~ /^\s+observedGeneration: (\d+)/ && defined $generation && $1 != $generation) {
                push @entries, "$ref: stale $cond{type} (observedGeneration $1)";
            }
        }
        $status{defined $ns ? "$kind $ns/$name" : "$kind $name"} = \@entries;  # GatewayClass: no namespace
    }
    return \%status;
}

sub run_tests {
    _setup();
    plan('no_plan');
    for my $block (blocks()) {
        _run_block($block);
    }
    _stop();
}

1;
