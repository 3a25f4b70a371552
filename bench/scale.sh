#!/usr/bin/env bash
# Scale benchmark (targets: bench/README.md): N TLS backends, each location with its own
# policy (strict, its SAN, the CA bundle) as the module reads them, against
# the same locations in plain HTTP; stock nginx's per-location
# proxy_ssl_verify + proxy_ssl_trusted_certificate is printed beside.
# `nginx -t` wall time and peak RSS, median of $RUNS (default 3) interleaved
# runs; stock once (it takes minutes and gigabytes with the System bundle).
# "tls" is stock nginx 1.22 with no verification at all: the same locations
# proxying to https://, for which its proxy creates one SSL context each
# while merging (1.23.1 shares them). With the module loaded, locations with
# the same TLS client settings share one (ngx_http_gateway_tls_ssl_share.cc),
# so module / tls shows that saving plus what the policies cost.
# Usage: bench/scale.sh [N...] (default 1000 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
sizes=("$@")
[ $# -eq 0 ] && sizes=(1000 10000)
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}

write() {  # write DIR KIND CA N: nginx.conf with N locations
    local dir=$1 kind=$2 ca=$3 n=$4
    mkdir -p "$dir/logs"
    {
        [ "$kind" = module ] && echo "load_module $module;"
        echo "pid logs/nginx.pid; error_log logs/error.log; events {}"
        echo "http {"
        echo "  proxy_ssl_server_name on;"
        echo "  server { listen 127.0.0.1:1;"
        for i in $(seq 0 $((n - 1))); do
            case $kind in
            plain)
                echo "    location /svc-$i/ { proxy_pass http://127.0.0.1:$((10000 + i % 50000)); }" ;;
            tls)
                echo "    location /svc-$i/ { proxy_pass https://127.0.0.1:$((10000 + i % 50000)); proxy_ssl_name svc-$i.example.com; }" ;;
            module)
                echo "    location /svc-$i/ { proxy_pass https://127.0.0.1:$((10000 + i % 50000)); proxy_ssl_name svc-$i.example.com;"
                echo "      proxy_ssl_verify_mode strict; proxy_ssl_verify_ca $ca; proxy_ssl_verify_san dns:svc-$i.example.com; }" ;;
            stock)
                echo "    location /svc-$i/ { proxy_pass https://127.0.0.1:$((10000 + i % 50000)); proxy_ssl_name svc-$i.example.com;"
                echo "      proxy_ssl_verify on; proxy_ssl_trusted_certificate $ca; }" ;;
            esac
        done
        echo "  }"
        echo "}"
    } > "$dir/nginx.conf"
}

# wall seconds to the millisecond (/usr/bin/time's %e has two decimals, and
# 1,000 locations take a few hundredths) and peak RSS in KB
measure() {
    local start=$EPOCHREALTIME kb
    kb=$(timed '%M' /usr/sbin/nginx -t -q -p "$1/" -c nginx.conf)
    echo "$(echo "$EPOCHREALTIME - $start" | bc) $kb"
}

printf '%8s %-8s %8s %8s %8s %8s %9s %9s %9s %9s %7s %7s %9s %9s\n' backends trust plain_s tls_s module_s stock_s \
    plain_MB tls_MB module_MB stock_MB time_x mem_x time_/tls mem_/tls
for n in "${sizes[@]}"; do
    work=$PWD/build/bench/scale-$n
    rm -rf "$work" && mkdir -p "$work"
    cp conf-examples/certs/ca.crt "$work/private.pem"
    # what a System policy trusts: Debian's public roots (about 140)
    cat conf-examples/certs/ca.crt "${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" > "$work/system.pem"
    write "$work/plain" plain "" "$n"
    write "$work/tls" tls "" "$n"
    for trust in private system; do
        write "$work/module-$trust" module "$work/$trust.pem" "$n"
        ps=() pk=() ts=() tk=() ms=() mk=()
        for _ in $(seq "${RUNS:-3}"); do
            read -r s k < <(measure "$work/plain"); ps+=("$s"); pk+=("$k")
            read -r s k < <(measure "$work/tls"); ts+=("$s"); tk+=("$k")
            read -r s k < <(measure "$work/module-$trust"); ms+=("$s"); mk+=("$k")
        done
        stock="- -"
        # stock with the System bundle: 18 s and 847 MB at 1,000 already
        if [ "$trust" = private ] || [ "$n" -le 1000 ]; then
            write "$work/stock-$trust" stock "$work/$trust.pem" "$n"
            stock=$(measure "$work/stock-$trust")
        fi
        p=$(printf '%s\n' "${ps[@]}" | median); pm=$(printf '%s\n' "${pk[@]}" | median)
        t=$(printf '%s\n' "${ts[@]}" | median); tm=$(printf '%s\n' "${tk[@]}" | median)
        m=$(printf '%s\n' "${ms[@]}" | median); mm=$(printf '%s\n' "${mk[@]}" | median)
        echo "$n $trust $p $m $stock $pm $mm $t $tm" | awk '{
            stock_s = ($5 == "-") ? "skipped" : sprintf("%.3f", $5);
            stock_mb = ($6 == "-") ? "skipped" : sprintf("%.1f", $6 / 1024);
            printf "%8d %-8s %8.3f %8.3f %8.3f %8s %9.1f %9.1f %9.1f %9s %7.2f %7.2f %9.2f %9.2f\n",
                $1, $2, $3, $9, $4, stock_s, $7 / 1024, $10 / 1024, $8 / 1024, stock_mb,
                ($3 > 0 ? $4 / $3 : 0), $8 / $7, ($9 > 0 ? $4 / $9 : 0), $8 / $10 }'
    done
done
