package Test::Conformance;

# A local replay of the Gateway API conformance suite: its manifests
# ($GATEWAY_API_DIR/conformance), the requests and assertions of its Go
# tests (conformance/tests/NAME.go in kubernetes-sigs/gateway-api), written
# down as data in t/conformance/*.pl, and echo backends answering as the
# suite's echo server (t/lib/echo-server.pl). Each test: gateway2nginx
# renders every Gateway it names alone (--gateway, nginx -t included), each
# on an address of its own (127.0.0.2, ...) as a cluster gives each Gateway
# one, and an nginx serves each; the suite's status checks read status.yaml,
# its requests go to the address status.addresses reports.
#
# Each test's result is recorded (Test::ConformanceReport) for the
# ConformanceReport t/lib/conformance-report.pl writes.

use strict;
use warnings;

use Cwd qw(abs_path);
use Exporter 'import';
use IO::Socket::INET;
use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use Test::ConformanceReport qw(:DEFAULT declared);
use Test::GatewayTLS;
use Test::WebSocket qw(accept_key new_key read_frame write_frame);

our @EXPORT = qw(replay);

my $Infra = 'gateway-conformance-infra';

my ($Shared, $Dir, $Offset, %Echo, %H2cEcho, %GrpcEcho, %GrpcEchoTls, @Running);
# 'table': HTTPRoutes and GRPCRoutes served by the module's route table
# (gateway2nginx --routes table), filled through the upstream API
my $Routes = 'locations';
# in mode run: each test's Gateways served by gateway2nginx run
# (--start-nginx) watching the manifests, its later generations applied
# by run itself
my $Run;
my $Edited = 0;  # the files a test's step changed
my $EchoPorts = 0;

# ---- backends --------------------------------------------------------------

# Labels under KEY (selector:, labels:) at the start of DOC's text AFTER.
sub _labels {
    my ($block) = @_;
    return {} unless defined $block;
    return {$block =~ /^\s+([\w.\/-]+):\s*"?([^"\s]+)"?\s*$/mg};
}

# The Deployments of TEXT (YAML documents): "NS/NAME" -> {labels of its
# pods, grpc: its echo-basic runs as a gRPC server (GRPC_ECHO_SERVER, the
# suite's grpc-infra-backend-*), tls: it also serves TLS on 8443
# (TLS_SERVER_CERT)}.
sub _deployments {
    my $text = shift;
    my %deployments;
    for my $doc (split /^---\s*$/m, $text) {
        next unless $doc =~ /^kind: Deployment\s*$/m;
        my ($name) = $doc =~ /^  name: (\S+)/m;
        my ($ns) = $doc =~ /^  namespace: (\S+)/m;
        my ($labels) = $doc =~ /^  template:\n    metadata:\n      labels:\n((?:        .*\n)+)/m;
        $deployments{($ns // 'default') . "/$name"} =
            {labels => _labels($labels), grpc => scalar($doc =~ /name: GRPC_ECHO_SERVER\s*\n\s*value: "1"/),
             tls => scalar($doc =~ /name: TLS_SERVER_CERT\b/)};
    }
    return \%deployments;
}

# The Deployment (NS/NAME) whose pods SELECTOR selects in NS, as the
# EndpointSlice controller finds a Service's pods.
sub _selected {
    my ($deployments, $ns, $selector) = @_;
    for my $key (sort keys %$deployments) {
        next unless $key =~ m{^\Q$ns\E/};
        my $labels = $deployments->{$key}{labels};
        return $key unless grep { ($labels->{$_} // "\0") ne $selector->{$_} } keys %$selector;
    }
    return undef;
}

# The echo port serving the pods of DEPLOYMENT (NS/NAME) on TARGET_PORT:
# a gRPC echo server's for a gRPC echo-basic (over TLS with the suite's
# tls-checks-certificate, here the leaf of t/lib/make-certs.sh, on 8443 of
# one that has TLS_SERVER_CERT), an h2c one's on echo-basic's H2C_PORT
# (3001), an HTTP one's for the rest.
sub _echo_port {
    my ($deployments, $key, $target_port) = @_;
    my $d = $deployments->{$key} || {};
    my $echo = !$d->{grpc} ? (($target_port // 0) == 3001 ? \%H2cEcho : \%Echo)
             : ($d->{tls} && ($target_port // 0) == 8443) ? \%GrpcEchoTls : \%GrpcEcho;
    return $echo->{$key} //= server_port() + 40 + $EchoPorts++;
}

# What the EndpointSlice controller makes of TEXT (YAML documents): every
# Service with a selector gets an EndpointSlice of the pods it selects,
# each pod an echo identity answering on an echo port of its own (a pod's
# IP and port, here 127.0.0.1 and that port), each Service port on the
# echo port of its targetPort; a selector that selects no Deployment of
# the manifests stands for pods of the Service's own name. Services
# without a selector get no slice: their endpoints are the manifests' own
# EndpointSlices. Pods of TLS, TCP and UDP backends are replayed by t/410
# and t/420.
sub _echo_endpoints {
    my $text = shift;
    my $deployments = _deployments($text);
    my $slices = '';
    for my $doc (split /^---\s*$/m, $text) {
        next unless $doc =~ /^kind: Service\s*$/m;
        my ($name) = $doc =~ /^  name: (\S+)/m or next;
        my ($ns) = $doc =~ /^  namespace: (\S+)/m;
        $ns //= 'default';
        my ($selector) = $doc =~ /^  selector:\n((?:    .*\n)+)/m or next;
        my $pods = _selected($deployments, $ns, _labels($selector)) // "$ns/$name";
        next if $pods =~ m{/.*(?:tls|coredns|tcp|udp)};
        my ($ports) = $doc =~ /^  ports:\n((?:  [ -].*\n?)*)/m;
        my @items = map {
            my ($port_name) = /^\s*name:\s*"?([^"\s]+)"?\s*$/m;
            my ($target) = /^\s*targetPort:\s*(\d+)/m;
            {name => $port_name // '', target => $target}
        } grep { /\S/ } split /^\s*-\s/m, $ports // '';
        @items = ({name => ''}) unless @items;
        (my $slice = "$name-echo") =~ s/^(.{58}).*/$1/;
        $slices .= "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: $slice\n"
                 . "  namespace: $ns\n  labels:\n    kubernetes.io/service-name: $name\naddressType: IPv4\nports:\n"
                 . join('', map { "- name: \"$_->{name}\"\n  port: " . _echo_port($deployments, $pods, $_->{target}) . "\n" }
                            @items)
                 . "endpoints:\n- addresses: [\"127.0.0.1\"]\n  conditions: {ready: true}\n";
    }
    return $slices;
}

# The suite's setupEndpointSlices: each EndpointSlice of TEXT named in
# PODS (slice name -> Deployment of the infra namespace) gets that
# Deployment's pods as its endpoints, as the Go test patches them in. Only
# IPv4 slices: the pods here, like a single-stack cluster's, have IPv4
# addresses only; a pod's port, here, is its echo port.
sub _fill_endpoint_slices {
    my ($text, $pods) = @_;
    return join '---', map {
        my $doc = $_;
        my ($name) = $doc =~ /^  name: (\S+)/m;
        if ($doc =~ /^kind: EndpointSlice\s*$/m && defined $name && $pods->{$name} && $doc =~ /^addressType: IPv4\s*$/m) {
            my $port = $Echo{"$Infra/$pods->{$name}"} // die "no echo pods for $pods->{$name}";
            $doc =~ s/^(  port:) \d+$/$1 $port/mg;
            $doc =~ s/\n*\z/\nendpoints:\n- addresses: ["127.0.0.1"]\n  conditions: {ready: true, serving: true, terminating: false}\n/;
        }
        $doc
    } split /^---/m, $text;
}

# Debian's python3, which has python3-grpcio (not one earlier in PATH).
my $Python = '/usr/bin/python3';
(my $GrpcEchoScript = __FILE__) =~ s{Test/Conformance\.pm$}{grpc-echo.py};

sub _start_echo {
    my $identity = sub { my $echo = shift; map { my ($ns, $pod) = split m{/}; "$echo->{$_}=$ns/$pod-0" } sort keys %$echo };
    (my $script = __FILE__) =~ s{Test/Conformance\.pm$}{echo-server.pl};
    mkdir _echo_logs();
    start_ready_server($^X, $script, '--log=' . _echo_logs(), $identity->(\%Echo));
    my $tls = join ',', map { certs_dir() . "/leaf.$_" } qw(crt key);
    # the handshakes the mismatch tests fail on purpose are not news
    local $ENV{GRPC_VERBOSITY} = 'NONE';
    start_ready_server($Python, $GrpcEchoScript, 'serve', $identity->(\%GrpcEcho), map { "$_,$tls" } $identity->(\%GrpcEchoTls))
        if %GrpcEcho || %GrpcEchoTls;
    (my $h2c_echo = $GrpcEchoScript) =~ s{grpc-echo\.py$}{h2c-echo.py};
    start_ready_server($Python, $h2c_echo, $identity->(\%H2cEcho)) if %H2cEcho;
}

# Where the echo pods' logs are (echo-server.pl --log).
sub _echo_logs { servroot() . '/echo-logs' }

# The suite's ExpectMirroredRequest: each of BACKENDS (pods of the infra
# namespace) logs, after OFFSETS (log sizes before the request), that it
# got PATH; waited for up to 5 s. The reasons it did not.
sub _mirrored {
    my ($path, $backends, $offsets) = @_;
    my @why;
    for my $backend (@$backends) {
        my $log = _echo_logs() . "/${Infra}_$backend-0.log";
        my $deadline = time + 5;
        my $seen;
        while (!$seen && time < $deadline) {
            if (open my $fh, '<', $log) {
                seek $fh, $offsets->{$backend} // 0, 0;
                local $/;
                my $new = <$fh> // '';
                $seen = $new =~ /^Echoing back request made to \Q$path\E to client/m;
            }
            sleep 0.05 unless $seen;
        }
        push @why, "the request to $path was not mirrored to $backend" unless $seen;
    }
    return @why;
}

# HTTPRouteRequestPercentageMirror's testMirroredRequestsDistribution:
# 500 requests (REQUEST on GW's PORT, ten at a time as there), then the
# log of POD must show PERCENT of them mirrored, within 5% of that count;
# five tries, as there. The reasons it did not.
sub _mirror_share {
    my ($address, $gw, $port, $req, $pod, $percent) = @_;
    my $addr = $address->{$gw} or return "$gw has no address";
    my $total = 500;
    my $want = $total * $percent / 100;
    my ($min, $max) = ($want * 0.95, $want * 1.05);
    my $last = '';
    for my $try (1 .. 5) {
        my $offset = _log_offsets([$pod])->{$pod};
        my @failed;
        for my $batch (0 .. $total / 10 - 1) {
            my @kids;
            for (1 .. 10) {
                my $pid = fork // die "fork: $!";
                if ($pid == 0) {
                    my ($status) = _http($addr, $port + $Offset, $req);
                    POSIX::_exit($status == 200 ? 0 : 1);
                }
                push @kids, $pid;
            }
            for (@kids) { waitpid($_, 0); push @failed, $? if $? }
        }
        return scalar(@failed) . " of $total requests to $req->{path} failed" if @failed;
        # mirrors finish after their answers: count until the log stops growing
        my ($count, $before) = (0, -1);
        my $deadline = time + 10;
        while ($count != $before && time < $deadline) {
            sleep 0.3;
            $before = $count;
            open my $fh, '<', _echo_logs() . "/${Infra}_$pod-0.log" or last;
            seek $fh, $offset, 0;
            $count = () = do { local $/; <$fh> // '' } =~ /^Echoing back request made to \Q$req->{path}\E to client/mg;
        }
        return () if $count >= $min && $count <= $max;
        $last = "$pod got $count of $total requests to $req->{path} mirrored, not between $min and $max";
    }
    return $last;
}

# The sizes of BACKENDS' logs now.
sub _log_offsets {
    my ($backends) = @_;
    return {map { $_ => (-s _echo_logs() . "/${Infra}_$_-0.log") // 0 } @$backends};
}

# ---- gateways --------------------------------------------------------------

sub _stop_gateways {
    for my $out (@Running) {
        stop_conformance_run($out);  # (it stops its nginx)
        stop_nginx($out);
    }
    @Running = ();
}

sub _wait_port {
    my ($addr, $port) = @_;
    my $deadline = time + 5;
    while (time < $deadline) {
        my $s = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port, Proto => 'tcp');
        return 1 if $s;
        sleep 0.02;
    }
    return 0;
}

# Where TEST's Gateway NAME is rendered: a directory name (at most 255
# bytes) even for the longest object name (253).
sub _out_dir {
    my ($test, $name) = @_;
    return servroot() . "/out-$test->{name}-" . substr($name, 0, 100);
}

# Renders and serves Gateway NAME of the infra namespace on ADDRESS from
# the manifests in $Dir; returns its status (read_status) or undef.
sub _serve_gateway {
    my ($test, $name, $address) = @_;
    my $out = _out_dir($test, $name);
    my $module_dir = ($ENV{GTLS_MODULE} || abs_path('build/nginx/objs/ngx_http_gateway_tls_module.so'))
                     =~ s{/[^/]+$}{}r;
    # an nginx already serving this Gateway (an earlier generation) is
    # reloaded with the new configuration, as a running Gateway would be
    my $running = grep { $_ eq $out } @Running;
    # through the table, a reload is followed by the entries nginx lacks,
    # pushed by gateway2nginx itself
    my $api = "$address:" . (server_port() + 18);
    my @table = $Routes eq 'table' ? ('--routes', 'table', '--upstream-api', $api) : ();
    return _serve_gateway_run($test, $name, $address, @table) if $Run;
    my $master = $running ? slurp("$out/nginx.pid") =~ s/\s+//gr : 0;
    my $workers = $master ? worker_pids($master) : '';
    my ($rc, $output) = run_generator('-f', $Dir, '-o', $out, '--gateway', "$Infra/$name",
                                      '--port-offset', $Offset, '--listen-address', $address,
                                      '--module-dir', $module_dir, '--status-listen', 'off', '--check', @table,
                                      ($running ? ('--reload', "$out/nginx.pid") : ()));
    if ($rc != 0) {
        diag("$test->{name}: gateway2nginx for $name: $output");
        return undef;
    }
    if ($master && !wait_workers_replaced($master, $workers)) {
        diag("$test->{name}: the workers of ${name}'s nginx before its reload ($workers) accept still");
        return undef;
    }
    my $status = read_status("$out/status.yaml");
    return $status if $running || !$test->{requests};  # reloaded, or a test of status alone
    my $nginx = nginx_binary();
    my $started = `$nginx -p $out/ -c nginx.conf 2>&1`;
    if ($? != 0) {
        diag("$test->{name}: nginx for $name does not start: $started");
        return undef;
    }
    push @Running, $out;
    # wait for the listeners the Gateway declares
    for my $port (_listener_ports($name)) {
        _wait_port($address, $port + $Offset);
    }
    if (@table) {
        my $token = slurp("$out/upstream-api.token") =~ s/\s+//r;
        my $code = `curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $token' -X PUT --data-binary \@$out/route-tables.json http://$api/upstreams`;
        if ($code ne '200') {
            diag("$test->{name}: the route tables of $name were not filled: $code");
            return undef;
        }
    }
    return $status;
}

# Gateway NAME served by gateway2nginx run, started for TEST's first
# generation; a later one (the manifests edited) is waited for: what run
# applied, in OUTDIR and nginx. Returns its status, or undef.
sub _serve_gateway_run {
    my ($test, $name, $address, @table) = @_;
    my $out = _out_dir($test, $name);
    if (!grep { $_ eq $out } @Running) {
        my $why = start_conformance_run($out, $Dir, $name, '--port-offset', $Offset, '--listen-address', $address,
                                        '--spare-backends', '2', @table);
        push @Running, $out;
        if ($why ne '') {
            diag("$test->{name}: $why");
            return undef;
        }
        _wait_port($address, $_ + $Offset) for _listener_ports($name);
    } elsif ($Edited && !conformance_run_settled($out)) {
        diag("$test->{name}: gateway2nginx run for $name did not apply the change:\n" . (slurp("$out.run.log") // ''));
        return undef;
    }
    return read_status("$out/status.yaml");
}

# Listener ports of Gateway NAME in the manifests.
sub _listener_ports {
    my $name = shift;
    my $all = join "\n---\n", map { slurp($_) } glob("$Dir/*.yaml");
    for my $doc (split /^---\s*$/m, $all) {
        next unless $doc =~ /^kind: Gateway\s*$/m && $doc =~ /^  name: \Q$name\E\s*$/m;
        my %seen;
        return grep { !$seen{$_}++ } $doc =~ /^\s+port: (\d+)/mg;
    }
    return ();
}

# ---- requests --------------------------------------------------------------

# The headers REQUEST sends: its {headers}, and its {backend_sets} (the
# suite's BackendSetResponseHeaders: headers the echo server is to answer
# with) as X-Echo-Set-Header, as the suite's request does.
sub _request_headers {
    my $req = shift;
    my %headers = %{$req->{headers} || {}};
    my $sets = $req->{backend_sets} || {};
    $headers{'X-Echo-Set-Header'} = join ',', map { "$_:$sets->{$_}" } sort keys %$sets if %$sets;
    return \%headers;
}

# One HTTP/1.1 request: (status, {lc header => [values]}, body). With
# {sni}, over TLS with that SNI (curl; the server's certificate is not
# checked here: t/430 does), and with {h2} too, HTTP/2 through ALPN, as the
# suite's H2Protocol (a reply over HTTP/1.1 fails); with {h2c}, HTTP/2 by
# prior knowledge (curl), as the suite's H2CPriorKnowledgeProtocol.
sub _http {
    my ($addr, $port, $req) = @_;
    return _https($addr, $port, $req) if $req->{sni} || $req->{h2c};
    my $sock = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port, Proto => 'tcp', Timeout => 10)
        or return (0, {}, "cannot connect to $addr:$port: $!");
    my $host = $req->{host} // "$addr:" . ($port - $Offset);
    my $head = ($req->{method} // 'GET') . " $req->{path} HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n"
             . "User-Agent: Go-http-client/1.1\r\n";
    my $headers = _request_headers($req);
    $head .= "$_: $headers->{$_}\r\n" for sort keys %$headers;
    print $sock "$head\r\n";
    local $/;
    my $raw = <$sock> // '';
    close $sock;
    my ($head_text, $body) = split /\r\n\r\n/, $raw, 2;
    my @lines = split /\r\n/, $head_text // '';
    my ($status) = (shift(@lines) // '') =~ m{^HTTP/1\.\d (\d{3})};
    my %h;
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        push @{$h{lc $k}}, $v;
    }
    return ($status // 0, \%h, $body // '');
}

sub _https {
    my ($addr, $port, $req) = @_;
    my @cmd = ('curl', '-sk', '-i', '--max-time', '10', '-X', $req->{method} // 'GET');
    if ($req->{h2c}) {
        push @cmd, '--http2-prior-knowledge', '-H', 'Host: ' . ($req->{host} // "$addr:" . ($port - $Offset));
    } else {
        push @cmd, '--resolve', "$req->{sni}:$port:$addr", '-H', 'Host: ' . ($req->{host} // $req->{sni});
        push @cmd, $req->{h2} ? '--http2' : '--http1.1';
    }
    my $headers = _request_headers($req);
    push @cmd, '-H', "$_: $headers->{$_}" for sort keys %$headers;
    push @cmd, $req->{h2c} ? "http://$addr:$port$req->{path}" : "https://$req->{sni}:$port$req->{path}";
    open my $fh, '-|', @cmd or return (0, {}, "curl: $!");
    local $/;
    my $raw = <$fh> // '';
    close $fh;
    my ($head_text, $body) = split /\r\n\r\n/, $raw, 2;
    my @lines = split /\r\n/, $head_text // '';
    my $status_line = shift(@lines) // '';
    my ($status) = $status_line =~ m{^HTTP/\S+ (\d{3})};
    return (0, {}, "HTTP/2 not negotiated: $status_line") if $req->{h2} && $status_line !~ m{^HTTP/2 };
    my %h;
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        push @{$h{lc $k}}, $v;
    }
    return ($status // 0, \%h, $body // '');
}

# HTTPRouteBackendProtocolWebSocket: a WebSocket opened through the
# Gateway to PATH echoes a text and a binary message (the suite's
# golang.org/x/net/websocket client): why not, or ''.
sub _websocket {
    my ($addr, $port, $req) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port, Proto => 'tcp', Timeout => 10)
        or return "cannot connect to $addr:$port: $!";
    binmode $sock;
    my $key = new_key();
    print $sock "GET $req->{path} HTTP/1.1\r\nHost: $addr:" . ($port - $Offset) . "\r\nUpgrade: websocket\r\n"
              . "Connection: Upgrade\r\nSec-WebSocket-Key: $key\r\nSec-WebSocket-Version: 13\r\n"
              . "Origin: ws://gateway/HTTPRouteBackendProtocolWebSocket\r\n\r\n";
    my $head = '';
    while ($head !~ /\r\n\r\n\z/) {
        defined(my $got = read $sock, $head, 1, length $head) or last;
        last unless $got;
    }
    my ($status) = $head =~ m{^HTTP/1\.1 (\d{3})};
    return "the handshake got " . ($status // 'no answer') . ", not 101" unless ($status // 0) == 101;
    my ($accept) = $head =~ /^Sec-WebSocket-Accept:\s*(\S+)/mi;
    return "the handshake's Sec-WebSocket-Accept is not the key's" unless ($accept // '') eq accept_key($key);
    for my $message ([1, 'Websocket Support!'], [2, pack('C*', 1 .. 7)]) {
        write_frame($sock, @$message, 1);
        $sock->flush;
        my ($opcode, $payload) = read_frame($sock);
        return "message $message->[1] was not echoed (got " . ($opcode // 'nothing') . ")"
            unless defined $opcode && $opcode == $message->[0] && $payload eq $message->[1];
    }
    write_frame($sock, 8, pack('n', 1000), 1);
    close $sock;
    return '';
}

# The suite's CompareRoundTrip (conformance/utils/http/http.go): why the
# response is not what EXPECTED says, or ''.
sub _compare {
    my ($req, $exp, $status, $headers, $body) = @_;
    my @want = ref $exp->{status} ? @{$exp->{status}} : ($exp->{status} // 200);
    return "expected status code to be one of [@want], got $status" unless grep { $_ == $status } @want;
    if ($status == 200) {
        # the suite's roundtripper reads an application/json answer as the
        # echo, and takes any other as the request made
        my $json = (($headers->{'content-type'} || [''])->[0] eq 'application/json');
        my $echo = $json ? eval { decode_json($body) }
                         : {method => $req->{method} // 'GET', path => '', host => '', namespace => '', pod => '',
                            headers => {}};
        return "the answer is not the echo server's: $body" unless $echo;
        # the request the backend must see: the one sent, unless said
        my $er = $exp->{request} // $req;
        my $path = $er->{path} // '';
        my $method = $er->{method} // 'GET';
        my $host = $er->{host};
        return "expected host to be $host, got $echo->{host}" if defined $host && $host ne '' && $host ne $echo->{host};
        return "expected path to be $path, got $echo->{path}" if $path ne $echo->{path};
        return "expected method to be $method, got $echo->{method}" if $method ne $echo->{method};
        my $ns = $exp->{namespace} // '';
        return "expected namespace to be $ns, got $echo->{namespace}" if $ns ne $echo->{namespace};
        my %got = map { lc($_) => join(',', @{$echo->{headers}{$_}}) } keys %{$echo->{headers}};
        for my $name (sort keys %{$er->{headers} || {}}) {
            return "expected $name header to be set" unless exists $got{lc $name};
            return "expected $name header to be set to $er->{headers}{$name}, got $got{lc $name}"
                if $got{lc $name} ne $er->{headers}{$name};
        }
        for my $name (@{$er->{absent} || []}) {
            return "expected $name header to not be set, got $got{lc $name}" if exists $got{lc $name};
        }
        for my $name (sort keys %{$exp->{response_headers} || {}}) {
            my $v = $headers->{lc $name};
            return "expected response header $name" unless $v;
            return "expected response header $name to be $exp->{response_headers}{$name}, got " . join(',', @$v)
                if join(',', @$v) ne $exp->{response_headers}{$name};
        }
        for my $name (@{$exp->{absent_response_headers} || []}) {
            return "expected response header $name to not be set" if $headers->{lc $name};
        }
        # ValidHeaderValues: the header's values, joined, are one of those
        # listed (whitespace aside under IgnoreWhitespace)
        my $strip = sub { my $v = shift; $v =~ s/\s+//g if $exp->{ignore_whitespace}; $v };
        for my $name (sort keys %{$exp->{valid_header_values} || {}}) {
            my $v = $headers->{lc $name} or return "expected response header $name";
            my $got = join(',', @$v);
            my @valid = @{$exp->{valid_header_values}{$name}};
            return "expected response header $name to be one of [" . join('; ', @valid) . "], got $got"
                unless grep { $strip->($_) eq $strip->($got) } @valid;
        }
        my $backend = $exp->{backend} // '';
        return "expected pod name to start with $backend, got $echo->{pod}" if index($echo->{pod}, $backend) != 0;
    } elsif ($status >= 300 && $status < 400 && $exp->{redirect}) {
        my $location = ($headers->{location} || [''])->[0];
        my ($scheme, $host, $port, $path) = $location =~ m{^(\w+)://([^/:]+)(?::(\d+))?(/[^?]*)?}
            or return "no absolute Location: $location";
        my $r = $exp->{redirect};
        my $want_host = $r->{host} // $host;
        return "expected redirected hostname to be $want_host, got $host" if $want_host ne $host;
        my $want_scheme = $r->{scheme} // 'http';
        return "expected redirected scheme to be $want_scheme, got $scheme" if lc $want_scheme ne lc $scheme;
        $port //= '';
        if (!defined $r->{port}) {
            return "for http scheme, expected redirected port to be 80 or not set, got $port"
                if lc $scheme eq 'http' && $port ne '' && $port ne '80';
            return "for https scheme, expected redirected port to be 443 or not set, got $port"
                if lc $scheme eq 'https' && $port ne '' && $port ne '443';
        } elsif ($r->{port} ne $port) {
            return "expected redirected port to be $r->{port}, got $port";
        }
        my $want_path = $r->{path} // ($req->{path} =~ s/\?.*//r);
        return "expected redirected path to be $want_path, got " . ($path // '') if $want_path ne ($path // '');
    }
    return '';
}

# gRPC calls, each [ADDRESS, PORT, REQUEST {grpc => METHOD, authority,
# metadata}], made by the suite's client (grpc-echo.py call) in one run;
# its results, in order.
sub _grpc_calls {
    my @calls = map {
        my ($addr, $port, $req) = @$_;
        {address => "$addr:$port", method => $req->{grpc},
         ($req->{authority} ? (authority => $req->{authority}) : ()), metadata => $req->{metadata} || {}}
    } @_;
    return () unless @calls;
    my $in = servroot() . "/grpc-calls.json";
    spit($in, encode_json(\@calls));
    # grpc's own log lines (a 404's text/html content type) go to stderr
    my $out = `$Python $GrpcEchoScript call < $in 2>$in.log`;
    my $results = eval { decode_json($out) };
    return map { {code => 'CLIENT', details => $out . slurp("$in.log")} } @calls unless ref $results eq 'ARRAY';
    return @$results;
}

# The suite's grpc compareResponse (conformance/utils/grpc/grpc.go): the
# status code (any but OK with {fails}), then for OK the method the
# backend saw, its namespace and pod. With {headers}, also the metadata the backend must have got (the
# suite lists them in its test cases; the stored source does not compare
# them).
sub _grpc_compare {
    my ($req, $exp, $got) = @_;
    if ($exp->{fails}) {  # the suite's MakeRequestAndExpectEventuallyConsistentFailure
        return $got->{code} eq 'OK' ? "expected the call to fail, it was answered by $got->{pod}" : '';
    }
    my $want = $exp->{code} // 'OK';
    return "expected status code to be $want, got $got->{code}" . ($got->{details} ? " ($got->{details})" : '')
        if $got->{code} ne $want;
    return '' unless $want eq 'OK';
    my $method = "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/$req->{grpc}";
    return "expected path to be $method, got $got->{method}" if $got->{method} ne $method;
    my $ns = $exp->{namespace} // '';
    return "expected namespace to be $ns, got $got->{namespace}" if $ns ne '' && $ns ne $got->{namespace};
    my $backend = $exp->{backend} // '';
    return "expected pod name to start with $backend, got $got->{pod}" if index($got->{pod}, $backend) != 0;
    my %seen;
    push @{$seen{lc $_->[0]}}, $_->[1] for @{$got->{headers}};
    for my $name (sort keys %{$exp->{headers} || {}}) {
        my $have = join ',', @{$seen{lc $name} || []};
        return "expected metadata $name to be $exp->{headers}{$name}, got '$have'" if $have ne $exp->{headers}{$name};
    }
    for my $name (@{$exp->{absent} || []}) {
        return "expected metadata $name to not be set, got " . join(',', @{$seen{lc $name}}) if $seen{lc $name};
    }
    return '';
}

# ---- status ----------------------------------------------------------------

sub _entries { my ($status, $key) = @_; join "\n", @{$status->{$key} || []} }

# GatewayAndHTTPRoutesMustBeAccepted and HTTPRouteMustHaveResolvedRefsConditionsTrue.
sub _accepted {
    my ($status, $gw, $refs, $kind, @routes) = @_;
    my @why;
    my $g = _entries($status, "Gateway $Infra/$gw");
    push @why, "Gateway $gw is not Programmed" unless $g =~ /^: Programmed=True/m;
    push @why, "Gateway $gw has no address" unless $g =~ /^address=/m;
    push @why, "Gateway $gw: $1" if $g =~ /^(.*stale.*)$/m;
    for my $route (@routes) {
        my ($ns, $name) = $route =~ m{/} ? split(m{/}, $route) : ($Infra, $route);
        my $r = _entries($status, "$kind $ns/$name");
        push @why, "$kind $name is not Accepted by $gw" unless $r =~ m{^\Q$Infra/$gw\E: Accepted=True/}m;
        push @why, "$kind $name: $1" if $r =~ /^(.*stale.*)$/m;
        push @why, "$kind $name refs are not resolved"
            if $refs && $r !~ m{^\Q$Infra/$gw\E: ResolvedRefs=True/}m;
    }
    return @why;
}

# A condition check: [KIND, NAME (NS/NAME, else in the infra namespace),
# PATTERN matched against its entries (read_status)].
sub _condition {
    my ($status, $check) = @_;
    my ($kind, $name, $pattern) = @$check;
    $name = "$Infra/$name" unless $name =~ m{/} || $kind eq 'GatewayClass';
    my $text = _entries($status, "$kind $name");
    return $text =~ $pattern ? () : ("$kind $name: no $pattern in\n$text");
}

# ---- the replay ------------------------------------------------------------

# What SPEC (a test, or one of its steps) asks of the served Gateways:
# statuses (accepted, admitted, conditions), then requests, on TRY (from
# 1) of _check_until_consistent; the reasons it fails.
sub _check {
    my ($spec, $status, $address, $try) = @_;
    my @why;
    for my $a (@{$spec->{accepted} || []}) {
        push @why, _accepted($status->{$a->[0]}, $a->[0], 1, @$a[1 .. $#$a]);
    }
    for my $a (@{$spec->{admitted} || []}) {
        push @why, _accepted($status->{$a->[0]}, $a->[0], 0, @$a[1 .. $#$a]);
    }
    for my $c (@{$spec->{conditions} || []}) {
        my ($gw, @check) = @$c;
        push @why, _condition($status->{$gw}, \@check);
    }
    my $k = 0;
    my @requests = @{$spec->{requests} || []};
    my @grpc = grep { $_->[2]{grpc} && $address->{$_->[0]} } @requests;
    my @grpc_results = _grpc_calls(map { [$address->{$_->[0]}, $_->[1] + $Offset, $_->[2]] } @grpc);
    for my $r (@requests) {
        my ($gw, $port, $req, $exp) = @$r;
        # a probe of the backend's retry simulation (counted per uuid) is a
        # new uuid each try, as the suite makes one per probe
        $req = {%$req, path => $req->{path} =~ s/\b(uuid=[^&]*)/$1-try$try/r} if ($try // 1) > 1 && $req->{path};
        $k++;
        my $addr = $address->{$gw} or do { push @why, "request $k: $gw has no address"; next };
        if ($req->{grpc}) {
            my $diff = _grpc_compare($req, $exp, shift @grpc_results);
            push @why, "request $k ($req->{grpc}" . ($req->{authority} ? " to $req->{authority}" : '') . "): $diff"
                if $diff;
            next;
        }
        if ($req->{websocket}) {
            my $diff = _websocket($addr, $port + $Offset, $req);
            push @why, "request $k (WebSocket $req->{path}): $diff" if $diff;
            next;
        }
        my $offsets = _log_offsets($exp->{mirrored_to} || []);
        my @answer = _http($addr, $port + $Offset, $req);
        my $diff = _compare($req, $exp, @answer);
        ($diff) = _mirrored($req->{path}, $exp->{mirrored_to}, $offsets) if !$diff && $exp->{mirrored_to};
        push @why, "request $k (" . ($req->{method} // 'GET') . " " . ($req->{host} // '') . "$req->{path}): $diff"
            if $diff;
    }
    for my $d (@{$spec->{distributions} || []}) {
        push @why, _distribution($address, @$d);
    }
    for my $h (@{$spec->{header_names_pod} || []}) {
        push @why, _header_names_pod($address, @$h);
    }
    for my $m (@{$spec->{mirror_shares} || []}) {
        push @why, _mirror_share($address, @$m);
    }
    return @why;
}

# HTTPRouteRequestHeaderModifierBackendWeights: each of TOTAL requests
# reaches the backend with exactly one HEADER, and the pod that answered
# is the one it names.
sub _header_names_pod {
    my ($address, $gw, $port, $req, $total, $header) = @_;
    my $addr = $address->{$gw} or return "$gw has no address";
    for my $i (1 .. $total) {
        my ($status, undef, $body) = _http($addr, $port + $Offset, $req);
        return "request $i: status $status" if $status != 200;
        my $echo = eval { decode_json($body) } or return "request $i: not the echo server's answer";
        my @values = @{$echo->{headers}{$header} || []};
        return "request $i: expected a single '$header' header to have been set, got " . @values if @values != 1;
        return "request $i: the pod $echo->{pod} is not the one $header names ($values[0])"
            if index($echo->{pod}, $values[0]) != 0;
    }
    return ();
}

# The suite's testDistribution (httproute-weight.go): TOTAL requests, the
# share each backend got within TOLERANCE of WEIGHTS ({backend => share}),
# no other backend; tried up to ten times, as there.
sub _distribution {
    my ($address, $gw, $port, $req, $weights, $total, $tolerance) = @_;
    my $addr = $address->{$gw} or return "distribution: $gw has no address";
    my $last = '';
    for my $try (1 .. 10) {
        my (%seen, @errors);
        # gRPC: all calls in one run of the client (testGRPCDistribution)
        my @grpc = $req->{grpc} ? _grpc_calls(map { [$addr, $port + $Offset, $req] } 1 .. $total) : ();
        for (1 .. $total) {
            my $echo;
            if ($req->{grpc}) {
                my $r = shift @grpc;
                push @errors, "expected OK response, got $r->{code}" if $r->{code} ne 'OK';
                $echo = $r if $r->{code} eq 'OK';
            } else {
                my ($status, $headers, $body) = _http($addr, $port + $Offset, $req);
                push @errors, "status $status" if $status != 200;
                $echo = $status == 200 ? eval { decode_json($body) } : undef;
            }
            last unless $echo;
            my ($backend) = grep { index($echo->{pod}, $_) == 0 } keys %$weights;
            if (!defined $backend) {
                push @errors, "request was handled by an unexpected pod $echo->{pod}";
                last;
            }
            $seen{$backend}++;
        }
        for my $backend (sort keys %$weights) {
            my $got = ($seen{$backend} // 0) / $total;
            push @errors, sprintf("backend %s got %.3f of the traffic, not %.2f +/- %.2f",
                                  $backend, $got, $weights->{$backend}, $tolerance)
                if abs($got - $weights->{$backend}) > $tolerance;
        }
        return () unless @errors;
        $last = join '; ', @errors;
    }
    return "distribution: $last";
}

# Renders and serves every Gateway of TEST (stopping what ran before);
# returns (status by Gateway, address by Gateway) or the reason it cannot.
sub _serve {
    my ($test, $keep_running) = @_;
    _stop_gateways() unless $keep_running;
    my (%status, %address);
    my $n = 2;
    for my $gw (@{$test->{gateways}}) {
        my $st = _serve_gateway($test, $gw, "127.0.0.$n") or return "$gw is not served";
        $status{$gw} = $st;
        ($address{$gw}) = map { /^address=(\S+)/ ? $1 : () } @{$st->{"Gateway $Infra/$gw"} || []};
        $n++;
    }
    return (\%status, \%address);
}

# _check of SPEC asked again for up to 5 s until it passes, as the suite
# makes each request until its answer is the one expected
# (MakeRequestAndExpectEventuallyConsistentResponse): a connection the
# client could not make, or an answer that raced a timer, is asked again
# there too. The reasons of the last try.
sub _check_until_consistent {
    my ($spec, $status, $address) = @_;
    my $deadline = time + 5;
    my ($try, @why) = (0);
    do {
        @why = _check($spec, $status, $address, ++$try);
        sleep 0.2 if @why;
    } while (@why && time < $deadline);
    return @why;
}

# Runs TEST; returns the reasons it fails (none: passed). Its steps are the
# edits a Go test makes to objects it applied: each edits the manifests
# (a new generation of an object), which are rendered anew and reloaded
# into the nginx serving them; each check is _check_until_consistent.
sub _run_test {
    my ($test) = @_;
    _stop_gateways() if $Run;  # a run still watching would apply the next test's manifests
    unlink glob("$Dir/1*.yaml");
    my $i = 0;
    for my $m (@{$test->{manifests}}) {
        (my $text = slurp("$Shared/tests/$m.yaml")) =~ s/\{GATEWAY_CLASS_NAME\}/gateway2nginx/g;
        $text =~ s/\{GATEWAY_CONTROLLER_NAME\}/gateway2nginx.io\/controller/g;
        $text = _fill_endpoint_slices($text, $test->{endpoint_slices}) if $test->{endpoint_slices};
        $text = $test->{prepare}->($text) if $test->{prepare};
        spit(sprintf("%s/1%d-%s.yaml", $Dir, $i++, $m), $text);
    }
    my ($status, $address) = _serve($test);
    return ($status) unless ref $status;
    my $first = $status->{$test->{gateways}[0]};
    my @why;
    push @why, "GatewayClass is not Accepted"
        unless _entries($first, "GatewayClass gateway2nginx") =~ /^: Accepted=True/m;
    push @why, _check_until_consistent($test, $status, $address);
    my $step = 0;
    for my $s (@{$test->{steps} || []}) {
        $step++;
        $Edited = 0;
        for my $file (glob("$Dir/1*.yaml")) {
            my $text = slurp($file);
            my $edited = $s->{edit}->($text);
            next if $edited eq $text;
            # written aside and renamed: a run watching never reads half of it
            put_file($Dir, $file =~ s{.*/}{}r, $edited);
            $Edited++;
        }
        ($status, $address) = _serve({%$test, requests => $s->{requests}}, 1);
        return (@why, "step $step: $status") unless ref $status;
        push @why, map { "step $step: $_" } _check_until_consistent($s, $status, $address);
    }
    return @why;
}

# Replays TESTS (the data of t/conformance/*.pl), served as
# conformance_mode() says; routes => 'table' serves their routes through
# the module's route table. Its results are recorded, but for rendered
# route tables (t/401: the render report is of rendered locations, t/400's;
# run serves its routes through the table, t/402).
sub replay {
    my ($tests, %opts) = @_;
    $Routes = $opts{routes} // 'locations';
    $Run = conformance_mode() eq 'run';
    my $record = $Routes eq 'locations' || $Run;
    ($Shared, $Dir) = conformance_begin();
    $Offset = server_port() + 30 - 443;  # 80 -> base-333, 443 -> base+30, 8080 -> base+7667
    my $setup = conformance_setup();
    $setup .= tls_secret_yaml('tls-validity-checks-certificate', 'leaf');
    $setup .= tls_secret_yaml('certificate', 'leaf', 'gateway-conformance-web-backend');
    conformance_manifests($Shared, $Dir);  # 00-base.yaml
    # tests newer than the suite's release: not run, not counted
    # (each with the features and manifests the suite declares)
    my @declared;
    for my $test (@$tests) {
        my $d = declared(@$test{qw(name features manifests)});
        $d ? push(@declared, {%$test, %$d{qw(features manifests)}}) : note("$test->{name}: not in the suite at $Shared");
    }
    $tests = \@declared;
    my $all = slurp("$Dir/00-base.yaml");
    $all .= slurp("$Shared/tests/$_.yaml") for map { @{$_->{manifests}} } @$tests;
    $setup .= _echo_endpoints($all);
    spit("$Dir/05-suite-setup.yaml", $setup);
    _start_echo();

    my %results;  # name -> [passed, failed or skipped, reasons]
    my $supported;
    for my $test (@$tests) {
        my @why = _run_test($test);
        if (!$supported) {
            my $out = _out_dir($test, $test->{gateways}[0]);
            my $st = -f "$out/status.yaml" ? read_status("$out/status.yaml") : {};
            $supported = [map { /^supportedFeature=(\S+)/ ? $1 : () } @{$st->{'GatewayClass gateway2nginx'} || []}];
            record_supported_features($supported) if $record;
        }
        my %have = map { $_ => 1 } @$supported;
        my @missing = grep { !$have{$_} } @{$test->{features}};
        if (@missing) {
            $results{$test->{name}} = ['skipped', "unsupported features: @missing"];
            note("$test->{name}: skipped (unsupported: @missing)");
        } else {
            ok(!@why, "$test->{name}") or diag(join "\n", map { "  $_" } @why);
            $results{$test->{name}} = [@why ? 'failed' : 'passed', join('; ', @why)];
        }
        record_result($test->{name}, $test->{features}, $test->{manifests}, @{$results{$test->{name}}}) if $record;
    }
    _stop_gateways();
    return \%results;
}

1;
