#!/usr/bin/perl
# A TCP server answering as the Gateway API conformance suite's echo-basic
# does with TCP_ECHO_SERVER (conformance/echo-basic/tcpserver): on connect
# "Gateway API Test TCP Server\n"; then, a line at a time, PING -> PONG,
# IS_TLS -> false, TEST -> a JSON object with the namespace, service and
# pod of the backend that answered; other lines get no answer. One process
# serves every backend of a replay, one port each.
#
#   tcp-echo-server.pl PORT=NAMESPACE/SERVICE/POD ...
#
# Prints "ready" once it listens; runs until killed; a child per
# connection.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use JSON::PP;
use POSIX qw(WNOHANG);

my %identity;  # listening socket -> {namespace, service, pod, port}
my $select = IO::Select->new;
for my $arg (@ARGV) {
    my ($port, $ns, $service, $pod) = $arg =~ m{^(\d+)=([^/]+)/([^/]+)/(.+)$} or die "bad argument $arg\n";
    my $sock = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port, Proto => 'tcp',
                                     ReuseAddr => 1, Listen => 128)
        or die "cannot listen on 127.0.0.1:$port: $!\n";
    $identity{fileno $sock} = {namespace => $ns, service => $service, pod => $pod, port => $port};
    $select->add($sock);
}
$SIG{CHLD} = sub { 1 while waitpid(-1, WNOHANG) > 0 };
$SIG{TERM} = sub { exit 0 };
$| = 1;
print "ready\n";

sub serve {
    my ($conn, $id) = @_;
    # the suite's TCPAssertions: its Context inline, isTLS, no tls object
    my $payload = JSON::PP->new->canonical->encode({namespace => $id->{namespace}, ingress => '',
                                                    service => $id->{service}, pod => $id->{pod},
                                                    tcpport => "$id->{port}", isTLS => JSON::PP::false});
    print $conn "Gateway API Test TCP Server\n";
    while (my $line = <$conn>) {
        $line =~ s/\r?\n\z//;
        if ($line eq 'TEST') {
            print $conn "$payload\n";
        } elsif ($line eq 'IS_TLS') {
            print $conn "false\n";
        } elsif ($line eq 'PING') {
            print $conn "PONG\n";
        }
    }
}

while (1) {
    for my $listening ($select->can_read) {
        my $conn = $listening->accept or next;
        my $pid = fork;
        if (defined $pid && $pid == 0) {
            $conn->autoflush(1);
            serve($conn, $identity{fileno $listening});
            exit 0;
        }
        close $conn;
    }
}
