// A kernel's parameter sizes read from its SPIR-V module, which Level Zero
// itself does not report (zeKernelGetProperties gives their number only):
// with them adsmModuleGetKernel checks and packs arguments on levelzero as
// it does on cuda.  Sizes follow OpenCL C's layout: a 3-vector takes the
// room of a 4-vector, a struct is laid out as C lays it out, a struct
// passed by value (a pointer decorated ByVal) is the struct's size.  A
// parameter whose size is not fixed by the module (a __local buffer, an
// image, a sampler) is kUnknownParamSize: the program states it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace adsm::levelzero {

constexpr uint32_t kSpirvMagic = 0x07230203;

// True and the sizes, when `image` is a well-formed SPIR-V module with a
// kernel entry point `name`; false otherwise (not SPIR-V, no such kernel,
// or a module this reader does not follow).
bool spirv_kernel_params(const void *image, size_t size, const char *name, std::vector<uint32_t> *sizes);

}  // namespace adsm::levelzero
