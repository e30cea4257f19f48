// Chooses the back-end named by ADSM_DEVICE.  The names of back-ends that
// are designed but not built yet are reserved, so a user who asks for one
// gets a message that says so instead of a silent fallback.
#include <cstring>

#include "backend/cpu/cpu_device.h"
#ifdef ADSM_HAVE_CUDA
#include "backend/cuda/cuda_device.h"
#endif
#include "backend/device.h"
#include "backend/sim/sim_device.h"

namespace adsm {

Status create_device(const Config &config, std::unique_ptr<Device> *out) {
    const std::string &d = config.device;
    if (d == "sim") {
        *out = std::make_unique<SimDevice>(config);
        return adsmSuccess;
    }
    if (d == "cpu") {
        *out = std::make_unique<CpuDevice>(config);
        return adsmSuccess;
    }
    if (d == "cuda") {
#ifdef ADSM_HAVE_CUDA
        return cuda::CudaDevice::open(config, out);
#else
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=cuda: this build has no CUDA back-end (cuda.h was not found when it was configured)");
#endif
    }
    if (d == "levelzero")
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=levelzero: the Level Zero back-end is not part of this build yet; use sim or cpu");
    if (d == "remote")
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=remote: remote accelerators over libfabric are not part of this build yet; use sim or cpu");
    return fail(adsmErrorNoDevice, "ADSM_DEVICE=%s is not a known device: expected sim, cpu or cuda", d.c_str());
}

}  // namespace adsm
