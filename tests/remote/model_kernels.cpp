// The model-based test's kernels for a remote device server (--kernels):
// registered under the names and signatures the test registers them with,
// so its launches on ADSM_DEVICE=remote find them.
#include "protocols/model_kernels.h"

namespace {
const adsm::kernel<transform_kernel> transform_registered("model.transform");
const adsm::kernel<checksum_kernel> checksum_registered("model.checksum");
}  // namespace

// The same kernels under C names: GPU code to the CUDA double, which finds
// them by symbol when the server hosts cuda on it (model_kernels.double).
extern "C" __attribute__((visibility("default"))) void adsm_test_model_transform(const adsmThreadIdx *t, void **args) {
    adsm::kernel<transform_kernel>::host_function(t, args);
}
extern "C" __attribute__((visibility("default"))) void adsm_test_model_checksum(const adsmThreadIdx *t, void **args) {
    adsm::kernel<checksum_kernel>::host_function(t, args);
}
