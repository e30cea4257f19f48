// The API and interposition suites' kernels for a remote device server
// (--kernels): each registered under every name the tests launch it by, so
// those suites run unchanged on ADSM_DEVICE=remote (api.remote.*,
// interpose.remote.*).
#include "api/test_kernels.h"
#include "interpose/helpers.h"

namespace {

using namespace adsm_test;

// One object per (kernel, name): __COUNTER__ tells apart the repeats of a kernel.
#define ADSM_CAT2(a, b) a##b
#define ADSM_CAT(a, b) ADSM_CAT2(a, b)
#define ADSM_REGISTER(fn, name) const adsm::kernel<fn> ADSM_CAT(registered_, __COUNTER__){name};
ADSM_API_TEST_KERNELS(ADSM_REGISTER)
ADSM_REGISTER(interpose_test::device_write, "interpose.device_write")
ADSM_REGISTER(interpose_test::device_add, "interpose.device_add")
ADSM_REGISTER(interpose_test::device_pollfds, "interpose.device_pollfds")

struct CKernels {
    CKernels() {
        adsmKernel_t k;
#define ADSM_REGISTER_C(fn, name) adsmRegisterKernel(name, fn, 2, kCKernelSizes, &k);
        ADSM_API_TEST_C_KERNELS(ADSM_REGISTER_C)
#undef ADSM_REGISTER_C
    }
} c_kernels;

}  // namespace
