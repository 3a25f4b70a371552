#!/usr/bin/env bash
# CHANGES (default 1000) route changes in a row through gateway2nginx run
# (--routes table --start-nginx): an HTTPRoute's path moved each time,
# each change waited for until it serves. Beside them, opened before the
# first change: a WebSocket (Service appProtocol kubernetes.io/ws, through
# the table), a gRPC channel (GRPCRoute, kubernetes.io/h2c: one HTTP/2
# connection, t/lib/grpc-echo.py hold) and a client asking a steady route
# without pause. Prints the reloads, the steady client's failed requests,
# nginx's RSS after / before, whether the WebSocket still echoes and the
# gRPC channel still answers on the connection it opened (a reload, a
# listener added, makes it "no": the old workers close HTTP/2 connections;
# a WebSocket outlives a reload in an old worker), and the time a change
# takes to serve.
# Usage: bench/route_churn.sh [CHANGES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
changes=${1:-1000}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
generator=${GATEWAY2NGINX:-$PWD/build/gateway2nginx}
work=$PWD/build/bench/route_churn
rm -rf "$work" && mkdir -p "$work/in"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

echo_port=29601 grpc_port=29602 gateway=29080
perl t/lib/echo-server.pl "$echo_port=ns/web" > "$work/echo.log" 2>&1 & pids+=($!)
/usr/bin/python3 t/lib/grpc-echo.py serve "$grpc_port=ns/grpc" > "$work/grpc.log" 2>&1 & pids+=($!)
until grep -q ready "$work/grpc.log" 2>/dev/null && curl -s -o /dev/null "http://127.0.0.1:$echo_port/"; do sleep 0.05; done

service_yaml() {  # NAME PORT APP_PROTOCOL
    cat <<YAML
---
apiVersion: v1
kind: Service
metadata: {name: $1, namespace: ns}
spec:
  ports: [{name: p, port: $2, appProtocol: $3}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $1-1
  namespace: ns
  labels: {kubernetes.io/service-name: $1}
addressType: IPv4
ports: [{name: p, port: $2}]
endpoints: [{addresses: [127.0.0.1]}]
YAML
}
route_yaml() {  # KIND NAME HOSTNAME RULE: a route of Gateway ns/gw
    cat <<YAML
---
apiVersion: gateway.networking.k8s.io/v1
kind: $1
metadata: {name: $2, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [$3]
  rules: [$4]
YAML
}
{
    # GatewayClass ours, Gateway ns/gw with one HTTP listener on 80: the tests' own
    cat generator/tests/testdata/http-gateway.yaml
    service_yaml web "$echo_port" kubernetes.io/ws
    service_yaml grpc "$grpc_port" kubernetes.io/h2c
    route_yaml HTTPRoute steady steady.test "{backendRefs: [{name: web, port: $echo_port}]}"
    route_yaml GRPCRoute grpc grpc.test "{backendRefs: [{name: grpc, port: $grpc_port}]}"
} > "$work/in/base.yaml"
churn_yaml() {  # I: the churned route's path is /vI
    route_yaml HTTPRoute churn churn.test \
        "{matches: [{path: {type: PathPrefix, value: /v$1}}], backendRefs: [{name: web, port: $echo_port}]}"
}
put() { cat > "$work/in/.$1.tmp"; mv "$work/in/.$1.tmp" "$work/in/$1"; }
churn_yaml 0 | put churn.yaml

"$generator" run -f "$work/in" -o "$work/out" --port-offset 29000 --listen-address 127.0.0.1 \
    --module-dir "$(dirname "$module")" --status-listen off --allow-endpoints 127.0.0.0/8 \
    --upstream-api 127.0.0.1:29114 --routes table --start-nginx --debounce 20 2> "$work/run.log" & pids+=($!)
until_answers "$(date +%s%N)" /v0 200 '%{http_code}' churn.test > /dev/null

# the long-lived connections, and the steady client
mkfifo "$work/ws.in" "$work/grpc.in"
perl -It/lib -MTest::WebSocket=new_key,write_frame,read_frame -MIO::Socket::INET -e '
    $| = 1;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:'"$gateway"'") or die "connect: $!";
    print $s "GET /ws HTTP/1.1\r\nHost: steady.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        . "Sec-WebSocket-Key: " . new_key() . "\r\nSec-WebSocket-Version: 13\r\n\r\n";
    my $head = ""; $head .= getc($s) // die "closed\n" until $head =~ /\r\n\r\n$/;
    print $head =~ m{^HTTP/1\.1 101 } ? "upgraded\n" : "refused\n";
    while (my $line = <STDIN>) {
        chomp $line;
        write_frame($s, 1, $line, 1);
        my ($op, $text) = eval { read_frame($s) };
        print defined $text && $text eq $line ? "echoed\n" : "lost\n";
    }' < "$work/ws.in" > "$work/ws.out" & pids+=($!)
exec 7> "$work/ws.in"
/usr/bin/python3 t/lib/grpc-echo.py hold "127.0.0.1:$gateway" grpc.test < "$work/grpc.in" > "$work/grpc.out" & pids+=($!)
grpc_client=$!
exec 8> "$work/grpc.in"
echo first >&7; echo first >&8
until [ "$(grep -c . "$work/ws.out" 2>/dev/null)" -ge 2 ] && [ -s "$work/grpc.out" ]; do sleep 0.05; done
connections() { ss -tnpH state established "dport = :$gateway" | grep "pid=$1," | awk '{print $3}' | sort; }
grpc_connection=$(connections "$grpc_client")
( while :; do curl -s -o /dev/null -w '%{http_code}\n' -H 'Host: steady.test' "http://127.0.0.1:$gateway/steady"; done ) \
    > "$work/steady.codes" & pids+=($!)
steady=$!
nginx_rss() {
    local master; master=$(cat "$work/out/nginx.pid")
    ps -o rss= --ppid "$master" -p "$master" | awk '{s += $1} END {print s}'
}
rss_before=$(nginx_rss)
reloads_before=$(grep -c 'nginx reloaded' "$work/run.log" || true)

took=()
for i in $(seq "$changes"); do
    start=$(date +%s%N)
    churn_yaml "$i" | put churn.yaml
    took+=("$(until_answers "$start" "/v$i" 200 '%{http_code}' churn.test)")
done

kill "$steady"; wait "$steady" 2>/dev/null || true
echo last >&7; echo last >&8
until [ "$(grep -c . "$work/ws.out")" -ge 3 ] && [ "$(grep -c . "$work/grpc.out")" -ge 2 ]; do sleep 0.05; done
sleep 2  # the run's catch-up after a quiet spell, before nginx's RSS
printf '%-56s %s\n' "$changes route changes through gateway2nginx run (the table)" ""
printf '%-56s %s\n' "reloads" "$(( $(grep -c 'nginx reloaded' "$work/run.log" || true) - reloads_before ))"
printf '%-56s %s of %s\n' "steady client's failed requests" "$(grep -vc '^200$' "$work/steady.codes" || true)" \
    "$(grep -c . "$work/steady.codes")"
printf '%-56s %s\n' "nginx RSS after / before" "$(echo "$(nginx_rss) $rss_before" | awk '{printf "%.3f", $1 / $2}')"
printf '%-56s %s\n' "WebSocket opened before the first change, after the last" "$(tail -1 "$work/ws.out")"
printf '%-56s %s\n' "gRPC channel: its call after the last change" "$(tail -1 "$work/grpc.out")"
printf '%-56s %s\n' "gRPC channel: on the connection it opened" \
    "$([ -n "$grpc_connection" ] && [ "$(connections "$grpc_client")" = "$grpc_connection" ] && echo yes || echo no)"
printf '%-56s %s\n' "a change to traffic, median / p99 (ms)" \
    "$(printf '%s\n' "${took[@]}" | median) / $(printf '%s\n' "${took[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int(NR*0.99+0.999)]}')"
