#!/bin/sh
# Regenerates every example's expected/ output with the flags the golden
# test (t/110-examples.t) uses. Run after a deliberate change of output.
# The outputs are those for Debian 12's nginx, whichever nginx is here:
# gateway2nginx is told of that build by an nginx -V that says it.
set -eu
cd "$(dirname "$0")/.."
debian12=$(mktemp)
trap 'rm -f "$debian12"' EXIT
printf '%s\n' '#!/bin/sh' "echo 'nginx version: nginx/1.22.1' >&2" \
    "echo 'configure arguments: --prefix=/usr/share/nginx --modules-path=/usr/lib/nginx/modules --with-stream=dynamic' >&2" \
    > "$debian12"
chmod 755 "$debian12"
for ex in spiffe-backend system-ca weighted-two-policies rejected-policy tls-route; do
    build/gateway2nginx -f conf-examples/gateway.yaml -f "conf-examples/$ex/manifests.yaml" \
        -o "conf-examples/$ex/expected" --port-offset 28000 --listen-address 127.0.0.1 \
        --status-listen 127.0.0.1:28113 --nginx "$debian12"
    rm -rf "conf-examples/$ex/expected/logs" "conf-examples/$ex/expected/temp"
done
