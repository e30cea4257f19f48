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
    if (adsm::bdwgc::check_gc_imports(nullptr)) return;
    fflush(nullptr);
    _exit(1);
}

}  // namespace
