# GATEWAY-GRPC conformance tests, as their Go sources say
# (conformance/tests/grpcroute-*.go in kubernetes-sigs/gateway-api): the
# manifests they apply, the Gateways they serve, what status they wait for,
# their calls and what each must get. Read by t/400-conformance.t.
#
# requests: [GATEWAY, LISTENER PORT, CALL, EXPECTED]; CALL {grpc => Echo,
# EchoTwo or EchoThree, authority, metadata}; EXPECTED as the suite's
# grpc.ExpectedResponse: code (OK), backend, namespace, and headers/absent:
# the metadata the backend must (not) have got; fails: any code but OK.
use strict;
use warnings;

my $ns = 'gateway-conformance-infra';
my $same = 'same-namespace';

# A call of METHOD on GATEWAY's port 80 that BACKEND must answer.
sub call { my ($gw, $backend, $method, %call) = @_; [$gw, 80, {grpc => $method, %call}, {backend => $backend, namespace => $ns}] }
# One that must end with CODE.
sub code { my ($gw, $code, $method, %call) = @_; [$gw, 80, {grpc => $method, %call}, {code => $code}] }

my $v1 = 'grpc-infra-backend-v1';
my $v2 = 'grpc-infra-backend-v2';
my $v3 = 'grpc-infra-backend-v3';

return [
    do {
        my $ok = sub { my $policy = shift; map { [$same, 'BackendTLSPolicy', $policy, qr{^\Q$ns/$same\E: $_=True/$_$}m] }
                                               qw(Accepted ResolvedRefs) };
        {
            name => 'BackendTLSPolicyGRPCRoute',
            features => [qw(Gateway GRPCRoute BackendTLSPolicy)],
            manifests => ['backendtlspolicy-grpcroute'],
            gateways => [$same],
            accepted => [[$same, 'GRPCRoute', 'backendtlspolicy-grpcroute', 'backendtlspolicy-grpcroute-cert-mismatch']],
            conditions => [map { $ok->($_) } qw(grpc-normative-test grpc-host-mismatch grpc-cert-mismatch)],
            requests => [
                call($same, $v1, 'Echo', authority => 'abc.example.com'),
                [$same, 80, {grpc => 'EchoTwo', authority => 'abc.example.com'}, {fails => 1}],
                [$same, 80, {grpc => 'Echo', authority => 'cert-mismatch.example.com'}, {fails => 1}],
            ],
        }
    },
    {
        name => 'GRPCExactMethodMatching',
        features => [qw(Gateway GRPCRoute)],
        manifests => ['grpcroute-exact-method-matching'],
        gateways => [$same],
        accepted => [[$same, 'GRPCRoute', 'exact-matching']],
        requests => [
            call($same, $v1, 'Echo'),
            call($same, $v2, 'EchoTwo'),
            code($same, 'UNIMPLEMENTED', 'EchoThree'),
        ],
    },
    {
        name => 'GRPCRouteHeaderMatching',
        features => [qw(Gateway GRPCRoute)],
        manifests => ['grpcroute-header-matching'],
        gateways => [$same],
        accepted => [[$same, 'GRPCRoute', 'grpc-header-matching']],
        requests => [
            call($same, $v1, 'Echo', metadata => {Version => 'one'}),
            call($same, $v2, 'Echo', metadata => {Version => 'two'}),
            call($same, $v1, 'Echo', metadata => {Version => 'two', Color => 'orange'}),
            call($same, $v2, 'Echo', metadata => {Version => 'two', Color => 'blue'}),
            code($same, 'UNIMPLEMENTED', 'Echo', metadata => {Color => 'orange'}),
            code($same, 'UNIMPLEMENTED', 'Echo', metadata => {'Some-Other-Header' => 'one'}),
            call($same, $v1, 'Echo', metadata => {Color => 'blue'}),
            call($same, $v1, 'Echo', metadata => {Color => 'green'}),
            call($same, $v2, 'Echo', metadata => {Color => 'red'}),
            call($same, $v2, 'Echo', metadata => {Color => 'yellow'}),
            code($same, 'UNIMPLEMENTED', 'Echo', metadata => {Color => 'purple'}),
        ],
    },
    do {
        my $gw = 'grpcroute-listener-hostname-matching';
        {
            name => 'GRPCRouteListenerHostnameMatching',
            features => [qw(Gateway GRPCRoute)],
            manifests => ['grpcroute-listener-hostname-matching'],
            gateways => [$gw],
            accepted => [[$gw, 'GRPCRoute', qw(backend-v1 backend-v2 backend-v3)]],
            requests => [
                call($gw, $v1, 'Echo', authority => 'bar.com'),
                call($gw, $v2, 'Echo', authority => 'foo.bar.com'),
                call($gw, $v3, 'Echo', authority => 'baz.bar.com'),
                call($gw, $v3, 'Echo', authority => 'boo.bar.com'),
                call($gw, $v3, 'Echo', authority => 'multiple.prefixes.bar.com'),
                call($gw, $v3, 'Echo', authority => 'multiple.prefixes.foo.com'),
                code($gw, 'UNIMPLEMENTED', 'Echo', authority => 'foo.com'),
                code($gw, 'UNIMPLEMENTED', 'Echo', authority => 'no.matching.host'),
            ],
        }
    },
    do {
        # The suite's test cases list metadata the backend gets; its
        # compareResponse does not compare them, and two of them contradict
        # the manifest (X-Header-Add-2 "header-add-1,add-header-2", and
        # X-Header-Set-1 "set-overwrites-values" from the EchoTwo rule, which
        # sets "header-set-1"). Checked here: what the manifest's filters
        # make of the call's metadata (gRPC metadata keys are lowercase).
        my $authority = 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho';
        my $modified = sub {
            my ($backend, $method, $metadata, $headers, $absent) = @_;
            my $c = call($same, $backend, $method, authority => $authority, metadata => $metadata);
            $c->[3]{headers} = $headers;
            $c->[3]{absent} = $absent || [];
            return $c;
        };
        {
            name => 'GRPCRouteRequestHeaderModifier',
            # the suite's source names a feature of its own for it
            features => [qw(Gateway GRPCRoute GRPCRouteRequestHeaderModifier)],
            manifests => ['grpcroute-request-header-modifier'],
            gateways => [$same],
            accepted => [[$same, 'GRPCRoute', 'grpc-request-header-modifier']],
            # three rules match Echo alike: the first applies (its Set),
            # never the Add or Remove of the next two
            requests => [
                $modified->($v1, 'Echo', {'Some-Other-Header' => 'this-header-should-be-set'},
                            {'Some-Other-Header' => 'this-header-should-be-set', 'X-Header-Set' => 'set-overwrites-values'}),
                $modified->($v1, 'Echo', {'Some-Other-Header' => 'this-header-should-be-set',
                                          'X-Header-Set' => 'this-value-should-be-overwritten'},
                            {'Some-Other-Header' => 'this-header-should-be-set', 'X-Header-Set' => 'set-overwrites-values'}),
                $modified->($v1, 'Echo', {'Some-Other-Header' => 'this-header-should-be-set'},
                            {'Some-Other-Header' => 'this-header-should-be-set', 'X-Header-Set' => 'set-overwrites-values'},
                            ['X-Header-Add']),
                $modified->($v1, 'Echo', {'Some-Other-Header' => 'this-header-should-be-set',
                                          'X-Header-Add' => 'this-value-should-be-appended'},
                            {'Some-Other-Header' => 'this-header-should-be-set',
                             'X-Header-Add' => 'this-value-should-be-appended'}),
                $modified->($v1, 'Echo', {'X-Header-Remove' => 'this-should-be-removed'},
                            {'X-Header-Remove' => 'this-should-be-removed', 'X-Header-Set' => 'set-overwrites-values'}),
                $modified->($v2, 'EchoTwo', {'X-Header-Set-2' => 'set-header-2', 'X-Header-Add-2' => 'add-header-2',
                                             'X-Header-Remove-2' => 'should-be-removed-2',
                                             'Some-Other-Header' => 'another-header-val'},
                            {'X-Header-Set-1' => 'header-set-1', 'X-Header-Set-2' => 'header-set-2',
                             'X-Header-Add-1' => 'header-add-1', 'X-Header-Add-2' => 'add-header-2,header-add-2',
                             'Some-Other-Header' => 'another-header-val'},
                            ['X-Header-Remove-2']),
                $modified->($v2, 'EchoTwo', {'x-header-set-1' => 'original-set-1', 'x-header-add-1' => 'existing-add-1',
                                             'x-header-remove-1' => 'should-be-removed-1'},
                            {'X-Header-Set-1' => 'header-set-1', 'X-Header-Set-2' => 'header-set-2',
                             'X-Header-Add-1' => 'existing-add-1,header-add-1', 'X-Header-Add-2' => 'header-add-2'},
                            ['X-Header-Remove-1']),
            ],
        }
    },
    {
        name => 'GRPCRouteWeight',
        features => [qw(Gateway GRPCRoute)],
        manifests => ['grpcroute-weight'],
        gateways => [$same],
        accepted => [[$same, 'GRPCRoute', 'weighted-backends']],
        requests => [[$same, 80, {grpc => 'Echo'}, {namespace => $ns}]],
        distributions => [[$same, 80, {grpc => 'Echo'}, {$v1 => 0.7, $v2 => 0.3, $v3 => 0.0}, 500, 0.05]],
    },
    {
        name => 'GRPCRouteNamedRule',
        features => [qw(Gateway GRPCRoute GRPCRouteNamedRouteRule)],
        manifests => ['grpcroute-named-rule'],
        gateways => [$same],
        accepted => [[$same, 'GRPCRoute', 'grpc-named-rules']],
        requests => [
            call($same, $v1, 'Echo'),
            call($same, $v2, 'EchoTwo'),
        ],
    },
];
