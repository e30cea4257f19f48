#!/usr/bin/env bash
# with_server.sh SERVER KERNELS_LIB COMMAND...: runs COMMAND on
# ADSM_DEVICE=remote against a device server started here on loopback (with
# KERNELS_LIB), and stops the server after.  COMMAND's status is the result.
# REMOTE_TEST_SERVER_ARGS adds to the server's options (--device cpu, or
# cuda on the driver's double with --modules); REMOTE_TEST_SERVER_PRELOAD is
# preloaded into the server alone (the double's kernels, found by name).
set -euo pipefail
server=$1 kernels=$2
shift 2
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
head -c 48 /dev/urandom | base64 > "$dir/key"
chmod 600 "$dir/key"
# shellcheck disable=SC2086  # the extra options are words
LD_PRELOAD="${REMOTE_TEST_SERVER_PRELOAD:-${LD_PRELOAD:-}}" "$server" --key "$dir/key" --address 127.0.0.1 --port 0 \
    --memory 2G --kernels "$kernels" ${REMOTE_TEST_SERVER_ARGS:-} > "$dir/out" 2> "$dir/log" &
pid=$!
for _ in $(seq 100); do
    grep -q '^listening on' "$dir/out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { cat "$dir/log" >&2; exit 1; }
    sleep 0.05
done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$dir/out")
[ -n "$port" ] || { echo "the device server did not start" >&2; cat "$dir/log" >&2; exit 1; }
status=0
ADSM_DEVICE=remote ADSM_REMOTE="127.0.0.1:$port" ADSM_REMOTE_KEY="$dir/key" "$@" || status=$?
if [ "$status" -ne 0 ]; then echo "--- device server log" >&2; cat "$dir/log" >&2; fi
exit "$status"
