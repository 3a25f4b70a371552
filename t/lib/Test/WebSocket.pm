package Test::WebSocket;
# RFC 6455 framing for the replay's WebSocket peers: the echo server's
# /ws and the client of HTTPRouteBackendProtocolWebSocket. Whole frames
# only (FIN set, no fragmentation), as both peers send them.
use strict;
use warnings;
use Digest::SHA qw(sha1);
use MIME::Base64 qw(encode_base64);
use Exporter 'import';

our @EXPORT_OK = qw(accept_key new_key write_frame read_frame);

use constant GUID => '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

# Sec-WebSocket-Accept for a Sec-WebSocket-Key
sub accept_key { encode_base64(sha1($_[0] . GUID), '') }

sub new_key { encode_base64(join('', map { chr int rand 256 } 1 .. 16), '') }

# One frame of OPCODE (1 text, 2 binary, 8 close, 9 ping, 10 pong);
# a client masks what it sends, a server does not.
sub write_frame {
    my ($sock, $opcode, $payload, $masked) = @_;
    my $len = length $payload;
    my $head = chr(0x80 | $opcode);
    my $mask_bit = $masked ? 0x80 : 0;
    $head .= $len < 126 ? chr($mask_bit | $len)
           : $len < 65536 ? chr($mask_bit | 126) . pack('n', $len)
           : chr($mask_bit | 127) . pack('Q>', $len);
    if ($masked) {
        my $mask = pack 'N', int rand 2**32;
        $head .= $mask;
        $payload ^= substr($mask x (int($len / 4) + 1), 0, $len);
    }
    return print {$sock} $head . $payload;
}

sub _read_exactly {
    my ($sock, $n) = @_;
    my $buf = '';
    while (length $buf < $n) {
        my $got = read $sock, $buf, $n - length $buf, length $buf;
        return undef unless $got;
    }
    return $buf;
}

# (opcode, payload) of the next frame, unmasked; () at end of stream
sub read_frame {
    my $sock = shift;
    my $head = _read_exactly($sock, 2) // return;
    my ($b0, $b1) = unpack 'CC', $head;
    my $len = $b1 & 0x7f;
    if ($len == 126) { $len = unpack 'n', _read_exactly($sock, 2) // return }
    elsif ($len == 127) { $len = unpack 'Q>', _read_exactly($sock, 8) // return }
    my $mask = $b1 & 0x80 ? _read_exactly($sock, 4) // return : undef;
    my $payload = $len ? _read_exactly($sock, $len) // return : '';
    $payload ^= substr($mask x (int($len / 4) + 1), 0, $len) if defined $mask;
    return ($b0 & 0x0f, $payload);
}

1;
