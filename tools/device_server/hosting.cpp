#include "device_server/hosting.h"

#include "device_server/sim_hosting.h"
#include "device_server/worker_hosting.h"

namespace adsm::server {

std::unique_ptr<Hosting> make_hosting(const Options &options) {
    if (options.device == "sim") return std::make_unique<SimHosting>(options);
    return std::make_unique<WorkerHosting>(options);
}

Status nothing_staged() {
    return fail(adsmErrorInvalidValue, "this server's device memory is the client's to reach directly: nothing is staged");
}

Status no_gpu_code(const char *device) {
    return fail(adsmErrorNotSupported,
                "the device server hosts %s devices, which run the kernels its --kernels libraries registered, by name; "
                "GPU code from a module needs a server with --device cuda or levelzero",
                device);
}

}  // namespace adsm::server
