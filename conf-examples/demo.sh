#!/usr/bin/env bash
# make demo: runs Debian's nginx with the module on loopback in front of
# two TLS backends, sends requests that pass and fail, prints what the
# module decided, and stops everything it started.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
module=${GTLS_MODULE:-$root/build/nginx/objs/ngx_http_gateway_tls_module.so}
gateway_port=${DEMO_PORT:-28080}
dns_port=$((gateway_port + 1))
spiffe_port=$((gateway_port + 2))

work=$(mktemp -d /tmp/gateway-tls-demo.XXXXXX)
stop() {
    [ -f "$work/logs/nginx.pid" ] && kill -QUIT "$(cat "$work/logs/nginx.pid")" 2>/dev/null || true
    sleep 0.3
    rm -rf "$work"
}
trap stop EXIT

mkdir -p "$work/logs" "$work/tmp"
sh "$root/t/lib/make-certs.sh" "$work/certs"
sed -e "s|@MODULE@|$module|" -e "s|@CERTS@|$work/certs|g" \
    -e "s|@GATEWAY_PORT@|$gateway_port|g" -e "s|@DNS_PORT@|$dns_port|g" \
    -e "s|@SPIFFE_PORT@|$spiffe_port|g" \
    "$here/module-demo/nginx.conf.in" > "$work/nginx.conf"

echo "== nginx -t (the audit trail names every degraded scope)"
/usr/sbin/nginx -p "$work/" -c nginx.conf -t 2>&1 | grep -E 'warn|test is' || true
/usr/sbin/nginx -p "$work/" -c nginx.conf 2>/dev/null
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$gateway_port/" && break
    sleep 0.1
done

echo
echo "== requests through the gateway"
printf '%-26s %-6s %-20s %s\n' PATH STATUS UPSTREAM_SSL_VERIFY VERIFIED_BY
for path in /dns /spiffe /spiffe-wrong-identity /spiffe-by-hostname /pinned-wrong-key /skip; do
    headers=$(curl -s -D - -o /dev/null "http://127.0.0.1:$gateway_port$path")
    status=$(printf '%s' "$headers" | awk 'NR==1 {print $2}')
    verify=$(printf '%s' "$headers" | awk -F': ' 'tolower($1)=="x-upstream-ssl-verify" {print $2}' | tr -d '\r')
    by=$(printf '%s' "$headers" | awk -F': ' 'tolower($1)=="x-upstream-ssl-verified-by" {print $2}' | tr -d '\r')
    printf '%-26s %-6s %-20s %s\n' "$path" "$status" "$verify" "$by"
done

echo
echo "== what the module logged for the failures"
sleep 0.2
grep -o 'gateway_tls: backend certificate rejected: [^,]*, [^,]*, reason "[a-z_]*"[^,]*' \
    "$work/logs/error.log" || true
