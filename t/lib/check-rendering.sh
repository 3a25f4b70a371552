#!/usr/bin/env bash
# Does this checkout's gateway2nginx render what BASE's rendered? Builds
# BASE's gateway2nginx (a git revision) under build/rendering-base, runs the
# suite (or the given t/ files) with every one-shot gateway2nginx run
# repeated by it (t/lib/shadow-gateway2nginx), and fails when any output
# file, exit status or message differs, or when nothing was compared.
# `make check-rendering BASE=REV [TESTS=...]` sets the environment.
set -uo pipefail
base_rev=${1:?usage: check-rendering.sh BASE [t/FILE.t ...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${GATEWAY2NGINX:?the gateway2nginx under test}"

rev=$(git -C "$root" rev-parse --verify "$base_rev^{commit}") || exit 1
base=$root/build/rendering-base/gateway2nginx-$rev
if [ ! -x "$base" ]; then
    src=$root/build/rendering-base/src-$rev
    rm -rf "$src"
    git -C "$root" worktree add --detach -f "$src" "$rev" > /dev/null || exit 1
    make -C "$src" -j"$(nproc)" "$src/build/gateway2nginx" > "$root/build/rendering-base/build-$rev.log" 2>&1 \
        || { tail -20 "$root/build/rendering-base/build-$rev.log"; exit 1; }
    cp "$src/build/gateway2nginx" "$base"
    git -C "$root" worktree remove --force "$src"
fi

log=$root/build/rendering-base/compared-$rev.log
: > "$log"
GTLS_GENERATOR_TESTS=$(dirname "$GATEWAY2NGINX")/generator_tests \
    GTLS_SHADOW_REAL=$GATEWAY2NGINX GTLS_SHADOW_BASE=$base GTLS_SHADOW_LOG=$log \
    GATEWAY2NGINX=$root/t/lib/shadow-gateway2nginx prove -r "${@:-t/}"
suite=$?

same=$(grep -c '^same ' "$log")
different=$(grep -c '^DIFFERENT ' "$log")
grep '^DIFFERENT ' "$log" | head -20
echo "rendering against ${rev:0:12}: $same one-shot runs the same, $different different ($log)"
[ "$suite" = 0 ] || { echo "the suite failed"; exit 1; }
[ "$different" = 0 ] && [ "$same" -gt 0 ]
