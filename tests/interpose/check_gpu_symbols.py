#!/usr/bin/env python3
"""Every GPU API function the interposers wrap is exported by libadsm.so.

A wrapper is found two ways: through cuGetProcAddress or a Level Zero
function table, which hand out its address, and by the dynamic linker,
which finds it only if lib/adsm.map exports its name.  A wrapper missing
there still works for a statically linked CUDA runtime, so only a program
that calls the driver by name shows the gap: its calls reach the driver
unrouted.  This reads the symbol lists (`X(name)` in each *_SYMBOLS or
*_TABLES macro of interpose/) and checks each name against what the library
exports.

  check_gpu_symbols.py LIBADSM SOURCE...
"""
import re
import subprocess
import sys


def wrapped(paths):
    names = set()
    for path in paths:
        text = open(path).read()
        for block in re.finditer(r"#define \w+_(?:SYMBOLS|TABLES)\(X\)((?:[^\n]*\\\n)*[^\n]*)", text):
            names.update(re.findall(r"\bX\((\w+)\)", block.group(1)))
    return names


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    names = wrapped(sys.argv[2:])
    if len(names) < 50:
        print("found only %d wrapped names: the symbol lists were not read" % len(names))
        return 1
    missing = sorted(names - exported(sys.argv[1]))
    for n in missing:
        print("not exported (add it to lib/adsm.map): %s" % n)
    if missing:
        return 1
    print("every one of the %d wrapped GPU functions is exported" % len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
