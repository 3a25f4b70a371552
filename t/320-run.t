# gateway2nginx run beside nginx (issue 20): it watches the manifests'
# directory; EndpointSlice changes reach nginx through
# gateway_tls_upstream_api with no reload (the worker pids never change),
# scaling to zero endpoints (502) and back included, and so do CA ConfigMap
# changes (the policy's trust),
# a route change is rendered, checked and reloaded (new workers, confirmed),
# a change that changes nothing neither pushes nor reloads, bad input
# changes nothing, and status.yaml stays current. Then the same from
# kubectl's --output-watch-events stream on standard input.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path remove_tree);
use Time::HiRes qw(sleep time);
use JSON::PP;

plan 'no_plan';
setup();
my $dir = servroot();
my $certs = certs_dir();
my $backend_port = server_port() + 1;   # every endpoint listens on 127.0.0.N:this
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $module_dir = module_dir();
my $bin = $ENV{GATEWAY2NGINX} || 'build/gateway2nginx';

# ---- endpoints on 127.0.0.1 to 127.0.0.8, one port ------------------------
start_numbered_backends(8, $backend_port);

sub slice_yaml {
    my $addresses = join ', ', map { "\"127.0.0.$_\"" } @_;
    my $endpoints = @_ ? "[{addresses: [$addresses]}]" : '[]';   # none: a Service scaled to zero
    return <<"YAML";
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc
  namespace: ns
  labels: {kubernetes.io/service-name: web}
ports: [{name: https, port: $backend_port}]
endpoints: $endpoints
YAML
}
sub route_yaml {
    my @paths = @_;
    my $rules = join '', map { "  - matches: [{path: {type: PathPrefix, value: $_}}]\n    backendRefs: [{name: web, port: 443}]\n" } @paths;
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n$rules";
}
my $base = gateway_manifests() . <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  ports: [{name: https, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: web-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: web}]
  validation:
    hostname: abc.example.com
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
YAML

# a file replaced the way kubectl cp or a config sync does: written aside, renamed
sub put { put_file("$dir/manifests", @_) }
# the CA ConfigMap in a file of its own, changed below
my ($ca_map) = $base =~ /(^apiVersion: v1\nkind: ConfigMap\n.*?)(?=^---\n)/sm or die 'no CA ConfigMap';
$base =~ s/\Q$ca_map\E---\n//;
sub ca_yaml { my $pem = join '', map { slurp("$certs/$_") } @_; $pem =~ s/^/    /mg;
              return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ca, namespace: ns}\ndata:\n  ca.crt: |\n$pem" }
make_path("$dir/manifests");
put('base.yaml', $base);
put('ca.yaml', ca_yaml('ca.crt'));
put('route.yaml', route_yaml('/web'));
put('slice.yaml', slice_yaml(1, 2));

my $log = "$dir/run.log";
my @common = ('--port-offset', $offset, '--listen-address', '127.0.0.1', '--module-dir', $module_dir,
              '--status-listen', 'off', '--debounce', '100', @Test::GatewayTLS::TestEndpoints);
sub start_run {
    my ($out, @args) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        open STDERR, '>>', $log or die;
        exec($bin, 'run', @args, '-o', $out, '--reload', "$out/nginx.pid", '--upstream-api', "127.0.0.1:$api_port",
             @common) or die;
    }
    return $pid;
}
sub count_in_log { count_in($log, shift) }
sub master_of { my $m = slurp(shift); chomp $m; $m }
sub endpoint { my ($code, $h, $body) = http_request($port, shift // '/web', 'localhost'); return $body =~ /endpoint=(\S+)/ ? $1 : "($code)" }
sub endpoints_seen { my %seen; $seen{endpoint(@_)}++ for 1 .. 24; return join ' ', sort keys %seen }

# ---- from a watched directory ------------------------------------------------
my $out = "$dir/out";
my $run = start_run($out, '-f', "$dir/manifests");
ok(wait_for(sub { -f "$out/nginx.conf" }), 'gateway2nginx run writes the configuration') or diag slurp($log);
start_nginx($out, 'nginx.conf', $port);
my $master = master_of("$out/nginx.pid");
my $workers = worker_pids($master);
is(endpoints_seen(), '127.0.0.1 127.0.0.2', 'traffic reaches the endpoints of the EndpointSlice');
like(slurp("$out/http.conf"), qr/zone gateway2nginx_servers_ns;/, 'the upstream has its servers in the zone');

my @changes = ([3], [3, 4, 5], [], [4, 5], [6, 7, 8], [1], [2, 3], [], [8], [1, 2, 3, 4, 5, 6, 7, 8], [5, 6], [7]);
my ($served, $slowest) = (0, 0);
for my $i (0 .. $#changes) {
    my @want = @{$changes[$i]};
    my $pushed = count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/);
    my $start = time;
    put('slice.yaml', slice_yaml(@want));
    my $expected = @want ? join(' ', map { "127.0.0.$_" } @want) : '(502)';   # no endpoints: 502, fail closed
    if (wait_for(sub { endpoints_seen() eq $expected }, 5)) {
        $served++;
        $slowest = time - $start if time - $start > $slowest;
    } else {
        diag "change $i: wanted $expected, got " . endpoints_seen();
    }
    wait_for(sub { count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/) > $pushed }, 2);
}
diag sprintf('the slowest EndpointSlice change served in %.0f ms (debounce 100 ms)', $slowest * 1000);
is($served, scalar @changes, 'every EndpointSlice change reached the traffic, exactly its endpoints, to and from none');
is(count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/), scalar @changes, 'each was pushed through the upstream API');
is(worker_pids($master), $workers, 'and nginx never reloaded: the same workers');
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');
# OUTDIR catches up after a quiet spell (2 s), not at each push
ok(wait_for(sub { slurp("$out/http.conf") =~ /server "?127\.0\.0\.7:$backend_port"?;/ }, 10), 'OUTDIR holds the latest servers');

# a CA rotation: the ConfigMap's bundle changes, nginx's trust follows with no reload
my $trust_pushed = count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/);
put('ca.yaml', ca_yaml('unrelated-ca.crt'));
ok(wait_for(sub { endpoints_seen() eq '(502)' }, 5), 'a CA ConfigMap that no longer holds the endpoints\' CA: 502 at once');
put('ca.yaml', ca_yaml('unrelated-ca.crt', 'ca.crt'));
ok(wait_for(sub { endpoints_seen() eq '127.0.0.7' }, 5), 'a bundle of both CAs: served again');
is(count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/), $trust_pushed + 2,
   'each CA change was pushed through the upstream API');
is(worker_pids($master), $workers, 'and nginx never reloaded for them');
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');

# the policy's hostname and SANs: pushed with its trust, no reload either
sub names { my ($names) = @_; (my $b = $base) =~ s/^    hostname: abc\.example\.com\n/$names/m or die 'no hostname';
            put('base.yaml', $b) }
my @names = (["    hostname: nowhere.example.com\n", '(502)', 'a hostname the certificate does not name: 502 at once'],
             ["    hostname: other.example.com\n", '127.0.0.7', 'one it names: served again'],
             ["    hostname: abc.example.com\n    subjectAltNames: [{type: Hostname, hostname: nowhere.example.com}]\n",
              '(502)', 'a SAN the certificate does not have: 502'],
             ["    hostname: abc.example.com\n", '127.0.0.7', 'the policy as it was: served']);
for my $change (@names) {
    my ($yaml, $want, $what) = @$change;
    my $pushed = count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/);
    names($yaml);
    ok(wait_for(sub { count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/) > $pushed }, 5)
       && wait_for(sub { endpoints_seen() eq $want }, 5), $what) or diag endpoints_seen(), slurp($log);
}
is(worker_pids($master), $workers, 'and nginx never reloaded for the names');
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');

put('slice.yaml', slice_yaml(7));
ok(wait_for(sub { count_in_log(qr/no change to the configuration or the status/) >= 1 }, 3),
   'rewriting a file with the same objects: no change, said so');
is(count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/), scalar @changes, 'nothing pushed for it');

put('route.yaml', route_yaml('/web', '/shop'));
ok(wait_for(sub { count_in_log(qr/nginx reloaded: workers/) >= 1 }, 10), 'a route change reloads nginx, confirmed');
isnt(worker_pids($master), $workers, 'with new workers');
# the old workers stop accepting once they have the master's word
ok(wait_for(sub { endpoint('/shop') eq '127.0.0.7' }, 3), 'and the new route serves, from the pushed endpoint');

put('broken.yaml', "apiVersion: v1\nkind: Service\nmetadata: {name: [\n");
ok(wait_for(sub { count_in_log(qr/bad input, nothing changed: .*broken\.yaml:\d+:\d+/) >= 1 }, 3),
   'bad input is reported with file, line and column, and nothing changes');
is(endpoint(), '127.0.0.7', 'nginx still serves');
unlink "$dir/manifests/broken.yaml";
like(slurp("$out/status.yaml"), qr/name: r\b/, 'status.yaml is current');

kill 'TERM', $run;
waitpid($run, 0);
is($? >> 8, 0, 'gateway2nginx run ends on SIGTERM');

# a one-shot regenerate after pushes: its servers win, even where they are
# the servers nginx was configured with when it took the push (a reload
# alone would keep the pushed ones)
my ($upstream) = slurp("$out/http.conf") =~ /upstream (\S+) \{\n[^}]*zone gateway2nginx_servers_ns;/;
spit("$dir/push.json", qq({"upstreams":{"$upstream":{"servers":[{"address":"127.0.0.3:$backend_port"}]}}}));
my $pushed_by_hand = `curl -s -o /dev/null -w '%{http_code}' -H '@{[bearer("$out/upstream-api.token")]}' -X PUT --data-binary \@$dir/push.json http://127.0.0.1:$api_port/upstreams`;
is($pushed_by_hand, 200, 'a push by hand');
ok(wait_for(sub { endpoint() eq '127.0.0.3' }, 2), 'serves');
# and a trust by hand that the endpoints' CA is not in
spit("$dir/push.json", JSON::PP->new->encode({policies => {'ns/web-tls' => {ca => slurp("$certs/unrelated-ca.crt")}}}));
is(`curl -s -o /dev/null -w '%{http_code}' -H '@{[bearer("$out/upstream-api.token")]}' -X PUT --data-binary \@$dir/push.json http://127.0.0.1:$api_port/upstreams`, 200,
   'a trust pushed by hand');
ok(wait_for(sub { endpoint() eq '(502)' }, 2), 'refuses the endpoint');
my @before = split ' ', worker_pids($master);
my ($rc, $said) = run_generator('-f', "$dir/manifests", '-o', $out, '--reload', "$out/nginx.pid",
                                '--upstream-api', "127.0.0.1:$api_port", @common[0 .. 7]);
is($rc, 0, 'gateway2nginx --reload --upstream-api') or diag $said;
# the new configuration's workers alone answer from now on
wait_for(sub { my %now = map { $_ => 1 } split ' ', worker_pids($master); !grep { $now{$_} } @before }, 10);
ok(wait_for(sub { endpoints_seen() eq '127.0.0.7' }, 5),
   'after its reload nginx serves the servers and trust it rendered, not the ones pushed before')
    or diag $said . `curl -s -H '@{[bearer("$out/upstream-api.token")]}' http://127.0.0.1:$api_port/upstreams`;
stop_nginx($out);

# ---- from kubectl's watch events on standard input ---------------------------
# every object of the directory as an ADDED event, pretty-printed as kubectl does
my $out2 = "$dir/out2";
my @objects = grep { /\S/ } split /^---\n/m, $base . "---\n" . $ca_map . "---\n" . route_yaml('/web');
pipe(my $reader, my $writer) or die;
my $watch = fork // die;
if ($watch == 0) {
    close $writer;
    open STDIN, '<&', $reader or die;
    open STDERR, '>>', $log or die;
    exec($bin, 'run', '-f', '-', '--watch-events', '-o', $out2, '--reload', "$out2/nginx.pid",
         '--upstream-api', "127.0.0.1:$api_port", @common) or die;
}
close $reader;
$writer->autoflush(1);
my $json = JSON::PP->new->canonical->pretty;
sub event { my ($type, $object) = @_; print $writer $json->encode({type => $type, object => $object}) }
my $slice = sub {
    {apiVersion => 'discovery.k8s.io/v1', kind => 'EndpointSlice',
     metadata => {name => 'web-abc', namespace => 'ns', labels => {'kubernetes.io/service-name' => 'web'}},
     ports => [{name => 'https', port => $backend_port + 0}],
     endpoints => [{addresses => [map { "127.0.0.$_" } @_]}]}
};
# the other objects as kubectl prints them: JSON
my $count = 0;
for my $doc (@objects) {
    print $writer '{"type": "ADDED", "object": ' . yaml_to_json($doc) . "}\n";
    $count++;
}
event('ADDED', $slice->(1));
# a tenant's bad object: refused alone, named by the object it is
event('ADDED', {apiVersion => 'v1', kind => 'Service', metadata => {name => 'Bad_Name', namespace => 'ns'},
                spec => {ports => [{name => 'https', port => 443}]}});
ok(wait_for(sub { -f "$out2/nginx.conf" }, 10), "$count objects and a slice as watch events: a configuration")
    or diag slurp($log);
# the events may be applied in more than one go: the warning comes with
# the one that holds the bad object
ok(wait_for(sub { count_in_log(qr{warning: Service with an invalid name is rejected: <watch event v1/Service/ns/Bad_Name>:\d+:\d+: metadata\.name}) }, 10),
   'a bad object is refused alone, its error named by the object') or diag slurp($log);
start_nginx($out2, 'nginx.conf', $port);
my $master2 = master_of("$out2/nginx.pid");
my $workers2 = worker_pids($master2);
is(endpoints_seen(), '127.0.0.1', 'it serves the watched endpoints');
my $pushed = count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/);
event('MODIFIED', $slice->(2, 3));
ok(wait_for(sub { endpoints_seen() eq '127.0.0.2 127.0.0.3' }, 5), 'a MODIFIED EndpointSlice event reaches the traffic');
is(count_in_log(qr/servers of \d+ upstream\(s\) pushed to nginx, no reload/), $pushed + 1, 'pushed, not reloaded');
is(worker_pids($master2), $workers2, 'the same workers');
close $writer;
waitpid($watch, 0);
is($? >> 8, 0, 'the watch stream ends, and so does gateway2nginx run');
stop_nginx($out2);
stop_nginx("$dir/backends");

# a YAML document as JSON, by Debian's python3-yaml
sub yaml_to_json {
    spit("$dir/object.yaml", shift);
    my $out = `/usr/bin/python3 -c 'import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1])), indent=2))' $dir/object.yaml`;
    return $out if $out =~ /^\{/;
    die "cannot convert a document to JSON\n";
}
