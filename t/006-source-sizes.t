#!/usr/bin/perl
# Sizes a reader can hold: no source file of the generator or the
# module over 900 lines, and in the newest parts (run/, kube/, the
# upstream API) none over 700 and no function over 80 lines. A function
# is a signature line followed by "{" at its indent, up to the "}" there.

use strict;
use warnings;
use FindBin;
use Test::More;

my $root = "$FindBin::Bin/..";
chdir $root or die "$root: $!";

sub lines_of {
    my ($file) = @_;
    open my $fh, '<', $file or die "$file: $!";
    my @lines = <$fh>;
    return @lines;
}

# (name, first line, length) of each function defined in @lines
sub functions {
    my @lines = @_;
    my @found;
    for my $i (0 .. $#lines - 1) {
        next unless $lines[$i] =~ /^(\s*)([A-Za-z_~][^;{}]*\))\s*(?:const|override|noexcept|final|\s)*$/;
        my ($indent, $signature) = ($1, $2);
        next unless $lines[$i + 1] =~ /^\Q$indent\E\{\s*$/;
        next if $signature =~ /^(?:if|for|while|switch|catch|else)\b/;
        for my $j ($i + 2 .. $#lines) {
            if ($lines[$j] =~ /^\Q$indent\E\}/) {
                my ($name) = $signature =~ /([~\w:]+)\s*\(/;
                push @found, [$name // $signature, $i + 1, $j - $i + 1];
                last;
            }
        }
    }
    return @found;
}

my @all = (glob('generator/src/*.{cc,h}'), glob('generator/src/*/*.{cc,h}'),
           glob('ngx_module/*.{cc,h}'), glob('ngx_module/core/*.{cc,h}'));
my @newest = (glob('generator/src/run/*.{cc,h}'), glob('generator/src/kube/*.{cc,h}'),
              glob('ngx_module/ngx_http_gateway_tls_upstream_*.{cc,h}'));
ok(@all > 100 && @newest > 20, scalar(@all) . ' source files, ' . scalar(@newest) . ' of them the newest');

my @long = grep { lines_of($_) > 900 } @all;
is("@long", '', 'no source file over 900 lines');
my @over = map { "$_ (" . lines_of($_) . ')' } grep { lines_of($_) > 700 } @newest;
is("@over", '', 'no file of run/, kube/ or the upstream API over 700 lines');

my ($counted, @long_functions) = (0);
for my $file (@newest) {
    for my $f (functions(lines_of($file))) {
        $counted++;
        push @long_functions, "$file:$f->[1] $f->[0] ($f->[2] lines)" if $f->[2] > 80;
    }
}
ok($counted > 150, "$counted functions found in them");
is(join("\n", @long_functions), '', 'no function there over 80 lines');

# the counter finds a long function, indented or not
my @sample = ("int f(int a)\n", "{\n", map({ "    x();\n" } 1 .. 90), "}\n",
              "    void g() const\n", "    {\n", "        y();\n", "    }\n");
is_deeply([map { "$_->[0]:$_->[2]" } functions(@sample)], ['f:93', 'g:4'], 'functions are measured');

done_testing();
