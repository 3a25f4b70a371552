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
