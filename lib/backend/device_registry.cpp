// Chooses the back-end named by ADSM_DEVICE.
#include <cstring>

#include "backend/cpu/cpu_device.h"
#ifdef ADSM_HAVE_CUDA
#include "backend/cuda/cuda_device.h"
#endif
#include "backend/device.h"
#include "backend/levelzero/levelzero_device.h"
#ifdef ADSM_HAVE_LIBFABRIC
#include "backend/remote/remote_device.h"
#endif
#include "backend/sim/sim_device.h"

namespace adsm {

Status create_device(const std::string &d, const Config &config, std::unique_ptr<Device> *out) {
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
    if (d == "levelzero") return levelzero::LevelZeroDevice::open(config, out);
    if (d == "remote") {
#ifdef ADSM_HAVE_LIBFABRIC
        *out = std::make_unique<RemoteDevice>(config);
        return adsmSuccess;
#else
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=remote: this build has no remote devices (libfabric-dev was not found when it was "
                    "configured)");
#endif
    }
    return fail(adsmErrorNoDevice, "ADSM_DEVICE=%s is not a known device: expected sim, cpu, cuda, levelzero or remote", d.c_str());
}

Status create_devices(const Config &config, std::vector<std::unique_ptr<Device>> *out) {
    out->clear();
    const std::vector<std::string> &names = config.devices;
    if (names.size() > 1) {
        // One driver per GPU back-end owns the window's addresses: several
        // of its devices would share one reservation, which is not built yet.
        for (const std::string &n : names)
            if (n == "cuda" || n == "levelzero")
                return fail(adsmErrorNotSupported,
                            "ADSM_DEVICE lists %zu devices with %s among them: the %s back-end serves one device "
                            "per process for now (list sim or cpu devices, or use %s alone)",
                            names.size(), n.c_str(), n.c_str(), n.c_str());
    }
    for (const std::string &n : names) {
        std::unique_ptr<Device> d;
        if (Status s = create_device(n, config, &d); s != adsmSuccess) return s;
        out->push_back(std::move(d));
    }
    return adsmSuccess;
}

}  // namespace adsm
