# gateway2nginx run remembers what nginx -t refused (issue 35, finding 6).
# On 46c5027 isolation searched again on every change: with d refused
# objects among n, about 2 d log2 n nginx -t runs per unrelated change.
# Now an object refused before, whose document, namespace (and the
# namespaces it may refer into) and the operator's objects are unchanged,
# is left out again with no search: a route added by another tenant costs
# one nginx -t. A change in the refused tenant's namespace searches again.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);

plan 'no_plan';
setup();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $module_dir = module_dir();
my $refused = 8;

my $base = routes_from_all_namespaces(gateway_manifests(web => 'leaf'));
# a tenant's routes to names nginx cannot resolve: nginx -t refuses each
sub hostile {
    my ($count) = @_;
    return join '', map { <<"YAML" } 1 .. $count;
---
apiVersion: v1
kind: Service
metadata: {name: far-$_, namespace: bad}
spec: {type: ExternalName, externalName: nowhere-$_.invalid, ports: [{port: 443}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: far-$_, namespace: bad}
spec:
  parentRefs: [{name: gw, namespace: ns}]
  rules: [{matches: [{path: {value: /far-$_}}], backendRefs: [{name: far-$_, port: 443}]}]
YAML
}
sub route {
    my ($ns, $path) = @_;
    return <<"YAML";
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: $ns}
spec:
  parentRefs: [{name: gw, namespace: ns}]
  rules: [{matches: [{path: {value: $path}}], backendRefs: [{name: web, port: 443}]}]
YAML
}
sub put { put_file("$dir/manifests", @_) }
make_path("$dir/manifests");
put('base.yaml', $base);
put('hostile.yaml', hostile($refused));
put('route.yaml', route('ns', '/web'));

start_backends();
my $log = "$dir/run.log";
my $out = "$dir/out";
my $run = start_run($log, '-f', "$dir/manifests", '-o', $out, '--reload', "$out/nginx.pid",
                    '--upstream-api', "127.0.0.1:$api_port", '--port-offset', $offset, '--listen-address', '127.0.0.1',
                    '--module-dir', $module_dir, '--status-listen', 'off', '--debounce', '100');
sub count_in_log { count_in($log, shift) }
my $searches = qr/looking for the objects at fault/;
my $found = qr/(\d+) object\(s\) at fault among \d+, found in (\d+) nginx -t run\(s\)/;
my $search_done = qr/object\(s\) at fault among/;
my $recalled = qr/$refused object\(s\) nginx -t refused before, unchanged since, left out again without a search/;

ok(wait_for(sub { count_in_log($search_done) >= 1 }, 60), 'the first configuration: a search') or diag slurp($log);
my ($at_fault, $runs) = slurp($log) =~ $found;
is($at_fault, $refused, "it finds the $refused refused routes");
cmp_ok($runs, '>', $refused, "in $runs nginx -t runs");
start_nginx($out, 'nginx.conf', $port);
my ($code) = request($port, 'GET', '/web', 'Host: localhost');
is($code, 200, "the other tenant's route is served");

# another tenant adds a route: no search, the refused routes left out again
my $before = count_in_log($searches);
my $recalls = count_in_log($recalled);
put('other.yaml', route('ns', '/other') =~ s/name: r,/name: r2,/r);
ok(wait_for(sub { (request($port, 'GET', '/other', 'Host: localhost'))[0] == 200 }, 20),
   "another tenant's new route is served") or diag slurp($log);
ok(wait_for(sub { count_in_log($recalled) > $recalls }, 5), 'the refused routes are left out again, remembered')
    or diag slurp($log);
is(count_in_log($searches), $before, 'with no search');
like(slurp("$out/status.yaml"), qr/nginx -t refuses the configuration with it: host not found in upstream \\"nowhere-1\.invalid:443\\"/,
     'their status still says why');
($code) = request($port, 'GET', '/far-1', 'Host: localhost');
is($code, 404, 'and they are not served');

# the refused tenant changes its namespace: searched again
put('hostile.yaml', hostile($refused - 1));
ok(wait_for(sub { count_in_log($search_done) >= 2 }, 60), 'a change in the refused namespace: a new search') or diag slurp($log);
is((slurp($log) =~ /.*$found/s)[0], $refused - 1, '... which finds what is refused now');

kill 'TERM', $run;
waitpid($run, 0);
stop_nginx($out);
stop_backends();
