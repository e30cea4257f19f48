// The Level Zero loader's function tables.  Layers, SYCL runtimes and some
// programs ask the loader for its tables (zeGet*ProcAddrTable) and call the
// driver through them, never through the exported names the preload
// replaces.  So each table that holds a function the preload wraps comes
// back, routed, with the wrapper in that entry, and the entry's original
// becomes the wrapper's driver function (adopt_table_entry), as the loader
// keeps each driver's tables and calls through them.  Every other entry
// stays the driver's.
//
// Only the caller's table is written, and only after the driver accepted
// the request: a refused one is left as the caller passed it.
#include <level_zero/ze_ddi.h>

#include "interpose/gpu_symbols.h"
#include "interpose/level_zero.h"

#define LEVEL_ZERO_TABLES(X)          \
    X(zeGetContextProcAddrTable)      \
    X(zeGetMemProcAddrTable)          \
    X(zeGetKernelProcAddrTable)       \
    X(zeGetCommandListProcAddrTable)  \
    X(zeGetCommandQueueProcAddrTable) \
    X(zeGetFenceProcAddrTable)        \
    X(zeGetEventProcAddrTable)

ADSM_GPU_FAMILY(level_zero_table_family, LEVEL_ZERO_TABLES)

namespace {

// The wrapper's type must be the entry's: ROUTE does not compile otherwise.
template <class Fn>
void route(Fn *entry, Fn wrapper, const char *name) {
    adsm::interpose::GpuSymbol *s = adsm::interpose::find_gpu_symbol(name);
    if (!s || !*entry || *entry == wrapper) return;
    adsm::interpose::adopt_table_entry(*s, reinterpret_cast<void *>(*entry));
    *entry = wrapper;
}
#define ROUTE(table, field, name) route(&(table)->field, &::name, #name)

// Every routed entry is a 1.0 entry, so it lies inside the table of any
// version with the layout this was built against (same major version); a
// table of another major version may be laid out otherwise and is left
// alone.
bool known_layout(ze_api_version_t version) {
    return ZE_MAJOR_VERSION(version) == ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT);
}

void route_table(ze_context_dditable_t *t) {
    ROUTE(t, pfnCreate, zeContextCreate);
    ROUTE(t, pfnDestroy, zeContextDestroy);
}

void route_table(ze_mem_dditable_t *t) {
    ROUTE(t, pfnAllocShared, zeMemAllocShared);
    ROUTE(t, pfnFree, zeMemFree);
    ROUTE(t, pfnGetAllocProperties, zeMemGetAllocProperties);
    ROUTE(t, pfnGetAddressRange, zeMemGetAddressRange);
}

void route_table(ze_kernel_dditable_t *t) {
    ROUTE(t, pfnCreate, zeKernelCreate);
    ROUTE(t, pfnSetArgumentValue, zeKernelSetArgumentValue);
    ROUTE(t, pfnSetGroupSize, zeKernelSetGroupSize);
}

void route_table(ze_command_list_dditable_t *t) {
    ROUTE(t, pfnCreate, zeCommandListCreate);
    ROUTE(t, pfnCreateImmediate, zeCommandListCreateImmediate);
    ROUTE(t, pfnReset, zeCommandListReset);
    ROUTE(t, pfnAppendLaunchKernel, zeCommandListAppendLaunchKernel);
    ROUTE(t, pfnAppendLaunchCooperativeKernel, zeCommandListAppendLaunchCooperativeKernel);
    ROUTE(t, pfnAppendLaunchKernelIndirect, zeCommandListAppendLaunchKernelIndirect);
    ROUTE(t, pfnAppendLaunchMultipleKernelsIndirect, zeCommandListAppendLaunchMultipleKernelsIndirect);
    ROUTE(t, pfnAppendMemoryPrefetch, zeCommandListAppendMemoryPrefetch);
    ROUTE(t, pfnAppendMemAdvise, zeCommandListAppendMemAdvise);
    ROUTE(t, pfnAppendMemoryCopy, zeCommandListAppendMemoryCopy);
    ROUTE(t, pfnAppendMemoryCopyRegion, zeCommandListAppendMemoryCopyRegion);
    ROUTE(t, pfnAppendMemoryFill, zeCommandListAppendMemoryFill);
}

void route_table(ze_command_queue_dditable_t *t) {
    ROUTE(t, pfnExecuteCommandLists, zeCommandQueueExecuteCommandLists);
    ROUTE(t, pfnSynchronize, zeCommandQueueSynchronize);
}

void route_table(ze_fence_dditable_t *t) {
    ROUTE(t, pfnHostSynchronize, zeFenceHostSynchronize);
    ROUTE(t, pfnQueryStatus, zeFenceQueryStatus);
}

void route_table(ze_event_dditable_t *t) {
    ROUTE(t, pfnHostSynchronize, zeEventHostSynchronize);
    ROUTE(t, pfnQueryStatus, zeEventQueryStatus);
}

}  // namespace

#define TABLE_WRAPPER(getter, Table)                                                                    \
    ZE_WRAPPER(getter, ze_api_version_t version, Table *table) {                                        \
        ze_result_t r = FORWARD(getter, version, table);                                                \
        if (r == ZE_RESULT_SUCCESS && table && adsm::gpu_bridge::routed(kApi) && known_layout(version)) \
            route_table(table);                                                                         \
        return r;                                                                                       \
    }

TABLE_WRAPPER(zeGetContextProcAddrTable, ze_context_dditable_t)
TABLE_WRAPPER(zeGetMemProcAddrTable, ze_mem_dditable_t)
TABLE_WRAPPER(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
TABLE_WRAPPER(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)
TABLE_WRAPPER(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
TABLE_WRAPPER(zeGetFenceProcAddrTable, ze_fence_dditable_t)
TABLE_WRAPPER(zeGetEventProcAddrTable, ze_event_dditable_t)
