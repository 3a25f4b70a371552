#!/usr/bin/env bash
# Generator benchmark (targets: bench/README.md): gateway2nginx on N routes (each with its
# Service, EndpointSlice and BackendTLSPolicy) against a program that only
# event-parses the same file with yaml-cpp, interleaved, median of $RUNS
# (default 5): wall seconds and peak RSS; then how time grows with N.
# gateway2nginx scans YAML on as many threads as there are CPUs (at most 4):
# its CPU seconds (user + sys) and its wall time with --jobs 1 are printed
# beside, so the single-threaded ratio is in the table too.
# Usage: bench/generator.sh [SIZES...]   (default: 1000 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
sizes=("$@")
[ $# -eq 0 ] && sizes=(1000 10000 100000)
runs=${RUNS:-5}
build=build/bench
mkdir -p "$build"
g++ -O2 -o "$build/yaml_parse_only" bench/yaml_parse_only.cc -lyaml-cpp

# "SECONDS KB CPU_SECONDS" of one run
measure() { timed '%e %M %U %S' "$@" | awk '{print $1, $2, $3 + $4}'; }

printf '%8s %8s %11s %9s %8s %11s %9s %12s %9s %9s\n' routes input_MB baseline_s g2n_s ratio baseline_MB g2n_MB g2n_cpu_s g2n_j1_s ratio_j1
for n in "${sizes[@]}"; do
    input="$build/manifests-$n.yaml"
    [ -f "$input" ] || perl bench/make-manifests.pl "$n" conf-examples/certs/ca.crt > "$input"
done
# one untimed run of each first: on a VM, memory the guest has not touched
# lately costs up to 2.6 ms per MB to fault in (the host backs it again), a
# cost of the machine's state, not of the program; after a warm-up the
# rounds measure the program
for n in "${sizes[@]}"; do
    timed '%e' "$build/yaml_parse_only" "$build/manifests-$n.yaml" > /dev/null
    timed '%e' build/gateway2nginx -f "$build/manifests-$n.yaml" -o "$build/out-$n" > /dev/null
done
# rounds, each measuring every size: a ratio between sizes (growth) compares
# runs made side by side, not minutes apart
declare -A bs bk gs gk gc g1
for round in $(seq "$runs"); do
    for n in "${sizes[@]}"; do
        input="$build/manifests-$n.yaml"
        read -r s k c < <(measure "$build/yaml_parse_only" "$input"); bs[$n]+="$s "; bk[$n]+="$k "
        read -r s k c < <(measure build/gateway2nginx -f "$input" -o "$build/out-$n"); gs[$n]+="$s "; gk[$n]+="$k "; gc[$n]+="$c "
        read -r s k c < <(measure build/gateway2nginx --jobs 1 -f "$input" -o "$build/out-$n"); g1[$n]+="$s "
    done
done
med() { printf '%s\n' $1 | median; }
for n in "${sizes[@]}"; do
    mb=$(du -m "$build/manifests-$n.yaml" | cut -f1)
    echo "$n $mb $(med "${bs[$n]}") $(med "${gs[$n]}") $(med "${bk[$n]}") $(med "${gk[$n]}") $(med "${gc[$n]}") $(med "${g1[$n]}")" |
        awk '{printf "%8d %8d %11.2f %9.2f %8.2f %11.1f %9.1f %12.2f %9.2f %9.2f\n",
            $1, $2, $3, $4, ($3 > 0 ? $4 / $3 : 0), $5 / 1024, $6 / 1024, $7, $8, ($3 > 0 ? $8 / $3 : 0)}'
done
# growth: the two medians' ratio (the target), and the spread of the
# per-round ratios, which the machine's memory state moves a lot
growth() { echo "$(med "$2") $(med "$1")" | awk '{printf "%.1f", $1 / $2}'; }
spread() { paste <(printf '%s\n' $1) <(printf '%s\n' $2) | awk '{print $2 / $1}' | sort -n | awk '{a[NR] = $1} END {printf "%.1f-%.1f", a[1], a[NR]}'; }
if [ -n "${gs[10000]:-}" ] && [ -n "${gs[100000]:-}" ]; then
    printf 'growth: 100,000 routes take %sx the time of 10,000 (per round %sx), one thread %sx (per round %sx); linear: 10x, target <= 11x\n' \
        "$(growth "${gs[10000]}" "${gs[100000]}")" "$(spread "${gs[10000]}" "${gs[100000]}")" \
        "$(growth "${g1[10000]}" "${g1[100000]}")" "$(spread "${g1[10000]}" "${g1[100000]}")"
    echo "rounds, seconds at 10,000 | 100,000: ${gs[10000]}| ${gs[100000]}"
fi
