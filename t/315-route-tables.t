# Routes at run time (issue 54): a location with gateway_tls_routes is
# routed by a table the upstream API replaces hostname by hostname, with no
# reload. Hostnames (exact, wildcard, any), paths, methods, headers, query
# parameters and the order given; answers, redirects, weighted backends
# (TLS verified by the upstream{}'s policy), request header modifiers and
# URL rewrites; a pattern that backtracks gives up; a change reaches every
# worker at once; refusals change nothing; a response streaming through
# 1,000 replacements of its own hostname's rules ends complete, and so
# does a WebSocket through as many; a reload
# keeps what was pushed, and a rule a reload can no longer serve is
# answered 500.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);
use IO::Socket::INET;
use JSON::PP ();
use Test::WebSocket qw(new_key accept_key read_frame write_frame);
use POSIX ();
use Time::HiRes qw(sleep time);

plan 'no_plan';
setup();
my $dir = servroot();
my $certs = certs_dir();
my $port = server_port();
my ($port_a, $port_b, $port_slow) = ($port + 1, $port + 2, $port + 3);
my @dead = ($port + 4, $port + 5);  # nothing listens
my ($port_ws, $port_echo) = ($port + 6, $port + 7);  # TLS in front of the WebSocket echo
my $port_plain = $port + 8;  # a backend in plaintext
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
my $slow_bytes = 32 * 1024 * 1024;

# ---- the backends: two TLS servers saying who they are -----------------------
make_path("$dir/backends/logs", "$dir/backends/tmp", "$dir/backends/html", "$dir/gw/logs", "$dir/gw/tmp");
spit("$dir/backends/html/slow", 'x' x $slow_bytes);
my $backends = join '', map { my ($name, $p) = @$_; <<"EOF" } ['a', $port_a], ['b', $port_b];
    server {
        listen 127.0.0.1:$p ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        access_log logs/access_$name.log mirrored;
        add_header X-Backend-Own secret;
        add_header X-Keep yes;
        add_header X-Twice first;
        location / {
            return 200 "backend=$name uri=\$uri req=\$request_uri host=\$http_host set=\$http_x_set add=\$http_x_add gone=\$http_x_gone\\n";
        }
        # a reader slow for as long as the changes last: no minute's timeout
        location = /slow { access_log off; root html; send_timeout 10m; }
        location /fails-on-a { return @{[$name eq 'a' ? 500 : 200]} "backend=$name\\n"; }
    }
EOF
spit("$dir/backends/nginx.conf", <<"EOF");
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 1024; }
http {
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    log_format mirrored '\$request_method \$request_uri \$request_length';
$backends
    server {
        listen 127.0.0.1:$port_plain;
        location / { return 200 "backend=p uri=\$uri tls=\$https\\n"; }
    }
    server {
        listen 127.0.0.1:$port_ws ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        location /ws {
            proxy_pass http://127.0.0.1:$port_echo;
            proxy_http_version 1.1;
            proxy_set_header Upgrade \$http_upgrade;
            proxy_set_header Connection upgrade;
            proxy_read_timeout 1h;
        }
    }
}
EOF
start_nginx("$dir/backends", 'nginx.conf', $port_b);
(my $echo_script = $INC{'Test/GatewayTLS.pm'}) =~ s{Test/GatewayTLS\.pm$}{echo-server.pl};
start_ready_server($^X, $echo_script, "$port_echo=ns/ws");

# ---- the gateway ------------------------------------------------------------
sub upstream_block {
    my ($name, $p) = @_;
    return <<"EOF";
    upstream $name {
        zone $name 64k;
        server 127.0.0.1:$p;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $certs/ca.crt;
        proxy_ssl_policy_name ns/$name;
        proxy_ssl_policy_hostname abc.example.com;
    }
EOF
}
sub gateway_conf {
    my ($table, $state_zone, $host_header) = @_;
    $state_zone //= 'gateway_tls_upstream_state_zone 1m;';
    # the Host the rule's filters send
    $host_header //= 'proxy_set_header Host $gateway_tls_route_host;';
    return <<"EOF";
load_module $module;
worker_processes 2;
pid logs/nginx.pid;
error_log logs/error.log info;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    $state_zone
    gateway_tls_status_zone 256k;
@{[upstream_block('be_a', $port_a)]}
@{[upstream_block('be_b', $port_b)]}
@{[upstream_block('be_ws', $port_ws)]}
    upstream be_slow { zone be_slow 64k; server 127.0.0.1:$port_slow; }
    upstream be_plain { zone be_plain 64k; server 127.0.0.1:$port_plain; }
    upstream be_ab {
        zone be_ab 64k;
        server 127.0.0.1:$port_a;
        server 127.0.0.1:$port_b;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $certs/ca.crt;
        proxy_ssl_policy_name ns/be_ab;
        proxy_ssl_policy_hostname abc.example.com;
    }
    upstream be_dead { zone be_dead 64k; server 127.0.0.1:$dead[0]; server 127.0.0.1:$dead[1]; }
    server {
        listen 127.0.0.1:$port;
        send_timeout 10m;  # /slow's reader, slow while the tables change
        proxy_ssl_server_name on;
        proxy_ssl_name \$upstream_ssl_policy_hostname;
        location / {
            gateway_tls_routes $table mirror=/mirror-route;
            # a backend the rule says is plaintext
            gateway_tls_routes_pass http {
                proxy_pass http://gateway_tls_routes;
            }
            proxy_pass https://gateway_tls_routes;
            $host_header
            proxy_buffering off;
            add_header X-Route \$gateway_tls_route always;
            add_header X-Verify \$upstream_ssl_verify always;
        }
        location = /mirror-route {
            internal;
            proxy_pass https://\$gateway_tls_route_mirror\$request_uri;
            proxy_set_header Host \$http_host;
        }
        location /ws {
            gateway_tls_routes $table;
            proxy_pass https://gateway_tls_routes;
            proxy_http_version 1.1;
            proxy_set_header Upgrade \$gateway_tls_route_upgrade;
            proxy_set_header Connection \$gateway_tls_route_connection;
            proxy_read_timeout 1h;
        }
        location /slowplain {
            gateway_tls_routes $table;
            proxy_pass http://\$gateway_tls_route_backend;
        }
        location /status {
            gateway_tls_status;
            gateway_tls_status_allow 127.0.0.1;
            gateway_tls_status_token_file @{[operator_token_file()]};
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
}

# routes need the state zone: every worker follows it, a reload keeps it
(my $no_zone = gateway_conf('main', '')) =~ s/location \/api \{.*?\n        \}\n//s;  # the API needs it too
spit("$dir/gw/nginx.conf", $no_zone);
my $refused = `@{[nginx_binary()]} -t -p $dir/gw/ -c nginx.conf 2>&1`;
like($refused, qr/gateway_tls_routes needs "gateway_tls_upstream_state_zone" in the http block/,
     'nginx -t refuses a route table without the state zone');

# a table's name is one the API can name in its JSON
spit("$dir/gw/nginx.conf", gateway_conf('"main{x"'));
like(scalar `@{[nginx_binary()]} -t -p $dir/gw/ -c nginx.conf 2>&1`, qr/gateway_tls_routes: invalid table name "main\{x"/,
     'nginx -t refuses a table name the API could not name');

# port= is the Gateway listener's port, which a redirect keeps
spit("$dir/gw/nginx.conf", gateway_conf('main port=0'));
like(scalar `@{[nginx_binary()]} -t -p $dir/gw/ -c nginx.conf 2>&1`, qr/gateway_tls_routes: invalid parameter "port=0" \(port=1\.\.65535, mirror=\/URI\)/,
     'nginx -t refuses a port that is none');

# gateway_tls_routes_pass: a scheme the table names, once, where a table routes
for my $t (['gateway_tls_routes_pass https {', qr/gateway_tls_routes_pass: invalid scheme "https" \(http, grpcs or grpc; https is the location's own\)/],
           ['gateway_tls_routes_pass http { proxy_pass http://gateway_tls_routes; } gateway_tls_routes_pass http {',
            qr/"gateway_tls_routes_pass" directive is duplicate/]) {
    (my $conf = gateway_conf('main')) =~ s/gateway_tls_routes_pass http \{/$t->[0]/ or die 'no pass block';
    spit("$dir/gw/nginx.conf", $conf);
    like(scalar `@{[nginx_binary()]} -t -p $dir/gw/ -c nginx.conf 2>&1`, $t->[1], "nginx -t refuses: $t->[0]");
}
my $unrouted_location = 'location /unrouted { gateway_tls_routes_pass grpc { grpc_pass grpc://gateway_tls_routes; } }';
(my $unrouted = gateway_conf('main')) =~ s#(location /slowplain )#$unrouted_location\n        $1# or die 'no /slowplain';
spit("$dir/gw/nginx.conf", $unrouted);
like(scalar `@{[nginx_binary()]} -t -p $dir/gw/ -c nginx.conf 2>&1`,
     qr/gateway_tls_routes_pass in a location without gateway_tls_routes: nothing would choose it/,
     'nginx -t refuses a pass block where no table routes');

spit("$dir/gw/nginx.conf", gateway_conf('main'));
start_nginx("$dir/gw", 'nginx.conf', $port);
my $master = slurp("$dir/gw/logs/nginx.pid");
chomp $master;
my $workers = worker_pids($master);
is(scalar(split ' ', $workers), 2, "two workers ($workers)");

sub api { my ($method, $body) = @_; return api_request($port, '/api', $method, $body) }
# the table's status: gateway_tls_status's JSON entry for "main"
sub table_status {
    my ($code, $body) = api_request($port, '/status', 'GET');
    my ($main) = grep { $_->{name} eq 'main' } @{ (eval { JSON::PP::decode_json($body) } // {})->{route_tables} // [] };
    return $main // {};
}
sub prometheus { return (api_request($port, '/status?format=prometheus', 'GET'))[1] }
sub get {
    my ($path, $host, @headers) = @_;
    my ($code, $h, $body) = request($port, 'GET', $path, "Host: $host", @headers);
    return { code => $code, route => $h->{'x-route'} // '', verify => $h->{'x-verify'} // '',
             location => $h->{location} // '', body => $body };
}
sub backend_of { my $r = shift; return $r->{body} =~ /backend=(\w)/ ? $1 : "($r->{code})" }
sub host_json { my ($actions, $matches) = @_; return qq({"actions": [$actions], "matches": [$matches]}) }
sub routes_json {
    my %hosts = @_;
    return '{"routes": {"main": {' . join(',', map { qq("$_": $hosts{$_}) } sort keys %hosts) . '}}}';
}

# ---- an empty table ---------------------------------------------------------
my ($code, $list) = api('GET');
is($code, 200, 'the API lists');
like($list, qr/"routes":\{"main":\{\}\}/, 'the table is listed, holding no hostname');
is(get('/', 'a.example')->{code}, 404, 'a request no hostname serves: 404');

# ---- hostnames, paths, conditions, order --------------------------------------
my $a_routes = host_json(
    '{"backends": [{"backend": "be_a"}]}, {"backends": [{"backend": "be_b"}]}, {"status": 503}, '
    . '{"redirect": {"scheme": "https", "port": 8443, "path": {"type": "ReplacePrefixMatch", "value": "/new"}, "status": 301}}, '
    . '{"backends": [{"backend": "be_a", "weight": 1}, {"backend": "", "weight": 1}]}',
    '{"path": {"type": "Exact", "value": "/exact"}, "action": 1}, '
    . '{"path": {"value": "/svc"}, "method": "POST", "action": 2}, '
    . '{"path": {"value": "/svc"}, "headers": [{"name": "X-Env", "value": "canary"}], "action": 1}, '
    . '{"path": {"value": "/svc"}, "query": [{"name": "v", "type": "RegularExpression", "value": "[0-9]+"}], "action": 1}, '
    . '{"path": {"type": "RegularExpression", "value": "/(a+)+"}, "action": 2}, '
    . '{"path": {"value": "/old"}, "action": 3}, '
    . '{"path": {"value": "/half"}, "action": 4}, '
    . '{"path": {"value": "/"}, "action": 0}');
($code, my $reply) = api('PUT', routes_json(
    'a.example' => $a_routes,
    '*.example' => host_json('{"status": 418}', '{"action": 0}'),
    '*' => host_json('{"backends": [{"backend": "be_b"}]}', '{"path": {"type": "Exact", "value": "/"}, "action": 0}')));
is($code, 200, 'a PUT of three hostnames is taken') or diag $reply;
like($reply, qr/"routes":\{"main":\{"\*":\{"generation":\d+,"matches":1\},"\*\.example":\{"generation":\d+,"matches":1\},"a\.example":\{"generation":\d+,"matches":8\}\}\}/,
     'the reply gives each hostname its generation and matches');

my $r = get('/x/y', 'a.example');
is(backend_of($r), 'a', 'a.example /x/y: the PathPrefix / rule, backend a');
is($r->{route}, 'a.example match 7', 'which match served is in $gateway_tls_route');
is($r->{verify}, 'SUCCESS', 'the backend was verified by its upstream{} policy');
like($r->{body}, qr{uri=/x/y}, 'the path passes as it came');
is(backend_of(get('/exact', 'a.example')), 'b', 'Exact /exact: backend b');
is(backend_of(get('/exact/more', 'a.example')), 'a', 'Exact matches no longer path');
is((request($port, 'POST', '/svc/x', 'Host: a.example', 'Content-Length: 0'))[0], 503, 'method POST on /svc: 503');
is(backend_of(get('/svc/x', 'a.example', 'X-Env: canary')), 'b', 'header X-Env: canary: backend b');
is(backend_of(get('/svc/x', 'a.example', 'X-Env: prod')), 'a', 'another value falls through to /');
is(backend_of(get('/svc/x?v=12', 'a.example')), 'b', 'query v=12 matches [0-9]+');
is(backend_of(get('/svcx?v=12', 'a.example')), 'a', 'PathPrefix /svc does not match /svcx');
is(get('/aaa', 'a.example')->{code}, 503, 'RegularExpression /(a+)+ matches /aaa');

# a pattern that would backtrack for years gives up at its limit, as no match
my $catastrophic = '/' . ('a' x 40) . '!';
is(backend_of(get($catastrophic, 'a.example')), 'a', 'a catastrophic subject falls through to the next match');
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/routes "main" of "a\.example": a regular expression gave up at its match limit/) > 0 }),
   'and the error log says a pattern gave up');

$r = get('/old/page?q=1', 'a.example');
is($r->{code}, 301, 'RequestRedirect: 301');
is($r->{location}, 'https://a.example:8443/new/page?q=1', 'Location: scheme, port, prefix replaced, query kept');

my %half;
for (1 .. 60) { $half{get('/half', 'a.example')->{code}}++ }
ok($half{200} && $half{500}, "a share that cannot be served is answered 500, the other served (200: @{[$half{200} // 0]}, 500: @{[$half{500} // 0]})");
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/the request fell to a backend that cannot be served/) > 0 }),
   'and logged');

is(get('/', 'b.example')->{code}, 418, 'b.example: the wildcard *.example');
is(get('/', 'x.b.example')->{code}, 418, 'x.b.example: a wildcard is a suffix of any number of labels');
is(backend_of(get('/', 'other.test')), 'b', 'other.test: "*", backend b');
is(get('/nothing', 'other.test')->{code}, 404, 'no match of the hostname served: 404, no falling through');

# ---- response header modifiers ---------------------------------------------------------
($code, $reply) = api('PUT', routes_json('headers.example' => host_json(
    '{"backends": [{"backend": "be_a"}], "response_headers": {"set": [{"name": "X-Twice", "value": "set"}, {"name": "X-Served", "value": "gw"}], '
    . '"add": [{"name": "X-Added", "value": "1"}], "remove": ["x-backend-own"]}}, {"status": 404, "response_headers": {"add": [{"name": "X-Added", "value": "on answers too"}]}}',
    '{"path": {"value": "/none"}, "action": 1}, {"action": 0}')));
is($code, 200, 'a rule with a response header modifier is taken') or diag $reply;
my ($hcode, $h) = request($port, 'GET', '/x', 'Host: headers.example');
is($hcode, 200, 'served');
ok(!exists $h->{'x-backend-own'}, 'remove: the backend\'s header is gone');
is($h->{'x-twice'}, 'set', 'set: the backend\'s header replaced, not doubled');
is($h->{'x-served'}, 'gw', 'set: a header the backend did not send');
is($h->{'x-added'}, '1', 'add');
is($h->{'x-keep'}, 'yes', 'other headers pass');
($hcode, $h) = request($port, 'GET', '/none', 'Host: headers.example');
is($hcode, 404, 'an answer of the gateway');
is($h->{'x-added'}, 'on answers too', 'carries its rule\'s headers too');

# ---- request header modifiers and URL rewrites -------------------------------------------
($code, $reply) = api('PUT', routes_json('edit.example' => host_json(
    '{"backends": [{"backend": "be_a", "request_headers": {"set": [{"name": "X-Gone", "value": "the backend\'s"}]}}], '
    . '"request_headers": {"set": [{"name": "X-Set", "value": "route"}], "add": [{"name": "x-add", "value": "more"}], "remove": ["X-Gone"]}, '
    . '"rewrite": {"hostname": "rewritten.example", "path": {"type": "ReplacePrefixMatch", "value": "/new"}}}, '
    . '{"backends": [{"backend": "be_b"}], "rewrite": {"path": {"type": "ReplaceFullPath", "value": "/full"}}}, '
    . '{"backends": [{"backend": "be_b"}]}',
    '{"path": {"value": "/old"}, "action": 0}, {"path": {"value": "/whole"}, "action": 1}, {"action": 2}')));
is($code, 200, 'rules with request header modifiers and URL rewrites are taken') or diag $reply;
my @client = ('X-Set: one', 'X-Set: two', 'X-Add: mine', 'X-Gone: bye');
$r = get('/old/a%20b?q=1', 'edit.example', @client);
is(backend_of($r), 'a', 'edited: served by backend a');
like($r->{body}, qr{ uri=/new/a b req=/new/a%20b\?q=1 }, 'ReplacePrefixMatch: the prefix replaced, the rest escaped as sent, the query kept');
like($r->{body}, qr{ host=rewritten\.example }, 'the rewrite\'s hostname is the Host');
like($r->{body}, qr{ set=route }, 'set replaces both of the client\'s fields');
like($r->{body}, qr{ add=mine,more }, 'add joins the client\'s value and its own');
like($r->{body}, qr{ gone=the backend's\n}, 'remove dropped the client\'s; the backend\'s own set comes after');
$r = get('/whole/x?y=1', 'edit.example', @client);
like($r->{body}, qr{backend=b uri=/full req=/full\?y=1 host=edit\.example set=one(?:, two)? add=mine gone=bye\n},
     'ReplaceFullPath: the path replaced, the query and headers as the client sent them');
$r = get('/other', 'edit.example', @client);
like($r->{body}, qr{uri=/other req=/other host=edit\.example set=one(?:, two)? add=mine gone=bye\n},
     'a rule that edits nothing sends what the client sent');

# ---- a rule's request timeout ----------------------------------------------------------
start_slow_backend('127.0.0.1', $port_slow, "$dir/slow-accepted");
($code, $reply) = api('PUT', routes_json('timeout.example' => host_json(
    '{"backends": [{"backend": "be_slow"}], "timeouts": {"request_ms": 500}}, {"backends": [{"backend": "be_slow"}]}',
    '{"path": {"value": "/slowplain/t"}, "action": 0}, {"path": {"value": "/slowplain/n"}, "action": 1}')));
is($code, 200, 'a rule with a request timeout is taken') or diag $reply;
is((request($port, 'GET', '/slowplain/t', 'Host: timeout.example'))[0], 504, 'its backend answers after 3 s: 504');
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/no answer within the request timeout of 500ms/) > 0 }),
   'and the log says the rule\'s timeout ran out');
my (undef, undef, $slow_body) = request($port, 'GET', '/slowplain/n', 'Host: timeout.example');
is($slow_body, 'slow', 'the same backend without the timeout: answered');

# ---- mirrors ----------------------------------------------------------------------------
($code, $reply) = api('PUT', routes_json('mirror.example' => host_json(
    '{"backends": [{"backend": "be_a"}], "mirrors": [{"backend": "be_b"}]}, '
    . '{"backends": [{"backend": "be_a"}], "mirrors": [{"backend": "be_b", "numerator": 1, "denominator": 2}]}',
    '{"path": {"value": "/all"}, "action": 0}, {"path": {"value": "/half"}, "action": 1}')));
is($code, 200, 'rules with mirrors are taken') or diag $reply;
for my $i (1 .. 3) {
    my $r = get("/all/$i?x=$i", 'mirror.example');
    is(backend_of($r), 'a', "mirrored request $i: answered by its backend");
}
my $post = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or die "connect: $!";
print {$post} "POST /all/post HTTP/1.1\r\nHost: mirror.example\r\nConnection: close\r\nContent-Length: 11\r\n\r\nhello world";
my $post_answer = do { local $/; <$post> } // '';
like($post_answer, qr{^HTTP/1\.1 200 .*backend=a}s, 'a POST with a body is answered');
ok(wait_for(sub { count_in("$dir/backends/logs/access_b.log", qr{^GET /all/[123]\?x=[123] }m) == 3 }),
   'each request reached the mirror backend too, its query kept');
ok(wait_for(sub { count_in("$dir/backends/logs/access_b.log", qr{^POST /all/post \d+}m) == 1 }), 'so did the POST');
# a backend logs a request once it has answered it: waited for as well
ok(wait_for(sub { count_in("$dir/backends/logs/access_a.log", qr{^POST /all/post \d+}m) == 1 }), 'its backend logged the POST');
my ($a_post) = slurp("$dir/backends/logs/access_a.log") =~ m{^POST /all/post (\d+)$}m;
my ($b_post) = slurp("$dir/backends/logs/access_b.log") =~ m{^POST /all/post (\d+)$}m;
is($b_post, $a_post, "with its body: the same request length ($a_post) at both");
get("/half/$_", 'mirror.example') for 1 .. 40;
ok(wait_for(sub { count_in("$dir/backends/logs/access_a.log", qr{^GET /half/}m) == 40 }), 'forty requests of a half share answered');
ok(wait_for(sub { count_in("$dir/backends/logs/access_b.log", qr{^GET /half/}m) > 0 }), 'the mirror backend logged some');
my $halved = count_in("$dir/backends/logs/access_b.log", qr{^GET /half/}m);
ok($halved > 0 && $halved < 40, "a share of them mirrored ($halved of 40)");

# ---- a rule's backend timeout and retries ------------------------------------------------
($code, $reply) = api('PUT', routes_json('tries.example' => host_json(
    '{"backends": [{"backend": "be_slow"}], "timeouts": {"backend_ms": 500}}, '
    . '{"backends": [{"backend": "be_ab"}], "retry": {"attempts": 1, "codes": [500]}}, '
    . '{"backends": [{"backend": "be_ab"}]}, '
    . '{"backends": [{"backend": "be_dead"}], "retry": {"attempts": 1}}, '
    . '{"backends": [{"backend": "be_dead"}]}',
    '{"path": {"value": "/slowplain/b"}, "action": 0}, {"path": {"value": "/fails-on-a/retry"}, "action": 1}, '
    . '{"path": {"value": "/fails-on-a"}, "action": 2}, {"path": {"value": "/dead/retry"}, "action": 3}, '
    . '{"path": {"value": "/dead"}, "action": 4}')));
is($code, 200, 'rules with a backend timeout and retries are taken') or diag $reply;
is((request($port, 'GET', '/slowplain/b', 'Host: tries.example'))[0], 504, 'a backend timeout of 500 ms: 504 from a backend that answers after 3 s');
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/upstream timed out .*request: "GET \/slowplain\/b /) > 0 }),
   'and the log says the backend timed out');
my (%retried, %once);
# (first: a retried 500 counts as the server's failure, which keeps it out for a while)
$once{get('/fails-on-a', 'tries.example')->{code}}++ for 1 .. 20;
ok($once{500}, "without the retry, the failing server's 500s pass (500: @{[$once{500} // 0]} of 20)");
for (1 .. 20) { my $t = get('/fails-on-a/retry', 'tries.example'); $retried{"$t->{code} " . backend_of($t)}++ }
is_deeply(\%retried, { '200 b' => 20 }, 'retry on 500: every request is answered by the server that does not fail');
is(get('/dead/retry', 'tries.example')->{code}, 503, 'every try failed to connect: 503, no backend available');
is(get('/dead', 'tries.example')->{code}, 502, 'without a retry, nginx\'s own 502');

# ---- a change reaches every worker at once, with no reload -------------------------
my $counted = table_status();
($code, $reply) = api('PUT', routes_json('a.example' => host_json('{"backends": [{"backend": "be_b"}]}', '{"action": 0}')));
is($code, 200, 'a.example replaced') or diag $reply;
my %seen;
$seen{backend_of(get('/x/y', 'a.example'))}++ for 1 .. 20;
is_deeply(\%seen, { b => 20 }, 'twenty requests on new connections, over both workers, all take the new rules');
is(get('/', 'b.example')->{code}, 418, 'the other hostnames are as they were');
is(worker_pids($master), $workers, 'no reload: the same workers');

($code, $reply) = api('PUT', routes_json('a.example' => 'null'));
is($code, 200, 'a.example removed') or diag $reply;
like($reply, qr/"a\.example":\{"generation":\d+,"removed":true\}/, 'the reply says so');
is(get('/x', 'a.example')->{code}, 418, 'a.example is now served by *.example');
my $now = table_status();
is($now->{replaced} - $counted->{replaced}, 1, 'the status counts the replacement');
is($now->{removed} - $counted->{removed}, 1, 'and the removal');
like($reply, qr/"generation":$now->{generation},"removed":true/, 'its generation is the newest entry the API gave');
is($now->{hostnames}, $counted->{hostnames} - 1, 'one hostname fewer');

# ---- a plaintext backend: its rule says so, and its upstream{} asks no TLS -------------
($code, $reply) = api('PUT', routes_json('plain.example' => host_json(
    '{"backends": [{"backend": "be_plain", "scheme": "http"}], "response_headers": {"set": [{"name": "X-Resp", "value": "plain"}]}}, '
    . '{"backends": [{"backend": "be_plain"}]}',
    '{"path": {"value": "/tls"}, "action": 1}, {"action": 0}')));
is($code, 200, 'a rule to a plaintext backend is taken') or diag $reply;
$r = get('/p', 'plain.example');
is(backend_of($r), 'p', 'and served in plaintext (by the location\'s gateway_tls_routes_pass http block)');
like($r->{body}, qr/tls= *$/m, 'the backend saw no TLS');
is((request($port, 'GET', '/p', 'Host: plain.example'))[1]{'x-resp'}, 'plain',
   'the rule is served whole in the block that passes it (its response headers)');
is(get('/tls', 'plain.example')->{code}, 502, 'the same backend named without its scheme is spoken TLS to: it fails');

# ---- refusals change nothing --------------------------------------------------------
(undef, my $before) = api('GET');
my $refused_before = table_status()->{refused};
my @refusals = (
    ['{"routes": {"other": {"a.example": null}}}', 404, qr/no route table \\"other\\"/],
    [routes_json('a.example' => host_json('{"backends": [{"backend": "be_a"}, {"backend": "nosuch"}]}', '{"action": 0}')),
     409, qr/routes\[\\"main\\"\]\[\\"a\.example\\"\]\.actions\[0\]\.backends\[1\]\.backend: no upstream\{\} \\"nosuch\\"/],
    [routes_json('a.example' => host_json('{"backends": [{"backend": "be_a"}], "mirrors": [{"backend": "nosuch"}]}', '{"action": 0}')),
     409, qr/actions\[0\]\.mirrors\[0\]\.backend: no upstream\{\} \\"nosuch\\"/],
    [routes_json('a.example' => host_json('{"backends": [{"backend": "be_a"}], "retry": {"attempts": 2, "codes": [500, 418]}}', '{"action": 0}')),
     409, qr/actions\[0\]\.retry\.codes\[1\]: 418 is not retried: nginx retries on 403, 404, 429, 500, 502, 503 and 504/],
    [routes_json('a.example' => host_json('{"backends": [{"backend": "be_a"}], "retry": {"attempts": 2, "backoff_ms": 100}}', '{"action": 0}')),
     409, qr/actions\[0\]\.retry\.backoff_ms: nginx retries at once, without waiting between tries/],
    [routes_json('a.example' => host_json('{"status": 500}', '{"action": 0, "headers": [{"name": "x", "value": "a\u000ab"}]}')),
     400, qr/matches\[0\]\.headers\[0\]\.value: holds a control character/],
    [routes_json('B.example' => 'null', 'c.example' => 'null'), 400, qr/is not a hostname/],
    ['{"routes": {"main": {"c.example": null}}, "upstreams": {"nosuch": {"servers": []}}}', 404, qr/no upstream \\"nosuch\\"/],
    # never plaintext where the upstream{}'s policy asks TLS
    [routes_json('a.example' => host_json('{"backends": [{"backend": "be_a", "scheme": "http"}]}', '{"action": 0}')),
     409, qr/actions\[0\]\.backends\[0\]\.scheme: http is plaintext, and upstream\{\} \\"be_a\\" verifies its backends' TLS/],
    [routes_json('a.example' => host_json('{"backends": [{"backend": "be_a", "scheme": "h2c"}]}', '{"action": 0}')),
     400, qr/backends\[0\]\.scheme: \\"h2c\\" is not one of https, http, grpcs, grpc/],
);
for my $t (@refusals) {
    my ($body, $want, $text) = @$t;
    ($code, $reply) = api('PUT', $body);
    is($code, $want, "refused with $want");
    like($reply, $text, 'naming what and where');
}
(undef, my $after) = api('GET');
is($after, $before, 'after the refusals the tables are as they were');
# each of them named "main" but the first (a table this nginx has not)
is(table_status()->{refused} - $refused_before, @refusals - 1, 'the status counts each refusal of the table');
my $metrics = prometheus();
my $status = table_status();
like($metrics, qr/^gateway_tls_route_table_refusals_total\{table="main"\} $status->{refused}$/m, 'Prometheus: the refusals');
like($metrics, qr/^gateway_tls_route_table_changes_total\{table="main",change="replaced"\} $status->{replaced}$/m,
     'the replacements');
like($metrics, qr/^gateway_tls_route_table_hostnames\{table="main"\} $status->{hostnames}$/m, 'the hostnames');
like($metrics, qr/^gateway_tls_route_table_matches\{table="main"\} $status->{matches}$/m, 'the matches');
like($metrics, qr/^gateway_tls_route_table_generation\{table="main"\} $status->{generation}$/m, 'the generation');

# ---- a WebSocket and a streaming response through 1,000 replacements ----------------------
# PUTs on one kept-alive connection: the replacements, not a thousand
# curls, are what is tested
sub put_on {
    my ($sock, $body) = @_;
    print {$sock} "PUT /api HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer @{[operator_token()]}\r\n"
        . "Content-Length: @{[length $body]}\r\n\r\n$body";
    local $/ = "\r\n";
    my ($code) = (<$sock> // '') =~ m{^HTTP/1\.1 (\d+)};
    my $length = 0;
    while (my $line = <$sock>) {
        last if $line eq "\r\n";
        $length = $1 if $line =~ /^Content-Length:\s*(\d+)/i;
    }
    read($sock, my $reply, $length) if $length;
    return $code // 0;
}
# One message there and back on an open WebSocket, within a deadline
sub ws_echo {
    my ($ws, $text) = @_;
    my @frame = eval {
        local $SIG{ALRM} = sub { die "deadline\n" };
        alarm 30;
        write_frame($ws, 1, $text, 1);
        my @f = read_frame($ws);
        alarm 0;
        @f;
    };
    alarm 0;
    return @frame == 2 && $frame[0] == 1 ? $frame[1] : '(none)';
}

# a backend that is not marked WebSocket gets no Upgrade
sub ws_handshake {
    my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or die "connect: $!";
    my $key = new_key();
    print {$sock} "GET /ws HTTP/1.1\r\nHost: ws.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        . "Sec-WebSocket-Key: $key\r\nSec-WebSocket-Version: 13\r\n\r\n";
    my $head = '';
    local $/ = "\r\n";
    while (my $line = <$sock>) { $head .= $line; last if $line eq "\r\n" }
    return ($sock, $head, $key);
}
($code) = api('PUT', routes_json('ws.example' => host_json('{"backends": [{"backend": "be_ws"}]}', '{"path": {"value": "/ws"}, "action": 0}')));
my (undef, $refused_head) = ws_handshake();
like($refused_head, qr{^HTTP/1\.1 200 }, 'a backend not marked WebSocket: the Upgrade is not passed, a plain answer');
my $long_routes = host_json('{"backends": [{"backend": "be_a"}]}', '{"path": {"value": "/slow"}, "action": 0}');
my $ws_routes = host_json('{"backends": [{"backend": "be_ws", "websocket": true}]}', '{"path": {"value": "/ws"}, "action": 0}');
($code) = api('PUT', routes_json('long.example' => $long_routes, 'ws.example' => $ws_routes));
is($code, 200, 'long.example routes /slow to backend a, ws.example /ws to the WebSocket backend');
my $slow_out = "$dir/slow.out";
my $slow = start_slow_reader($port, 'long.example', '/slow', $slow_out);
ok(wait_for(sub { -s "$slow_out.head" }), 'the long-lived response has begun');
my ($ws, $ws_head, $ws_key) = ws_handshake();
like($ws_head, qr{^HTTP/1\.1 101 }, 'the WebSocket is open through the table (101)');
like($ws_head, qr/Sec-WebSocket-Accept: \Q@{[accept_key($ws_key)]}\E/i, 'answered by the echo behind the TLS backend');
is(ws_echo($ws, 'before'), 'before', 'a message there and back');

my $api = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or die "connect: $!";
my ($replaced, @echoed) = (0);
for my $i (1 .. 1000) {
    # each replacement moves the hostnames' other rules; /slow and /ws stay
    my $other = qq({"path": {"value": "/v$i"}, "action": 1});
    my $body = routes_json(
        'long.example' => host_json('{"backends": [{"backend": "be_a"}]}, {"status": 404}', qq({"path": {"value": "/slow"}, "action": 0}, $other)),
        'ws.example' => host_json('{"backends": [{"backend": "be_ws", "websocket": true}]}, {"status": 404}',
                                  qq({"path": {"value": "/ws"}, "action": 0}, $other)));
    $replaced++ if put_on($api, $body) == 200;
    push @echoed, ws_echo($ws, "message $i") eq "message $i" ? 1 : 0 if $i % 100 == 0;
}
is($replaced, 1000, 'both hostnames were replaced 1,000 times');
is_deeply(\@echoed, [(1) x 10], 'every hundredth replacement, a message there and back on the same WebSocket');
is(ws_echo($ws, 'after'), 'after', 'the WebSocket is intact after the last');
ok(kill(0, $slow) && waitpid($slow, POSIX::WNOHANG()) == 0, 'the response is still open after the last');
kill 'USR1', $slow;
ok(wait_for(sub { waitpid($slow, POSIX::WNOHANG()) == $slow }, 60), 'once told to, its reader takes the rest');
is($? >> 8, 0, 'and it ends complete');
is(slurp($slow_out), "$slow_bytes\n", "with all its $slow_bytes bytes");
is(worker_pids($master), $workers, 'still the same workers');
is(get('/v1000', 'ws.example')->{code}, 404, 'the last rules serve');
close $ws;
close $api;

# ---- a reload keeps what was pushed ---------------------------------------------------
kill 'HUP', $master;
ok(wait_for(sub { my $w = worker_pids($master); $w ne '' && $w ne $workers && scalar(split ' ', $w) == 2 }),
   'after a reload, new workers');
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/routes "main" of "long\.example" kept as last pushed through the API/) > 0 }),
   'the log says the table kept what was pushed');
is(backend_of(get('/slow/x', 'long.example')), 'a', 'and the new workers serve it');
is(get('/x', 'a.example')->{code}, 418, 'a removal is kept too');
my $after_reload = table_status();
is($after_reload->{replaced}, table_status()->{replaced}, 'the counters read the same from either worker');
ok($after_reload->{replaced} >= 2000 && $after_reload->{refused} >= @refusals - 1,
   "the counters go on across the reload (replaced $after_reload->{replaced}, refused $after_reload->{refused})");

# ---- a reload onto a state zone of another size: what was pushed is carried into it ---
spit("$dir/gw/nginx.conf", gateway_conf('main', 'gateway_tls_upstream_state_zone 2m;'));
my $before_resize = worker_pids($master);
kill 'HUP', $master;
ok(wait_for(sub { my $w = worker_pids($master); $w ne '' && $w ne $before_resize && scalar(split ' ', $w) == 2 }),
   'reloaded onto a state zone of twice the size (nginx makes it anew)');
is(backend_of(get('/slow/x', 'long.example')), 'a', 'the rules pushed before serve from it');
is(get('/x', 'a.example')->{code}, 418, 'a removal is carried too');
($code, $reply) = api('PUT', routes_json('resized.example' => host_json('{"backends": [{"backend": "be_b"}]}', '{"action": 0}')));
is($code, 200, 'a push after it is taken') or diag $reply;
is(join(' ', map { backend_of(get('/', 'resized.example')) } 1 .. 4), 'b b b b', 'and served by every worker');

# ---- where no location sends $gateway_tls_route_host or says where mirrors go, a rule may
# not edit the Host or mirror ----------------------------------------------------------------
(my $without = gateway_conf('main', undef, '# no Host of the routes')) =~ s/ mirror=\/mirror-route//;
$without =~ s/ *gateway_tls_routes_pass http \{.*?\}\n//s or die 'no pass block';
spit("$dir/gw/nginx.conf", $without);
my $before_reload = worker_pids($master);
kill 'HUP', $master;
ok(wait_for(sub { my $w = worker_pids($master); $w ne '' && $w ne $before_reload && scalar(split ' ', $w) == 2 }),
   'reloaded with no location sending $gateway_tls_route_host');
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/routes "main" of "edit\.example": actions\[0\]\.rewrite\.hostname: no location sends \$gateway_tls_route_host as the Host; its requests are answered 500/) > 0 }),
   'the kept rules that edit the Host are logged as no longer served');
is(get('/old/x', 'edit.example')->{code}, 500, 'and their hostname is answered 500, not sent on with the client\'s Host');
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/routes "main" of "mirror\.example": actions\[0\]\.mirrors: no location says where mirrors go/) > 0 }),
   'so are the kept rules that mirror, where no location says where mirrors go');
is(get('/all/x', 'mirror.example')->{code}, 500, 'and their hostname is answered 500, not served unmirrored');
ok(wait_for(sub { count_in("$dir/gw/logs/error.log", qr/routes "main" of "plain\.example": actions\[0\]\.backends\[0\]\.scheme: no location passes it \(gateway_tls_routes_pass http\); its requests are answered 500/) > 0 }),
   'so are the kept rules to a plaintext backend, where no location passes by the scheme');
is(get('/p', 'plain.example')->{code}, 500, 'and their hostname is answered 500, not spoken TLS to');
is(backend_of(get('/slow/x', 'long.example')), 'a', 'the other hostnames serve as before');
($code, $reply) = api('PUT', routes_json('host.example' => host_json(
    '{"backends": [{"backend": "be_a", "request_headers": {"add": [{"name": "HOST", "value": "x"}]}}]}', '{"action": 0}')));
is($code, 409, 'a rule that edits the Host is refused here');
like($reply, qr/actions\[0\]\.backends\[0\]\.request_headers: no location sends \$gateway_tls_route_host as the Host/,
     'naming the field and why');
($code, $reply) = api('PUT', routes_json('host.example' => host_json(
    '{"backends": [{"backend": "be_a"}], "request_headers": {"set": [{"name": "X-Set", "value": "ok"}]}}', '{"action": 0}')));
is($code, 200, 'other header edits are taken') or diag $reply;
like(get('/', 'host.example')->{body}, qr/ set=ok /, 'and served');

stop_nginx("$dir/gw");
stop_nginx("$dir/backends");
