#!/usr/bin/perl
# make-manifests.pl N CA_FILE [ENDPOINTS] [HOSTS]: a Gateway and N
# (Service, EndpointSlice of ENDPOINTS addresses (default 1),
# BackendTLSPolicy, HTTPRoute) sets on stdout, about 0.9 KB per set. The
# routes share one hostname, shop.example.com, or are spread over HOSTS
# (shop-K.example.com, route I on K = I mod HOSTS).
use strict;
use warnings;

my ($n, $ca_file, $endpoints, $hosts) = @ARGV;
die "usage: make-manifests.pl N CA_FILE [ENDPOINTS] [HOSTS]\n" unless $n && $ca_file;
$endpoints //= 1;
$hosts //= 1;
open my $fh, '<', $ca_file or die "$ca_file: $!\n";
my $ca = do { local $/; <$fh> };
$ca =~ s/^/    /mg;

print <<"YAML";
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: gateway2nginx}
spec: {controllerName: gateway2nginx.io/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: shop, namespace: demo}
spec:
  gatewayClassName: gateway2nginx
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: demo}
data:
  ca.crt: |
$ca
YAML
for my $i (0 .. $n - 1) {
    my $host = $hosts == 1 ? 'shop.example.com' : 'shop-' . ($i % $hosts) . '.example.com';
    my $ip = join ', ', map { my $k = $i * $endpoints + $_;
                               '"' . join('.', 10, int($k / 65536) % 256, int($k / 256) % 256, $k % 256) . '"' }
                         0 .. $endpoints - 1;
    print <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: svc-$i, namespace: demo}
spec:
  ports: [{name: https, port: 443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: svc-$i-x
  namespace: demo
  labels: {kubernetes.io/service-name: svc-$i}
ports: [{name: https, port: 8443}]
endpoints: [{addresses: [$ip]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: p-$i, namespace: demo}
spec:
  targetRefs: [{group: "", kind: Service, name: svc-$i}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
    hostname: svc-$i.example.com
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r-$i, namespace: demo}
spec:
  parentRefs: [{name: shop}]
  hostnames: [$host]
  rules:
  - matches: [{path: {type: PathPrefix, value: /svc-$i}}]
    backendRefs: [{name: svc-$i, port: 443}]
YAML
}
