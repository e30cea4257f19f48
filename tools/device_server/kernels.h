// The kernels adsm-device-server runs: registered by name by the libraries
// named with --kernels, whose constructors call adsmRegisterKernel, here
// answered by the server itself (the runtime is not started in a server).
#pragma once

#include <string>
#include <vector>

#include "api/kernel_registry.h"

namespace adsm::server {

KernelRegistry &kernels();
// Loads each library (its constructors register its kernels); false with
// the loader's message in *error.
bool load_kernel_libraries(const std::vector<std::string> &paths, std::string *error);

}  // namespace adsm::server
