package Test::GatewayTLS::Kube;

# The API server simulation (t/lib/kube-apiserver-sim), checked with the
# real kubectl: started, applied to, audited; the objects tests apply.

use strict;
use warnings;

use Exporter 'import';
use JSON::PP ();
use Test::More ();

use Test::GatewayTLS::Env qw(:DEFAULT $Root $ServRoot _port_free);
use Test::GatewayTLS::Nginx;
use Test::GatewayTLS::Generator;

our @EXPORT = qw(audit_requests kube_apply kube_host_route_yaml kube_route_yaml kube_slice_yaml kube_tls_service_yaml
                kube_web_yaml kubeconfig kubectl kubectl_missing rbac_check start_kube_api);

# t/lib/kube-apiserver-sim on 127.0.0.1:PORT over HTTPS (the ipemail
# certificate: SAN 127.0.0.1), its objects kept in servroot/kube-api.json
# across restarts, and servroot/kubeconfig for it (the test CA, a bearer
# token). More arguments go to the simulation. Returns its pid once it
# answers.
sub kubeconfig { "$ServRoot/kubeconfig" }

sub start_kube_api {
    my ($port, @more) = @_;
    my $certs = certs_dir();
    my $token = "$ServRoot/kube-api.token";
    unless (-f $token) {
        spit($token, join('', map { sprintf '%02x', int rand 256 } 1 .. 16) . "\n");
        spit(kubeconfig(), <<"YAML");
apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: {server: "https://127.0.0.1:$port", certificate-authority: $certs/ca.crt}
users:
- name: gateway
  user: {tokenFile: $token}
contexts:
- name: sim
  context: {cluster: sim, user: gateway}
current-context: sim
YAML
    }
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>>', "$ServRoot/kube-api.log" or die;
        exec('python3', "$Root/t/lib/kube-apiserver-sim", '--listen', "127.0.0.1:$port",
             '--cert', "$certs/ipemail.crt", '--key', "$certs/ipemail.key", '--token-file', $token,
             '--state', "$ServRoot/kube-api.json", @more) or die;
    }
    track_child($pid);
    wait_for(sub { !_port_free($port) }, 10) or die "the API server simulation does not listen on $port\n";
    return $pid;
}

# kubectl ARGS against start_kube_api's simulation: (exit code, output).
sub kubectl {
    my $cmd = join ' ', map { "'$_'" } 'kubectl', '--kubeconfig', kubeconfig(), @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# Why the tests that drive the API server simulation with kubectl cannot
# run here, or '' when they can: kubectl 1.27 or later (it leaves field
# validation to a server whose OpenAPI v3 says it does it).
sub kubectl_missing {
    my $version = `kubectl version --client 2>/dev/null`;
    return 'kubectl is not installed (make deps installs Debian\'s kubernetes-client where the release has one)'
        if $? != 0 && $version eq '';
    my ($minor) = $version =~ /Client Version: v1\.(\d+)/;
    return "kubectl 1.27 or later is needed, not: $version" unless defined $minor && $minor >= 27;
    return '';
}

# What the tests of the API client apply first: Namespace ns, the shared
# HTTP Gateway with the test CA (gateway_manifests), Service ns/web and its
# BackendTLSPolicy web-tls (abc.example.com, the CA).
sub kube_web_yaml {
    return "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n" . gateway_manifests() . <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec: {ports: [{name: https, port: 443}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: web-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: web}]
  validation: {hostname: abc.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}
YAML
}

# EndpointSlice ns/web-abc of Service web: 127.0.0.N:PORT for each N.
sub kube_slice_yaml {
    my ($port, @n) = @_;
    my $addresses = join ', ', map { "\"127.0.0.$_\"" } @n;
    return "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
         . "metadata: {name: web-abc, namespace: ns, labels: {kubernetes.io/service-name: web}}\n"
         . "ports: [{name: https, port: $port}]\nendpoints: [{addresses: [$addresses]}]\n";
}

# HTTPRoute ns/NAME on ns/gw for HOST: a PathPrefix rule to SERVICE:443
# for each PATH.
sub kube_host_route_yaml {
    my ($name, $host, $service, @paths) = @_;
    my $rules = join '', map { "  - matches: [{path: {type: PathPrefix, value: $_}}]\n    backendRefs: [{name: $service, port: 443}]\n" } @paths;
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: $name, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  hostnames: [\"$host\"]\n  rules:\n$rules";
}

# Service ns/NAME, its endpoint 127.0.0.N:PORT, and its BackendTLSPolicy
# (the CA of ConfigMap ca, abc.example.com).
sub kube_tls_service_yaml {
    my ($name, $n, $port) = @_;
    return "apiVersion: v1\nkind: Service\nmetadata: {name: $name, namespace: ns}\nspec: {ports: [{name: https, port: 443}]}\n"
         . "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
         . "metadata: {name: $name-abc, namespace: ns, labels: {kubernetes.io/service-name: $name}}\n"
         . "ports: [{name: https, port: $port}]\nendpoints: [{addresses: [\"127.0.0.$n\"]}]\n"
         . "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: $name-tls, namespace: ns}\n"
         . "spec:\n  targetRefs: [{group: \"\", kind: Service, name: $name}]\n"
         . "  validation: {hostname: abc.example.com, caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]}\n";
}

# HTTPRoute ns/r on ns/gw: a PathPrefix rule to web:443 for each PATH.
sub kube_route_yaml {
    my $rules = join '', map { "  - matches: [{path: {type: PathPrefix, value: $_}}]\n    backendRefs: [{name: web, port: 443}]\n" } @_;
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n$rules";
}

# The requests gateway2nginx made, from the API server simulation's
# --audit log (one JSON line each): the simulation appends while a test
# reads, so a last line not yet ended is left for the next read.
sub audit_requests {
    my $audit = shift;
    my $text = -e $audit ? slurp($audit) : '';
    $text =~ s/[^\n]*\z//;
    return map { JSON::PP::decode_json($_) } grep { /"user_agent": "gateway2nginx\// } split /\n/, $text;
}

# What a gateway2nginx run asked of the API server simulation (its
# --audit log at AUDIT), against RBAC rules: (the requests neither the
# cluster RULES nor the rules granted in their namespace allow (NAMESPACED,
# {namespace => rules}, or rules granted in NAMESPACE), the rules no
# request used, how many requests), each '' when none.
sub rbac_check {
    my ($audit, $cluster_rules, $namespaced, $namespace) = @_;
    # NAMESPACED: rules by the namespace they are granted in, or one list
    # granted in NAMESPACE
    $namespaced = { $namespace => $namespaced } if ref $namespaced eq 'ARRAY';
    my @requests = audit_requests($audit);
    my $resource_of = sub { $_[0]{resource} . ($_[0]{subresource} ? "/$_[0]{subresource}" : '') };
    my $used = sub {
        my ($verb, $resource) = @_;
        scalar grep { $_->{verb} eq $verb && $resource_of->($_) eq $resource } @requests;
    };
    my $allowed = sub {
        my ($rules, $r) = @_;
        grep {
            my $rule = $_;
            (grep { $_ eq ($r->{group} // '') } @{ $rule->{apiGroups} })
                && (grep { $_ eq $resource_of->($r) } @{ $rule->{resources} })
                && (grep { $_ eq $r->{verb} } @{ $rule->{verbs} })
        } @$rules;
    };
    my @denied = grep {
        !$allowed->($cluster_rules, $_) && !($namespaced->{ $_->{namespace} // '' } && $allowed->($namespaced->{ $_->{namespace} }, $_))
    } @requests;
    my @unused;
    for my $rule (@$cluster_rules, map { @$_ } values %$namespaced) {
        for my $resource (@{ $rule->{resources} }) {
            for my $verb (@{ $rule->{verbs} }) {
                # grpcroutes, tlsroutes, tcproutes, udproutes and
                # listenersets: the same calls as httproutes; a get after a conflict: the same call
                # for every kind whose status is written, made for whichever
                # met the 409
                (my $like = $resource) =~ s/^(grpcroutes|tlsroutes|tcproutes|udproutes|listenersets)/httproutes/;
                my $status_kind = $verb eq 'get' && $rule->{apiGroups}[0] eq 'gateway.networking.k8s.io';
                push @unused, "$verb $resource"
                    unless $used->($verb, $resource) || $used->($verb, $like)
                        || ($status_kind && grep { $_->{verb} eq 'get' && ($_->{group} // '') eq 'gateway.networking.k8s.io' } @requests);
            }
        }
    }
    return (join("\n", map { "$_->{verb} " . ($_->{group} // '') . "/" . $resource_of->($_) . " in "
                                . ($_->{namespace} // '(cluster)') } @denied),
            join(' ', @unused), scalar @requests);
}

# `kubectl apply -f` of YAML (kept as servroot/NAME.yaml); the exit code
# is a test.
sub kube_apply {
    my ($name, $yaml) = @_;
    spit("$ServRoot/$name.yaml", $yaml);
    my ($rc, $out) = kubectl('apply', '-f', "$ServRoot/$name.yaml");
    Test::More::is($rc, 0, "kubectl apply -f $name.yaml") or Test::More::diag($out);
}

1;
