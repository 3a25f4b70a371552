# gateway2nginx run --start-nginx: the process model of a container.
# run starts nginx on OUTDIR itself (no nginx started by the test), reloads
# it on a route change; SIGTERM makes nginx finish what is in flight (a
# slow request still answered) before both end, with exit status 0; with
# --shutdown-delay, /readyz answers 503 first while nginx still serves; nginx
# killed, run ends too (status 1), so that a kubelet sees either fail.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

plan 'no_plan';
setup();
my $dir = servroot();
my $slow_port = server_port() + 1;
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $health_port = server_port() + 17;

# a plain HTTP backend: /slow answers after 3 s, anything else at once
my $backend = start_slow_backend('127.0.0.1', $slow_port, "$dir/slow.accepted");

sub manifests { slow_app_manifests($slow_port, @_) }

my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
put_file($in, 'all.yaml', manifests('/fast', '/slow'));
my @flags = ('-f', $in, '-o', $out, '--start-nginx', '--nginx', nginx_binary(), '--upstream-api', "127.0.0.1:$api_port",
             '--port-offset', $offset, '--listen-address', '127.0.0.1', '--module-dir', module_dir(),
             '--status-listen', 'off', '--debounce', '100', '--health-listen', "127.0.0.1:$health_port");
sub get { my ($code, $h, $body) = http_request($port, shift, 'localhost'); return "$code $body" }
sub ready { my $r = `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$health_port/readyz`; return $r }
sub master { my $m = -e "$out/nginx.pid" ? slurp("$out/nginx.pid") : 0; chomp $m; return $m }
sub ended_within { my ($pid, $seconds) = @_; my $status; wait_for(sub { my $r = waitpid($pid, WNOHANG); $status = $? if $r == $pid; $r == $pid }, $seconds) ? $status : undef }

# ---- started, served, reloaded -----------------------------------------------------
my $log = "$dir/run.log";
my $run = start_run($log, @flags);
ok(wait_for(sub { get('/fast') eq '200 fast' }, 30), 'run --start-nginx serves: it started nginx itself')
    or diag slurp($log);
# said once its master wrote its pid file, which may come after the first answer
ok(wait_for(sub { slurp($log) =~ /starting nginx on OUTDIR.*\n.*nginx started/ }, 10), 'and said so')
    or diag slurp($log);
ok(wait_for(sub { ready() eq '200' }, 10), '/readyz: ready once nginx serves');
my $first = master();
ok($first && kill(0, $first), 'nginx\'s master runs, its pid in OUTDIR/nginx.pid');
is(parent_pid($first), $run, 'as a child of gateway2nginx (in the foreground: daemon off)');
put_file($in, 'all.yaml', manifests('/fast', '/slow', '/more'));
ok(wait_for(sub { get('/more') eq '200 fast' }, 30), 'a route change is reloaded into the nginx it started');
is(master(), $first, 'by a reload: the same master');

# ---- SIGTERM: what is in flight completes -------------------------------------------
my $slow_result = "$dir/slow.result";
my $client = fork // die;
if ($client == 0) { spit($slow_result, get('/slow')); exit 0 }
ok(wait_for(sub { -e "$dir/slow.accepted" }, 10), 'the slow request is at the backend');
kill 'TERM', $run;
my $status = ended_within($run, 20);
is($status, 0, 'SIGTERM: gateway2nginx ends with status 0, once nginx has') or diag slurp($log);
waitpid($client, 0);
is(slurp($slow_result), '200 slow', 'the request in flight was answered: nginx stopped gracefully');
ok(!kill(0, $first), 'nginx\'s master is gone');
like(slurp($log), qr/stopping nginx: it finishes what is in flight\n.*nginx stopped \(exit status 0\)/,
     'and run said what it did');
ok(!defined eval { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 2) }, 'nothing listens any more');

# ---- --shutdown-delay: not ready first, still serving, then drained --------------------
# (a delay no test waits out: a second SIGTERM ends it)
my $log3 = "$dir/run3.log";
$run = start_run($log3, @flags, '--shutdown-delay', '10m');
ok(wait_for(sub { ready() eq '200' }, 30), 'started again, with a shutdown delay') or diag slurp($log3);
kill 'TERM', $run;
ok(wait_for(sub { ready() eq '503' }, 10), 'SIGTERM: /readyz answers 503 at once') or diag slurp($log3);
is(get('/fast'), '200 fast', 'while nginx still accepts and serves');
ok(kill(0, $run) && waitpid($run, WNOHANG) == 0, 'and gateway2nginx waits');
like(slurp($log3), qr/stopping: \/readyz answers 503, nginx accepts for 600000 ms more/, 'saying so');
kill 'TERM', $run;
$status = ended_within($run, 20);
is($status, 0, 'a second SIGTERM: nginx drains, gateway2nginx ends with 0') or diag slurp($log3);
ok(!defined eval { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 2) }, 'nothing listens any more');

# ---- nginx killed: run ends too --------------------------------------------------------
my $log2 = "$dir/run2.log";
$run = start_run($log2, @flags);
ok(wait_for(sub { get('/fast') eq '200 fast' }, 30), 'started again on the OUTDIR it left') or diag slurp($log2);
like(slurp($log2), qr/OUTDIR already holds this configuration: nothing to apply\n.*starting nginx on OUTDIR/,
     'which it knew to hold the configuration: nothing rendered into it, nginx started on it');
my $second = master();
my @workers = split ' ', worker_pids($second);
kill 'KILL', $second;
$status = ended_within($run, 10);
is($status >> 8, 1, 'nginx killed: gateway2nginx ends with status 1') or diag slurp($log2);
like(slurp($log2), qr/nginx ended \(signal Killed\); so does gateway2nginx/, 'saying why');

# ---- the command line ------------------------------------------------------------------
my $bin = $ENV{GATEWAY2NGINX} || 'build/gateway2nginx';
my $usage = `$bin run -f $in -o $out --start-nginx --reload $out/nginx.pid --upstream-api 127.0.0.1:$api_port 2>&1`;
is($? >> 8, 1, '--start-nginx with --reload is a usage error (status 1, as every one)');
like($usage, qr/--start-nginx reloads the nginx it starts: no --reload/, 'said so');

kill 'KILL', $backend;
waitpid($backend, 0);
kill 'QUIT', @workers;   # what the killed master left behind
