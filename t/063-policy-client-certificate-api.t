# A policy's own client certificate (proxy_ssl_policy_certificate)
# replaced at run time through gateway_tls_upstream_api, with the trust it
# comes with: every worker presents the new one from its next connection,
# with no reload (no keepalive connection or TLS session of the old one is
# reused); a GET lists its leaf's SHA-256, never its key; a pair that does
# not belong together changes nothing; a push without one takes the
# configured one back; a reload keeps what was pushed.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use JSON::PP;

plan 'no_plan';
setup();
start_backends();
my $dir = servroot();
my $certs = certs_dir();
my $port = server_port();
my $mtls = backend_port('mtls');  # answers with the SHA-1 of the client certificate it was shown
my $ca = slurp("$certs/ca.crt");

make_path("$dir/gw/logs", "$dir/gw/tmp");
spit("$dir/gw/nginx.conf", own_conf_head(workers => 2, connections => 256, access_log => 'off') . <<"EOF");
    gateway_tls_upstream_state_zone 128k;
    upstream client { server 127.0.0.1:$mtls; keepalive 8;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $certs/ca.crt;
        proxy_ssl_policy_name ns/client;
        proxy_ssl_policy_hostname abc.example.com;
        proxy_ssl_policy_certificate $certs/leaf.crt $certs/leaf.key;
    }
    server {
        listen 127.0.0.1:$port reuseport;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_ssl_session_reuse on;
        add_header X-Worker \$pid always;
        location /client { proxy_pass https://client; }
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
my $master = slurp("$dir/gw/logs/nginx.pid") =~ s/\s+//gr;
my $workers = worker_pids($master);

sub api { my ($method, $body) = @_; return api_request($port, '/api', $method, $body) }
sub push_policy { return api('PUT', JSON::PP->new->canonical->encode({policies => {'ns/client' => {@_}}})) }
sub pair { my $name = shift; return {certificate => slurp("$certs/$name.crt"), key => slurp("$certs/$name.key")} }
sub sha256_of {
    my $out = `openssl x509 -in $certs/$_[0].leaf.crt -noout -fingerprint -sha256`;
    return lc($out =~ /=([0-9A-F:]+)/ ? $1 : '') =~ s/://gr;
}
# /client asked 30 times: the client certificates the backend was shown
# (by name), joined where all agree, and how many workers answered
my %by_sha1 = map { (Test::GatewayTLS::client_fingerprint($_) => $_) } qw(leaf spiffe);
sub shown {
    my (%seen, %by);
    for (1 .. 30) {
        my ($code, $h, $body) = http_request($port, '/client', 'localhost');
        my ($sha1) = ($body // '') =~ /client_fingerprint=(\w*)/;
        $seen{$code == 200 ? $by_sha1{$sha1 // ''} // "unknown:$sha1" : "status $code"}++;
        $by{$h->{'x-worker'} // '?'}++;
    }
    return (join(' | ', sort keys %seen), scalar keys %by);
}

my ($got, $answered) = shown();
is($got, 'leaf', 'as configured: the policy presents its own certificate');
is($answered, 2, 'in both workers');

my ($code, $reply) = push_policy(ca => $ca, client_certificate => pair('spiffe'));
is($code, 200, 'a new client certificate for ns/client, with its trust, is taken') or diag $reply;
($got, $answered) = shown();
is($got, 'spiffe', 'at once, every request presents the new one (no keepalive connection of the old one reused)');
is($answered, 2, 'in both workers');
is(worker_pids($master), $workers, 'with no reload: the same workers');

my (undef, $listed) = api('GET');
my $spiffe = sha256_of('spiffe');
like($listed, qr/"ns\/client":\{"generation":[1-9]\d*,"source":"api",[^{}]*"client_certificate":"$spiffe"\}/,
     'GET lists the SHA-256 of its leaf');
unlike($listed, qr/PRIVATE KEY|BEGIN/, 'and never the key, nor the PEM');

# a pair that does not belong together: refused, nothing changed
($code, $reply) = push_policy(ca => $ca, client_certificate => {certificate => pair('spiffe')->{certificate},
                                                                key => pair('leaf')->{key}});
is($code, 400, 'a key that is not the leaf\'s is refused');
like($reply, qr/policies\[\\"ns\/client\\"\]: client_certificate: /, 'naming the policy and the field');
is((api('GET'))[1], $listed, 'the list is as before');
is((shown())[0], 'spiffe', 'and so is the certificate presented');

# a reload keeps what was pushed (the configuration did not change)
kill 'HUP', $master;
ok(wait_for(sub { my $now = worker_pids($master); $now ne '' && $now ne $workers && !grep { kill 0, $_ } split ' ', $workers }, 30),
   'a reload replaced the workers');
is((shown())[0], 'spiffe', 'their new workers present the pushed certificate, read back from the zone');

# pushed without one: the configured one again
($code, $reply) = push_policy(ca => $ca);
is($code, 200, 'trust pushed without a client certificate') or diag $reply;
is((shown())[0], 'leaf', 'takes the configured one back');
like((api('GET'))[1], qr/"ns\/client":\{"generation":[1-9]\d*,"source":"configuration",[^{}]*"client_certificate":"${\ sha256_of('leaf')}"\}/,
     'and the policy is listed as configured');
