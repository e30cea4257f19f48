// A module image (cubin, fatbin, PTX, SPIR-V) read from its file, for
// adsmLoadModule and for a device server's --modules.
#pragma once

#include <vector>

#include "support/status.h"

namespace adsm {

// The whole file and one NUL after it (PTX is text the driver reads up to
// its NUL); refused unless a regular file of at most 1 GiB.
Status read_module_file(const char *path, std::vector<char> *image);

}  // namespace adsm
