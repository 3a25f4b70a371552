# gateway2nginx run: the Secret of a BackendTLSPolicy's own client
# certificate (option gateway2nginx.io/client-certificate) renewed reaches
# the backend's next handshake through the upstream API with no reload,
# applied alone (only the policy reading it computed again): the same
# workers, a client connection opened before served on, OUTDIR catching
# up, and a reload for something else presents it too. A Secret that a
# policy the API cannot reach (one skipping verification) presents as well
# is the configuration's: renewing it is a reload.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;

plan 'no_plan';
setup();
start_backends();
my $dir = servroot();
my $port = server_port() + 20;  # the HTTP listener's 80
my $offset = $port - 80;
my $api_port = server_port() + 18;
my $health_port = server_port() + 17;

# Service NAME, whose backend asks for a client certificate, and its
# policy presenting Secret SECRET's, with VALIDATION (lines of it)
sub backend_yaml {
    my ($name, $secret, $validation) = @_;
    return service_manifests($name, 'mtls', $validation, "gateway2nginx.io/client-certificate: $secret");
}
sub route_yaml {
    my ($name) = @_;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: $name, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  hostnames: [$name.example]\n"
         . "  rules: [{backendRefs: [{name: $name, port: 443}]}]\n";
}
(my $base = gateway_manifests()) =~ s/(  gatewayClassName: ours\n)/$1  tls: {backend: {validation: {mode: AllowInsecureVerification}}}\n/
    or die 'no Gateway to allow skipping verification on';
my $in = "$dir/in";
my $out = "$dir/out";
make_path($in);
put_file($in, 'base.yaml', $base);
put_file($in, 'web.yaml', backend_yaml('web', 'client', "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n")
                          . route_yaml('web'));
put_file($in, 'secret.yaml', tls_secret_yaml('client', 'leaf', 'ns'));

my $log = "$dir/run.log";
sub count_in_log { count_in($log, shift) }
my $run = start_file_run($log, $in, $out, api_port => $api_port, offset => $offset,
                         args => ['--health-listen', "127.0.0.1:$health_port"]);
sub trust_updates { run_metric($health_port, qr/gateway2nginx_trust_updates_total/) }
my %fingerprint = map { $_ => Test::GatewayTLS::client_fingerprint($_) } qw(leaf spiffe);
my %named = reverse %fingerprint;
# the client certificate the backend of HOST was shown, by name, on a new
# connection to nginx
sub shown {
    my ($host) = @_;
    my ($code, undef, $body) = http_request($port, '/', "$host.example");
    return "$code " . ($body =~ /client_verify=SUCCESS client_fingerprint=(\S+)/ ? $named{$1} // $1 : $body // '');
}
ok(wait_for(sub { shown('web') eq '200 leaf' }, 30), 'the backend is shown the policy\'s own certificate')
    or diag shown('web'), slurp($log);
like(slurp("$out/http.conf"), qr/gateway_tls_upstream_api/, 'the upstream API is on');
my $master = slurp("$out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);

# a client's connection opened before the renewal, kept open across it
my $kept = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 10) or die "connect: $!";
sub ask_kept {
    my $answer = ask_kept_alive($kept, $kept, 'web.example', '/', qr/client_fingerprint=(\S+)/);
    $answer =~ s/ (\S+)$/' ' . ($named{$1} \/\/ $1)/e;
    return $answer;
}
is(ask_kept(), '200 leaf', 'a connection opened before the renewal');

# ---- the Secret renewed: pushed, no reload -----------------------------------------
for my $renewal (['spiffe', 'renewed'], ['leaf', 'and back']) {
    my ($name, $what) = @$renewal;
    my ($pushed, $alone) = (count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/), trust_updates());
    put_file($in, 'secret.yaml', tls_secret_yaml('client', $name, 'ns'));
    ok(wait_for(sub { count_in_log(qr/trust of 1 policy\(ies\) pushed to nginx, no reload/) > $pushed }, 30)
       && wait_for(sub { shown('web') eq "200 $name" }, 30), "$what: the backend's next handshake is shown it")
        or diag shown('web'), slurp($log);
    is(trust_updates(), $alone + 1, "$what: applied alone, the policies reading the Secret computed again");
    is(ask_kept(), "200 $name", "$what: on the connection opened before too");
}
is(worker_pids($master), $workers, 'nginx never reloaded: the same workers');
is(count_in_log(qr/nginx reloaded/), 0, 'gateway2nginx reloaded nothing');

put_file($in, 'secret.yaml', tls_secret_yaml('client', 'spiffe', 'ns'));
ok(wait_for(sub { shown('web') eq '200 spiffe' }, 30), 'renewed once more') or diag shown('web');
my $file = "$out/certs/policy-client_ns_client.crt";
my $spiffe = certificate_sha256(certs_dir() . '/spiffe.crt');
ok(wait_for(sub { certificate_sha256($file) eq $spiffe }, 30), 'OUTDIR catches up: its file holds it');
close $kept;

# ---- a reload for something else presents it too ------------------------------------
(my $more = $base) =~ s/(  - \{name: http, port: 80, protocol: HTTP\}\n)/$1  - {name: http2, port: 81, protocol: HTTP}\n/
    or die 'no listener to add one beside';
put_file($in, 'base.yaml', $more);
ok(wait_for(sub { count_in_log(qr/nginx reloaded: workers [\d ]+ -> [\d ]+ \(listeners\)/) == 1 }, 30),
   'a listener added: a reload, for the listeners') or diag slurp($log);
is(shown('web'), '200 spiffe', 'after it, the renewed certificate');
put_file($in, 'secret.yaml', tls_secret_yaml('client', 'leaf', 'ns'));
ok(wait_for(sub { shown('web') eq '200 leaf' }, 30), 'and a renewal after the reload is pushed too') or diag shown('web');
is(count_in_log(qr/nginx reloaded/), 1, 'with no other reload');

# ---- a Secret a policy the API cannot reach presents too: a reload ----------------------
put_file($in, 'lab.yaml', backend_yaml('lab', 'client', "    mode: InsecureSkipVerification\n") . route_yaml('lab'));
ok(wait_for(sub { shown('lab') eq '200 leaf' }, 30), 'a policy skipping verification presents the same Secret')
    or diag shown('lab'), slurp($log);
put_file($in, 'secret.yaml', tls_secret_yaml('client', 'spiffe', 'ns'));
ok(wait_for(sub { count_in_log(qr/nginx reloaded: workers [\d ]+ -> [\d ]+ \(certificates\)/) == 1 }, 30),
   'renewing it is a reload, for the certificates') or diag slurp($log);
ok(wait_for(sub { shown('lab') eq '200 spiffe' && shown('web') eq '200 spiffe' }, 30),
   'and both backends are shown the renewed one') or diag shown('lab'), ' ', shown('web');

kill 'TERM', $run;
waitpid $run, 0;
