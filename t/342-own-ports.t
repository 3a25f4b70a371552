# The gateway's own ports stay its own, and one client cannot hold its
# probes (issue 51, findings 2, 3 and 5). Every option of `gateway2nginx
# run --help` that listens (ADDR:PORT) is given a port here; a tenant's
# Gateway with a listener on each of them gets PortUnavailable, nginx
# starts and serves beside it, and a route whose endpoint is one of them
# serves nothing of it. Then 70 connections from one address, each
# trickling a byte now and then, hold no probe: /healthz and /readyz answer
# every other client, while that address gets no more than its share, and a
# request trickled in is cut off when it is not whole within 10 s. The
# liveness heartbeat (--alive-file, `gateway2nginx alive`) needs no port.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my %own = (
    '--upstream-api'   => server_port() + 18,
    '--status-listen'  => server_port() + 19,
    '--health-listen'  => server_port() + 17,
    '--metrics-listen' => server_port() + 15,
);
my $bin = $ENV{GATEWAY2NGINX} || 'build/gateway2nginx';
my @listening = `$bin run --help` =~ /^\s+(--[a-z-]+) ADDR:PORT$/mg;
is_deeply([sort @listening], [sort keys %own], 'every option that listens is given a port here: ' . join(' ', sort @listening));

my $backend_port = backend_port('leaf');
my $yaml = routes_from_all_namespaces(gateway_manifests(web => 'leaf'));
my $squat_listeners = join '', map { "  - {name: l" . ($own{$_} - $offset) . ", port: " . ($own{$_} - $offset)
                                     . ", protocol: HTTP, hostname: squat.example.com}\n" } sort keys %own;
$yaml .= <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: squat, namespace: tenant}
spec:
  gatewayClassName: ours
  listeners:
$squat_listeners  - {name: free, port: 81, protocol: HTTP, hostname: squat.example.com}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{path: {value: /web}}], backendRefs: [{name: web, port: 443}]}]
YAML
for my $flag (sort keys %own) {
    (my $name = $flag) =~ s/^--//;
    $yaml .= <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: $name, namespace: tenant}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: $name-1, namespace: tenant, labels: {kubernetes.io/service-name: $name}}
ports: [{name: http, port: $own{$flag}}]
endpoints: [{addresses: ["127.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: $name, namespace: tenant}
spec:
  parentRefs: [{name: gw, namespace: ns}]
  rules: [{matches: [{path: {value: /$name}}], backendRefs: [{name: $name, port: 80}]}]
YAML
}
my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
put_file($in, 'all.yaml', $yaml);
start_backends();

my $log = "$dir/run.log";
my $run = start_run($log, '-f', $in, '-o', $out, '--start-nginx', '--nginx', nginx_binary(),
                    '--port-offset', $offset, '--listen-address', '127.0.0.1', '--module-dir', module_dir(),
                    '--debounce', '100', '--alive-file', "$dir/alive", map { ($_, "127.0.0.1:$own{$_}") } sort keys %own);
sub probe {
    my ($path, $port_of) = @_;
    return scalar `curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:$own{$port_of // '--health-listen'}$path`;
}
ok(wait_for(sub { probe('/readyz') eq '200' }, 30), 'nginx starts, and serves a complete configuration') or diag slurp($log);
my ($code) = request($port, 'GET', '/web', 'Host: localhost');
is($code, 200, 'the Gateway beside the squatter serves');

# ---- finding 3: no listener takes an operator interface's port -------------
my $status = read_status("$out/status.yaml");
for my $flag (sort keys %own) {
    my $listener = 'l' . ($own{$flag} - $offset);
    ok((grep { $_ eq "listener $listener: Accepted=False/PortUnavailable" } @{$status->{'Gateway tenant/squat'}}),
       "a tenant's listener on $flag\'s port is PortUnavailable");
    unlike(slurp("$out/http.conf"), qr/listen 127\.0\.0\.1:$own{$flag}\b(?! ssl)[^;]*;\s*server_name squat/,
           'and not rendered');
}
ok((grep { $_ eq 'listener free: Accepted=True/Accepted' } @{$status->{'Gateway tenant/squat'}}),
   'its listener on a free port is accepted');
like(slurp("$out/status.yaml"), qr/port \d+ is an operator interface's \(--health-listen\)/, 'the refusal names the interface');

# ---- finding 5: no route reaches one --------------------------------------
for my $flag (sort keys %own) {
    (my $name = $flag) =~ s/^--//;
    like(slurp($log), qr/EndpointSlice tenant\/$name-1: endpoint 127\.0\.0\.1:$own{$flag} is not served: it is the gateway's own address and port/,
         "an endpoint at $flag\'s port is refused, and said");
    my ($c, undef, $body) = request($port, 'GET', "/$name", 'Host: localhost');
    like($c, qr/^5\d\d$/, "GET /$name through the gateway: $c");
    unlike($body, qr/gateway2nginx_|"upstreams"|"policies"/, 'and none of the interface\'s answer');
}
is(probe('/metrics', '--metrics-listen'), '200', '/metrics answers on --metrics-listen');
is(probe('/metrics'), '404', 'and not beside the probes');
is(probe('/healthz', '--metrics-listen'), '404', 'the probes are not on the metrics port');

# ---- finding 2: one address cannot hold the probes -------------------------
# 70 connections from 127.0.0.2, each sends a byte of a request at once and
# one more every second, until stopped
my $holder = fork // die;
if ($holder == 0) {
    $SIG{PIPE} = 'IGNORE';
    my @held = grep { defined } map {
        IO::Socket::INET->new(PeerAddr => "127.0.0.1:$own{'--health-listen'}", LocalAddr => '127.0.0.2')
    } 1 .. 70;
    my $request = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " . ('a' x 10000);
    for my $i (0 .. length($request) - 1) {
        syswrite($_, substr($request, $i, 1)) for @held;
        sleep 1;
    }
    POSIX::_exit(0);
}
track_child($holder);
# the holder has its connections: as many as one address may have are open
sub held {
    my $hex = sprintf '0200007F:%04X', 0;
    my $target = sprintf ':%04X', $own{'--health-listen'};
    return scalar grep { my @f = split ' '; ($f[1] // '') =~ /^0200007F:/ && ($f[2] // '') =~ /\Q$target\E$/ && ($f[3] // '') eq '01' }
        split /\n/, slurp('/proc/net/tcp');
}
ok(wait_for(sub { held() >= 8 }, 10), 'the holder keeps connections open (' . held() . ')');
my @answers = map { probe($_ % 2 ? '/readyz' : '/healthz') } 1 .. 4;
is("@answers", '200 200 200 200', 'four probes from another address, each answered 200');
sub probe_from_holder {
    return scalar `curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 127.0.0.2 http://127.0.0.1:$own{'--health-listen'}/healthz`;
}
my $own_share = probe_from_holder();
isnt($own_share, '200', "the holder's address gets nothing more ($own_share)");
ok(kill(0, $holder) && waitpid($holder, WNOHANG) == 0, 'while it still holds its share');
kill 'KILL', $holder;
waitpid($holder, 0);
ok(wait_for(sub { probe_from_holder() eq '200' }, 10),
   'once it lets go, that address is answered again');

# one connection trickling a request, a byte every half second (never idle
# for 5 s): closed before it completes, kRequestSeconds (10) after it opened
{
    my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$own{'--health-listen'}", LocalAddr => '127.0.0.3')
        or die "cannot connect: $!";
    local $SIG{PIPE} = 'IGNORE';
    my $request = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " . ('a' x 1000);
    my ($closed, $got, $sent) = (0, '', 0);
    my $start = time;
    while (!$closed && time - $start < 40) {
        $closed = 1 unless defined syswrite($c, substr($request, $sent++ % length($request), 1));
        my $in = '';
        vec($in, fileno($c), 1) = 1;
        if (select($in, undef, undef, 0.5) > 0) {
            my $n = sysread($c, my $buf, 4096);
            $closed = 1 if !$n;
            $got .= $buf // '';
        }
    }
    ok($closed, sprintf('a request trickled a byte every 0.5 s is cut off (after %.1f s, %d bytes)', time - $start, $sent));
    is($got, '', 'unanswered');
}

# ---- liveness with no port: the heartbeat file -----------------------------
sub alive { system("$bin alive '$dir/alive' " . ($_[0] // '') . ' 2>/dev/null') >> 8 }
is(alive(), 0, 'gateway2nginx alive: the main loop turns');
kill 'STOP', $run;
ok(wait_for(sub { alive(2) == 1 }, 20), 'stopped, it is not alive within 2 s');
kill 'CONT', $run;
ok(wait_for(sub { alive(2) == 0 }, 20), 'going again, it is');
is(alive(), 0, 'and within the default 30 s');

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
