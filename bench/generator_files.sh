#!/usr/bin/env bash
# gateway2nginx on N routes (each with its Service, EndpointSlice and
# BackendTLSPolicy) written as one file against the same objects written
# one file per object (as a config sync or a per-object export writes
# them), interleaved, median of $RUNS (default 5): wall seconds. The files
# of a directory are scanned together on the threads, so the ratio should
# stay near 1.
# Usage: bench/generator_files.sh [ROUTES]   (default: 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
n=${1:-10000}
runs=${RUNS:-5}
build=build/bench
mkdir -p "$build"
input="$build/manifests-$n.yaml"
[ -f "$input" ] || perl bench/make-manifests.pl "$n" conf-examples/certs/ca.crt > "$input"
dir="$build/files-$n"
rm -rf "$dir" && mkdir -p "$dir"
perl -e 'local $/; my @docs = split /^---\n/m, <STDIN>; my $i = 0;
         for (@docs) { open my $fh, ">", sprintf("%s/%06d.yaml", $ARGV[0], $i++) or die; print $fh $_ }' "$dir" < "$input"
files=$(ls "$dir" | wc -l)
timed '%e' build/gateway2nginx -f "$input" -o "$build/out-files" > /dev/null   # warm-up
one="" many=""
for round in $(seq "$runs"); do
    one+="$(timed '%e' build/gateway2nginx -f "$input" -o "$build/out-files") "
    many+="$(timed '%e' build/gateway2nginx -f "$dir" -o "$build/out-files") "
done
printf '%8s %8s %10s %12s %8s\n' routes files one_file_s directory_s ratio
echo "$n $files $(printf '%s\n' $one | median) $(printf '%s\n' $many | median)" |
    awk '{printf "%8d %8d %10.2f %12.2f %8.2f\n", $1, $2, $3, $4, ($3 > 0 ? $4 / $3 : 0)}'
