// The definition of a libc symbol that comes after ours in lookup order:
// how interposers reach the real function.
#pragma once

namespace adsm::os {

void *next_symbol(const char *name);

}  // namespace adsm::os
