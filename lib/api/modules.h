// GPU modules behind adsmLoadModule: the device loads the image, the
// kernel registry hands out handles to its functions, so a module kernel
// launches through adsmCall like any other.
#pragma once

#include <cstddef>

#include "adsm.h"
#include "api/runtime.h"

namespace adsm {

Status load_module_data(Runtime &rt, const void *image, size_t size, adsmModule_t *out);
Status load_module_file(Runtime &rt, const char *path, adsmModule_t *out);
// `declared` (count sizes, or null) are the parameter sizes the program
// states: they must agree with what the driver reports, and stand in for
// sizes it does not report.
Status module_kernel(Runtime &rt, adsmModule_t module, const char *name, const size_t *declared, unsigned count,
                     adsmKernel_t *out);

}  // namespace adsm
