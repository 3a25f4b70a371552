# Every program the tests run is one `make deps` installs (or Essential):
# the Debian 13 and unstable chroots have a minimal system, so a tool that
# only happens to be on this machine (procps' ps was one) fails there, in
# CI, and nowhere else. Each command the tests start by name (backticks,
# system, exec) must be in the table below, and its package in the
# Makefile's DEPS.
use strict;
use warnings;
use Test::More;
use FindBin;

my $root = "$FindBin::Bin/..";
my %package = (
    base64 => 'coreutils', echo => 'coreutils', sleep => 'coreutils', touch => 'coreutils', timeout => 'coreutils', chroot => 'coreutils', sh => 'dash',
    exec => 'dash', command => 'dash',   # the shell's own
    'dpkg-query' => 'dpkg', unshare => 'util-linux', setpriv => 'util-linux', prlimit => 'util-linux', nsenter => 'util-linux', make => 'make', perl => 'perl',
    curl => 'curl', openssl => 'openssl', nginx => 'nginx-core', python3 => 'python3-yaml',
    wrk => 'wrk', promtool => 'prometheus', kubectl => 'kubernetes-client', help2man => 'help2man',
    ip => 'iproute2', umoci => 'umoci', valgrind => 'valgrind', gateway2nginx => '(built)',
);
my %essential = map { $_ => 1 } qw(coreutils dash dpkg util-linux perl (built));

open my $mk, '<', "$root/Makefile" or die "Makefile: $!";
my $makefile = do { local $/; <$mk> };
$makefile =~ s/\\\n/ /g;
my %deps;
while ($makefile =~ /^(?:[\w-]+:\s*)?(?:\w*DEPS)\s*(?::=|\+=)\s*(.*)$/mg) {
    my $list = $1;
    $deps{$_} = 1 for grep { !/\$/ } split ' ', $list;
}
ok($deps{'nginx-core'} && $deps{curl}, 'the Makefile\'s DEPS read (' . scalar(keys %deps) . ' packages)');
# kubernetes-client is added by the deps rule where the release has one
$deps{'kubernetes-client'} = 1 if $makefile =~ /echo kubernetes-client/;

my %seen;
for my $file (glob("$root/t/*.t"), glob("$root/t/lib/Test/*.pm")) {
    open my $fh, '<', $file or die "$file: $!";
    (my $name = $file) =~ s{^\Q$root\E/}{};
    while (my $line = <$fh>) {
        next if $line =~ /^\s*#/;
        $line =~ s/\s#\s.*$//;
        my @commands;
        push @commands, $1 while $line =~ /`\s*([a-z][\w.-]*)[\s`]/g;
        push @commands, $1 while $line =~ /\b(?:system|exec)\s*\(?\s*(?:\{[^}]*\}\s*)?['"](?:\/usr\/s?bin\/)?([a-z][\w.-]*)['"\s]/g;
        push @{ $seen{$_} }, "$name:$." for @commands;
    }
}
ok(keys %seen > 5, 'commands found in the tests: ' . join(' ', sort keys %seen));
for my $command (sort keys %seen) {
    my $where = $seen{$command}[0];
    my $package = $package{$command};
    ok(defined $package, "$command ($where) is in this test's table") or next;
    ok($essential{$package} || $deps{$package}, "$command: its package $package is in the Makefile's DEPS");
}
done_testing();
