# gateway2nginx run: a listener's Secret renewed (as cert-manager renews
# it) reaches new handshakes through the upstream API with no reload
# (issue 55): the same workers, a connection opened before it served on,
# OUTDIR catching up; a reload afterwards presents the renewed one too.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);

plan 'no_plan';
setup();
start_backends();
my $dir = servroot();
my $port = server_port() + 20;  # the HTTPS listener's 443
my $offset = $port - 443;
my $api_port = server_port() + 18;
my $name_of = certificate_names(qw(leaf wildcard untrusted));

my $https = "  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: gw-cert}]}}\n";
(my $base = gateway_manifests(web => 'leaf')) =~ s/  - \{name: http, port: 80, protocol: HTTP\}\n/$https/
    or die 'no HTTP listener to replace';
sub cert_secret_yaml { tls_secret_yaml('gw-cert', shift, 'ns') }
my $route = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\n"
          . "spec:\n  parentRefs: [{name: gw}]\n  hostnames: [web.example]\n  rules: [{backendRefs: [{name: web, port: 443}]}]\n";
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
# differ, and what the backend answered
sub presented {
    my ($certificates, $answers) = presented_certificates($port, 'web.example', $name_of, 10, qr/backend=(\S+)/);
    return "$certificates " . join(' | ', @$answers);
}
ok(wait_for(sub { presented() eq 'leaf leaf' }, 30), 'the listener presents its Secret\'s certificate, and routes')
    or diag presented(), slurp($log);
like(slurp("$out/http.conf"), qr/gateway_tls_certificate listener_ns_gw-cert;/, 'through the upstream API\'s certificates');
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);

# a connection opened before the renewal, kept open across it
my ($kept, $from_kept, $to_kept) = open_kept_tls($port, 'web.example');
sub ask_kept { return ask_kept_alive($to_kept, $from_kept, 'web.example', '/') }
is(ask_kept(), '200 leaf', 'a connection opened before the renewal');

# ---- the Secret renewed: pushed, no reload ----------------------------------------
for my $renewal (['wildcard', 'renewed'], ['untrusted', 'renewed again'], ['leaf', 'and back']) {
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

put_file($in, 'secret.yaml', cert_secret_yaml('wildcard'));
ok(wait_for(sub { presented() eq 'wildcard leaf' }, 10), 'renewed once more') or diag presented();
my $file = "$out/certs/listener_ns_gw-cert.crt";
ok(wait_for(sub { $name_of->{certificate_sha256($file)} eq 'wildcard' }, 15), 'OUTDIR catches up: its file holds it')
    or diag $name_of->{certificate_sha256($file)};

# ---- a reload for something else presents it too --------------------------------------
(my $more = $base) =~ s/\Q$https\E/$https  - {name: https2, port: 444, protocol: HTTPS, hostname: other.example,\n     tls: {certificateRefs: [{name: gw-cert}]}}\n/
    or die;
put_file($in, 'base.yaml', $more);
ok(wait_for(sub { count_in_log(qr/nginx reloaded: workers [\d ]+ -> [\d ]+ \(listeners\)/) == 1 }, 30),
   'a listener added: a reload, for the listeners') or diag slurp($log);
is(presented(), 'wildcard leaf', 'after it, the renewed certificate');
put_file($in, 'secret.yaml', cert_secret_yaml('leaf'));
ok(wait_for(sub { presented() eq 'leaf leaf' }, 10), 'and a renewal after the reload is pushed too') or diag presented();
is(count_in_log(qr/nginx reloaded/), 1, 'with no other reload');

kill 'TERM', $run;
waitpid $run, 0;
