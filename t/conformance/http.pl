# GATEWAY-HTTP conformance tests, as their Go sources say
# (conformance/tests/NAME.go in kubernetes-sigs/gateway-api, v1.4): the
# manifests they apply, the Gateways they serve, what status they wait for,
# their requests and what each must get. Read by t/400-conformance.t.
#
# requests: [GATEWAY, LISTENER PORT, REQUEST, EXPECTED]; REQUEST {host,
# path, method, headers}; EXPECTED as the suite's http.ExpectedResponse:
# status (200), backend, namespace, request {host, path, method, headers,
# absent} as the backend must see it, response_headers,
# absent_response_headers, redirect {scheme, host, port, path}.
use strict;
use warnings;

my $ns = 'gateway-conformance-infra';

# Request on GATEWAY's port 80 to reach BACKEND in the infra namespace.
sub to { my ($gw, $backend, %req) = @_; [$gw, 80, \%req, {backend => $backend, namespace => $ns}] }
sub answer { my ($gw, $status, %req) = @_; [$gw, 80, \%req, {status => $status}] }

my $same = 'same-namespace';

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
        name => 'HTTPExactPathMatching',
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
];
