# conf-examples/: each example regenerates byte for byte into its
# expected/ output, twice over, and the result passes nginx -t with the
# built module.
use lib 't/lib';
use Test::GatewayTLS;
use Test::More;
use Cwd qw(abs_path);
use File::Find;

plan 'no_plan';
setup();
my $root = abs_path('.');
my $dir = servroot();
my $module_dir = $ENV{GTLS_MODULE} ? ($ENV{GTLS_MODULE} =~ s{/[^/]+$}{}r) : "$root/build/nginx/objs";

sub files_under {
    my $top = shift;
    my %files;
    find({ no_chdir => 1, wanted => sub {
        return unless -f $_;
        (my $rel = $_) =~ s{^\Q$top\E/}{};
        return if $rel =~ m{^(logs|temp)/} || $rel =~ m{\.token$};  # a secret of each OUTDIR
        local (@ARGV, $/) = ($_);
        $files{$rel} = <>;
    } }, $top);
    return \%files;
}

# The expected outputs are those for Debian 12's nginx (what is written
# follows the nginx's version and build): the byte-for-byte runs are told
# of that build by conf-examples/nginx-debian12, whichever nginx runs the
# tests; the checked run uses the real one.
my $debian12 = "$root/conf-examples/nginx-debian12";

for my $ex (qw(spiffe-backend system-ca weighted-two-policies rejected-policy tls-route)) {
    my @args = ('-f', "$root/conf-examples/gateway.yaml", '-f', "$root/conf-examples/$ex/manifests.yaml",
                '--port-offset', 28000, '--listen-address', '127.0.0.1', '--status-listen', '127.0.0.1:28113',
                '--allow-endpoints', '127.0.0.0/8', '--instance', 'example');
    my $expected = files_under("$root/conf-examples/$ex/expected");
    # run 3 on one thread: same bytes, same exit
    for my $run (1, 2, 3) {
        my ($rc, $out) = run_generator(@args, '--nginx', $debian12, ($run == 3 ? ('--jobs', 1) : ()), '-o', "$dir/$ex-$run");
        is($rc, 0, "$ex: run $run exits 0") or diag $out;
        my $got = files_under("$dir/$ex-$run");
        is_deeply([sort keys %$got], [sort keys %$expected], "$ex: run $run writes the expected files");
        for my $file (sort keys %$expected) {
            ok(defined $got->{$file} && $got->{$file} eq $expected->{$file},
               "$ex: run $run $file is byte-identical to conf-examples/$ex/expected/$file");
        }
    }
    my ($rc, $out) = run_generator(@args, '-o', "$dir/$ex-checked", '--module-dir', $module_dir, '--check');
    is($rc, 0, "$ex: the configuration passes nginx -t with the module") or diag $out;
    my $mode = (stat("$dir/$ex-checked/certs"))[2] & 07777;
    is(sprintf('%o', $mode), '700', "$ex: certs/ is private");
    # the status endpoint's bearer token: the operator's alone, and the
    # same across rewrites of one OUTDIR (the running nginx holds it)
    my $token_mode = (stat("$dir/$ex-checked/status.token"))[2] & 07777;
    is(sprintf('%o', $token_mode), '600', "$ex: status.token is the operator's alone");
    my $token = slurp("$dir/$ex-checked/status.token");
    like($token, qr/^[0-9a-f]{64}\n\z/, "$ex: status.token holds 256 random bits");
    ($rc, $out) = run_generator(@args, '-o', "$dir/$ex-checked", '--module-dir', $module_dir, '--check');
    is(slurp("$dir/$ex-checked/status.token"), $token, "$ex: a rewrite of OUTDIR keeps its token");
    isnt(slurp("$dir/$ex-1/status.token"), $token, "$ex: another OUTDIR has another token");
}

# bad input from the operator or a Gateway owner: exit 1, FILE:LINE:COL,
# and the previous output untouched
{
    my $bad = "$dir/bad.yaml";
    open my $fh, '>', $bad or die;
    print $fh "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: x}\nspec:\n"
            . "  gatewayClassName: ours\n  listeners:\n  - name: a\n    port: eighty\n    protocol: HTTP\n";
    close $fh;
    my $before = files_under("$dir/spiffe-backend-1");
    my ($rc, $out) = run_generator('-f', $bad, '-o', "$dir/spiffe-backend-1");
    is($rc, 1, 'bad input exits 1');
    like($out, qr{^\Q$bad\E:8:11: spec\.listeners\[0\]\.port: expected an integer}m, 'bad input names FILE:LINE:COL and the field');
    is_deeply(files_under("$dir/spiffe-backend-1"), $before, 'bad input leaves OUTDIR as it was');
}

# a tenant's bad object costs only its owner: a warning with FILE:LINE:COL
# and the field, and the configuration of everyone else is written
{
    my $bad = "$dir/bad-tenant.yaml";
    open my $fh, '>', $bad or die;
    print $fh "apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: demo}\nspec:\n  ports:\n  - port: eighty\n";
    close $fh;
    my ($rc, $out) = run_generator('-f', "$root/conf-examples/gateway.yaml", '-f', "$root/conf-examples/spiffe-backend/manifests.yaml",
                                   '-f', $bad, '-o', "$dir/tenant-out", '--port-offset', '28000', '--listen-address', '127.0.0.1',
                                   '--status-listen', '127.0.0.1:28113', '--instance', 'example', '--nginx', $debian12);
    is($rc, 0, "a tenant's bad Service does not stop the configuration");
    like($out, qr{warning: Service demo/x is rejected: \Q$bad\E:6:11: spec\.ports\[0\]\.port: expected an integer},
         'the warning names the object, FILE:LINE:COL and the field');
    is(slurp("$dir/tenant-out/http.conf"), slurp("$root/conf-examples/spiffe-backend/expected/http.conf"),
       'everyone else is rendered as without it');
}

# a full disk (a 1 KB file size limit, SIGXFSZ ignored so that the write
# fails): exit 1 naming the file, OUTDIR byte for byte as it was, no
# staging directory left behind
{
    my $before = files_under("$dir/spiffe-backend-1");
    my $generator = $ENV{GATEWAY2NGINX} || "$root/build/gateway2nginx";
    my $out = `sh -c 'trap "" XFSZ; ulimit -f 2; exec "\$0" "\$@"' $generator -f $root/conf-examples/gateway.yaml -f $root/conf-examples/tls-route/manifests.yaml -o $dir/spiffe-backend-1 2>&1`;
    is($? >> 8, 1, 'a failed write exits 1');
    like($out, qr/gateway2nginx: cannot write \S+/, 'a failed write names the file');
    is_deeply(files_under("$dir/spiffe-backend-1"), $before, 'a failed write leaves OUTDIR as it was');
    opendir(my $dh, $dir) or die;
    is_deeply([grep { /^\.spiffe-backend-1\.new-/ } readdir $dh], [], 'a failed write leaves no staging directory');
}

# a failing nginx check that no tenant object explains (here nginx cannot
# load the module, without any route or policy either) is the operator's:
# exit 2, saying what nginx said, OUTDIR untouched
{
    my $before = files_under("$dir/spiffe-backend-1");
    my ($rc, $out) = run_generator('-f', "$root/conf-examples/gateway.yaml",
                                   '-f', "$root/conf-examples/spiffe-backend/manifests.yaml",
                                   '-o', "$dir/spiffe-backend-1", '--module-dir', '/nonexistent', '--check');
    is($rc, 2, 'a failing nginx -t exits 2');
    like($out, qr{nginx -t refuses the configuration even without any route, policy or object of theirs: dlopen\(\) "/nonexistent/},
         'and says that no tenant object is at fault, with what nginx said');
    is_deeply(files_under("$dir/spiffe-backend-1"), $before, 'a failing nginx -t leaves OUTDIR as it was');
}

# --check runs nginx -t with no shell: an output path full of shell syntax
# is only a path (the harness's run_generator quotes for a shell, so the
# generator is started here without one too)
{
    my $odd = "$dir/odd'\$(touch pwned);`touch pwned2`";
    # absolute: the child changes directory before it runs the generator
    my ($generator, $modules) = map { m{^/} ? $_ : "$root/$_" }
        $ENV{GATEWAY2NGINX} || "$root/build/gateway2nginx", $module_dir;
    my @nginx = $ENV{TEST_NGINX_BINARY} ? ('--nginx', $ENV{TEST_NGINX_BINARY}) : ();
    my $pid = fork // die;
    if (!$pid) {
        chdir $dir or die;
        open STDOUT, '>', '/dev/null';
        exec { $generator } $generator, '-f', "$root/conf-examples/gateway.yaml",
            '-f', "$root/conf-examples/spiffe-backend/manifests.yaml", '-o', $odd, '--module-dir', $modules,
            '--port-offset', '28000', '--listen-address', '127.0.0.1', '--status-listen', '127.0.0.1:28113',
            @nginx, '--check';
        exit 127;
    }
    waitpid $pid, 0;
    is($? >> 8, 0, '--check passes with shell syntax in the output path');
    ok(-f "$odd/http.conf", 'the configuration is written at that very path');
    ok(!-e "$dir/pwned" && !-e "$dir/pwned2", 'nothing in the path was run by a shell');
}

# run as root, nginx -t runs as nobody with only CAP_NET_BIND_SERVICE: the
# listeners on ports 80 and 443 still pass the check
SKIP: {
    skip 'not root: nginx -t runs with our own privileges', 1 if $> != 0;
    my ($rc, $out) = run_generator('-f', "$root/conf-examples/gateway.yaml",
                                   '-f', "$root/conf-examples/spiffe-backend/manifests.yaml",
                                   '-o', "$dir/privileged-ports", '--module-dir', $module_dir, '--check');
    is($rc, 0, 'unprivileged nginx -t binds ports 80 and 443') or diag $out;
}

# --version prints one (t/202-usage.t: --help has every option)
{
    my ($vrc, $version) = run_generator('--version');
    is($vrc, 0, '--version exits 0');
    like($version, qr/^gateway2nginx \d+\.\d+\.\d+$/m, '--version');
}

# --reload: a running nginx keeps its pid file and logs across the swap,
# and is told to reload the new configuration
{
    my $out = "$dir/reloaded";
    my $offset = server_port() + 40 - 80;
    my @args = ('-f', "$root/conf-examples/gateway.yaml", '-f', "$root/conf-examples/spiffe-backend/manifests.yaml",
                '-o', $out, '--port-offset', $offset, '--listen-address', '127.0.0.1', '--module-dir', $module_dir,
                '--status-listen', '127.0.0.1:' . ($offset + 79));
    my ($rc, $msg) = run_generator(@args, '--check');
    is($rc, 0, 'reload: first generation') or diag $msg;
    start_nginx($out, 'nginx.conf', 80 + $offset);
    my ($status) = http_request(80 + $offset, '/pay', 'shop.example.com');
    is($status, 502, 'reload: the route is served (its backend is not running here: 502)');

    ($rc, $msg) = run_generator(@args, '--reload', "$out/nginx.pid");
    is($rc, 0, 'reload: regenerated with --reload') or diag $msg;
    ok(-f "$out/nginx.pid", 'reload: the pid file survives the swap');
    ok(wait_for(sub { count_in("$out/logs/error.log", qr/signal 1 \(SIGHUP\) received/)
                      && count_in("$out/logs/error.log", qr/reconfiguring/) }, 30),
       'reload: nginx got SIGHUP and reconfigured');
    ($status) = http_request(80 + $offset, '/nowhere', 'unknown.example.com');
    is($status, 404, 'reload: nginx still serves after the reload');
    stop_nginx($out);
}
