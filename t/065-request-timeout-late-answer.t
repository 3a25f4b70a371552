# gateway_tls_request_timeout when the worker is busy as the deadline
# passes: the backend's answer, read once the worker is free, came after
# the deadline and is a 504, whether nginx reads it before or after it
# runs the deadline's timer (it handles a loop's events first).
#
# The worker is made busy, for as long as the test says, by an access log
# that is a FIFO nobody reads: its write blocks the worker until the test
# drains the FIFO. Meanwhile the backend answers, past the deadline.
use lib 't/lib';
use Fcntl;
use IO::Socket::INET;
use POSIX qw(mkfifo);
use Test::GatewayTLS;
use Test::More;
use Time::HiRes qw(time sleep);

setup();
my $dir = servroot();
my ($port, $backend_port) = (server_port(), server_port() + 1);
my $timeout_ms = 1000;

# the FIFO, held open for reading (not read) so that nginx may open it
my $fifo = "$dir/logs/busy.fifo";
mkfifo($fifo, 0600) or die "mkfifo $fifo: $!";
sysopen(my $fifo_reader, $fifo, O_RDONLY | O_NONBLOCK) or die "$fifo: $!";

# The backend: records each request's path, then answers it once the
# test has made the file "release" (a path, or "all")
my ($seen, $release, $answered) = map { "$dir/logs/backend.$_" } qw(seen release answered);
my $listener = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $backend_port, Listen => 8, ReuseAddr => 1)
    or die "listen on $backend_port: $!";
my $backend = fork // die "fork: $!";
if ($backend == 0) {
    $SIG{CHLD} = 'IGNORE';
    while (my $c = $listener->accept) {
        next if fork;
        my $request = '';
        while (my $line = <$c>) { $request .= $line; last if $line eq "\r\n" }
        my ($path) = $request =~ m{^GET (\S+)};
        open my $log, '>>', $seen or die; print $log "$path\n"; close $log;
        sleep 0.01 until -e $release;
        print $c "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nlate";
        open $log, '>>', $answered or die; print $log "$path\n"; close $log;
        close $c;
        POSIX::_exit(0);  # not exit: the END blocks are the test's
    }
    POSIX::_exit(0);
}
close $listener;
track_child($backend);

spit("$dir/conf/nginx.conf", own_conf_head() . <<"CONF");
    server {
        listen 127.0.0.1:$port;
        location /timed {
            gateway_tls_request_timeout ${timeout_ms}ms;
            proxy_pass http://127.0.0.1:$backend_port;
        }
        location /untimed {
            proxy_pass http://127.0.0.1:$backend_port;
        }
        location /busy {
            access_log $fifo;
            return 200 "busy\\n";
        }
    }
}
CONF
start_nginx($dir, 'conf/nginx.conf', $port);
END { stop_nginx($dir) if $dir }

# the FIFO made full, so that the next line nginx logs there blocks it
sysopen(my $filler, $fifo, O_WRONLY | O_NONBLOCK) or die "$fifo: $!";
1 while syswrite($filler, 'x' x 4096);
close $filler;

# A request sent, not read: its socket
sub send_request {
    my $path = shift;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or die "connect: $!";
    syswrite($s, "GET $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    return $s;
}
sub count_lines { my ($file, $line) = @_; return scalar grep { $_ eq "$line\n" } split /^/m, (-e $file ? slurp($file) : '') }

# PATH sent; once the backend has it, the worker is made busy past the
# deadline, the backend answers, and the worker is freed: (status, body)
sub answered_while_busy {
    my $path = shift;
    my $client = send_request($path);
    wait_for(sub { count_lines($seen, $path) == 1 }) or die "the backend never saw $path";
    # the deadline was armed before the backend saw the request
    my $past_deadline = time + $timeout_ms / 1000 + 0.2;
    # its answer is read whole, not to the end: the connection is closed
    # after the line is logged
    my $busy = send_request('/busy');
    my ($answer, $buf) = ('', '');
    $answer .= $buf while $answer !~ /\r\n\r\nbusy\n/ && sysread($busy, $buf, 4096);
    like($answer, qr{^HTTP/1\.1 200.*\r\n\r\nbusy\n\z}s, "$path: /busy answered (its log line then blocks the worker)");
    sleep 0.05 while time < $past_deadline;
    spit($release, '');
    wait_for(sub { count_lines($answered, $path) == 1 }) or die "the backend never answered $path";
    my $drained;
    1 while sysread($fifo_reader, $drained, 65536);  # the worker freed
    my $response = do { local $/; <$client> } // '';
    unlink $release;
    my ($status, $body) = $response =~ m{\AHTTP/1\.1 (\d{3}) .*?\r\n\r\n(.*)\z}s;
    return ($status // 0, $body // $response);
}

my ($status, $body) = answered_while_busy('/timed');
is($status, 504, 'an answer that came after the request deadline is a 504');
ok(wait_for(sub { count_in("$dir/logs/error.log", qr/no answer within the request timeout of ${timeout_ms}ms/) }),
   'the error log says why');

# the same wait, without a request timeout: the answer is the backend's
($status, $body) = answered_while_busy('/untimed');
is($status, 200, 'without a request timeout, the late answer is the backend\'s');
is($body, 'late', 'and its body');

done_testing();
