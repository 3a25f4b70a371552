# One cleartext port takes HTTP/2 by prior knowledge (h2c, as gRPC clients
# and the suite's H2C test speak it) and HTTP/1.x, told apart by the
# HTTP/2 connection preface: before nginx 1.25.1 through the module's
# gateway_tls_h2c_preface (a cleartext `listen ... http2` takes HTTP/2
# alone), from 1.25.1 through nginx's own `http2 on`, which is what
# gateway2nginx renders for each; there the directive is refused. A
# preface that arrives in pieces is waited for; anything else is HTTP/1.x,
# read by nginx as ever. Without either, an h2c client is refused.
use lib 't/lib';
use IO::Socket::INET;
use Test::GatewayTLS;
use Test::More;
use Time::HiRes qw(sleep);

setup();
my $dir = servroot();
my ($with, $without) = (server_port(), server_port() + 1);
my $h2c = nginx_version() >= 1025001 ? 'http2 on;' : 'gateway_tls_h2c_preface on;';
spit("$dir/conf/nginx.conf", own_conf_head() . <<"CONF");
    server {
        listen 127.0.0.1:$with;
        $h2c
        location / { return 200 "protocol=\$server_protocol host=\$host\\n"; }
    }
    server {
        listen 127.0.0.1:$with;
        server_name other.example.com;
        $h2c
        location / { return 200 "other protocol=\$server_protocol\\n"; }
    }
    server {
        listen 127.0.0.1:$without;
        location / { return 200 "protocol=\$server_protocol\\n"; }
    }
}
CONF
start_nginx($dir, 'conf/nginx.conf', $with);
END { stop_nginx($dir) if $dir }

# curl ARGS: (status, body)
sub curl {
    my $out = `curl -s --max-time 5 -w '\\n%{http_code}' @_ 2>&1`;
    my ($body, $code) = $out =~ /\A(.*)\n(\d+)\z/s;
    return ($code // 0, $body // $out);
}

is_deeply([curl('--http1.1', "http://127.0.0.1:$with/a")], [200, "protocol=HTTP/1.1 host=127.0.0.1\n"],
          'HTTP/1.1 on the port');
is_deeply([curl('--http2-prior-knowledge', "http://127.0.0.1:$with/b")], [200, "protocol=HTTP/2.0 host=127.0.0.1\n"],
          'HTTP/2 by prior knowledge on the same port');
is_deeply([curl('--http2-prior-knowledge', '--connect-to', "other.example.com:$with:127.0.0.1:$with",
               "http://other.example.com:$with/c")],
          [200, "other protocol=HTTP/2.0\n"], 'its streams pick their server by :authority');
is_deeply([curl('--http1.0', "http://127.0.0.1:$with/d")], [200, "protocol=HTTP/1.0 host=127.0.0.1\n"],
          'HTTP/1.0 too');
my ($code) = curl('--http2-prior-knowledge', "http://127.0.0.1:$without/e");
isnt($code, 200, "without the directive an h2c client is not served ($code)");

# the preface in two writes: HTTP/2 once it is whole (the server's SETTINGS)
my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $with) or die "connect: $!";
print $sock 'PRI * HTTP';
# a pause for the worker to peek at the first piece alone; nginx only
# peeks (MSG_PEEK) until it knows, so no read can be waited for. A
# worker that sees both pieces at once answers the same: the pause
# decides what is exercised, never the answer.
sleep 0.3;
print $sock "/2.0\r\n\r\nSM\r\n\r\n" . "\0\0\0\x04\0\0\0\0\0";  # and an empty SETTINGS frame
my $frame = '';
eval {
    local $SIG{ALRM} = sub { die "timed out\n" };
    alarm 5;
    sysread($sock, $frame, 9) or die "closed\n";
    alarm 0;
};
is(length $frame == 9 ? unpack('x3 C', $frame) : -1, 4, 'a preface in pieces is waited for: the server answers SETTINGS');
close $sock;

# HTTP/1.1 in pieces, and what only begins like the preface, stay HTTP/1
for my $case (["GET /f HT", "TP/1.1\r\nHost: split\r\nConnection: close\r\n\r\n", qr{\AHTTP/1\.1 200 .*protocol=HTTP/1\.1 host=split}s],
              ["PRI * HTTP/1", ".1\r\nHost: x\r\nConnection: close\r\n\r\n", qr{\AHTTP/1\.1 4\d\d }]) {
    my ($first, $rest, $want) = @$case;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $with) or die "connect: $!";
    print $s $first;
    sleep 0.2;   # as for the preface above
    print $s $rest;
    my $answer = '';
    eval {
        local $SIG{ALRM} = sub { die "timed out\n" };
        alarm 5;
        while (sysread($s, my $chunk, 4096)) { $answer .= $chunk }
        alarm 0;
    };
    like($answer, $want, "\"$first\" then the rest: HTTP/1");
}

unlike(slurp("$dir/logs/error.log"), qr/\[(?:alert|crit|emerg)\]/, 'no alert in the error log');

if (nginx_version() >= 1025001) {
    (my $conf = slurp("$dir/conf/nginx.conf")) =~ s/http2 on;/gateway_tls_h2c_preface on;/g;
    spit("$dir/conf/refused.conf", $conf);
    my $nginx = nginx_binary();
    my $out = `$nginx -t -p $dir/ -c conf/refused.conf 2>&1`;
    like($out, qr/"gateway_tls_h2c_preface" is for nginx before 1\.25\.1; this one does it with "http2 on"/,
         'from nginx 1.25.1 the directive is refused, naming what does it');
}
done_testing();
