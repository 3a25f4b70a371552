#!/usr/bin/env bash
# Replacing routes at run time (gateway_tls_routes; targets: bench/README.md):
# a table of 10,000 routes (1,000 hostnames of 10 PathPrefix matches each)
# pushed once, then one hostname's rules replaced 1,000 times in a row
# through the upstream API. Prints what one replacement costs the worker
# (the PUT's time, from curl: reading, checking, keeping and putting it in
# place), the smallest state zone that keeps all 10,000 routes (per route),
# and the worker's RSS before and after the 1,000 replacements.
# Usage: bench/routes_replace.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
work=$PWD/build/bench/routes_replace
rm -rf "$work" && mkdir -p "$work/logs"
trap 'kill -QUIT $(cat "$work/logs/nginx.pid" 2>/dev/null) 2>/dev/null || true' EXIT
token=$(api_token "$work/token")
hosts=1000 per_host=10 replaces=1000

conf() {
    cat <<CONF
load_module $module;
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log warn;
events {}
http {
    access_log off;
    gateway_tls_upstream_state_zone $1;
    upstream be { zone be 64k; server 127.0.0.1:29743; }
$(routes_server 127.0.0.1:29381 "$work/token" 32m)
}
CONF
}

# host_json I VERSION: hostname I's rules, its paths named for VERSION
host_json() {
    awk -v i="$1" -v v="$2" -v n="$per_host" 'BEGIN {
        printf "\"h%d.example\":{\"actions\":[{\"backends\":[{\"backend\":\"be\",\"scheme\":\"http\"}]}],\"matches\":[", i
        for (j = 0; j < n; j++) printf "%s{\"path\":{\"type\":\"PathPrefix\",\"value\":\"/v%d/p%d\"},\"action\":0}", (j ? "," : ""), v, j
        printf "]}"
    }'
}
{
    printf '{"routes":{"main":{'
    for ((i = 0; i < hosts; i++)); do [ "$i" = 0 ] || printf ','; host_json "$i" 0; done
    printf '}}}'
} > "$work/all.json"

put() { curl -s -o /dev/null -w "%{http_code} %{time_total}\n" -X PUT -H "Authorization: Bearer $token" --data-binary @"$1" http://127.0.0.1:29381/api; }
start() { conf "$1" > "$work/nginx.conf"; /usr/sbin/nginx -p "$work/" -c nginx.conf 2> /dev/null; until curl -s -o /dev/null http://127.0.0.1:29381/; do sleep 0.05; done; }
stop() { kill -QUIT "$(cat "$work/logs/nginx.pid")"; while [ -e "$work/logs/nginx.pid" ]; do sleep 0.05; done; }

# the smallest state zone (in 256 KiB steps) that keeps every route
zone_kib=256
while :; do
    start "${zone_kib}k"
    code=$(put "$work/all.json" | cut -d' ' -f1)
    stop
    [ "$code" = 200 ] && break
    zone_kib=$((zone_kib + 256))
done

start 64m
read -r code seconds < <(put "$work/all.json")
[ "$code" = 200 ] || { echo "the push of $((hosts * per_host)) routes answered $code" >&2; exit 1; }
worker=$(pgrep -P "$(cat "$work/logs/nginx.pid")")
rss() { awk '/^VmRSS/ {print $2}' "/proc/$worker/status"; }
before=$(rss)
for ((k = 1; k <= replaces; k++)); do
    printf '{"routes":{"main":{%s}}}' "$(host_json 500 "$k")" > "$work/one.json"
    put "$work/one.json"
done > "$work/times.txt"
after=$(rss)
[ "$(cut -d' ' -f1 "$work/times.txt" | sort -u)" = 200 ] || { echo "a replacement was refused" >&2; exit 1; }
curl -s -o /dev/null -w '%{http_code}' -H 'Host: h500.example' "http://127.0.0.1:29381/v$replaces/p3/x" | grep -q 502 \
    || { echo "the last replacement does not route" >&2; exit 1; }
stop

awk -v push="$seconds" -v n="$((hosts * per_host))" '{print $2 * 1000}' "$work/times.txt" | sort -n \
    | awk -v push="$seconds" -v n="$((hosts * per_host))" '{a[NR] = $1} END {
        printf "push of %d routes (%d hostnames): %.0f ms\n", n, n / 10, push * 1000
        printf "replacing one hostname (10 routes) of %d, %d times: median %.2f ms, p99 %.2f ms (the whole PUT, curl to curl)\n",
               n, NR, a[int((NR + 1) / 2)], a[int(NR * 0.99)]
    }'
echo "smallest state zone keeping $((hosts * per_host)) routes: ${zone_kib} KiB = $((zone_kib * 1024 / (hosts * per_host))) bytes a route"
echo "worker RSS before / after $replaces replacements: $before / $after KiB = $(awk -v a="$after" -v b="$before" 'BEGIN {printf "%.3f", a / b}')"
