#!/usr/bin/env bash
# Scale benchmark (DESIGN §5): N TLS backends, each location with its own
# policy (strict, its SAN, the CA bundle), written the module's way against
# stock nginx's per-location proxy_ssl_verify + proxy_ssl_trusted_certificate.
# `nginx -t` wall time and peak memory, side by side in one run (best of
# $RUNS, default 1: stock nginx takes minutes and gigabytes at 10,000).
# Usage: bench/scale.sh [N] (default 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
work=build/bench/scale-$n
rm -rf "$work" && mkdir -p "$work/module/logs" "$work/stock/logs"
# the trust bundle a System-CA policy would use: the test CA and Debian's
# public roots (about 140 certificates)
cat conf-examples/certs/ca.crt ${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt} > "$work/ca.pem"

write() {  # write KIND: nginx.conf with N locations
    local kind=$1 conf=$work/$1/nginx.conf
    {
        [ "$kind" = module ] && echo "load_module $module;"
        echo "pid logs/nginx.pid; error_log logs/error.log; events {}"
        echo "http {"
        echo "  proxy_ssl_server_name on;"
        echo "  server { listen 127.0.0.1:1;"
        for i in $(seq 0 $((n - 1))); do
            echo "    location /svc-$i/ { proxy_pass https://127.0.0.1:$((10000 + i % 50000)); proxy_ssl_name svc-$i.example.com;"
            if [ "$kind" = module ]; then
                echo "      proxy_ssl_verify_mode strict; proxy_ssl_verify_ca ../ca.pem; proxy_ssl_verify_san dns:svc-$i.example.com; }"
            else
                echo "      proxy_ssl_verify on; proxy_ssl_trusted_certificate ../ca.pem; }"
            fi
        done
        echo "  }"
        echo "}"
    } > "$conf"
}

measure() {  # best of $RUNS: seconds and peak KB of nginx -t
    local dir=$1 best_s="" best_kb=""
    for _ in $(seq "${RUNS:-1}"); do
        local out
        out=$(/usr/bin/time -f '%e %M' /usr/sbin/nginx -t -q -p "$dir/" -c nginx.conf 2>&1 | tail -1)
        best_s=$(echo "$out ${best_s:-999999}" | awk '{print ($1 < $3 ? $1 : $3)}')
        best_kb=$(echo "$out ${best_kb:-999999999}" | awk '{print ($2 < $3 ? $2 : $3)}')
    done
    echo "$best_s $best_kb"
}

write module
write stock
read -r ms mk < <(measure "$work/module")
read -r ss sk < <(measure "$work/stock")
printf '%8s %12s %12s %12s %12s %10s %10s\n' backends module_s stock_s module_MB stock_MB time_ratio mem_ratio
echo "$n $ms $ss $mk $sk" | awk '{printf "%8d %12.2f %12.2f %12.1f %12.1f %10.2f %10.2f\n",
    $1, $2, $3, $4 / 1024, $5 / 1024, $2 / $3, $4 / $5}'
