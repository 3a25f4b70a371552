#!/usr/bin/env bash
# Gateway-count benchmark: gateway2nginx on N Gateways of three listeners
# each (a catch-all and two hostnames on one port, so listener isolation
# runs) with one route each, against the yaml-cpp event parse of the same
# file, median of $RUNS (default 3) interleaved runs. The ratio should stay
# flat as N grows: work per Gateway must not scan every other Gateway's
# listeners.
# Usage: bench/gateways.sh [SIZES...]   (default: 2000 8000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
sizes=("$@")
[ $# -eq 0 ] && sizes=(2000 8000)
runs=${RUNS:-3}
build=build/bench
mkdir -p "$build"
g++ -O2 -o "$build/yaml_parse_only" bench/yaml_parse_only.cc -lyaml-cpp

printf '%9s %11s %9s %8s\n' gateways baseline_s g2n_s ratio
for n in "${sizes[@]}"; do
    input="$build/gateways-$n.yaml"
    perl -e '
        my $n = shift;
        print "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: c}\n",
              "spec: {controllerName: gateway2nginx.io/controller}\n";
        for my $i (0 .. $n - 1) {
            print "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g$i, namespace: ns}\n",
                  "spec:\n  gatewayClassName: c\n  listeners:\n  - {name: a, port: 80, protocol: HTTP}\n",
                  "  - {name: b, port: 80, protocol: HTTP, hostname: \"*.g$i.example.com\"}\n",
                  "  - {name: c, port: 80, protocol: HTTP, hostname: \"x.g$i.example.com\"}\n",
                  "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r$i, namespace: ns}\n",
                  "spec:\n  parentRefs: [{name: g$i}]\n  hostnames: [\"y.g$i.example.com\"]\n",
                  "  rules: [{backendRefs: [{name: s, port: 80}]}]\n";
        }' "$n" > "$input"
    base=() g2n=()
    for _ in $(seq "$runs"); do
        base+=("$(timed '%e' "$build/yaml_parse_only" "$input")")
        g2n+=("$(timed '%e' build/gateway2nginx -f "$input" -o "$build/gateways-out" --status-listen off)")
    done
    b=$(printf '%s\n' "${base[@]}" | median)
    g=$(printf '%s\n' "${g2n[@]}" | median)
    printf '%9s %11s %9s %8.1f\n' "$n" "$b" "$g" "$(echo "$g $b" | awk '{print ($2 > 0 ? $1 / $2 : 0)}')"
done
