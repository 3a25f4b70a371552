# Backends new to nginx with no reload (issue 54): a spare upstream{} (no
# live server, a policy that trusts nothing) becomes a backend when one PUT
# gives it servers, the trust its BackendTLSPolicy names (CA, hostname,
# subject alt names) and a route table rule that sends to it. The name the
# push gives is the one sent (SNI) and verified; other names, another CA,
# a hostname for a policy whose name sent is proxy_ssl_name's, are refused
# or fail closed; every worker takes each change; a reload keeps it all, and
# pushing the configured trust back makes the upstream a spare again.
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
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
my ($leaf, $wrongsan, $untrusted) = map { backend_port($_) } qw(leaf wrongsan untrusted);
my $ca = slurp("$certs/ca.crt");
my $nothing = 'sha256-spki:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';  # no key hashes to it

make_path("$dir/gw/logs", "$dir/gw/tmp");
my $spares = join '', map { <<"EOF" } 0 .. 1;
    upstream spare_$_ {
        zone spares 64k;
        server 127.0.0.1:1 down;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_pin $nothing;
        proxy_ssl_policy_name spare|$_;
        proxy_ssl_policy_hostname spare-$_.invalid;
    }
EOF
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
    gateway_tls_upstream_state_zone 1m;
$spares
    server {
        listen 127.0.0.1:$port reuseport;
        proxy_ssl_server_name on;
        proxy_ssl_name \$upstream_ssl_policy_hostname;
        proxy_ssl_session_reuse on;
        add_header X-Verify \$upstream_ssl_verify always;
        add_header X-Worker \$pid always;
        location / {
            gateway_tls_routes main;
            proxy_pass https://gateway_tls_routes;
        }
        # a policy set in a location: the name sent is proxy_ssl_name's
        location /loc {
            proxy_ssl_verify_mode strict;
            proxy_ssl_verify_ca $certs/ca.crt;
            proxy_ssl_policy_name ns/loc;
            proxy_pass https://127.0.0.1:$leaf;
        }
        location /api {
            gateway_tls_upstream_api;
            gateway_tls_upstream_api_allow 127.0.0.1;
            gateway_tls_upstream_api_token_file @{[operator_token_file()]};
            client_body_buffer_size 1m;
            client_max_body_size 1m;
        }
    }
}
EOF
start_nginx("$dir/gw", 'nginx.conf', $port);
my $master = slurp("$dir/gw/logs/nginx.pid");
chomp $master;
my $workers = worker_pids($master);
is(scalar(split ' ', $workers), 2, "two workers ($workers)");

my $json = JSON::PP->new->canonical;
sub api { my ($method, $body) = @_; return api_request($port, '/api', $method, $body) }
sub put { my %body = @_; return api('PUT', $json->encode(\%body)) }
sub route_to {
    my ($backend) = @_;
    return {actions => [{backends => [{backend => $backend}]}], matches => [{action => 0}]};
}
# HOST asked 20 times on new connections: "STATUS VERIFY BACKEND SNI" of
# each answer, joined where all agree, and how many workers answered
sub answers {
    my ($host) = @_;
    my (%seen, %by);
    for (1 .. 20) {
        my ($code, $h, $body) = request($port, 'GET', '/x', "Host: $host");
        my ($backend, $sni) = ($body // '') =~ /backend=(\S+) sni=(\S*)/;
        $seen{join ' ', $code, $h->{'x-verify'} || '-', $backend // '-', $sni // '-'}++;
        $by{$h->{'x-worker'} // '?'}++;
    }
    return (join(' | ', sort keys %seen), scalar keys %by);
}
sub policy_listed {
    my ($name) = @_;
    my $list = eval { decode_json((api('GET'))[1]) } // {};
    return $list->{policies}{$name} // {};
}

# ---- a spare is a backend that serves nothing -------------------------------
my ($code, $reply) = put(routes => {main => {'new.example' => route_to('spare_0')}});
is($code, 200, 'a rule that sends to a spare is taken') or diag $reply;
like((answers('new.example'))[0], qr/^50[23] NONE - -$/, 'the spare has no live server: 5xx, no handshake');
is(policy_listed('spare|0')->{hostname}, 'spare-0.invalid', 'the spare policy lists its configured hostname');

# ---- one PUT makes it a backend: servers, trust, names --------------------------
($code, $reply) = put(upstreams => {spare_0 => {servers => [{address => "127.0.0.1:$leaf"}]}},
                      policies => {'spare|0' => {ca => $ca, hostname => 'abc.example.com'}});
is($code, 200, 'servers and a policy naming the peer, for the spare') or diag $reply;
my ($got, $answered) = answers('new.example');
is($got, '200 SUCCESS leaf abc.example.com', 'it serves, verified against the CA pushed, the hostname pushed sent as SNI');
is($answered, 2, 'from both workers');
my $listed = policy_listed('spare|0');
is("$listed->{source} $listed->{hostname}", 'api abc.example.com', 'the list says where the policy and its hostname come from');

# the name pushed is the one verified: a backend presenting another fails closed
($code, $reply) = put(upstreams => {spare_0 => {servers => [{address => "127.0.0.1:$wrongsan"}]}});
is($code, 200, 'the spare now points at a backend of another name') or diag $reply;
is((answers('new.example'))[0], '502 FAILED:name - -', 'its certificate does not name abc.example.com: refused');

# subject alt names pushed are verified instead of the hostname
($code, $reply) = put(policies => {'spare|0' => {ca => $ca, hostname => 'abc.example.com',
                                                subject_alt_names => ['dns:wrong.example.com']}});
is($code, 200, 'a subject alt name pushed') or diag $reply;
is((answers('new.example'))[0], '200 SUCCESS wrongsan abc.example.com', 'the SAN pushed admits it, the hostname still sent');
($code, $reply) = put(upstreams => {spare_0 => {servers => [{address => "127.0.0.1:$leaf"}]}},
                      policies => {'spare|0' => {ca => $ca, hostname => 'other.example.com',
                                                subject_alt_names => ['uri:spiffe://abc.example.com/test-identity']}});
is($code, 200, 'another hostname and a URI SAN') or diag $reply;
is((answers('new.example'))[0], '200 SUCCESS leaf other.example.com', 'the URI SAN admits the leaf, the new hostname is sent');
($code, $reply) = put(policies => {'spare|0' => {ca => $ca, hostname => 'other.example.com',
                                                subject_alt_names => ['uri:spiffe://elsewhere/id']}});
is((answers('new.example'))[0], '502 FAILED:san - -', 'a SAN the leaf does not hold: refused at once');

# the CA pushed is the only one trusted
($code, $reply) = put(upstreams => {spare_0 => {servers => [{address => "127.0.0.1:$untrusted"}]}},
                      policies => {'spare|0' => {ca => $ca, hostname => 'abc.example.com'}});
is((answers('new.example'))[0], '502 FAILED:chain - -', 'a backend signed by another CA: refused');

# ---- the second spare, all in one body with its route ---------------------------
($code, $reply) = put(routes => {main => {'second.example' => route_to('spare_1')}},
                      upstreams => {spare_1 => {servers => [{address => "127.0.0.1:$leaf"}]}},
                      policies => {'spare|1' => {ca => $ca, hostname => 'abc.example.com',
                                                subject_alt_names => ['dns:other.example.com']}});
is($code, 200, 'a route, its servers and its policy in one PUT') or diag $reply;
is((answers('second.example'))[0], '200 SUCCESS leaf abc.example.com', 'the new backend serves at once');

# ---- refusals change nothing -------------------------------------------------------
my $before = policy_listed('spare|1');
($code, $reply) = put(policies => {'ns/loc' => {ca => $ca, hostname => 'abc.example.com'}});
is($code, 409, 'a hostname for a policy set in a location: 409');
like($reply, qr/policies\[\\"ns\/loc\\"\]\.hostname: the policy is also set where the name sent is proxy_ssl_name's/,
     'naming the field and why') or diag $reply;
($code, $reply) = put(policies => {'spare|1' => {ca => $ca, hostname => 'a b'}});
is($code, 400, 'a hostname that is no DNS name: 400') or diag $reply;
($code, $reply) = put(policies => {'spare|1' => {ca => $ca, subject_alt_names => ['dns~(']}});
is($code, 400, 'a SAN pattern that does not compile: 400') or diag $reply;
like($reply, qr/subject_alt_names\[0\]/, 'naming the SAN') or diag $reply;
($code, $reply) = put(policies => {'spare|1' => {ca => $ca, hostname => 'x.example'}, 'ns/loc' => {ca => $ca, hostname => 'x.example'}});
is($code, 409, 'one refused policy refuses the body');
is($json->encode(policy_listed('spare|1')), $json->encode($before), 'and nothing changed');
is((answers('second.example'))[0], '200 SUCCESS leaf abc.example.com', 'the backend serves as before');
is((request($port, 'GET', '/loc', 'Host: x'))[1]{'x-verify'}, 'FAILED:name', 'the location policy verifies the address it proxies to');
($code, $reply) = put(policies => {'ns/loc' => {ca => $ca, subject_alt_names => ['dns:abc.example.com']}});
is($code, 200, 'SANs alone may go to a policy set in a location') or diag $reply;
is((request($port, 'GET', '/loc', 'Host: x'))[1]{'x-verify'}, 'SUCCESS', 'and it verifies by them');

is(worker_pids($master), $workers, 'all of it with no reload: the same workers');

# ---- a reload keeps what was pushed; the configured trust makes a spare again --------
sub replaced {
    my %old = map { $_ => 1 } split ' ', shift;
    my @now = split ' ', worker_pids($master);
    return @now && !grep { $old{$_} } @now;
}
system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null") == 0 or diag 'reload failed';
ok(wait_for(sub { replaced($workers) }), 'a reload makes new workers');
$listed = policy_listed('spare|1');
is("$listed->{source} $listed->{hostname} @{$listed->{subject_alt_names} // []}", 'api abc.example.com dns:other.example.com',
   'the new workers keep the names pushed');
is((answers('second.example'))[0], '200 SUCCESS leaf abc.example.com', 'and serve by them');

($code, $reply) = put(policies => {'spare|1' => {pins => [$nothing]}});
is($code, 200, 'the configured trust pushed back') or diag $reply;
$listed = policy_listed('spare|1');
is("$listed->{source} $listed->{hostname}", 'configuration spare-1.invalid', 'the policy is the spare it was configured as');
is((answers('second.example'))[0], '502 FAILED:pin - -', 'and trusts nothing again');
