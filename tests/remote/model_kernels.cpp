// The model-based test's kernels for a remote device server (--kernels):
// registered under the names and signatures the test registers them with,
// so its launches on ADSM_DEVICE=remote find them.
#include "protocols/model_kernels.h"

namespace {
const adsm::kernel<transform_kernel> transform_registered("model.transform");
const adsm::kernel<checksum_kernel> checksum_registered("model.checksum");
}  // namespace
