#!/usr/bin/env bash
# The preloaded library loads into every process a program starts: each
# library it needs is one more to map and relocate at every start (libm,
# needed once for three constants, cost 45 to 50 us of about 250).  It
# needs the C library, the loader and the C library's unwinder (libgcc_s:
# a copy of the unwinder inside met glibc's at a thread's cancellation and
# aborted the process); GPU drivers, libunwind and libfabric are opened
# when used.
set -euo pipefail
lib=$1
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
extra=$(echo "$needed" | grep -v -E '^(libc\.so\.6|libgcc_s\.so\.1|ld-linux[-a-z0-9_.]*\.so\.[0-9]+)$' || true)
if [ -n "$extra" ]; then
    echo "$lib needs more than the C library, its unwinder and the loader:" $extra >&2
    exit 1
fi
echo "needs only:" $needed
