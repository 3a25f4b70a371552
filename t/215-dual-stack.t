# --listen-address 0.0.0.0 --listen-address ::: listeners on every IPv4 and
# every IPv6 address, an HTTP listener (http.conf) and a TCP one
# (stream.conf): nginx binds both, clients of either family are served,
# each with its own address ($remote_addr: 127.0.0.1 and ::1, never an
# IPv4-mapped one). In a network namespace of its own, where every
# address is loopback.
use lib 't/lib';
use strict;
use warnings;
use Test::GatewayTLS;
use Test::More;
use IO::Socket::IP;

plan skip_all => 'needs root (a network namespace of its own)' if $> != 0;
plan skip_all => 'unshare or ip not installed' if system('command -v unshare >/dev/null && command -v ip >/dev/null') != 0;
unless ($ENV{GTLS_DUAL_STACK_NETNS}) {
    $ENV{GTLS_DUAL_STACK_NETNS} = 1;
    exec('unshare', '--net', '--', $^X, '-Mlib=t/lib', $0) or die "unshare: $!";
}
system('ip link set lo up') == 0 or die "cannot bring lo up\n";
plan skip_all => 'no IPv6 in this network namespace (::1)'
    unless IO::Socket::IP->new(LocalHost => '::1', LocalPort => 0, Listen => 1);
plan 'no_plan';
setup();
my $dir = servroot();
my $slow_port = server_port() + 1;
my $offset = server_port() + 20 - 80;
my ($http, $tcp) = (80 + $offset, 81 + $offset);
my $backend = start_slow_backend('127.0.0.1', $slow_port, "$dir/slow.accepted");

my $yaml = slow_app_manifests($slow_port, '/fast') . <<'YAML';
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: bytes, namespace: ns}
spec:
  gatewayClassName: ours
  listeners:
  - {name: tcp, port: 81, protocol: TCP}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: bytes, namespace: ns}
spec:
  parentRefs: [{name: bytes, sectionName: tcp}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
YAML
spit("$dir/in.yaml", $yaml);
my ($rc, $out) = run_generator('-f', "$dir/in.yaml", '-o', "$dir/out", '--port-offset', $offset,
                               '--listen-address', '0.0.0.0', '--listen-address', '::', '--module-dir', module_dir(),
                               '--check', '--status-listen', 'off');
is($rc, 0, 'gateway2nginx writes a dual-stack configuration nginx -t takes') or diag $out;
like(slurp("$dir/out/http.conf"), qr/listen 0\.0\.0\.0:$http default_server;\n    listen "\[::\]:$http" default_server;/, 'http.conf: the listener on both');
like(slurp("$dir/out/stream.conf"), qr/listen 0\.0\.0\.0:$tcp;\n    listen "\[::\]:$tcp";/, 'stream.conf: the TCP listener too');
start_nginx("$dir/out", 'nginx.conf', $http);

sub get { scalar `curl -s -g -m 10 -H 'Host: localhost' http://$_[0]:$_[1]/fast` }
for my $address ('127.0.0.1', '[::1]') {
    is(get($address, $http), 'fast', "HTTP over $address");
    is(get($address, $tcp), 'fast', "TCP over $address (the TCPRoute)");
}
my @clients = map { (split ' ')[0] } split /\n/, slurp("$dir/out/logs/access.log") // '';
is(join(' ', sort { $a cmp $b } keys %{ { map { ($_ => 1) } @clients } }), '127.0.0.1 ::1',
   'each client with its own address, never an IPv4-mapped one');

($rc, $out) = run_generator('-f', "$dir/in.yaml", '-o', "$dir/out2", '--listen-address', '0.0.0.0',
                            '--listen-address', '10.0.0.1');
is($rc, 1, '--listen-address twice, but not as 0.0.0.0 and ::: a usage error');
like($out, qr/--listen-address is given twice only as 0\.0\.0\.0 and ::/, 'said so');

stop_nginx("$dir/out");
kill 'KILL', $backend;
waitpid($backend, 0);
