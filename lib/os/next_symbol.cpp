#include "os/next_symbol.h"

#include <dlfcn.h>

namespace adsm::os {

void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

}  // namespace adsm::os
