# The suite's GatewayInfrastructure test (GEP-1867) replayed as its Go
# source runs it (tests/gateway-infrastructure.go), against gateway2nginx
# run --kubeconfig --gateway-service-external-name and the API server
# simulation, read with the real kubectl: its manifest applied; the
# namespace ready (NamespacesMustBeReady: its Gateways Accepted and
# Programmed at their generation, nginx started by run --start-nginx); the
# Gateway's latest conditions, Accepted; then a ServiceAccount, Pod or
# Service in its namespace labelled gateway.networking.k8s.io/gateway-name
# whose labels and annotations hold all of the Gateway's
# spec.infrastructure ones, the first of each kind found. Not replayed:
# NamespacesMustBeReady's wait for the namespace's Pods to be Ready (the
# simulation runs none).
# Served by gateway2nginx run alone: its results are of mode run.
BEGIN { $ENV{GTLS_CONFORMANCE_MODE} = 'run' }
use strict;
use warnings;
use lib 't/lib';
use Test::GatewayTLS;
use Test::ConformanceReport;
use Test::More;
use JSON::PP;

if (my $why = kubectl_missing()) {
    plan skip_all => $why;
}
my ($shared, $dir) = conformance_begin();
my $ns = 'gateway-conformance-infra';
my $gateway = 'gateway-with-infrastructure-metadata';
my $offset = server_port() + 20 - 8080;
my $api_port = server_port() + 18;
my $kube_port = server_port() + 21;
my $sim = start_kube_api($kube_port, '--bookmark-seconds', '1');

sub get_json {
    my ($rc, $out) = kubectl('get', @_, '-o', 'json');
    return $rc == 0 ? decode_json($out) : undef;
}
# every condition at the object's generation (ConditionsHaveLatestObservedGeneration)
sub latest {
    my ($object) = @_;
    my @conditions = @{ $object->{status}{conditions} || [] };
    return @conditions && !grep { ($_->{observedGeneration} // 0) != $object->{metadata}{generation} } @conditions;
}
sub condition {
    my ($object, $type) = @_;
    my ($c) = grep { $_->{type} eq $type } @{ $object->{status}{conditions} || [] };
    return $c ? $c->{status} : '';
}

my $run;
conformance_test('GatewayInfrastructure', [qw(Gateway GatewayInfrastructurePropagation)], ['gateway-infrastructure'], sub {
    (my $manifest = slurp("$shared/tests/gateway-infrastructure.yaml")) =~ s/\{GATEWAY_CLASS_NAME\}/gateway2nginx/g;
    kube_apply('suite', "apiVersion: v1\nkind: Namespace\nmetadata: {name: $ns}\n---\n" . conformance_setup()
                        . "---\n" . $manifest);
    my $log = servroot() . '/run.log';
    $run = start_run($log, '--kubeconfig', kubeconfig(), '-o', servroot() . '/out', '--start-nginx',
                     '--nginx', nginx_binary(), '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset,
                     '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                     '--debounce', '100', '--gateway-service-external-name',
                     'gateway2nginx.gateway-system.svc.cluster.local');

    # NamespacesMustBeReady, for the Gateways
    ok(wait_for(sub {
        my $list = get_json('gateways', '-n', $ns) or return 0;
        return @{ $list->{items} } && !grep {
            !latest($_) || condition($_, 'Accepted') ne 'True' || condition($_, 'Programmed') ne 'True'
        } @{ $list->{items} };
    }, 60), "the Gateways in $ns are Accepted and Programmed at their generation") or diag slurp($log);
    # GatewayMustHaveLatestConditions, then the Gateway as it is
    ok(wait_for(sub { my $gw = get_json('gateway', $gateway, '-n', $ns); $gw && latest($gw) }, 60),
       "Gateway $gateway has its latest conditions");
    my $gw = get_json('gateway', $gateway, '-n', $ns);
    is(condition($gw, 'Accepted'), 'True', 'it is Accepted with infrastructure declared');
    my %labels = %{ $gw->{spec}{infrastructure}{labels} || {} };
    my %annotations = %{ $gw->{spec}{infrastructure}{annotations} || {} };
    ok(%labels && %annotations, 'its infrastructure has labels and annotations');

    my %found;
    ok(wait_for(sub {
        for my $kind (qw(serviceaccounts pods services)) {
            my $list = get_json($kind, '-n', $ns, '-l', "gateway.networking.k8s.io/gateway-name=$gateway") or return 0;
            $found{$kind} = $list->{items}[0];
        }
        return grep { defined } values %found;
    }, 60), 'a ServiceAccount, Pod or Service has the gateway-name label') or diag slurp($log);
    for my $kind (grep { $found{$_} } sort keys %found) {
        my $meta = $found{$kind}{metadata};
        for my $key (sort keys %labels) {
            is($meta->{labels}{$key}, $labels{$key}, "its $kind $meta->{name} has the infrastructure label $key");
        }
        for my $key (sort keys %annotations) {
            is($meta->{annotations}{$key}, $annotations{$key}, "... and annotation $key");
        }
    }
});

my $class = get_json('gatewayclass', 'gateway2nginx');
record_supported_features([map { $_->{name} } @{ $class->{status}{supportedFeatures} || [] }]);
if ($run) {
    kill 'TERM', $run;
    waitpid($run, 0);
    is($? >> 8, 0, 'gateway2nginx run and its nginx end on SIGTERM');
}
kill 'TERM', $sim;
waitpid($sim, 0);
