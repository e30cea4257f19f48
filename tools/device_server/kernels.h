// The kernels adsm-device-server runs: registered by name by the libraries
// named with --kernels, whose constructors call adsmRegisterKernel, here
// answered by the server itself (the runtime is not started in a server).
#pragma once

#include <string>
#include <vector>

#include "api/kernel_registry.h"
#include "backend/remote/wire.h"

namespace adsm::server {

KernelRegistry &kernels();
// Loads each library (its constructors register its kernels); false with
// the loader's message in *error.
bool load_kernel_libraries(const std::vector<std::string> &paths, std::string *error);

// The registered (host-function) kernel a launch names, its arguments
// checked against the registration.
Status registered_kernel(const remote::LaunchBody &l, const KernelInfo **out);
// Whether a launch carries the argument bytes kernel k takes.
Status check_arguments(const KernelInfo &k, const remote::LaunchBody &l);

}  // namespace adsm::server
