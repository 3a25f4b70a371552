# gateway2nginx run --nginx-control and gateway2nginx supervise: nginx
# apart from the process that talks to the API server, as two users of one
# group sharing a directory (two containers of a pod and their emptyDir).
#   - run comes first: nothing answers on the socket yet, the configuration
#     is written; supervise starts nginx on it and run notices (/readyz);
#   - nginx runs as its own user, a child of supervise; run as another;
#     what nginx reads is the group's (keys, tokens 0640), what it writes
#     (logs/, temp/, its pid file) too; the socket 0660, refused to others;
#   - a route change reloads nginx through the socket (the same master);
#   - run killed: nginx serves on; run again takes up what OUTDIR holds;
#   - supervise started on a written OUTDIR starts nginx on its own;
#   - SIGTERM: nginx still accepts for --shutdown-delay (a second SIGTERM
#     ends it), then drains what is in flight, and supervise ends with 0;
#     nginx killed: supervise ends with 1.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

plan skip_all => 'needs root (two users)' if $> != 0;
plan skip_all => 'setpriv not installed' if system('command -v setpriv >/dev/null') != 0;
plan 'no_plan';
setup();
my $dir = servroot();
my $slow_port = server_port() + 1;
my $offset = server_port() + 20 - 80;
my $port = 80 + $offset;
my $api_port = server_port() + 18;
my $health_port = server_port() + 17;
my ($nginx_uid, $run_uid, $gid, $other_uid) = (60101, 60102, 60100, 60103);
my @as_nginx = ('setpriv', "--reuid=$nginx_uid", "--regid=$gid", '--clear-groups', '--');
my @as_run = ('setpriv', "--reuid=$run_uid", "--regid=$gid", '--clear-groups', '--');

my $backend = start_slow_backend('127.0.0.1', $slow_port, "$dir/slow.accepted");

sub manifests { slow_app_manifests($slow_port, @_) }

# the pod's shared directory, as an emptyDir with fsGroup: the group's,
# set-group-ID (what is made in it is the group's)
my $pod = "$dir/pod";
make_path($pod);
chown(0, $gid, $pod) && chmod(02777, $pod) or die "$pod: $!";
my $in = "$dir/in";
make_path($in);
put_file($in, 'all.yaml', manifests('/fast', '/slow'));
my $out = "$pod/out";
my $socket = "$pod/nginx.sock";
my @run_flags = ('-f', $in, '-o', $out, '--nginx-control', $socket, '--upstream-api', "127.0.0.1:$api_port",
                 '--port-offset', $offset, '--listen-address', '127.0.0.1', '--module-dir', module_dir(),
                 '--status-listen', 'off', '--debounce', '100', '--health-listen', "127.0.0.1:$health_port");
my @supervise_flags = ('supervise', '-o', $out, '--control', $socket, '--alive-file', "$pod/nginx.alive");
sub get { my ($code, $h, $body) = http_request($port, shift, 'localhost'); return "$code $body" }
sub ready { scalar `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$health_port/readyz` }
sub master { my $m = -e "$out/nginx.pid" ? slurp("$out/nginx.pid") : 0; chomp $m; return $m }
sub uid_of { (slurp("/proc/$_[0]/status") // '') =~ /^Uid:\s+(\d+)/m ? $1 : -1 }
sub mode_of { sprintf '%04o', (stat $_[0])[2] & 07777 }
sub ended_within { my ($pid, $seconds) = @_; my $status; wait_for(sub { my $r = waitpid($pid, WNOHANG); $status = $? if $r == $pid; $r == $pid }, $seconds) ? $status : undef }

# ---- run first, then its supervisor ------------------------------------------------------
my $run_log = "$dir/run.log";
my $run = start_gateway2nginx(\@as_run, $run_log, 'run', @run_flags, @Test::GatewayTLS::TestEndpoints);
ok(wait_for(sub { -e $run_log && slurp($run_log) =~ /nothing answers at \Q$socket\E \(nginx's supervisor is not there yet\): it starts nginx on OUTDIR/ }, 30),
   'run writes the configuration; nothing answers on the socket yet') or diag slurp($run_log);
is(ready(), '503', 'not ready: no nginx serves it');
my $sup_log = "$dir/supervise.log";
my $supervise = start_gateway2nginx(\@as_nginx, $sup_log, @supervise_flags, '--shutdown-delay', '10m');
ok(wait_for(sub { get('/fast') eq '200 fast' }, 30), 'supervise starts nginx on what run wrote: served')
    or diag slurp($sup_log), slurp($run_log);
ok(wait_for(sub { ready() eq '200' }, 10), 'run notices: /readyz 200') or diag slurp($run_log);
my $first = master();
is(parent_pid($first), $supervise, 'nginx\'s master is supervise\'s child');
is(uid_of($first), $nginx_uid, "and runs as the nginx user ($nginx_uid)");
is(uid_of($_), $nginx_uid, "its worker $_ too") for split ' ', worker_pids($first);
is(uid_of($run), $run_uid, "run as another ($run_uid)");

# ---- what each may touch ------------------------------------------------------------------
is(mode_of("$out/upstream-api.token"), '0640', 'the upstream API\'s token: the group reads it (nginx does)');
is((stat "$out/upstream-api.token")[5], $gid, 'and it is the group\'s');
is(mode_of("$out/logs"), '0770', 'logs/: nginx writes there');
is((stat "$out/logs/error.log")[4], $nginx_uid, 'its error log is nginx\'s own');
is(mode_of($socket), '0660', "the socket: its user and group alone ($socket)");
my $stranger = `setpriv --reuid=$other_uid --regid=$other_uid --clear-groups -- curl -s -o /dev/null -w '%{http_code}' --unix-socket $socket -X POST http://x/reload 2>&1`;
is($stranger, '000', 'a user of another group cannot connect');
is(system('setpriv', "--reuid=$run_uid", "--regid=$gid", '--clear-groups', '--', $^X, '-e',
          'exit(kill(0, $ARGV[0]) ? 0 : $!{EPERM} ? 1 : 2)', $first) >> 8, 1,
   'run\'s user cannot signal nginx (EPERM): only the socket reloads it');
my $bin = $ENV{GATEWAY2NGINX} || 'build/gateway2nginx';
is(system($bin, 'alive', "$pod/nginx.alive"), 0, 'supervise\'s heartbeat (--alive-file)');

# ---- a reload through the socket ------------------------------------------------------------
put_file($in, 'all.yaml', manifests('/fast', '/slow', '/more'));
ok(wait_for(sub { get('/more') eq '200 fast' }, 30), 'a route change is served') or diag slurp($run_log);
is(master(), $first, 'by a reload: the same master');
# a new worker may serve the change before the reload is confirmed (and
# before every old worker has stopped taking connections)
ok(wait_for(sub { slurp($run_log) =~ /nginx reloaded: workers [\d ]+ -> [\d ]+ \(routes\)/ }, 30),
   'which run asked for and was told of') or diag slurp($run_log);
ok(wait_for(sub { slurp($sup_log) =~ /nginx reloaded: workers/ }, 30), 'and supervise did') or diag slurp($sup_log);

# ---- run killed: nginx serves on ---------------------------------------------------------------
kill 'KILL', $run;
waitpid($run, 0);
ok(wait_for(sub { get('/more') eq '200 fast' }, 30), 'run killed: nginx serves on');
$run = start_gateway2nginx(\@as_run, $run_log, 'run', @run_flags, @Test::GatewayTLS::TestEndpoints);
ok(wait_for(sub { ready() eq '200' }, 30), 'run again: ready, the nginx that runs serves OUTDIR') or diag slurp($run_log);
like(slurp($run_log), qr/OUTDIR already holds this configuration: nothing to apply/, 'which it knew to hold its configuration');
put_file($in, 'all.yaml', manifests('/fast', '/slow', '/more', '/again'));
ok(wait_for(sub { get('/again') eq '200 fast' }, 30), 'and reloads it again') or diag slurp($run_log);
is(master(), $first, 'the same master all along');

# ---- SIGTERM: the shutdown delay, then a drain -----------------------------------------------------
kill 'TERM', $run;
is(ended_within($run, 20), 0, 'run ends on SIGTERM with 0') or diag slurp($run_log);
kill 'TERM', $supervise;
ok(wait_for(sub { slurp($sup_log) =~ /stopping: nginx accepts for 600000 ms more/ }, 10),
   'supervise on SIGTERM: nginx accepts for the shutdown delay') or diag slurp($sup_log);
is(get('/fast'), '200 fast', 'and serves');
my $slow_result = "$dir/slow.result";
my $client = fork // die;
if ($client == 0) { spit($slow_result, get('/slow')); exit 0 }
ok(wait_for(sub { -e "$dir/slow.accepted" }, 10), 'a slow request is at the backend');
ok(waitpid($supervise, WNOHANG) == 0, 'supervise waits');
kill 'TERM', $supervise;
is(ended_within($supervise, 20), 0, 'a second SIGTERM: nginx drains, supervise ends with 0') or diag slurp($sup_log);
waitpid($client, 0);
is(slurp($slow_result), '200 slow', 'the request in flight was answered');
ok(!defined eval { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 2) }, 'nothing listens any more');
ok(!-e $socket, 'the socket is gone');

# ---- supervise alone, on a written OUTDIR; nginx killed ----------------------------------------------
my $sup_log2 = "$dir/supervise2.log";
$supervise = start_gateway2nginx(\@as_nginx, $sup_log2, @supervise_flags);
ok(wait_for(sub { get('/again') eq '200 fast' }, 30), 'supervise on a written OUTDIR starts nginx with no run')
    or diag slurp($sup_log2);
my $second = master();
ok($second > 0, 'its master wrote its pid file') or BAIL_OUT('no nginx to kill');
my @workers = split ' ', worker_pids($second);
kill 'KILL', $second;
is((ended_within($supervise, 10) // -1) >> 8, 1, 'nginx killed: supervise ends with 1') or diag slurp($sup_log2);
like(slurp($sup_log2), qr/nginx ended \(signal Killed\); so does gateway2nginx supervise/, 'saying why');
kill 'QUIT', @workers;  # what the killed master left behind

# ---- the command line -------------------------------------------------------------------------------
my $usage = `$bin run -f $in -o $out --nginx-control $socket --start-nginx --upstream-api 127.0.0.1:$api_port 2>&1`;
is($? >> 8, 1, '--nginx-control with --start-nginx is a usage error');
like($usage, qr/--nginx-control asks gateway2nginx supervise: no --start-nginx or --reload/, 'said so');
$usage = `$bin supervise -o $out 2>&1`;
like($usage, qr/supervise needs --control SOCKET/, 'supervise without --control: said what it needs');
$usage = `$bin run -f $in -o $out --nginx-control $socket --shutdown-delay 5s --upstream-api 127.0.0.1:$api_port 2>&1`;
is($? >> 8, 1, 'run --shutdown-delay without --start-nginx: a usage error (supervise delays nginx\'s stop)');
like($usage, qr/--shutdown-delay is for the nginx run starts \(--start-nginx\); supervise has its own/, 'said so');

kill 'KILL', $backend;
waitpid($backend, 0);
