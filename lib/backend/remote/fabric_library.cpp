#include "backend/remote/fabric_library.h"

#include <dlfcn.h>
#include <signal.h>

#include "backend/gpu/load_once.h"
#include "os/real_libc.h"

// (CMake defines these from the library it found; the defaults are the
// soname libfabric has had since 1.0 and each function's default version.)
#ifndef ADSM_LIBFABRIC_SONAME
#define ADSM_LIBFABRIC_SONAME "libfabric.so.1"
#endif
#ifndef ADSM_FI_GETINFO_VERSION
#define ADSM_FI_GETINFO_VERSION ""
#endif
#ifndef ADSM_FI_FREEINFO_VERSION
#define ADSM_FI_FREEINFO_VERSION ""
#endif
#ifndef ADSM_FI_DUPINFO_VERSION
#define ADSM_FI_DUPINFO_VERSION ""
#endif
#ifndef ADSM_FI_FABRIC_VERSION
#define ADSM_FI_FABRIC_VERSION ""
#endif
#ifndef ADSM_FI_STRERROR_VERSION
#define ADSM_FI_STRERROR_VERSION ""
#endif

namespace adsm::remote {
namespace {

gpu::LoadOnce<FabricLibrary> g_fabric;

// The symbol at `version` (the build's), or its default where the build
// could not read versions off the library ("").
void *resolve(void *lib, const char *name, const char *version) {
    return *version ? dlvsym(lib, name, version) : os::real_dlsym(lib, name);
}

// The program's signal handling is the program's: a library loaded for the
// runtime's own use must not change it.  libinfinipath, which libfabric
// loads for its PSM provider, takes SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV
// and SIGTERM in its constructor (an abort then exits instead of dying by
// the signal).  Through ::sigaction, so that under the preload the record of
// the program's own handlers (interpose/signals) is put back too.
class SignalHandlingKept {
public:
    SignalHandlingKept() {
        for (int s = 1; s < NSIG; ++s) kept_[s] = ::sigaction(s, nullptr, &old_[s]) == 0;
    }
    ~SignalHandlingKept() {
        for (int s = 1; s < NSIG; ++s) {
            struct sigaction now {};
            if (kept_[s] && ::sigaction(s, nullptr, &now) == 0 && !same(now, old_[s])) ::sigaction(s, &old_[s], nullptr);
        }
    }
    SignalHandlingKept(const SignalHandlingKept &) = delete;
    SignalHandlingKept &operator=(const SignalHandlingKept &) = delete;

private:
    static bool same(const struct sigaction &a, const struct sigaction &b) {
        return a.sa_handler == b.sa_handler && a.sa_flags == b.sa_flags;
    }
    struct sigaction old_[NSIG] = {};
    bool kept_[NSIG] = {};
};

Status load(FabricLibrary *f) {
    SignalHandlingKept kept;
    void *lib = dlopen(ADSM_LIBFABRIC_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return fail(adsmErrorNoDevice, "remote devices need libfabric, and %s cannot be loaded (%s)",
                    ADSM_LIBFABRIC_SONAME, dlerror());
#define ADSM_FABRIC_RESOLVE(member, name, version)                                                             \
    f->member = reinterpret_cast<decltype(f->member)>(resolve(lib, name, version));                            \
    if (!f->member)                                                                                            \
        return fail(adsmErrorNoDevice, "%s lacks %s%s%s (built against another libfabric?)", ADSM_LIBFABRIC_SONAME, \
                    name, *version ? "@" : "", version);
    ADSM_FABRIC_RESOLVE(getinfo, "fi_getinfo", ADSM_FI_GETINFO_VERSION)
    ADSM_FABRIC_RESOLVE(freeinfo, "fi_freeinfo", ADSM_FI_FREEINFO_VERSION)
    ADSM_FABRIC_RESOLVE(dupinfo, "fi_dupinfo", ADSM_FI_DUPINFO_VERSION)
    ADSM_FABRIC_RESOLVE(fabric, "fi_fabric", ADSM_FI_FABRIC_VERSION)
    ADSM_FABRIC_RESOLVE(strerror, "fi_strerror", ADSM_FI_STRERROR_VERSION)
#undef ADSM_FABRIC_RESOLVE
    return adsmSuccess;
}

}  // namespace

Status load_fabric(const FabricLibrary **out) { return g_fabric.get(&load, out); }

const FabricLibrary &fabric_library() { return g_fabric.table(); }

}  // namespace adsm::remote
