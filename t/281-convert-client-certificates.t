# gateway2nginx convert end to end for client certificates (auth-tls-*),
# each Ingress written as ingress-nginx's documentation writes it,
# converted, served by real nginx and checked against what ingress-nginx
# documents: `on` admits a client the CA signed (through one intermediate,
# auth-tls-verify-depth's default 1) and refuses one without a certificate
# or of another CA; a depth of 0 refuses that chain as too long;
# `optional` admits a client without a certificate; auth-tls-match-cn,
# which Gateway API cannot check, leaves the host unserved.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $certs = certs_dir();
my $dir = servroot();

# An Ingress of pay.example.com, TLS with the "leaf" certificate, its
# clients validated as ANNOTATIONS say, and what it needs
sub ingress {
    my (@annotations) = @_;
    return ingress_yaml(name => 'payments', host => 'pay.example.com', service => 'payments',
                        annotations => \@annotations, tls => 'pay-tls')
         . plaintext_service_manifests('payments', 'http', 80, backend_port('plain'))
         . secret_yaml('client-ca', 'ns', ca => 'ca.crt') . secret_yaml('pay-tls', 'ns', cert => 'leaf');
}

# The HTTPS port of what convert made of INGRESSES, served; and its report
sub convert_and_serve_https {
    my ($port, $report) = convert_and_serve(@_);
    return ($port + 443 - 80, $report);
}

# GET / over TLS with SNI and Host pay.example.com, with the client
# certificate CLIENT (or none): the HTTP status, 0 when the TLS handshake
# failed
sub https_code {
    my ($port, $client) = @_;
    my $cert = $client ? "--cert $certs/$client.crt --key $certs/$client.key" : '';
    my $code = `curl -sk --max-time 10 $cert --resolve pay.example.com:$port:127.0.0.1 -o /dev/null -w '%{http_code}' https://pay.example.com:$port/ 2>/dev/null`;
    return ($code || 0) + 0;
}

# ---- on (the default), depth 1 (the default) -------------------------------
my ($port, $report) = convert_and_serve_https('on', ingress('auth-tls-secret: ns/client-ca', 'auth-tls-verify-client: "on"'), 0);
like($report, qr{ns/payments: nginx\.ingress\.kubernetes\.io/auth-tls-verify-depth="\(unset\)": converted},
     'on: the default depth is carried over, and said so');
is(https_code($port, 'leaf'), 200, 'on: a client the CA signed through one intermediate is admitted');
is(https_code($port), 0, 'on: a client without a certificate is refused');
is(https_code($port, 'untrusted'), 0, 'on: a client of another CA is refused');
like(slurp("$dir/out/http.conf"), qr/ssl_verify_depth 1;/, 'on: nginx verifies one intermediate deep');
stop_served();

# ---- depth 0: the same client's chain is too long ---------------------------
($port) = convert_and_serve_https('depth 0', ingress('auth-tls-secret: ns/client-ca', 'auth-tls-verify-depth: "0"'), 0);
is(https_code($port, 'leaf'), 0, 'depth 0: a client signed through an intermediate is refused');
is(https_code($port, 'untrusted'), 0, 'depth 0: a client of another CA is refused');
stop_served();

# ---- optional ---------------------------------------------------------------
($port, $report) = convert_and_serve_https('optional', ingress('auth-tls-secret: ns/client-ca',
                                                         'auth-tls-verify-client: optional'), 0);
like($report, qr{auth-tls-verify-client="optional": differs: AllowInsecureFallback}, 'optional: the difference is stated');
is(https_code($port), 200, 'optional: a client without a certificate is admitted');
is(https_code($port, 'leaf'), 200, 'optional: a client the CA signed is admitted');
stop_served();

# ---- match-cn: not checked by Gateway API, so not served --------------------
# (beside an Ingress of another host over HTTP, so that the Gateway serves)
my $portal = http_ingress_yaml('portal', 'portal.example.com');
($port, $report) = convert_and_serve_https('match-cn', ingress('auth-tls-secret: ns/client-ca',
                                                         'auth-tls-match-cn: "CN=abc.example.com"') . $portal, 3);
like($report, qr{auth-tls-match-cn="CN=abc\.example\.com": not-converted: .*routes are left out},
     'match-cn: reported as not converted, the routes left out');
is(https_code($port, 'leaf'), 0, 'match-cn: no TLS is served for the host, even to a client the CA signed');
is((request($port + 80 - 443, 'GET', '/', 'Host: pay.example.com'))[0], 404, 'match-cn: nor plain HTTP');
is((request($port + 80 - 443, 'GET', '/', 'Host: portal.example.com'))[0], 200, 'match-cn: the other Ingress is served');
stop_served();
