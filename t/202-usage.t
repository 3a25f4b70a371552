# The command line is written once, in generator/src/cli.cc: every option
# parse_args takes is in --help, the usage block of docs/gateway2nginx.md
# is --help as it is (make docs), every option the page names exists, and
# the man page help2man makes of --help (make man) has every option.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Test::GatewayTLS qw(run_generator);

my $root = "$FindBin::Bin/..";
sub slurp { local (@ARGV, $/) = @_; <> }

my $cli = slurp("$root/generator/src/cli.cc");
# the flag tables' rows: {"--name", "-n" or "", ...
my %taken = map { $_ => 1 } grep { $_ ne '' } $cli =~ /^\s*\{"(--[-\w]+)", "(-\w|)",/mg;
ok(keys %taken >= 25, 'the options parse_args takes: ' . scalar(keys %taken));

my ($rc, $help) = run_generator('--help', '--no-test-endpoints');
is($rc, 0, '--help exits 0');
for my $option (sort keys %taken) {
    like($help, qr/^\s+(?:-\w, )?\Q$option\E\b/m, "--help has a line for $option");
}
# what other programs take, named where they are: kubectl get --watch
# --output-watch-events, nginx's ./configure --modules-path, --with-stream
my %foreign = map { $_ => 1 } qw(--watch --output-watch-events --modules-path --with-stream);
my %in_help = map { $_ => 1 } $help =~ /(?:^|[\s\[(])(--[a-z][-a-z]*)/mg;
for my $option (grep { !$foreign{$_} } sort keys %in_help) {
    ok($taken{$option}, "$option in --help is an option parse_args takes");
}

my $page = slurp("$root/docs/gateway2nginx.md");
my ($block) = $page =~ /<!-- usage: [^\n]*-->\n```\n(.*?)```\n<!-- end usage -->/s;
ok(defined $block, 'docs/gateway2nginx.md has the usage block');
is($block, $help, 'its usage block is --help as it is (make docs copies it)');
(my $prose = $page) =~ s/<!-- usage:.*?<!-- end usage -->//s;
my %named = map { $_ => 1 } $prose =~ /`(--[a-z][-a-z]*)/g;
for my $option (grep { !$foreign{$_} } sort keys %named) {
    ok($taken{$option}, "$option, named in docs/gateway2nginx.md, is an option");
}

# numbers out of range are usage errors, said (status 1)
for my $bad (['--kube-api-qps', '0', 'takes 0.1 to 1000'], ['--kube-api-qps', '5x', 'takes 0.1 to 1000'],
             ['--kube-api-burst', '0', 'takes 1 to 10000']) {
    my $bin = $ENV{GATEWAY2NGINX} || "$root/build/gateway2nginx";
    my $said = `'$bin' run -f /dev/null -o /nonexistent $bad->[0] $bad->[1] 2>&1`;
    is($? >> 8, 1, "run $bad->[0] $bad->[1]: a usage error");
    like($said, qr/\Q$bad->[0] $bad->[2]\E/, 'said so');
}

SKIP: {
    skip 'help2man is not installed (make deps installs it)', 1 unless -x '/usr/bin/help2man';
    my $bin = $ENV{GATEWAY2NGINX} || "$root/build/gateway2nginx";
    my $man = `help2man --no-info --section=1 --include='$root/debian/gateway2nginx.h2m' '$bin' 2>&1`;
    is($?, 0, 'help2man makes the man page') or diag $man;
    $man =~ s/\\-/-/g;
    for my $option (sort keys %taken) {
        like($man, qr/\Q$option\E\b/, "the man page has $option");
    }
    like($man, qr/gateway2nginx run/, 'the man page has gateway2nginx run');
}

done_testing();
