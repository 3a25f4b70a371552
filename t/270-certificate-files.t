# Certificate files of two namespaces never collide (issue 35, finding 3):
# Secret prod-tls in namespace payments and Secret tls in namespace
# payments-prod were both certs/listener-payments-prod-tls.*, so one
# Gateway's listener served the other's certificate and private key. Each
# now has files of its own, named by a separator no Kubernetes name holds.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 443;
my $certs = certs_dir();
my $module_dir = module_dir();

my $yaml = <<"YAML";
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ours}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: payments}
spec:
  gatewayClassName: ours
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: pay.example.com,
     tls: {certificateRefs: [{name: prod-tls}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: payments-prod}
spec:
  gatewayClassName: ours
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: prod.example.com,
     tls: {certificateRefs: [{name: tls}]}}
YAML
for my $ns (qw(payments payments-prod)) {
    $yaml .= <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: $ns}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: $ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
YAML
}
$yaml .= tls_secret_yaml('prod-tls', 'leaf', 'payments');
$yaml .= tls_secret_yaml('tls', 'wrongsan', 'payments-prod');
spit("$dir/manifests.yaml", $yaml);
my ($rc, $out) = run_generator('-f', "$dir/manifests.yaml", '-o', "$dir/out", '--port-offset', $offset,
                               '--listen-address', '127.0.0.1', '--status-listen', 'off', '--module-dir', $module_dir,
                               '--check');
is($rc, 0, 'gateway2nginx writes a configuration that passes nginx -t') or diag $out;
my @files = sort map { s{.*/}{}r } glob("$dir/out/certs/listener*");
is_deeply(\@files, [qw(listener_payments-prod_tls.crt listener_payments-prod_tls.key
                       listener_payments_prod-tls.crt listener_payments_prod-tls.key)],
          'each Secret has files of its own: ' . join(' ', @files));
sub subject { my $f = shift; my $s = `openssl x509 -noout -subject -in $f`; $s =~ s/\s+$//; $s }
like(subject("$dir/out/certs/listener_payments_prod-tls.crt"), qr/CN ?= ?leaf/, 'payments/prod-tls holds its certificate');
like(subject("$dir/out/certs/listener_payments-prod_tls.crt"), qr/CN ?= ?wrongsan/, 'payments-prod/tls holds its own');
is(`openssl pkey -in $dir/out/certs/listener_payments_prod-tls.key -pubout`, `openssl x509 -in $certs/leaf.crt -noout -pubkey`,
   "and each key is its Secret's");
is(`openssl pkey -in $dir/out/certs/listener_payments-prod_tls.key -pubout`, `openssl x509 -in $certs/wrongsan.crt -noout -pubkey`,
   "for both");

start_nginx("$dir/out", 'nginx.conf', 443 + $offset);
for ([qw(pay.example.com leaf)], [qw(prod.example.com wrongsan)]) {
    my ($sni, $cn) = @$_;
    my $served = `echo | timeout 10 openssl s_client -connect 127.0.0.1:@{[443 + $offset]} -servername $sni 2>/dev/null | openssl x509 -noout -subject`;
    like($served, qr/CN ?= ?$cn/, "$sni is served its Gateway's certificate (CN=$cn)");
}
stop_nginx("$dir/out");
