#!/usr/bin/env bash
# Installs adsm into a scratch prefix and builds the README's program
# against it twice, as a user would: through find_package(adsm) and through
# pkg-config.  Both binaries must run and print the program's result.
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
