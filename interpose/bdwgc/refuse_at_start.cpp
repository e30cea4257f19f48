// Before the program's main: a program that imports a GC_ symbol the
// runtime lacks would run two collectors at once (foreign_imports.h), so
// it does not run at all.  Nothing of the program has run yet: there is
// nothing to lose by stopping here.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "interpose/bdwgc/foreign_imports.h"
#include "os/real_libc.h"

namespace {

__attribute__((constructor)) void refuse_mixed_collectors() {
    if (adsm::os::env("ADSM_SIM_SERVER")) return;  // the runtime's own device process
    char program[512];
    ssize_t n = readlink("/proc/self/exe", program, sizeof program - 1);
    program[n > 0 ? n : 0] = '\0';
    if (adsm::bdwgc::check_gc_imports(n > 0 ? program : "this program")) return;
    fflush(nullptr);
    _exit(1);
}

}  // namespace
