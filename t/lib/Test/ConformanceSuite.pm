package Test::ConformanceSuite;

# The conformance suite's tests as its own Go sources declare them
# (conformance/tests/*.go under GATEWAY_API_DIR): each test's ShortName,
# the features it needs, its manifests and whether it is provisional. The
# report counts by these, never by what a replay says of itself.

use strict;
use warnings;

use Exporter 'import';

our @EXPORT_OK = qw(suite_tests suite_profiles);

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

# The suite's Gateway profiles at CONFORMANCE, as utils/suite/profiles.go
# defines them: { 'GATEWAY-HTTP' => {core => [...], extended => [...] or
# undef, sets => [...]} }. Core features are listed there; extended ones
# are sets pkg/features defines (`sets`, their names), resolved where a
# checkout has pkg/features beside conformance/ (else `extended` is
# undef). Undef where profiles.go is not there.
sub suite_profiles {
    my ($conformance) = @_;
    my $go = "$conformance/utils/suite/profiles.go";
    -f $go or return undef;
    my $text = do { local (@ARGV, $/) = ($go); <> };
    my %names = $text =~ /^\s*(\w+)\s+ConformanceProfileName\s*=\s*"([^"]+)"/mg;
    my $sets = _feature_sets("$conformance/../pkg/features");
    my %out;
    while ($text =~ /^\s*\w+ConformanceProfile = ConformanceProfile\{\n(.*?)\n\s*\}\n/msg) {
        my $body = $1;
        my ($const) = $body =~ /^\s*Name:\s*(\w+),/m or die "$go: a ConformanceProfile with no Name\n";
        my $name = $names{$const} // die "$go: $const is not a ConformanceProfileName\n";
        next unless $name =~ /^GATEWAY-/;
        my ($core, $extended) = $body =~ /CoreFeatures:(.*?)\n\s*ExtendedFeatures:(.*)/s
            or die "$go: $name: no CoreFeatures and ExtendedFeatures\n";
        my @sets = $extended =~ /features\.(\w+Features)\b/g;
        my @direct = $extended =~ /features\.Support(\w+)/g;
        my @unknown = grep { !$sets->{$_} } @sets;
        $out{$name} = {core => [$core =~ /features\.Support(\w+)/g], sets => \@sets,
                       extended => ($sets && !@unknown ? [@direct, map { @{$sets->{$_}} } @sets] : undef)};
    }
    return \%out;
}

# pkg/features' sets in DIR: { XFeatures => [feature names] }, of Feature
# variables (Name: SupportX); undef without DIR
sub _feature_sets {
    my ($dir) = @_;
    my @files = glob("$dir/*.go") or return undef;
    my $text = join "\n", map { local (@ARGV, $/) = ($_); <> } @files;
    my %feature = $text =~ /^\s*(?:var\s+)?(\w+)\s*=\s*Feature\{\s*Name:\s*Support(\w+),/mg;
    my %sets;
    while ($text =~ /^\s*(?:var\s+)?(\w+Features)\s*=\s*sets\.New\((.*?)\)\n/msg) {
        my ($set, $members) = ($1, $2);
        $members =~ s{//[^\n]*}{}g;
        $sets{$set} = [map { $feature{$_} // die "$dir: $set: $_ is not a Feature of pkg/features\n" } $members =~ /(\w+)/g];
    }
    return \%sets;
}

1;
