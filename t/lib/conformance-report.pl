#!/usr/bin/perl
# Writes the ConformanceReports of the conformance replays' results, one
# per mode the replays served in (render, run), to PREFIX-MODE.yaml:
#   conformance-report.pl PREFIX [RESULTS.json ...]
# (default: every t/servroot-*/conformance-results.json), and prints them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin";
use Test::ConformanceReport qw(write_report results_by_mode);

my $prefix = shift or die "usage: $0 PREFIX [RESULTS.json ...]\n";
my @files = @ARGV ? @ARGV : glob("$FindBin::Bin/../servroot-*/conformance-results.json");
die "no conformance results: run make conformance (or make test-nginx) first\n" unless @files;
my $api = $ENV{GATEWAY_API_DIR} or die "GATEWAY_API_DIR is not set: the report needs the suite's conformance/ directory\n";
# the counts are the suite's declarations (its tests' Go sources): a copy
# of its manifests alone makes no report
if (!glob("$api/conformance/tests/*.go")) {
    warn "ConformanceReport: not written: $api/conformance/tests holds no Go sources of the suite's tests, "
       . "whose declarations it counts by (GATEWAY_API_VERSION=vX.Y.Z: a release's copy that does)\n";
    unlink glob("$prefix-*.yaml");  # (not those of an earlier run, taken for this one's)
    exit 0;
}
my $by_mode = results_by_mode(@files);
for my $mode (sort keys %$by_mode) {
    my $out = "$prefix-$mode.yaml";
    print write_report($out, "$api/conformance", @{$by_mode->{$mode}});
    warn "ConformanceReport: $out\n";
}
