#!/usr/bin/env bash
# Installs adsm into a scratch prefix and builds the README's program
# against it twice, as a user would: through find_package(adsm) and through
# pkg-config.  Both binaries must run and print the program's result, and
# the installed launcher must find the installed library.
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(find "$work/prefix" -name libadsm.so -printf '%h\n' | head -1)

cmake -S "$src/tests/install/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DREADME_EXAMPLE="$src/tests/examples/readme_example.c" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$src/tests/examples/readme_example.c" -o "$work/pc-consumer" $(pkg-config --cflags --libs adsm)
LD_LIBRARY_PATH="$libdir" "$work/pc-consumer"

# The installed launcher finds the installed library by itself.
"$work/prefix/bin/adsm-run" --stats -- "$work/pc-consumer" >"$work/out.txt" 2>"$work/stats.txt"
grep -q "scaled 1048576 floats" "$work/out.txt" || { echo "the program under the installed adsm-run failed" >&2; exit 1; }
grep -q "kernels launched" "$work/stats.txt" || { echo "the installed adsm-run printed no statistics" >&2; exit 1; }
echo "installed adsm-run works"
