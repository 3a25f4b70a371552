# Replays, locally, the Gateway API conformance tests for UDPRoute (the
# GATEWAY-UDP profile, v1 since the suite's v1.6): the suite's own
# manifests from $GATEWAY_API_DIR/conformance/, EndpointSlices that point
# each Service at a local backend answering as the suite's UDP echo server
# does, or as its coredns (t/lib/udp-echo-server.pl), gateway2nginx and the
# nginx it writes. Each Gateway is rendered alone (--gateway), as one nginx
# per Gateway; each probe is a datagram from a socket of its own, as the Go
# test dials one per probe.
use lib 't/lib';
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Test::ConformanceReport;
use Test::GatewayTLS;
use Test::More;
use Time::HiRes qw(sleep time);

my ($shared, $manifests) = conformance_begin();

my @tests = qw(udproute-invalid-backendref-nonexistent udproute-invalid-cross-namespace-backend-ref
               udproute-multiple-routes-attachment udproute-not-allowed-by-listeners
               udproute-parentref-attach-all-listeners udproute-parentref-port-and-section-name
               udproute-reference-grant udproute-simple udproute-weighted-routing);
my $all = conformance_manifests($shared, $manifests, @tests);

my $ns = 'gateway-conformance-infra';
my $offset = server_port() + 30 - 443;  # as t/420: listener port P at base + P - 413

# The EndpointSlice controller's part: every Service whose selector picks
# a Deployment of the manifests gets a slice of that Deployment's one pod,
# NAME-0, on a port of its own; the suite's coredns answers DNS. The
# newer route of UDPRouteMultipleRoutesAttachment, which the Go test creates
# a second after the older one, is added with the creationTimestamps the
# API server would set.
my %pods_of;  # "ns app-label" -> Deployment name
for my $doc (split /^---\s*$/m, $all) {
    next unless $doc =~ /^kind: Deployment\s*$/m;
    my ($name) = $doc =~ /^  name: (\S+)/m;
    my ($dns) = $doc =~ /^  namespace: (\S+)/m;
    my ($app) = $doc =~ /^  template:\n    metadata:\n      labels:\n        app: (\S+)/m or next;
    $pods_of{"$dns $app"} = $name;
}
my (@backends, $setup);
my $next_port = server_port() + 40;
for my $doc (split /^---\s*$/m, $all) {
    next unless $doc =~ /^kind: Service\s*$/m && $doc =~ /protocol: UDP/;
    my ($name) = $doc =~ /^  name: (\S+)/m;
    my ($svc_ns) = $doc =~ /^  namespace: (\S+)/m;
    my ($port_name) = $doc =~ /^    - name: (\S+)/m;
    my ($app) = $doc =~ /^  selector:\n    app: (\S+)/m or next;
    my $deployment = $pods_of{"$svc_ns $app"} or next;
    my $port = $next_port++;
    push @backends, $deployment eq 'coredns' ? "$port=dns" : "$port=$svc_ns/$name/$deployment-0";
    $setup .= "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: $name-echo\n"
            . "  namespace: $svc_ns\n  labels:\n    kubernetes.io/service-name: $name\naddressType: IPv4\n"
            . "ports:\n- name: $port_name\n  port: $port\n  protocol: UDP\n"
            . "endpoints:\n- addresses: [\"127.0.0.1\"]\n  conditions: {ready: true}\n";
}
spit("$manifests/20-suite-setup.yaml", conformance_setup() . $setup);

(my $server = $INC{'Test/GatewayTLS.pm'}) =~ s{Test/GatewayTLS\.pm$}{udp-echo-server.pl};
start_ready_server($^X, $server, @backends);

sub serve_gateway { serve_conformance_gateway($manifests, $_[0], $offset, $_[1], 'udp') }
sub conditions { conformance_conditions(@_) }

# One datagram DATA to listener port PORT from a socket of its own: the
# answer, or undef (and why in $@) when none comes within WAIT seconds.
sub exchange {
    my ($port, $data, $wait) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port + $offset, Proto => 'udp')
        or (($@ = "socket: $!"), return undef);
    $sock->send($data);
    ($@ = 'no answer'), return undef unless IO::Select->new($sock)->can_read($wait // 2);
    $sock->recv(my $answer, 65535);
    return $answer;
}

# The echo probe (udp.ExpectEchoResponseFromBackend): the Service that
# answered listener PORT, waiting with a deadline for the first answer, or
# '' with why.
sub service_of {
    my ($port, $namespace) = @_;
    my $deadline = time + 10;
    while (1) {
        my $answer = exchange($port, 'gateway-api-conformance-udp-echo', 1);
        my $echo = defined $answer ? eval { decode_json($answer) } : undef;
        if ($echo) {
            return "namespace $echo->{namespace}" if $echo->{namespace} ne ($namespace // $ns);
            return "request $echo->{request}" if $echo->{request} ne 'gateway-api-conformance-udp-echo';
            return $echo->{service};
        }
        return 'no answer: ' . ($@ || 'not JSON') if time > $deadline;
    }
}

sub route_accepted {
    my ($st, $route, $gateway, $label) = @_;
    like(conditions($st, 'UDPRoute', $route), qr{^\Q$ns/$gateway\E: Accepted=True/Accepted$}m, "$label: $route Accepted");
}

# ---- UDPRouteInvalidBackendRefNonexistent ------------------------------------
conformance_test 'UDPRouteInvalidBackendRefNonexistent', [qw(Gateway UDPRoute)], ['udproute-invalid-backendref-nonexistent'], sub {
    my $gw = 'udp-gateway-invalid-backend';
    my $st = serve_gateway($gw, 5300);
    my $c = conditions($st, 'UDPRoute', 'udp-route-invalid-backend-ref-nonexistent');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'BackendRefNonexistent: Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=False/BackendNotFound$}m, 'BackendRefNonexistent: ResolvedRefs=False/BackendNotFound');
    is(exchange(5300, 'probe', 1), undef, 'BackendRefNonexistent: datagrams get no answer');
};

# ---- UDPRouteInvalidCrossNamespaceBackendRef ---------------------------------
conformance_test 'UDPRouteInvalidCrossNamespaceBackendRef', [qw(Gateway UDPRoute ReferenceGrant)],
                 ['udproute-invalid-cross-namespace-backend-ref'], sub {
    my $gw = 'udp-gateway-invalid-cross-namespace-backend-ref';
    my $st = serve_gateway($gw, 5300);
    my $c = conditions($st, 'UDPRoute', 'udp-route-invalid-cross-namespace-backend-ref');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'CrossNamespaceBackendRef: Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=False/RefNotPermitted$}m, 'CrossNamespaceBackendRef: ResolvedRefs=False/RefNotPermitted');
    is(exchange(5300, 'probe', 1), undef, 'CrossNamespaceBackendRef: the other namespace\'s Service gets nothing');
};

# ---- UDPRouteMultipleRoutesAttachment ----------------------------------------
conformance_test 'UDPRouteMultipleRoutesAttachment', [qw(Gateway UDPRoute)], ['udproute-multiple-routes-attachment'], sub {
    my $gw = 'udp-multi-route-attach-gateway';
    my $file = "$manifests/10-udproute-multiple-routes-attachment.yaml";
    my $orig = conformance_newer_route($file, 'UDPRoute', 'udproute-attach-older', 'udproute-attach-newer', $gw, 'udp',
                                       'udp-attach-backend-2', 8080);
    my $st = serve_gateway($gw, 5301);
    route_accepted($st, $_, $gw, 'MultipleRoutesAttachment') for qw(udproute-attach-older udproute-attach-newer);
    my $c = conditions($st, 'Gateway', $gw);
    like($c, qr{^listener udp: attachedRoutes=2$}m, 'MultipleRoutesAttachment: the listener counts 2 routes');
    is(join(',', $c =~ /^listener udp: supportedKind=(\S+)$/mg), 'UDPRoute', 'MultipleRoutesAttachment: supportedKinds [UDPRoute]');
    is(service_of(5301), 'udp-attach-backend-1', 'MultipleRoutesAttachment: the older route has the traffic');
    my %seen;
    for (1 .. 50) {
        my $echo = eval { decode_json(exchange(5301, 'gateway-api-conformance-udp-echo') // '') };
        $seen{$echo ? $echo->{service} : 'none'}++;
    }
    is_deeply(\%seen, {'udp-attach-backend-1' => 50}, 'MultipleRoutesAttachment: 50 probes, none to the newer route');
    spit($file, $orig);
};

# ---- UDPRouteNotAllowedByListeners -------------------------------------------
conformance_test 'UDPRouteNotAllowedByListeners', [qw(Gateway UDPRoute TLSRoute)], ['udproute-not-allowed-by-listeners'], sub {
    my $gw = 'udproute-tls-only-gateway';
    my $st = serve_gateway($gw);
    like(conditions($st, 'UDPRoute', 'udproute-not-allowed-by-listeners'),
         qr{^\Q$ns/$gw\E: Accepted=False/NotAllowedByListeners$}m, 'NotAllowedByListeners: Accepted=False/NotAllowedByListeners');
    like(conditions($st, 'Gateway', $gw), qr{^listener tls: attachedRoutes=0$}m, 'NotAllowedByListeners: the Gateway has 0 routes');
};

# ---- UDPRouteParentRefAttachAllListeners -------------------------------------
conformance_test 'UDPRouteParentRefAttachAllListeners', [qw(Gateway UDPRoute)], ['udproute-parentref-attach-all-listeners'], sub {
    my $gw = 'udp-attach-all-listeners-gateway';
    my $st = serve_gateway($gw, 5310);
    route_accepted($st, 'udp-route-attach-all', $gw, 'ParentRefAttachAllListeners');
    my $c = conditions($st, 'Gateway', $gw);
    like($c, qr{^listener $_: attachedRoutes=1$}m, "ParentRefAttachAllListeners: listener $_ has the route") for qw(udp-1 udp-2 udp-3);
    is(service_of($_), 'udp-echo-attach-all', "ParentRefAttachAllListeners: port $_ reaches the backend") for 5310 .. 5312;
};

# ---- UDPRouteParentRefPortAndSectionName -------------------------------------
conformance_test 'UDPRouteParentRefPortAndSectionName', [qw(Gateway UDPRoute)], ['udproute-parentref-port-and-section-name'], sub {
    my $gw = 'udp-multi-listener-gateway';
    my $st = serve_gateway($gw, 5300);
    route_accepted($st, $_, $gw, 'ParentRefPortAndSectionName')
        for qw(udp-route-by-port udp-route-by-section udp-route-by-section-and-port);
    is(service_of(5300), 'udp-echo-by-port', 'ParentRefPortAndSectionName: by port');
    is(service_of(5301), 'udp-echo-by-section', 'ParentRefPortAndSectionName: by sectionName');
    is(service_of(5302), 'udp-echo-by-section-and-port', 'ParentRefPortAndSectionName: by sectionName and port');
};

# ---- UDPRouteReferenceGrant --------------------------------------------------
conformance_test 'UDPRouteReferenceGrant', [qw(Gateway UDPRoute ReferenceGrant)], ['udproute-reference-grant'], sub {
    my $gw = 'udp-gateway-reference-grant';
    my $st = serve_gateway($gw, 5300);
    my $c = conditions($st, 'UDPRoute', 'udp-route-reference-grant');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'ReferenceGrant: Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=True/ResolvedRefs$}m, 'ReferenceGrant: ResolvedRefs');
    is(service_of(5300, 'gateway-conformance-app-backend'), 'udp-echo-reference-grant', 'ReferenceGrant: the granted Service answers');

    my $file = "$manifests/10-udproute-reference-grant.yaml";
    my $orig = conformance_drop_kind($file, 'ReferenceGrant');
    $st = serve_gateway($gw, 5300);
    like(conditions($st, 'UDPRoute', 'udp-route-reference-grant'), qr{^\Q$ns/$gw\E: ResolvedRefs=False/RefNotPermitted$}m,
         'ReferenceGrant: deleted, ResolvedRefs=False/RefNotPermitted');
    is(exchange(5300, 'probe', 1), undef, 'ReferenceGrant: deleted, the Service gets nothing');
    spit($file, $orig);
};

# ---- UDPRoute (udproute-simple) ----------------------------------------------
# A DNS query for foo.bar.com. through the Gateway to the suite's coredns;
# the test passes on any answer to it.
conformance_test 'UDPRoute', [qw(Gateway UDPRoute)], ['udproute-simple'], sub {
    my $gw = 'udp-gateway';
    my $st = serve_gateway($gw, 5300);
    route_accepted($st, 'udp-coredns', $gw, 'UDPRoute');
    my $query = pack('n n n n n n', 0x1234, 0x0100, 1, 0, 0, 0) . "\x03foo\x03bar\x03com\x00" . pack('n n', 1, 1);
    my ($answer, $deadline) = (undef, time + 10);
    $answer = exchange(5300, $query, 1) until defined $answer || time > $deadline;
    my ($id, $flags) = unpack 'n n', $answer // "\0\0\0\0";
    ok($id == 0x1234 && ($flags & 0x8000), 'UDPRoute: the DNS query through the Gateway is answered');
};

# ---- UDPRouteWeightedRouting -------------------------------------------------
conformance_test 'UDPRouteWeightedRouting', [qw(Gateway UDPRoute)], ['udproute-weighted-routing'], sub {
    my $gw = 'udp-weighted-gateway';
    my $st = serve_gateway($gw, 5300);
    route_accepted($st, 'udp-weighted-route', $gw, 'WeightedRouting');
    like(service_of(5300), qr/^udp-backend-v[12]$/, 'WeightedRouting: served');
    my $sample = sub {
        my $echo = eval { decode_json(exchange(5300, "gateway-api-conformance-udp-weight\n") // '') };
        $echo ? $echo->{service} : undef;
    };
    is(weighted_shares($sample, {'udp-backend-v1' => 0.7, 'udp-backend-v2' => 0.3, 'udp-backend-v3' => 0}, 500), '',
       'WeightedRouting: 500 probes share out as the weights say (within 0.05)');
};

stop_conformance_gateway();
