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

namespace {

// The `ordinal`th device of back-end d (the GPU it opens: cuda,cuda is
// GPUs 0 and 1).
Status create_nth_device(const std::string &d, int ordinal, const Config &config, std::unique_ptr<Device> *out) {
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
        return cuda::CudaDevice::open(config, ordinal, out);
#else
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=cuda: this build has no CUDA back-end (cuda.h was not found when it was configured)");
#endif
    }
    if (d == "levelzero") return levelzero::LevelZeroDevice::open(config, ordinal, out);
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

}  // namespace

Status create_device(const std::string &d, const Config &config, std::unique_ptr<Device> *out) {
    return create_nth_device(d, 0, config, out);
}

Status create_devices(const Config &config, std::vector<std::unique_ptr<Device>> *out) {
    out->clear();
    const std::vector<std::string> &names = config.devices;
    if (names.size() > 1) {
        // A GPU driver owns the window's addresses: its GPUs share one
        // reservation (cuda,cuda or levelzero,levelzero), which other
        // devices' memory cannot join.
        for (const char *gpu : {"cuda", "levelzero"}) {
            size_t n = 0;
            for (const std::string &name : names) n += name == gpu;
            if (n && n != names.size())
                return fail(adsmErrorNotSupported,
                            "ADSM_DEVICE lists %s with other kinds of device: several GPUs share the driver's "
                            "addresses (%s,%s), other devices cannot join them",
                            gpu, gpu, gpu);
        }
    }
    for (size_t i = 0; i < names.size(); ++i) {
        int ordinal = 0;  // earlier devices of the same back-end
        for (size_t j = 0; j < i; ++j) ordinal += names[j] == names[i];
        std::unique_ptr<Device> d;
        if (Status s = create_nth_device(names[i], ordinal, config, &d); s != adsmSuccess) return s;
        out->push_back(std::move(d));
    }
    return adsmSuccess;
}

}  // namespace adsm
