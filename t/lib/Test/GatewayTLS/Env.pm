package Test::GatewayTLS::Env;

# Where a test file runs: its server root and certificates (setup), its
# ports, the operator token, the nginx and module under test; and the small
# helpers every part uses (slurp, spit, put_file, wait_for, count_in).

use strict;
use warnings;

use Exporter 'import';
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path remove_tree);
use IO::Socket::INET;
use Time::HiRes qw(sleep time);

our @EXPORT = qw(backend_port bearer cert_pin certs_dir client_fingerprint count_in group_token_file
                module_dir nginx_binary nginx_stream_module nginx_version operator_token
                operator_token_file put_file server_port servroot setup slurp spit spki_pin
                stream_port wait_for);
our @EXPORT_OK = qw($BasePort $Module $Nginx $NginxStreamModule $NginxVersion $Root $ServRoot
                   $StreamModule @Backends _check_listen_ports _port_free _setup);

our $Root = abs_path(dirname(__FILE__) . '/../../../..');

our $Module = $ENV{GTLS_MODULE} || "$Root/build/nginx/objs/ngx_http_gateway_tls_module.so";

(our $StreamModule = $Module) =~ s/ngx_http_gateway_tls_module\.so$/ngx_stream_gateway_tls_module.so/;

# TEST_NGINX_BINARY: another nginx, or a wrapper (make SANITIZE=1 preloads
# the ASan and UBSan runtimes into nginx alone through one)
our $Nginx = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';

sub nginx_binary { return $Nginx }

# How nginx was built, from `nginx -V`: the load_module line of its stream
# module (empty when stream is built in) and its version as a number
# (1022001 for 1.22.1).
our ($NginxStreamModule, $NginxVersion) = _nginx_build($Nginx);

sub nginx_stream_module { return $NginxStreamModule }

sub nginx_version { return $NginxVersion }

sub _nginx_build {
    my ($nginx) = @_;
    my $v = `'$nginx' -V 2>&1`;
    die "cannot run $nginx -V: $v" if $? != 0;
    my ($version) = $v =~ m{nginx/(\d+\.\d+\.\d+)} or die "no version in $nginx -V: $v";
    my ($prefix) = $v =~ /--prefix=(\S+)/;
    my ($modules) = $v =~ /--modules-path=(\S+)/;
    $modules //= ($prefix // '/usr/local/nginx') . '/modules';
    my $stream = $v =~ /--with-stream=dynamic/ ? "load_module $modules/ngx_stream_module.so;" : '';
    return ($stream, sprintf('%d%03d%03d', split /\./, $version));
}

# The backends every test can reach, by certificate name. leaf_h2 is the
# leaf certificate again, speaking HTTP/2 for grpc_pass.
our @Backends = qw(leaf spiffe wrongsan expired notyet selfsigned untrusted wildcard ipemail leaf_h2 forged);

# TCP backends in stream{}: "tcp" answers in plaintext whether what it got
# began with a TLS ClientHello and the SNI in it; "tcp_tls" terminates TLS
# with the leaf certificate and answers the SNI it saw.
my @StreamBackends = qw(tcp tcp_tls);

# More http backends: "plain" answers cleartext HTTP; "mtls" (the leaf
# certificate) asks for a client certificate signed by the test CA and
# answers the fingerprint and subject it got.
my @MoreBackends = qw(plain mtls);

our ($ServRoot, $BasePort);

sub servroot { $ServRoot }

sub certs_dir { "$ServRoot/certs" }

sub server_port { $BasePort }

# Where a block's stream_config listens: requests go there with --- stream
# ($TEST_NGINX_STREAM_PORT_1 ... _3 for more servers, "@1 GET /" to reach them).
sub stream_port { $BasePort + 12 }

sub backend_port {
    my $name = shift;
    for my $i (0 .. $#Backends) {
        return $BasePort + 1 + $i if $Backends[$i] eq $name;
    }
    for my $i (0 .. $#StreamBackends) {
        return $BasePort + 22 + $i if $StreamBackends[$i] eq $name;
    }
    for my $i (0 .. $#MoreBackends) {
        return $BasePort + 24 + $i if $MoreBackends[$i] eq $name;
    }
    die "no backend named $name\n";
}

# "sha256-spki:BASE64" and "sha256-cert:HEX" of a test certificate's leaf,
# computed with the openssl CLI, independently of the module.
sub spki_pin {
    my $leaf = certs_dir() . "/" . shift() . ".leaf.crt";
    my $b64 = `openssl x509 -in $leaf -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`;
    chomp $b64;
    return "sha256-spki:$b64";
}

sub cert_pin {
    my $leaf = certs_dir() . "/" . shift() . ".leaf.crt";
    my $out = `openssl x509 -in $leaf -noout -fingerprint -sha256`;
    $out =~ /=([0-9A-F:]+)/ or die "no fingerprint for $leaf\n";
    return "sha256-cert:$1";
}

# nginx's $ssl_client_fingerprint of a test certificate's leaf (SHA-1,
# lowercase hex), computed with the openssl CLI.
sub client_fingerprint {
    my $leaf = certs_dir() . "/" . shift() . ".leaf.crt";
    my $out = `openssl x509 -in $leaf -noout -fingerprint -sha1`;
    $out =~ /=([0-9A-F:]+)/ or die "no fingerprint for $leaf\n";
    (my $hex = lc $1) =~ s/://g;
    return $hex;
}

sub _port_free {
    my ($port, $address) = @_;
    my $sock = IO::Socket::INET->new(LocalAddr => $address // '127.0.0.1', LocalPort => $port,
                                     Proto => 'tcp', ReuseAddr => 1, Listen => 1);
    return 0 unless $sock;
    close $sock;
    return 1;
}

# How far above the test's first port it may listen: the conformance tests
# put a Gateway's listener port P at base + P - 413 (443 -> base + 30,
# 8883 -> base + 8470), so listener ports up to 10013 fit. start_nginx
# refuses a configuration that listens beyond it.
my $ListenSpan = 9600;

my $EphemeralStart = 32768;

if (open my $fh, '<', '/proc/sys/net/ipv4/ip_local_port_range') {
    ($EphemeralStart) = split ' ', scalar <$fh>;
}

# The first port of the test's block. Every port a test listens on, up to
# base + $ListenSpan, stays below the kernel's ephemeral range: a port that
# an outgoing connection (curl, an upstream keepalive) may take as its own
# at any time cannot be counted on for a listen that comes later.
sub _pick_ports {
    my $span = 24 + @MoreBackends;
    my $slots = int(($EphemeralStart - $ListenSpan - 1 - 20000) / 16);
    die "no room for test ports below the ephemeral range ($EphemeralStart)\n" if $slots < 1;
    for (my $try = 0; $try < 200; $try++) {
        my $base = 20000 + (($$ + $try * 37) % $slots) * 16;
        return $base unless grep { !_port_free($_) } $base .. $base + $span - 1;
    }
    die "no free loopback ports\n";
}

# Dies unless every port the configuration files under DIR listen on is
# in the test's block (one beyond it may fall in the ephemeral range, and
# a bind() there fails whenever an outgoing connection holds the port) and
# free: a process left listening there (another test's, or one an earlier
# run of this one left) is named as such, not met as nginx's bind() error.
sub _check_listen_ports {
    my $dir = shift;
    my @files = grep { -f } glob("$dir/*.conf $dir/*/*.conf $dir/*/*/*.conf");
    my %seen;
    for my $file (@files) {
        my $text = slurp($file);
        while ($text =~ /^\s*listen\s+(?:(\d+\.\d+\.\d+\.\d+|\*):)?(\d+)\b([^;]*)/mg) {
            my ($address, $port, $rest) = ($1 // '*', $2, $3);
            die "$file listens on $port, beyond this test's ports ($BasePort .. "
                . ($BasePort + $ListenSpan) . ", below the ephemeral range from $EphemeralStart): "
                . "a bind() there fails whenever an outgoing connection holds the port\n"
                if $port > $BasePort + $ListenSpan;
            next if $rest =~ /\budp\b/ || $seen{"$address:$port"}++;
            die "$file listens on $address:$port, which another process holds (a test's nginx left running?)\n"
                unless _port_free($port, $address eq '*' ? '0.0.0.0' : $address);
        }
    }
}

sub _setup {
    my $name = $0;
    $name =~ s{.*/}{};
    $name =~ s{\.(?:t|pl)$}{};
    $ServRoot = "$Root/t/servroot-$name";
    remove_tree($ServRoot);
    make_path("$ServRoot/conf", "$ServRoot/logs", "$ServRoot/tmp");
    system('sh', "$Root/t/lib/make-certs.sh", certs_dir()) == 0
        or die "cannot make the test certificates\n";
    -f $Module or die "module not built: $Module (run make)\n";
    $BasePort = _pick_ports();
    # the bearer token of the operator interfaces in hand-written configurations
    my $token = join '', map { sprintf '%02x', int rand 256 } 1 .. 24;
    my $old = umask 077;
    spit(operator_token_file(), "test-operator-$token\n");
    umask $old;
    # the same token, a file the group may read too ($TEST_NGINX_GROUP_TOKEN_FILE)
    spit(group_token_file(), "test-operator-$token\n");
    chmod 0640, group_token_file();
}

# The bearer token of the upstream API and the status endpoint in the
# blocks' configurations ($TEST_NGINX_OPERATOR_TOKEN_FILE), 0600.
sub operator_token_file { "$ServRoot/conf/operator.token" }

sub group_token_file { "$ServRoot/conf/group.token" }

sub operator_token { my $t = slurp(operator_token_file()); chomp $t; $t }

# "Authorization: Bearer TOKEN" with the token in FILE (a generated
# OUTDIR's upstream-api.token or status.token).
sub bearer { my $t = slurp(shift); chomp $t; "Authorization: Bearer $t" }

sub setup { _setup() }

# Where the module under test is (--module-dir): $GTLS_MODULE's directory.
sub module_dir { (my $dir = $ENV{GTLS_MODULE} || $Module) =~ s{/[^/]+$}{}; return $dir }

# True as soon as CODE returns true, within SECONDS (10), and never less
# than 30 s: the figure a call gives is an idle machine's, and CI's runs
# beside two other suites (t/350 once waited 3 s for what came just
# after). Every call waits for something to happen, so the deadline only
# bounds a failure. The last value.
sub wait_for {
    my ($what, $seconds) = @_;
    my $deadline = time + (($seconds // 10) < 30 ? 30 : $seconds);
    my $ok;
    sleep 0.02 until ($ok = $what->()) || time > $deadline;
    return $ok;
}

# How often RE matches the text of FILE (none before FILE is made: the
# waits that ask may start before the process they wait for opens it).
sub count_in { my ($file, $re) = @_; return 0 unless -e $file; my $n = () = slurp($file) =~ /$re/g; return $n }

# DIR/NAME replaced the way kubectl cp or a config sync does: written
# aside, renamed.
sub put_file {
    my ($dir, $name, $text) = @_;
    spit("$dir/.$name.tmp", $text);
    rename "$dir/.$name.tmp", "$dir/$name" or die "$dir/$name: $!";
}

sub slurp { local (@ARGV, $/) = @_; <> }

sub spit { my ($f, $t) = @_; open my $fh, '>', $f or die "$f: $!"; print $fh $t; close $fh }

1;
