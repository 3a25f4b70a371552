#!/usr/bin/env bash
# Memory of the upstream API's body reader (issue 35, finding 9): peak
# resident bytes added per body byte, for a push nginx takes (10,000
# upstreams of 3 servers, as gateway2nginx writes them) and for two it
# refuses, 8 MB each: one server too many at the end of the largest list,
# and a bad address in the last server. Target: a few bytes per byte, and
# a refused body no dearer than one taken.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$PWD/build/bench/api_body_memory
mkdir -p "$build"
g++ -O2 -std=c++17 -Ingx_module/core -o "$build/api_body_memory" bench/api_body_memory.cc \
    ngx_module/core/gtls_upstream_api.cc ngx_module/core/gtls_upstream_api_json.cc ngx_module/core/gtls_json.cc \
    ngx_module/core/gtls_spec.cc ngx_module/core/gtls_match.cc \
    -lssl -lcrypto -lpcre2-8
server='{"address":"10.1.2.3:8443","weight":1,"max_conns":0,"max_fails":1,"fail_timeout":10,"down":false}'
perl -e '
    my ($server, $build) = @ARGV;
    open my $taken, ">", "$build/taken.json" or die;
    print $taken "{\"upstreams\":{", join(",", map { "\"backend_ns_svc$_\_443\":{\"servers\":[" . join(",", ($server) x 3) . "]}" } 1 .. 10000), "}}";
    my $n = int(8e6 / (length($server) + 1));
    my $per = 10000;
    my @lists = map { "\"u$_\":{\"servers\":[" . join(",", ($server) x $per) . "]}" } 1 .. int($n / $per);
    open my $many, ">", "$build/too-many.json" or die;
    print $many "{\"upstreams\":{", join(",", @lists[0 .. $#lists - 1], "\"last\":{\"servers\":[" . join(",", ($server) x ($per + 1)) . "]}"), "}}";
    (my $bad = $server) =~ s/10\.1\.2\.3/10.1.2.256/;
    open my $wrong, ">", "$build/bad-address.json" or die;
    print $wrong "{\"upstreams\":{", join(",", @lists, "\"last\":{\"servers\":[$bad]}"), "}}";
' "$server" "$build"
printf '%-16s %12s %14s %10s %8s\n' body bytes peak-added bytes/byte status
for body in taken too-many bad-address; do
    read -r size peak status _ < <("$build/api_body_memory" "$build/$body.json")
    printf '%-16s %12d %14d %10.2f %8s\n' "$body" "$size" "$peak" "$(echo "$peak / $size" | bc -l)" "$status"
done
