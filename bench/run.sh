#!/usr/bin/env bash
# make bench: every benchmark, side by side in one run, into one table
# printed and written to bench/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results.md
{
    echo "# Benchmark results"
    echo
    echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $(/usr/sbin/nginx -v 2>&1 | sed 's/.*: //'),"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown). Each figure is a median of interleaved runs;"
    echo "each ratio compares two things measured in this run. Reproduce with \`make bench\`."
    echo
    echo "## Data plane: requests/s, module (strict, CA, URI SAN, SPKI pin) / stock proxy_ssl_verify on (target >= 0.99)"
    echo
    echo '```'
    bash bench/dataplane.sh "${BENCH_SECONDS:-5}"
    echo '```'
    echo
    echo "## Data plane: instructions per request under callgrind, module / stock (no machine noise)"
    echo
    echo '```'
    bash bench/callgrind.sh "${CALLGRIND_REQUESTS:-200}"
    echo '```'
    echo
    echo "## Routes at run time: instructions per request, a run-time table / the same route as a rendered location"
    echo "## (targets <= 1.05 at 100 routes, <= 1.10 at 10,000); replacing routes, the state zone, RSS"
    echo
    echo '```'
    bash bench/routes_callgrind.sh "${CALLGRIND_REQUESTS:-200}"
    bash bench/routes_replace.sh
    echo '```'
    echo
    echo "## Scale: nginx -t, one policy per TLS backend, module / plain HTTP (target <= 2x at 10,000); stock beside"
    echo
    echo "tls: the same locations proxying to https:// without any verification, stock nginx 1.22 (its proxy"
    echo "creates one SSL context per location; the module shares one among locations with the same settings)."
    echo
    echo '```'
    bash bench/scale.sh
    echo '```'
    echo
    echo "## Generator: gateway2nginx / yaml-cpp event parse of the same file (target <= 1.3x and <= 100 MB at 10,000)"
    echo
    echo "gateway2nginx scans YAML on $(nproc) threads here (--jobs: the CPUs, at most 4); its CPU seconds and its"
    echo "time on one thread (--jobs 1) are beside."
    echo
    echo '```'
    bash bench/generator.sh
    echo '```'
    echo
    echo "The same objects one file per object (a directory, as a config sync writes them) against one file:"
    echo
    echo '```'
    bash bench/generator_files.sh "${BENCH_ROUTES:-10000}"
    echo '```'
    echo
    echo "gateway2nginx on N Gateways of three listeners (listener isolation) against the YAML parse alone:"
    echo
    echo '```'
    bash bench/gateways.sh
    echo '```'
    echo
    echo "## Endpoint churn: zone upstream (servers replaceable at run time) / no zone, requests/s (target ~1.0);"
    echo "## change to traffic at the new endpoint, through gateway_tls_upstream_api and through a reload"
    echo
    echo '```'
    bash bench/upstream_api.sh "${BENCH_SECONDS:-5}" "${BENCH_ROUTES:-10000}"
    echo '```'
    echo
    echo "End to end: an EndpointSlice change to traffic at its new endpoint, gateway2nginx run (rereads and resolves"
    echo "every manifest, pushes) against a full regenerate, nginx -t and reload:"
    echo
    echo '```'
    bash bench/endpoint_change.sh "${BENCH_ROUTES:-10000}"
    echo '```'
    echo
    echo "## gateway2nginx run reading the Kubernetes API (the API server simulation) beside the same run reading files"
    echo
    echo "Change to traffic (target for an endpoint change: under 100 ms), the run process's peak memory (target:"
    echo "within 2x of the one-shot generator), and the parse stage on the objects as YAML and as JSON:"
    echo
    echo '```'
    bash bench/kube_api.sh "${BENCH_ROUTES:-10000}"
    echo '```'
    echo
    echo "## gateway2nginx run: a new HTTPRoute to traffic, rendered locations (a reload each) / the route table"
    echo
    echo "Targets at 1,000 routes: under 50 ms at the median, no reload; at 10,000: under 100 ms median, 250 ms p99;"
    echo "run's CPU per route change under 20 ms:"
    echo
    echo '```'
    CHANGES=${ROUTE_CHANGES:-10} bash bench/route_change.sh "${BENCH_ROUTES:-10000}"
    echo '```'
    echo
    echo "## gateway2nginx run: 1,000 route changes in a row through the table"
    echo
    echo "Targets: no reload, no failed request, nginx RSS within 5% of its start, a WebSocket and a gRPC channel"
    echo "opened before the first change still open after the last:"
    echo
    echo '```'
    bash bench/route_churn.sh "${CHURN_CHANGES:-1000}"
    echo '```'
    echo
    echo "## gateway2nginx run --kubeconfig: 100 MB of ConfigMaps nobody refers to / none / each a policy's CA"
    echo
    echo "RSS once settled, and peak; what an unreferenced ConfigMap costs per byte of its JSON (target <= 0.2):"
    echo
    echo '```'
    bash bench/unreferenced_memory.sh
    echo '```'
    echo
    echo "## The upstream API's body reader: peak memory added per body byte (target: a few; a refused body no dearer)"
    echo
    echo '```'
    bash bench/api_body_memory.sh
    echo '```'
} | tee "$out.tmp"
mv "$out.tmp" "$out"
