#!/usr/bin/env bash
# Endpoint churn (issue 20), side by side in one run:
# 1. requests/s through a zone upstream (its servers replaceable by
#    gateway_tls_upstream_api: each request binds to the current list)
#    against the same upstream without a zone, both policy-verified with
#    keepalive; rounds alternate, medians compared (target: ratio ~1.0).
# 2. time from an endpoint change to the first request served by the new
#    endpoint, at N routes (default 10,000: one upstream{} with a zone and
#    one location each), through the API and through rewriting the
#    configuration and reloading nginx (the reload path does not count the
#    generator's own time, which the generator benchmark shows).
# Usage: bench/upstream_api.sh [SECONDS_PER_RUN] [ROUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-5}
routes=${2:-10000}
rounds=${ROUNDS:-5}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
work=$PWD/build/bench/upstream_api
rm -rf "$work" && mkdir -p "$work/logs" "$work/tmp"
spki=$(bench_certs "$work/certs")
trap 'kill -QUIT $(cat "$work/logs/nginx.pid" 2>/dev/null) 2>/dev/null || true' EXIT

# the upstream of route I: backend A (29443) or B (29444), both "ok" with their port
conf() {
    local moved=$1 i
    cat <<CONF
load_module $module;
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    gateway_tls_upstream_state_zone 1m;
    upstream zoned { zone zoned 64k; server 127.0.0.1:29443; keepalive 64; }
    upstream plain { server 127.0.0.1:29443; keepalive 64; }
    server { listen 127.0.0.1:29443 ssl; ssl_certificate $work/certs/leaf.crt; ssl_certificate_key $work/certs/leaf.key;
             keepalive_requests 100000; return 200 "A\n"; }
    server { listen 127.0.0.1:29444 ssl; ssl_certificate $work/certs/leaf.crt; ssl_certificate_key $work/certs/leaf.key;
             keepalive_requests 100000; return 200 "B\n"; }
CONF
    for ((i = 0; i < routes; i++)); do
        local port=29443
        [ "$i" = "$moved" ] && port=29444
        echo "    upstream r$i { zone routes $((routes * 2 + 1024))k; server 127.0.0.1:$port; keepalive 4; }"
    done
    cat <<CONF
    server {
        listen 127.0.0.1:29080;
        keepalive_requests 100000;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
        proxy_ssl_verify_mode strict;
        proxy_ssl_verify_ca $work/certs/ca.crt;
        proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
        proxy_ssl_verify_pin sha256-spki:$spki;
        location /zone/ { proxy_pass https://zoned; }
        location /nozone/ { proxy_pass https://plain; }
        location /api {
            gateway_tls_upstream_api;
            gateway_tls_upstream_api_allow 127.0.0.1;
            gateway_tls_upstream_api_token_file $work/api.token;
        }
CONF
    for ((i = 0; i < routes; i++)); do
        echo "        location = /r$i { proxy_pass https://r$i; }"
    done
    echo "    }"
    echo "}"
}

(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/api.token")
conf -1 > "$work/nginx.conf"
/usr/sbin/nginx -p "$work/" -c nginx.conf 2>&1 | { grep -v '\[notice\]' || true; } >&2
sleep 0.5
for path in /zone/ /nozone/; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:29080$path")
    [ "$code" = 200 ] || { echo "$path answered $code" >&2; exit 1; }
done

rps() { wrk -t1 -c16 -d"${secs}s" "http://127.0.0.1:29080$1" | awk '/Requests\/sec/ {print $2}'; }

z=() n=()
for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then
        z+=("$(rps /zone/)"); n+=("$(rps /nozone/)")
    else
        n+=("$(rps /nozone/)"); z+=("$(rps /zone/)")
    fi
done
printf '%-28s %14s %14s %8s\n' case zone_rps no_zone_rps ratio
echo "keepalive $(printf '%s\n' "${z[@]}" | median) $(printf '%s\n' "${n[@]}" | median)" \
    | awk '{printf "%-28s %14.0f %14.0f %8.3f\n", $1, $2, $3, $2 / $3}'
echo "rounds, zone: ${z[*]} | no zone: ${n[*]}"
echo

# the first request to route I served by B, from the change on; milliseconds
served_by_b_ms() {
    local route=$1 start=$2 deadline=$(( $(date +%s%N) + 60000000000 ))
    while [ "$(date +%s%N)" -lt "$deadline" ]; do
        [ "$(curl -s "http://127.0.0.1:29080/r$route")" = B ] && { echo $(( ($(date +%s%N) - start) / 1000000 )); return; }
        sleep 0.002
    done
    echo "route $route never reached B" >&2
    return 1
}

api=() reload=()
for round in $(seq "$rounds"); do
    route=$(( (round * 7919) % routes ))
    # through the API
    start=$(date +%s%N)
    curl -s -o /dev/null -X PUT -H "Authorization: Bearer $(cat "$work/api.token")" "http://127.0.0.1:29080/api" \
        --data-binary "{\"upstreams\":{\"r$route\":{\"servers\":[{\"address\":\"127.0.0.1:29444\"}]}}}"
    api+=("$(served_by_b_ms "$route" "$start")")
    curl -s -o /dev/null -X PUT -H "Authorization: Bearer $(cat "$work/api.token")" "http://127.0.0.1:29080/api" \
        --data-binary "{\"upstreams\":{\"r$route\":{\"servers\":[{\"address\":\"127.0.0.1:29443\"}]}}}"
    # through the configuration and a reload (a changed configured list wins)
    route=$(( (route + 1) % routes ))
    start=$(date +%s%N)
    conf "$route" > "$work/nginx.conf"
    /usr/sbin/nginx -p "$work/" -c nginx.conf -s reload 2>/dev/null
    reload+=("$(served_by_b_ms "$route" "$start")")
done
api_ms=$(printf '%s\n' "${api[@]}" | median)
reload_ms=$(printf '%s\n' "${reload[@]}" | median)
printf '%-28s %14s %14s %8s\n' "change to traffic, $routes routes" api_ms reload_ms ratio
echo "$api_ms $reload_ms" | awk '{printf "%-28s %14d %14d %8.4f\n", "first request at new endpoint", $1, $2, ($1 > 0 ? $1 : 1) / $2}'
echo "rounds, api: ${api[*]} | reload: ${reload[*]}"
