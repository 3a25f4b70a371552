# Two replicas of gateway2nginx run --kubeconfig, each with its own nginx,
# against the API server simulation: both serve every change; only the one
# that holds the Lease writes status (the simulation's audit log names the
# writer by its User-Agent); the leader killed, the other takes the Lease
# over within the lease duration and writes from then on; a replica
# stopped gives the Lease up. The second replica runs --in-cluster, from a
# service account directory as the kubelet mounts it, whose token is
# rotated (the simulation then takes only the new one) before it leads.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use Time::HiRes qw(sleep time);

if (my $why = kubectl_missing()) {
    plan skip_all => $why;
}
plan 'no_plan';
setup();
my $dir = servroot();
my $backend_port = server_port() + 1;
my $kube_port = server_port() + 21;
my %replica = (
    'pod-a' => {offset => server_port() + 20 - 80, api => server_port() + 18},
    'pod-b' => {offset => server_port() + 17 - 80, api => server_port() + 16},
);
my ($lease_s, $retry_s) = (3, 0.5);

start_numbered_backends(1, $backend_port);
my $audit = "$dir/kube-audit.log";
# watches end every 5 s: the replicas come back with whatever token they hold
my $sim = start_kube_api($kube_port, '--audit', $audit, '--max-watch-seconds', '5');
my $account = "$dir/serviceaccount";
mkdir $account or die;
spit("$account/token", slurp("$dir/kube-api.token"));
spit("$account/ca.crt", slurp(certs_dir() . '/ca.crt'));
spit("$account/namespace", "default\n");

sub route_yaml { kube_route_yaml(@_) }
kube_apply('base', kube_web_yaml() . "---\n" . kube_slice_yaml($backend_port, 1));
kube_apply('route', route_yaml('/one'));

sub start_replica {
    my $name = shift;
    my $r = $replica{$name};
    $r->{out} = "$dir/out-$name";
    $r->{log} = "$dir/run-$name.log";
    local $ENV{POD_NAME} = $name;
    local $ENV{KUBERNETES_SERVICE_HOST} = '127.0.0.1';
    local $ENV{KUBERNETES_SERVICE_PORT} = $kube_port;
    local $ENV{GATEWAY2NGINX_SERVICE_ACCOUNT_DIR} = $account;
    my @source = $name eq 'pod-b' ? ('--in-cluster') : ('--kubeconfig', kubeconfig());
    $r->{pid} = start_run($r->{log}, @source, '-o', $r->{out}, '--reload', "$r->{out}/nginx.pid",
                          '--upstream-api', "127.0.0.1:$r->{api}", '--port-offset', $r->{offset},
                          '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                          '--debounce', '100', '--leader-elect-lease-duration', "${lease_s}s",
                          '--leader-elect-renew-deadline', '2s', '--leader-elect-retry-period', ($retry_s * 1000) . 'ms');
    ok(wait_for(sub { -f "$r->{out}/nginx.conf" }, 20), "$name writes its configuration") or diag slurp($r->{log});
    start_nginx($r->{out}, 'nginx.conf', 80 + $r->{offset});
}
sub serves {
    my ($name, $path) = @_;
    my ($code, $h, $body) = http_request(80 + $replica{$name}{offset}, $path, 'localhost');
    return $body =~ /endpoint=127\.0\.0\.1/;
}
sub holder { my ($rc, $out) = kubectl('get', 'lease', 'gateway2nginx', '-n', 'default', '-o', 'jsonpath={.spec.holderIdentity}'); $rc ? '' : $out }
sub renew_time { my ($rc, $out) = kubectl('get', 'lease', 'gateway2nginx', '-n', 'default', '-o', 'jsonpath={.spec.renewTime}'); $rc ? '' : $out }
sub writes_by {
    my $name = shift;
    return scalar grep { /"verb": "update"/ && /"subresource": "status"/ && m{gateway2nginx/\Q$name\E"} }
        split /\n/, (-e $audit ? slurp($audit) : '');
}
sub route_generation_seen {
    my ($rc, $out) = kubectl('get', 'httproute', 'r', '-n', 'ns', '-o', 'jsonpath={.metadata.generation}={.status.parents[0].conditions[0].observedGeneration}');
    my ($generation, $observed) = split /=/, $out;
    return $rc == 0 && $observed && $generation == $observed;
}

start_replica('pod-a');
ok(wait_for(sub { holder() eq 'pod-a' }, 10), 'the first replica takes the Lease');
start_replica('pod-b');
ok(wait_for(sub { serves('pod-a', '/one') && serves('pod-b', '/one') }, 15), 'both replicas serve the route');
ok(wait_for(\&route_generation_seen, 10), 'the route\'s status is written');

kube_apply('route', route_yaml('/two'));
ok(wait_for(sub { serves('pod-a', '/two') && serves('pod-b', '/two') }, 15), 'both replicas apply a change');
ok(wait_for(\&route_generation_seen, 10), 'its status follows');
# two renewals later, pod-b having tried meanwhile (it retries sooner)
for my $n (1, 2) {
    my $renewed = renew_time();
    ok(wait_for(sub { renew_time() ne $renewed }, 10), "the Lease is renewed ($n)");
}
is(holder(), 'pod-a', 'the Lease stays with the first replica');
ok(writes_by('pod-a') > 0, 'which writes status (' . writes_by('pod-a') . ' writes)');
is(writes_by('pod-b'), 0, 'the other replica writes none');

like(slurp($replica{'pod-b'}{log}), qr{reading the API server of in-cluster https://127\.0\.0\.1:$kube_port}, 'pod-b reads the API --in-cluster');

# the service account token rotates (the first replica's kubeconfig names
# the simulation's own token file)
my $rotated = join('', map { sprintf '%02x', int rand 256 } 1 .. 16) . "\n";
spit("$account/.token.new", $rotated);
rename "$account/.token.new", "$account/token" or die;
spit("$dir/kube-api.token", $rotated);
kube_apply('route', route_yaml('/rotated'));
ok(wait_for(sub { serves('pod-b', '/rotated') }, 20), 'after the token rotates, pod-b still follows the API')
    or diag slurp($replica{'pod-b'}{log});

# the leader dies without a word: the Lease runs out, the other takes it
kill 'KILL', $replica{'pod-a'}{pid};
waitpid($replica{'pod-a'}{pid}, 0);
my $killed = time;
ok(wait_for(sub { holder() eq 'pod-b' }, 3 * $lease_s), 'the other replica takes the Lease over');
my $took = time - $killed;
cmp_ok($took, '<=', $lease_s + 2 * $retry_s + 1, sprintf('within the lease duration (%.1f s, lease %d s, retry %.1f s)', $took, $lease_s, $retry_s));
kube_apply('route', route_yaml('/three'));
ok(wait_for(sub { serves('pod-b', '/three') }, 15), 'the new leader serves the next change');
ok(wait_for(\&route_generation_seen, 10), 'and writes its status');
ok(writes_by('pod-b') > 0, 'the writes are its own (' . writes_by('pod-b') . ')');

kill 'TERM', $replica{'pod-b'}{pid};
waitpid($replica{'pod-b'}{pid}, 0);
is($? >> 8, 0, 'SIGTERM ends the leader');
is(holder(), '', 'which gives the Lease up');
like(slurp($replica{'pod-b'}{log}), qr/gave up Lease default\/gateway2nginx/, 'and says so');

stop_nginx($replica{$_}{out}) for keys %replica;
stop_nginx("$dir/backends");
kill 'TERM', $sim;
waitpid($sim, 0);
