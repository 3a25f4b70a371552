#!/usr/bin/perl
# An HTTP/1.1 echo server answering as the Gateway API conformance suite's
# echo-basic (kubernetes-sigs/gateway-api-conformance-images) does: a JSON
# object with the request's path (request URI), host, method, protocol and
# headers, and the namespace and pod of the backend that answered. One
# process serves every backend of a replay, one port each.
#
#   echo-server.pl [--log=DIR] PORT=NAMESPACE/POD ...
#
# With --log, each request is logged as echo-basic logs it ("Echoing back
# request made to PATH to client (ADDR)") in DIR/NAMESPACE_POD.log, the
# pod's log the suite reads for mirrored requests. /ws with a WebSocket
# Upgrade echoes each message, as echo-basic's does; under /retry/,
# ?succeedAfter=, uuid=, responseCode= and delayRetry= simulate a failing
# backend (a status, or a connection reset), as its retry simulation
# does. Runs until killed; a
# child per connection, keep-alive honoured.
use strict;
use warnings;
use IO::Socket::INET;
use Socket qw(SOL_SOCKET SO_LINGER);
use IO::Select;
use JSON::PP;
use POSIX qw(WNOHANG);
use Time::HiRes ();
use Fcntl qw(:flock);
use File::Path ();
use File::Temp ();
use FindBin;
use lib "$FindBin::Bin";
use Test::WebSocket qw(accept_key read_frame write_frame);

my %identity;  # listening socket -> [namespace, pod]
my $select = IO::Select->new;
my $log_dir;
$log_dir = $1 if @ARGV && $ARGV[0] =~ /^--log=(.+)$/ && shift @ARGV;
for my $arg (@ARGV) {
    my ($port, $ns, $pod) = $arg =~ m{^(\d+)=([^/]+)/(.+)$} or die "bad argument $arg\n";
    my $sock = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port, Proto => 'tcp',
                                     ReuseAddr => 1, Listen => 128)
        or die "cannot listen on 127.0.0.1:$port: $!\n";
    $identity{fileno $sock} = [$ns, $pod];
    $select->add($sock);
}
$SIG{CHLD} = sub { 1 while waitpid(-1, WNOHANG) > 0 };
my $parent = $$;
$SIG{TERM} = sub { exit 0 };  # END removes the retry counts
my $retry_dir = File::Temp::tempdir('echo-retry-XXXXXX', TMPDIR => 1, CLEANUP => 0);
END { File::Path::remove_tree($retry_dir) if $$ == $parent && $retry_dir }
$| = 1;
print "ready\n";

# Go's canonical header key: "x-foo-bar" -> "X-Foo-Bar".
sub canonical { join '-', map { ucfirst lc } split /-/, shift, -1 }

sub serve {
    my ($conn, $ns, $pod) = @_;
    local $/ = "\r\n";
    while (1) {
        my $line = <$conn>;
        return unless defined $line;
        $line =~ s/\r\n$//;
        next if $line eq '';
        my ($method, $uri, $proto) = split / /, $line;
        my (%headers, $host, $length);
        while (defined(my $h = <$conn>)) {
            $h =~ s/\r\n$//;
            last if $h eq '';
            my ($name, $value) = $h =~ /^([^:]+):\s*(.*?)\s*$/ or next;
            if (lc $name eq 'host') {
                $host = $value;  # Go moves Host out of the header map
                next;
            }
            $length = $value if lc $name eq 'content-length';
            push @{$headers{canonical($name)}}, $value;
        }
        if ($length) {
            local $/ = \$length;
            my $body = <$conn>;
        }
        # echo-basic's /ws: a WebSocket that echoes each message
        my ($upgrade) = @{$headers{Upgrade} || []};
        if ($uri =~ m{^/ws(?:\?|$)} && $upgrade && lc $upgrade eq 'websocket' && $headers{'Sec-Websocket-Key'}) {
            print $conn "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      . "Sec-WebSocket-Accept: " . accept_key($headers{'Sec-Websocket-Key'}[0]) . "\r\n\r\n";
            $conn->flush;
            while (my ($opcode, $payload) = read_frame($conn)) {
                if ($opcode == 8) { write_frame($conn, 8, $payload); last }
                write_frame($conn, $opcode == 9 ? 10 : $opcode, $payload) if $opcode != 10;
                $conn->flush;
            }
            return;
        }
        # echo-basic's ?delay=DURATION: answer that much later
        if ($uri =~ /[?&]delay=(\d+(?:\.\d+)?)(ms|s)\b/) {
            Time::HiRes::sleep($2 eq 'ms' ? $1 / 1000 : $1);
        }
        # echo-basic's retry simulation under /retry/: the first
        # succeedAfter requests with one uuid fail, after delayRetry, with
        # responseCode or, without one, a connection reset (RST); later ones
        # get the echo (counted per pod across this server's children)
        my %query = map { /^([^=]*)=(.*)$/ ? ($1 => $2) : ($_ => '') } split /&/, ($uri =~ /\?(.*)$/)[0] // '';
        if ($uri =~ m{^/retry/}) {
            my $bad = ($query{uuid} // '') !~ /^[\w-]{1,64}$/ ? 'uuid is required'
                    : ($query{succeedAfter} // '') !~ /^\d{1,3}$/ ? 'succeedAfter is required' : '';
            if ($bad) {
                print $conn "HTTP/1.1 400 Bad Request\r\nContent-Length: " . length($bad) . "\r\nConnection: close\r\n\r\n$bad";
                return;
            }
            open my $count, '+>>', "$retry_dir/${ns}_${pod}_$query{uuid}" or die "$retry_dir: $!";
            flock $count, LOCK_EX;
            seek $count, 0, 0;
            my $seen = length(do { local $/; <$count> }) / 2;  # "x\n" a try
            print $count "x\n" if $seen < $query{succeedAfter};
            close $count;
            if ($seen < $query{succeedAfter}) {
                # a Go duration: 300ms, 1s, 1.5s
                if (($query{delayRetry} // '') =~ /^(\d+(?:\.\d+)?)(ms|s)$/) {
                    Time::HiRes::sleep($2 eq 'ms' ? $1 / 1000 : $1);
                }
                if (($query{responseCode} // '') =~ /^[1-5]\d\d$/) {
                    print $conn "HTTP/1.1 $query{responseCode} Retry Simulation\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                } else {
                    setsockopt($conn, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0)) or die "SO_LINGER: $!";
                }
                close $conn;
                return;
            }
        }
        if ($log_dir) {
            # one write per line (O_APPEND): children log side by side
            open my $log, '>>', "$log_dir/${ns}_$pod.log" or die "$log_dir: $!";
            syswrite $log, "Echoing back request made to $uri to client (" . $conn->peerhost . ")\n";
            close $log;
        }
        my $json = JSON::PP->new->canonical->encode({
            path => $uri, host => $host // '', method => $method, proto => $proto,
            headers => \%headers, namespace => $ns, ingress => '', service => '', pod => $pod,
        });
        my $close = ($headers{Connection} && grep { lc $_ eq 'close' } @{$headers{Connection}})
                    || $proto eq 'HTTP/1.0';
        # echo-basic's X-Echo-Set-Header: "Name:value,Name2:value2", each
        # set on the response (the suite's BackendSetResponseHeaders)
        my $set = '';
        for my $item (split /,/, join(',', @{$headers{'X-Echo-Set-Header'} || []})) {
            my ($name, $value) = $item =~ /^\s*([^:\s]+)\s*:\s*(.*?)\s*$/ or next;
            $set .= canonical($name) . ": $value\r\n";
        }
        print $conn "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"
                  . $set . "Content-Length: " . length($json) . "\r\n" . ($close ? "Connection: close\r\n" : '')
                  . "\r\n$json";
        return if $close;
    }
}

while (1) {
    for my $listener ($select->can_read) {
        my $conn = $listener->accept or next;
        my $pid = fork;
        if (defined $pid && $pid == 0) {
            $SIG{CHLD} = 'DEFAULT';
            serve($conn, @{$identity{fileno $listener}});
            exit 0;
        }
        close $conn;
    }
}
