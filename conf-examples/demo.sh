#!/usr/bin/env bash
# make demo, in two parts, on loopback only, stopping all it starts:
#  1. the module alone: Debian's nginx with hand-written directives in front
#     of two TLS backends (one SPIFFE-only); requests that pass and fail;
#  2. the pipeline: gateway2nginx turns conf-examples/ into a configuration,
#     nginx serves it, and the status the generator computed is shown.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
module=${GTLS_MODULE:-$root/build/nginx/objs/ngx_http_gateway_tls_module.so}
gateway_port=${DEMO_PORT:-28080}
dns_port=$((gateway_port + 1))
spiffe_port=$((gateway_port + 2))

work=$(mktemp -d /tmp/gateway-tls-demo.XXXXXX)
stop_nginx() {
    if [ -f "$1" ]; then
        kill -QUIT "$(cat "$1")" 2>/dev/null || true
        for _ in $(seq 50); do [ -f "$1" ] || break; sleep 0.1; done
    fi
}
stop() {
    stop_nginx "$work/logs/nginx.pid"
    stop_nginx "$work/backends/logs/nginx.pid"
    stop_nginx "$work/out/nginx.pid"
    rm -rf "$work"
}
trap stop EXIT
wait_port() {
    for _ in $(seq 50); do
        curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
        sleep 0.1
    done
}

mkdir -p "$work/logs" "$work/tmp"
sh "$root/t/lib/make-certs.sh" "$work/certs"
sed -e "s|@MODULE@|$module|" -e "s|@CERTS@|$work/certs|g" \
    -e "s|@GATEWAY_PORT@|$gateway_port|g" -e "s|@DNS_PORT@|$dns_port|g" \
    -e "s|@SPIFFE_PORT@|$spiffe_port|g" \
    "$here/module-demo/nginx.conf.in" > "$work/nginx.conf"

echo "== nginx -t (the audit trail names every degraded scope)"
/usr/sbin/nginx -p "$work/" -c nginx.conf -t 2>&1 | grep -E 'warn|test is' || true
/usr/sbin/nginx -p "$work/" -c nginx.conf 2>/dev/null
wait_port "$gateway_port"

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
stop_nginx "$work/logs/nginx.pid"

echo
echo "== part 2: gateway2nginx on conf-examples/"
generator=${GATEWAY2NGINX:-$root/build/gateway2nginx}
certs=$here/certs
mkdir -p "$work/backends/logs"
cat > "$work/backends/nginx.conf" <<CONF
daemon on;
pid logs/nginx.pid;
error_log logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:28443 ssl;
        ssl_certificate $certs/leaf.crt;
        ssl_certificate_key $certs/leaf.key;
        return 200 "dns backend, SNI \$ssl_server_name\n";
    }
    server {
        listen 127.0.0.1:28444 ssl;
        ssl_certificate $certs/spiffe.crt;
        ssl_certificate_key $certs/spiffe.key;
        return 200 "spiffe-only backend, SNI \$ssl_server_name\n";
    }
}
CONF
/usr/sbin/nginx -p "$work/backends/" -c nginx.conf 2>/dev/null

manifests=""
for ex in spiffe-backend system-ca weighted-two-policies rejected-policy tls-route; do
    manifests="$manifests -f $here/$ex/manifests.yaml"
done
echo "\$ gateway2nginx -f conf-examples/gateway.yaml$(echo "$manifests" | sed "s|$here|conf-examples|g") -o OUT --port-offset 28000 --allow-endpoints 127.0.0.0/8 --check"
# shellcheck disable=SC2086
"$generator" -f "$here/gateway.yaml" $manifests -o "$work/out" --port-offset 28000 \
    --listen-address 127.0.0.1 --module-dir "$(dirname "$module")" --check \
    --status-listen 127.0.0.1:28113 --allow-endpoints 127.0.0.0/8  # the demo's backends are on loopback
echo "wrote: $(cd "$work/out" && ls -d nginx.conf http.conf stream.conf status.yaml certs/* | tr '\n' ' ')"
/usr/sbin/nginx -p "$work/out/" -c nginx.conf 2>/dev/null
wait_port 28080

echo
printf '%-12s %-6s %s\n' PATH STATUS BODY
for path in /pay /checkout /checkout /checkout /checkout /catalog /legacy; do
    body=$(curl -s -H 'Host: shop.example.com' -o "$work/body" -w '%{http_code}' "http://127.0.0.1:28080$path")
    printf '%-12s %-6s %s\n' "$path" "$body" "$(head -c 60 "$work/body" | tr -d '\n' | sed 's/<[^>]*>//g')"
done

echo
echo "== TLSRoutes (stream): Passthrough by SNI, Terminate re-encrypting under a policy"
tls_get() {  # PORT SNI: a TLS client that trusts the demo CA and checks the name
    printf 'GET / HTTP/1.0\r\n\r\n' | timeout 5 openssl s_client -connect "127.0.0.1:$1" -servername "$2" \
        -CAfile "$certs/ca.crt" -verify_return_error -verify_hostname "$2" -quiet 2>/dev/null | tail -n 1 \
        || true
}
printf '%-40s %s\n' 'LISTENER / SNI' 'BACKEND ANSWER'
printf '%-40s %s\n' 'passthrough :37443 other.example.com' "$(tls_get 37443 other.example.com)"
printf '%-40s %s\n' 'terminate   :37444 abc.example.com' "$(tls_get 37444 abc.example.com)"
printf '%-40s %s\n' 'passthrough :37443 nobody.example.com' "$(tls_get 37443 nobody.example.com || true)(refused)"

echo
echo "== BackendTLSPolicy status (status.yaml)"
awk '/^kind: / {p = ($2 == "BackendTLSPolicy")}
     p && /^  name:/ {name = $2}
     p && /- type:/ {type = $3}
     p && / status:/ {status = $2}
     p && / reason:/ {printf "  %-18s %s=%s/%s\n", name, type, status, $2}' "$work/out/status.yaml" | tr -d '"'

echo
echo "== what the security officer sees: http://127.0.0.1:28113/status"
# the endpoint's bearer token: in OUTDIR, readable by the operator alone
status_auth="Authorization: Bearer $(cat "$work/out/status.token")"
curl -s -H "$status_auth" http://127.0.0.1:28113/status | sed 's/},{"name"/},\n {"name"/g; s/\],"audit"/],\n "audit"/'
echo
echo "== and as Prometheus text (first lines)"
curl -s -H "$status_auth" 'http://127.0.0.1:28113/status?format=prometheus' | grep -v '^#' | grep -E 'verified|failed",reason="(chain|name)"|expiry' | head -8
