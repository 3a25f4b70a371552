# The route table's differential property (issue 54): for random HTTPRoute
# sets (hostnames, paths of every type, methods, headers, query
# parameters, weights, filters, mirrors), gateway2nginx serves them once as nginx
# locations and once through the module's route table (--routes table,
# filled through the upstream API), and the same requests through both
# get the same status, body, backend and headers, backends verified by
# their BackendTLSPolicy in both, or spoken to in plaintext where none
# applies.
#
# GTLS_DIFF_SEEDS="1 2 3" chooses the route sets (default: four fixed).
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use File::Path qw(make_path);

plan 'no_plan';
setup();
my $dir = servroot();
my $module = $ENV{GTLS_MODULE} || 'build/nginx/objs/ngx_http_gateway_tls_module.so';
(my $module_dir = $module) =~ s{/[^/]+$}{};
my @seeds = split ' ', ($ENV{GTLS_DIFF_SEEDS} // '1 2 3 4');
start_backends();

# ---- random route sets ---------------------------------------------------------------
my @hostnames = ('a.example.com', 'b.example.com', '*.w.example.com');
sub pick { return $_[int rand @_] }
sub chance { return rand() < shift }

sub path_match {
    my $type = pick(qw(Exact PathPrefix PathPrefix RegularExpression));
    my $value = $type eq 'Exact' ? pick('/', '/a', '/a/b', '/b', '/old')
              : $type eq 'PathPrefix' ? pick('/', '/a', '/a/', '/a/b', '/b', '/old')
              : pick('/r[0-9]+', '/a/[a-z]+', '/(x|y)/.*');
    return ($type, $value);
}

sub filters_yaml {
    my ($type) = @_;
    my @f;
    push @f, '{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-set, value: route}], '
             . 'add: [{name: x-add, value: more}], remove: [x-drop]}}' if chance(0.3);
    push @f, '{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: x-resp, value: added}], '
             . 'remove: [x-echo-drop]}}' if chance(0.3);
    push @f, '{type: RequestMirror, requestMirror: {backendRef: {name: s2, port: 443}'
             . (chance(0.5) ? ', percent: 50' : '') . '}}' if chance(0.15);
    my $prefix = $type eq 'PathPrefix';
    if (chance(0.15)) {
        my @r = ('statusCode: ' . pick(301, 302));
        push @r, 'scheme: https' if chance(0.4);
        push @r, 'hostname: moved.example.com' if chance(0.4);
        push @r, 'port: 8443' if chance(0.2);
        push @r, pick('path: {type: ReplaceFullPath, replaceFullPath: /moved}',
                      $prefix ? 'path: {type: ReplacePrefixMatch, replacePrefixMatch: /p}' : ()) if chance(0.5);
        push @f, '{type: RequestRedirect, requestRedirect: {' . join(', ', @r) . '}}';
    } elsif (chance(0.2)) {
        my @r;
        push @r, 'hostname: rw.example.com' if chance(0.5);
        push @r, pick('path: {type: ReplaceFullPath, replaceFullPath: /rw}',
                      $prefix ? 'path: {type: ReplacePrefixMatch, replacePrefixMatch: /np}' : ()) if !@r || chance(0.5);
        push @f, '{type: URLRewrite, urlRewrite: {' . join(', ', @r) . '}}';
    }
    return @f;
}

sub backends_yaml {
    my $n = rand();
    return '[{name: s1, port: 443}]' if $n < 0.35;
    return '[{name: s2, port: 443}]' if $n < 0.55;
    return '[{name: p1, port: 80}]' if $n < 0.65;  # no BackendTLSPolicy: plaintext
    return '[{name: p1, port: 80, weight: 2}, {name: s1, port: 443, weight: 0}]' if $n < 0.7;  # shares decide nothing random
    return '[{name: s1, port: 443, weight: 0}, {name: s2, port: 443, weight: 3, filters: '
         . '[{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-set, value: backend}]}}]}]' if $n < 0.85;
    return '[{name: missing, port: 443}]';  # an invalid backendRef: 500
}

sub route_yaml {
    my ($i) = @_;
    my @hosts = grep { chance(0.5) } @hostnames;
    my $yaml = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
             . "metadata: {name: r$i, namespace: ns, creationTimestamp: \"2026-01-01T00:00:0${\ ($i % 10)}Z\"}\n"
             . "spec:\n  parentRefs: [{name: gw}]\n"
             . (@hosts ? '  hostnames: [' . join(', ', map { "\"$_\"" } @hosts) . "]\n" : '')
             . "  rules:\n";
    for (1 .. 1 + int rand 3) {
        my ($type, $value) = path_match();
        my @conditions;
        push @conditions, 'method: ' . pick(qw(GET POST)) if chance(0.2);
        # patterns that take an empty value too: a field or parameter sent
        # empty matches them, one not sent does not
        push @conditions, 'headers: [{name: x-h, '
            . pick('value: v1', 'type: RegularExpression, value: "v[0-9]"', 'type: RegularExpression, value: "v?[0-9]*"') . '}]'
            if chance(0.25);
        push @conditions, 'queryParams: [{name: q, '
            . pick('value: "1"', 'type: RegularExpression, value: "[0-9]+"', 'type: RegularExpression, value: "[0-9]*"') . '}]'
            if chance(0.2);
        my @filters = @conditions ? () : filters_yaml($type);
        $yaml .= "  - matches: [{path: {type: $type, value: \"$value\"}"
               . join('', map { ", $_" } @conditions) . "}]\n";
        $yaml .= '    filters: [' . join(', ', @filters) . "]\n" if @filters;
        my $redirects = grep { /RequestRedirect/ } @filters;
        $yaml .= '    backendRefs: ' . backends_yaml() . "\n" unless $redirects;
    }
    return $yaml;
}

my $plaintext_service = plaintext_service_manifests('p1', 'http', 80, backend_port('plain'));

# ---- the same requests through both ----------------------------------------------------
my @paths = ('/', '/a', '/a/', '/a/b', '/a/bc', '/a/b/c', '/ab', '/b', '/b/c', '/old', '/old/x', '/r12', '/r1x',
             '/x/1', '/y', '/a/b?q=1', '/a?q=x', '/b?q=12&r=1', '/?q=1', '/a/%62', '/r%31%32', '/a//b', '/a/./b',
             '/a?Q=1', '/b?Q=1&q=x', '/a/b?q=1&q=x', '/?r=1&q=12', '/a?q', '/a?xq=1&q1=1', '/b?q=', '/a/b?r&q',
             '/old/a%0D%0ASet-Cookie:%20x=1', '/old/%22q%22?x=%22', '/old/a%20b', '/%0A', '/a/b%3Fc%23d');
my @hosts = ('a.example.com', 'b.example.com', 'x.w.example.com', 'y.x.w.example.com', 'other.test');
my @compared = qw(x-backend x-echo-host x-echo-set x-echo-add x-echo-drop x-resp location);

sub answer {
    my ($port, $method, $path, @headers) = @_;
    push @headers, 'Content-Length: 0' if $method eq 'POST';
    my ($code, $h, $body) = request($port, $method, $path, @headers);
    return join "\n", "status $code", (map { "$_: " . ($h->{$_} // '-') } @compared), "body: $body";
}

my %seen_all;
my $api_token_of = sub { my $t = slurp(shift); chomp $t; $t };
for my $seed (@seeds) {
    srand($seed);
    my $yaml = gateway_manifests(s1 => 'leaf', s2 => 'wildcard') . $plaintext_service . join('', map { route_yaml($_) } 1 .. 16);
    my $set = "$dir/set-$seed";
    make_path($set);
    spit("$set/manifests.yaml", $yaml);
    my %port = (locations => server_port() + 20, table => server_port() + 21);
    my %api = (locations => server_port() + 30, table => server_port() + 31);
    for my $mode (qw(locations table)) {
        my ($rc, $out) = run_generator('-f', "$set/manifests.yaml", '-o', "$set/$mode", '--port-offset', $port{$mode} - 80,
                                       '--listen-address', '127.0.0.1', '--module-dir', $module_dir, '--check',
                                       '--status-listen', 'off', '--upstream-api', "127.0.0.1:$api{$mode}", '--routes', $mode);
        is($rc, 0, "seed $seed: gateway2nginx --routes $mode writes a configuration nginx -t takes") or diag $out;
        start_nginx("$set/$mode", 'nginx.conf', $port{$mode});
    }
    my $tables = slurp("$set/table/route-tables.json");
    my $table_servers = () = slurp("$set/table/http.conf") =~ /gateway_tls_routes /g;
    ok($table_servers > 0, "seed $seed: the table serves $table_servers servers");
    my ($code, $reply) = api_request($api{table}, '/upstreams', 'PUT', $tables, $api_token_of->("$set/table/upstream-api.token"));
    is($code, 200, "seed $seed: the route tables are filled through the upstream API") or diag $reply;

    my ($same, @differ, %seen) = (0);
    for my $n (1 .. 200) {
        my @request = (pick(qw(GET GET GET POST)), pick(@paths), 'Host: ' . pick(@hosts));
        push @request, 'X-H: ' . pick('v1', 'v2', 'w', '') if chance(0.4);
        push @request, 'X-Set: client', 'X-Add: mine', 'X-Drop: gone' if chance(0.5);
        my ($a, $b) = map { answer($port{$_}, @request) } qw(locations table);
        if ($a eq $b) { $same++ } else { push @differ, "@request\n--- locations:\n$a\n--- table:\n$b" }
        my ($status) = $a =~ /^status (\d+)/;
        my ($backend) = $a =~ /^x-backend: (.*)$/m;
        $seen{$status == 200 ? "200 $backend" : $status}++;
        $seen_all{$status == 200 ? "200 $backend" : $status}++;
        $seen_all{rewritten}++ if $a =~ /^x-echo-host: rw\.example\.com$/m;
        $seen_all{'200 plaintext'}++ if $a =~ /^body: backend=plain /m;
        $seen_all{'request headers set'}++ if $a =~ /^x-echo-set: (route|backend)$/m;
        $seen_all{'response headers'}++ if $a =~ /^x-resp: added$/m;
    }
    note "seed $seed: " . join(', ', map { "$_: $seen{$_}" } sort keys %seen);
    is($same, 200, "seed $seed: 200 requests answered the same through locations and the table")
        or diag join("\n\n", @differ[0 .. ($#differ < 2 ? $#differ : 2)]) . "\n(manifests: $set/manifests.yaml)";
    stop_nginx("$set/$_") for qw(locations table);
}
# the requests reached what the routes do, over all the sets
for my $kind ('200 leaf', '200 wildcard', '200 plaintext', 404, 500, 'rewritten', 'request headers set', 'response headers') {
    ok($seen_all{$kind}, "the sets were answered with $kind (@{[$seen_all{$kind} // 0]} times)");
}
ok(($seen_all{301} // 0) + ($seen_all{302} // 0), 'and with redirects');
stop_backends();
