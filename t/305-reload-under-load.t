# Reloads under load (issue 8): wrk keeps requests flowing through a
# policy-verified TLS backend while gateway2nginx regenerates the
# configuration and reloads nginx 20 times, each time adding, changing or
# removing other policies and changing how the loaded path's own policy
# verifies (by hostname, by URI SAN, by SPKI pin: always a valid way).
# No request the configuration did not ask to fail may fail, and the
# policy's counters survive every reload (the shared zone is kept).
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;

plan 'no_plan';
setup();
my $dir = servroot();
(my $spki = spki_pin('leaf')) =~ s/^sha256-spki://;
my $ca_ref = "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n";
my @ways = ($ca_ref,
            $ca_ref . "    subjectAltNames: [{type: URI, uri: \"spiffe://abc.example.com/test-identity\"}]\n",
            "    trustedCertificateHashes: [{type: SPKI, algorithm: SHA256, value: \"$spki\"}]\n");

# generation I: the loaded service verified the I-th way; "extra" services
# come and go, one of them under a policy that can never pass
sub manifests {
    my $i = shift;
    my $yaml = gateway_manifests();
    $yaml .= service_manifests('steady', 'leaf', $ways[$i % 3]);
    $yaml .= service_manifests('extra', 'leaf', $ca_ref) if $i % 2;
    $yaml .= service_manifests('broken', 'wrongsan', $ca_ref) if $i % 4 == 1;
    $yaml .= "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
           . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n"
           . "  - matches: [{path: {type: PathPrefix, value: /steady}}]\n    backendRefs: [{name: steady, port: 443}]\n";
    $yaml .= "  - matches: [{path: {type: PathPrefix, value: /extra}}]\n    backendRefs: [{name: extra, port: 443}]\n" if $i % 2;
    $yaml .= "  - matches: [{path: {type: PathPrefix, value: /broken}}]\n    backendRefs: [{name: broken, port: 443}]\n"
        if $i % 4 == 1;
    return $yaml;
}

my $port = serve_manifests(manifests(0));
my $out = "$dir/out";
my $offset = server_port() + 20 - 80;
(my $module_dir = ($ENV{GTLS_MODULE} // '')) =~ s{/[^/]+$}{};
$module_dir ||= 'build/nginx/objs';

sub verified {
    my $auth = bearer("$out/status.token");
    my $json = `curl -s --max-time 5 -H '$auth' http://127.0.0.1:@{[status_port()]}/status`;
    return $json =~ /"name":"ns\/steady-tls"[^{]*\{"verified":(\d+)/ ? $1 : -1;
}

my ($code) = request($port, 'GET', '/steady', 'Host: shop.example.com');
is($code, 200, 'the loaded path answers before the first reload');

# one connection per request: a reload hands the listening socket over, but
# an idle keepalive connection of an old worker may be closed under a client
my $wrk = "$dir/wrk.txt";
my $pid = fork // die;
if ($pid == 0) {
    # until told to stop (SIGINT: wrk prints its report), however long
    # the 20 regenerations take on this machine
    exec("exec wrk -t1 -c4 -d600s -H 'Connection: close' -H 'Host: shop.example.com' "
         . "http://127.0.0.1:$port/steady > $wrk 2>&1");
}
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;

my ($reloads, $failed_generations, @counts, @extra, @broken) = (0, 0);
for my $i (1 .. 20) {
    select(undef, undef, undef, 1.0);
    my @old = split ' ', worker_pids($master);
    open my $fh, '>', "$dir/manifests.yaml" or die;
    print $fh manifests($i);
    close $fh;
    my ($rc, $msg) = run_generator('-f', "$dir/manifests.yaml", '-o', $out, '--port-offset', $offset,
                                   '--listen-address', '127.0.0.1', '--module-dir', $module_dir,
                                   '--status-listen', '127.0.0.1:' . status_port(), '--reload', "$out/nginx.pid");
    if ($rc == 0) { $reloads++ } else { $failed_generations++; diag $msg }
    # the new workers take over once the old ones, which may still accept
    # a connection, have gone
    ok(wait_for(sub { !grep { -e "/proc/$_" } @old }, 30), "reload $i: the old workers are gone");
    push @counts, verified();
    # what the configuration asks of the other paths, meanwhile
    my ($extra) = request($port, 'GET', '/extra', 'Host: shop.example.com');
    push @extra, $i % 2 ? $extra == 200 : $extra == 404;
    if ($i % 4 == 1) {
        my ($broken) = request($port, 'GET', '/broken', 'Host: shop.example.com');
        push @broken, $broken;
    }
}
kill 'INT', $pid;
waitpid($pid, 0);
my $report = slurp($wrk);
diag $report;

is($reloads, 20, '20 regenerations, each checked by nginx -t and reloaded');
is($failed_generations, 0, 'no regeneration failed');
my ($requests) = $report =~ /(\d+) requests in/;
ok(($requests // 0) > 1000, "wrk made requests throughout (@{[$requests // 0]})");
unlike($report, qr/Non-2xx or 3xx responses/, 'no request through the steady policy got anything but a 2xx');
unlike($report, qr/Socket errors/, 'no request met a connection error across the reloads');
my @seen = grep { $_ >= 0 } @counts;
is(scalar @seen, 20, 'the status endpoint answered after every reload');
is_deeply([sort { $a <=> $b } @seen], \@seen, 'the policy\'s verified count never went back: counters survive reloads');
my $log = slurp("$out/logs/error.log");
my $reconfigured = () = $log =~ /signal 1 \(SIGHUP\) received/g;
is($reconfigured, 20, 'nginx got 20 reloads');
# the handshakes the broken policy refuses are nginx's [crit] lines, as asked
my @unexpected = grep { /\[(?:alert|crit|emerg)\]|signal 11/ && !m{"GET /broken } } split /\n/, $log;
is_deeply(\@unexpected, [], 'no alert, crit or crash in the error log but the refusals asked for');

is(scalar(grep { $_ } @extra), 20, 'the added and removed path answered 200 while configured, 404 after');
is_deeply(\@broken, [(502) x 5], 'the policy that cannot pass answered 502 each time it was configured');
like($log, qr/backend certificate rejected: policy "ns\/broken-tls"/, 'the broken policy\'s refusals are logged');

stop_served();
