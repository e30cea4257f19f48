// The variants a workload runs as: each names a kind of memory and a way of
// moving data (adsm's shared memory, explicit copies, managed memory), and
// makes the Gpu that implements it.  Both executables link adsm's variants
// (adsm, and explicit copies through adsm's device); adsm-workloads-cuda
// adds CUDA's own (pinned, pageable, managed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "workload.h"

namespace wl {

struct Options {
    std::string module_image;  // GPU code for the kernels (a fatbin), when a variant runs on a GPU
};

struct Variant {
    const char *name;
    const char *what;
    // Starts the device (untimed: every variant pays it once, before timing).
    std::unique_ptr<Gpu> (*make)(const Options &);
};

const std::vector<Variant> &all_variants();

struct RegisterVariant {
    RegisterVariant(const char *name, const char *what, std::unique_ptr<Gpu> (*make)(const Options &));
};

// k's host function registered with adsm (on first use; registering the
// same kernel again returns the same handle), for variants on sim and cpu.
adsmKernel_t host_kernel(const KernelDesc &k);

// A module of the CUDA driver double's format naming every workload kernel's
// host function, so that the tests run the CUDA variants without a GPU.
std::string driver_double_module();

}  // namespace wl
