#!/usr/bin/env bash
# Runs one real, unmodified program from Debian's packages under the preload
# with a low malloc threshold (so most of its heap is shared memory), in
# every protocol, plainly and in chaos mode, and compares what it prints
# byte for byte with a run without the preload.  Given an allocator's
# library too, that allocator is preloaded with libadsm, after it or before
# it; ADSM_PROGRAM_PROTOCOLS picks a subset of the protocols.
#
#   run.sh PROGRAM LIBADSM WORKDIR [ALLOCATOR after|before]
#   PROGRAM: python3 sqlite3 gzip xz zstd sort copy bash
set -euo pipefail
program=$1 lib=$2 work=$3 allocator=${4:-} order=${5:-after}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
preload=$lib name=$program
if [ -n "$allocator" ]; then
    case "$order" in
        after) preload="$lib:$allocator" ;;
        before) preload="$allocator:$lib" ;;
        *) echo "order must be after or before, not $order" >&2; exit 2 ;;
    esac
    name="$program.$(basename "$allocator" | cut -d. -f1).$order"
fi

# Inputs, made once per work directory.
# Tests run in parallel: each input appears whole, under its name, at once.
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
" >"$big.$$"
    mv -f "$big.$$" "$big"
fi
lines="$work/lines.txt"
if [ ! -s "$lines" ]; then
    head -c 20000000 "$big" >"$lines.$$"
    mv -f "$lines.$$" "$lines"
fi

# The command for a program; it writes what it computes to stdout.
run() {
    case "$program" in
        # (With faulthandler, as pytest runs: its alternate signal stack is
        # malloc'd, so shared at this threshold.)
        python3) /usr/bin/python3 -X faulthandler "$here/workload.py" ;;
        bash) /usr/bin/bash "$here/workload.sh" ;;
        sqlite3) rm -f "$work/db.$1"; /usr/bin/sqlite3 "$work/db.$1" <"$here/workload.sql" ;;
        # (On the 20 MB input: gzip's buffers are the same size whatever
        # it reads, and 50 MB made it the longest of the programs.)
        gzip) /usr/bin/gzip -c -6 "$lines" | /usr/bin/gzip -dc | /usr/bin/md5sum ;;
        # Two compressing threads, which liblzma starts with every signal
        # blocked, on 3 MiB blocks of the input.
        xz) /usr/bin/head -c 12000000 "$big" | /usr/bin/xz -T2 -1 -c | /usr/bin/xz -dc | /usr/bin/md5sum ;;
        # Two threads again, and a crash handler installed with signal(),
        # which a program built with -std=c99 calls as __sysv_signal.
        zstd) /usr/bin/head -c 12000000 "$big" | /usr/bin/zstd -T2 -3 -c | /usr/bin/zstd -dc | /usr/bin/md5sum ;;
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

run "$name.ref" >"$work/$name.expected"
status=0
for protocol in ${ADSM_PROGRAM_PROTOCOLS:-batch lazy rolling delta}; do
    for chaos in 0 "${ADSM_PROGRAM_CHAOS:-1000}"; do
        label="$protocol$([ "$chaos" = 0 ] || echo "+chaos")"
        out="$work/$name.$label"
        rc=0
        LD_PRELOAD="$preload" ADSM_MALLOC_THRESHOLD=4K ADSM_PROTOCOL=$protocol ADSM_CHAOS_RELEASE_EVERY=$chaos \
            ADSM_CHAOS_SEED=$RANDOM run "$name.$label" >"$out" 2>"$out.err" || rc=$?
        if [ "$rc" != 0 ]; then
            echo "$name under $label: exit status $rc"; cat "$out.err"; status=1; continue
        fi
        if cmp -s "$work/$name.expected" "$out"; then
            echo "$name under $label: identical"
        else
            echo "$name under $label: DIFFERENT"; diff "$work/$name.expected" "$out" | head -5
            cat "$out.err"; status=1
        fi
    done
done
exit $status
