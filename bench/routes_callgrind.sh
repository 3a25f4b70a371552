#!/usr/bin/env bash
# Instructions per request routed by a run-time table (gateway_tls_routes)
# against the same route as a rendered location, at 100 and 10,000 routes
# (targets: bench/README.md). One nginx (under `valgrind --tool=callgrind`,
# one process) holds both: a server with one `location /rI/` per route,
# and a server whose one location is routed by the table, filled through
# the upstream API with the same routes (PathPrefix /rI, each its own
# action). Both proxy to one upstream{} with keepalive; the backend, a
# separate nginx, is not counted. Each case runs twice, with 1 and with
# 1 + N requests to the middle route: (second - first) / N is one request,
# startup, the push and shutdown cancelling out.
# Usage: bench/routes_callgrind.sh [N] (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
n=${1:-200}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
work=$PWD/build/bench/routes_callgrind
rm -rf "$work" && mkdir -p "$work/backend/logs" "$work/proxy/logs"
trap 'kill -QUIT $(cat "$work/backend/logs/nginx.pid" 2>/dev/null) 2>/dev/null || true' EXIT
token=$(api_token "$work/token")

cat > "$work/backend/nginx.conf" <<CONF
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log warn;
events {}
http {
    access_log off;
    server { listen 127.0.0.1:29643; keepalive_requests 100000; location / { return 200 "ok\n"; } }
}
CONF
/usr/sbin/nginx -p "$work/backend/" -c nginx.conf

# proxy_conf ROUTES: both servers, the rendered one with ROUTES locations
proxy_conf() {
    local routes=$1 i
    cat <<CONF
load_module $module;
master_process off;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log warn;
events {}
http {
    access_log off;
    gateway_tls_upstream_state_zone 64m;
    upstream be { server 127.0.0.1:29643; keepalive 8; }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:29280;
CONF
    for ((i = 0; i < routes; i++)); do echo "        location /r$i/ { proxy_pass http://be; }"; done
    echo "    }"
    routes_server 127.0.0.1:29281 "$work/token" 16m
    echo "}"
}

# routes_json ROUTES: the same routes for the table, on every hostname
routes_json() {
    awk -v n="$1" 'BEGIN {
        printf "{\"routes\":{\"main\":{\"*\":{\"actions\":["
        for (i = 0; i < n; i++) printf "%s{\"backends\":[{\"backend\":\"be\",\"scheme\":\"http\"}]}", (i ? "," : "")
        printf "],\"matches\":["
        for (i = 0; i < n; i++) printf "%s{\"path\":{\"type\":\"PathPrefix\",\"value\":\"/r%d\"},\"action\":%d}", (i ? "," : ""), i, i
        printf "]}}}}"
    }'
}

push_routes() {
    local pushed
    pushed=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $token" \
        --data-binary @"$work/routes.json" http://127.0.0.1:29281/api)
    [ "$pushed" = 200 ] || { echo "the push answered $pushed" >&2; return 1; }
}

# instructions PORT PATH COUNT: of one nginx run under callgrind that takes
# the routes and serves COUNT requests to PATH on PORT
instructions() {
    callgrind_instructions "$work/proxy" "http://127.0.0.1:29281/none" "http://127.0.0.1:$1$2" "$3" push_routes
}

printf '%-8s %18s %18s %8s\n' routes table_instr/req location_instr/req ratio
for routes in 100 10000; do
    proxy_conf "$routes" > "$work/proxy/nginx.conf"
    routes_json "$routes" > "$work/routes.json"
    path="/r$((routes / 2))/x"
    per_request=()
    for port in 29281 29280; do
        one=$(instructions "$port" "$path" 1)
        many=$(instructions "$port" "$path" $((n + 1)))
        per_request+=($(( (many - one) / n )))
    done
    echo "$routes ${per_request[0]} ${per_request[1]}" \
        | awk '{printf "%-8s %18d %18d %8.3f\n", $1, $2, $3, $2 / $3}'
done
