#!/usr/bin/env bash
# Data-plane benchmark (targets: bench/README.md): requests/s through the module (strict +
# URI SAN + SPKI pin) against stock `proxy_ssl_verify on`, to the same TLS
# backend, with upstream keepalive and with a full TLS handshake per
# request. Runs alternate module/stock ($ROUNDS rounds, default 5, the
# order swapped every round) and the medians are compared; each round's
# figures are printed below the table.
# Usage: bench/dataplane.sh [SECONDS_PER_RUN] (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-5}
rounds=${ROUNDS:-5}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
work=$PWD/build/bench/dataplane
rm -rf "$work" && mkdir -p "$work/logs"
spki=$(bench_certs "$work/certs")
trap 'kill -QUIT $(cat "$work/logs/nginx.pid" 2>/dev/null) 2>/dev/null || true' EXIT

cat > "$work/nginx.conf" <<CONF
load_module $module;
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
$(backend_upstreams 127.0.0.1:29443 64)
    # the backend
$(backend_server 127.0.0.1:29443 "$work/certs")
$(proxy_server 127.0.0.1:29080 "$work/certs/ca.crt" "$spki")
}
CONF
# start-up notices (the module's "... share N SSL contexts") stay out of the table
/usr/sbin/nginx -p "$work/" -c nginx.conf 2>&1 | { grep -v '\[notice\]' || true; } >&2
sleep 0.3
for path in /module/keepalive/ /stock/keepalive/ /module/handshake/ /stock/handshake/; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:29080$path")
    [ "$code" = 200 ] || { echo "$path answered $code" >&2; exit 1; }
done

rps() { wrk -t1 -c16 -d"${secs}s" "http://127.0.0.1:29080$1" | awk '/Requests\/sec/ {print $2}'; }

printf '%-10s %14s %14s %8s\n' case module_rps stock_rps ratio
spread=
for kind in keepalive handshake; do
    m=() s=()
    # the order alternates (module first, then stock first): whatever the
    # machine drifts by within a round weighs on both sides alike
    for round in $(seq "$rounds"); do
        if [ $((round % 2)) = 1 ]; then
            m+=("$(rps "/module/$kind/")")
            s+=("$(rps "/stock/$kind/")")
        else
            s+=("$(rps "/stock/$kind/")")
            m+=("$(rps "/module/$kind/")")
        fi
    done
    spread+="$kind rounds, module: ${m[*]} | stock: ${s[*]}"$'\n'
    mm=$(printf '%s\n' "${m[@]}" | median)
    sm=$(printf '%s\n' "${s[@]}" | median)
    echo "$kind $mm $sm" | awk '{printf "%-10s %14.0f %14.0f %8.3f\n", $1, $2, $3, $2 / $3}'
done
printf '%s' "$spread"
