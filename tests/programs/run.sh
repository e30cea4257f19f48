#!/usr/bin/env bash
# Runs one real, unmodified program from Debian's packages under the preload
# with a low malloc threshold (so most of its heap is shared memory), in
# every protocol, plainly and in chaos mode, and compares what it prints
# byte for byte with a run without the preload.
#
#   run.sh PROGRAM LIBADSM WORKDIR      PROGRAM: python3 sqlite3 gzip sort copy
set -euo pipefail
program=$1 lib=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"

# Inputs, made once per work directory.
big="$work/big.bin"
if [ ! -s "$big" ]; then
    # 50 MB of compressible text with some noise.
    python3 -c "
import random, sys
r = random.Random(7)
words = [w.encode() for w in 'adsm shared memory accelerator coherence protocol block page fault kernel'.split()]
out = sys.stdout.buffer
n = 0
while n < 50_000_000:
    line = b' '.join(r.choice(words) for _ in range(12)) + b' %d\n' % r.getrandbits(32)
    out.write(line)
    n += len(line)
" >"$big"
fi
lines="$work/lines.txt"
[ -s "$lines" ] || head -c 20000000 "$big" >"$lines"

# The command for a program; it writes what it computes to stdout.
run() {
    case "$program" in
        python3) /usr/bin/python3 "$here/workload.py" ;;
        sqlite3) rm -f "$work/db.$1"; /usr/bin/sqlite3 "$work/db.$1" <"$here/workload.sql" ;;
        gzip) /usr/bin/gzip -c -6 "$big" | /usr/bin/gzip -dc | /usr/bin/md5sum ;;
        sort) /usr/bin/sort -S 64M "$lines" | /usr/bin/md5sum ;;
        copy)
            /usr/bin/cat "$big" >"$work/cat.$1"
            /usr/bin/cp "$work/cat.$1" "$work/cp.$1"
            /usr/bin/dd if="$work/cp.$1" of="$work/dd.$1" bs=4M status=none
            /usr/bin/md5sum <"$work/dd.$1"
            rm -f "$work/cat.$1" "$work/cp.$1" "$work/dd.$1" ;;
        *) echo "unknown program $program" >&2; exit 2 ;;
    esac
}

run ref >"$work/$program.expected"
status=0
for protocol in batch lazy rolling delta; do
    for chaos in 0 "${ADSM_PROGRAM_CHAOS:-1000}"; do
        label="$protocol$([ "$chaos" = 0 ] || echo "+chaos")"
        if ! LD_PRELOAD="$lib" ADSM_MALLOC_THRESHOLD=4K ADSM_PROTOCOL=$protocol ADSM_CHAOS_RELEASE_EVERY=$chaos \
             ADSM_CHAOS_SEED=$RANDOM run "$label" >"$work/$program.$label" 2>"$work/$program.$label.err"; then
            echo "$program under $label: exit status $?"; cat "$work/$program.$label.err"; status=1; continue
        fi
        if cmp -s "$work/$program.expected" "$work/$program.$label"; then
            echo "$program under $label: identical"
        else
            echo "$program under $label: DIFFERENT"; diff "$work/$program.expected" "$work/$program.$label" | head -5
            cat "$work/$program.$label.err"; status=1
        fi
    done
done
exit $status
