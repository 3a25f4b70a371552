#!/usr/bin/perl
# Writes the ConformanceReport of the conformance replays' results:
#   conformance-report.pl OUT [RESULTS.json ...]
# (default: every t/servroot-*/conformance-results.json), and prints it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin";
use Test::ConformanceReport qw(write_report);

my $out = shift or die "usage: $0 OUT [RESULTS.json ...]\n";
my @files = @ARGV ? @ARGV : glob("$FindBin::Bin/../servroot-*/conformance-results.json");
die "no conformance results: run make conformance (or make test-nginx) first\n" unless @files;
my $api = $ENV{GATEWAY_API_DIR} or die "GATEWAY_API_DIR is not set: the report needs the suite's conformance/ directory\n";
# the counts are the suite's declarations (its tests' Go sources): a copy
# of its manifests alone makes no report
if (!glob("$api/conformance/tests/*.go")) {
    warn "ConformanceReport: not written: $api/conformance/tests holds no Go sources of the suite's tests, "
       . "whose declarations it counts by (GATEWAY_API_VERSION=vX.Y.Z: a release's copy that does)\n";
    unlink $out;  # (not one of an earlier run, taken for this one's)
    exit 0;
}
print write_report($out, "$api/conformance", @files);
warn "ConformanceReport: $out\n";
