#include "os/invariant.h"

#include <cstdlib>

#include "os/safe_line.h"

namespace adsm {

void invariant_failed(const char *condition, const char *why, const char *file, int line) {
    os::SafeLine().str("adsm: broken invariant at ").str(file).str(":").dec(static_cast<uint64_t>(line)).str(": ")
        .str(why).str(" (").str(condition).str(")").write_stderr();
    abort();
}

}  // namespace adsm
