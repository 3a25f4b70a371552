#!/usr/bin/env bash
# From an EndpointSlice change to traffic at the new endpoint, at N routes
# (default 10,000: Services, EndpointSlices, BackendTLSPolicies and
# HTTPRoutes from make-manifests.pl, plus the measured Service), end to
# end: `gateway2nginx run` (it rereads and resolves everything, then pushes
# through gateway_tls_upstream_api) against a full regenerate + check +
# reload (`gateway2nginx --reload`), rounds alternating, medians compared.
# Usage: bench/endpoint_change.sh [ROUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
routes=${1:-10000}
rounds=${ROUNDS:-3}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
generator=${GATEWAY2NGINX:-$PWD/build/gateway2nginx}
work=$PWD/build/bench/endpoint_change
rm -rf "$work" && mkdir -p "$work/in" "$work/backends/logs"
bench_certs "$work/certs" > /dev/null
run_pid=
cleanup() {
    [ -n "$run_pid" ] && kill "$run_pid" 2>/dev/null || true
    for d in "$work/out" "$work/backends"; do
        kill -QUIT "$(cat "$d/logs/nginx.pid" "$d/nginx.pid" 2>/dev/null | head -1)" 2>/dev/null || true
    done
}
trap cleanup EXIT

# endpoints A and B of the measured Service: one port, two addresses
ab_backends "$work/backends" "$work/certs"

perl bench/make-manifests.pl "$routes" "$work/certs/ca.crt" > "$work/in/routes.yaml"
{ measured_service_yaml; echo ---; measured_route_yaml /measured; } > "$work/in/measured.yaml"
slice() { measured_slice_yaml "$1" > "$work/in/.slice.tmp"; mv "$work/in/.slice.tmp" "$work/in/slice.yaml"; }
slice 127.0.0.1

flags=(-f "$work/in" -o "$work/out" --port-offset 29000 --listen-address 127.0.0.1 --module-dir "$(dirname "$module")"
       --status-listen off --allow-endpoints 127.0.0.0/8 --upstream-api 127.0.0.1:29114 --reload "$work/out/nginx.pid")
"$generator" "${flags[@]:0:${#flags[@]}-2}" --check 2>/dev/null
/usr/sbin/nginx -p "$work/out/" -c nginx.conf 2>&1 | { grep -v '\[notice\]' || true; } >&2
sleep 1

answer() { curl -s -H 'Host: shop.example.com' http://127.0.0.1:29080/measured; }
[ "$(answer)" = A ] || { echo "the measured route does not answer A: $(answer)" >&2; exit 1; }
workers() { ps -o pid= --ppid "$(cat "$work/out/nginx.pid")" | sort | tr '\n' ' '; }

api=() reload=() letter=A
for round in $(seq "$rounds"); do
    # gateway2nginx run, pushing
    "$generator" run "${flags[@]}" --debounce 20 2> "$work/run.log" &
    run_pid=$!
    # it found what OUTDIR holds, and watches
    until grep -q 'OUTDIR already holds this configuration' "$work/run.log"; do sleep 0.05; done
    before=$(workers)
    if [ $letter = A ]; then letter=B address=127.0.0.2; else letter=A address=127.0.0.1; fi
    start=$(date +%s%N)
    slice $address
    api+=("$(until_answers "$start" /measured $letter)")
    [ "$(workers)" = "$before" ] || { echo "gateway2nginx run reloaded nginx" >&2; exit 1; }
    sleep 1
    kill "$run_pid"; wait "$run_pid" || true; run_pid=
    # a full regenerate, nginx -t and reload
    if [ $letter = A ]; then letter=B address=127.0.0.2; else letter=A address=127.0.0.1; fi
    start=$(date +%s%N)
    slice $address
    "$generator" "${flags[@]}" 2> "$work/regenerate.log" &
    regenerate=$!
    reload+=("$(until_answers "$start" /measured $letter)")
    wait $regenerate || { cat "$work/regenerate.log" >&2; exit 1; }
    sleep 2  # the old workers go
done
api_ms=$(printf '%s\n' "${api[@]}" | median)
reload_ms=$(printf '%s\n' "${reload[@]}" | median)
printf '%-34s %12s %16s %8s\n' "EndpointSlice change to traffic" run_api_ms regenerate_ms ratio
echo "$api_ms $reload_ms" | awk -v n="$routes" '{printf "%-34s %12d %16d %8.3f\n", n " routes", $1, $2, $1 / $2}'
echo "rounds, run + API: ${api[*]} | regenerate + reload: ${reload[*]}"
