# Replays, locally, the Gateway API conformance tests for TLSRoute
# (GEP-2643) and BackendTLSPolicy behind a TLSRoute in Terminate mode
# (GEP-4274): the suite's own manifests from $GATEWAY_API_DIR/conformance/,
# its certificates made by t/lib/make-certs.sh, EndpointSlices that point
# each Service at a local backend, gateway2nginx and the nginx it writes.
#
# Each Gateway is rendered alone (--gateway), as one nginx per Gateway, since
# the suite gives every Gateway an address of its own and they share ports.
# Backends: tls-backend = "leaf" (SANs abc.example.com, other.example.com),
# tls-backend-2 = "wildcard" (*.example.com), tcp-backend echo-tcp-tls and
# btls-terminate-tls-backend = "tcp_tls" (leaf certificate, answers its
# SNI), tcp-backend echo-tcp-plain = "tcp" (answers whether it got TLS).
use lib 't/lib';
use Test::ConformanceReport;
use Test::GatewayTLS;
use Test::More;

my ($shared, $manifests) = conformance_begin();
my $certs = certs_dir();
my $dir = servroot();

my @tests = qw(tlsroute-simple-same-namespace tlsroute-hostname-intersection
               tlsroute-invalid-backendref-nonexistent tlsroute-invalid-backendref-unknown-kind
               tlsroute-invalid-no-matching-listener-hostname tlsroute-invalid-no-matching-listener
               tlsroute-invalid-reference-grant tlsroute-listener-passthrough-supported-kinds
               tlsroute-listener-terminate-supported-kinds tlsroute-listener-mixed-termination-not-supported
               tlsroute-terminate-simple-same-namespace backendtlspolicy-tlsroute-terminate
               tlsroute-listener-terminate-not-supported tlsroute-mixed-termination-same-namespace);

conformance_manifests($shared, $manifests, @tests);

sub endpoints {
    my ($ns, $service, $port_name, $backend) = @_;
    (my $slice = "$service-$backend") =~ tr/_/-/;  # an object name: RFC 1123
    return "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n"
         . "  name: $slice\n  namespace: $ns\n  labels:\n    kubernetes.io/service-name: $service\n"
         . "addressType: IPv4\nports:\n- name: \"$port_name\"\n  port: @{[backend_port($backend)]}\n"
         . "endpoints:\n- addresses: [\"127.0.0.1\"]\n  conditions: {ready: true}\n";
}

my $setup = conformance_setup();
$setup .= tls_secret_yaml('tls-validity-checks-certificate', 'leaf');
$setup .= tls_secret_yaml('tls-terminate-checks-certificate', 'wildcard');  # tls.example.com
$setup .= endpoints('gateway-conformance-infra', 'tls-backend', '', 'leaf');
$setup .= endpoints('gateway-conformance-app-backend', 'tls-backend', '', 'leaf');
$setup .= endpoints('gateway-conformance-infra', 'tls-backend-2', '', 'wildcard');
$setup .= endpoints('gateway-conformance-infra', 'tcp-backend', 'echo-tcp-plain', 'tcp');
$setup .= endpoints('gateway-conformance-infra', 'tcp-backend', 'echo-tcp-tls', 'tcp_tls');
$setup .= endpoints('gateway-conformance-infra', 'btls-terminate-tls-backend', 'btls', 'tcp_tls');
spit("$manifests/20-suite-setup.yaml", $setup);

my $offset = server_port() + 30 - 443;  # 443 -> base+30, 8443 -> base+8030
my $ns = 'gateway-conformance-infra';
my $ca = "$certs/ca.crt";

start_backends();

sub serve_gateway { serve_conformance_gateway($manifests, $_[0], $offset, $_[1]) }
sub conditions { conformance_conditions(@_) }

sub https_get { "GET / HTTP/1.0\r\nHost: $_[0]\r\n\r\n" }

# Connects with SNI NAME, verifying the gateway's (or the passthrough
# backend's) certificate for NAME against the suite's CA.
sub exchange {
    my ($port, $name, $payload) = @_;
    return tls_exchange($port + $offset, $name, $payload // https_get($name), $ca, $name);
}

sub route_accepted {
    my ($st, $route, $gateway, $label) = @_;
    my $c = conditions($st, 'TLSRoute', $route);
    like($c, qr{^\Q$ns/$gateway\E: Accepted=True/Accepted$}m, "$label: $route Accepted");
    like($c, qr{^\Q$ns/$gateway\E: ResolvedRefs=True/ResolvedRefs$}m, "$label: $route ResolvedRefs");
}

# ---- TLSRouteSimpleSameNamespace -------------------------------------------
conformance_test 'TLSRouteSimpleSameNamespace', [qw(Gateway TLSRoute)], ['tlsroute-simple-same-namespace'], sub {
    my $st = serve_gateway('gateway-tlsroute', 443);
    route_accepted($st, 'gateway-conformance-infra-test', 'gateway-tlsroute', 'SimpleSameNamespace');
    like(conditions($st, 'Gateway', 'gateway-tlsroute'), qr{^listener https: attachedRoutes=1$}m,
         'SimpleSameNamespace: one route attached');
    is(exchange(443, 'abc.example.com', "hello\n"), "backend=tcp_tls tls=yes sni=abc.example.com\n",
       'SimpleSameNamespace: passthrough reaches the TLS backend, which saw the client SNI');
    is(exchange(443, 'nomatch.example.com', "hello\n"), '',
       'SimpleSameNamespace: an SNI no route claims is refused');
};

# ---- TLSRouteHostnameIntersection ------------------------------------------
conformance_test 'TLSRouteHostnameIntersection', [qw(Gateway TLSRoute)], ['tlsroute-hostname-intersection'], sub {
    my %cases = (
        'gw-tlsroute-exact-hostname-x-1' => [['tlsroute-more-specific-wc-hostname-x-1'], 'non.matching.com', 0],
        'gw-tlsroute-more-specific-wc-hostname-x-2' =>
            [['tlsroute-exact-hostname-x-2', 'tlsroute-less-specific-wc-hostname-x-2'], 'non.matching.com', 1],
        'gw-tlsroute-less-specific-wc-hostname-x-3' =>
            [['tlsroute-exact-hostname-x-3', 'tlsroute-more-specific-wc-hostname-x-3'], 'non.matching.com', 1],
        'gw-tlsroute-empty-hostname-x-4' =>
            [['tlsroute-exact-hostname-x-4', 'tlsroute-less-specific-wc-hostname-x-4'], 'non.matching.org', 1],
    );
    for my $gw (sort keys %cases) {
        my ($routes, $nomatch, $other) = @{$cases{$gw}};
        my $st = serve_gateway($gw, 443);
        route_accepted($st, $_, $gw, 'HostnameIntersection') for @$routes;
        like(exchange(443, 'abc.example.com'), qr/^backend=leaf sni=abc\.example\.com path=\/$/m,
             "HostnameIntersection $gw: abc.example.com reaches tls-backend");
        if ($other) {
            like(exchange(443, 'other.example.com'), qr/^backend=wildcard sni=other\.example\.com path=\/$/m,
                 "HostnameIntersection $gw: other.example.com reaches tls-backend-2");
        } else {
            is(exchange(443, 'other.example.com'), '',
               "HostnameIntersection $gw: other.example.com is outside the intersection");
        }
        is(exchange(443, $nomatch), '', "HostnameIntersection $gw: $nomatch is refused");
    }
};

# ---- TLSRouteInvalidBackendRefNonexistent / UnknownKind --------------------
for my $case (['TLSRouteInvalidBackendRefNonexistent', 'gateway-tlsroute-invalid-backend-ref-nonexistent',
               'invalid-backend-ref-nonexistent', 'BackendNotFound', 'tlsroute-invalid-backendref-nonexistent'],
              ['TLSRouteInvalidBackendRefUnknownKind', 'gateway-tlsroute-invalid-backend-ref-unknown-kind',
               'invalid-backend-ref-unknown-kind', 'InvalidKind', 'tlsroute-invalid-backendref-unknown-kind']) {
  my ($name, $gw, $route, $reason, $manifest) = @$case;
  conformance_test $name, [qw(Gateway TLSRoute)], [$manifest], sub {
    my $st = serve_gateway($gw, 443);
    my $c = conditions($st, 'TLSRoute', $route);
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, "InvalidBackendRef: $route Accepted");
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=False/$reason$}m, "InvalidBackendRef: $route ResolvedRefs=False/$reason");
    is(exchange(443, 'example.com', "hello\n"), '', "InvalidBackendRef: $route: connections are refused");
  };
}

# ---- TLSRouteInvalidNoMatchingListenerHostname -----------------------------
conformance_test 'TLSRouteInvalidNoMatchingListenerHostname', [qw(Gateway TLSRoute)], ['tlsroute-invalid-no-matching-listener-hostname'], sub {
for my $case (['gateway-tls-exact-hostname', 'tlsroute-hostname-mismatch-1'],
              ['gateway-tls-wildcard-hostname', 'tlsroute-hostname-mismatch-2']) {
    my ($gw, $route) = @$case;
    my $st = serve_gateway($gw);
    like(conditions($st, 'TLSRoute', $route), qr{^\Q$ns/$gw\E: Accepted=False/NoMatchingListenerHostname$}m,
         "NoMatchingListenerHostname: $route");
    unlike(conditions($st, 'TLSRoute', $route), qr{Accepted=True}, "NoMatchingListenerHostname: $route has no accepted parent");
    like(conditions($st, 'Gateway', $gw), qr{^listener tls: attachedRoutes=0$}m, "NoMatchingListenerHostname: $gw has 0 routes");
}
};

# ---- TLSRouteInvalidNoMatchingListener -------------------------------------
conformance_test 'TLSRouteInvalidNoMatchingListener', [qw(Gateway TLSRoute)], ['tlsroute-invalid-no-matching-listener'], sub {
for my $case (['gateway-tlsroute-http-only', 'tlsroute-not-allowed-protocol-http', 'NotAllowedByListeners', 'http'],
              ['gateway-tlsroute-https-only', 'tlsroute-not-allowed-protocol-https', 'NotAllowedByListeners', 'https'],
              ['gateway-tlsroute-tls-passthrough-only', 'tlsroute-no-matching-section-name', 'NoMatchingParent', 'tls-passthrough']) {
    my ($gw, $route, $reason, $listener) = @$case;
    my $st = serve_gateway($gw);
    like(conditions($st, 'TLSRoute', $route), qr{^\Q$ns/$gw\E: Accepted=False/$reason$}m, "NoMatchingListener: $route $reason");
    unlike(conditions($st, 'TLSRoute', $route), qr{Accepted=True}, "NoMatchingListener: $route has no accepted parent");
    like(conditions($st, 'Gateway', $gw), qr{^listener \Q$listener\E: attachedRoutes=0$}m, "NoMatchingListener: $gw has 0 routes");
}
};

# ---- TLSRouteInvalidReferenceGrant -----------------------------------------
conformance_test 'TLSRouteInvalidReferenceGrant', [qw(Gateway TLSRoute ReferenceGrant)], ['tlsroute-invalid-reference-grant'], sub {
    my $gw = 'gateway-tlsroute-referencegrant';
    my $st = serve_gateway($gw, 443);
    my $c = conditions($st, 'TLSRoute', 'gateway-conformance-infra-test');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'InvalidReferenceGrant: route Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=False/RefNotPermitted$}m, 'InvalidReferenceGrant: ResolvedRefs=False/RefNotPermitted');
    is(exchange(443, 'abc.example.com'), '', 'InvalidReferenceGrant: the other namespace\'s Service is not reached');
};

# ---- TLSRouteListenerPassthroughSupportedKinds / TerminateSupportedKinds ---
conformance_test 'TLSRouteListenerPassthroughSupportedKinds', [qw(Gateway TLSRoute)],
                 ['tlsroute-listener-passthrough-supported-kinds'], sub {
    my $gw = 'gateway-tlsroute-passthrough-supported-kind';
    my $c = conditions(serve_gateway($gw), 'Gateway', $gw);
    is(join(',', $c =~ /^listener tls-passthrough: supportedKind=(\S+)$/mg), 'TLSRoute',
       'PassthroughSupportedKinds: supportedKinds is [TLSRoute] (TCPRoute dropped)');
    like($c, qr{^listener tls-passthrough: ResolvedRefs=False/InvalidRouteKinds$}m,
         'PassthroughSupportedKinds: ResolvedRefs=False/InvalidRouteKinds');
    like($c, qr{^listener tls-passthrough: attachedRoutes=0$}m, 'PassthroughSupportedKinds: 0 routes');
};
conformance_test 'TLSRouteListenerTerminateSupportedKinds', [qw(Gateway TLSRoute TLSRouteModeTerminate)],
                 ['tlsroute-listener-terminate-supported-kinds'], sub {
    my $gw = 'gateway-tlsroute-terminate-supported';
    my $c = conditions(serve_gateway($gw), 'Gateway', $gw);
    is(join(',', $c =~ /^listener tls-terminate: supportedKind=(\S+)$/mg), 'TLSRoute',
       'TerminateSupportedKinds: supportedKinds is [TLSRoute]');
    like($c, qr{^listener tls-terminate: Accepted=True/Accepted$}m, 'TerminateSupportedKinds: Accepted');
    like($c, qr{^listener tls-terminate: attachedRoutes=0$}m, 'TerminateSupportedKinds: 0 routes');
};

# ---- TLSRouteListenerTerminateNotSupported ---------------------------------
# The suite runs it only where TLSRouteModeTerminate is not claimed (the
# listener then Accepted=False/UnsupportedValue); it is claimed, so the
# listener must be accepted and served.
conformance_test 'TLSRouteListenerTerminateNotSupported', [qw(Gateway TLSRoute)],
                 ['tlsroute-listener-terminate-not-supported'], sub {
    my $gw = 'gateway-tlsroute-terminate-unsupported';
    my $st = serve_gateway($gw);
    like(join("\n", @{$st->{'GatewayClass gateway2nginx'} || []}), qr/^supportedFeature=TLSRouteModeTerminate$/m,
         'TerminateNotSupported: the GatewayClass claims TLSRouteModeTerminate');
    like(conditions($st, 'Gateway', $gw), qr{^listener tls-terminate: Accepted=True/Accepted$}m,
         'TerminateNotSupported: so the Terminate listener is accepted');
};

# ---- TLSRouteListenerMixedTerminationNotSupported --------------------------
# The Go test checks nothing where the GatewayClass claims TLSRouteModeMixed;
# here both listeners are then Accepted (TLSRouteMixedTerminationSameNamespace
# sends traffic through such a port).
conformance_test 'TLSRouteListenerMixedTerminationNotSupported', [qw(Gateway TLSRoute TLSRouteModeTerminate)], ['tlsroute-listener-mixed-termination-not-supported'], sub {
    my $gw = 'gateway-tlsroute-mixed-termination-not-supported';
    my $st = serve_gateway($gw);
    like(join("\n", @{$st->{'GatewayClass gateway2nginx'} || []}), qr/^supportedFeature=TLSRouteModeMixed$/m,
         'MixedTerminationNotSupported: the GatewayClass claims TLSRouteModeMixed');
    my $c = conditions($st, 'Gateway', $gw);
    for my $listener (qw(tls-terminate tls-passthrough)) {
        like($c, qr{^listener $listener: Accepted=True/Accepted$}m, "MixedTerminationNotSupported: $listener Accepted");
    }
};

# ---- TLSRouteMixedTerminationSameNamespace ---------------------------------
conformance_test 'TLSRouteMixedTerminationSameNamespace', [qw(Gateway TLSRoute TLSRouteModeTerminate TLSRouteModeMixed)], ['tlsroute-mixed-termination-same-namespace'], sub {
    my $gw = 'gateway-tlsroute-mixed-termination';
    my $st = serve_gateway($gw, 8883);
    route_accepted($st, 'gateway-conformance-mixed-passthroughroute', $gw, 'MixedTerminationSameNamespace');
    route_accepted($st, 'gateway-conformance-mixed-terminateroute', $gw, 'MixedTerminationSameNamespace');
    my $c = conditions($st, 'Gateway', $gw);
    for my $listener (qw(tls-terminate tls-passthrough)) {
        like($c, qr{^listener $listener: Accepted=True/Accepted$}m, "MixedTerminationSameNamespace: $listener Accepted");
        like($c, qr{^listener $listener: attachedRoutes=1$}m, "MixedTerminationSameNamespace: $listener has 1 route");
    }
    is(exchange(8883, 'tls.example.com', "hello\n"), "backend=tcp tls=no sni=\n",
       'MixedTerminationSameNamespace: the Terminate hostname is terminated, the backend gets plaintext');
    is(exchange(8883, 'abc.example.com', "hello\n"), "backend=tcp_tls tls=yes sni=abc.example.com\n",
       'MixedTerminationSameNamespace: the Passthrough hostname reaches the backend encrypted, with its SNI');
    is(exchange(8883, 'other.example.com', "hello\n"), '', 'MixedTerminationSameNamespace: another SNI is refused');
};

# ---- TLSRouteTerminateSimpleSameNamespace ----------------------------------
# The suite sends MQTT through the Gateway (TLS 1.3) to a broker behind
# tcp-backend and waits for its message to come back; here the backend
# answers whether the bytes it got came in plaintext.
conformance_test 'TLSRouteTerminateSimpleSameNamespace', [qw(Gateway TLSRoute TLSRouteModeTerminate)], ['tlsroute-terminate-simple-same-namespace'], sub {
    my $gw = 'gateway-tlsroute-terminate';
    my $st = serve_gateway($gw, 8443);
    route_accepted($st, 'tlsroute-terminated-test', $gw, 'TerminateSimpleSameNamespace');
    is(exchange(8443, 'tls.example.com', "hello\n"), "backend=tcp tls=no sni=\n",
       'TerminateSimpleSameNamespace: the gateway terminates TLS and the backend gets plaintext');
    is(tls_exchange(8443 + $offset, 'tls.example.com', "hello\n", "$certs/unrelated-ca.crt", 'tls.example.com'), '',
       'TerminateSimpleSameNamespace: the listener certificate is the suite\'s (an unrelated CA refuses it)');
    is(exchange(8443, 'abc.example.com', "hello\n"), '', 'TerminateSimpleSameNamespace: another SNI is refused');
};

# ---- BackendTLSPolicyTLSRouteTerminate -------------------------------------
conformance_test 'BackendTLSPolicyTLSRouteTerminate', [qw(Gateway TLSRoute TLSRouteModeTerminate BackendTLSPolicy)], ['backendtlspolicy-tlsroute-terminate'], sub {
    my $gw = 'gateway-btls-tlsroute-terminate';
    my $st = serve_gateway($gw, 8443);
    route_accepted($st, 'backendtlspolicy-tlsroute-terminate', $gw, 'BackendTLSPolicyTLSRouteTerminate');
    my $c = conditions($st, 'BackendTLSPolicy', 'btls-tlsroute-terminate-test');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'BackendTLSPolicyTLSRouteTerminate: policy Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=True/ResolvedRefs$}m, 'BackendTLSPolicyTLSRouteTerminate: policy ResolvedRefs');
    is(exchange(8443, 'tls.example.com', "hello\n"), "backend=tcp_tls tls=yes sni=abc.example.com\n",
       'BackendTLSPolicyTLSRouteTerminate: re-encrypted to the backend with SNI abc.example.com');
    like(slurp("$dir/out-$gw/stream.conf"), qr/proxy_ssl_verify_ca certs\/.*\n\s+proxy_ssl_policy_name \Q$ns\E\/btls-tlsroute-terminate-test;/,
         'BackendTLSPolicyTLSRouteTerminate: the upstream carries the policy');

    # the same policy with a hostname the backend certificate lacks: refused
    my $file = "$manifests/10-backendtlspolicy-tlsroute-terminate.yaml";
    my $orig = slurp($file);
    (my $wrong = $orig) =~ s/hostname: "abc\.example\.com"/hostname: "wrong.example.com"/ or die 'no hostname to change';
    spit($file, $wrong);
    serve_gateway($gw, 8443);
    is(exchange(8443, 'tls.example.com', "hello\n"), '',
       'BackendTLSPolicyTLSRouteTerminate: a backend certificate without the policy hostname is refused');
    like(slurp("$dir/out-$gw/logs/error.log"),
         qr/gateway_tls: backend certificate rejected: policy "\Q$ns\E\/btls-tlsroute-terminate-test"/,
         'BackendTLSPolicyTLSRouteTerminate: the rejection is logged with the policy');
    spit($file, $orig);
};

stop_conformance_gateway();
stop_backends();
