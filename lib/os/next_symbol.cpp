#include "os/next_symbol.h"

#include <dlfcn.h>

namespace adsm::os {

void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

void *library_symbol(void *handle, const char *name) {
    using Dlsym = void *(*)(void *, const char *);
    static const Dlsym libc_dlsym = [] {
        void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        return reinterpret_cast<Dlsym>(p);
    }();
    return libc_dlsym ? libc_dlsym(handle, name) : nullptr;
}

}  // namespace adsm::os
