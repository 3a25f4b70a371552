#!/usr/bin/env bash
# Generator benchmark (DESIGN §5): gateway2nginx on N routes, Services and
# policies against yaml-cpp parsing the same file, side by side in one run
# (best of 3 wall-clock runs each); then the time per route across sizes.
# Usage: bench/generator.sh [SIZES...]   (default: 1000 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-1000}")
[ $# -eq 0 ] && sizes=(1000 10000)
build=build/bench
mkdir -p "$build"
g++ -O2 -o "$build/yaml_parse_only" bench/yaml_parse_only.cc -lyaml-cpp

best() {  # best of 3 wall-clock seconds of a command
    local best=""
    for _ in 1 2 3; do
        local start end
        start=$(date +%s.%N)
        "$@" > /dev/null
        end=$(date +%s.%N)
        best=$(echo "$start $end ${best:-999999}" | awk '{t = $2 - $1; print (t < $3 ? t : $3)}')
    done
    echo "$best"
}

printf '%8s %10s %12s %14s %8s %14s\n' routes input_MB yaml-cpp_s gateway2nginx_s ratio us_per_route
for n in "${sizes[@]}"; do
    input="$build/manifests-$n.yaml"
    [ -f "$input" ] || perl bench/make-manifests.pl "$n" conf-examples/certs/ca.crt > "$input"
    mb=$(du -m "$input" | cut -f1)
    base=$(best "$build/yaml_parse_only" "$input")
    gen=$(best build/gateway2nginx -f "$input" -o "$build/out-$n")
    echo "$n $mb $base $gen" | awk '{printf "%8d %10d %12.2f %14.2f %8.2f %14.1f\n", $1, $2, $3, $4, $4 / $3, $4 / $1 * 1e6}'
done
