#!/bin/sh
# same_output.sh GUILE LIBADSM SCRIPT: runs SCRIPT with libgc, then with
# adsm's runtime preloaded in its place (ADSM_* from the environment), and
# passes when both print the same, and the preloaded run used adsm's heap.
set -u
guile=$1 lib=$2 script=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
GUILE_AUTO_COMPILE=0 "$guile" --no-auto-compile "$script" >"$tmp/libgc" 2>&1 || { echo "FAIL: with libgc"; cat "$tmp/libgc"; exit 1; }
GUILE_AUTO_COMPILE=0 ADSM_STATS=1 LD_PRELOAD="$lib" "$guile" --no-auto-compile "$script" >"$tmp/adsm" 2>"$tmp/stats" ||
    { echo "FAIL: with adsm"; cat "$tmp/adsm" "$tmp/stats"; exit 1; }
if ! cmp -s "$tmp/libgc" "$tmp/adsm"; then
    echo "FAIL: the output differs"
    diff "$tmp/libgc" "$tmp/adsm"
    exit 1
fi
grep -q "collector: [1-9][0-9]* collections" "$tmp/stats" || { echo "FAIL: adsm's collector did not collect"; cat "$tmp/stats"; exit 1; }
cat "$tmp/adsm"
grep "collector:" "$tmp/stats"
echo "PASS: same output"
