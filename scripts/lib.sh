# Shared by the scripts: install what is missing, configure and build.
# Sourced, not run.

ADSM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ADSM_PACKAGES=(g++ cmake make pkg-config libgtest-dev libgmock-dev libunwind-dev libze-dev libfabric-dev libfabric-bin valgrind python3 sqlite3 gzip xz-utils zstd
    libjemalloc2 libtcmalloc-minimal4 libgc-dev guile-3.0 clang llvm-spirv-14)

# Installs the Debian packages that are not installed yet (none: no apt-get at all).
adsm_install_deps() {
    local missing=()
    for p in "${ADSM_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "adsm: installing ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The build the scripts share (build/): optimised, with line tables only
# (-g1): backtraces, fault attribution, sanitizer and valgrind reports keep
# their functions, files and lines, and a build compiles about a fifth
# faster than with full debug information (-g).
ADSM_RELEASE=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
# The sanitizer build's (build-asan/), line tables only as well.
ADSM_SANITIZED=(-DCMAKE_BUILD_TYPE=Debug -DADSM_SANITIZE=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1)

# adsm_build DIR [cmake options...]
adsm_build() {
    local dir=$1
    shift
    cmake -S "$ADSM_ROOT" -B "$dir" "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)"
}
