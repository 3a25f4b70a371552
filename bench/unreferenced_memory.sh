#!/usr/bin/env bash
# Memory of gateway2nginx run --kubeconfig (the API server simulation) with
# 100 MB of ConfigMaps nobody refers to, beside none, and beside the same
# ConfigMaps each the CA of a BackendTLSPolicy (held whole), in one run:
# the run process's RSS once it has applied what it read and settled, and
# its peak (VmHWM). Target (issue 51): an unreferenced ConfigMap costs at
# most 0.2x its JSON size.
# Usage: bench/unreferenced_memory.sh [COUNT] [KIB]  (default 400 of 256 KiB)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
count=${1:-400}
kib=${2:-256}
generator=${GATEWAY2NGINX:-$PWD/build/gateway2nginx}
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
work=$PWD/build/bench/unreferenced
rm -rf "$work" && mkdir -p "$work"
bench_certs "$work/certs" > /dev/null
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"

# CASE: none | unreferenced | referenced -> $work/CASE.yaml
python3 - "$work" "$count" "$kib" "$work/certs/ca.crt" <<'PY'
import json, sys
work, count, kib, ca_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ca = open(ca_file).read()
base = [
    {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "ours"},
     "spec": {"controllerName": "gateway2nginx.io/controller"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant"}},
    {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw", "namespace": "ns"},
     "spec": {"gatewayClassName": "ours", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}},
]
pad = "x" * (kib * 1024)
def config_maps(referenced):
    out = []
    for i in range(count):
        data = {"padding": pad}
        if referenced:
            data["ca.crt"] = ca
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "tenant"},
                    "data": data})
        if referenced:
            out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{i}", "namespace": "tenant"},
                        "spec": {"ports": [{"name": "https", "port": 443}]}})
            out.append({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy",
                        "metadata": {"name": f"p-{i}", "namespace": "tenant"},
                        "spec": {"targetRefs": [{"group": "", "kind": "Service", "name": f"svc-{i}"}],
                                 "validation": {"hostname": "abc.example.com",
                                                "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": f"cm-{i}"}]}}})
    return out
cases = {"none": base, "unreferenced": base + config_maps(False), "referenced": base + config_maps(True)}
for name, objects in cases.items():
    with open(f"{work}/{name}.yaml", "w") as f:
        f.write("\n---\n".join(json.dumps(o) for o in objects) + "\n")  # JSON is YAML
    with open(f"{work}/{name}.bytes", "w") as f:
        f.write(str(sum(len(json.dumps(o)) for o in objects if o["kind"] == "ConfigMap")))
PY

metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
measure() {  # CASE PORT -> "RSS_MB HWM_MB HELD WHOLE"
    local case=$1 port=$2 dir=$work/$1
    mkdir -p "$dir"
    cat > "$dir/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: sim, cluster: {server: "https://127.0.0.1:$port", certificate-authority: $work/certs/ca.crt}}]
users: [{name: bench, user: {tokenFile: $work/token}}]
contexts: [{name: sim, context: {cluster: sim, user: bench}}]
current-context: sim
YAML
    python3 t/lib/kube-apiserver-sim --listen "127.0.0.1:$port" --cert "$work/certs/ipemail.crt" \
        --key "$work/certs/ipemail.key" --token-file "$work/token" --preload "$work/$case.yaml" 2> "$dir/sim.log" &
    local sim=$!
    pids+=("$sim")
    until curl -s -o /dev/null --cacert "$work/certs/ca.crt" "https://127.0.0.1:$port/version"; do sleep 0.2; done
    "$generator" run --kubeconfig "$dir/kubeconfig" -o "$dir/out" --reload "$dir/out/nginx.pid" \
        --upstream-api 127.0.0.1:$((port + 1)) --health-listen 127.0.0.1:$((port + 2)) --status-listen off \
        --module-dir "$(dirname "$module")" --listen-address 127.0.0.1 --port-offset 30000 2> "$dir/run.log" &
    local run=$!
    pids+=("$run")
    # settled: written, and no apply for two seconds
    local applies=-1 now
    until [ -f "$dir/out/nginx.conf" ]; do sleep 0.2; done
    while now=$(metric $((port + 2)) gateway2nginx_applies_total) && [ "$now" != "$applies" ]; do applies=$now; sleep 2; done
    local rss hwm
    rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$run/status")
    hwm=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$run/status")
    echo "$rss $hwm $(metric $((port + 2)) gateway2nginx_objects_held) $(metric $((port + 2)) gateway2nginx_objects_held_whole)"
    kill "$run" "$sim"
    wait "$run" "$sim" 2>/dev/null || true
}

mb=$(awk '{printf "%.1f", $1 / 1048576}' "$work/unreferenced.bytes")
read -r none_rss none_hwm none_held none_whole < <(measure none 29700)
read -r un_rss un_hwm un_held un_whole < <(measure unreferenced 29710)
read -r ref_rss ref_hwm ref_held ref_whole < <(measure referenced 29720)
printf '%-44s %10s %10s %8s %8s\n' 'gateway2nginx run --kubeconfig' 'RSS MB' 'peak MB' 'held' 'whole'
printf '%-44s %10s %10s %8s %8s\n' 'no ConfigMap' "$none_rss" "$none_hwm" "$none_held" "$none_whole"
printf '%-44s %10s %10s %8s %8s\n' "$count ConfigMaps ($mb MB), unreferenced" "$un_rss" "$un_hwm" "$un_held" "$un_whole"
printf '%-44s %10s %10s %8s %8s\n' "the same, each a policy's CA" "$ref_rss" "$ref_hwm" "$ref_held" "$ref_whole"
awk -v n="$none_rss" -v u="$un_rss" -v r="$ref_rss" -v nh="$none_hwm" -v uh="$un_hwm" -v mb="$mb" 'BEGIN {
    printf "unreferenced: %.3fx their JSON size held (RSS over none; target <= 0.2), peak %.3fx\n", (u - n) / mb, (uh - nh) / mb
    printf "referenced:   %.3fx their JSON size held (RSS over none)\n", (r - n) / mb
}'
