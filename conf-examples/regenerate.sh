#!/bin/sh
# Regenerates every example's expected/ output with the flags the golden
# test (t/200-examples.t) uses. Run after a deliberate change of output.
# The outputs are those for Debian 12's nginx, whichever nginx is here
# (conf-examples/nginx-debian12).
set -eu
cd "$(dirname "$0")/.."
for ex in spiffe-backend system-ca weighted-two-policies rejected-policy tls-route; do
    build/gateway2nginx -f conf-examples/gateway.yaml -f "conf-examples/$ex/manifests.yaml" \
        -o "conf-examples/$ex/expected" --port-offset 28000 --listen-address 127.0.0.1 \
        --status-listen 127.0.0.1:28113 --allow-endpoints 127.0.0.0/8 --instance example \
        --nginx conf-examples/nginx-debian12
    rm -rf "conf-examples/$ex/expected/logs" "conf-examples/$ex/expected/temp" "conf-examples/$ex/expected/status.token"
done
