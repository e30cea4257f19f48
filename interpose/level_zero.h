// What the Level Zero files share: the family's library and API, and the
// way a wrapper calls the driver.  FORWARD takes the driver's function from
// GPU_REAL, so only a file that defines an ADSM_GPU_FAMILY can use it.
#pragma once

#include <level_zero/ze_api.h>

#include "interpose/gpu_symbols.h"
#include "support/log.h"

namespace {
constexpr const char *kLibrary = "libze_loader.so.1";
constexpr adsm::gpu_bridge::Api kApi = adsm::gpu_bridge::Api::level_zero;

inline ze_result_t no_loader(const char *fn) {
    adsm::log(adsm::LogLevel::error, "%s: the Level Zero loader (%s) is not loaded", fn, kLibrary);
    return ZE_RESULT_ERROR_UNINITIALIZED;
}
}  // namespace

#define FORWARD(name, ...)                                \
    ([&]() -> ze_result_t {                               \
        auto fn_ = GPU_REAL(name);                        \
        if (!fn_) return no_loader(#name);                \
        ::adsm::interpose::GpuForwarding fw_;             \
        return fn_(__VA_ARGS__);                          \
    }())

// Entry points newer than the Level Zero headers the build may have (Debian
// ships 1.4's), declared as the specification has them; a redeclaration
// where the headers have them too.
extern "C" ze_result_t ZE_APICALL zeCommandListHostSynchronize(ze_command_list_handle_t list, uint64_t timeout);

#define ZE_WRAPPER(name, ...) extern "C" __attribute__((visibility("default"))) ze_result_t ZE_APICALL name(__VA_ARGS__)
