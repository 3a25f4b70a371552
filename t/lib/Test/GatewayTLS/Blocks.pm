package Test::GatewayTLS::Blocks;

# The Test::Nginx-like block format (run_tests): each block's nginx
# configuration written, nginx run and reloaded, its requests made and
# its sections (response, logs) checked.

use strict;
use warnings;

use Exporter 'import';
use Test::Base;  # blocks() reads the test file's __DATA__; ok, is, like ...
use IO::Socket::INET;
use Time::HiRes qw(sleep time);

use Test::GatewayTLS::Env qw(:DEFAULT $BasePort $Module $Nginx $NginxStreamModule $NginxVersion $ServRoot $StreamModule _setup);
use Test::GatewayTLS::Nginx qw(:DEFAULT _backend_servers _http _stream_backend_servers _temp_paths _tls_http);

our @EXPORT = qw(run_tests);

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

# SIGHUP, then wait until the new configuration's workers are up and
# the previous ones gone.
sub _reload {
    open my $fh, '<', "$ServRoot/logs/nginx.pid" or die "no pid file\n";
    my $pid = <$fh>;
    close $fh;
    chomp $pid;
    my $before = () = _read_log('error.log') =~ /start worker process/g;
    my $workers = worker_pids($pid);
    kill 'HUP', $pid;
    wait_for(sub { (() = _read_log('error.log') =~ /start worker process/g) > $before }, 10);
    wait_workers_replaced($pid, $workers);
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

sub run_tests {
    _setup();
    plan('no_plan');
    for my $block (blocks()) {
        _run_block($block);
    }
    _stop();
}

1;
