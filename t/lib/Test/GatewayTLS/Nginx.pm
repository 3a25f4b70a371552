package Test::GatewayTLS::Nginx;

# nginx processes: the TLS backends every test reaches, nginx started and
# stopped (and what a test file started, stopped when it ends), workers
# and connections read from /proc, and the HTTP and TLS clients.

use strict;
use warnings;

use Exporter 'import';
use File::Basename qw(dirname);
use File::Path qw(make_path);
use IO::Socket::INET;
use IPC::Open2 ();
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

use Test::GatewayTLS::Env qw(:DEFAULT $Nginx $NginxStreamModule $ServRoot @Backends _check_listen_ports);

our @EXPORT = qw(api_request ask_kept_alive own_conf_head certificate_names certificate_sha256 close_kept_tls open_kept_tls presented_certificates connections_to http_request parent_pid presented_certificate request start_backends
                start_nginx start_numbered_backends start_slow_backend start_slow_reader stop_backends stop_nginx
                tls_exchange track_child unread_by_server wait_workers_replaced worker_pids);
our @EXPORT_OK = qw(_backend_servers _http _stream_backend_servers _temp_paths _tls_http);

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

# A TLS connection to 127.0.0.1:PORT with SNI SNI kept open (an openssl
# s_client, at most 60 s): (PID, FROM, TO) for ask_kept_alive and
# close_kept_tls. The process is s_client's own (through timeout, no
# shell left between), so that closing ends the connection at once: an
# nginx stopping gracefully waits for a stream session's client.
sub open_kept_tls {
    my ($port, $sni) = @_;
    my $pid = IPC::Open2::open2(my $from, my $to,
        "exec timeout 60 openssl s_client -connect 127.0.0.1:$port -servername $sni -quiet 2>/dev/null");
    return ($pid, $from, $to);
}

sub close_kept_tls {
    my ($pid, $to) = @_;
    close $to;
    kill 'TERM', $pid;  # (-quiet waits out its stdin's end)
    waitpid $pid, 0;
}

# GET PATH with Host HOST on a kept-alive HTTP/1.1 connection, written to
# TO and read from FROM (a socket is both): "CODE BACKEND" (BACKEND "-"
# when the body names none; ANSWER, a pattern, captures another part of
# the body), "closed" when no answer came.
sub ask_kept_alive {
    my ($to, $from, $host, $path, $answer) = @_;
    $answer //= qr/backend=(\S+)/;
    # a connection closed under the test (s_client gone) fails the write:
    # SIGPIPE would end the test without its END block, its children left
    # holding prove's pipe
    local $SIG{PIPE} = 'IGNORE';
    print $to "GET $path HTTP/1.1\r\nHost: $host\r\n\r\n" or return 'write failed';
    $to->flush;
    my ($head, $line) = ('');
    while (defined($line = <$from>)) { $head .= $line; last if $line eq "\r\n" }
    return 'closed' unless $head =~ m{^HTTP/1\.1 (\d+)};
    my $code = $1;
    my ($length) = $head =~ /^Content-Length: (\d+)/mi;
    my $body = '';
    read($from, $body, $length // 0);
    return "$code " . (($body =~ $answer)[0] // '-');
}

# The SHA-256 of the (first) certificate of a PEM file, lowercase hex, from
# the openssl CLI
sub certificate_sha256 {
    my $file = shift;
    my $out = `openssl x509 -in '$file' -noout -fingerprint -sha256 2>/dev/null`;
    return '' unless $out =~ /=([0-9A-F:]+)/;
    (my $hex = lc $1) =~ s/://g;
    return $hex;
}

# One handshake with 127.0.0.1:PORT sending SNI, and GET / with it as Host
# on it: (the SHA-256 of the leaf presented, '' for none; what s_client
# printed after it, the response among it)
sub presented_certificate {
    my ($port, $sni) = @_;
    my $in = "$ServRoot/tmp/presented.in";
    make_path("$ServRoot/tmp");
    open my $fh, '>', $in or die "$in: $!";
    print $fh "GET / HTTP/1.0\r\nHost: $sni\r\n\r\n";
    close $fh;
    # (-ign_eof: until nginx closes, the response read; not at the request's end)
    my $out = `timeout 10 openssl s_client -ign_eof -connect 127.0.0.1:$port -servername $sni < $in 2>/dev/null`;
    my ($pem) = $out =~ /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n)/s;
    return ('', '') unless $pem;
    my $file = "$ServRoot/tmp/presented.pem";
    open $fh, '>', $file or die "$file: $!";
    print $fh $pem;
    close $fh;
    return (certificate_sha256($file), substr($out, index($out, $pem) + length $pem));
}

# The test certificates NAMES (of certs_dir()) by the SHA-256 of each:
# what presented_certificates tells them by
sub certificate_names {
    return { map { certificate_sha256(certs_dir() . "/$_.crt") => $_ } @_ };
}

# ROUNDS handshakes with SNI SNI, each with a request: the certificates
# presented, by name (NAMES from certificate_names; "none", "another"),
# joined where they differ, and the values ANSWER (a regex, one group)
# took in the answers, sorted ("-" where it did not match)
sub presented_certificates {
    my ($port, $sni, $names, $rounds, $answer) = @_;
    my (%seen, %answers);
    for (1 .. $rounds) {
        my ($sha256, $said) = presented_certificate($port, $sni);
        $seen{$sha256 eq '' ? 'none' : $names->{$sha256} // 'another'}++;
        $answers{$said =~ $answer ? $1 : '-'}++;
    }
    return (join(' | ', sort keys %seen), [sort keys %answers]);
}

# Temporary files inside the server root, not Debian's /var/lib/nginx.
# The head of a configuration a test writes itself, to be followed by
# what goes in http{} and its closing brace: the module under test loaded,
# WORKERS worker processes (1) of CONNECTIONS connections (64), the pid,
# error log (info) and temp paths under the prefix, and ACCESS_LOG
# (logs/access.log, or off).
sub own_conf_head {
    my (%o) = @_;
    my ($workers, $connections, $access_log) = ($o{workers} // 1, $o{connections} // 64, $o{access_log} // 'logs/access.log');
    return "load_module " . ($ENV{GTLS_MODULE} || $Test::GatewayTLS::Env::Module) . ";\n"
         . "worker_processes $workers;\npid logs/nginx.pid;\nerror_log logs/error.log info;\n"
         . "events { worker_connections $connections; }\nhttp {\n    access_log $access_log;\n" . _temp_paths();
}

sub _temp_paths {
    return join '', map { "    ${_}_temp_path tmp/$_;\n" } qw(client_body proxy fastcgi uwsgi scgi);
}

# The daemonised master is not our child: once it exits it stays a zombie
# until init reaps it, which counts as gone.
sub _alive {
    my $pid = shift;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my $stat = <$fh> // '';
    close $fh;
    return $stat !~ /^\d+ \(.*\) [ZX] /;
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

# Whether MASTER's workers BEFORE (pids, as worker_pids gives them) have
# stopped accepting, waited for up to SECONDS (15): after a reload they
# accept connections still, served by the previous configuration, until
# each takes the master's signal; then it names itself "worker process
# is shutting down" and closes its listening sockets at once (in one go:
# it accepts nothing in between), and may live on for its connections
# and UDP sessions. True at once when the master started no other
# worker (no reload).
sub wait_workers_replaced {
    my ($master, $before, $seconds) = @_;
    my %old = map { $_ => 1 } split ' ', $before;
    my $accepting = sub {
        open my $fh, '<', "/proc/$_[0]/cmdline" or return 0;
        local $/;
        return (<$fh> // '') !~ /shutting down/;
    };
    return wait_for(sub {
        my @now = _children($master);
        return !(grep { !$old{$_} } @now) || !(grep { $old{$_} && $accepting->($_) } @now);
    }, $seconds // 15);
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

# A plain HTTP backend on ADDRESS:PORT, in a process of its own (its pid
# returned; stopped when the test file ends, if not before): /slow
# answered "slow" after 3 s, having made the file ACCEPTED (a test waits
# for it: the request is at the backend), anything else "fast" at once.
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
    track_child($pid);
    return $pid;
}

# A client reading a long response slowly, in a process of its own (its
# pid returned): GET PATH with Host HOST from 127.0.0.1:PORT, 1 KiB every
# 50 ms, so that the response stays open (its upstream connection with
# it) until told it may end (SIGUSR1); then it reads the rest and exits 0
# if every byte of a 200 arrived (stopped when the test file ends, if not
# before). OUT.head holds the head once it came, OUT the number of body
# bytes read.
sub start_slow_reader {
    my ($port, $host, $path, $out) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid) {
        track_child($pid);
        return $pid;
    }
    my $drain = 0;
    local $SIG{USR1} = sub { $drain = 1 };
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or POSIX::_exit(2);
    syswrite($s, "GET $path HTTP/1.0\r\nHost: $host\r\n\r\n");
    my ($head, $body, $buf) = ('', 0, '');
    while (1) {
        my $n = sysread($s, $buf, $drain ? 1 << 20 : 1024);
        next if !defined $n && $!{EINTR};
        last unless $n;
        if ($head !~ /\r\n\r\n/) {
            $head .= $buf;
            next unless $head =~ /\r\n\r\n/;
            $body = length($head) - index($head, "\r\n\r\n") - 4;
            spit("$out.head", $head);
        } else {
            $body += $n;
        }
        sleep 0.05 unless $drain;
    }
    spit($out, "$body\n");
    my ($length) = $head =~ /^Content-Length: (\d+)/mi;
    POSIX::_exit($head =~ m{^HTTP/1\.1 200} && defined $length && $body == $length ? 0 : 1);
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

1;
