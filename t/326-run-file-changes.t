# gateway2nginx run -f DIR --routes table (issue 55): a change to the files
# is said object by object, as the API's watches say it, and applied alone
# where one through the API would be (gateway2nginx_route_updates_total):
# a route's rules changed, a route made in a new file, a route deleted with
# its file, the BackendTLSPolicy's hostname changed in a file of many
# objects (a name the backend's certificate lacks, 502, then back); each
# with no reload, the same workers. An object in a second file goes the
# whole way, as does every change until a read finds it in one again.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);

plan 'no_plan';
setup();
start_backends();
my $dir = servroot();
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $health_port = server_port() + 17;

# (the YAML the API tests write: the same objects, in files)
sub route_yaml { my ($name, $host, @paths) = @_; kube_host_route_yaml($name, $host, 'web', @paths) }
my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
my $base = gateway_manifests(web => 'leaf');
like($base, qr/hostname: abc\.example\.com/, 'the policy names the backend certificate\'s name');
put_file($in, 'base.yaml', $base);
put_file($in, 'a.yaml', route_yaml('a', 'a.test', '/one'));

my $log = "$dir/run.log";
my $run = start_file_run($log, $in, $out, api_port => $api_port, offset => $offset, debounce => 50,
                         args => ['--health-listen', "127.0.0.1:$health_port"]);
sub get {
    my ($host, $path) = @_;
    my ($code, $h, $body) = http_request($port, $path, $host);
    my ($backend) = ($body // '') =~ /backend=(\S+)/;
    return "$code " . ($backend // '-');
}
sub route_updates { run_metric($health_port, qr/gateway2nginx_route_updates_total/) }
sub reloads { run_metric($health_port, qr/gateway2nginx_reloads_total\{reason="\w+"\}/) }

ok(wait_for(sub { get('a.test', '/one') eq '200 leaf' }, 30), 'the route is served through the table') or diag slurp($log);
ok(wait_for(sub { count_in($log, qr/after nginx started, \d+ upstream\(s\), policy\(ies\) and hostname\(s\) pushed/) }, 10),
   'the table filled once nginx ran') or diag slurp($log);
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);
my $reloads = reloads();

my @changes = (
    ['a route\'s rules changed', sub { put_file($in, 'a.yaml', route_yaml('a', 'a.test', '/two')) },
     sub { get('a.test', '/two') eq '200 leaf' && get('a.test', '/one') =~ /^404/ }],
    ['a route made in a new file', sub { put_file($in, 'c.yaml', route_yaml('c', 'c.test', '/c')) },
     sub { get('c.test', '/c') eq '200 leaf' }],
    ['a route deleted with its file', sub { unlink "$in/c.yaml" or die "$in/c.yaml: $!" },
     sub { get('c.test', '/c') =~ /^404/ }],
    ['the policy\'s hostname one the certificate lacks', sub { put_file($in, 'base.yaml', $base =~ s/hostname: abc\.example\.com/hostname: wrong.example.com/r) },
     sub { get('a.test', '/two') =~ /^502/ }],
    ['the policy\'s hostname back', sub { put_file($in, 'base.yaml', $base) },
     sub { get('a.test', '/two') eq '200 leaf' }],
);
for my $change (@changes) {
    my ($what, $make, $served) = @$change;
    my $updates = route_updates();
    $make->();
    ok(wait_for($served, 15), "$what: served") or diag slurp($log);
    ok(wait_for(sub { route_updates() > $updates }, 5), "$what: applied alone") or diag slurp($log);
    is(reloads(), $reloads, "$what: no reload");
}
is(worker_pids($master), $workers, 'the same workers throughout');
unlike(slurp($log), qr/a route change applied the whole way/, 'none went the whole way');

# route a in a second file: the whole way, which serves both documents' rules
my $updates = route_updates();
put_file($in, 'z.yaml', route_yaml('a', 'a.test', '/three'));
ok(wait_for(sub { get('a.test', '/three') eq '200 leaf' }, 15), 'a route in a second file: served as the whole way serves it')
    or diag slurp($log);
is(get('a.test', '/two'), '200 leaf', 'beside the first file\'s');
is(route_updates(), $updates, 'not applied alone');
unlink "$in/z.yaml" or die "$in/z.yaml: $!";
ok(wait_for(sub { get('a.test', '/three') =~ /^404/ }, 15), 'the second file gone: the whole way again') or diag slurp($log);
is(route_updates(), $updates, 'not applied alone either: the read before found it twice');
put_file($in, 'a.yaml', route_yaml('a', 'a.test', '/four'));
ok(wait_for(sub { get('a.test', '/four') eq '200 leaf' }, 15), 'then a change') or diag slurp($log);
ok(wait_for(sub { route_updates() > $updates }, 5), 'applied alone again') or diag slurp($log);

kill "TERM", $run;
waitpid($run, 0);
