# gateway2nginx convert end to end for the client certificates ingress-
# nginx shows backends (proxy-ssl-secret's tls.crt and tls.key): the first
# becomes the Gateway's (GEP-3155), shown to every TLS backend; an Ingress
# naming another Secret of its namespace has its policy present that one
# (option gateway2nginx.io/client-certificate). Served by real nginx in
# front of a backend that asks for a client certificate and answers with
# the fingerprint of the one it got.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();


# an Ingress of HOST to Service NAME (the backend asking for client
# certificates), verified against SECRET's ca.crt
sub ingress {
    my ($name, $host, $secret) = @_;
    return ingress_yaml(name => $name, host => $host, service => $name, port => 'https',
                        annotations => ['backend-protocol: HTTPS', "proxy-ssl-secret: ns/$secret",
                                        'proxy-ssl-verify: "on"', 'proxy-ssl-name: abc.example.com'])
         . plaintext_service_manifests($name, 'https', 443, backend_port('mtls'));
}

# a Secret as ingress-nginx's proxy-ssl-secret holds one: the CA, and
# CERT's certificate and key unless CERT is ''
sub secret { my ($name, $cert) = @_; secret_yaml($name, 'ns', ca => 'ca.crt', ($cert ne '' ? (cert => $cert) : ())) }

my $ingresses = ingress('first', 'first.example.com', 'client-leaf')
              . ingress('own', 'own.example.com', 'client-spiffe')
              . ingress('ca-only', 'ca-only.example.com', 'backend-ca')
              . secret('client-leaf', 'leaf') . secret('client-spiffe', 'spiffe') . secret('backend-ca', '');
my ($port, $report) = convert_and_serve('convert', $ingresses, 0);
like($report, qr{ns/first: nginx\.ingress\.kubernetes\.io/proxy-ssl-secret="ns/client-leaf": differs: .*the Gateway's backend client certificate},
     'the first client certificate is the Gateway\'s, shown to every backend (a difference)');
like($report, qr{ns/own: nginx\.ingress\.kubernetes\.io/proxy-ssl-secret="ns/client-spiffe": converted: .*the policy's own client certificate},
     'another Secret of the namespace is its policy\'s own');
my $converted = slurp(servroot() . '/converted/gateway-api.yaml');
like($converted, qr{gateway2nginx\.io/client-certificate: client-spiffe}, 'named by the policy\'s option');

sub fingerprint_seen {
    my ($host) = @_;
    my ($code, undef, $body) = request($port, 'GET', '/', "Host: $host");
    return "$code " . ($body =~ /client_verify=(\S+) client_fingerprint=(\S*)/ ? "$1 $2" : $body);
}
my %want = map { $_ => Test::GatewayTLS::client_fingerprint($_) } qw(leaf spiffe);
is(fingerprint_seen('own.example.com'), "200 SUCCESS $want{spiffe}", 'its backend is shown the policy\'s own certificate');
is(fingerprint_seen('first.example.com'), "200 SUCCESS $want{leaf}", 'the first\'s, the Gateway\'s');
is(fingerprint_seen('ca-only.example.com'), "200 SUCCESS $want{leaf}",
   'an Ingress that named none: the Gateway\'s, as reported');
is(fingerprint_seen('own.example.com'), "200 SUCCESS $want{spiffe}", 'and the policy\'s again, its session its own');

stop_served();
