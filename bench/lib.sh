# Shared by the benchmarks (sourced): timing a command, the test
# certificates and the four proxying locations compared, module against stock.

# timed FORMAT CMD...: /usr/bin/time's FORMAT line for one run of CMD. A run
# that fails prints why and nothing else, so the caller's `read` fails and
# the benchmark stops (set -e): a failed run gives no figure.
timed() {
    local format=$1 out
    shift
    out=$(mktemp)
    if ! /usr/bin/time -o "$out" -f "$format" "$@" > /dev/null 2> "$out.err"; then
        echo "bench: failed: $*" >&2
        cat "$out.err" >&2
        rm -f "$out" "$out.err"
        return 1
    fi
    cat "$out"
    rm -f "$out" "$out.err"
}

# median: the middle of the numbers on standard input, one a line.
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# ab_backends DIR CERTS: an nginx under DIR answering "A" on
# 127.0.0.1:29443 and "B" on 127.0.0.2:29443 (TLS, the set's leaf): the two
# endpoints a measured Service moves between; and "P" on 127.0.0.1:29480
# (plaintext), for Services of no policy.
ab_backends() {
    mkdir -p "$1/logs"
    cat > "$1/nginx.conf" <<CONF
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    server { listen 127.0.0.1:29443 ssl; ssl_certificate $2/leaf.crt; ssl_certificate_key $2/leaf.key; return 200 "A"; }
    server { listen 127.0.0.2:29443 ssl; ssl_certificate $2/leaf.crt; ssl_certificate_key $2/leaf.key; return 200 "B"; }
    server { listen 127.0.0.1:29480; return 200 "P"; }
}
CONF
    /usr/sbin/nginx -p "$1/" -c nginx.conf
}

# measured_service_yaml [CA [HOSTNAME]]: Service demo/measured and its
# BackendTLSPolicy (HOSTNAME, abc.example.com unless given): the CA
# ConfigMap make-manifests.pl writes, or with a PEM file CA, a ConfigMap of
# its own (demo/measured-ca) holding it.
measured_service_yaml() {
    local ca=${1:-} hostname=${2:-abc.example.com}
    if [ -n "$ca" ]; then
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: measured-ca, namespace: demo}\ndata:\n  ca.crt: |\n'
        sed 's/^/    /' "$ca"
        echo ---
    fi
    cat <<YAML
apiVersion: v1
kind: Service
metadata: {name: measured, namespace: demo}
spec:
  ports: [{name: https, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: measured, namespace: demo}
spec:
  targetRefs: [{group: "", kind: Service, name: measured}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ${ca:+measured-}ca}]
    hostname: $hostname
YAML
}

# measured_route_yaml PATH: HTTPRoute demo/measured on shop.example.com,
# PATH (a prefix) to the measured Service.
measured_route_yaml() {
    cat <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: measured, namespace: demo}
spec:
  parentRefs: [{name: shop}]
  hostnames: [shop.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: $1}}]
    backendRefs: [{name: measured, port: 443}]
YAML
}

# measured_slice_yaml ADDRESS: the EndpointSlice demo/measured-x of Service
# measured, its one endpoint ADDRESS:29443.
measured_slice_yaml() {
    cat <<YAML
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: measured-x
  namespace: demo
  labels: {kubernetes.io/service-name: measured}
ports: [{name: https, port: 29443}]
endpoints: [{addresses: ["$1"]}]
YAML
}

# until_answers START PATH WANT [WHAT [HOST]]: milliseconds from START (date
# +%s%N) until HOST (default shop.example.com) PATH on 127.0.0.1:29080
# answers WANT (at most 120 s): its body, or what curl's -w WHAT says (e.g.
# '%{http_code}').
until_answers() {
    local start=$1 path=$2 want=$3 what=${4:-} host=${5:-shop.example.com}
    local deadline=$(( $(date +%s%N) + 120000000000 ))
    while [ "$(date +%s%N)" -lt "$deadline" ]; do
        [ "$(curl -s ${what:+-o /dev/null -w "$what"} -H "Host: $host" "http://127.0.0.1:29080$path")" = "$want" ] \
            && { echo $(( ($(date +%s%N) - start) / 1000000 )); return; }
        sleep 0.005
    done
    echo "never answered $want on $path" >&2
    return 1
}

# bench_certs DIR: makes the test certificate set in DIR and prints the
# backend leaf's SPKI pin (base64 SHA-256).
bench_certs() {
    sh t/lib/make-certs.sh "$1" > /dev/null
    openssl x509 -in "$1/leaf.leaf.crt" -pubkey -noout | openssl pkey -pubin -outform der \
        | openssl dgst -sha256 -binary | base64
}

# backend_server LISTEN CERTS: the TLS backend's server{} (the certificate
# set's leaf), answering "ok" on every request of a keepalive connection.
backend_server() {
    cat <<CONF
    server {
        listen $1 ssl;
        ssl_certificate $2/leaf.crt;
        ssl_certificate_key $2/leaf.key;
        keepalive_requests 100000;
        location / { return 200 "ok\n"; }
    }
CONF
}

# backend_upstreams ADDRESS KEEPALIVE: the upstreams proxy_server uses. Module
# and stock keep their keepalive connections apart: the module reuses a
# connection only under the policy that verified it, so in a shared pool
# each module run would first close the connections stock left and pay
# their handshakes, which stock would not.
backend_upstreams() {
    cat <<CONF
    upstream backend_keepalive_module { server $1; keepalive $2; }
    upstream backend_keepalive_stock { server $1; keepalive $2; }
    upstream backend_fresh { server $1; }
CONF
}

# proxy_server LISTEN CA SPKI: the proxying server{}: HTTP/1.1 upstream
# keepalive, SNI abc.example.com, and /module/ and /stock/ locations, each with
# upstream keepalive (upstream backend_keepalive_module or _stock) and with a
# full handshake per request (upstream backend_fresh): the module in strict
# mode with the CA, the backend's URI SAN and an SPKI pin; stock with
# proxy_ssl_verify on.
proxy_server() {
    local listen=$1 ca=$2 spki=$3 kind upstream reuse
    cat <<CONF
    server {
        listen $listen;
        keepalive_requests 100000;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_ssl_server_name on;
        proxy_ssl_name abc.example.com;
CONF
    for kind in keepalive handshake; do
        upstream=backend_keepalive_module reuse=""
        [ "$kind" = handshake ] && upstream=backend_fresh reuse="proxy_ssl_session_reuse off;"
        cat <<CONF
        location /module/$kind/ {
            proxy_pass https://$upstream;
            $reuse
            proxy_ssl_verify_mode strict;
            proxy_ssl_verify_ca $ca;
            proxy_ssl_verify_san uri:spiffe://abc.example.com/test-identity;
            proxy_ssl_verify_pin sha256-spki:$spki;
        }
        location /stock/$kind/ {
            proxy_pass https://${upstream/_module/_stock};
            $reuse
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate $ca;
        }
CONF
    done
    echo "    }"
}

# callgrind_instructions PREFIX WAKE_URL URL COUNT [PREPARE...]: the
# instructions (Ir) of one nginx run (PREFIX/nginx.conf, one process)
# under callgrind: once WAKE_URL answers, PREPARE runs (if given), then
# COUNT requests to URL on one client connection, each to answer 200.
callgrind_instructions() {
    local prefix=$1 wake=$2 url=$3 count=$4 out
    shift 4
    out="$prefix/callgrind.out.$RANDOM"
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        /usr/sbin/nginx -p "$prefix/" -c nginx.conf 2> "$prefix/valgrind.log" &
    local vg=$!
    for _ in $(seq 1200); do
        curl -s -o /dev/null "$wake" && break
        sleep 0.1
    done
    if [ $# -gt 0 ] && ! "$@"; then kill "$vg"; return 1; fi
    local urls=() codes
    for _ in $(seq "$count"); do urls+=(-o /dev/null "$url"); done
    codes=$(curl -s -w '%{http_code}\n' "${urls[@]}" | sort -u | tr '\n' ' ')
    [ "$codes" = "200 " ] || { echo "$url answered: $codes" >&2; kill "$vg"; return 1; }
    kill -QUIT "$(cat "$prefix/logs/nginx.pid")"
    wait "$vg" || true
    awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

# api_token FILE: a fresh bearer token for the upstream API in FILE (0600), printed
api_token() {
    local token
    token=$(head -c 64 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | head -c 40)
    (umask 077 && echo "$token" > "$1")
    echo "$token"
}

# routes_server LISTEN TOKEN_FILE BODY_SIZE: a server{} routed by the table
# "main" as gateway2nginx renders one (each rule's backend passed by its
# scheme, "http" here: proxy_pass http://gateway_tls_routes, on to the
# upstream{} the rule names) and the upstream API at /api, for 127.0.0.1
# with the token
routes_server() {
    cat <<CONF
    server {
        listen $1;
        location / {
            gateway_tls_routes main;
            proxy_pass https://gateway_tls_routes;
            gateway_tls_routes_pass http { proxy_pass http://gateway_tls_routes; }
            gateway_tls_routes_pass grpcs { grpc_pass grpcs://gateway_tls_routes; }
            gateway_tls_routes_pass grpc { grpc_pass grpc://gateway_tls_routes; }
        }
        location = /api {
            gateway_tls_upstream_api;
            gateway_tls_upstream_api_allow 127.0.0.1;
            gateway_tls_upstream_api_token_file $2;
            client_body_buffer_size $3;
            client_max_body_size $3;
        }
    }
CONF
}
