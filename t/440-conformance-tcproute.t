# Replays, locally, the Gateway API conformance tests for TCPRoute (the
# GATEWAY-TCP profile, v1 since the suite's v1.6): the suite's own
# manifests from $GATEWAY_API_DIR/conformance/, EndpointSlices that point
# each Service at a local backend answering as the suite's TCP echo server
# does (t/lib/tcp-echo-server.pl: welcome, PING, IS_TLS, TEST), gateway2nginx
# and the nginx it writes. Each Gateway is rendered alone (--gateway), as one
# nginx per Gateway, since the suite gives every Gateway an address of its
# own and they share ports; each connection makes the exchange
# tcp.MakeTCPRequestAndExpectEventuallyValidResponse makes.
use lib 't/lib';
use IO::Socket::INET;
use JSON::PP;
use Test::ConformanceReport;
use Test::GatewayTLS;
use Test::More;
use Time::HiRes qw(sleep time);

my ($shared, $manifests) = conformance_begin();

my @tests = qw(tcproute-invalid-backendref-nonexistent tcproute-invalid-cross-namespace-backend-ref
               tcproute-invalid-non-tcp-listener tcproute-multiple-routes-attachment tcproute-parentref-attach-all
               tcproute-parentref-port-and-section-name tcproute-reference-grant tcproute-weighted-routing);
my $all = conformance_manifests($shared, $manifests, @tests);

my $ns = 'gateway-conformance-infra';
my $web = 'gateway-conformance-web-backend';
my $offset = server_port() + 30 - 443;  # as t/420: listener port P at base + P - 413

# The EndpointSlice controller's part: every Service whose selector picks
# a Deployment of the manifests gets a slice of its one pod, NAME-0 (the
# suite asserts the pod's name starts with the Deployment's), answering on
# a port of its own. The newer route of TCPRouteMultipleRoutesAttachment,
# which the Go test creates a second after the older one, is added with
# creationTimestamps as the API server would set them.
my %deployments = map { $_ => 1 } $all =~ /^kind: Deployment\n(?:.*\n)*?  name: (\S+)/mg;
my (@echo, $setup);
my $next_port = server_port() + 40;
for my $doc (split /^---\s*$/m, $all) {
    next unless $doc =~ /^kind: Service\s*$/m;
    my ($name) = $doc =~ /^  name: (\S+)/m;
    my ($svc_ns) = $doc =~ /^  namespace: (\S+)/m;
    my ($app) = $doc =~ /^  selector:\n    app: (\S+)/m or next;
    next unless $deployments{$app};
    my $port = $next_port++;
    push @echo, "$port=$svc_ns/$name/$app-0";
    $setup .= "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: $name-echo\n"
            . "  namespace: $svc_ns\n  labels:\n    kubernetes.io/service-name: $name\naddressType: IPv4\n"
            . "ports:\n- name: tcp\n  port: $port\nendpoints:\n- addresses: [\"127.0.0.1\"]\n  conditions: {ready: true}\n";
}
spit("$manifests/20-suite-setup.yaml", conformance_setup() . $setup);

(my $echo_script = $INC{'Test/GatewayTLS.pm'}) =~ s{Test/GatewayTLS\.pm$}{tcp-echo-server.pl};
start_ready_server($^X, $echo_script, @echo);

sub serve_gateway { serve_conformance_gateway($manifests, $_[0], $offset, $_[1]) }
sub conditions { conformance_conditions(@_) }

# One connection to listener port PORT, the exchange the suite makes:
# {pod, namespace} of the backend that answered, or undef (and why in $@)
# when the connection is refused, closed or answered otherwise.
sub tcp_echo {
    my $port = shift;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port + $offset, Proto => 'tcp',
                                     Timeout => 5);
    ($@ = "connect: $!"), return undef unless $sock;
    my $line = sub {
        my $l;
        eval {
            local $SIG{ALRM} = sub { die "timed out\n" };
            alarm 5;
            $l = <$sock>;
            alarm 0;
        };
        return $l;
    };
    my $welcome = $line->() // (($@ = 'closed before the welcome'), return undef);
    ($@ = "welcome: $welcome"), return undef unless $welcome eq "Gateway API Test TCP Server\n";
    print $sock "PING\n";
    ($@ = 'no PONG'), return undef unless ($line->() // '') eq "PONG\n";
    print $sock "IS_TLS\n";
    ($@ = 'IS_TLS is not false'), return undef unless ($line->() // '') eq "false\n";
    print $sock "TEST\n";
    my $payload = eval { decode_json($line->() // '') } // (($@ = 'no TEST payload'), return undef);
    return $payload;
}

# The backend (Deployment) of listener PORT's answer, waiting with a
# deadline for the first (the suite's MaxTimeToConsistency), or '' with
# why.
sub backend_of {
    my ($port, $namespace) = @_;
    my $deadline = time + 10;
    while (1) {
        my $p = tcp_echo($port);
        if ($p) {
            return "namespace $p->{namespace}" if $p->{namespace} ne ($namespace // $ns);
            return $p->{pod} =~ s/-0$//r;
        }
        return "no answer: $@" if time > $deadline;
        sleep 0.2;
    }
}

sub route_accepted {
    my ($st, $route, $gateway, $label) = @_;
    like(conditions($st, 'TCPRoute', $route), qr{^\Q$ns/$gateway\E: Accepted=True/Accepted$}m, "$label: $route Accepted");
}

# ---- TCPRouteInvalidBackendRefNonexistent ------------------------------------
conformance_test 'TCPRouteInvalidBackendRefNonexistent', [qw(Gateway TCPRoute)], ['tcproute-invalid-backendref-nonexistent'], sub {
    my $gw = 'tcp-gateway-invalid-backend';
    my $st = serve_gateway($gw, 9300);
    my $c = conditions($st, 'TCPRoute', 'tcp-route-invalid-backend-ref-nonexistent');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'BackendRefNonexistent: Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=False/BackendNotFound$}m, 'BackendRefNonexistent: ResolvedRefs=False/BackendNotFound');
    is(tcp_echo(9300), undef, 'BackendRefNonexistent: connections are refused');
};

# ---- TCPRouteInvalidCrossNamespaceBackendRef ---------------------------------
conformance_test 'TCPRouteInvalidCrossNamespaceBackendRef', [qw(Gateway TCPRoute ReferenceGrant)],
                 ['tcproute-invalid-cross-namespace-backend-ref'], sub {
    my $gw = 'tcp-invalid-cross-namespace-backend-ref-gateway';
    my $st = serve_gateway($gw, 9321);
    my $c = conditions($st, 'TCPRoute', 'tcp-invalid-cross-namespace-backend-ref');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'CrossNamespaceBackendRef: Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=False/RefNotPermitted$}m, 'CrossNamespaceBackendRef: ResolvedRefs=False/RefNotPermitted');
    is(tcp_echo(9321), undef, 'CrossNamespaceBackendRef: the other namespace\'s Service is not reached');
};

# ---- TCPRouteInvalidNonTCPListener -------------------------------------------
conformance_test 'TCPRouteInvalidNonTCPListener', [qw(Gateway TCPRoute)], ['tcproute-invalid-non-tcp-listener'], sub {
    my $gw = 'tcp-mixed-protocol-gateway';
    my $st = serve_gateway($gw);
    like(conditions($st, 'TCPRoute', 'tcp-route'), qr{^\Q$ns/$gw\E: Accepted=False/NotAllowedByListeners$}m,
         'NonTCPListener: Accepted=False/NotAllowedByListeners');
    like(conditions($st, 'Gateway', $gw), qr{^listener only-allow-http-routes: attachedRoutes=0$}m,
         'NonTCPListener: the Gateway has 0 routes');
};

# ---- TCPRouteMultipleRoutesAttachment ----------------------------------------
conformance_test 'TCPRouteMultipleRoutesAttachment', [qw(Gateway TCPRoute)], ['tcproute-multiple-routes-attachment'], sub {
    my $gw = 'tcp-multi-route-attach-gateway';
    my $file = "$manifests/10-tcproute-multiple-routes-attachment.yaml";
    my $orig = conformance_newer_route($file, 'TCPRoute', 'tcproute-attach-older', 'tcproute-attach-newer', $gw, 'tcp',
                                       'tcp-attach-backend-2', 3000);
    my $st = serve_gateway($gw, 9310);
    route_accepted($st, $_, $gw, 'MultipleRoutesAttachment') for qw(tcproute-attach-older tcproute-attach-newer);
    my $c = conditions($st, 'Gateway', $gw);
    like($c, qr{^listener tcp: attachedRoutes=2$}m, 'MultipleRoutesAttachment: the listener counts 2 routes');
    like($c, qr{^listener tcp: Accepted=True/Accepted$}m, 'MultipleRoutesAttachment: the listener is Accepted');
    is(join(',', $c =~ /^listener tcp: supportedKind=(\S+)$/mg), 'TCPRoute', 'MultipleRoutesAttachment: supportedKinds [TCPRoute]');
    is(backend_of(9310), 'tcp-attach-backend-1', 'MultipleRoutesAttachment: the older route has the traffic');
    my %seen;
    for (1 .. 100) {
        my $p = tcp_echo(9310);
        $seen{$p ? $p->{pod} : "none: $@"}++;
    }
    is_deeply(\%seen, {'tcp-attach-backend-1-0' => 100}, 'MultipleRoutesAttachment: 100 connections, none to the newer route');
    spit($file, $orig);
};

# ---- TCPRouteParentRefAttachAll ----------------------------------------------
conformance_test 'TCPRouteParentRefAttachAll', [qw(Gateway TCPRoute)], ['tcproute-parentref-attach-all'], sub {
    my $gw = 'tcp-attach-all-gateway';
    my $st = serve_gateway($gw, 9310);
    route_accepted($st, 'tcp-route-attach-all', $gw, 'ParentRefAttachAll');
    my $c = conditions($st, 'Gateway', $gw);
    for my $listener (qw(one two three four)) {
        like($c, qr{^listener $listener: attachedRoutes=1$}m, "ParentRefAttachAll: listener $listener has the route");
    }
    for my $port (9310 .. 9313) {
        is(backend_of($port), 'tcp-echo-attach-all', "ParentRefAttachAll: port $port reaches the backend");
    }
};

# ---- TCPRouteParentRefPortAndSectionName -------------------------------------
conformance_test 'TCPRouteParentRefPortAndSectionName', [qw(Gateway TCPRoute)], ['tcproute-parentref-port-and-section-name'], sub {
    my $gw = 'tcp-multi-listener-gateway';
    my $st = serve_gateway($gw, 9300);
    route_accepted($st, $_, $gw, 'ParentRefPortAndSectionName')
        for qw(tcp-route-by-port tcp-route-by-section tcp-route-by-section-and-port);
    is(backend_of(9300), 'tcp-echo-one', 'ParentRefPortAndSectionName: by port');
    is(backend_of(9301), 'tcp-echo-two', 'ParentRefPortAndSectionName: by sectionName');
    is(backend_of(9302), 'tcp-echo-three', 'ParentRefPortAndSectionName: by sectionName and port');
};

# ---- TCPRouteReferenceGrant --------------------------------------------------
conformance_test 'TCPRouteReferenceGrant', [qw(Gateway TCPRoute ReferenceGrant)], ['tcproute-reference-grant'], sub {
    my $gw = 'tcp-reference-grant-gateway';
    my $st = serve_gateway($gw, 9320);
    my $c = conditions($st, 'TCPRoute', 'tcp-reference-grant');
    like($c, qr{^\Q$ns/$gw\E: Accepted=True/Accepted$}m, 'ReferenceGrant: Accepted');
    like($c, qr{^\Q$ns/$gw\E: ResolvedRefs=True/ResolvedRefs$}m, 'ReferenceGrant: ResolvedRefs');
    is(backend_of(9320, $web), 'tcp-reference-grant-backend', 'ReferenceGrant: the granted Service is reached');

    # the grant deleted: refused
    my $file = "$manifests/10-tcproute-reference-grant.yaml";
    my $orig = conformance_drop_kind($file, 'ReferenceGrant');
    $st = serve_gateway($gw, 9320);
    like(conditions($st, 'TCPRoute', 'tcp-reference-grant'), qr{^\Q$ns/$gw\E: ResolvedRefs=False/RefNotPermitted$}m,
         'ReferenceGrant: deleted, ResolvedRefs=False/RefNotPermitted');
    is(tcp_echo(9320), undef, 'ReferenceGrant: deleted, the Service is no longer reached');
    spit($file, $orig);
};

# ---- TCPRouteWeightedRouting -------------------------------------------------
conformance_test 'TCPRouteWeightedRouting', [qw(Gateway TCPRoute)], ['tcproute-weighted-routing'], sub {
    my $gw = 'tcp-weighted-gateway';
    my $st = serve_gateway($gw, 9300);
    route_accepted($st, 'tcp-weighted-route', $gw, 'WeightedRouting');
    like(backend_of(9300), qr/^tcp-backend-v[12]$/, 'WeightedRouting: served');
    my $sample = sub { my $p = tcp_echo(9300); $p ? $p->{pod} =~ s/-0$//r : undef };
    is(weighted_shares($sample, {'tcp-backend-v1' => 0.7, 'tcp-backend-v2' => 0.3, 'tcp-backend-v3' => 0}, 500), '',
       'WeightedRouting: 500 connections share out as the weights say (within 0.05)');
};

stop_conformance_gateway();
