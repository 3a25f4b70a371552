package Test::ConformanceSuite;

# The conformance suite's tests as its own Go sources declare them
# (conformance/tests/*.go under GATEWAY_API_DIR): each test's ShortName,
# the features it needs, its manifests and whether it is provisional. The
# report counts by these, never by what a replay says of itself.

use strict;
use warnings;

use Exporter 'import';

our @EXPORT_OK = qw(suite_tests);

# { ShortName => {name, features => [...], manifests => [stem, ...],
# provisional => 0|1, file} } of the suite at CONFORMANCE (its conformance/
# directory). A feature is named as pkg/features names its constant:
# features.SupportX is "X". Dies naming the file and test whose declaration
# is not the literal this reads (a revision that writes them otherwise is
# to be read, not guessed at). Undef where the directory holds the tests'
# manifests alone, no Go sources.
sub suite_tests {
    my ($conformance) = @_;
    my %tests;
    my @files = sort glob("$conformance/tests/*.go");
    return undef unless @files;
    for my $file (@files) {
        my $text = do { local (@ARGV, $/) = ($file); <> };
        my $rel = $file =~ s{^\Q$conformance\E/}{}r;
        # each test: a ConformanceTest literal, up to its Test function
        while ($text =~ /\bConformanceTest\{(.*?)\n\tTest:/sg) {
            my $fields = $1;
            my ($name) = $fields =~ /^\s*ShortName:\s*"([^"]+)",/m
                or die "$rel: a ConformanceTest with no ShortName literal\n";
            my ($features) = $fields =~ /^\s*Features:\s*\[\]features\.FeatureName\{(.*?)\}/ms
                or die "$rel: $name: no Features literal ([]features.FeatureName{...})\n";
            my @features;
            for my $item (grep { /\S/ } split /,/, $features =~ s{//[^\n]*}{}gr) {
                my ($feature) = $item =~ /^\s*features\.Support(\w+)\s*$/
                    or die "$rel: $name: a feature that is not features.SupportX: '" . ($item =~ s/^\s+|\s+$//gr) . "'\n";
                push @features, $feature;
            }
            my ($manifests) = $fields =~ /^\s*Manifests:\s*\[\]string\{([^}]*)\}/m;
            my @manifests = map { m{^tests/(.+)\.yaml$} ? $1 : die "$rel: $name: manifest $_ is not tests/NAME.yaml\n" }
                            ($manifests // '') =~ /"([^"]+)"/g;
            die "$rel: $name: declared twice (also in $tests{$name}{file})\n" if $tests{$name};
            $tests{$name} = {name => $name, features => \@features, manifests => \@manifests,
                             provisional => ($fields =~ /^\s*Provisional:\s*true,/m ? 1 : 0), file => $rel};
        }
    }
    return \%tests;
}

1;
