#!/usr/bin/perl
# UDP backends answering as the Gateway API conformance suite's do: as
# echo-basic's UDP echo server (conformance/echo-basic/udpechoserver), each
# datagram answered with a JSON object holding it ("request") and the
# namespace, service and pod of the backend; or, for the suite's coredns,
# each DNS query answered "no such name" (the suite only waits for an
# answer). One process serves every backend of a replay, one port each.
#
#   udp-echo-server.pl PORT=NAMESPACE/SERVICE/POD ... PORT=dns ...
#
# Prints "ready" once it listens; runs until killed.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use JSON::PP;

my %identity;  # socket -> {namespace, service, pod} or 'dns'
my $select = IO::Select->new;
for my $arg (@ARGV) {
    my ($port, $who) = $arg =~ m{^(\d+)=(.+)$} or die "bad argument $arg\n";
    my $sock = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port, Proto => 'udp', ReuseAddr => 1)
        or die "cannot listen on udp 127.0.0.1:$port: $!\n";
    if ($who eq 'dns') {
        $identity{fileno $sock} = 'dns';
    } else {
        my ($ns, $service, $pod) = $who =~ m{^([^/]+)/([^/]+)/(.+)$} or die "bad argument $arg\n";
        $identity{fileno $sock} = {namespace => $ns, service => $service, pod => $pod};
    }
    $select->add($sock);
}
$SIG{TERM} = sub { exit 0 };
$| = 1;
print "ready\n";

my $json = JSON::PP->new->canonical;
while (1) {
    for my $sock ($select->can_read) {
        my $peer = $sock->recv(my $datagram, 65535) // next;
        my $id = $identity{fileno $sock};
        my $answer;
        if ($id eq 'dns') {
            next if length $datagram < 12;
            # the query itself, made a response (QR), recursion available,
            # NXDOMAIN; its question kept, no answers
            my ($txid, $flags) = unpack 'n n', $datagram;
            $answer = pack('n n', $txid, 0x8000 | ($flags & 0x7900) | 0x0080 | 3) . substr($datagram, 4, 2)
                    . pack('n n n', 0, 0, 0) . substr($datagram, 12);
        } else {
            $answer = $json->encode({request => $datagram, namespace => $id->{namespace}, ingress => '',
                                     service => $id->{service}, pod => $id->{pod}});
        }
        $sock->send($answer, 0, $peer);
    }
}
