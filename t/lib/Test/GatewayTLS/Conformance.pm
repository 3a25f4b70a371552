package Test::GatewayTLS::Conformance;

# Replays of the Gateway API conformance suite's manifests
# (GATEWAY_API_DIR): setup, a served Gateway, the conditions it reports.

use strict;
use warnings;

use Digest::SHA ();
use Exporter 'import';
use File::Path qw(make_path remove_tree);
use POSIX ();
use Test::More ();
use Time::HiRes qw(sleep time);

use Test::GatewayTLS::Env qw(:DEFAULT $Module $ServRoot _setup);
use Test::GatewayTLS::Nginx;
use Test::GatewayTLS::Generator;

our @EXPORT = qw(conformance_begin conformance_conditions conformance_dir conformance_drop_kind
                conformance_has conformance_manifests conformance_mode conformance_newer_route conformance_setup
                serve_conformance_gateway start_conformance_run conformance_run_settled start_ready_server
                stop_conformance_gateway stop_conformance_run tls_secret_yaml weighted_shares);

# How the replays serve the suite's Gateways: 'render' (gateway2nginx -f
# renders each generation, nginx is started or reloaded with it) or 'run'
# (gateway2nginx run -f watches the manifests, starts nginx and applies
# each later generation itself, pushed or reloaded as it decides). The
# t/4*-run.t files set GTLS_CONFORMANCE_MODE=run; each mode's results make
# a ConformanceReport of their own.
sub conformance_mode {
    my $mode = $ENV{GTLS_CONFORMANCE_MODE} // 'render';
    die "GTLS_CONFORMANCE_MODE=$mode: render or run\n" unless $mode =~ /^(?:render|run)$/;
    return $mode;
}

# ---- gateway2nginx run serving one Gateway ----------------------------------

my (%RunPid, %RunRead, %RunWorkers);  # by OUTDIR: its run, how much of its log was read, its nginx's workers then

# What run logs once OUTDIR (status.yaml) holds what it applied last, and
# nginx serves it (route tables filled after a start or a reload); and
# what it logs while OUTDIR is still to catch up. Input it found bad (a
# file read while written) is not what it settles on: the next read is.
my $RunSettled = qr/OUTDIR written with the servers pushed since|after (?:the reload|nginx started), \d+ upstream|after (?:the reload|nginx started) failed|no change to the configuration or the status|the configuration nginx runs is unchanged|refuses the configuration/;
my $RunBehind = qr/pushed to nginx, no reload/;

# Starts gateway2nginx run -f MANIFESTS -o OUT for Gateway NAME of the
# suite's namespace alone ('': every Gateway), starting its nginx, with ARGS; waits until
# nginx serves (and, with --routes table, its tables are filled). Returns
# '' or why it does not serve.
sub start_conformance_run {
    my ($out, $manifests, $name, @args) = @_;
    my $log = "$out.run.log";
    remove_tree($out);
    unlink $log;
    my $module_dir = $Module =~ s{/[^/]+$}{}r;
    my @gateway = $name ne '' ? ('--gateway', "gateway-conformance-infra/$name") : ();
    my $pid = start_run($log, '-f', $manifests, '-o', $out, @gateway,
                        '--module-dir', $module_dir, '--status-listen', 'off', '--nginx', nginx_binary(),
                        '--start-nginx', '--shutdown-delay', '1ms', '--debounce', '50', @args);
    $RunPid{$out} = $pid;
    my $table = grep { $_ eq 'table' } @args;
    my $started = $table ? qr/after nginx started, \d+ upstream|after nginx started failed/ : qr/nginx started/;
    my $serves = sub { -f $log && slurp($log) =~ $started };
    wait_for(sub { $serves->() || waitpid($pid, POSIX::WNOHANG()) != 0 }, 15);
    return "gateway2nginx run for $name serves nothing:\n" . (-f $log ? slurp($log) : '') unless $serves->();
    $RunRead{$out} = length slurp($log);
    $RunWorkers{$out} = _workers($out);
    return '';
}

# The master of the nginx serving OUT and its workers ("PID PID ...")
sub _master { my ($out) = @_; return -f "$out/nginx.pid" ? slurp("$out/nginx.pid") =~ s/\s+//gr : '' }
sub _workers { my $master = _master(@_); return $master ? worker_pids($master) : '' }

# Whether the run of OUT applied what changed since it was last asked:
# waited for, up to 15 s. After a reload, until the workers before it
# are gone: they may accept a connection still, served as before, while
# they shut down.
sub conformance_run_settled {
    my ($out) = @_;
    my $log = "$out.run.log";
    my $settled = sub {
        my $text = substr(-f $log ? slurp($log) : '', $RunRead{$out} // 0);
        my ($settled, $behind) = (-1, -1);
        while ($text =~ /($RunSettled)|$RunBehind/g) {
            if (defined $1) { $settled = pos($text) } else { $behind = pos($text) }
        }
        return $settled > $behind;
    };
    my $ok = wait_for($settled, 15);
    $RunRead{$out} = length(slurp($log) // '');
    $ok &&= !_master($out) || wait_workers_replaced(_master($out), $RunWorkers{$out} // '');
    $RunWorkers{$out} = _workers($out);
    return $ok;
}

# Stops the run of OUT, and its nginx at once (TERM), as mode render's
# replays stop theirs: the run's own stop lets what is in flight end,
# which for a UDP session is its proxy_timeout (10 minutes).
sub stop_conformance_run {
    my ($out) = @_;
    my $run = delete $RunPid{$out} or return;
    kill 'TERM', $run;
    my $master = _master($out);
    kill 'TERM', $master if $master;
    my $deadline = time + 10;
    sleep 0.02 while waitpid($run, POSIX::WNOHANG()) == 0 && time < $deadline;
    kill('KILL', $run), waitpid($run, 0) if kill 0, $run;
}

# ---- one Gateway served at a time --------------------------------------------

my $ConformanceRunning;  # the out dir of the nginx (or run) serve_conformance_gateway started
my %Served;  # by out dir, in run mode: the manifests' digest it last applied

sub stop_conformance_gateway {
    if ($ConformanceRunning && $RunPid{$ConformanceRunning}) {
        stop_conformance_run($ConformanceRunning);
    } elsif ($ConformanceRunning) {
        stop_nginx($ConformanceRunning, 'TERM');
    }
    $ConformanceRunning = undef;
}

# What the files of DIR hold, as one digest
sub _manifests_digest {
    my ($dir) = @_;
    my $sha = Digest::SHA->new(256);
    $sha->add($_, "\0", slurp($_), "\0") for sort glob("$dir/*.yaml");
    return $sha->hexdigest;
}

# The Gateway API conformance suite: GATEWAY_API_DIR/conformance, where
# GATEWAY_API_DIR is a checkout (or release tree) of kubernetes-sigs/gateway-api.
sub conformance_dir {
    my $api = $ENV{GATEWAY_API_DIR};
    return undef unless defined $api && length $api;
    return "$api/conformance";
}

# Whether the suite (conformance_dir()) holds the manifests named: those of
# a test newer than its release (a copy of a tag) are not there, and such a
# test is not in that release (not run, not counted).
sub conformance_has {
    my $shared = conformance_dir();
    return !grep { !-f "$shared/tests/$_.yaml" } @_;
}

# The start of a conformance replay: skips, saying why, without the suite,
# else sets up servroot; returns the suite's directory and the directory
# the manifests go to.
sub conformance_begin {
    my $shared = conformance_dir();
    Test::More::plan(skip_all => 'GATEWAY_API_DIR is not set: no Gateway API conformance manifests to replay '
                                 . '(set it to a checkout of kubernetes-sigs/gateway-api)') unless defined $shared;
    Test::More::plan(skip_all => "GATEWAY_API_DIR=$ENV{GATEWAY_API_DIR} has no conformance/ directory: "
                                 . 'no Gateway API conformance manifests to replay') unless -d $shared;
    Test::More::plan('no_plan');
    _setup();
    make_path("$ServRoot/manifests");
    return ($shared, "$ServRoot/manifests");
}

# The Gateway API conformance suite (conformance_dir()): its
# base manifests and the manifests of TESTS, with our GatewayClass name, as
# DIR/00-base.yaml and DIR/10-TEST.yaml; returns all of them as one text.
# Those the suite does not hold (conformance_has) are left out.
sub conformance_manifests {
    my ($shared, $dir, @tests) = @_;
    my $all = '';
    for my $file (['00-base.yaml', "$shared/base/manifests.yaml"],
                  map { ["10-$_.yaml", "$shared/tests/$_.yaml"] } grep { conformance_has($_) } @tests) {
        (my $text = slurp($file->[1])) =~ s/\{GATEWAY_CLASS_NAME\}/gateway2nginx/g;
        spit("$dir/$file->[0]", $text);
        $all .= "\n---\n$text";
    }
    return $all;
}

# A kubernetes.io/tls Secret in the suite's namespace (or NAMESPACE)
# holding certificate NAME.
sub tls_secret_yaml {
    my ($secret, $cert, $ns) = @_;
    return secret_yaml($secret, $ns // 'gateway-conformance-infra', cert => $cert);
}

# What the suite creates at start: our GatewayClass, the CA ConfigMap
# tls-checks-ca-certificate (the test set's CA) and mismatch-ca-certificate
# (a CA that signed none of the backends' certificates).
sub conformance_setup {
    my $ca_map = sub {
        my ($name, $file) = @_;
        (my $ca = slurp(certs_dir() . "/$file")) =~ s/^/    /mg;
        return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: $name\n"
             . "  namespace: gateway-conformance-infra\ndata:\n  ca.crt: |\n$ca";
    };
    return "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: gateway2nginx\n"
         . "spec:\n  controllerName: gateway2nginx.io/controller\n"
         . $ca_map->('tls-checks-ca-certificate', 'ca.crt') . $ca_map->('mismatch-ca-certificate', 'unrelated-ca.crt');
}

# Starts COMMAND (a list), which prints "ready" once it listens; it is
# stopped when the test ends (track_child).
sub start_ready_server {
    my @command = @_;
    pipe(my $ready, my $w) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $ready;
        open STDOUT, '>&', $w or die;
        exec @command or die "exec: $!";
    }
    close $w;
    track_child($pid);
    my $line = <$ready> // '';
    die "$command[1] did not start\n" unless $line eq "ready\n";
    return $pid;
}

# The newer route the suite's MultipleRoutesAttachment tests create a second
# after the older one (KIND NEWER on listener SECTION of GATEWAY, to BACKEND
# port PORT), added to manifest FILE with the creationTimestamps the API
# server would set both; returns the file's text before, to put back.
sub conformance_newer_route {
    my ($file, $kind, $older, $newer, $gateway, $section, $backend, $port) = @_;
    my $orig = slurp($file);
    (my $text = $orig) =~ s/^(  name: \Q$older\E\n)/$1  creationTimestamp: "2026-01-01T00:00:00Z"\n/m
        or die "no $older in $file\n";
    spit($file, $text . "\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: $kind\nmetadata:\n  name: $newer\n"
               . "  namespace: gateway-conformance-infra\n  creationTimestamp: \"2026-01-01T00:00:01Z\"\n"
               . "spec:\n  parentRefs:\n  - name: $gateway\n    sectionName: $section\n  rules:\n  - backendRefs:\n"
               . "    - name: $backend\n      port: $port\n");
    return $orig;
}

# Manifest FILE without its objects of KIND (the suite deleting them);
# returns its text before, to put back.
sub conformance_drop_kind {
    my ($file, $kind) = @_;
    my $orig = slurp($file);
    spit($file, join '---', grep { !/^kind: \Q$kind\E\s*$/m } split /^---/m, $orig);
    return $orig;
}

# The suite's weight.TestWeightedDistribution: TOTAL answers from SAMPLE (a
# sub returning the backend that answered, or undef), each backend's share
# of WANT (backend -> share) within 0.05, tried up to weight.MaxTestRetries
# (10) times; '' when a try was within, else what was off in the last.
sub weighted_shares {
    my ($sample, $want, $total) = @_;
    my @off;
    for (1 .. 10) {
        my %count;
        $count{$sample->() // 'none'}++ for 1 .. $total;
        @off = map { sprintf('%s has %.3f, %.2f wanted', $_, ($count{$_} // 0) / $total, $want->{$_}) }
               grep { abs(($count{$_} // 0) / $total - $want->{$_}) > 0.05 } sort keys %$want;
        push @off, "$count{none} not answered" if $count{none};
        return '' unless @off;
    }
    return join '; ', @off;
}

# Renders one Gateway of the suite's namespace alone (--gateway, nginx -t
# included; GATEWAY '': every one, into servroot/out) into servroot/out-GATEWAY with every listener port + OFFSET and,
# given FIRST_PORT (a TCP port, or a UDP one with PROTO 'udp'), starts its
# nginx (stopping the one started before); returns its status, keyed as
# read_status does.
sub serve_conformance_gateway {
    my ($manifests, $gateway, $offset, $first_port, $proto) = @_;
    my $out = $gateway ne '' ? "$ServRoot/out-$gateway" : "$ServRoot/out";
    return _serve_by_run($manifests, $gateway, $offset, $out) if conformance_mode() eq 'run';
    stop_conformance_gateway();  # its test is over
    my $module_dir = $Module =~ s{/[^/]+$}{}r;
    my @gateway = $gateway ne '' ? ('--gateway', "gateway-conformance-infra/$gateway") : ();
    my ($rc, $output) = run_generator('-f', $manifests, '-o', $out, @gateway,
                                      '--port-offset', $offset, '--listen-address', '127.0.0.1',
                                      '--module-dir', $module_dir, '--status-listen', 'off', '--check');
    Test::More::is($rc, 0, "$gateway: gateway2nginx writes a configuration that passes nginx -t")
        or Test::More::diag($output);
    if ($first_port) {
        start_nginx($out, 'nginx.conf', $first_port + $offset, undef, $proto);
        $ConformanceRunning = $out;
    }
    return read_status("$out/status.yaml");
}

# In run mode: the run serving GATEWAY (its nginx started whatever the
# test asks of it) goes on serving it while the test edits the manifests,
# each edit applied by run itself; another Gateway's run is stopped first.
sub _serve_by_run {
    my ($manifests, $gateway, $offset, $out) = @_;
    my $digest = _manifests_digest($manifests);
    if (($ConformanceRunning // '') ne $out || !$RunPid{$out}) {
        stop_conformance_gateway();  # its test is over
        my $why = start_conformance_run($out, $manifests, $gateway, '--port-offset', $offset,
                                        '--listen-address', '127.0.0.1',
                                        '--upstream-api', '127.0.0.1:' . (server_port() + 18));
        Test::More::is($why, '', "$gateway: gateway2nginx run serves it");
        $ConformanceRunning = $out;
    } elsif ($Served{$out} ne $digest) {
        Test::More::ok(conformance_run_settled($out), "$gateway: gateway2nginx run applied the edit")
            or Test::More::diag(slurp("$out.run.log"));
    }
    $Served{$out} = $digest;
    return -f "$out/status.yaml" ? read_status("$out/status.yaml") : {};
}

# The conditions (and listener entries) of one object of the suite's namespace.
sub conformance_conditions {
    my ($status, $kind, $name) = @_;
    return join "\n", @{$status->{"$kind gateway-conformance-infra/$name"} || []};
}

1;
