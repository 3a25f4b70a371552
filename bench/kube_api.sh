#!/usr/bin/env bash
# gateway2nginx run reading the Kubernetes API (the API server simulation,
# t/lib/kube-apiserver-sim, preloaded with N routes from make-manifests.pl,
# ENDPOINTS (default 5) endpoints each)
# beside the same run reading files, in one run, rounds alternating:
#   - an EndpointSlice change to traffic (a merge patch to the API; a file
#     replaced by rename), pushed with no reload;
#   - a trust change to traffic: the measured policy's own CA ConfigMap set
#     to a CA that did not sign the backend (502) and back, pushed with no
#     reload;
#   - a BackendTLSPolicy change to traffic: the measured policy's hostname
#     one the backend's certificate lacks (502) and back (with
#     ROUTES_MODE=table through the API: pushed with no reload);
#   - a route change to traffic (rendered, checked, reloaded; with
#     ROUTES_MODE=table, --routes table: pushed to the route table, no
#     reload), and its CPU time;
#   - the run process's peak memory (VmHWM), beside the one-shot generator's;
#   - a fresh start over a cluster whose status is already right: the
#     status writes it makes (none), and when it has compared them all;
#   - with ROUTES_MODE=table, NEW_ROUTES (default 100) new HTTPRoutes
#     created through the API one at a time: median and p99 to traffic,
#     the run's CPU for each, its reloads; then NEW_BACKENDS (default 10)
#     plaintext Services new to nginx, each created (its CPU), then a
#     route to it (--spare-backends NEW_BACKENDS: held by a spare), the
#     route timed;
#   - the one-shot generator on the same objects as YAML and as JSON (the
#     text the API path hands to the parse stage is JSON).
# The routes share HOSTS hostnames: by default one with rendered locations,
# and with ROUTES_MODE=table one per 100 routes (one hostname past 5,000
# routes is more than the route table takes for it, and is served as
# locations: a route change would reload whatever ROUTES_MODE says).
# Usage: [ROUTES_MODE=table] [HOSTS=N] bench/kube_api.sh [ROUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
routes=${1:-10000}
rounds=${ROUNDS:-3}
endpoints=${ENDPOINTS:-5}
routes_mode=${ROUTES_MODE:-locations}
if [ "$routes_mode" = table ]; then
    hosts=${HOSTS:-$(( routes / 100 > 1 ? routes / 100 : 1 ))}
else
    hosts=${HOSTS:-1}
fi
module=${GTLS_MODULE:-$PWD/build/nginx/objs/ngx_http_gateway_tls_module.so}
generator=${GATEWAY2NGINX:-$PWD/build/gateway2nginx}
work=$PWD/build/bench/kube_api
rm -rf "$work" && mkdir -p "$work/in"
bench_certs "$work/certs" > /dev/null
run_pid= sim_pid=
cleanup() {
    [ -n "$run_pid" ] && kill "$run_pid" 2>/dev/null || true
    [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null || true
    for d in "$work/out" "$work/backends"; do
        kill -QUIT "$(cat "$d/logs/nginx.pid" "$d/nginx.pid" 2>/dev/null | head -1)" 2>/dev/null || true
    done
}
trap cleanup EXIT

ab_backends "$work/backends" "$work/certs"

perl bench/make-manifests.pl "$routes" "$work/certs/ca.crt" "$endpoints" "$hosts" > "$work/in/routes.yaml"
measured_service_yaml "$work/certs/ca.crt" > "$work/in/measured.yaml"
measured_route_yaml /m0 > "$work/in/route.yaml"
measured_slice_yaml 127.0.0.1 > "$work/in/slice.yaml"
put() { cat > "$work/in/.$1.tmp"; mv "$work/in/.$1.tmp" "$work/in/$1"; }

# the API server simulation, holding the same objects
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"
cat > "$work/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: sim, cluster: {server: "https://127.0.0.1:29600", certificate-authority: $work/certs/ca.crt}}]
users: [{name: bench, user: {tokenFile: $work/token}}]
contexts: [{name: sim, context: {cluster: sim, user: bench}}]
current-context: sim
YAML
python3 t/lib/kube-apiserver-sim --listen 127.0.0.1:29600 --cert "$work/certs/ipemail.crt" \
    --key "$work/certs/ipemail.key" --token-file "$work/token" --bookmark-seconds 30 \
    --preload "$work/in/routes.yaml" --preload "$work/in/measured.yaml" --preload "$work/in/route.yaml" \
    --preload "$work/in/slice.yaml" 2> "$work/sim.log" &
sim_pid=$!
until curl -s -o /dev/null --cacert "$work/certs/ca.crt" https://127.0.0.1:29600/version; do sleep 0.1; done
api_patch() {  # PATH JSON: a merge patch, as a controller writes
    curl -s -o /dev/null -w '%{http_code}' --cacert "$work/certs/ca.crt" -H "Authorization: Bearer $(cat "$work/token")" \
        -H 'Content-Type: application/merge-patch+json' -X PATCH --data "$2" "https://127.0.0.1:29600$1" \
        | grep -q 200 || { echo "bench: PATCH $1 failed" >&2; exit 1; }
}

flags=(-o "$work/out" --port-offset 29000 --listen-address 127.0.0.1 --module-dir "$(dirname "$module")"
       --status-listen off --allow-endpoints 127.0.0.0/8 --upstream-api 127.0.0.1:29114 --routes "$routes_mode")
# the CPU time the run spent applying, by the way it applied (its /metrics)
cpu_us() {
    curl -s http://127.0.0.1:29116/metrics \
        | awk '$1 ~ /^gateway2nginx_apply_cpu_seconds_total/ {sum += $2} END {printf "%d", sum * 1e6}'
}
"$generator" -f "$work/in" "${flags[@]}" --check 2>/dev/null
/usr/sbin/nginx -p "$work/out/" -c nginx.conf 2>&1 | { grep -v '\[notice\]' || true; } >&2
sleep 1

hwm_mb() { awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$1/status"; }

letter=A address=127.0.0.1 path=/m0 n=0
declare -A endpoint endpoint_cpu trust trust_cpu policy policy_cpu route route_cpu reloads memory
# the measured CA ConfigMap's ca.crt as a merge patch
# run_says PATTERN LOG: waits until the run ($run_pid) logs PATTERN (an ERE)
run_says() {
    until grep -qE "$1" "$2"; do
        kill -0 "$run_pid" || { cat "$2" >&2; exit 1; }
        sleep 0.05
    done
}
ca_patch() { python3 -c 'import json, sys; print(json.dumps({"data": {"ca.crt": open(sys.argv[1]).read()}}))' "$1"; }
# change_both FILE API_PATH PATCH: both inputs given one change, the one
# measured ($source) first: FILE under in/ (its text made beforehand in
# $work/next) and a merge patch of the API's object at API_PATH
change_both() {
    if [ "$source" = files ]; then
        put "$1" < "$work/next"
        api_patch "$2" "$3"
    else
        api_patch "$2" "$3"
        put "$1" < "$work/next"
    fi
}
# the run's CPU since $1 (cpu_us), in ms
cpu_ms_since() { echo "$(cpu_us) $1" | awk '{printf "%.1f", ($1 - $2) / 1000}'; }
for round in $(seq "$rounds"); do
    for source in files api; do
        if [ $source = files ]; then
            "$generator" run -f "$work/in" "${flags[@]}" --reload "$work/out/nginx.pid" --debounce 20 \
                --health-listen 127.0.0.1:29116 2> "$work/run.log" &
        else
            "$generator" run --kubeconfig "$work/kubeconfig" "${flags[@]}" --reload "$work/out/nginx.pid" \
                --debounce 20 --health-listen 127.0.0.1:29116 2> "$work/run.log" &
        fi
        run_pid=$!
        # it has applied what its input holds (the same objects: nothing, or a reload)
        run_says 'OUTDIR already holds|nginx reloaded|no change to the configuration' "$work/run.log"
        # --routes table: and the table pushed to the nginx it found, which
        # at 10,000 routes takes seconds the first change must not share
        if [ "$routes_mode" = table ]; then run_says 'after nginx started' "$work/run.log"; fi
        sleep 1
        # an endpoint change
        if [ $letter = A ]; then letter=B address=127.0.0.2; else letter=A address=127.0.0.1; fi
        # both inputs always hold the same objects: the one measured first
        # (change_both)
        measured_slice_yaml $address > "$work/next"
        cpu_before=$(cpu_us)
        start=$(date +%s%N)
        change_both slice.yaml /apis/discovery.k8s.io/v1/namespaces/demo/endpointslices/measured-x \
            "{\"endpoints\":[{\"addresses\":[\"$address\"]}]}"
        endpoint[$source]+="$(until_answers "$start" $path $letter) "
        sleep 0.5  # before OUTDIR is written again (2 s after)
        endpoint_cpu[$source]+="$(cpu_ms_since "$cpu_before") "
        sleep 0.5
        # a trust change: the wrong CA (every request 502), then the right one
        for ca in unrelated-ca ca; do
            patch=$(ca_patch "$work/certs/$ca.crt")  # made before the clock starts
            measured_service_yaml "$work/certs/$ca.crt" > "$work/next"
            cpu_before=$(cpu_us)
            start=$(date +%s%N)
            change_both measured.yaml /api/v1/namespaces/demo/configmaps/measured-ca "$patch"
            if [ $ca = ca ]; then
                trust[$source]+="$(until_answers "$start" $path $letter) "
                sleep 0.5
                trust_cpu[$source]+="$(cpu_ms_since "$cpu_before") "
            else
                until_answers "$start" $path 502 '%{http_code}' > /dev/null
            fi
            sleep 0.5
        done
        # a policy change: a hostname the backend's certificate lacks (every
        # request 502), then the right one
        for hostname in wrong.example.com abc.example.com; do
            measured_service_yaml "$work/certs/ca.crt" $hostname > "$work/next"
            cpu_before=$(cpu_us)
            start=$(date +%s%N)
            change_both measured.yaml /apis/gateway.networking.k8s.io/v1/namespaces/demo/backendtlspolicies/measured \
                "{\"spec\":{\"validation\":{\"hostname\":\"$hostname\"}}}"
            if [ $hostname = abc.example.com ]; then
                policy[$source]+="$(until_answers "$start" $path $letter) "
                sleep 0.5
                policy_cpu[$source]+="$(cpu_ms_since "$cpu_before") "
            else
                until_answers "$start" $path 502 '%{http_code}' > /dev/null
            fi
            sleep 0.5
        done
        # a route change
        n=$((n + 1)) path=/m$n
        measured_route_yaml $path > "$work/next"
        cpu_before=$(cpu_us)
        start=$(date +%s%N)
        change_both route.yaml /apis/gateway.networking.k8s.io/v1/namespaces/demo/httproutes/measured \
            "{\"spec\":{\"rules\":[{\"matches\":[{\"path\":{\"type\":\"PathPrefix\",\"value\":\"$path\"}}],\"backendRefs\":[{\"name\":\"measured\",\"port\":443}]}]}}"
        route[$source]+="$(until_answers "$start" $path $letter) "
        sleep 0.5
        route_cpu[$source]+="$(cpu_ms_since "$cpu_before") "
        reloads[$source]+="$(grep -c 'nginx reloaded' "$work/run.log" || true) "
        sleep 1.5
        memory[$source]+="$(hwm_mb "$run_pid") "
        kill "$run_pid"; wait "$run_pid" || true; run_pid=
    done
done
# a fresh start over a cluster whose status is already right: one run
# writes every status (at 1,000 writes a second), the next starts over
# the same objects and compares each with what the API holds
metric() { curl -s http://127.0.0.1:29116/metrics | awk -v m="$1" '$1 == m {print $2}'; }
compared() {
    echo $(( $(metric 'gateway2nginx_status_writes_total{result="written"}') \
             + $(metric 'gateway2nginx_status_writes_total{result="unchanged"}') ))
}
writes_settled() {  # every status offered compared (and written where it differed), none queued
    local offered; offered=$(metric gateway2nginx_status_offered)
    [ "$offered" -gt 0 ] && [ "$(metric gateway2nginx_status_queued)" = 0 ] && [ "$(compared)" -ge "$offered" ]
}
for start in write_all again; do
    qps=()
    [ $start = write_all ] && qps=(--kube-api-qps 1000 --kube-api-burst 1000)
    "$generator" run --kubeconfig "$work/kubeconfig" "${flags[@]}" "${qps[@]}" --reload "$work/out/nginx.pid" \
        --debounce 20 --health-listen 127.0.0.1:29116 2> "$work/run-$start.log" &
    run_pid=$!
    started=$(date +%s%N)
    # (settled once the status of nginx serving is offered: the table
    # pushed to the nginx it found)
    until grep -q 'after nginx started' "$work/run-$start.log" && [ -n "$(metric gateway2nginx_status_offered 2>/dev/null)" ] \
          && writes_settled; do
        kill -0 "$run_pid" || { cat "$work/run-$start.log" >&2; exit 1; }
        sleep 0.2
    done
    settled_s=$(( ($(date +%s%N) - started) / 1000000 ))
    status_written=$(metric 'gateway2nginx_status_writes_total{result="written"}')
    compared=$(compared)
    kill "$run_pid"; wait "$run_pid" || true; run_pid=
done

# new HTTPRoutes through the API (ROUTES_MODE=table): NEW_ROUTES (default
# 100) created one at a time on the measured hostname, each to the
# measured Service at a path of its own, timed from the API's answer to
# the POST until it serves (curl polls every 5 ms; run --debounce 20);
# the run's CPU for them, and its reloads
new_routes=${NEW_ROUTES:-100}
new_backends=${NEW_BACKENDS:-10}
new_ms=() new_cpu_ms= new_reloads= backend_ms=() backend_cpu_ms=() service_cpu_ms=() backend_reloads= held_alone=
if [ "$routes_mode" = table ]; then
    : > "$work/run-new.log"  # (there before run_says reads it)
    "$generator" run --kubeconfig "$work/kubeconfig" "${flags[@]}" --reload "$work/out/nginx.pid" \
        --spare-backends "$new_backends" --debounce 20 --health-listen 127.0.0.1:29116 2> "$work/run-new.log" &
    run_pid=$!
    run_says 'after nginx started' "$work/run-new.log"  # the table pushed to the nginx it found
    sleep 1
    # (the spares are new to the nginx it found: a reload before the rounds)
    reloads_before=$(grep -c 'nginx reloaded' "$work/run-new.log" || true)
    api_post() {  # PATH JSON: an object created, as kubectl create does
        curl -s -o /dev/null -w '%{http_code}' --cacert "$work/certs/ca.crt" -H "Authorization: Bearer $(cat "$work/token")" \
            -H 'Content-Type: application/json' -X POST --data "$2" "https://127.0.0.1:29600$1" \
            | grep -q 201 || { echo "bench: POST $1 failed" >&2; exit 1; }
    }
    cpu_before=$(cpu_us)
    for i in $(seq "$new_routes"); do
        body="{\"apiVersion\":\"gateway.networking.k8s.io/v1\",\"kind\":\"HTTPRoute\",\"metadata\":{\"name\":\"new-$i\",\"namespace\":\"demo\"},\"spec\":{\"parentRefs\":[{\"name\":\"shop\"}],\"hostnames\":[\"shop.example.com\"],\"rules\":[{\"matches\":[{\"path\":{\"type\":\"PathPrefix\",\"value\":\"/new$i\"}}],\"backendRefs\":[{\"name\":\"measured\",\"port\":443}]}]}}"
        # from the API server's answer: the write is done (the client's
        # own connection and request are not gateway2nginx's)
        api_post /apis/gateway.networking.k8s.io/v1/namespaces/demo/httproutes "$body"
        start=$(date +%s%N)
        new_ms+=("$(until_answers "$start" "/new$i" "$letter")")
    done
    sleep 0.5
    new_cpu_ms=$(echo "$(cpu_us) $cpu_before $new_routes" | awk '{printf "%.1f", ($1 - $2) / 1000 / $3}')
    new_reloads=$(( $(grep -c 'nginx reloaded' "$work/run-new.log" || true) - reloads_before ))
    # the sum of run's metrics NAME{LABELS} matching the regex $1
    ways='gateway2nginx_apply_cpu_seconds_total[{]way="(routes|whole)"[}]'
    run_metric() {
        curl -s http://127.0.0.1:29116/metrics | awk -v re="^$1 " '$0 ~ re { sum += $NF } END { printf "%.6f\n", sum }'
    }
    # run-new.log's lines matching PATTERN ($1): waited for until there
    # are more than N ($2)
    more_said() {
        local deadline=$(( $(date +%s) + 120 ))
        until [ "$(grep -c "$1" "$work/run-new.log" || true)" -gt "$2" ]; do
            [ "$(date +%s)" -lt "$deadline" ] || { echo "bench: run never said '$1' again" >&2; exit 1; }
            sleep 0.05
        done
    }
    # a plaintext Service new to nginx (created, and applied, first), then
    # a route to it: the route timed, and the run's CPU from its POST
    for i in $(seq "$new_backends"); do
        # its slice first (applied alone: no Service reads it yet), then
        # the Service (no route names it: nothing resolved; waited for
        # until its CPU is counted)
        said=$(grep -c 'no change to the servers nginx holds' "$work/run-new.log" || true)
        api_post /apis/discovery.k8s.io/v1/namespaces/demo/endpointslices "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"newb-$i-x\",\"namespace\":\"demo\",\"labels\":{\"kubernetes.io/service-name\":\"newb-$i\"}},\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"http\",\"port\":29480}],\"endpoints\":[{\"addresses\":[\"127.0.0.1\"]}]}"
        more_said 'no change to the servers nginx holds' "$said"
        applied_cpu=$(run_metric "$ways")
        api_post /api/v1/namespaces/demo/services "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"newb-$i\",\"namespace\":\"demo\"},\"spec\":{\"ports\":[{\"name\":\"http\",\"port\":80}]}}"
        deadline=$(( $(date +%s) + 120 ))
        until [ "$(run_metric "$ways")" != "$applied_cpu" ]; do
            [ "$(date +%s)" -lt "$deadline" ] || { echo "bench: the Service newb-$i was never applied" >&2; exit 1; }
            sleep 0.05
        done
        service_cpu_ms+=("$(echo "$(run_metric "$ways") $applied_cpu" | awk '{printf "%.1f", ($1 - $2) * 1000}')")
        # the route's CPU as run counts it: the ways it was applied
        apply_cpu_before=$(run_metric "$ways")
        api_post /apis/gateway.networking.k8s.io/v1/namespaces/demo/httproutes "{\"apiVersion\":\"gateway.networking.k8s.io/v1\",\"kind\":\"HTTPRoute\",\"metadata\":{\"name\":\"newb-$i\",\"namespace\":\"demo\"},\"spec\":{\"parentRefs\":[{\"name\":\"shop\"}],\"hostnames\":[\"shop.example.com\"],\"rules\":[{\"matches\":[{\"path\":{\"type\":\"PathPrefix\",\"value\":\"/newb$i\"}}],\"backendRefs\":[{\"name\":\"newb-$i\",\"port\":80}]}]}}"
        start=$(date +%s%N)
        backend_ms+=("$(until_answers "$start" "/newb$i" P)")
        # (its CPU is counted once the apply ends; traffic is served before)
        deadline=$(( $(date +%s) + 120 ))
        until [ "$(run_metric "$ways")" != "$apply_cpu_before" ]; do
            [ "$(date +%s)" -lt "$deadline" ] || { echo "bench: the route to newb-$i was never counted" >&2; exit 1; }
            sleep 0.05
        done
        backend_cpu_ms+=("$(echo "$(run_metric "$ways") $apply_cpu_before" | awk '{printf "%.1f", ($1 - $2) * 1000}')")
    done
    backend_reloads=$(( $(grep -c 'nginx reloaded' "$work/run-new.log" || true) - new_reloads - reloads_before ))
    held_alone=$(grep -c 'held by spare' "$work/run-new.log" || true)
    # CATCH_UP_ROUTES (default 5) new routes created as OUTDIR catches up:
    # 2.05 s after the last change was served (the catch-up starts 2 s
    # after the last push and takes a few hundred ms at 10,000 routes),
    # timed as above; beside them, what each catch-up took
    catch_up_ms=()
    for i in $(seq "${CATCH_UP_ROUTES:-5}"); do
        catch_ups_before=$(grep -c 'OUTDIR written' "$work/run-new.log" || true)
        sleep 2.05
        body="{\"apiVersion\":\"gateway.networking.k8s.io/v1\",\"kind\":\"HTTPRoute\",\"metadata\":{\"name\":\"late-$i\",\"namespace\":\"demo\"},\"spec\":{\"parentRefs\":[{\"name\":\"shop\"}],\"hostnames\":[\"shop.example.com\"],\"rules\":[{\"matches\":[{\"path\":{\"type\":\"PathPrefix\",\"value\":\"/late$i\"}}],\"backendRefs\":[{\"name\":\"measured\",\"port\":443}]}]}}"
        api_post /apis/gateway.networking.k8s.io/v1/namespaces/demo/httproutes "$body"
        start=$(date +%s%N)
        catch_up_ms+=("$(until_answers "$start" "/late$i" "$letter")")
        more_said 'OUTDIR written' "$catch_ups_before"
    done
    catch_ups=$(grep -o 'OUTDIR written with the servers pushed since ([^)]*)' "$work/run-new.log" | tail -n "${CATCH_UP_ROUTES:-5}" \
                | sed 's/.*(//; s/)//' | paste -sd ';' -)
    kill "$run_pid"; wait "$run_pid" || true; run_pid=
fi

read -r one_shot_mb _ < <(timed '%M' "$generator" -f "$work/in" -o "$work/one-shot" --port-offset 29000 \
    --module-dir "$(dirname "$module")" --status-listen off --allow-endpoints 127.0.0.0/8)
one_shot_mb=$((one_shot_mb / 1024))

printf '%-40s %10s %10s %8s\n' "$routes routes ($routes_mode), $((routes * endpoints)) endpoints, median of $rounds" \
    files api api/files
for what in endpoint endpoint_cpu trust trust_cpu policy policy_cpu route route_cpu reloads memory; do
    declare -n figures=$what
    f=$(printf '%s\n' ${figures[files]} | median)
    a=$(printf '%s\n' ${figures[api]} | median)
    case $what in
        endpoint) label="EndpointSlice change to traffic (ms)" ;;
        endpoint_cpu) label="its CPU time in run (ms)" ;;
        trust) label="CA ConfigMap change to traffic (ms)" ;;
        trust_cpu) label="its CPU time in run (ms)" ;;
        policy) label="BackendTLSPolicy change to traffic (ms)" ;;
        policy_cpu) label="its CPU time in run (ms)" ;;
        route) label="route change to traffic (ms)" ;;
        route_cpu) label="its CPU time in run (ms)" ;;
        reloads) label="reloads in a round" ;;
        memory) label="run process peak RSS (MB)" ;;
    esac
    echo "$f $a" | awk -v l="$label" '{printf "%-40s %10.1f %10.1f %8.2f\n", l, $1, $2, ($1 > 0 ? $2 / $1 : 0)}'
done
echo "one-shot gateway2nginx on the same files: $one_shot_mb MB peak RSS"
echo "a fresh start over statuses already right: $status_written status writes of $compared compared, settled in ${settled_s} ms"
if [ "$routes_mode" = table ]; then
    printf '%s\n' "${new_ms[@]}" | sort -n | awk -v cpu="$new_cpu_ms" -v reloads="$new_reloads" '
        { ms[NR] = $1 }
        END { p99 = int(NR * 0.99 + 0.999); printf "new HTTPRoutes through the API, %d in a row: to traffic median %d ms, p99 %d ms, max %d ms; CPU in run %.1f ms each; %d reloads\n", NR, ms[int((NR + 1) / 2)], ms[p99], ms[NR], cpu, reloads }'
    if [ "$new_backends" -gt 0 ]; then
        [ ${#catch_up_ms[@]} -gt 0 ] && echo "new HTTPRoutes created as OUTDIR catches up, ${#catch_up_ms[@]}: to traffic ${catch_up_ms[*]} ms; the catch-ups: $catch_ups"
        echo "new HTTPRoutes to plaintext Services new to nginx, $new_backends: to traffic median $(printf '%s\n' "${backend_ms[@]}" | median) ms (${backend_ms[*]}); CPU in run median $(printf '%s\n' "${backend_cpu_ms[@]}" | median) ms (${backend_cpu_ms[*]}); $backend_reloads reloads; $held_alone held by spares; each Service's own creation before: CPU in run median $(printf '%s\n' "${service_cpu_ms[@]}" | median) ms (${service_cpu_ms[*]})"
    fi
fi
echo "rounds, endpoint: files ${endpoint[files]}| api ${endpoint[api]}; its CPU: files ${endpoint_cpu[files]}| api ${endpoint_cpu[api]}; trust: files ${trust[files]}| api ${trust[api]}; its CPU: files ${trust_cpu[files]}| api ${trust_cpu[api]}; policy: files ${policy[files]}| api ${policy[api]}; its CPU: files ${policy_cpu[files]}| api ${policy_cpu[api]}; route: files ${route[files]}| api ${route[api]}; its CPU: files ${route_cpu[files]}| api ${route_cpu[api]}"

# the parse stage on the same objects as YAML and as JSON (one List)
python3 -c 'import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
json.dump({"apiVersion": "v1", "kind": "List", "items": docs}, open(sys.argv[2], "w"))' \
    "$work/in/routes.yaml" "$work/routes.json"
cp "$work/in/routes.yaml" "$work/routes.yaml"
yaml_s=() json_s=()
for round in $(seq "$rounds"); do
    for format in yaml json; do
        read -r seconds < <(timed '%e' "$generator" -f "$work/routes.$format" -o "$work/parse-$format" \
            --port-offset 29000 --module-dir "$(dirname "$module")" --status-listen off)
        if [ $format = yaml ]; then yaml_s+=("$seconds"); else json_s+=("$seconds"); fi
    done
done
y=$(printf '%s\n' "${yaml_s[@]}" | median)
j=$(printf '%s\n' "${json_s[@]}" | median)
echo "$y $j" | awk -v n="$routes" '{printf "one-shot gateway2nginx, %d routes: YAML %.2f s, JSON %.2f s (JSON/YAML %.2f)\n", n, $1, $2, $2 / $1}'
