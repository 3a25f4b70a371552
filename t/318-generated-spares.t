# gateway2nginx --spare-backends (issue 54): the spare upstreams it renders
# ahead of need (nginx -t takes them) serve nothing until the upstream API
# makes them backends, then serve with no reload: a TLS spare given its
# servers, its policy's trust and a table rule in one PUT, verified by
# what was pushed; a plaintext spare given a plaintext backend. A spare
# keeps to its kind: plaintext to a TLS spare is refused, and a TLS spare
# still trusts nothing of what it was not given.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use JSON::PP;

plan 'no_plan';
setup();
my $dir = servroot();
my ($rc, $usage) = run_generator('-f', '/dev/null', '-o', "$dir/refused", '--spare-backends', 1);
is($rc, 1, '--spare-backends without --routes table: a usage error');
like($usage, qr/--spare-backends needs --routes table: only a table rule sends to a spare/, 'said so');
($rc, $usage) = run_generator('-f', '/dev/null', '-o', "$dir/refused", '--spare-backends', 5000);
is($rc, 1, 'more spares than 4096: a usage error') or diag $usage;
my $yaml = gateway_manifests(web => 'leaf') . web_route_yaml('web', '/');
my ($port, $out) = serve_manifests($yaml, routes => 'table', spares => 2);
my $conf = slurp("$dir/out/http.conf");
for my $spare (qw(gateway2nginx_spare_tls_0 gateway2nginx_spare_tls_1 gateway2nginx_spare_plain_0
                  gateway2nginx_spare_plain_1)) {
    like($conf, qr/^upstream \Q$spare\E \{$/m, "$spare is rendered");
}
unlike(slurp("$dir/out/route-tables.json"), qr/spare/, 'and no rule sends to a spare yet');

my $master = slurp("$dir/out/nginx.pid") =~ s/\s+//r;
my $workers = worker_pids($master);
my $api = server_port() + 18;
my $token = slurp("$dir/out/upstream-api.token") =~ s/\s+//r;
my $json = JSON::PP->new->canonical;
my $tables = decode_json(slurp("$dir/out/route-tables.json"));
my ($table) = keys %{$tables->{routes}};
my ($host) = keys %{$tables->{routes}{$table}};
my $rendered = $tables->{routes}{$table}{$host};
my $ca = slurp(certs_dir() . '/ca.crt');

sub put {
    my %body = @_;
    return api_request($api, '/upstreams', 'PUT', $json->encode(\%body), $token);
}
# The rendered rules of the route's hostname, and before them a prefix
# PATH for each BACKEND => SCHEME given.
sub rules_with {
    my @extra = @_;
    my %entry = %$rendered;
    my (@actions, @matches);
    while (my ($path, $backend, $scheme) = splice @extra, 0, 3) {
        push @actions, {backends => [{backend => $backend, weight => 1, scheme => $scheme}]};
        push @matches, {path => {type => 'PathPrefix', value => $path}, action => scalar(@actions) - 1};
    }
    my $shift = @actions;
    $entry{actions} = [@actions, @{$rendered->{actions}}];
    $entry{matches} = [@matches, map { +{%$_, action => $_->{action} + $shift} } @{$rendered->{matches}}];
    return {$table => {$host => \%entry}};
}
sub answer {
    my ($path) = @_;
    my ($code, $h, $body) = request($port, 'GET', $path, "Host: example.com");
    my ($backend) = ($body // '') =~ /backend=(\S+)/;
    return join ' ', $code, $h->{'x-backend'} // $backend // '-';
}

is(answer('/'), '200 leaf', 'the route serves through the table');
my ($code, $reply) = put(routes => rules_with('/tls', 'gateway2nginx_spare_tls_0', 'https',
                                              '/plain', 'gateway2nginx_spare_plain_0', 'http'));
is($code, 200, 'rules that send to a spare of each kind are taken') or diag $reply;
like(answer('/tls'), qr/^50[23] -$/, 'a TLS spare has no live server: 5xx');
like(answer('/plain'), qr/^50[23] -$/, 'nor has a plaintext spare');

($code, $reply) = put(upstreams => {gateway2nginx_spare_tls_0 => {servers => [{address => '127.0.0.1:' . backend_port('leaf')}]}});
is($code, 200, 'servers for the TLS spare alone') or diag $reply;
is(answer('/tls'), '502 -', 'its policy trusts no key yet: refused, never unverified');

($code, $reply) = put(upstreams => {gateway2nginx_spare_tls_1 => {servers => [{address => '127.0.0.1:' . backend_port('leaf')}]},
                                    gateway2nginx_spare_plain_0 => {servers => [{address => '127.0.0.1:' . backend_port('plain')}]}},
                      policies => {'spare|1' => {ca => $ca, hostname => 'abc.example.com'}},
                      routes => rules_with('/tls', 'gateway2nginx_spare_tls_1', 'https',
                                           '/plain', 'gateway2nginx_spare_plain_0', 'http'));
is($code, 200, 'servers, trust and rules in one PUT') or diag $reply;
is(answer('/tls'), '200 leaf', 'the TLS spare serves, verified against the CA pushed');
is(answer('/plain'), '200 plain', 'the plaintext spare serves in plaintext');
is(answer('/'), '200 leaf', 'the rendered rules serve as before');

($code, $reply) = put(routes => rules_with('/tls', 'gateway2nginx_spare_tls_1', 'http'));
is($code, 409, 'plaintext to a TLS spare: refused') or diag $reply;
is(answer('/tls'), '200 leaf', 'and nothing changed');

is(worker_pids($master), $workers, 'all of it with no reload: the same workers');
stop_served();
