# Trust changes without reload (issue 20, part 3): gateway_tls_upstream_api
# replaces what a named policy trusts (its CA bundle, its pins) in every
# worker at run time. The next request in each worker verifies against the
# new trust alone: a keepalive connection or TLS session made under the old
# trust never carries over. Bad input changes nothing; a reload keeps the
# trust last pushed unless the configured trust changed; a push that a
# worker of the replaced configuration takes (its body arriving after the
# reload) reaches the new workers, servers and trust alike.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use Time::HiRes qw(sleep);
use JSON::PP;
use IO::Socket::INET;

plan 'no_plan';
setup();
start_backends();
my $dir = servroot();
my $certs = certs_dir();
my $port = server_port();
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
my $leaf = backend_port('leaf');            # signed by ca (through inter)
my $untrusted = backend_port('untrusted');  # signed by unrelated-ca, the same name
my $ca = slurp("$certs/ca.crt");
my $unrelated_ca = slurp("$certs/unrelated-ca.crt");

# the configured CA lives in a file of the test's own, to change it for a reload
make_path("$dir/gw/logs", "$dir/gw/tmp");
spit("$dir/gw/ca.pem", $ca);
my $policy = <<"EOF";
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $dir/gw/ca.pem;
        proxy_ssl_policy_name ns/web-tls;
        proxy_ssl_policy_hostname abc.example.com;
EOF
my $pin_leaf = spki_pin('leaf');
spit("$dir/gw/nginx.conf", <<"EOF");
load_module $module;
worker_processes 2;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    proxy_ssl_verify_insecure allow;
    gateway_tls_upstream_state_zone 128k;
    upstream to_leaf { server 127.0.0.1:$leaf; keepalive 8;
$policy    }
    upstream to_untrusted { server 127.0.0.1:$untrusted; keepalive 8;
$policy    }
    # no keepalive: a second request resumes the first one's TLS session
    upstream to_leaf_sessions { server 127.0.0.1:$leaf;
$policy    }
    upstream pinned { server 127.0.0.1:$leaf;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $pin_leaf;
        proxy_ssl_policy_name ns/pinned;
        proxy_ssl_policy_hostname abc.example.com;
    }
    # servers replaceable at run time too, for a push that straddles a reload
    upstream zoned { zone zoned 64k; server 127.0.0.1:$leaf; }
    upstream skipped { server 127.0.0.1:$untrusted;
        proxy_ssl_verify_mode skip;
        proxy_ssl_policy_name ns/skipped;
    }
    server {
        listen 127.0.0.1:$port reuseport;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_ssl_server_name on;
        proxy_ssl_name \$upstream_ssl_policy_hostname;
        proxy_ssl_session_reuse on;
        add_header X-Verify \$upstream_ssl_verify always;
        add_header X-Worker \$pid always;
        location /leaf { proxy_pass https://to_leaf; }
        location /untrusted { proxy_pass https://to_untrusted; }
        location /sessions { proxy_pass https://to_leaf_sessions; }
        location /pinned { proxy_pass https://pinned; }
        location /skipped { proxy_pass https://skipped; }
        location /zoned { proxy_pass https://zoned; add_header X-Upstream-Addr \$upstream_addr always; }
        location /api {
            gateway_tls_upstream_api;
            gateway_tls_upstream_api_allow 127.0.0.1;
            gateway_tls_upstream_api_token_file @{[operator_token_file()]};
            client_body_buffer_size 2m;
            client_max_body_size 2m;
        }
    }
}
EOF
start_nginx("$dir/gw", 'nginx.conf', $port);
my $master = slurp("$dir/gw/logs/nginx.pid");
chomp $master;
my $workers = worker_pids($master);

sub api { my ($method, $body) = @_; return api_request($port, '/api', $method, $body) }
my $json = JSON::PP->new->canonical;
sub push_trust { my %policies = @_; return api('PUT', $json->encode({policies => \%policies})) }
# PATH asked 30 times on new connections: "STATUS VERIFY" of each answer,
# joined where all agree, and the workers that answered
sub answers {
    my $path = shift;
    my (%seen, %by);
    for (1 .. 30) {
        my ($code, $h) = http_request($port, $path, 'localhost');
        $seen{"$code " . ($h->{'x-verify'} // '-')}++;
        $by{$h->{'x-worker'} // '?'}++;
    }
    return (join(' | ', sort keys %seen), scalar keys %by);
}
sub log_since { my $from = shift; return substr(slurp("$dir/gw/logs/error.log"), $from) }

# ---- as configured ----------------------------------------------------------
my ($got, $answered) = answers('/leaf');
is($got, '200 SUCCESS', 'as configured: the backend signed by the CA serves');
is($answered, 2, 'from both workers');
is((answers('/untrusted'))[0], '502 FAILED:chain', 'and the one signed by another CA does not');
answers('/sessions');   # a TLS session kept in each worker
is((answers('/pinned'))[0], '200 SUCCESS', 'the pinned policy serves its key');

# ---- a new CA: every worker, the next request --------------------------------
my $log_at = -s "$dir/gw/logs/error.log";
my ($code, $reply) = push_trust('ns/web-tls' => {ca => $unrelated_ca});
is($code, 200, 'a new CA bundle for ns/web-tls is taken') or diag $reply;
like($reply, qr/"ns\/web-tls":\{"generation":\d+\}/, 'and says its generation');
($got, $answered) = answers('/leaf');
is($got, '502 FAILED:chain', 'at once, the backend of the old CA fails in every request');
is($answered, 2, 'in both workers');
like(log_since($log_at), qr/not reusing a keepalive connection to "127\.0\.0\.1:$leaf" made under another policy/,
     'its keepalive connections, verified under the old trust, are not reused');
is((answers('/sessions'))[0], '502 FAILED:chain', 'nor its TLS sessions resumed');
is((answers('/untrusted'))[0], '200 SUCCESS', 'and the backend of the new CA serves');
is(worker_pids($master), $workers, 'with no reload: the same workers');
like(log_since($log_at), qr/policy "ns\/web-tls" now trusts "api:sha256:[0-9a-f]{16}" and 0 pins \(from the API, entry \d+\)/,
     'the change is logged');

my (undef, $listed) = api('GET');
like($listed, qr/"ns\/web-tls":\{"generation":[1-9]\d*,"source":"api","ca":"api:sha256:[0-9a-f]{16}","pins":\[\],"hostname":"abc\.example\.com","subject_alt_names":\[\]\}/,
     'GET shows the pushed trust');
like($listed, qr/"ns\/pinned":\{"generation":0,"source":"configuration","ca":"","pins":\["\Q$pin_leaf\E"\],"hostname":"abc\.example\.com","subject_alt_names":\[\]\}/,
     'and the other policy as configured');
unlike($listed, qr/ns\/skipped/, 'a policy that verifies nothing has no trust to list');

($code) = push_trust('ns/web-tls' => {ca => $ca . $unrelated_ca});
is($code, 200, 'a bundle of both CAs (a rotation under way)');
is((answers('/leaf'))[0] . ' / ' . (answers('/untrusted'))[0], '200 SUCCESS / 200 SUCCESS', 'trusts both');

# ---- pins ------------------------------------------------------------------
($code) = push_trust('ns/pinned' => {pins => [spki_pin('untrusted')]});
is($code, 200, 'new pins for ns/pinned');
is((answers('/pinned'))[0], '502 FAILED:pin', 'the old key no longer serves');
($code) = push_trust('ns/pinned' => {pins => [spki_pin('untrusted'), $pin_leaf]});
is((answers('/pinned'))[0], '200 SUCCESS', 'a pin set holding it again serves');
($code) = push_trust('ns/pinned' => {pins => [$pin_leaf]});
like((api('GET'))[1], qr/"ns\/pinned":\{"generation":[1-9]\d*,"source":"configuration","ca":"","pins":\["\Q$pin_leaf\E"\],"hostname":"abc\.example\.com","subject_alt_names":\[\]\}/,
     'pushing what a policy is configured with takes it back to its configuration');
is((answers('/pinned'))[0], '200 SUCCESS', 'which serves');
push_trust('ns/pinned' => {pins => [spki_pin('untrusted'), $pin_leaf]});

# ---- bad input changes nothing --------------------------------------------
(undef, $listed) = api('GET');
my $garbled = "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n";
for my $r (
    [{'ns/nope' => {ca => $ca}}, 404, qr/no policy \\"ns\/nope\\" that verifies/, 'an unknown policy'],
    [{'ns/skipped' => {ca => $ca}}, 404, qr/no policy \\"ns\/skipped\\" that verifies/, 'a policy in mode skip'],
    [{'ns/web-tls' => {ca => $garbled}}, 400, qr/policies\[\\"ns\/web-tls\\"\]: cannot read a PEM certificate from the CA bundle/,
     'a certificate that does not parse'],
    [{'ns/web-tls' => {ca => slurp("$certs/leaf.key")}}, 400, qr/only CERTIFICATE PEM blocks may be given/, 'a private key'],
    [{'ns/web-tls' => {}}, 400, qr/neither was given/, 'no trust at all'],
    [{'ns/web-tls' => {pins => ['sha256-spki:short']}}, 400, qr/pins\[0\]/, 'a bad pin'],
    [{'ns/web-tls' => {ca => $ca}, 'ns/nope' => {ca => $ca}}, 404, qr/ns\/nope/, 'a good policy beside an unknown one'],
) {
    my ($policies, $status, $text, $what) = @$r;
    my ($got_code, $why) = api('PUT', $json->encode({policies => $policies}));
    is($got_code, $status, "$what: $status");
    like($why, $text, "$what: says why");
}
my ($mixed) = api('PUT', $json->encode({policies => {'ns/web-tls' => {ca => $ca}}, upstreams => {nope => {servers => []}}}));
is($mixed, 404, 'a policy beside an unknown upstream: refused as a whole');
is((api('GET'))[1], $listed, 'after every refusal the trust is unchanged');
is((answers('/untrusted'))[0], '200 SUCCESS', 'and serves');

# ---- reloads --------------------------------------------------------------
push_trust('ns/web-tls' => {ca => $unrelated_ca});
system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null") == 0 or diag 'reload failed';
# the workers OLD no longer among the master's: replaced, and gone (a
# leaving one answers the API 503)
sub replaced {
    my %old = map { $_ => 1 } split ' ', shift;
    my @now = split ' ', worker_pids($master);
    return @now && !grep { $old{$_} } @now;
}
ok(wait_for(sub { replaced($workers) }), 'a deliberate reload makes new workers');
like((api('GET'))[1], qr/"ns\/web-tls":\{"generation":[1-9]\d*,"source":"api"/, 'a reload keeps the trust last pushed');
is((answers('/leaf'))[0] . ' / ' . (answers('/untrusted'))[0], '502 FAILED:chain / 200 SUCCESS', 'and it verifies');
like((api('GET'))[1], qr/"ns\/pinned":\{"generation":[1-9]\d*,"source":"api"/, 'so does the other policy');

# the configured CA file changed (same path, other bytes): the configuration wins
spit("$dir/gw/ca.pem", $ca . slurp("$certs/twin-ca.crt"));
my $before_change = worker_pids($master);
system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null");
ok(wait_for(sub { replaced($before_change) }), 'reloaded with the configured CA changed');
ok(wait_for(sub { (api('GET'))[1] =~ /"ns\/web-tls":\{"generation":0,"source":"configuration"/ }),
   'a reload whose configured CA changed verifies against that');
is((answers('/leaf'))[0] . ' / ' . (answers('/untrusted'))[0], '200 SUCCESS / 502 FAILED:chain', 'and it verifies');

# ---- names -------------------------------------------------------------------
# pushed with the trust; the configured ones pushed take the policy back to
# its configuration; kept by a reload that left the configured names as
# they were, given up to one that changed them
push_trust('ns/pinned' => {pins => [$pin_leaf], hostname => 'nowhere.example.com'});
like((api('GET'))[1], qr/"ns\/pinned":\{"generation":[1-9]\d*,"source":"api","ca":"","pins":\["\Q$pin_leaf\E"\],"hostname":"nowhere\.example\.com"/,
     'a hostname pushed');
is((answers('/pinned'))[0], '502 FAILED:name', 'a name the certificate does not have: refused');
push_trust('ns/pinned' => {pins => [$pin_leaf], hostname => 'abc.example.com', subject_alt_names => []});
like((api('GET'))[1], qr/"ns\/pinned":\{"generation":[1-9]\d*,"source":"configuration","ca":"","pins":\["\Q$pin_leaf\E"\],"hostname":"abc\.example\.com","subject_alt_names":\[\]\}/,
     'the names it is configured with: its configuration again');
is((answers('/pinned'))[0], '200 SUCCESS', 'which serves');
push_trust('ns/pinned' => {pins => [$pin_leaf], subject_alt_names => ['dns:nowhere.example.com']});
is((answers('/pinned'))[0], '502 FAILED:san', 'SANs pushed alone: the hostname stays, the SANs are checked');
my $configured = slurp("$dir/gw/nginx.conf");
(my $renamed = $configured) =~ s/(proxy_ssl_policy_name ns\/pinned;\n\s+proxy_ssl_policy_hostname) abc\.example\.com;/$1 other.example.com;/
    or die 'no ns/pinned hostname';
spit("$dir/gw/nginx.conf", $renamed);
$before_change = worker_pids($master);
system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null");
ok(wait_for(sub { replaced($before_change) }), 'reloaded with the configured hostname changed');
ok(wait_for(sub { (api('GET'))[1] =~ /"ns\/pinned":\{"generation":0,"source":"configuration","ca":"","pins":\["\Q$pin_leaf\E"\],"hostname":"other\.example\.com","subject_alt_names":\[\]\}/ }),
   'the configuration wins: the SANs pushed before are gone');
is((answers('/pinned'))[0], '200 SUCCESS', 'and it serves');

# nginx logs a backend its verification refused at crit ("certificate verify failed"): not a fault
# ---- a push that a worker of the replaced configuration takes --------------
# Its body arrives after the reload: the old worker (still serving the
# request) takes it, and the new workers take it from the numbered entry it
# wrote to the state zone, at their next request.
my $body = $json->encode({policies => {'ns/web-tls' => {ca => $unrelated_ca}},
                          upstreams => {zoned => {servers => [{address => "127.0.0.1:$untrusted"}]}}});
my $straddling = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') or die "$!";
my $cut = int(length($body) / 2);
print $straddling "PUT /api HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " . operator_token()
    . "\r\nContent-Length: " . length($body) . "\r\nConnection: close\r\n\r\n"
    . substr($body, 0, $cut);
ok(wait_for(sub { unread_by_server($port, $straddling->sockport) == 0 }),
   'its headers and half its body read, by a worker of this configuration');
my $before_reload = worker_pids($master);
system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null");
my %old = map { $_ => 1 } split ' ', $before_reload;
my $new_workers = '';
wait_for(sub { ($new_workers = join ' ', grep { !$old{$_} } split ' ', worker_pids($master)) =~ /\d \d/ }, 30);
like($new_workers, qr/^\d+ \d+$/, "the reload started new workers ($new_workers) while the push is under way");
print $straddling substr($body, $cut);
my $answer = join '', <$straddling>;
close $straddling;
like($answer, qr{^HTTP/1\.1 200 }, 'the worker of the replaced configuration takes the push');
is((answers('/leaf'))[0] . ' / ' . (answers('/untrusted'))[0], '502 FAILED:chain / 200 SUCCESS',
   'the new workers verify against its trust at their next request');
my %upstream_of;
$upstream_of{(http_request($port, '/zoned', 'localhost'))[1]{'x-upstream-addr'} // '-'}++ for 1 .. 10;
is(join(' ', sort keys %upstream_of), "127.0.0.1:$untrusted", 'and send to its servers');
like(slurp("$dir/gw/logs/error.log"), qr/upstream "zoned" takes the servers pushed through another worker/,
     'taken from the state zone, as the log says');

my @bad = grep { /\[(?:alert|crit|emerg)\]|exited on signal/ && !/certificate verify failed/ }
    split /\n/, slurp("$dir/gw/logs/error.log");
is_deeply(\@bad, [], 'no alert, crit or crash in the error log');
stop_nginx("$dir/gw");
stop_backends();
