# Terminate listeners of one TLS port, each with its own certificate and
# its own routes, one with a BackendTLSPolicy and one without, rendered by
# gateway2nginx and served by real nginx. Each client gets the certificate
# of the listener its SNI names, and each backend what it expects (TLS under
# its policy, or plaintext), on every nginx: from 1.25.5 nginx picks a
# stream server per hostname (server_name); before, the port reads the SNI
# (ssl_preread) and sends each hostname, still encrypted, to a terminating
# server of its own on a loopback address.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

setup();
my $certs = certs_dir();
my $dir = servroot();
my $manifests = "$dir/manifests";
mkdir $manifests or die "$manifests: $!";
my $ns = 'gateway-conformance-infra';
my $servers_by_name = nginx_version() >= 1025005;

my $yaml = conformance_setup() . tls_secret_yaml('cert-abc', 'leaf') . tls_secret_yaml('cert-wrong', 'wrongsan');
$yaml .= <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: tcp-backend, namespace: $ns}
spec:
  ports: [{name: tls, port: 8443}, {name: plain, port: 3000}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: tcp-backend-local
  namespace: $ns
  labels: {kubernetes.io/service-name: tcp-backend}
addressType: IPv4
ports: [{name: tls, port: @{[backend_port('tcp_tls')]}}, {name: plain, port: @{[backend_port('tcp')]}}]
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: tcp-backend-tls, namespace: $ns}
spec:
  targetRefs: [{group: "", kind: Service, name: tcp-backend, sectionName: tls}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: tls-checks-ca-certificate}]
    hostname: abc.example.com
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: two-certificates, namespace: $ns}
spec:
  gatewayClassName: gateway2nginx
  listeners:
  - name: abc
    port: 443
    protocol: TLS
    hostname: abc.example.com
    tls: {mode: Terminate, certificateRefs: [{name: cert-abc}]}
  - name: wrong
    port: 443
    protocol: TLS
    hostname: wrong.example.com
    tls: {mode: Terminate, certificateRefs: [{name: cert-wrong}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: to-tls, namespace: $ns}
spec:
  parentRefs: [{name: two-certificates, sectionName: abc}]
  hostnames: [abc.example.com]
  rules: [{backendRefs: [{name: tcp-backend, port: 8443}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: to-plain, namespace: $ns}
spec:
  parentRefs: [{name: two-certificates, sectionName: wrong}]
  hostnames: [wrong.example.com]
  rules: [{backendRefs: [{name: tcp-backend, port: 3000}]}]
YAML
spit("$manifests/manifests.yaml", $yaml);

my $offset = server_port() + 30 - 443;
my $port = 443 + $offset;
start_backends();
my $st = serve_conformance_gateway($manifests, 'two-certificates', $offset, 443);
# what it says, from a second run of the same input
my (undef, $generated) = run_generator('-f', $manifests, '-o', "$dir/out-again", '--gateway', "$ns/two-certificates",
                                       '--port-offset', $offset, '--listen-address', '127.0.0.1', '--status-listen', 'off');
for my $route (qw(to-tls to-plain)) {
    like(conformance_conditions($st, 'TLSRoute', $route), qr{^\Q$ns\E/two-certificates: Accepted=True/Accepted$}m,
         "$route is accepted");
}

# The subject of the certificate the gateway serves for SNI (none: no SNI).
sub served_subject {
    my ($sni) = @_;
    my $servername = defined $sni ? "-servername $sni" : '-noservername';
    my $pem = `timeout 10 openssl s_client -connect 127.0.0.1:$port $servername </dev/null 2>/dev/null`;
    open my $x509, '|-', "openssl x509 -noout -subject -nameopt RFC2253 > $dir/tmp/subject 2>/dev/null" or die;
    print $x509 $pem;
    close $x509;
    chomp(my $subject = slurp("$dir/tmp/subject") // '');
    return $subject;
}

is(served_subject('abc.example.com'), 'subject=CN=leaf', 'abc.example.com: the abc listener\'s certificate');
is(served_subject('wrong.example.com'), 'subject=CN=wrongsan', 'wrong.example.com: the wrong listener\'s certificate');

# verified as a client would: the CA, and the name it asked for
is(tls_exchange($port, 'abc.example.com', "hello\n", "$certs/ca.crt", 'abc.example.com'),
   "backend=tcp_tls tls=yes sni=abc.example.com\n",
   'abc.example.com: verified, re-encrypted to the backend under its policy');
is(tls_exchange($port, 'wrong.example.com', "hello\n", "$certs/ca.crt", 'wrong.example.com'),
   "backend=tcp tls=no sni=\n",
   'wrong.example.com: verified, and its backend without a policy gets plaintext beside the one with');
is(tls_exchange($port, 'other.example.com', "hello\n", "$certs/ca.crt", 'abc.example.com'), '',
   'an SNI no route has: closed');
is(tls_exchange($port, 'other.example.com', "hello\n"), '', 'an SNI no route has, not verified: closed');
unlike($generated, qr/warning/i, 'gateway2nginx warns of nothing');

my $conf = slurp("$dir/out-two-certificates/stream.conf");
if ($servers_by_name) {
    is(served_subject('other.example.com'), 'subject=CN=leaf', 'an SNI no route has: the first listener\'s by name, then closed (nginx >= 1.25.5)');
    is(served_subject(undef), 'subject=CN=leaf', 'no SNI: the first listener\'s by name, then closed (nginx >= 1.25.5)');
    like($conf, qr/^    server_name wrong\.example\.com;$/m, 'a stream server per hostname (nginx >= 1.25.5)');
    unlike($conf, qr/127\.254\./, 'no loopback hop (nginx >= 1.25.5)');
} else {
    is(served_subject('other.example.com'), '', 'an SNI no route has: closed before a handshake (nginx < 1.25.5)');
    is(served_subject(undef), '', 'no SNI: closed before a handshake (nginx < 1.25.5)');
    like($conf, qr/^    ssl_preread on;$/m, 'the port reads the SNI (nginx < 1.25.5)');
    is(scalar(() = $conf =~ /^    listen 127\.254\.0\.\d+:\d+ ssl;$/mg), 2, 'a terminating server per hostname on loopback (nginx < 1.25.5)');
    unlike($conf, qr/^\s*server_name/m, 'no server_name in stream (nginx < 1.25.5)');
}
# ([crit] is not counted: nginx logs a client that sends data after its close_notify so, which
# openssl s_client does when its input ends before the answer comes)
unlike(slurp("$dir/out-two-certificates/logs/error.log"), qr/\[(?:alert|emerg)\]/, 'no alert in the error log (a worker that died would say so)');

stop_conformance_gateway();
stop_backends();
done_testing();
