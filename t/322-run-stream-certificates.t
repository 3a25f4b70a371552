# gateway2nginx run: the Secret of a TLS listener in Terminate mode (a
# stream{} server) renewed reaches new handshakes through the upstream API
# with no reload (issue 55), as an HTTPS listener's does (t/321): the same
# workers, a connection opened before it served on, OUTDIR catching up.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);

plan 'no_plan';
setup();
start_backends();
my $dir = servroot();
my $port = server_port() + 21;  # the Terminate listener's 444
my $offset = $port - 444;
my $api_port = server_port() + 18;
my $name_of = certificate_names(qw(leaf wildcard untrusted));

my $term = "  - {name: term, port: 444, protocol: TLS, hostname: db.example, tls: {mode: Terminate, certificateRefs: [{name: db-cert}]}}\n";
(my $base = gateway_manifests(web => 'leaf')) =~ s/(  - \{name: http, port: 80, protocol: HTTP\}\n)/$1$term/
    or die 'no HTTP listener to add to';
sub cert_secret_yaml { tls_secret_yaml('db-cert', shift, 'ns') }
my $route = "apiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\nmetadata: {name: db, namespace: ns}\n"
          . "spec:\n  parentRefs: [{name: gw, sectionName: term}]\n  hostnames: [db.example]\n"
          . "  rules: [{backendRefs: [{name: web, port: 443}]}]\n";
my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
put_file($in, 'base.yaml', $base);
put_file($in, 'secret.yaml', cert_secret_yaml('leaf'));
put_file($in, 'route.yaml', $route);

my $log = "$dir/run.log";
sub count_in_log { count_in($log, shift) }
my $run = start_file_run($log, $in, $out, api_port => $api_port, offset => $offset);
# 10 handshakes: the certificates presented (by name), joined where they
# differ, and what the backend answered through the stream
sub presented {
    my ($certificates, $answers) = presented_certificates($port, 'db.example', $name_of, 10, qr/backend=(\S+)/);
    return "$certificates " . join(' | ', @$answers);
}
ok(wait_for(sub { presented() eq 'leaf leaf' }, 30), 'the Terminate listener presents its Secret\'s certificate, and proxies')
    or diag presented(), slurp($log);
like(slurp("$out/stream.conf"), qr/gateway_tls_certificate listener_ns_db-cert;/, 'through the upstream API\'s certificates');
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);

my ($kept, $from_kept, $to_kept) = open_kept_tls($port, 'db.example');
sub ask_kept { return ask_kept_alive($to_kept, $from_kept, 'db.example', '/') }
is(ask_kept(), '200 leaf', 'a connection opened before the renewal');

for my $renewal (['wildcard', 'renewed'], ['untrusted', 'renewed again']) {
    my ($name, $what) = @$renewal;
    my $pushed = count_in_log(qr/1 listener certificate\(s\) pushed to nginx, no reload/);
    put_file($in, 'secret.yaml', cert_secret_yaml($name));
    ok(wait_for(sub { count_in_log(qr/1 listener certificate\(s\) pushed to nginx, no reload/) > $pushed }, 10)
       && wait_for(sub { presented() eq "$name leaf" }, 5), "$what: every new handshake presents it")
        or diag presented(), slurp($log);
}
is(worker_pids($master), $workers, 'nginx never reloaded: the same workers');
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');
is(ask_kept(), '200 leaf', 'the connection opened before is served on');
close_kept_tls($kept, $to_kept);
my $file = "$out/certs/listener_ns_db-cert.crt";
ok(wait_for(sub { ($name_of->{certificate_sha256($file)} // '') eq 'untrusted' }, 15), 'OUTDIR catches up: its file holds it');

kill 'TERM', $run;
waitpid $run, 0;
