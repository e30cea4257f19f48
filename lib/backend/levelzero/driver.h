// The Level Zero loader as one table of entry points, loaded from
// libze_loader.so.1 at run time: the library loads on machines without
// it, and the back-end reaches the loader's own functions, never the
// preload's wrappers of them (interpose/level_zero.cpp).
#pragma once

#include <level_zero/ze_api.h>

#include "backend/gpu/device_loss.h"
#include "support/status.h"

namespace adsm::levelzero {

#define ADSM_ZE_ENTRY_POINTS(X)                                       \
    X(zeInit)                                                         \
    X(zeDriverGet)                                                    \
    X(zeDeviceGet)                                                    \
    X(zeDeviceGetProperties)                                          \
    X(zeDeviceGetMemoryProperties)                                    \
    X(zeDeviceGetCommandQueueGroupProperties)                         \
    X(zeDeviceCanAccessPeer)                                          \
    X(zeContextCreate)                                                \
    X(zeContextDestroy)                                               \
    X(zeVirtualMemQueryPageSize)                                      \
    X(zeVirtualMemReserve)                                            \
    X(zeVirtualMemFree)                                               \
    X(zePhysicalMemCreate)                                            \
    X(zePhysicalMemDestroy)                                           \
    X(zeVirtualMemMap)                                                \
    X(zeVirtualMemUnmap)                                              \
    X(zeMemAllocHost)                                                 \
    X(zeMemFree)                                                      \
    X(zeCommandListCreateImmediate)                                   \
    X(zeCommandListDestroy)                                           \
    X(zeCommandListAppendMemoryCopy)                                  \
    X(zeCommandListAppendMemoryFill)                                  \
    X(zeCommandListAppendBarrier)                                     \
    X(zeCommandListAppendLaunchKernel)                                \
    X(zeEventPoolCreate)                                              \
    X(zeEventPoolDestroy)                                             \
    X(zeEventCreate)                                                  \
    X(zeEventDestroy)                                                 \
    X(zeEventHostSynchronize)                                         \
    X(zeEventHostReset)                                               \
    X(zeEventHostSignal)                                              \
    X(zeModuleCreate)                                                 \
    X(zeModuleBuildLogGetString)                                      \
    X(zeModuleBuildLogDestroy)                                        \
    X(zeKernelCreate)                                                 \
    X(zeKernelGetProperties)                                          \
    X(zeKernelSetGroupSize)                                           \
    X(zeKernelSetArgumentValue)

struct Driver {
#define ADSM_ZE_MEMBER(fn) decltype(&::fn) fn = nullptr;
    ADSM_ZE_ENTRY_POINTS(ADSM_ZE_MEMBER)
#undef ADSM_ZE_MEMBER

    // "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"; static text.
    static const char *describe(ze_result_t r);
};

// Loads libze_loader.so.1 once and initialises it (zeInit for GPUs); the
// same table for every caller, or the same failure.
Status load_driver(const Driver **out);

// Records a failure of `what` that the driver answered with r.
Status ze_fail(Status code, ze_result_t r, const char *what);

// Errors after which the device can do nothing more.
bool device_is_gone(ze_result_t r);
// A failure of `what`: one that ends the device loses it through `loss`
// (adsmErrorLaunchFailure once, adsmErrorDeviceLost after); another is `usual`.
Status ze_driver_error(gpu::DeviceLoss *loss, ze_result_t r, const char *what, Status usual);

// An asynchronous immediate command list on queue group `ordinal`.
ze_result_t make_immediate_list(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal,
                                ze_command_list_handle_t *out);
// `count` host-visible events in a pool of their own; on failure nothing
// is left made.
ze_result_t make_host_events(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t count,
                             ze_event_pool_handle_t *pool, ze_event_handle_t *events);
// Destroys what make_host_events made (nothing if it failed), and nulls it.
void destroy_host_events(const Driver *d, uint32_t count, ze_event_pool_handle_t *pool, ze_event_handle_t *events);

}  // namespace adsm::levelzero
