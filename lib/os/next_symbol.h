// The definition of a libc symbol that comes after ours in lookup order:
// how interposers reach the real function.
#pragma once

namespace adsm::os {

void *next_symbol(const char *name);

// dlsym(handle, name) as the C library answers it, past the preload's own
// dlsym (which hands out GPU wrappers): for the runtime's back-ends, which
// need the driver's functions themselves.
void *library_symbol(void *handle, const char *name);

}  // namespace adsm::os
