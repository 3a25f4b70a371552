# gateway2nginx convert end to end for ssl-passthrough, as Argo CD's
# documentation writes the Ingress: converted to a TLS listener
# (Passthrough) and a TLSRoute, served by real nginx, the client's TLS
# reaching the backend untouched (the Gateway holds no certificate for
# the host: what answers is the backend's own), and an SNI no Ingress
# passes through refused; beside it, an Ingress served over HTTP.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();

my $certs = certs_dir();
my $dir = servroot();

my $ingresses = ingress_yaml(name => 'argocd-server-ingress', host => 'abc.example.com', service => 'argocd-server',
                             port => 'https', annotations => ['force-ssl-redirect: "true"', 'ssl-passthrough: "true"'])
              . plaintext_service_manifests('argocd-server', 'https', 443, backend_port('leaf'));
$ingresses .= http_ingress_yaml('portal', 'portal.example.com');
my ($http, $report) = convert_and_serve('passthrough', $ingresses, 0);
my $port = $http + 443 - 80;
like($report, qr{ns/argocd-server-ingress: nginx\.ingress\.kubernetes\.io/ssl-passthrough="true": converted},
     'ssl-passthrough is reported converted');
like($report, qr{force-ssl-redirect="true": ignored}, 'the other annotations ignored, as ingress-nginx ignores them');

# GET / over TLS with SNI NAME, the backend's CA trusted: status and body
sub https_get {
    my ($name) = @_;
    my $out = `curl -s --max-time 10 --cacert $certs/ca.crt --resolve $name:$port:127.0.0.1 -w '\\n%{http_code}' https://$name:$port/x 2>/dev/null`;
    my ($body, $code) = $out =~ /^(.*)\n(\d+)$/s;
    return (($code // 0) + 0, $body // '');
}
my ($code, $body) = https_get('abc.example.com');
is($code, 200, 'the host\'s TLS is the backend\'s, verified by the client against the backend\'s CA');
like($body, qr/^backend=leaf sni=abc\.example\.com/m, 'and the backend saw the client\'s SNI: the TLS passed untouched');
is((https_get('other.example.com'))[0], 0, 'an SNI no Ingress passes through is refused');
is((request($http, 'GET', '/', 'Host: portal.example.com'))[0], 200, 'the Ingress beside it is served over HTTP');
unlike(slurp("$dir/out/stream.conf"), qr/ssl_certificate /, 'nginx holds no certificate for it');

stop_served();
