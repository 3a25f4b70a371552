# The harness leaves nothing behind: a test file that dies half-way has
# its nginx stopped and the processes it started ended (else they hold
# the next file's ports), and start_nginx names a port another process
# holds instead of leaving nginx's bind() error to be read. A kept
# connection that closed under the test fails the test's question, not
# the test file (SIGPIPE would end it without its END block).
use strict;
use warnings;
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use Time::HiRes qw(sleep time);
use Cwd ();

setup();
my $dir = servroot();
my $lib = Cwd::abs_path('t/lib');

# A test file of its own (its servroot: t/servroot-004-child-N), run by perl
# as prove would, which starts nginx and a child process, then dies.
sub child_file {
    my ($name, $body) = @_;
    my $file = "$dir/004-child-$name.pl";  # not .t: prove -r t/ would run it
    spit($file, <<"PERL");
use strict;
use warnings;
use lib '$lib';
use Test::GatewayTLS;
use IO::Socket::INET;
setup();
my \$d = servroot();
mkdir "\$d/gw"; mkdir "\$d/gw/logs";
sub conf { my \$port = shift; "pid logs/nginx.pid;\\nerror_log logs/error.log;\\nevents {}\\n"
    . "http {\\n    access_log off;\\n    server {\\n        listen 127.0.0.1:\$port;\\n        return 200;\\n    }\\n}\\n" }
$body
PERL
    my $out = `perl $file 2>&1`;
    return ($? >> 8, $out);
}

sub alive { my $pid = shift; return $pid && kill(0, $pid) && slurp("/proc/$pid/stat") !~ /^\d+ \(.*\) Z/ }

my ($rc, $out) = child_file('dies', <<'PERL');
spit("$d/gw/nginx.conf", conf(server_port()));
start_nginx("$d/gw", 'nginx.conf', server_port());
my $sleeper = fork // die;
if (!$sleeper) { open STDOUT, '>', '/dev/null'; open STDERR, '>', '/dev/null'; exec 'sleep', '60' }
track_child($sleeper);
print "master ", slurp("$d/gw/logs/nginx.pid"), "sleeper $sleeper\n";
die "dies half-way, on purpose\n";
PERL
isnt($rc, 0, 'the child test file died') or diag $out;
my ($master) = $out =~ /^master (\d+)/m;
my ($sleeper) = $out =~ /^sleeper (\d+)/m;
ok($master && $sleeper, 'it had started nginx and a process') or diag $out;
ok(wait_for(sub { !alive($master) }, 5), "its nginx ($master) was stopped as it ended");
ok(wait_for(sub { !alive($sleeper) }, 5), "the process it started ($sleeper) was ended");

($rc, $out) = child_file('held', <<'PERL');
my $held = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => server_port() + 1, Listen => 1, ReuseAddr => 1)
    or die "cannot hold a port: $!";
spit("$d/gw/nginx.conf", conf(server_port() + 1));
eval { start_nginx("$d/gw", 'nginx.conf', server_port() + 1) };
print "refused: $@";
exit 0;
PERL
like($out, qr/^refused: .*listens on 127\.0\.0\.1:\d+, which another process holds/m,
     'start_nginx names a port another process holds');

($rc, $out) = child_file('closed', <<'PERL');
my ($pid, $from, $to) = open_kept_tls(server_port() + 2, 'nowhere.example');  # nothing listens there
waitpid $pid, 0;  # s_client gone: its stdin has no reader
print "asked: ", ask_kept_alive($to, $from, 'nowhere.example', '/'), "\n";
print "went on\n";
exit 0;
PERL
like($out, qr/^asked: (closed|write failed)\nwent on$/m, 'a question on a closed kept connection fails, the test goes on')
    or diag "exit $rc: $out";

done_testing();
