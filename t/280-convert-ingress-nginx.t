# gateway2nginx convert end to end: Ingresses written as ingress-nginx's
# documentation writes them, converted, served by real nginx with the
# module in front of real TLS backends, and answering as ingress-nginx
# documents: a backend verified against proxy-ssl-secret's CA (200), one
# whose certificate that CA did not sign (502), one ingress-nginx did not
# verify (proxy-ssl-verify unset: served, audited as skip), the SNI sent
# being proxy-ssl-name, HTTP to a host with TLS redirected (308), and a
# GRPCS backend's calls routed as GRPCRoute matches them.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $dir = servroot();

# an Ingress of HOST to SERVICE's port "https" with ANNOTATIONS
sub ingress {
    my ($name, $host, $service, @annotations) = @_;
    return ingress_yaml(name => $name, host => $host, service => $service, port => 'https',
                        annotations => \@annotations);
}

my $verify = ['backend-protocol: HTTPS', 'proxy-ssl-verify: "on"', 'proxy-ssl-secret: ns/backend-ca',
              'proxy-ssl-name: abc.example.com', 'proxy-ssl-server-name: "on"'];
my $ingresses = ingress('verified', 'verified.example.com', 'good', @$verify)
              . ingress('wrong-ca', 'wrong-ca.example.com', 'untrusted', @$verify)
              . ingress('unverified', 'unverified.example.com', 'selfsigned', 'backend-protocol: HTTPS')
              . ingress_yaml(name => 'secure', host => 'secure.example.com', service => 'good', port => 'https',
                             annotations => $verify, tls => 'secure-tls')
              . secret_yaml('backend-ca', 'ns', ca => 'ca.crt') . secret_yaml('secure-tls', 'ns', cert => 'leaf');
# GRPCS, as the documentation's gRPC example with TLS to the backend: one
# service's calls to an HTTP/2 backend verified against the CA
$ingresses .= ingress_yaml(name => 'grpc', host => 'grpc.example.com', service => 'echo', port => 'https',
                           path => '/pkg.Echo', annotations => ['backend-protocol: GRPCS', @$verify[1 .. $#$verify]]);
$ingresses .= plaintext_service_manifests('echo', 'https', 443, backend_port('leaf_h2'));
$ingresses .= plaintext_service_manifests('good', 'https', 443, backend_port('leaf'))
            . plaintext_service_manifests('untrusted', 'https', 443, backend_port('untrusted'))
            . plaintext_service_manifests('selfsigned', 'https', 443, backend_port('selfsigned'));
my ($port, $report) = convert_and_serve('convert', $ingresses, 0);
like($report, qr{ns/unverified: nginx\.ingress\.kubernetes\.io/proxy-ssl-verify="\(unset\)": differs: off: InsecureSkipVerification},
     'the backend ingress-nginx did not verify is reported as kept unverified, on purpose');
like($report, qr{ns/verified: nginx\.ingress\.kubernetes\.io/proxy-ssl-verify="on": converted}, 'verify on is converted');

sub code { (request($port, 'GET', $_[1] // '/x', "Host: $_[0]"))[0] }

is(code('verified.example.com'), 200, 'verified against the Secret\'s ca.crt: 200');
is(code('wrong-ca.example.com'), 502, 'a certificate that CA did not sign: 502');
is(code('unverified.example.com'), 200, 'proxy-ssl-verify unset: served unverified, as ingress-nginx did');
my ($code, $headers) = request($port, 'GET', '/path?q=1', 'Host: secure.example.com');
is($code, 308, 'HTTP to a host with TLS: 308');
is($headers->{location}, 'https://secure.example.com/path?q=1', 'to the same URL over HTTPS');

# a gRPC call over cleartext HTTP/2 to the Gateway (prior knowledge)
sub grpc_call {
    my ($path) = @_;
    my $out = `curl -s --http2-prior-knowledge --max-time 10 -o - -w '\\n%{http_code}' -X POST -H 'content-type: application/grpc' -H 'te: trailers' -H 'Host: grpc.example.com' http://127.0.0.1:$port$path`;
    my @lines = split /\n/, $out;
    my $code = pop @lines;
    return ($code, join("\n", @lines));
}
my ($grpc_code, $grpc_body) = grpc_call('/pkg.Echo/Say');
is($grpc_code, 200, 'GRPCS: a call of the service reaches its backend over verified TLS');
like($grpc_body, qr{^backend=leaf_h2 sni=abc\.example\.com path=/pkg\.Echo/Say$}m, 'GRPCS: SNI proxy-ssl-name, the call\'s path');
is((grpc_call('/pkg.Other/Say'))[0], 404, 'GRPCS: another service\'s call is not routed');

ok(wait_for(sub { count_in("$dir/backends/logs/backend.log", qr/^\d+ abc\.example\.com \/x$/m) >= 1 }),
   'the SNI the verified backend saw is proxy-ssl-name');
my $nginx = nginx_binary();
my $audit = `$nginx -t -p $dir/out/ -c nginx.conf 2>&1`;
like($audit, qr/insecure backend verification "proxy_ssl_verify_mode skip" for policy "ns\/selfsigned-backend-tls"/,
     'nginx -t names the unverified backend in its audit line');

stop_served();
