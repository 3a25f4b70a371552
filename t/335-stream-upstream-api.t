# Endpoint churn without reloads for stream upstreams (issue 20):
# gateway_tls_upstream_api replaces the servers of a stream upstream{} with
# a zone ("stream_upstreams"), as it does http's. A TCP stream opened before
# the first change (a slow download through the stream proxy) is still
# open after 60 changes; every new endpoint serves within 1 s; a removed
# one gets no new connection; the workers never change; a pushed endpoint
# is verified under the upstream's policy, whose trust is replaced at run
# time too; bad input changes nothing; a reload keeps the last list pushed.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;
use JSON::PP;
use Time::HiRes qw(sleep time);

plan 'no_plan';
setup();
my $dir = servroot();
my $certs = certs_dir();
my $port = server_port();                 # the gateway's http: the API
my @ports = map { $port + $_ } 1 .. 8;    # the Service's endpoints
my $wrongsan = $port + 9;                 # an endpoint whose certificate the policy refuses
my $slow_endpoint = $port + 10;           # the first endpoint: streams a slow download
my $slow_http = $port + 11;               # behind it
my $stream = $port + 12;                  # the gateway's stream listener
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
(my $stream_module = $module) =~ s/ngx_http_gateway_tls_module\.so$/ngx_stream_gateway_tls_module.so/;
my $slow_bytes = 40000;                   # at 2 KiB/s: about 20 s

# ---- the endpoints ----------------------------------------------------------
make_path("$dir/backends/logs", "$dir/backends/tmp", "$dir/backends/html", "$dir/gw/logs", "$dir/gw/tmp");
spit("$dir/backends/html/slow", 'x' x $slow_bytes);
my $endpoints = join '', map { <<"EOF" } @ports;
    server {
        listen 127.0.0.1:$_ ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        return "port=$_\\n";
    }
EOF
my $stream_load = nginx_stream_module();
spit("$dir/backends/nginx.conf", <<"EOF");
$stream_load
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 1024; }
stream {
    log_format ports '\$server_port \$msec';
    access_log logs/access.log ports;
$endpoints
    server {
        listen 127.0.0.1:$wrongsan ssl;
        ssl_certificate $certs/wrongsan.crt;
        ssl_certificate_key $certs/wrongsan.key;
        return "port=$wrongsan\\n";
    }
    server {
        listen 127.0.0.1:$slow_endpoint ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        proxy_pass 127.0.0.1:$slow_http;
    }
}
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    server {
        listen 127.0.0.1:$slow_http;
        location /slow { root html; limit_rate 2k; }
    }
}
EOF
start_nginx("$dir/backends", 'nginx.conf', $ports[-1]);

# ---- the gateway ------------------------------------------------------------
sub gateway_conf {
    my $configured = shift;
    return <<"EOF";
load_module $module;
$stream_load
load_module $stream_module;
worker_processes 2;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 1024; }
stream {
    log_format verdict '\$upstream_addr \$upstream_ssl_verify';
    access_log logs/stream.log verdict;
    upstream svc {
        zone svc 256k;
        server 127.0.0.1:$configured;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $certs/ca.crt;
        proxy_ssl_policy_name ns/svc;
        proxy_ssl_policy_hostname abc.example.com;
    }
    upstream tiny { zone tiny 32k; server 127.0.0.1:$ports[0]; }
    upstream nozone { server 127.0.0.1:$ports[0]; }
    upstream hashed { zone hashed 64k; hash \$remote_addr; server 127.0.0.1:$ports[0]; }
    server {
        listen 127.0.0.1:$stream;
        proxy_pass svc;
        proxy_ssl on;
        proxy_ssl_server_name on;
        proxy_ssl_name \$upstream_ssl_policy_hostname;
        proxy_next_upstream off;
    }
    server { listen 127.0.0.1:@{[$port + 13]}; proxy_pass tiny; proxy_ssl on; }
    server { listen 127.0.0.1:@{[$port + 14]}; proxy_pass nozone; proxy_ssl on; }
    server { listen 127.0.0.1:@{[$port + 15]}; proxy_pass hashed; proxy_ssl on; }
}
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    gateway_tls_upstream_state_zone 64k;
    upstream websvc { zone websvc 64k; server 127.0.0.1:$ports[0]; }
    server {
        listen 127.0.0.1:$port;
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
}
spit("$dir/gw/nginx.conf", gateway_conf($slow_endpoint));
start_nginx("$dir/gw", 'nginx.conf', $stream);
my $master = slurp("$dir/gw/logs/nginx.pid");
chomp $master;
sub workers { worker_pids($master) }
my $workers = workers();
is(scalar(split ' ', $workers), 2, "two workers ($workers)");

sub api { my ($method, $body) = @_; return api_request($port, '/api', $method, $body) }
sub servers_json {
    '{"stream_upstreams":{"svc":{"servers":[' . join(',', map { qq({"address":"127.0.0.1:$_"}) } @_) . ']}}}'
}
# the endpoint a new TCP connection through the gateway reaches
sub endpoint {
    my $listen = shift // $stream;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $listen, Proto => 'tcp', Timeout => 2)
        or return '(connect)';
    $sock->timeout(2);
    my $line = <$sock> // '';
    close $sock;
    return $line =~ /port=(\d+)/ ? $1 : '(closed)';
}

# ---- a stream open from before the first change ----------------------------
my $slow_out = "$dir/slow.out";
my $slow = fork // die;
if ($slow == 0) {
    exec("curl -s -N --max-time 120 -o $slow_out http://127.0.0.1:$stream/slow");
}
wait_for(sub { (-s $slow_out // 0) > 0 }, 10);
my $started = -s $slow_out // 0;
ok($started > 0, "the slow download streams through the stream proxy ($started bytes)");

# ---- 60 changes: scale up and down, every 10th a rollout onto new endpoints --
my @lists = churn_lists(60, 10, 4, \@ports, $slow_endpoint);
my ($joined, $strays) = endpoint_membership($slow_endpoint);
my ($accepted, $late, $strays_seen) = (0, 0, 0);
my $first_change = time;
for my $list (@lists) {
    my ($code) = api('PUT', servers_json(@$list));
    my $now = time;
    $accepted++ if $code == 200;
    my %in = map { $_ => 1 } @$list;
    my @new = $joined->($now, @$list);
    my %waiting = map { $_ => 1 } @new;
    while (%waiting && time - $now < 1) {
        my $got = endpoint();
        $strays_seen++ unless $in{$got};
        delete $waiting{$got};
    }
    $late += scalar keys %waiting;
}
is($accepted, 60, 'the API accepted 60 changes of the stream upstream');
is($late, 0, 'every new endpoint served a new connection within 1 s of its change');
is($strays_seen, 0, 'every new connection reached an endpoint of the list current at its start');
is(workers(), $workers, 'no reload: the same worker processes served every change');
my $slow_alive = kill(0, $slow) && waitpid($slow, POSIX::WNOHANG()) == 0;
ok($slow_alive, 'the stream open since before the first change is still open after the last');
waitpid($slow, 0);
is($? >> 8, 0, 'and it ends complete');
is(-s $slow_out, $slow_bytes, "with all its $slow_bytes bytes");

# no connection reached an endpoint outside its time in the list (before
# the first change, only start_nginx's probe of the last port connected)
my ($lines, @strays) = $strays->("$dir/backends/logs/access.log", 0.2, $first_change, $wrongsan, $slow_endpoint);
ok($lines >= 60, "the endpoints logged the connections ($lines)");
is_deeply(\@strays, [], 'a removed endpoint got no connection after its removal');
my $log = slurp("$dir/gw/logs/error.log");
unlike($log, qr/SIGHUP|reconfiguring/, 'nginx was never reloaded');
like($log, qr/gateway_tls: stream upstream "svc" now has 2 servers \(from the API, entry \d+\)/, 'each change is logged');
my @bad = grep { /\[(?:alert|crit|emerg)\]|signal \d+|exited on/ } split /\n/, $log;
is_deeply(\@bad, [], 'no alert, crit or crash in the error log');

# ---- pushed endpoints are verified as configured ones are -------------------
api('PUT', servers_json($wrongsan));
my $stream_log = -s "$dir/gw/logs/stream.log";
is(endpoint(), '(closed)', 'a pushed endpoint whose certificate the policy refuses gets no byte through');
# the stream log's line is written when the session ends: waited for
sub stream_log_since { my $from = shift; substr(slurp("$dir/gw/logs/stream.log"), $from) }
ok(wait_for(sub { stream_log_since($stream_log) =~ /127\.0\.0\.1:$wrongsan FAILED:name/ }, 5),
   'refused by the stream policy, for the name');
api('PUT', servers_json($ports[5]));
is(endpoint(), $ports[5], 'and a verified one serves');
ok(wait_for(sub { stream_log_since($stream_log) =~ /127\.0\.0\.1:$ports[5] SUCCESS/ }, 5), 'verified');

# ---- the stream policy's trust, replaced at run time ---------------------------
sub trust_json { JSON::PP->new->encode({policies => {'ns/svc' => {ca => join '', map { slurp("$certs/$_") } @_}}}) }
my ($trusted, $trust_reply) = api('PUT', trust_json('unrelated-ca.crt'));
is($trusted, 200, 'the stream policy\'s trust pushed: a CA that signed no endpoint') or diag $trust_reply;
$stream_log = -s "$dir/gw/logs/stream.log";
my @refused = map { endpoint() } 1 .. 12;
is_deeply(\@refused, [('(closed)') x 12], 'every new connection at once, whichever worker takes it, is refused under it');
wait_for(sub { my @v = stream_log_since($stream_log) =~ /FAILED:chain/g; @v >= 12 }, 5);
my @verdicts = stream_log_since($stream_log) =~ /FAILED:chain/g;
is(scalar @verdicts, 12, 'for the chain');
my (undef, $policies) = api('GET');
like($policies, qr/"policies":\{"ns\/svc":\{"generation":\d+,"source":"api","ca":"api:sha256:[0-9a-f]+"/,
     'GET lists the stream policy\'s pushed trust');
api('PUT', trust_json('unrelated-ca.crt', 'ca.crt'));
is(join(' ', map { endpoint() } 1 .. 6), join(' ', ($ports[5]) x 6), 'a bundle of both CAs: served again');
is(workers(), $workers, 'no reload for either');

# ---- no servers, and back ----------------------------------------------------
my ($emptied) = api('PUT', servers_json());
is($emptied, 200, 'an empty list is taken');
like((api('GET'))[1], qr/"stream_upstreams":\{"svc":\{"generation":\d+,"source":"api","servers":\[\]\}/,
     'GET lists no servers');
is(endpoint(), '(closed)', 'with no servers a connection is closed');
api('PUT', servers_json($ports[5]));
is(endpoint(), $ports[5], 'servers pushed again serve at once');

# ---- bad input changes nothing -------------------------------------------------
my (undef, $listed) = api('GET');
like($listed, qr/"stream_upstreams":\{"svc":\{"generation":\d+,"source":"api","servers":\[\{"address":"127.0.0.1:$ports[5]"/,
     'GET lists the stream upstream and its current servers');
like($listed, qr/"upstreams":\{"websvc":\{"generation":0,"source":"configuration"/, 'apart from http\'s');
my @refusals = (
    ['{"stream_upstreams": {"svc": {"servers": [}}}', 400, qr/JSON line 1, column 43: Invalid value\./, 'malformed JSON'],
    ['{"stream_upstreams": {"websvc": {"servers": []}}}', 404, qr/no stream upstream \\"websvc\\"/,
     'an http upstream\'s name among the stream upstreams'],
    ['{"upstreams": {"svc": {"servers": []}}}', 404, qr/no upstream \\"svc\\"/, 'a stream upstream among http\'s'],
    ['{"stream_upstreams": {"svc": {"servers": [{"address": "10.0.0.1:0"}]}}}', 400,
     qr/stream_upstreams\[\\"svc\\"\]\.servers\[0\]\.address: .*the port must be 1 to 65535/, 'a bad address'],
    ['{"stream_upstreams": {"nozone": {"servers": []}}}', 409, qr/stream upstream \\"nozone\\" has no zone/,
     'an upstream without a zone'],
    ['{"stream_upstreams": {"hashed": {"servers": []}}}', 409, qr/balances by hash/, 'a hash upstream'],
    ['{"stream_upstreams": {"svc": {"servers": []}, "tiny": {"servers": ['
         . join(',', map { qq({"address":"127.0.0.1:$_"}) } 1 .. 2000) . ']}}}',
     507, qr/stream upstream \\"tiny\\": its zone \\"tiny\\" has no room for 2000 servers; nothing was changed/,
     'a zone too small, with another upstream'],
    ['{"upstreams": {"websvc": {"servers": []}}, "stream_upstreams": {"nope": {"servers": []}}}', 404,
     qr/no stream upstream \\"nope\\"/, 'an unknown stream upstream beside a good http one'],
);
for my $r (@refusals) {
    my ($body, $status, $text, $what) = @$r;
    my ($got, $reply) = api('PUT', $body);
    is($got, $status, "$what: $status");
    like($reply, $text, "$what: says why");
}
is((api('GET'))[1], $listed, 'after every refusal the running lists are unchanged');
is(endpoint(), $ports[5], 'and the stream upstream serves');
is(endpoint($port + 13), $ports[0], 'the other upstream of the refused request too');

# ---- a reload keeps the last list pushed --------------------------------------
system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null") == 0 or diag 'reload failed';
ok(wait_for(sub { my %old = map { $_ => 1 } split ' ', $workers; !grep { $old{$_} } split ' ', workers() }, 10),
   'a deliberate reload makes new workers');
like((api('GET'))[1], qr/"stream_upstreams":\{"svc":\{"generation":1,"source":"api","servers":\[\{"address":"127.0.0.1:$ports[5]"/,
     'a reload keeps the servers last pushed');
is(endpoint(), $ports[5], 'and they serve');
spit("$dir/gw/nginx.conf", gateway_conf($ports[7]));
my $before_reload = workers();
system("nginx -p $dir/gw/ -c nginx.conf -s reload 2>/dev/null");
wait_for(sub { my %old = map { $_ => 1 } split ' ', $before_reload; !grep { $old{$_} } split ' ', workers() }, 10);
ok(wait_for(sub { (api('GET'))[1] =~ /"stream_upstreams":\{"svc":\{"generation":0,"source":"configuration","servers":\[\{"address":"127.0.0.1:$ports[7]"/ }, 10),
   'a reload whose configuration changed the servers serves those');
is(endpoint(), $ports[7], 'and they serve');

stop_nginx("$dir/gw");
stop_nginx("$dir/backends");
