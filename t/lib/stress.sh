#!/usr/bin/env bash
# The suite (or the given t/ files) run RUNS times, one after another,
# beside a CPU hog: stress-ng with twice as many CPU workers as cores,
# started before the first run and stopped after the last. Each run's
# time and result is said; it fails when any run fails. The durations
# tests rely on are meant to come from conditions they wait for, so they
# hold on a machine this busy (`make test-stress`).
set -uo pipefail
runs=${1:?usage: stress.sh RUNS [t/FILE.t ...]}
shift
command -v stress-ng > /dev/null || { echo "stress-ng is missing (make deps installs it)"; exit 1; }
: "${GATEWAY2NGINX:?the gateway2nginx under test}" "${GTLS_MODULE:?the module under test}"

hogs=$((2 * $(nproc)))
stress-ng --cpu "$hogs" --cpu-method matrixprod --timeout 0 --quiet &
hog=$!
trap 'kill "$hog" 2> /dev/null; wait "$hog" 2> /dev/null' EXIT
echo "stress-ng: $hogs CPU workers beside the suite, on $(nproc) cores"

failed=0
for ((run = 1; run <= runs; run++)); do
    start=$(date +%s)
    prove -r "${@:-t/}"
    rc=$?
    took=$(($(date +%s) - start))
    if [ "$rc" = 0 ]; then
        echo "stress run $run of $runs: PASS in $took s"
    else
        echo "stress run $run of $runs: FAIL in $took s"
        failed=$((failed + 1))
    fi
done
echo "stress: $((runs - failed)) of $runs runs passed beside $hogs CPU workers"
[ "$failed" = 0 ]
