#!/usr/bin/env bash
# A new HTTPRoute to traffic with gateway2nginx run beside nginx, at ROUTES
# routes (make-manifests.pl), its routes served as rendered locations
# (every route change a reload) and through the module's route table
# (--routes table: pushed, no reload), side by side in one run: CHANGES
# (default 20) new routes one after another, each with a hostname of its
# own to the measured Service, from the file written to its first 200;
# the CPU time run spent applying each (its /metrics); reloads counted;
# nginx's RSS before and after. The routes share HOSTS hostnames (default
# one per 100 routes: one hostname past 5,000 routes is more than the
# route table takes for it).
# Usage: [HOSTS=N] bench/route_change.sh [ROUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
routes=${1:-1000}
changes=${CHANGES:-20}
hosts=${HOSTS:-$(( routes / 100 > 1 ? routes / 100 : 1 ))}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
generator=${GATEWAY2NGINX:-$PWD/build/gateway2nginx}
work=$PWD/build/bench/route_change
rm -rf "$work" && mkdir -p "$work"
bench_certs "$work/certs" > /dev/null
run_pid=
cleanup() {
    [ -n "$run_pid" ] && kill "$run_pid" 2>/dev/null || true
    for d in "$work"/*/out "$work/backends"; do
        kill -QUIT "$(cat "$d/logs/nginx.pid" "$d/nginx.pid" 2>/dev/null | head -1)" 2>/dev/null || true
    done
}
trap cleanup EXIT
ab_backends "$work/backends" "$work/certs"

new_route_yaml() {  # I: HTTPRoute demo/new-I on new-I.example.com
    cat <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: new-$1, namespace: demo}
spec:
  parentRefs: [{name: shop}]
  hostnames: [new-$1.example.com]
  rules: [{backendRefs: [{name: measured, port: 443}]}]
YAML
}
cpu_us() {
    curl -s http://127.0.0.1:29116/metrics \
        | awk '$1 ~ /^gateway2nginx_apply_cpu_seconds_total/ {sum += $2} END {printf "%d", sum * 1e6}'
}
rss_kb() {  # nginx's master and workers
    local master; master=$(cat "$1/nginx.pid")
    ps -o rss= --ppid "$master" -p "$master" | awk '{s += $1} END {print s}'
}
percentile() { sort -n | awk -v p="$1" '{a[NR] = $1} END {i = int(NR * p + 0.999); if (i < 1) i = 1; print a[i]}'; }

declare -A latency cpu reloads rss_before rss_after
for mode in locations table; do
    dir=$work/$mode
    mkdir -p "$dir/in"
    perl bench/make-manifests.pl "$routes" "$work/certs/ca.crt" 1 "$hosts" > "$dir/in/routes.yaml"
    measured_service_yaml > "$dir/in/measured.yaml"
    measured_slice_yaml 127.0.0.1 > "$dir/in/slice.yaml"
    measured_route_yaml /m0 > "$dir/in/route.yaml"
    flags=(-o "$dir/out" --port-offset 29000 --listen-address 127.0.0.1 --module-dir "$(dirname "$module")"
           --status-listen off --allow-endpoints 127.0.0.0/8 --upstream-api 127.0.0.1:29114 --routes "$mode")
    "$generator" -f "$dir/in" "${flags[@]}" --check 2>/dev/null
    /usr/sbin/nginx -p "$dir/out/" -c nginx.conf 2>&1 | { grep -v '\[notice\]' || true; } >&2
    until [ -s "$dir/out/nginx.pid" ]; do sleep 0.05; done
    "$generator" run -f "$dir/in" "${flags[@]}" --reload "$dir/out/nginx.pid" --debounce 20 \
        --health-listen 127.0.0.1:29116 2> "$dir/run.log" &
    run_pid=$!
    until grep -qE 'OUTDIR already holds|nginx reloaded|no change to the configuration' "$dir/run.log"; do
        kill -0 "$run_pid" || { cat "$dir/run.log" >&2; exit 1; }
        sleep 0.05
    done
    # served (through the table: once run has pushed every entry)
    until_answers "$(date +%s%N)" /m0 A > /dev/null
    sleep 1
    rss_before[$mode]=$(rss_kb "$dir/out")
    before_reloads=$(grep -c 'nginx reloaded' "$dir/run.log" || true)
    for i in $(seq "$changes"); do
        new_route_yaml "$i" > "$dir/new.tmp"
        cpu_before=$(cpu_us)
        start=$(date +%s%N)
        mv "$dir/new.tmp" "$dir/in/new-$i.yaml"
        latency[$mode]+="$(until_answers "$start" / A '' "new-$i.example.com") "
        sleep 0.3  # its apply done, before the next
        cpu[$mode]+="$(echo "$(cpu_us) $cpu_before" | awk '{printf "%.1f", ($1 - $2) / 1000}') "
    done
    reloads[$mode]=$(( $(grep -c 'nginx reloaded' "$dir/run.log" || true) - before_reloads ))
    sleep 2
    rss_after[$mode]=$(rss_kb "$dir/out")
    kill "$run_pid"; wait "$run_pid" || true; run_pid=
    kill -QUIT "$(cat "$dir/out/nginx.pid")"
    while [ -e "$dir/out/nginx.pid" ]; do sleep 0.05; done
done

printf '%-44s %10s %10s %8s\n' "$routes routes, $changes new routes one by one" locations table ratio
row() {
    echo "$2 $3" | awk -v l="$1" '{printf "%-44s %10.1f %10.1f %8.2f\n", l, $1, $2, ($1 > 0 ? $2 / $1 : 0)}'
}
row "new route to traffic, median (ms)" "$(printf '%s\n' ${latency[locations]} | median)" \
    "$(printf '%s\n' ${latency[table]} | median)"
row "new route to traffic, p95 (ms)" "$(printf '%s\n' ${latency[locations]} | percentile 0.95)" \
    "$(printf '%s\n' ${latency[table]} | percentile 0.95)"
row "run CPU per new route, median (ms)" "$(printf '%s\n' ${cpu[locations]} | median)" \
    "$(printf '%s\n' ${cpu[table]} | median)"
row "reloads" "${reloads[locations]}" "${reloads[table]}"
row "nginx RSS after / before" "$(echo "${rss_after[locations]} ${rss_before[locations]}" | awk '{print $1 / $2}')" \
    "$(echo "${rss_after[table]} ${rss_before[table]}" | awk '{print $1 / $2}')"
echo "rounds, ms: locations ${latency[locations]}| table ${latency[table]}"
