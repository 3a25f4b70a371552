#!/usr/bin/env bash
# Instructions per request (targets: bench/README.md), which do not drift with machine
# noise: the proxying nginx runs as one process under
# `valgrind --tool=callgrind`; each case is run twice, with 1 and with 1 + N
# requests, and (instructions of the second - the first) / N is what one
# request costs, startup and shutdown cancelling out. The TLS backend is a
# separate nginx, not counted. Module (strict, CA, URI SAN, SPKI pin) and
# stock `proxy_ssl_verify on`, with upstream keepalive and with a full
# handshake per request.
# Usage: bench/callgrind.sh [N] (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
n=${1:-200}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
work=$PWD/build/bench/callgrind
rm -rf "$work" && mkdir -p "$work/backend/logs" "$work/proxy/logs"
spki=$(bench_certs "$work/certs")
trap 'kill -QUIT $(cat "$work/backend/logs/nginx.pid" 2>/dev/null) 2>/dev/null || true' EXIT

cat > "$work/backend/nginx.conf" <<CONF
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log warn;
events {}
http {
    access_log off;
$(backend_server 127.0.0.1:29543 "$work/certs")
}
CONF
/usr/sbin/nginx -p "$work/backend/" -c nginx.conf

cat > "$work/proxy/nginx.conf" <<CONF
load_module $module;
master_process off;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log warn;
events {}
http {
    access_log off;
$(backend_upstreams 127.0.0.1:29543 4)
$(proxy_server 127.0.0.1:29180 "$work/certs/ca.crt" "$spki")
}
CONF

# instructions (Ir) of one nginx run under callgrind serving `count`
# requests to `path` on one client connection (the wake-up request is the
# same in both runs of a case)
instructions() {
    callgrind_instructions "$work/proxy" "http://127.0.0.1:29180/none" "http://127.0.0.1:29180$1" "$2"
}

printf '%-10s %16s %16s %8s\n' case module_instr/req stock_instr/req ratio
for kind in keepalive handshake; do
    per_request=()
    for who in module stock; do
        one=$(instructions "/$who/$kind/" 1)
        many=$(instructions "/$who/$kind/" $((n + 1)))
        per_request+=($(( (many - one) / n )))
    done
    echo "$kind ${per_request[0]} ${per_request[1]}" \
        | awk '{printf "%-10s %16d %16d %8.3f\n", $1, $2, $3, $2 / $3}'
done
