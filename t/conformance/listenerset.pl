# The suite's ListenerSet conformance tests (GEP-1713, feature ListenerSet;
# conformance/tests/listenerset-*.go, v1.6): the manifests they apply, the
# Gateway each serves, the status they wait for and their requests, as
# http.pl writes them. Read by t/460-conformance-listenerset.t.
use strict;
use warnings;

my $ns = 'gateway-conformance-infra';
my @features = qw(Gateway ListenerSet HTTPRoute);

# A request to HOST's PATH on GATEWAY's port 80: answered by BACKEND, or 404.
sub to { my ($gw, $host, $path, $backend) = @_; [$gw, 80, {host => $host, path => $path}, {backend => $backend, namespace => $ns}] }
sub not_found { my ($gw, $host, $path) = @_; [$gw, 80, {host => $host, path => $path}, {status => 404}] }

# A condition of the object itself ([GATEWAY, KIND, NAME, PATTERN], as
# http.pl's conditions); REASON undef: any reason.
sub condition {
    my ($gw, $kind, $name, $type, $status, $reason) = @_;
    my $r = defined $reason ? quotemeta($reason) : '\S+';
    return [$gw, $kind, $name, qr{^: \Q$type\E=$status/$r$}m];
}

# ListenerSetListenersMustHaveConditions with generateAcceptedListenerConditions
sub listener_accepted {
    my ($gw, $kind, $name, $listener) = @_;
    return map { [$gw, $kind, $name, qr{^listener \Q$listener\E: $_=True/\S+$}m] } qw(ResolvedRefs Accepted Programmed);
}

# ...with CONDITIONS [TYPE, STATUS, REASON] of one listener
sub listener_conditions {
    my ($gw, $kind, $name, $listener, @conditions) = @_;
    return map { [$gw, $kind, $name, qr{^listener \Q$listener\E: \Q$_->[0]\E=$_->[1]/\Q$_->[2]\E$}m] } @conditions;
}

# ListenerSetStatusMustHaveListeners: exactly these listeners, each with
# its attachedRoutes, HTTPRoute among its supportedKinds and accepted
sub listener_set_listeners {
    my ($gw, $name, %routes) = @_;
    my $names = join '|', map { quotemeta } sort keys %routes;
    return ([$gw, 'ListenerSet', $name, qr{\A(?!(?s:.*)^listener (?!(?:$names):))}m],
            map { ([$gw, 'ListenerSet', $name, qr{^listener \Q$_\E: attachedRoutes=$routes{$_}$}m],
                   [$gw, 'ListenerSet', $name, qr{^listener \Q$_\E: supportedKind=HTTPRoute$}m],
                   listener_accepted($gw, 'ListenerSet', $name, $_)) } sort keys %routes);
}

# GatewayMustHaveAttachedListeners
sub attached_listener_sets { my ($gw, $n) = @_; [$gw, 'Gateway', $gw, qr{^attachedListenerSets=$n$}m] }

# The parent entry of ROUTE (NS/NAME, else in the infra namespace) for
# PARENT ("ListenerSet NS/NAME", or "NS/NAME" for a Gateway); REASON undef: any.
sub route_parent {
    my ($gw, $route, $parent, $status, $reason) = @_;
    my $r = defined $reason ? quotemeta($reason) : '\S+';
    return [$gw, 'HTTPRoute', $route, qr{^\Q$parent\E: Accepted=$status/$r$}m];
}

# RoutesAndParentMustBeAccepted with a ListenerSet: each route Accepted by
# it, and every listener of it accepted
sub accepted_by_listener_set {
    my ($gw, $ls, @routes) = @_;
    my ($ls_ns, $ls_name) = $ls =~ m{/} ? split(m{/}, $ls) : ($ns, $ls);
    return ((map { route_parent($gw, $_, "ListenerSet $ls_ns/$ls_name", 'True', 'Accepted') } @routes),
            [$gw, 'ListenerSet', "$ls_ns/$ls_name", qr{\A(?!(?s:.*)^listener \S+: (?:Accepted|Programmed|ResolvedRefs)=False)}m]);
}

my ($conflicted_hostname, $conflicted_protocol) = map {
    my $reason = $_;
    [[Accepted => 'False', $reason], [Programmed => 'False', $reason], [Conflicted => 'True', $reason]]
} qw(HostnameConflict ProtocolConflict);

# ListenerSetMustHaveCondition: not accepted and not programmed, for REASON
sub listener_set_refused {
    my ($gw, $name, $reason) = @_;
    return (condition($gw, 'ListenerSet', $name, 'Accepted', 'False', $reason),
            condition($gw, 'ListenerSet', $name, 'Programmed', 'False', $reason));
}

# ListenerSetHostnameConflict and ListenerSetProtocolConflict (WHAT:
# hostname or protocol): the Gateway's conflicting listener wins, so does
# the older of two ListenerSets; a ListenerSet keeps being accepted while
# one of its listeners is, and is ListenersNotValid with none.
my $conflict_test = sub {
    my ($what, $name, $conflicted) = @_;
    my $gw = "gateway-with-listenerset-$what-conflict";
    my ($gw1, $gw2, $ls1, $ls2) = map { "listenerset-with-$what-conflict-with-$_" }
                                  qw(gateway-1 gateway-2 listener-set-1 listener-set-2);
    return {
        name => $name,
        features => \@features,
        manifests => ["listenerset-$what-conflict"],
        gateways => [$gw],
        conditions => [
            condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
            listener_accepted($gw, 'Gateway', $gw, 'gateway-listener'),
            listener_accepted($gw, 'Gateway', $gw, "$what-conflict-with-gateway-listener"),
            attached_listener_sets($gw, 2),
            (map {
                my ($accepted, $refused, $own, $conflict) = @$_;
                (condition($gw, 'ListenerSet', $accepted, 'Accepted', 'True'),
                 condition($gw, 'ListenerSet', $accepted, 'Programmed', 'True', 'Programmed'),
                 listener_accepted($gw, 'ListenerSet', $accepted, $own),
                 listener_conditions($gw, 'ListenerSet', $accepted, $conflict, @$conflicted),
                 listener_set_refused($gw, $refused, 'ListenersNotValid'),
                 listener_conditions($gw, 'ListenerSet', $refused, $conflict, @$conflicted))
            } [$gw1, $gw2, 'listener-set-1-listener', "$what-conflict-with-gateway-listener"],
              [$ls1, $ls2, 'listener-set-2-listener', "$what-conflict-with-listener-set-listener"]),
            # the first ListenerSet's listener that the second's conflicts with
            listener_accepted($gw, 'ListenerSet', $gw1, "$what-conflict-with-listener-set-listener"),
        ],
    };
};

return [
    do {
        my $gw = 'gateway-does-not-allow-listenerset';
        {
            name => 'ListenerSetAllowedNamespaceNone',
            features => \@features,
            manifests => ['listenerset-allowed-namespace-none'],
            gateways => [$gw],
            conditions => [
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 0),
                listener_set_refused($gw, 'listenerset-not-allowed', 'NotAllowed'),
            ],
        }
    },
    do {
        my $gw = 'gateway-allows-listenerset-in-same-namespace';
        my $same = 'listenerset-in-same-namespace';
        {
            name => 'ListenerSetAllowedNamespaceSame',
            features => \@features,
            manifests => ['listenerset-allowed-namespace-same'],
            gateways => [$gw],
            conditions => [
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 1),
                condition($gw, 'ListenerSet', $same, 'Accepted', 'True', 'Accepted'),
                condition($gw, 'ListenerSet', $same, 'Programmed', 'True', 'Programmed'),
                listener_accepted($gw, 'ListenerSet', $same, "$same-listener"),
                listener_set_refused($gw, 'gateway-api-listenerset-not-allowed-ns/listenerset-in-different-namespace',
                                     'NotAllowed'),
            ],
        }
    },
    do {
        my $gw = 'gateway-allows-listenerset-in-selected-namespace';
        my $selected = 'gateway-api-listenerset-selector-allowed-ns/listenerset-in-selected-namespace';
        {
            name => 'ListenerSetAllowedNamespaceSelector',
            features => \@features,
            manifests => ['listenerset-allowed-namespace-selector'],
            gateways => [$gw],
            conditions => [
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 1),
                condition($gw, 'ListenerSet', $selected, 'Accepted', 'True', 'Accepted'),
                condition($gw, 'ListenerSet', $selected, 'Programmed', 'True', 'Programmed'),
                listener_accepted($gw, 'ListenerSet', $selected, 'listenerset-in-selected-namespace-listener'),
                listener_set_refused($gw,
                                     'gateway-api-listenerset-selector-not-allowed-ns/listenerset-not-in-selected-namespace',
                                     'NotAllowed'),
            ],
        }
    },
    do {
        my $gw = 'gateway-with-listener-sets-test-allowed-routes';
        my $ls = 'listenerset-test-allowed-routes-namespaces';
        my $cross = 'gateway-api-ls-cross-ns/listenerset-test-allowed-routes-cross-ns';
        my ($all, $same, $selector) = map { "listener-set-listener-allowed-routes-$_.com" } qw(all same selector);
        my $cross_host = 'listener-set-listener-allowed-routes-cross-ns-same.com';
        {
            name => 'ListenerSetAllowedRoutesNamespaces',
            features => \@features,
            manifests => ['listenerset-allowed-routes-namespaces'],
            gateways => [$gw],
            conditions => [
                [$gw, 'Gateway', $gw, qr{^address=}m],
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 2),
                accepted_by_listener_set($gw, $ls, 'route-in-same-namespace',
                                         'gateway-api-routes-allowed-ns/route-in-selected-namespace',
                                         'gateway-api-routes-not-allowed-ns/route-not-in-selected-namespace'),
                listener_set_listeners($gw, $ls, 'listener-set-listener-allowed-routes-all' => 3,
                                       'listener-set-listener-allowed-routes-same' => 1,
                                       'listener-set-listener-allowed-routes-selector' => 1),
                accepted_by_listener_set($gw, $cross, 'gateway-api-ls-cross-ns/route-in-listenerset-namespace'),
                route_parent($gw, 'route-in-gateway-namespace', "ListenerSet $cross", 'False', 'NotAllowedByListeners'),
                listener_set_listeners($gw, $cross, 'listener-set-listener-allowed-routes-cross-ns-same' => 1),
            ],
            requests => [
                to($gw, $all, '/route-in-same-namespace', 'infra-backend-v1'),
                to($gw, $all, '/route-in-selected-namespace', 'infra-backend-v2'),
                to($gw, $all, '/route-not-in-selected-namespace', 'infra-backend-v3'),
                to($gw, $same, '/route-in-same-namespace', 'infra-backend-v1'),
                not_found($gw, $same, '/route-in-selected-namespace'),
                not_found($gw, $same, '/route-not-in-selected-namespace'),
                not_found($gw, $selector, '/route-in-same-namespace'),
                to($gw, $selector, '/route-in-selected-namespace', 'infra-backend-v2'),
                not_found($gw, $selector, '/route-not-in-selected-namespace'),
                to($gw, $cross_host, '/route-in-listenerset-namespace', 'infra-backend-v1'),
                not_found($gw, $cross_host, '/route-in-gateway-namespace'),
            ],
        }
    },
    do {
        my $gw = 'gateway-with-listener-sets-test-supported-route-kinds';
        {
            name => 'ListenerSetAllowedRoutesSupportedKinds',
            features => \@features,
            manifests => ['listenerset-allowed-routes-supported-kinds'],
            gateways => [$gw],
            conditions => [
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                listener_conditions($gw, 'ListenerSet', 'listenerset-test-allowed-routes-supported-kinds',
                                    'listener-set-listener-allowed-routes-tls-only',
                                    [ResolvedRefs => 'False', 'InvalidRouteKinds']),
            ],
        }
    },
    do {
        my $gw = 'gateway-default-does-not-allow-listenerset';
        {
            name => 'ListenerSetDefaultNotAllowed',
            features => \@features,
            manifests => ['listenerset-default-not-allowed'],
            gateways => [$gw],
            conditions => [
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 0),
                listener_set_refused($gw, 'listenerset-default-not-allowed', 'NotAllowed'),
            ],
        }
    },
    do {
        my $gw = 'gateway-dual-parentref';
        my $ls = 'ls-dual-parentref';
        {
            name => 'ListenerSetDualParentRefIndependence',
            features => \@features,
            manifests => ['listenerset-dual-parentref-independence'],
            gateways => [$gw],
            conditions => [
                [$gw, 'Gateway', $gw, qr{^address=}m],
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 1),
                listener_set_listeners($gw, $ls, 'ls-dual-parentref-listener' => 2),
                route_parent($gw, 'route-dual-parentref-both', "$ns/$gw", 'True'),
                route_parent($gw, 'route-dual-parentref-both', "ListenerSet $ns/$ls", 'True'),
                route_parent($gw, 'route-dual-parentref-one', "$ns/$gw", 'False', 'NoMatchingParent'),
                route_parent($gw, 'route-dual-parentref-one', "ListenerSet $ns/$ls", 'True'),
                accepted_by_listener_set($gw, $ls, 'route-dual-parentref-one'),
            ],
            requests => [
                to($gw, 'gw-dual.com', '/dualboth', 'infra-backend-v1'),
                to($gw, 'ls-dual.com', '/dualboth', 'infra-backend-v1'),
                to($gw, 'ls-dual.com', '/dualone', 'infra-backend-v2'),
                not_found($gw, 'gw-dual.com', '/dualone'),
            ],
        }
    },
    do {
        my $gw = 'gateway-section-name';
        {
            name => 'ListenerSetGatewayParentSectionNameNotFound',
            features => \@features,
            manifests => ['listenerset-gateway-parent-section-name-not-found'],
            gateways => [$gw],
            conditions => [
                [$gw, 'Gateway', $gw, qr{^address=}m],
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 1),
                accepted_by_listener_set($gw, 'listenerset-section-name', 'route-via-listenerset'),
                route_parent($gw, 'route-via-gateway', "$ns/$gw", 'False', 'NoMatchingParent'),
            ],
            requests => [
                to($gw, 'ls-section-name.com', '/goodsection', 'infra-backend-v1'),
                not_found($gw, 'gw-section.com', '/badsection'),
            ],
        }
    },
    $conflict_test->('hostname', 'ListenerSetHostnameConflict', $conflicted_hostname),
    do {
        my $gw = 'gateway-with-listener-sets-http-routing';
        my ($ls1, $ls2) = map { "listener-set-http-routing-$_" } 1, 2;
        my @hosts = ('gateway-listener-1.com', 'gateway-listener-2.com',
                     map { my $ls = $_; map { "$ls-listener-$_.com" } 1, 2 } $ls1, $ls2);
        # path -> the hosts that serve it and its backend
        my %served = ('/route' => [[@hosts], 'infra-backend-v1'],
                      '/gateway-route' => [[@hosts[0, 1]], 'infra-backend-v2'],
                      '/gateway-section-route' => [[$hosts[0]], 'infra-backend-v3'],
                      "/$ls1-route" => [[@hosts[2, 3]], 'infra-backend-v2'],
                      "/$ls1-section-route" => [[$hosts[2]], 'infra-backend-v3'],
                      "/$ls2-route" => [[@hosts[4, 5]], 'infra-backend-v2']);
        {
            name => 'ListenerSetHTTPRouting',
            features => \@features,
            manifests => ['listenerset-http-routing'],
            gateways => [$gw],
            accepted => [[$gw, 'HTTPRoute', qw(attaches-to-all-listeners gateway-route gateway-section-route)]],
            conditions => [
                attached_listener_sets($gw, 2),
                accepted_by_listener_set($gw, $ls1, 'attaches-to-all-listeners', "$ls1-route", "$ls1-section-route"),
                listener_set_listeners($gw, $ls1, "$ls1-listener-1" => 3, "$ls1-listener-2" => 2),
                accepted_by_listener_set($gw, $ls2, 'attaches-to-all-listeners', "$ls2-route"),
                listener_set_listeners($gw, $ls2, "$ls2-listener-1" => 2, "$ls2-listener-2" => 2),
            ],
            requests => [
                map {
                    my ($path, $hosts, $backend) = ($_, @{$served{$_}});
                    my %on = map { $_ => 1 } @$hosts;
                    map { $on{$_} ? to($gw, $_, $path, $backend) : not_found($gw, $_, $path) } @hosts
                } '/route', '/gateway-route', '/gateway-section-route', "/$ls1-route", "/$ls1-section-route", "/$ls2-route"
            ],
        }
    },
    $conflict_test->('protocol', 'ListenerSetProtocolConflict', $conflicted_protocol),
    do {
        my $gw = 'gateway-with-listener-sets-test-reference-grant';
        my $with = 'listenerset-with-reference-grant';
        my $without = 'gateway-api-listener-sets-test-reference-grant-ns/listenerset-without-reference-grant';
        {
            name => 'ListenerSetReferenceGrant',
            features => [qw(Gateway ListenerSet HTTPRoute ReferenceGrant)],
            manifests => ['listenerset-reference-grant'],
            gateways => [$gw],
            conditions => [
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                condition($gw, 'ListenerSet', $with, 'Accepted', 'True'),
                condition($gw, 'ListenerSet', $with, 'Programmed', 'True'),
                [$gw, 'ListenerSet', $with, qr{^listener \Q$with\E-listener: ResolvedRefs=True/\S+$}m],
                listener_set_refused($gw, $without, 'ListenersNotValid'),
                listener_conditions($gw, 'ListenerSet', $without, 'listenerset-without-reference-grant-listener',
                                    [ResolvedRefs => 'False', 'RefNotPermitted']),
            ],
        }
    },
    do {
        my $gw = 'gateway-parentref';
        my $ls = 'listenerset-parentref';
        {
            name => 'ListenerSetRouteStatusScopedToParentRef',
            features => \@features,
            manifests => ['listenerset-route-status-scoped-to-parentref'],
            gateways => [$gw],
            conditions => [
                condition($gw, 'Gateway', $gw, 'Accepted', 'True'),
                attached_listener_sets($gw, 1),
                listener_set_listeners($gw, $ls, 'listenerset-parentref-listener' => 1),
                # each route's parents are exactly its own parentRef
                [$gw, 'HTTPRoute', 'route-parentref-gwonly',
                 qr{\A(?:generation=1\n)?(?:\Q$ns/$gw\E: \S+\n?)+\z}],
                route_parent($gw, 'route-parentref-gwonly', "$ns/$gw", 'True'),
                accepted_by_listener_set($gw, $ls, 'route-parentref-lsonly'),
                [$gw, 'HTTPRoute', 'route-parentref-lsonly',
                 qr{\A(?:generation=1\n)?(?:ListenerSet \Q$ns/$ls\E: \S+\n?)+\z}],
            ],
        }
    },
];
