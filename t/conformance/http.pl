# GATEWAY-HTTP conformance tests, as their Go sources say
# (conformance/tests/NAME.go in kubernetes-sigs/gateway-api, v1.4): the
# manifests they apply, the Gateways they serve, what status they wait for,
# their requests and what each must get. Read by t/400-conformance.t.
#
# requests: [GATEWAY, LISTENER PORT, REQUEST, EXPECTED]; REQUEST {host,
# path, method, headers}; EXPECTED as the suite's http.ExpectedResponse:
# status (200), backend, namespace, request {host, path, method, headers,
# absent} as the backend must see it, response_headers,
# absent_response_headers, redirect {scheme, host, port, path}. REQUEST
# {backend_sets}: the suite's BackendSetResponseHeaders. EXPECTED
# {mirrored_to}: the pods whose logs must show the request (the suite's
# ExpectMirroredRequest). mirror_shares: [GATEWAY, PORT, REQUEST, POD,
# PERCENT], the suite's testMirroredRequestsDistribution.
# endpoint_slices {SLICE => DEPLOYMENT}: EndpointSlices of the manifests the
# Go test fills with the pods of DEPLOYMENT.
use strict;
use warnings;

my $ns = 'gateway-conformance-infra';

# Request on GATEWAY's port 80 to reach BACKEND in the infra namespace.
sub to { my ($gw, $backend, %req) = @_; [$gw, 80, \%req, {backend => $backend, namespace => $ns}] }
sub answer { my ($gw, $status, %req) = @_; [$gw, 80, \%req, {status => $status}] }

my $same = 'same-namespace';

# TEXT with object NAME at generation N, as the API server counts an edit
# of its spec (the suite's manifests carry none: generation 1).
sub generation {
    my ($text, $name, $n) = @_;
    $text =~ s/^(metadata:\n(?:  .*\n)*?  name: \Q$name\E\n)/$1  generation: $n\n/m or die "no object $name";
    return $text;
}

return [
    {
        name => 'HTTPRouteSimpleSameNamespace',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-simple-same-namespace'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'gateway-conformance-infra-test']],
        requests => [to($same, 'infra-backend-v1', path => '/')],
    },
    {
        name => 'HTTPRouteExactPathMatching',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-exact-path-matching'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'exact-matching']],
        requests => [
            to($same, 'infra-backend-v1', path => '/one'),
            to($same, 'infra-backend-v2', path => '/two'),
            answer($same, 404, path => '/'),
            answer($same, 404, path => '/one/example'),
            answer($same, 404, path => '/two/'),
            answer($same, 404, path => '/Two'),
        ],
    },
    {
        name => 'HTTPRouteMatching',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-matching'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'matching']],
        requests => [
            to($same, 'infra-backend-v1', path => '/'),
            to($same, 'infra-backend-v1', path => '/example'),
            to($same, 'infra-backend-v1', path => '/', headers => {Version => 'one'}),
            to($same, 'infra-backend-v2', path => '/v2'),
            to($same, 'infra-backend-v2', path => '/v2/example'),
            to($same, 'infra-backend-v2', path => '/', headers => {Version => 'two'}),
        ],
    },
    {
        name => 'HTTPRouteHeaderMatching',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-header-matching'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'header-matching']],
        requests => [
            to($same, 'infra-backend-v1', path => '/', headers => {Version => 'one'}),
            to($same, 'infra-backend-v2', path => '/', headers => {Version => 'two'}),
            to($same, 'infra-backend-v1', path => '/', headers => {Version => 'two', Color => 'orange'}),
            to($same, 'infra-backend-v2', path => '/', headers => {Version => 'two', Color => 'blue'}),
            answer($same, 404, path => '/', headers => {Color => 'orange'}),
            answer($same, 404, path => '/', headers => {'Some-Other-Header' => 'one'}),
            to($same, 'infra-backend-v1', path => '/', headers => {Color => 'blue'}),
            to($same, 'infra-backend-v1', path => '/', headers => {Color => 'green'}),
            to($same, 'infra-backend-v2', path => '/', headers => {Color => 'red'}),
            to($same, 'infra-backend-v2', path => '/', headers => {Color => 'yellow'}),
            answer($same, 404, path => '/', headers => {Color => 'purple'}),
        ],
    },
    do {
        my $gw = 'httproute-hostname-intersection';
        my $all = 'httproute-hostname-intersection-all';
        {
            name => 'HTTPRouteHostnameIntersection',
            features => [qw(Gateway HTTPRoute)],
            manifests => ['httproute-hostname-intersection'],
            gateways => [$gw, $all],
            accepted => [[$gw, 'HTTPRoute', qw(specific-host-matches-listener-specific-host
                                               specific-host-matches-listener-wildcard-host
                                               wildcard-host-matches-listener-specific-host
                                               wildcard-host-matches-listener-wildcard-host)],
                         [$all, 'HTTPRoute', 'httproute-hostname-intersection-all']],
            conditions => [
                [$gw, 'HTTPRoute', 'no-intersecting-hosts', qr{^\Q$ns/$gw\E: Accepted=False/NoMatchingListenerHostname$}m],
                [$gw, 'Gateway', $gw, qr{^listener listener-1: attachedRoutes=2$}m],
                [$gw, 'Gateway', $gw, qr{^listener listener-2: attachedRoutes=1$}m],
                [$gw, 'Gateway', $gw, qr{^listener listener-3: attachedRoutes=1$}m],
            ],
            requests => [
                to($gw, 'infra-backend-v1', host => 'very.specific.com', path => '/s1'),
                to($gw, 'infra-backend-v1', host => 'very.specific.com:1234', path => '/s1'),
                answer($gw, 404, host => 'non.matching.com', path => '/s1'),
                answer($gw, 404, host => 'foo.nonmatchingwildcard.io', path => '/s1'),
                answer($gw, 404, host => 'foo.wildcard.io', path => '/s1'),
                answer($gw, 404, host => 'very.specific.com', path => '/non-matching-prefix'),
                to($gw, 'infra-backend-v2', host => 'foo.wildcard.io', path => '/s2'),
                to($gw, 'infra-backend-v2', host => 'bar.wildcard.io', path => '/s2'),
                to($gw, 'infra-backend-v2', host => 'foo.bar.wildcard.io', path => '/s2'),
                answer($gw, 404, host => 'non.matching.com', path => '/s2'),
                answer($gw, 404, host => 'wildcard.io', path => '/s2'),
                answer($gw, 404, host => 'very.specific.com', path => '/s2'),
                answer($gw, 404, host => 'foo.wildcard.io', path => '/non-matching-prefix'),
                to($gw, 'infra-backend-v3', host => 'very.specific.com', path => '/s3'),
                answer($gw, 404, host => 'non.matching.com', path => '/s3'),
                answer($gw, 404, host => 'foo.specific.com', path => '/s3'),
                answer($gw, 404, host => 'foo.wildcard.io', path => '/s3'),
                answer($gw, 404, host => 'very.specific.com', path => '/non-matching-prefix'),
                to($gw, 'infra-backend-v1', host => 'foo.anotherwildcard.io', path => '/s4'),
                to($gw, 'infra-backend-v1', host => 'bar.anotherwildcard.io', path => '/s4'),
                to($gw, 'infra-backend-v1', host => 'foo.bar.anotherwildcard.io', path => '/s4'),
                answer($gw, 404, host => 'anotherwildcard.io', path => '/s4'),
                answer($gw, 404, host => 'foo.wildcard.io', path => '/s4'),
                answer($gw, 404, host => 'very.specific.com', path => '/s4'),
                answer($gw, 404, host => 'foo.anotherwildcard.io', path => '/non-matching-prefix'),
                answer($gw, 404, host => 'specific.but.wrong.com', path => '/s5'),
                answer($gw, 404, host => 'wildcard.io', path => '/s5'),
                to($all, 'infra-backend-v2', host => 'first.com', path => '/'),
                to($all, 'infra-backend-v2', host => 'sub.first.com', path => '/'),
                to($all, 'infra-backend-v2', host => 'second.com', path => '/'),
                to($all, 'infra-backend-v2', host => 'sub.second.com', path => '/'),
                answer($all, 404, host => 'third.com', path => '/'),
                answer($all, 404, host => 'sub.third.com', path => '/'),
            ],
        }
    },
    {
        name => 'HTTPRouteCrossNamespace',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-cross-namespace'],
        gateways => ['backend-namespaces'],
        accepted => [['backend-namespaces', 'HTTPRoute', 'gateway-conformance-web-backend/cross-namespace']],
        requests => [['backend-namespaces', 80, {path => '/'},
                      {backend => 'web-backend', namespace => 'gateway-conformance-web-backend'}]],
    },
    do {
        my $gw = 'httproute-listener-hostname-matching';
        {
            name => 'HTTPRouteListenerHostnameMatching',
            features => [qw(Gateway HTTPRoute)],
            manifests => ['httproute-listener-hostname-matching'],
            gateways => [$gw],
            accepted => [[$gw, 'HTTPRoute', qw(backend-v1 backend-v2 backend-v3)]],
            requests => [
                to($gw, 'infra-backend-v1', host => 'bar.com', path => '/'),
                to($gw, 'infra-backend-v2', host => 'foo.bar.com', path => '/'),
                to($gw, 'infra-backend-v3', host => 'baz.bar.com', path => '/'),
                to($gw, 'infra-backend-v3', host => 'boo.bar.com', path => '/'),
                to($gw, 'infra-backend-v3', host => 'multiple.prefixes.bar.com', path => '/'),
                to($gw, 'infra-backend-v3', host => 'multiple.prefixes.foo.com', path => '/'),
                answer($gw, 404, host => 'foo.com', path => '/'),
                answer($gw, 404, host => 'no.matching.host', path => '/'),
            ],
        }
    },
    {
        name => 'HTTPRouteMatchingAcrossRoutes',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-matching-across-routes'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', qw(matching-part1 matching-part2)]],
        requests => [
            to($same, 'infra-backend-v1', host => 'example.com', path => '/'),
            to($same, 'infra-backend-v1', host => 'example.com', path => '/example'),
            to($same, 'infra-backend-v1', host => 'example.net', path => '/example'),
            to($same, 'infra-backend-v1', host => 'example.com', path => '/example', headers => {Version => 'one'}),
            to($same, 'infra-backend-v2', host => 'example.com', path => '/v2'),
            to($same, 'infra-backend-v1', host => 'example.net', path => '/v2'),
            to($same, 'infra-backend-v2', host => 'example.com', path => '/v2/example'),
            to($same, 'infra-backend-v2', host => 'example.com', path => '/', headers => {Version => 'two'}),
        ],
    },
    do {
        # the request sent, and the request the backend must see
        my $modified = sub {
            my ($sent, $seen) = @_;
            [$same, 80, $sent, {backend => 'infra-backend-v1', namespace => $ns, request => $seen}];
        };
        my @cases = (
            $modified->({path => '/set', headers => {'Some-Other-Header' => 'val'}},
                        {path => '/set', headers => {'Some-Other-Header' => 'val', 'X-Header-Set' => 'set-overwrites-values'}}),
            $modified->({path => '/set', headers => {'Some-Other-Header' => 'val', 'X-Header-Set' => 'some-other-value'}},
                        {path => '/set', headers => {'Some-Other-Header' => 'val', 'X-Header-Set' => 'set-overwrites-values'}}),
            $modified->({path => '/add', headers => {'Some-Other-Header' => 'val'}},
                        {path => '/add', headers => {'Some-Other-Header' => 'val', 'X-Header-Add' => 'add-appends-values'}}),
            $modified->({path => '/add', headers => {'Some-Other-Header' => 'val', 'X-Header-Add' => 'some-other-value'}},
                        {path => '/add', headers => {'Some-Other-Header' => 'val',
                                                     'X-Header-Add' => 'some-other-value,add-appends-values'}}),
            $modified->({path => '/remove', headers => {'X-Header-Remove' => 'val'}},
                        {path => '/remove', absent => ['X-Header-Remove']}),
            $modified->({path => '/multiple', headers => {'X-Header-Set-2' => 'set-val-2', 'X-Header-Add-2' => 'add-val-2',
                                                          'X-Header-Remove-2' => 'remove-val-2',
                                                          'Another-Header' => 'another-header-val'}},
                        {path => '/multiple', headers => {'X-Header-Set-1' => 'header-set-1', 'X-Header-Set-2' => 'header-set-2',
                                                          'X-Header-Add-1' => 'header-add-1',
                                                          'X-Header-Add-2' => 'add-val-2,header-add-2',
                                                          'X-Header-Add-3' => 'header-add-3',
                                                          'Another-Header' => 'another-header-val'},
                         absent => ['X-Header-Remove-1', 'X-Header-Remove-2']}),
            $modified->({path => '/case-insensitivity', headers => {'x-header-set' => 'original-val-set',
                                                                    'x-header-add' => 'original-val-add',
                                                                    'x-header-remove' => 'original-val-remove',
                                                                    'Another-Header' => 'another-header-val'}},
                        {path => '/case-insensitivity', headers => {'X-Header-Set' => 'header-set',
                                                                    'X-Header-Add' => 'original-val-add,header-add',
                                                                    'Another-Header' => 'another-header-val'},
                         absent => ['x-header-remove', 'X-Header-Remove']}),
        );
        ({
            name => 'HTTPRouteRequestHeaderModifier',
            features => [qw(Gateway HTTPRoute)],
            manifests => ['httproute-request-header-modifier'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'request-header-modifier']],
            requests => \@cases,
        }, {
            # the same filters on the rules' backendRefs
            name => 'HTTPRouteBackendRequestHeaderModifier',
            features => [qw(Gateway HTTPRoute HTTPRouteBackendRequestHeaderModification)],
            manifests => ['httproute-request-header-modifier-backend'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'request-header-modifier']],
            requests => \@cases,
        })
    },
    {
        name => 'GatewayListenerUnsupportedProtocol',
        features => [qw(Gateway)],
        manifests => ['gateway-invalid-listeners-unsupported-protocol'],
        gateways => [qw(gateway-only-unsupported-protocols gateway-supported-and-unsupported-protocols)],
        conditions => [
            ['gateway-only-unsupported-protocols', 'Gateway', 'gateway-only-unsupported-protocols',
             qr{^: Accepted=False/ListenersNotValid$}m],
            ['gateway-only-unsupported-protocols', 'Gateway', 'gateway-only-unsupported-protocols',
             qr{^listener invalid: attachedRoutes=0\nlistener invalid: Accepted=False/UnsupportedProtocol$}m],
            ['gateway-supported-and-unsupported-protocols', 'Gateway', 'gateway-supported-and-unsupported-protocols',
             qr{^: Accepted=True/ListenersNotValid$}m],
            ['gateway-supported-and-unsupported-protocols', 'Gateway', 'gateway-supported-and-unsupported-protocols',
             qr{^listener http: supportedKind=HTTPRoute$}m],
            ['gateway-supported-and-unsupported-protocols', 'Gateway', 'gateway-supported-and-unsupported-protocols',
             qr{^listener http: Accepted=True/Accepted$}m],
            ['gateway-supported-and-unsupported-protocols', 'Gateway', 'gateway-supported-and-unsupported-protocols',
             qr{^listener invalid: attachedRoutes=0\nlistener invalid: Accepted=False/UnsupportedProtocol$}m],
        ],
    },
    {
        name => 'GatewayInvalidParametersRef',
        features => [qw(Gateway)],
        manifests => ['gateway-invalid-parameters-ref'],
        gateways => ['gateway-invalid-parameters-ref'],
        conditions => [['gateway-invalid-parameters-ref', 'Gateway', 'gateway-invalid-parameters-ref',
                        qr{^: Accepted=False/InvalidParameters$}m]],
    },
    do {
        my ($one, $two, $bad) = qw(gateway-with-one-attached-route gateway-with-two-attached-routes
                                   unresolved-gateway-with-one-attached-unresolved-route);
        {
            # the listeners and routes of the suite's manifests, as the issue
            # and the test's comments name them (the stored Go source is older)
            name => 'GatewayWithAttachedRoutes',
            features => [qw(Gateway HTTPRoute)],
            manifests => ['gateway-with-attached-routes'],
            gateways => [$one, $two, $bad],
            conditions => [
                [$one, 'Gateway', $one, qr{^listener http: attachedRoutes=1\nlistener http: supportedKind=HTTPRoute\n}m],
                [$one, 'Gateway', $one, qr{^listener http: Accepted=True/.*\n(?:.*\n)*listener http: ResolvedRefs=True/}m],
                [$two, 'Gateway', $two, qr{^listener http: attachedRoutes=2$}m],
                [$two, 'HTTPRoute', 'http-route-not-accepted', qr{^\Q$ns/$two\E: Accepted=False/NoMatchingListenerHostname$}m],
                [$bad, 'Gateway', $bad, qr{^listener tls: attachedRoutes=1$}m],
                [$bad, 'Gateway', $bad, qr{^listener tls: Accepted=True/}m],
                [$bad, 'Gateway', $bad, qr{^listener tls: Programmed=False/}m],
                [$bad, 'Gateway', $bad, qr{^listener tls: ResolvedRefs=False/InvalidCertificateRef$}m],
                [$bad, 'HTTPRoute', 'http-route-4', qr{^\Q$ns/$bad\E: Accepted=True/}m],
                [$bad, 'HTTPRoute', 'http-route-4', qr{^\Q$ns/$bad\E: ResolvedRefs=False/BackendNotFound$}m],
            ],
        }
    },
    do {
        my $gw = 'gateway-with-two-listeners-and-one-attached-route';
        {
            name => 'GatewayWithAttachedRoutesWithPort8080',
            features => [qw(Gateway GatewayPort8080 HTTPRoute)],
            manifests => ['gateway-with-attached-routes-with-port-8080'],
            gateways => [$gw],
            conditions => [
                [$gw, 'Gateway', $gw, qr{^listener http-unattached: attachedRoutes=0\nlistener http-unattached: supportedKind=HTTPRoute\n}m],
                [$gw, 'Gateway', $gw, qr{^listener http-unattached: Accepted=True/.*\n(?:.*\n)*listener http-unattached: ResolvedRefs=True/}m],
                [$gw, 'Gateway', $gw, qr{^listener http: attachedRoutes=1\nlistener http: supportedKind=HTTPRoute\n}m],
                [$gw, 'Gateway', $gw, qr{^listener http: Accepted=True/.*\n(?:.*\n)*listener http: ResolvedRefs=True/}m],
            ],
        }
    },
    do {
        # 253 characters, the longest name the API server takes
        my $gw = 'gateway-name-maximum-length-' . ('a' x (253 - length 'gateway-name-maximum-length-'));
        {
            name => 'GatewayNameMaximumLength',
            features => [qw(Gateway)],
            manifests => ['gateway-name-maximum-length'],
            gateways => [$gw],
            # GatewayMustHaveLatestConditions: conditions, none stale
            conditions => [[$gw, 'Gateway', $gw, qr{^: Accepted=}m],
                           [$gw, 'Gateway', $gw, qr{\A(?!(?s:.*)stale)}]],
        }
    },
    {
        name => 'HTTPRouteNoBackendRefs',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-omitted-backendrefs'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'omitted-backendrefs']],
        requests => [
            to($same, 'infra-backend-v1', path => '/forward'),
            answer($same, 500, path => '/omitted-no-forward'),
            answer($same, 500, path => '/empty-no-forward'),
        ],
    },
    {
        name => 'HTTPRouteInvalidNonExistentBackendRef',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-invalid-nonexistent-backendref'],
        gateways => [$same],
        admitted => [[$same, 'HTTPRoute', 'invalid-nonexistent-backend-ref']],
        conditions => [[$same, 'HTTPRoute', 'invalid-nonexistent-backend-ref',
                        qr{^\Q$ns/$same\E: ResolvedRefs=False/BackendNotFound$}m]],
        requests => [answer($same, 500, method => 'GET', path => '/')],
    },
    {
        name => 'HTTPRouteInvalidBackendRefUnknownKind',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-invalid-backendref-unknown-kind'],
        gateways => [$same],
        admitted => [[$same, 'HTTPRoute', 'invalid-backend-ref-unknown-kind']],
        conditions => [[$same, 'HTTPRoute', 'invalid-backend-ref-unknown-kind',
                        qr{^\Q$ns/$same\E: ResolvedRefs=False/InvalidKind$}m]],
        requests => [answer($same, 500, method => 'GET', path => '/v2')],
    },
    {
        name => 'HTTPRouteInvalidCrossNamespaceBackendRef',
        features => [qw(Gateway HTTPRoute ReferenceGrant)],
        manifests => ['httproute-invalid-cross-namespace-backend-ref'],
        gateways => [$same],
        admitted => [[$same, 'HTTPRoute', 'invalid-cross-namespace-backend-ref']],
        conditions => [[$same, 'HTTPRoute', 'invalid-cross-namespace-backend-ref',
                        qr{^\Q$ns/$same\E: ResolvedRefs=False/RefNotPermitted$}m]],
        requests => [answer($same, 500, method => 'GET', path => '/')],
    },
    {
        name => 'HTTPRouteInvalidCrossNamespaceParentRef',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-invalid-cross-namespace-parent-ref'],
        gateways => [$same],
        conditions => [
            [$same, 'HTTPRoute', 'gateway-conformance-web-backend/invalid-cross-namespace-parent-ref',
             qr{^\Q$ns/$same\E: Accepted=False/NotAllowedByListeners$}m],
            [$same, 'HTTPRoute', 'gateway-conformance-web-backend/invalid-cross-namespace-parent-ref',
             qr{^\Q$ns/$same\E: ResolvedRefs=True/}m],
            [$same, 'HTTPRoute', 'gateway-conformance-web-backend/invalid-cross-namespace-parent-ref',
             qr{\A(?!.*Accepted=True)}s],
            [$same, 'Gateway', $same, qr{\A(?!.*attachedRoutes=[1-9])}s],
        ],
    },
    {
        name => 'HTTPRouteInvalidParentRefNotMatchingSectionName',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-invalid-parentref-not-matching-section-name'],
        gateways => [$same],
        conditions => [
            [$same, 'HTTPRoute', 'httproute-listener-not-matching-section-name',
             qr{^\Q$ns/$same\E: Accepted=False/NoMatchingParent$}m],
            [$same, 'HTTPRoute', 'httproute-listener-not-matching-section-name', qr{\A(?!.*Accepted=True)}s],
            [$same, 'Gateway', $same, qr{\A(?!.*attachedRoutes=[1-9])}s],
        ],
    },
    {
        # the suite's v1.4 manifest: one route "reference-grant" to
        # web-backend, and grants that each miss in one field (the stored
        # Go source is older: another route name and a sibling backend)
        name => 'HTTPRouteInvalidReferenceGrant',
        features => [qw(Gateway HTTPRoute ReferenceGrant)],
        manifests => ['httproute-invalid-reference-grant'],
        gateways => [$same],
        admitted => [[$same, 'HTTPRoute', 'reference-grant']],
        conditions => [[$same, 'HTTPRoute', 'reference-grant',
                        qr{^\Q$ns/$same\E: ResolvedRefs=False/RefNotPermitted$}m]],
        requests => [answer($same, 500, method => 'GET', path => '/')],
    },
    {
        name => 'HTTPRoutePartiallyInvalidViaInvalidReferenceGrant',
        features => [qw(Gateway HTTPRoute ReferenceGrant)],
        manifests => ['httproute-partially-invalid-via-invalid-reference-grant'],
        gateways => [$same],
        admitted => [[$same, 'HTTPRoute', 'invalid-reference-grant']],
        conditions => [[$same, 'HTTPRoute', 'invalid-reference-grant',
                        qr{^\Q$ns/$same\E: ResolvedRefs=False/RefNotPermitted$}m]],
        requests => [
            answer($same, 500, method => 'GET', path => '/v2'),
            [$same, 80, {method => 'GET', path => '/'},
             {backend => 'app-backend-v1', namespace => 'gateway-conformance-app-backend'}],
        ],
    },
    {
        name => 'HTTPRouteReferenceGrant',
        features => [qw(Gateway HTTPRoute ReferenceGrant)],
        manifests => ['httproute-reference-grant'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'reference-grant']],
        requests => [[$same, 80, {method => 'GET', path => '/'},
                      {backend => 'web-backend', namespace => 'gateway-conformance-web-backend'}]],
    },
    {
        name => 'HTTPRouteDisallowedKind',
        features => [qw(Gateway HTTPRoute TLSRoute)],
        manifests => ['httproute-disallowed-kind'],
        gateways => ['tlsroutes-only'],
        conditions => [
            ['tlsroutes-only', 'HTTPRoute', 'disallowed-kind', qr{^\Q$ns\E/tlsroutes-only: ResolvedRefs=True/}m],
            ['tlsroutes-only', 'HTTPRoute', 'disallowed-kind',
             qr{^\Q$ns\E/tlsroutes-only: Accepted=False/NotAllowedByListeners$}m],
            ['tlsroutes-only', 'HTTPRoute', 'disallowed-kind', qr{\A(?!.*Accepted=True)}s],
            ['tlsroutes-only', 'Gateway', 'tlsroutes-only', qr{\A(?!.*attachedRoutes=[1-9])}s],
        ],
    },
    {
        name => 'GatewayInvalidRouteKind',
        features => [qw(Gateway)],
        manifests => ['gateway-invalid-route-kind'],
        gateways => [qw(gateway-only-invalid-route-kind gateway-supported-and-invalid-route-kind)],
        conditions => [
            ['gateway-only-invalid-route-kind', 'Gateway', 'gateway-only-invalid-route-kind',
             qr{\A(?!.*supportedKind=)}s],
            ['gateway-only-invalid-route-kind', 'Gateway', 'gateway-only-invalid-route-kind',
             qr{^listener http: ResolvedRefs=False/InvalidRouteKinds$}m],
            ['gateway-supported-and-invalid-route-kind', 'Gateway', 'gateway-supported-and-invalid-route-kind',
             qr{^listener http: supportedKind=HTTPRoute$}m],
            ['gateway-supported-and-invalid-route-kind', 'Gateway', 'gateway-supported-and-invalid-route-kind',
             qr{^listener http: ResolvedRefs=False/InvalidRouteKinds$}m],
        ],
    },
    {
        name => 'HTTPRouteQueryParamMatching',
        features => [qw(Gateway HTTPRoute HTTPRouteQueryParamMatching)],
        manifests => ['httproute-query-param-matching'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'query-param-matching']],
        requests => [
            to($same, 'infra-backend-v1', path => '/?animal=whale'),
            to($same, 'infra-backend-v2', path => '/?animal=dolphin'),
            to($same, 'infra-backend-v3', path => '/?animal=dolphin&color=blue'),
            to($same, 'infra-backend-v3', path => '/?ANIMAL=Whale'),
            to($same, 'infra-backend-v1', path => '/?animal=whale&otherparam=irrelevant'),
            to($same, 'infra-backend-v2', path => '/?animal=dolphin&color=yellow'),
            answer($same, 404, path => '/?color=blue'),
            answer($same, 404, path => '/?animal=dog'),
            answer($same, 404, path => '/?animal=whaledolphin'),
            answer($same, 404, path => '/'),
            to($same, 'infra-backend-v1', path => '/path1?animal=whale'),
            to($same, 'infra-backend-v2', path => '/?animal=whale', headers => {version => 'one'}),
            to($same, 'infra-backend-v3', path => '/path2?animal=whale', headers => {version => 'two'}),
            to($same, 'infra-backend-v1', path => '/path3?animal=shark'),
            to($same, 'infra-backend-v1', path => '/path4?animal=kraken', headers => {version => 'three'}),
            answer($same, 404, path => '/?animal=shark'),
            answer($same, 404, path => '/path4?animal=kraken'),
            to($same, 'infra-backend-v1', path => '/path5?animal=hydra'),
            to($same, 'infra-backend-v3', path => '/?animal=hydra', headers => {version => 'four'}),
        ],
    },
    {
        name => 'HTTPRouteMethodMatching',
        features => [qw(Gateway HTTPRoute HTTPRouteMethodMatching)],
        manifests => ['httproute-method-matching'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'method-matching']],
        requests => [
            to($same, 'infra-backend-v1', method => 'POST', path => '/'),
            to($same, 'infra-backend-v2', method => 'GET', path => '/'),
            answer($same, 404, method => 'HEAD', path => '/'),
            to($same, 'infra-backend-v1', method => 'GET', path => '/path1'),
            to($same, 'infra-backend-v2', method => 'PUT', path => '/', headers => {version => 'one'}),
            to($same, 'infra-backend-v3', method => 'POST', path => '/path2', headers => {version => 'two'}),
            to($same, 'infra-backend-v1', method => 'PATCH', path => '/path3'),
            to($same, 'infra-backend-v1', method => 'DELETE', path => '/path4', headers => {version => 'three'}),
            answer($same, 404, method => 'PUT', path => '/'),
            answer($same, 404, method => 'DELETE', path => '/path4'),
            to($same, 'infra-backend-v1', method => 'PATCH', path => '/path5'),
            to($same, 'infra-backend-v2', method => 'PATCH', path => '/', headers => {version => 'four'}),
        ],
    },
    {
        name => 'GatewayClassObservedGenerationBump',
        features => [qw(Gateway)],
        manifests => ['gatewayclass-observed-generation-bump'],
        gateways => [$same],  # any Gateway: status.yaml holds every GatewayClass of ours
        conditions => [[$same, 'GatewayClass', 'gatewayclass-observed-generation-bump',
                        qr{\Ageneration=1\n: Accepted=True/Accepted\n(?!.*stale)}s]],
        steps => [{
            edit => sub {
                my $text = shift;
                return $text unless $text =~ s/description: "old"/description: "new"/;
                return generation($text, 'gatewayclass-observed-generation-bump', 2);
            },
            conditions => [[$same, 'GatewayClass', 'gatewayclass-observed-generation-bump',
                            qr{\Ageneration=2\n: Accepted=True/Accepted\n(?!.*stale)}s]],
        }],
    },
    {
        name => 'GatewayObservedGenerationBump',
        features => [qw(Gateway)],
        manifests => ['gateway-observed-generation-bump'],
        gateways => ['gateway-observed-generation-bump'],
        conditions => [['gateway-observed-generation-bump', 'Gateway', 'gateway-observed-generation-bump',
                        qr{\Ageneration=1\n(?!.*stale)}s]],
        steps => [{
            edit => sub {
                my $text = shift;
                return $text unless $text =~ s/(          from: All\n)/$1    - name: alternate\n      hostname: "foo.com"\n      port: 80\n      protocol: HTTP\n      allowedRoutes:\n        namespaces:\n          from: All\n/;
                return generation($text, 'gateway-observed-generation-bump', 2);
            },
            conditions => [['gateway-observed-generation-bump', 'Gateway', 'gateway-observed-generation-bump',
                            qr{\Ageneration=2\n(?:address=.*\n)?: Accepted=True/Accepted\n: Programmed=True/Programmed\n(?!.*stale)}s],
                           ['gateway-observed-generation-bump', 'Gateway', 'gateway-observed-generation-bump',
                            qr{^listener alternate: Accepted=True/Accepted$}m]],
        }],
    },
    {
        name => 'HTTPRouteObservedGenerationBump',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-observed-generation-bump'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'observed-generation-bump']],
        requests => [to($same, 'infra-backend-v1', path => '/')],
        steps => [{
            edit => sub {
                my $text = shift;
                return $text unless $text =~ s/- name: infra-backend-v1/- name: infra-backend-v2/;
                return generation($text, 'observed-generation-bump', 2);
            },
            accepted => [[$same, 'HTTPRoute', 'observed-generation-bump']],
            conditions => [[$same, 'HTTPRoute', 'observed-generation-bump', qr{\Ageneration=2\n}]],
            # the new generation is served too
            requests => [to($same, 'infra-backend-v2', path => '/')],
        }],
    },
    do {
        my $gw = 'same-namespace-with-https-listener';
        my $tls = sub {
            my ($sni, $host, $expected) = @_;
            [$gw, 443, {sni => $sni, host => $host, path => '/'}, $expected];
        };
        my $v1 = {backend => 'infra-backend-v1', namespace => $ns};
        my $v2 = {backend => 'infra-backend-v2', namespace => $ns};
        {
            # the suite's v1.4 manifest: the route without hostnames is
            # attached to the https-with-hostname listener and goes to
            # infra-backend-v2 (the stored Go source is older); a Host
            # unlike the SNI belongs to ...DetectMisdirectedRequests
            name => 'HTTPRouteHTTPSListener',
            features => [qw(Gateway HTTPRoute)],
            manifests => ['httproute-https-listener'],
            gateways => [$gw],
            accepted => [[$gw, 'HTTPRoute', qw(httproute-https-test httproute-https-test-no-hostname)]],
            requests => [
                $tls->('example.org', 'example.org', $v1),
                $tls->('second-example.org', 'second-example.org', $v2),
                $tls->('unknown-example.org', 'unknown-example.org', {status => 404}),
            ],
        }
    },
    do {
        # the listener the SNI chose must be the one the Host belongs to:
        # another listener's host gets 421, a host no route serves 404;
        # over HTTP/2, as the Go test sends it (roundtripper.H2Protocol)
        my $gw = 'same-namespace-with-https-listener';
        my $tls = sub {
            my ($sni, $host, $expected) = @_;
            [$gw, 443, {sni => $sni, host => $host, path => '/detect-misdirected-requests', h2 => 1},
             ref $expected ? {backend => $expected->[0], namespace => $ns} : {status => $expected}];
        };
        {
            name => 'HTTPRouteHTTPSListenerDetectMisdirectedRequests',
            features => [qw(Gateway HTTPRoute GatewayHTTPSListenerDetectMisdirectedRequests)],
            manifests => ['httproute-https-listener-detect-misdirected-requests'],
            gateways => [$gw],
            accepted => [[$gw, 'HTTPRoute', map { "https-listener-detect-misdirected-requests-test-$_" } 1 .. 4]],
            requests => [
                $tls->('example.org', 'example.org', ['infra-backend-v1']),
                $tls->('example.org', 'second-example.org', 421),
                $tls->('example.org', 'unknown-example.org', 404),
                $tls->('second-example.org', 'second-example.org', ['infra-backend-v2']),
                $tls->('second-example.org', 'example.org', 421),
                $tls->('second-example.org', 'unknown-example.org', 421),
                $tls->('third-example.wildcard.org', 'third-example.wildcard.org', ['infra-backend-v3']),
                $tls->('third-example.wildcard.org', 'fith-example.wildcard.org', ['infra-backend-v3']),
                $tls->('third-example.wildcard.org', 'fourth-example.wildcard.org', 421),
                $tls->('third-example.wildcard.org', 'second-example.org', 421),
                $tls->('third-example.wildcard.org', 'unknown-example.org', 421),
                $tls->('fourth-example.wildcard.org', 'fourth-example.wildcard.org', ['infra-backend-v1']),
                $tls->('fourth-example.wildcard.org', 'fith-example.wildcard.org', 421),
                $tls->('unknown-example.org', 'example.org', ['infra-backend-v1']),
                $tls->('unknown-example.org', 'unknown-example.org', 404),
            ],
        }
    },
    do {
        # the echo's retry simulation: the first succeedAfter tries fail
        # with responseCode; a uuid of each case's own
        my $uuid = 0;
        my $retried = sub {
            my ($path, $code, $after, $want) = @_;
            $uuid++;
            [$same, 80, {path => "$path?responseCode=$code&succeedAfter=$after&uuid=case-$uuid"},
             $want == 200 ? {backend => 'infra-backend-v3', namespace => $ns} : {status => $want}]
        };
        my ($three, $all) = ('/retry/code-500-attempts-3', '/retry/code-all-attempts-2');
        {
            name => 'HTTPRouteRetry',
            features => [qw(Gateway HTTPRoute HTTPRouteRetry)],
            manifests => ['httproute-retry'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'retries']],
            requests => [$retried->($three, 500, 2, 200), $retried->($three, 500, 4, 500),
                         $retried->($three, 503, 2, 503),
                         map { ($retried->($all, $_, 1, 200), $retried->($all, $_, 3, $_)) } 500, 502, 503, 504],
        }
    },
    do {
        # assertConsistentRetryBehaviour: each case three times in a row (the
        # suite's consecutive successes), a uuid of each probe's own
        my $uuid = 0;
        my $probes = sub {
            my ($path, $query, $want) = @_;
            map {
                $uuid++;
                [$same, 80, {path => "$path?$query&uuid=connection-$uuid"},
                 $want == 200 ? {backend => 'infra-backend-v3', namespace => $ns} : {status => [500, 503]}]
            } 1 .. 3;
        };
        my $path = '/retry/no-status-code-attempts-3';
        {
            # every try reset by the backend (echo-basic's default failure)
            name => 'HTTPRouteRetryConnectionError',
            features => [qw(Gateway HTTPRoute HTTPRouteRetry HTTPRouteRetryConnectionError)],
            manifests => ['httproute-retry-connection-error'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'retries-connection-error']],
            requests => [$probes->($path, 'succeedAfter=2', 200), $probes->($path, 'succeedAfter=4', 503)],
        }
    },
    do {
        my $uuid = 0;
        my $probes = sub {
            my ($path, $query, $want) = @_;
            map {
                $uuid++;
                [$same, 80, {path => "$path?$query&uuid=timeouts-$uuid"},
                 $want == 200 ? {backend => 'infra-backend-v3', namespace => $ns} : {status => $want}]
            } 1 .. 3;
        };
        my ($backend, $request) = ('/retry/backend-request-timeout-200ms', '/retry/request-timeout-200ms');
        {
            name => 'HTTPRouteRetryWithTimeouts',
            features => [qw(Gateway HTTPRoute HTTPRouteRetry HTTPRouteRetryBackendTimeout HTTPRouteRequestTimeout
                            HTTPRouteBackendTimeout)],
            manifests => ['httproute-retry-with-timeouts'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'retries-with-timeouts']],
            requests => [$probes->($backend, 'responseCode=500&succeedAfter=2&delayRetry=300ms', 200),
                         $probes->($backend, 'responseCode=500&succeedAfter=3&delayRetry=300ms', 504),
                         $probes->($request, 'responseCode=500&succeedAfter=1', 200),
                         $probes->($request, 'responseCode=500&succeedAfter=4&delayRetry=100ms', 504)],
        }
    },
    {
        # Service port appProtocol kubernetes.io/h2c (echo-basic's H2C_PORT,
        # which here speaks HTTP/2 by prior knowledge only), reached by a
        # client speaking HTTP/2 by prior knowledge
        name => 'HTTPRouteBackendProtocolH2C',
        features => [qw(Gateway HTTPRoute HTTPRouteBackendProtocolH2C)],
        manifests => ['httproute-backend-protocol-h2c'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'backend-protocol-h2c']],
        requests => [[$same, 80, {h2c => 1, path => '/'}, {backend => 'infra-backend-v1', namespace => $ns}]],
    },
    {
        # Service port appProtocol kubernetes.io/ws: the Upgrade reaches it
        name => 'HTTPRouteBackendProtocolWebSocket',
        features => [qw(Gateway HTTPRoute HTTPRouteBackendProtocolWebSocket)],
        manifests => ['httproute-backend-protocol-websocket'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'backend-protocol-ws']],
        requests => [[$same, 80, {websocket => 1, path => '/ws'}, {}]],
    },
    do {
        # preflights are answered by the Gateway: the suite takes an answer
        # that is not JSON as the request made (OPTIONS, no path, no namespace)
        my $preflight = {method => 'OPTIONS', path => '', host => ''};
        my $h12 = ['x-header-1, x-header-2', 'x-header-2, x-header-1'];
        my $ask = sub {
            my ($method, $path, $origin, %headers) = @_;
            {method => $method, path => $path, headers => {Origin => $origin, %headers}};
        };
        my $listed = {'access-control-allow-methods' => ['GET, OPTIONS', 'OPTIONS, GET'],
                      'access-control-allow-headers' => $h12,
                      'access-control-expose-headers' => ['x-header-3, x-header-4', 'x-header-4, x-header-3'],
                      'access-control-max-age' => ['3600'], 'access-control-allow-credentials' => ['true']};
        my %ask12 = ('access-control-request-method' => 'GET', 'access-control-request-headers' => 'x-header-1, x-header-2');
        my %put12 = ('access-control-request-method' => 'PUT', 'access-control-request-headers' => 'x-header-1, x-header-2');
        my @wildcard_origin = ('https://foobar.com', '*');
        {
            name => 'HTTPRouteCORS',
            features => [qw(Gateway HTTPRoute HTTPRouteCORS)],
            manifests => ['httproute-cors'],
            gateways => [$same],
            accepted => [map { [$same, 'HTTPRoute', $_] } qw(cors-multiple-origins-methods-headers cors-wildcard-methods
                                                            cors-wildcard-origin cors-wildcard-methods-headers)],
            requests => [
                (map {
                    my ($origin, @status) = @$_;
                    [$same, 80, $ask->('OPTIONS', '/cors-1', $origin, %ask12),
                     {status => \@status, request => $preflight, namespace => '', ignore_whitespace => 1,
                      valid_header_values => {'access-control-allow-origin' => [$origin], %$listed}}]
                } ['https://www.foo.com', 200, 204], ['https://www.bar.com', 200], ['https://xpto.www.bar.com', 200]),
                [$same, 80, $ask->('OPTIONS', '/cors-1', 'https://foobar.com', 'access-control-request-method' => 'GET'),
                 {status => [200, 204, 403], request => $preflight, namespace => '',
                  absent_response_headers => ['access-control-allow-origin']}],
                (map {
                    [$same, 80, $ask->('GET', '/cors-1', $_, %ask12),
                     {status => [200, 204], namespace => $ns, response_headers => {'access-control-allow-origin' => $_}}]
                } 'https://www.foo.com', 'https://www.bar.com'),
                [$same, 80, $ask->('GET', '/cors-1', 'https://foobar.com', 'access-control-request-method' => 'GET'),
                 {namespace => $ns, absent_response_headers => ['access-control-allow-origin']}],
                [$same, 80, $ask->('OPTIONS', '/cors-2', 'https://www.foo.com', 'access-control-request-method' => 'POST'),
                 {status => [200, 204], request => $preflight, namespace => '',
                  valid_header_values => {'access-control-allow-methods' => ['POST', '*']},
                  response_headers => {'access-control-allow-origin' => 'https://www.foo.com'},
                  absent_response_headers => ['access-control-allow-credentials']}],
                [$same, 80, $ask->('OPTIONS', '/cors-2', 'https://www.foo.com', 'access-control-request-method' => 'POST'),
                 {request => $preflight, namespace => '', absent_response_headers => ['Access-Control-Allow-Credentials']}],
                (map {
                    my $origin = $_;
                    [$same, 80, $ask->('OPTIONS', '/cors-wildcard-origin', $origin, 'access-control-request-method' => 'PUT'),
                     {status => [200, 204], request => $preflight, namespace => '',
                      valid_header_values => {'access-control-allow-origin' => [$origin, '*'],
                                              'access-control-allow-methods' => ['PUT']},
                      absent_response_headers => ['Access-Control-Allow-Credentials']}]
                } 'https://foobar.com', 'https://foobar.com:12345'),
                [$same, 80, $ask->('PUT', '/cors-wildcard-origin', 'https://foobar.com:12345'),
                 {status => [200], namespace => $ns,
                  valid_header_values => {'access-control-allow-origin' => ['https://foobar.com:12345', '*']}}],
                [$same, 80, $ask->('PUT', '/cors-wildcard-origin', 'https://foobar.com'),
                 {status => [200, 204], namespace => $ns,
                  valid_header_values => {'access-control-allow-origin' => \@wildcard_origin},
                  absent_response_headers => ['Access-Control-Allow-Credentials']}],
                [$same, 80, $ask->('OPTIONS', '/cors-wildcard-methods-headers', 'https://other.foo.com', %put12),
                 {request => $preflight, namespace => '', ignore_whitespace => 1,
                  valid_header_values => {'access-control-allow-origin' => ['https://other.foo.com'],
                                          'access-control-allow-methods' => ['PUT'],
                                          'access-control-allow-headers' => $h12,
                                          'access-control-allow-credentials' => ['true']}}],
                [$same, 80, $ask->('OPTIONS', '/cors-wildcard-methods-headers-unauth', 'https://other.foo.com', %put12),
                 {request => $preflight, namespace => '', ignore_whitespace => 1,
                  valid_header_values => {'access-control-allow-origin' => ['https://other.foo.com', '*'],
                                          'access-control-allow-methods' => ['PUT', '*'],
                                          'access-control-allow-headers' => [@$h12, '*']},
                  absent_response_headers => ['access-control-allow-credentials']}],
                [$same, 80, $ask->('GET', '/cors-wildcard-methods-headers', 'https://other.foo.com',
                                   Authorization => 'Bearer test'),
                 {namespace => $ns, valid_header_values => {'access-control-allow-origin' => ['https://other.foo.com'],
                                                            'access-control-allow-credentials' => ['true']}}],
                [$same, 80, $ask->('GET', '/cors-wildcard-methods-headers-unauth', 'https://other.foo.com',
                                   Authorization => 'Bearer test'),
                 {namespace => $ns, valid_header_values => {'access-control-allow-origin' => ['https://other.foo.com']},
                  absent_response_headers => ['access-control-allow-credentials']}],
            ],
        }
    },
    do {
        # the suite's UsableNetworkAddresses and UnusableNetworkAddresses: an
        # address of this host's loopback, and one of TEST-NET-1 it has not
        my ($gw, $usable, $unusable) = ('gateway-static-addresses', '127.0.0.9', '192.0.2.1');
        my $state = sub {
            my ($accepted, $programmed) = @_;
            [[$gw, 'Gateway', $gw, qr{^: Accepted=$accepted$}m], [$gw, 'Gateway', $gw, qr{^: Programmed=$programmed$}m]];
        };
        {
            name => 'GatewayStaticAddresses',
            features => [qw(Gateway GatewayStaticAddresses)],
            manifests => ['gateway-static-addresses'],
            gateways => [$gw],
            prepare => sub {
                my $text = shift;
                $text =~ s/value: "PLACEHOLDER_UNUSABLE_ADDRS"/type: IPAddress\n    value: "$unusable"/;
                $text =~ s/value: "PLACEHOLDER_USABLE_ADDRS"/type: IPAddress\n    value: "$usable"/;
                return $text;
            },
            # an address type nobody supports: not Accepted
            conditions => $state->('False/UnsupportedAddress', 'False/Invalid'),
            steps => [
                {   # without it: Accepted, not Programmed (the address is not this host's)
                    edit => sub { $_[0] =~ s/  - type: "test\/fake-invalid-type"\n    value: "fake address teehee!"\n//r },
                    conditions => $state->('True/Accepted', 'False/AddressNotUsable'),
                },
                {   # only the usable one left: Programmed, and it is the status address
                    edit => sub { $_[0] =~ s/  - type: IPAddress\n    value: "\Q$unusable\E"\n//r },
                    conditions => [@{$state->('True/Accepted', 'True/Programmed')},
                                   [$gw, 'Gateway', $gw, qr{^address=\Q$usable\E$}m],
                                   [$gw, 'Gateway', $gw, qr{^listener http: Accepted=True/Accepted$}m],
                                   [$gw, 'Gateway', $gw, qr{^listener http: ResolvedRefs=True/ResolvedRefs$}m],
                                   [$gw, 'Gateway', $gw, qr{^listener http: attachedRoutes=0$}m]],
                },
            ],
        }
    },
    {
        # an IPAddress without value: the Gateway is given an address
        name => 'GatewayOptionalAddressValue',
        features => [qw(Gateway GatewayAddressEmpty)],
        manifests => ['gateway-optional-address-value'],
        gateways => ['gateway-without-address-value'],
        conditions => [['gateway-without-address-value', 'Gateway', 'gateway-without-address-value',
                        qr{^address=127\.0\.0\.2$}m]],
    },
    {
        name => 'GatewaySecretInvalidReferenceGrant',
        features => [qw(Gateway ReferenceGrant)],
        manifests => ['gateway-secret-invalid-reference-grant'],
        gateways => ['gateway-secret-invalid-reference-grant'],
        conditions => [
            ['gateway-secret-invalid-reference-grant', 'Gateway', 'gateway-secret-invalid-reference-grant', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
            ['gateway-secret-invalid-reference-grant', 'Gateway', 'gateway-secret-invalid-reference-grant', qr{^listener https: ResolvedRefs=False/RefNotPermitted$}m],
        ],
    },
    {
        name => 'GatewaySecretMissingReferenceGrant',
        features => [qw(Gateway ReferenceGrant)],
        manifests => ['gateway-secret-missing-reference-grant'],
        gateways => ['gateway-secret-missing-reference-grant'],
        conditions => [
            ['gateway-secret-missing-reference-grant', 'Gateway', 'gateway-secret-missing-reference-grant', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
            ['gateway-secret-missing-reference-grant', 'Gateway', 'gateway-secret-missing-reference-grant', qr{^listener https: ResolvedRefs=False/RefNotPermitted$}m],
        ],
    },
    {
        name => 'GatewaySecretReferenceGrantAllInNamespace',
        features => [qw(Gateway ReferenceGrant)],
        manifests => ['gateway-secret-reference-grant-all-in-namespace'],
        gateways => ['gateway-secret-reference-grant-all-in-namespace'],
        conditions => [
            ['gateway-secret-reference-grant-all-in-namespace', 'Gateway', 'gateway-secret-reference-grant-all-in-namespace', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
            ['gateway-secret-reference-grant-all-in-namespace', 'Gateway', 'gateway-secret-reference-grant-all-in-namespace', qr{^listener https: ResolvedRefs=True/ResolvedRefs$}m],
            ['gateway-secret-reference-grant-all-in-namespace', 'Gateway', 'gateway-secret-reference-grant-all-in-namespace', qr{^listener https: Programmed=True/Programmed$}m],
        ],
    },
    {
        name => 'GatewaySecretReferenceGrantSpecific',
        features => [qw(Gateway ReferenceGrant)],
        manifests => ['gateway-secret-reference-grant-specific'],
        gateways => ['gateway-secret-reference-grant-specific'],
        conditions => [
            ['gateway-secret-reference-grant-specific', 'Gateway', 'gateway-secret-reference-grant-specific', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
            ['gateway-secret-reference-grant-specific', 'Gateway', 'gateway-secret-reference-grant-specific', qr{^listener https: ResolvedRefs=True/ResolvedRefs$}m],
            ['gateway-secret-reference-grant-specific', 'Gateway', 'gateway-secret-reference-grant-specific', qr{^listener https: Programmed=True/Programmed$}m],
        ],
    },
    {
        name => 'GatewayInvalidTLSConfiguration',
        features => [qw(Gateway)],
        manifests => ['gateway-invalid-tls-configuration'],
        gateways => [qw(gateway-certificate-nonexistent-secret gateway-certificate-unsupported-group gateway-certificate-unsupported-kind gateway-certificate-malformed-secret)],
        conditions => [
            ['gateway-certificate-nonexistent-secret', 'Gateway', 'gateway-certificate-nonexistent-secret', qr{^listener https: ResolvedRefs=False/InvalidCertificateRef$}m],
            ['gateway-certificate-nonexistent-secret', 'Gateway', 'gateway-certificate-nonexistent-secret', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
            ['gateway-certificate-unsupported-group', 'Gateway', 'gateway-certificate-unsupported-group', qr{^listener https: ResolvedRefs=False/InvalidCertificateRef$}m],
            ['gateway-certificate-unsupported-group', 'Gateway', 'gateway-certificate-unsupported-group', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
            ['gateway-certificate-unsupported-kind', 'Gateway', 'gateway-certificate-unsupported-kind', qr{^listener https: ResolvedRefs=False/InvalidCertificateRef$}m],
            ['gateway-certificate-unsupported-kind', 'Gateway', 'gateway-certificate-unsupported-kind', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
            ['gateway-certificate-malformed-secret', 'Gateway', 'gateway-certificate-malformed-secret', qr{^listener https: ResolvedRefs=False/InvalidCertificateRef$}m],
            ['gateway-certificate-malformed-secret', 'Gateway', 'gateway-certificate-malformed-secret', qr{^listener https: attachedRoutes=0\nlistener https: supportedKind=HTTPRoute$}m],
        ],
    },
    {
        name => 'HTTPRouteRedirectHostAndStatus',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-redirect-host-and-status'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'redirect-host-and-status']],
        requests => [
            [$same, 80, {path => '/hostname-redirect'}, {status => 302, redirect => {host => 'example.org'}}],
            [$same, 80, {path => '/host-and-status'}, {status => 301, redirect => {host => 'example.org'}}],
        ],
    },
    do {
        my $rewritten = sub {
            my ($sent, $seen) = @_;
            [$same, 80, $sent, {backend => 'infra-backend-v1', namespace => $ns, request => $seen}];
        };
        my %modified = ('X-Header-Add' => 'header-val-1', 'X-Header-Add-Append' => 'append-val-1,header-val-2',
                        'X-Header-Set' => 'set-overwrites-values');
        my %sent = ('X-Header-Remove' => 'remove-val', 'X-Header-Add-Append' => 'append-val-1', 'X-Header-Set' => 'set-val');
        {
            name => 'HTTPRouteRewritePath',
            features => [qw(Gateway HTTPRoute HTTPRoutePathRewrite)],
            manifests => ['httproute-rewrite-path'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'rewrite-path']],
            requests => [
                $rewritten->({path => '/prefix/one/two'}, {path => '/one/two'}),
                $rewritten->({path => '/full/one/two'}, {path => '/one'}),
                $rewritten->({path => '/full/rewrite-path-and-modify-headers/test', headers => {%sent}},
                             {path => '/test', headers => {%modified}, absent => ['X-Header-Remove']}),
                $rewritten->({path => '/prefix/rewrite-path-and-modify-headers/one', headers => {%sent}},
                             {path => '/prefix/one', headers => {%modified}, absent => ['X-Header-Remove']}),
                # the v1.4 manifest's /strip-prefix rule (replacePrefixMatch "/"), as the spec defines it
                $rewritten->({path => '/strip-prefix/three'}, {path => '/three'}),
                $rewritten->({path => '/strip-prefix'}, {path => '/'}),
            ],
        }
    },
    {
        name => 'HTTPRouteNamedRule',
        features => [qw(Gateway HTTPRoute HTTPRouteNamedRouteRule)],
        manifests => ['httproute-named-rule'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'http-named-rules']],
        requests => [[$same, 80, {path => '/named'}, {namespace => $ns}],
                     [$same, 80, {path => '/unnamed'}, {namespace => $ns}]],
    },
    do {
        my $all = 'all-namespaces';
        {
            name => 'HTTPRouteMultipleGateways',
            features => [qw(Gateway HTTPRoute)],
            manifests => ['httproute-multiple-gateways'],
            gateways => [$same, $all],
            accepted => [[$same, 'HTTPRoute', 'multiple-gateways-shared-route', 'same-namespace-dedicated-route'],
                         [$all, 'HTTPRoute', 'multiple-gateways-shared-route', 'all-namespaces-dedicated-route']],
            requests => [
                to($same, 'infra-backend-v1', path => '/shared'),
                to($same, 'infra-backend-v2', path => '/'),
                to($all, 'infra-backend-v1', path => '/shared'),
                to($all, 'infra-backend-v3', path => '/'),
            ],
        }
    },
    {
        name => 'HTTPRouteServiceTypes',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-service-types'],
        endpoint_slices => {map { ("$_-ip4" => 'infra-backend-v1', "$_-ip6" => 'infra-backend-v1') }
                            qw(manual-endpointslices headless-manual-endpointslices)},
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'service-types']],
        requests => [map { to($same, 'infra-backend-v1', path => "/$_") }
                     qw(headless manual-endpointslices headless-manual-endpointslices)],
    },
    do {
        my $case = sub {
            my ($path, $sets, $headers, @absent) = @_;
            [$same, 80, {path => $path, backend_sets => $sets},
             {backend => 'infra-backend-v1', namespace => $ns, response_headers => $headers,
              absent_response_headers => \@absent}]
        };
        {
            name => 'HTTPRouteResponseHeaderModifier',
            features => [qw(Gateway HTTPRoute HTTPRouteResponseHeaderModification)],
            manifests => ['httproute-response-header-modifier'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'response-header-modifier']],
            requests => [
                $case->('/set', {'Some-Other-Header' => 'val'},
                        {'Some-Other-Header' => 'val', 'X-Header-Set' => 'set-overwrites-values'}),
                $case->('/set', {'Some-Other-Header' => 'val', 'X-Header-Set' => 'some-other-value'},
                        {'Some-Other-Header' => 'val', 'X-Header-Set' => 'set-overwrites-values'}),
                $case->('/add', {'Some-Other-Header' => 'val'},
                        {'Some-Other-Header' => 'val', 'X-Header-Add' => 'add-appends-values'}),
                $case->('/add', {'Some-Other-Header' => 'val', 'X-Header-Add' => 'some-other-value'},
                        {'Some-Other-Header' => 'val', 'X-Header-Add' => 'some-other-value,add-appends-values'}),
                $case->('/remove', {'X-Header-Remove' => 'val'}, {}, 'X-Header-Remove'),
                $case->('/multiple', {'X-Header-Set-2' => 'set-val-2', 'X-Header-Add-2' => 'add-val-2',
                                      'X-Header-Remove-2' => 'remove-val-2', 'Another-Header' => 'another-header-val',
                                      'X-Header-Remove-1' => 'val'},
                        {'X-Header-Set-1' => 'header-set-1', 'X-Header-Set-2' => 'header-set-2',
                         'X-Header-Add-1' => 'header-add-1', 'X-Header-Add-2' => 'add-val-2,header-add-2',
                         'X-Header-Add-3' => 'header-add-3', 'Another-Header' => 'another-header-val'},
                        'X-Header-Remove-1', 'X-Header-Remove-2'),
                $case->('/case-insensitivity', {'x-header-set' => 'original-val-set', 'x-header-add' => 'original-val-add',
                                                'x-header-remove' => 'original-val-remove',
                                                'Another-Header' => 'another-header-val'},
                        {'X-Header-Set' => 'header-set', 'X-Header-Add' => 'original-val-add,header-add',
                         'X-Lowercase-Add' => 'lowercase-add', 'X-Mixedcase-Add-1' => 'mixedcase-add-1',
                         'X-Mixedcase-Add-2' => 'mixedcase-add-2', 'X-Uppercase-Add' => 'uppercase-add',
                         'Another-Header' => 'another-header-val'},
                        'x-header-remove', 'X-Header-Remove'),
                # the manifest's last rule, which the stored Go source has no case for yet: both modifiers
                [$same, 80, {path => '/response-and-request-header-modifiers',
                             headers => {'X-Header-Set' => 'original', 'X-Header-Add' => 'original',
                                         'X-Header-Remove' => 'gone'},
                             backend_sets => {'X-Header-Set-2' => 'set-val-2', 'X-Header-Add-2' => 'add-val-2',
                                              'X-Header-Remove-1' => 'val', 'X-Header-Remove-2' => 'val'}},
                 {backend => 'infra-backend-v1', namespace => $ns,
                  request => {path => '/response-and-request-header-modifiers',
                              headers => {'X-Header-Set' => 'set-overwrites-values',
                                          'X-Header-Add' => 'original,header-val-1',
                                          'X-Header-Add-Append' => 'header-val-2'},
                              absent => ['X-Header-Remove']},
                  response_headers => {'X-Header-Set-1' => 'header-set-1', 'X-Header-Set-2' => 'header-set-2',
                                       'X-Header-Add-1' => 'header-add-1', 'X-Header-Add-2' => 'add-val-2,header-add-2'},
                  absent_response_headers => ['X-Header-Remove-1', 'X-Header-Remove-2']}],
            ],
        }
    },
    {
        name => 'HTTPRouteRequestHeaderModifierBackendWeights',
        features => [qw(Gateway HTTPRouteBackendRequestHeaderModification HTTPRoute)],
        manifests => ['httproute-request-header-modifier-backend-weights'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'request-header-modifier-backend-weights']],
        requests => [[$same, 80, {path => '/'}, {namespace => $ns}]],
        # each of 100 requests reaches the pod its one Backend header names
        header_names_pod => [[$same, 80, {path => '/'}, 100, 'Backend']],
    },
    {
        name => 'HTTPRouteBackendRequestRedirect',
        features => [qw(Gateway HTTPRoute HTTPRouteBackendRequestRedirect)],
        manifests => ['httproute-backend-request-redirect'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'backend-request-redirect']],
        requests => [[$same, 80, {path => '/full/original'}, {status => 302, redirect => {path => '/redirected-full'}}],
                     [$same, 80, {path => '/prefix/original'},
                      {status => 302, redirect => {path => '/redirected-prefix/original'}}]],
    },
    {
        name => 'HTTPRouteBackendURLRewrite',
        features => [qw(Gateway HTTPRoute HTTPRouteBackendURLRewrite)],
        manifests => ['httproute-backend-url-rewrite'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'backend-url-rewrite']],
        requests => [[$same, 80, {path => '/full/original'},
                      {backend => 'infra-backend-v1', namespace => $ns, request => {path => '/rewritten-full'}}],
                     [$same, 80, {path => '/prefix/original'},
                      {backend => 'infra-backend-v1', namespace => $ns,
                       request => {path => '/rewritten-prefix/original'}}]],
    },
    do {
        my $mirrored = sub {
            my ($path, $mirrors, %modify) = @_;
            my %sent = $modify{headers} ? (headers => {'X-Header-Remove' => 'remove-val',
                                                       'X-Header-Add-Append' => 'append-val-1'}) : ();
            my %seen = $modify{headers} ? (headers => {'X-Header-Add' => 'header-val-1',
                                                       'X-Header-Add-Append' => 'append-val-1,header-val-2',
                                                       'X-Header-Set' => 'set-overwrites-values'},
                                           absent => ['X-Header-Remove']) : ();
            [$same, 80, {path => $path, %sent},
             {backend => 'infra-backend-v1', namespace => $ns, request => {path => $path, %seen},
              mirrored_to => $mirrors}]
        };
        ({
            name => 'HTTPRouteRequestMirror',
            features => [qw(Gateway HTTPRoute HTTPRouteRequestMirror)],
            manifests => ['httproute-request-mirror'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'request-mirror']],
            requests => [$mirrored->('/mirror', ['infra-backend-v2']),
                         $mirrored->('/mirror-and-modify-headers', ['infra-backend-v2'], headers => 1)],
        }, {
            name => 'HTTPRouteRequestMultipleMirrors',
            features => [qw(Gateway HTTPRoute HTTPRouteRequestMirror HTTPRouteRequestMultipleMirrors)],
            manifests => ['httproute-request-multiple-mirrors'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'request-multiple-mirrors']],
            requests => [$mirrored->('/multi-mirror', ['infra-backend-v2', 'infra-backend-v3']),
                         $mirrored->('/multi-mirror-and-modify-request-headers', ['infra-backend-v2', 'infra-backend-v3'],
                                     headers => 1)],
        }, do {
            # each path: a consistent answer, then 500 requests of which
            # the mirror pod logs PERCENT within 5% (of that share)
            my @cases = (['/percent-mirror', 20], ['/percent-mirror-fraction', 50],
                         ['/percent-mirror-and-modify-headers', 35, headers => 1]);
            {
                name => 'HTTPRouteRequestPercentageMirror',
                features => [qw(Gateway HTTPRoute HTTPRouteRequestPercentageMirror)],
                manifests => ['httproute-request-percentage-mirror'],
                gateways => [$same],
                accepted => [[$same, 'HTTPRoute', 'request-percentage-mirror']],
                requests => [map { my ($path, undef, %modify) = @$_; $mirrored->($path, [], %modify) } @cases],
                mirror_shares => [map { my ($path, $percent, %modify) = @$_;
                                        [$same, 80, $mirrored->($path, [], %modify)->[2], 'infra-backend-v2', $percent] }
                                  @cases],
            }
        })
    },
    {
        name => 'HTTPRouteTimeoutRequest',
        features => [qw(Gateway HTTPRoute HTTPRouteRequestTimeout)],
        manifests => ['httproute-timeout-request'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'request-timeout']],
        requests => [[$same, 80, {path => '/request-timeout'}, {namespace => $ns}],
                     answer($same, 504, path => '/request-timeout?delay=1s'),
                     [$same, 80, {path => '/disable-request-timeout?delay=1s'}, {namespace => $ns}]],
    },
    {
        name => 'HTTPRouteTimeoutBackendRequest',
        features => [qw(Gateway HTTPRoute HTTPRouteBackendTimeout)],
        manifests => ['httproute-timeout-backend-request'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'backend-request-timeout']],
        requests => [[$same, 80, {path => '/backend-timeout'}, {namespace => $ns}],
                     answer($same, 504, path => '/backend-timeout?delay=1s')],
    },
    {
        name => 'HTTPRouteWeight',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-weight'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'weighted-backends']],
        requests => [[$same, 80, {path => '/'}, {namespace => $ns}]],
        distributions => [[$same, 80, {path => '/'},
                           {'infra-backend-v1' => 0.7, 'infra-backend-v2' => 0.3, 'infra-backend-v3' => 0.0}, 500, 0.05]],
    },
    {
        name => 'HTTPRoutePathMatchOrder',
        features => [qw(Gateway HTTPRoute)],
        manifests => ['httproute-path-match-order'],
        gateways => [$same],
        accepted => [[$same, 'HTTPRoute', 'path-matching-order']],
        requests => [
            to($same, 'infra-backend-v3', path => '/match/exact/one'),
            to($same, 'infra-backend-v2', path => '/match/exact'),
            to($same, 'infra-backend-v1', path => '/match'),
            to($same, 'infra-backend-v2', path => '/match/prefix/one/any'),
            to($same, 'infra-backend-v1', path => '/match/prefix/any'),
            to($same, 'infra-backend-v3', path => '/match/any'),
        ],
    },
    do {
        my $redirect = sub {
            my ($path, $status, %to) = @_;
            [$same, 80, {path => $path}, {status => $status, redirect => {%to}}];
        };
        {
            name => 'HTTPRouteRedirectPath',
            features => [qw(Gateway HTTPRoute HTTPRoutePathRedirect)],
            manifests => ['httproute-redirect-path'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'redirect-path']],
            requests => [
                $redirect->('/original-prefix/lemon', 302, path => '/replacement-prefix/lemon'),
                $redirect->('/full/path/original', 302, path => '/full-path-replacement'),
                $redirect->('/path-and-host', 302, host => 'example.org', path => '/replacement-prefix'),
                $redirect->('/path-and-status', 301, path => '/replacement-prefix'),
                $redirect->('/full-path-and-host', 302, host => 'example.org', path => '/replacement-full'),
                $redirect->('/full-path-and-status', 301, path => '/replacement-full'),
            ],
        }
    },
    do {
        my $rewritten = sub {
            my ($backend, $sent, $seen) = @_;
            [$same, 80, $sent, {backend => $backend, namespace => $ns, request => $seen}];
        };
        {
            name => 'HTTPRouteRewriteHost',
            features => [qw(Gateway HTTPRoute HTTPRouteHostRewrite)],
            manifests => ['httproute-rewrite-host'],
            gateways => [$same],
            accepted => [[$same, 'HTTPRoute', 'rewrite-host']],
            requests => [
                $rewritten->('infra-backend-v1', {path => '/one', host => 'rewrite.example'},
                             {path => '/one', host => 'one.example.org'}),
                $rewritten->('infra-backend-v2', {path => '/two', host => 'rewrite.example'},
                             {path => '/two', host => 'example.org'}),
                $rewritten->('infra-backend-v2',
                             {path => '/rewrite-host-and-modify-headers', host => 'rewrite.example',
                              headers => {'X-Header-Remove' => 'remove-val', 'X-Header-Add-Append' => 'append-val-1'}},
                             {path => '/rewrite-host-and-modify-headers', host => 'test.example.org',
                              headers => {'X-Header-Add' => 'header-val-1', 'X-Header-Add-Append' => 'append-val-1,header-val-2',
                                          'X-Header-Set' => 'set-overwrites-values'},
                              absent => ['X-Header-Remove']}),
            ],
        }
    },
    do {
        my ($gw80, $gw8080, $gw443) = ($same, 'same-namespace-with-http-listener-on-8080', 'same-namespace-with-https-listener');
        # PATH on GATEWAY's PORT (over TLS with SNI example.org on 443): a
        # 302 to SCHEME://example.org[:PORT], the port unset meaning "the
        # scheme's own or none"
        my $redirect = sub {
            my ($gw, $port, $path, $scheme, $to_port) = @_;
            my %req = (path => $path, ($port == 443 ? (sni => 'example.org', host => 'example.org') : ()));
            [$gw, $port, \%req, {status => 302, redirect => {scheme => $scheme, host => 'example.org',
                                                             (defined $to_port ? (port => $to_port) : ())}}];
        };
        {
            name => 'HTTPRouteRedirectPortAndScheme',
            features => [qw(Gateway HTTPRoute HTTPRoutePortRedirect GatewayPort8080)],
            manifests => ['httproute-redirect-port-and-scheme'],
            gateways => [$gw80, $gw8080, $gw443],
            accepted => [[$gw80, 'HTTPRoute', 'http-route-for-listener-on-port-80'],
                         [$gw8080, 'HTTPRoute', 'http-route-for-listener-on-port-8080'],
                         [$gw443, 'HTTPRoute', 'http-route-for-listener-on-port-443']],
            requests => [
                $redirect->($gw80, 80, '/scheme-nil-and-port-nil', 'http'),
                $redirect->($gw80, 80, '/scheme-nil-and-port-80', 'http'),
                $redirect->($gw80, 80, '/scheme-nil-and-port-8080', 'http', '8080'),
                $redirect->($gw80, 80, '/scheme-https-and-port-nil', 'https'),
                $redirect->($gw80, 80, '/scheme-https-and-port-443', 'https'),
                $redirect->($gw80, 80, '/scheme-https-and-port-8443', 'https', '8443'),
                $redirect->($gw8080, 8080, '/scheme-nil-and-port-nil', 'http', '8080'),
                $redirect->($gw8080, 8080, '/scheme-nil-and-port-80', 'http'),
                $redirect->($gw8080, 8080, '/scheme-https-and-port-nil', 'https'),
                $redirect->($gw443, 443, '/scheme-nil-and-port-nil', 'https'),
                $redirect->($gw443, 443, '/scheme-nil-and-port-443', 'https'),
                $redirect->($gw443, 443, '/scheme-nil-and-port-8443', 'https', '8443'),
                $redirect->($gw443, 443, '/scheme-http-and-port-nil', 'http'),
                $redirect->($gw443, 443, '/scheme-http-and-port-80', 'http'),
                $redirect->($gw443, 443, '/scheme-http-and-port-8080', 'http', '8080'),
            ],
        }
    },
    do {
        my ($add, $remove) = qw(gateway-add-listener gateway-remove-listener);
        my $listener = sub {
            my ($gw, $name) = @_;
            ([$gw, 'Gateway', $gw, qr{^listener $name: attachedRoutes=1\nlistener $name: supportedKind=HTTPRoute$}m],
             [$gw, 'Gateway', $gw, qr{^listener $name: Accepted=True/}m],
             [$gw, 'Gateway', $gw, qr{^listener $name: ResolvedRefs=True/}m]);
        };
        {
            name => 'GatewayModifyListeners',
            features => [qw(Gateway)],
            manifests => ['gateway-modify-listeners'],
            gateways => [$add, $remove],
            conditions => [[$add, 'Gateway', $add, qr{\Ageneration=1\n(?!.*stale)}s],
                           [$remove, 'Gateway', $remove, qr{\Ageneration=1\n(?!.*stale)}s]],
            steps => [{
                edit => sub {
                    my $text = shift;
                    # an http listener added to one Gateway, the https one removed from the other
                    $text =~ s{(        namespace: gateway-conformance-infra\n)(---\napiVersion: gateway\.networking\.k8s\.io/v1\nkind: HTTPRoute\nmetadata:\n  name: http-route-1\n)}
                              {$1  - name: http\n    port: 80\n    protocol: HTTP\n    hostname: "data.test.com"\n    allowedRoutes:\n      namespaces:\n        from: All\n$2}
                        or return $text;
                    $text =~ s{(  name: gateway-remove-listener\n(?:.*\n)*?  listeners:\n)  - name: https\n(?:    .*\n)+?(?=  - name: http\n)}{$1}
                        or die 'no https listener to remove';
                    return generation(generation($text, $add, 2), $remove, 2);
                },
                conditions => [
                    [$add, 'Gateway', $add, qr{\Ageneration=2\n(?!.*stale)}s],
                    $listener->($add, 'https'), $listener->($add, 'http'),
                    [$remove, 'Gateway', $remove, qr{\Ageneration=2\n(?!.*stale)}s],
                    [$remove, 'Gateway', $remove, qr{\A(?!.*listener https)}s],
                    $listener->($remove, 'http'),
                ],
            }],
        }
    },
    do {
        my $redirect = sub {
            my ($path, $status, %to) = @_;
            [$same, 80, {path => $path}, {status => $status, redirect => {%to}}];
        };
        (
            {
                name => 'HTTPRouteRedirectScheme',
                features => [qw(Gateway HTTPRoute HTTPRouteSchemeRedirect)],
                manifests => ['httproute-redirect-scheme'],
                gateways => [$same],
                accepted => [[$same, 'HTTPRoute', 'redirect-scheme']],
                requests => [
                    $redirect->('/scheme', 302, scheme => 'https'),
                    $redirect->('/scheme-and-host', 302, scheme => 'https', host => 'example.org'),
                    $redirect->('/scheme-and-status', 301, scheme => 'https'),
                    $redirect->('/scheme-and-host-and-status', 302, scheme => 'https', host => 'example.org'),
                ],
            },
            {
                name => 'HTTPRouteRedirectPort',
                features => [qw(Gateway HTTPRoute HTTPRoutePortRedirect)],
                manifests => ['httproute-redirect-port'],
                gateways => [$same],
                accepted => [[$same, 'HTTPRoute', 'redirect-port']],
                requests => [
                    $redirect->('/port', 302, port => '8083'),
                    $redirect->('/port-and-host', 302, host => 'example.org', port => '8083'),
                    $redirect->('/port-and-status', 301, port => '8083'),
                    $redirect->('/port-and-host-and-status', 302, host => 'example.org', port => '8083'),
                ],
            },
            map {
                my ($code, $path) = @$_;
                {
                    name => "HTTPRoute${code}Redirect",
                    features => ['Gateway', 'HTTPRoute', "HTTPRoute${code}RedirectStatusCode"],
                    manifests => ["httproute-$code-redirect"],
                    gateways => [$same],
                    accepted => [[$same, 'HTTPRoute', "$code-redirect"]],
                    requests => [$redirect->($path, $code)],
                }
            } ([303, '/see-other'], [307, '/temporary'], [308, '/permanent'])
        )
    },
    do {
        my $gw = 'httproute-listener-port-matching';
        my $on = sub {
            my ($port, $host, $expected) = @_;
            [$gw, $port, {host => $host, path => '/'}, $expected];
        };
        {
            name => 'HTTPRouteListenerPortMatching',
            features => [qw(Gateway HTTPRoute HTTPRouteParentRefPort)],
            manifests => ['httproute-listener-port-matching'],
            gateways => [$gw],
            accepted => [[$gw, 'HTTPRoute', qw(backend-v1 backend-v2 backend-v3)]],
            requests => [
                $on->(80, 'foo.com', {backend => 'infra-backend-v1', namespace => $ns}),
                $on->(8080, 'foo.com:8080', {backend => 'infra-backend-v2', namespace => $ns}),
                $on->(8080, 'bar.com:8080', {backend => 'infra-backend-v2', namespace => $ns}),
                $on->(8090, 'foo.com:8090', {backend => 'infra-backend-v3', namespace => $ns}),
                $on->(8090, 'bar.com:8090', {status => 404}),
            ],
        }
    },
    {
        name => 'HTTPRouteInvalidParentRefNotMatchingListenerPort',
        features => [qw(Gateway HTTPRoute HTTPRouteDestinationPortMatching)],
        manifests => ['httproute-invalid-parentref-not-matching-listener-port'],
        gateways => [$same],
        conditions => [
            [$same, 'HTTPRoute', 'httproute-listener-not-matching-route-port',
             qr{^\Q$ns/$same\E: Accepted=False/NoMatchingParent$}m],
            [$same, 'HTTPRoute', 'httproute-listener-not-matching-route-port', qr{\A(?!.*Accepted=True)}s],
            [$same, 'Gateway', $same, qr{\A(?!.*attachedRoutes=[1-9])}s],
        ],
    },
    do {
        my $gw = 'gateway-with-one-not-matching-port-and-section-name-route';
        {
            name => 'HTTPRouteInvalidParentRefSectionNameNotMatchingPort',
            features => [qw(Gateway HTTPRoute HTTPRouteParentRefPort)],
            manifests => ['httproute-invalid-parentref-section-name-not-matching-port'],
            gateways => [$gw],
            conditions => [
                [$gw, 'HTTPRoute', 'httproute-listener-section-name-not-matching-port',
                 qr{^\Q$ns/$gw\E: Accepted=False/NoMatchingParent$}m],
                [$gw, 'HTTPRoute', 'httproute-listener-section-name-not-matching-port', qr{\A(?!.*Accepted=True)}s],
                [$gw, 'Gateway', $gw, qr{\A(?!.*attachedRoutes=[1-9])}s],
            ],
        }
    },
    do {
        my ($gw, $gwi) = qw(http-listener-isolation http-listener-isolation-with-hostname-intersection);
        my @paths = qw(/empty-hostname /wildcard-example-com /wildcard-foo-example-com /abc-foo-example-com);
        # each host reaches the routes of its own listener only
        my %served_by = ('bar.com' => '/empty-hostname', 'bar.example.com' => '/wildcard-example-com',
                         'bar.foo.example.com' => '/wildcard-foo-example-com',
                         'abc.foo.example.com' => '/abc-foo-example-com');
        my $cases = sub {
            my $g = shift;
            map {
                my $host = $_;
                map { $_ eq $served_by{$host} ? to($g, 'infra-backend-v1', host => $host, path => $_)
                                              : answer($g, 404, host => $host, path => $_) } @paths
            } ('bar.com', 'bar.example.com', 'bar.foo.example.com', 'abc.foo.example.com');
        };
        {
            name => 'GatewayHTTPListenerIsolation',
            features => [qw(Gateway GatewayHTTPListenerIsolation HTTPRoute)],
            manifests => ['gateway-http-listener-isolation', 'gateway-http-listener-isolation-with-hostname-intersection'],
            gateways => [$gw, $gwi],
            accepted => [[$gw, 'HTTPRoute', map { "attaches-to-" . substr($_, 1) } @paths],
                         [$gwi, 'HTTPRoute', map { "attaches-to-" . substr($_, 1) . "-with-hostname-intersection" } @paths]],
            requests => [$cases->($gw), $cases->($gwi)],
        }
    },
];
