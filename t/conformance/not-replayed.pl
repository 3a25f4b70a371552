# Conformance tests of the suite not replayed here yet, with the features
# their Go sources declare: the report counts them as skipped in the
# profile and level those features give (a test of a feature the
# GatewayClass does not claim is one the suite would skip too).
# Read by t/400-conformance.t; each moves to http.pl or grpc.pl once
# replayed.
return [
    map { {name => $_->[0], features => $_->[1], manifests => [$_->[2]]} }
    ['GatewayInfrastructure', [qw(Gateway GatewayInfrastructurePropagation)], 'gateway-infrastructure'],
];
