#!/usr/bin/env bash
# The program shown in README.md is the one the tests build and run.
set -euo pipefail
src=$1
shown=$(awk '/^```c$/{grab=1; next} /^```$/{if (grab) exit} grab' "$src/README.md")
if ! diff <(printf '%s\n' "$shown") "$src/tests/examples/readme_example.c"; then
    echo "README.md's program differs from tests/examples/readme_example.c" >&2
    exit 1
fi
echo "README program matches"

# ...and so is the collector's example, the C program after its marker.
shown=$(awk '/^<!-- tests\/examples\/gc_tree.c -->$/{armed=1; next} armed && /^```c$/{grab=1; next} /^```$/{if (grab) exit} grab' "$src/README.md")
if ! diff <(printf '%s\n' "$shown") "$src/tests/examples/gc_tree.c"; then
    echo "README.md's collector example differs from tests/examples/gc_tree.c" >&2
    exit 1
fi
echo "README collector example matches"

# ...and the kernel allocation example.
shown=$(awk '/^<!-- tests\/examples\/gc_kernel_list.c -->$/{armed=1; next} armed && /^```c$/{grab=1; next} /^```$/{if (grab) exit} grab' "$src/README.md")
if ! diff <(printf '%s\n' "$shown") "$src/tests/examples/gc_kernel_list.c"; then
    echo "README.md's kernel allocation example differs from tests/examples/gc_kernel_list.c" >&2
    exit 1
fi
echo "README kernel allocation example matches"

# Every setting the runtime reads is documented there.
for var in $(grep -o '{"ADSM_[A-Z_]*"' "$src/lib/support/config.cpp" | tr -d '{"'); do
    grep -q "\`$var\`" "$src/README.md" || { echo "README.md does not document $var" >&2; exit 1; }
done
echo "README documents every setting"
