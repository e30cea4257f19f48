// Chooses the back-end named by ADSM_DEVICE.  The names of back-ends that
// are designed but not built yet are reserved, so a user who asks for one
// gets a message that says so instead of a silent fallback.
#include <cstring>

#include "backend/cpu/cpu_device.h"
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
    if (d == "cuda")
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=cuda: the CUDA Driver API back-end is not part of this build yet; use sim or cpu");
    if (d == "levelzero")
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=levelzero: the Level Zero back-end is not part of this build yet; use sim or cpu");
    if (d == "remote")
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=remote: remote accelerators over libfabric are not part of this build yet; use sim or cpu");
    return fail(adsmErrorNoDevice, "ADSM_DEVICE=%s is not a known device: expected sim or cpu", d.c_str());
}

}  // namespace adsm
