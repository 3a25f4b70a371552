#!/usr/bin/env bash
# Generator benchmark (DESIGN §5): gateway2nginx on N routes (each with its
# Service, EndpointSlice and BackendTLSPolicy) against a program that only
# event-parses the same file with yaml-cpp, interleaved, median of $RUNS
# (default 3): wall seconds and peak RSS; then how time grows with N.
# gateway2nginx scans YAML on as many threads as there are CPUs (at most 4):
# its CPU seconds (user + sys) and its wall time with --jobs 1 are printed
# beside, so the single-threaded ratio is in the table too.
# Usage: bench/generator.sh [SIZES...]   (default: 1000 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
sizes=("$@")
[ $# -eq 0 ] && sizes=(1000 10000 100000)
runs=${RUNS:-3}
build=build/bench
mkdir -p "$build"
g++ -O2 -o "$build/yaml_parse_only" bench/yaml_parse_only.cc -lyaml-cpp

# "SECONDS KB CPU_SECONDS" of one run
measure() { timed '%e %M %U %S' "$@" | awk '{print $1, $2, $3 + $4}'; }
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

printf '%8s %8s %11s %9s %8s %11s %9s %12s %9s %9s\n' routes input_MB baseline_s g2n_s ratio baseline_MB g2n_MB g2n_cpu_s g2n_j1_s ratio_j1
declare -A per_route
for n in "${sizes[@]}"; do
    input="$build/manifests-$n.yaml"
    [ -f "$input" ] || perl bench/make-manifests.pl "$n" conf-examples/certs/ca.crt > "$input"
    mb=$(du -m "$input" | cut -f1)
    bs=() bk=() gs=() gk=() gc=() g1=()
    for _ in $(seq "$runs"); do
        read -r s k c < <(measure "$build/yaml_parse_only" "$input"); bs+=("$s"); bk+=("$k")
        read -r s k c < <(measure build/gateway2nginx -f "$input" -o "$build/out-$n"); gs+=("$s"); gk+=("$k"); gc+=("$c")
        read -r s k c < <(measure build/gateway2nginx --jobs 1 -f "$input" -o "$build/out-$n"); g1+=("$s")
    done
    b=$(printf '%s\n' "${bs[@]}" | median); g=$(printf '%s\n' "${gs[@]}" | median)
    bm=$(printf '%s\n' "${bk[@]}" | median); gm=$(printf '%s\n' "${gk[@]}" | median)
    cpu=$(printf '%s\n' "${gc[@]}" | median); j1=$(printf '%s\n' "${g1[@]}" | median)
    per_route[$n]=$g
    echo "$n $mb $b $g $bm $gm $cpu $j1" | awk '{printf "%8d %8d %11.2f %9.2f %8.2f %11.1f %9.1f %12.2f %9.2f %9.2f\n",
        $1, $2, $3, $4, ($3 > 0 ? $4 / $3 : 0), $5 / 1024, $6 / 1024, $7, $8, ($3 > 0 ? $8 / $3 : 0)}'
done
if [ -n "${per_route[10000]:-}" ] && [ -n "${per_route[100000]:-}" ]; then
    echo "${per_route[100000]} ${per_route[10000]}" | awk '{printf "growth: 100,000 routes take %.1fx the time of 10,000 (linear: 10x, target <= 11x)\n", $1 / $2}'
fi
