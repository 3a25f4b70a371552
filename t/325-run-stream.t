# gateway2nginx run beside nginx, for stream backends (issue 20): the
# EndpointSlice changes of a Service behind a TLS Terminate listener (its
# backend under a BackendTLSPolicy, re-encrypted by the stream module), of
# one behind a Passthrough listener, of one behind a TCP listener
# (TCPRoute) and of one behind a UDP listener (UDPRoute) reach nginx through
# gateway_tls_upstream_api ("stream_upstreams") with no reload, scaling to
# zero and back included; an endpoint pushed that way is verified under
# the policy as a configured one is; and a rotation of the policy's CA
# ConfigMap is pushed as the policy's trust, no reload either.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Select;
use IO::Socket::INET;
use Time::HiRes qw(sleep time);

plan 'no_plan';
setup();
my $dir = servroot();
my $certs = certs_dir();
my $ns = 'gateway-conformance-infra';
my $backend_port = server_port() + 1;   # every endpoint listens on 127.0.0.N:this
my $udp_backend_port = server_port() + 2;   # and for datagrams on this
my $offset = server_port() + 20 - 443;
my $terminate = 443 + $offset;
my $passthrough = 444 + $offset;
my $tcp = 445 + $offset;
my $udp = 446 + $offset;
my $api_port = server_port() + 18;
my $module_dir = module_dir();
my $bin = $ENV{GATEWAY2NGINX} || 'build/gateway2nginx';

# ---- endpoints on 127.0.0.1 to 127.0.0.7, one port: TLS that says who it is;
# the seventh's certificate does not name abc.example.com
make_path("$dir/backends/logs", "$dir/backends/tmp", "$dir/tmp");
my $servers = join '', map { my $cert = $_ == 7 ? 'wrongsan' : 'leaf'; <<"EOF" } 1 .. 7;
    server {
        listen 127.0.0.$_:$backend_port ssl;
        ssl_certificate $certs/$cert.crt;
        ssl_certificate_key $certs/$cert.key;
        return "endpoint=127.0.0.$_\\n";
    }
    server {
        listen 127.0.0.$_:$udp_backend_port udp;
        return "endpoint=127.0.0.$_\\n";
    }
EOF
my $stream_load = nginx_stream_module();
spit("$dir/backends/nginx.conf", <<"EOF");
$stream_load
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 256; }
stream {
$servers
}
EOF
start_nginx("$dir/backends", 'nginx.conf', $backend_port);

sub slice_yaml {
    my ($service, @hosts) = @_;
    my $port = $service eq 'datagrams' ? $udp_backend_port : $backend_port;
    my $addresses = join ', ', map { "\"127.0.0.$_\"" } @hosts;
    my $endpoints = @hosts ? "[{addresses: [$addresses]}]" : '[]';   # none: a Service scaled to zero
    return <<"YAML";
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $service-abc
  namespace: $ns
  labels: {kubernetes.io/service-name: $service}
ports: [{name: tls, port: $port}]
endpoints: $endpoints
YAML
}
my $base = conformance_setup() . tls_secret_yaml('cert-abc', 'leaf') . <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: $ns}
spec:
  gatewayClassName: gateway2nginx
  listeners:
  - {name: term, port: 443, protocol: TLS, hostname: abc.example.com, tls: {mode: Terminate, certificateRefs: [{name: cert-abc}]}}
  - {name: pass, port: 444, protocol: TLS, hostname: abc.example.com, tls: {mode: Passthrough}}
  - {name: tcp, port: 445, protocol: TCP}
  - {name: udp, port: 446, protocol: UDP}
---
apiVersion: v1
kind: Service
metadata: {name: bytes, namespace: $ns}
spec:
  ports: [{name: tls, port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: datagrams, namespace: $ns}
spec:
  ports: [{name: tls, port: 5432, protocol: UDP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: bytes, namespace: $ns}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules: [{backendRefs: [{name: bytes, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: datagrams, namespace: $ns}
spec:
  parentRefs: [{name: gw, sectionName: udp}]
  rules: [{backendRefs: [{name: datagrams, port: 5432}]}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: $ns}
spec:
  ports: [{name: tls, port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: pass, namespace: $ns}
spec:
  ports: [{name: tls, port: 5432}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: db-tls, namespace: $ns}
spec:
  targetRefs: [{group: "", kind: Service, name: db}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: db-ca}]
    hostname: abc.example.com
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db, namespace: $ns}
spec:
  parentRefs: [{name: gw, sectionName: term}]
  hostnames: [abc.example.com]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: pass, namespace: $ns}
spec:
  parentRefs: [{name: gw, sectionName: pass}]
  hostnames: [abc.example.com]
  rules: [{backendRefs: [{name: pass, port: 5432}]}]
YAML

# the policy's CA ConfigMap, in a file of its own: changed below
sub ca_yaml { my $pem = join '', map { slurp("$certs/$_") } @_; $pem =~ s/^/    /mg;
              return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db-ca, namespace: $ns}\ndata:\n  ca.crt: |\n$pem" }
sub put { put_file("$dir/manifests", @_) }
make_path("$dir/manifests");
put('base.yaml', $base);
put('ca.yaml', ca_yaml('ca.crt'));
put('db.yaml', slice_yaml('db', 1, 2));
put('pass.yaml', slice_yaml('pass', 3));
put('bytes.yaml', slice_yaml('bytes', 4));
put('datagrams.yaml', slice_yaml('datagrams', 5));

my $log = "$dir/run.log";
my $run = fork // die;
if ($run == 0) {
    open STDERR, '>>', $log or die;
    exec($bin, 'run', '-f', "$dir/manifests", '-o', "$dir/out", '--reload', "$dir/out/nginx.pid",
         '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset, '--listen-address', '127.0.0.1',
         '--module-dir', $module_dir, '--status-listen', 'off', '--debounce', '100', @Test::GatewayTLS::TestEndpoints) or die;
}
sub count_in_log { count_in($log, shift) }
# the endpoint a new connection to PORT reaches ("(closed)": none)
sub endpoint { my $said = tls_exchange(shift, 'abc.example.com', "hello\n"); return $said =~ /endpoint=(\S+)/ ? $1 : '(closed)' }
sub endpoints_seen { my $port = shift; my %seen; $seen{endpoint($port)}++ for 1 .. 12; return join ' ', sort keys %seen }
# the same through the UDP listener: 12 datagrams, each from a socket of
# its own, sent at once; the endpoints that answered within 0.5 s
# ("(closed)" for a datagram nobody answered)
sub datagram_endpoints_seen {
    my @socks = map { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $udp, Proto => 'udp') or die $! } 1 .. 12;
    $_->send("hello\n") for @socks;
    my (%seen, %answered);
    my $select = IO::Select->new(@socks);
    my $deadline = time + 0.5;
    while (keys %answered < @socks && time < $deadline) {
        for my $sock ($select->can_read($deadline - time)) {
            $sock->recv(my $said, 1024);
            $answered{fileno $sock} = 1;
            $select->remove($sock);
            $seen{$said =~ /endpoint=(\S+)/ ? $1 : '(closed)'}++;
        }
    }
    $seen{'(closed)'}++ if keys %answered < @socks;
    return join ' ', sort keys %seen;
}

ok(wait_for(sub { -f "$dir/out/nginx.conf" }), 'gateway2nginx run writes the configuration') or diag slurp($log);
start_nginx("$dir/out", 'nginx.conf', $api_port);
my $master = slurp("$dir/out/nginx.pid");
chomp $master;
my $workers = worker_pids($master);
is(endpoints_seen($terminate), '127.0.0.1 127.0.0.2', 'Terminate: traffic reaches the endpoints of its EndpointSlice');
is(endpoints_seen($passthrough), '127.0.0.3', 'Passthrough: likewise');
is(endpoints_seen($tcp), '127.0.0.4', 'TCP (TCPRoute): likewise, bytes untouched');
is(datagram_endpoints_seen(), '127.0.0.5', 'UDP (UDPRoute): likewise');
my $stream_conf = slurp("$dir/out/stream.conf");
is(scalar(() = $stream_conf =~ /^    zone gateway2nginx_stream_servers_$ns;$/mg), 4, 'the four upstreams have their servers in the stream zone');

# [Terminate's endpoints], [Passthrough's]: one Service changes at a time;
# the TCP and UDP listeners' Services follow the Passthrough one's
my @changes = ([[3], [3]], [[3, 4, 5], [3]], [[3, 4, 5], [1, 2]], [[], [1, 2]], [[6], [1, 2]], [[6], []],
               [[1, 6], [4]], [[2], [4]], [[2], [5, 6]]);
my ($served, $slowest) = (0, 0);
for my $i (0 .. $#changes) {
    my ($db, $pass) = @{$changes[$i]};
    my $pushed = count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/);
    my $start = time;
    put('db.yaml', slice_yaml('db', @$db));
    put('pass.yaml', slice_yaml('pass', @$pass));
    put('bytes.yaml', slice_yaml('bytes', @$pass));
    put('datagrams.yaml', slice_yaml('datagrams', @$pass));
    my $want = sub { @_ ? join(' ', map { "127.0.0.$_" } @_) : '(closed)' };   # no endpoints: closed, fail closed
    if (wait_for(sub { endpoints_seen($terminate) eq $want->(@$db) && endpoints_seen($passthrough) eq $want->(@$pass)
                       && endpoints_seen($tcp) eq $want->(@$pass) && datagram_endpoints_seen() eq $want->(@$pass) }, 30)) {
        $served++;
        $slowest = time - $start if time - $start > $slowest;
    } else {
        diag "change $i: wanted @{[$want->(@$db)]} / @{[$want->(@$pass)]} (and TCP, UDP), got "
             . endpoints_seen($terminate) . ' / ' . endpoints_seen($passthrough) . ' / ' . endpoints_seen($tcp)
             . ' / ' . datagram_endpoints_seen();
    }
    wait_for(sub { count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/) > $pushed }, 2);
}
diag sprintf('the slowest EndpointSlice change served in %.0f ms (debounce 100 ms)', $slowest * 1000);
is($served, scalar @changes, 'every EndpointSlice change of a TLSRoute, TCPRoute and UDPRoute backend reached the traffic, exactly its endpoints');
ok(count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/) >= scalar @changes,
   'each was pushed through the upstream API');
is(worker_pids($master), $workers, 'and nginx never reloaded: the same workers');
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');
# OUTDIR catches up after a quiet spell (2 s), not at each push
ok(wait_for(sub { slurp("$dir/out/stream.conf") =~ /server "?127\.0\.0\.5:$backend_port"?;/ }, 10), 'OUTDIR holds the latest servers');

# an endpoint whose certificate does not name the policy's hostname
put('db.yaml', slice_yaml('db', 7));
put('pass.yaml', slice_yaml('pass', 7));
ok(wait_for(sub { endpoint($passthrough) eq '127.0.0.7' }, 5), 'pushed: the Passthrough route reaches it (no policy)');
is(endpoints_seen($terminate), '(closed)', 'the Terminate route\'s policy refuses it: closed, never plaintext or unverified');
like(slurp("$dir/out/logs/error.log"), qr/gateway_tls: .*127\.0\.0\.7:$backend_port/, 'and the log says why');
put('db.yaml', slice_yaml('db', 1));
ok(wait_for(sub { endpoints_seen($terminate) eq '127.0.0.1' }, 5), 'a verified endpoint pushed again serves');
is(worker_pids($master), $workers, 'still the same workers');
is(count_in_log(qr/nginx reloaded/), 0, 'still no reload');

# a CA rotation: the ConfigMap's bundle changes, the stream policy's trust follows with no reload
my $trust_pushed = count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/);
put('ca.yaml', ca_yaml('unrelated-ca.crt'));
ok(wait_for(sub { endpoints_seen($terminate) eq '(closed)' }, 5),
   'a CA ConfigMap that no longer holds the endpoints\' CA: every connection refused at once');
put('ca.yaml', ca_yaml('unrelated-ca.crt', 'ca.crt'));
ok(wait_for(sub { endpoints_seen($terminate) eq '127.0.0.1' }, 5), 'a bundle of both CAs: served again');
is(count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/), $trust_pushed + 2,
   'each CA change was pushed through the upstream API');
is(worker_pids($master), $workers, 'and nginx never reloaded for them');
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');
stop_nginx("$dir/out");
stop_nginx("$dir/backends");
