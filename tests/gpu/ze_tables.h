/*
 * level_zero_app as level_zero_tables_app: every Level Zero call the program
 * makes goes through the loader's function tables, as a layer or a SYCL
 * runtime makes it, never through an exported entry point.  The program is
 * not linked with the loader (a call left out here does not link): it opens
 * it and asks for its tables, half of the getters looked up on the loader's
 * handle and half by RTLD_NEXT (the next definition after the program: the
 * preload's exported getter, when it is there).
 */
#pragma once

#include <level_zero/ze_ddi.h>

#include "app_common.h"

static ze_dditable_t ze_ddi;

#define zeInit ze_ddi.Global.pfnInit
#define zeDriverGet ze_ddi.Driver.pfnGet
#define zeDeviceGet ze_ddi.Device.pfnGet
#define zeContextCreate ze_ddi.Context.pfnCreate
#define zeContextDestroy ze_ddi.Context.pfnDestroy
#define zeMemAllocShared ze_ddi.Mem.pfnAllocShared
#define zeMemFree ze_ddi.Mem.pfnFree
#define zeMemGetAllocProperties ze_ddi.Mem.pfnGetAllocProperties
#define zeMemGetAddressRange ze_ddi.Mem.pfnGetAddressRange
#define zeModuleCreate ze_ddi.Module.pfnCreate
#define zeKernelCreate ze_ddi.Kernel.pfnCreate
#define zeKernelSetArgumentValue ze_ddi.Kernel.pfnSetArgumentValue
#define zeKernelSetGroupSize ze_ddi.Kernel.pfnSetGroupSize
#define zeCommandQueueCreate ze_ddi.CommandQueue.pfnCreate
#define zeCommandQueueExecuteCommandLists ze_ddi.CommandQueue.pfnExecuteCommandLists
#define zeCommandQueueSynchronize ze_ddi.CommandQueue.pfnSynchronize
#define zeCommandListCreate ze_ddi.CommandList.pfnCreate
#define zeCommandListCreateImmediate ze_ddi.CommandList.pfnCreateImmediate
#define zeCommandListClose ze_ddi.CommandList.pfnClose
#define zeCommandListAppendLaunchKernel ze_ddi.CommandList.pfnAppendLaunchKernel
#define zeCommandListAppendLaunchCooperativeKernel ze_ddi.CommandList.pfnAppendLaunchCooperativeKernel
#define zeCommandListAppendLaunchKernelIndirect ze_ddi.CommandList.pfnAppendLaunchKernelIndirect
#define zeCommandListAppendMemoryPrefetch ze_ddi.CommandList.pfnAppendMemoryPrefetch
#define zeCommandListAppendMemAdvise ze_ddi.CommandList.pfnAppendMemAdvise
#define zeCommandListAppendMemoryCopy ze_ddi.CommandList.pfnAppendMemoryCopy
#define zeCommandListAppendMemoryCopyRegion ze_ddi.CommandList.pfnAppendMemoryCopyRegion
#define zeCommandListAppendMemoryFill ze_ddi.CommandList.pfnAppendMemoryFill
#define zeMemAllocDevice ze_ddi.Mem.pfnAllocDevice
#define zeFenceCreate ze_ddi.Fence.pfnCreate
#define zeFenceHostSynchronize ze_ddi.Fence.pfnHostSynchronize
#define zeEventPoolCreate ze_ddi.EventPool.pfnCreate
#define zeEventCreate ze_ddi.Event.pfnCreate
#define zeEventHostReset ze_ddi.Event.pfnHostReset
#define zeEventHostSynchronize ze_ddi.Event.pfnHostSynchronize
#define zeEventQueryStatus ze_ddi.Event.pfnQueryStatus

static int in_loader(void *loader, const void *fn) {
    Dl_info where, ours;
    void *any = dlsym(loader, "fake_ze_calls");
    return fn && any && dladdr(fn, &where) && dladdr(any, &ours) && where.dli_fbase == ours.dli_fbase;
}

/* A refused request (no table, a version newer than the loader's) is
 * refused as the loader refuses it, and leaves the table as it was. */
#define LOAD(Name, table)                                                                                     \
    do {                                                                                                      \
        ze_pfn##Name##_t get = (ze_pfn##Name##_t)dlsym(n++ % 2 ? RTLD_NEXT : loader,    "ze" #Name);         \
        CHECK(get != NULL, "no ze" #Name);                                                                    \
        CHECK(get(ZE_API_VERSION_CURRENT, NULL) == ZE_RESULT_ERROR_INVALID_NULL_POINTER, "ze" #Name "(NULL)"); \
        memset(&ze_ddi.table, 0x5a, sizeof ze_ddi.table);                                                     \
        CHECK(get(ZE_MAKE_VERSION(1, 0xffff), &ze_ddi.table) == ZE_RESULT_ERROR_UNSUPPORTED_VERSION,          \
              "ze" #Name " of a newer version");                                                              \
        for (size_t i = 0; i < sizeof ze_ddi.table; ++i)                                                      \
            CHECK(((unsigned char *)&ze_ddi.table)[i] == 0x5a, "ze" #Name " wrote a table it refused");       \
        memset(&ze_ddi.table, 0, sizeof ze_ddi.table);                                                        \
        CHECK(get(ZE_API_VERSION_CURRENT, &ze_ddi.table) == ZE_RESULT_SUCCESS, "ze" #Name);                   \
    } while (0)

/* Routed, the entries the runtime routes lead to its wrappers; every other
 * entry is the loader's own. */
#define ENTRY_IS(entry, routed_entry)                                                                   \
    CHECK(in_loader(loader, (const void *)ze_ddi.entry) == !(routed && (routed_entry)), "ze_ddi." #entry \
          " should lead to %s", routed && (routed_entry) ? "the preload's wrapper" : "the loader")

static void load_tables(enum mode mode) {
    void *loader = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_GLOBAL);
    CHECK(loader != NULL, "%s", dlerror());
    unsigned n = 0;
    LOAD(GetGlobalProcAddrTable, Global);
    LOAD(GetDriverProcAddrTable, Driver);
    LOAD(GetDeviceProcAddrTable, Device);
    LOAD(GetContextProcAddrTable, Context);
    LOAD(GetMemProcAddrTable, Mem);
    LOAD(GetModuleProcAddrTable, Module);
    LOAD(GetKernelProcAddrTable, Kernel);
    LOAD(GetCommandQueueProcAddrTable, CommandQueue);
    LOAD(GetCommandListProcAddrTable, CommandList);
    LOAD(GetFenceProcAddrTable, Fence);
    LOAD(GetEventPoolProcAddrTable, EventPool);
    LOAD(GetEventProcAddrTable, Event);

    int routed = mode == ROUTED || mode == ERRORS;
    ENTRY_IS(Global.pfnInit, 0);
    ENTRY_IS(Context.pfnCreate, 1);
    ENTRY_IS(Context.pfnDestroy, 1);
    ENTRY_IS(Mem.pfnAllocShared, 1);
    ENTRY_IS(Mem.pfnAllocDevice, 0);
    ENTRY_IS(Mem.pfnFree, 1);
    ENTRY_IS(Module.pfnCreate, 0);
    ENTRY_IS(Kernel.pfnCreate, 1);
    ENTRY_IS(Kernel.pfnDestroy, 0);
    ENTRY_IS(Kernel.pfnSetArgumentValue, 1);
    ENTRY_IS(Kernel.pfnSetGroupSize, 1);
    ENTRY_IS(CommandQueue.pfnCreate, 0);
    ENTRY_IS(CommandQueue.pfnExecuteCommandLists, 1);
    ENTRY_IS(CommandQueue.pfnSynchronize, 1);
    ENTRY_IS(CommandList.pfnCreate, 1);
    ENTRY_IS(CommandList.pfnCreateImmediate, 1);
    ENTRY_IS(CommandList.pfnClose, 0);
    ENTRY_IS(CommandList.pfnReset, 1);
    ENTRY_IS(CommandList.pfnAppendLaunchKernel, 1);
    ENTRY_IS(CommandList.pfnAppendMemoryPrefetch, 1);
    ENTRY_IS(CommandList.pfnAppendMemAdvise, 1);
    ENTRY_IS(CommandList.pfnAppendMemoryCopy, 1);
    ENTRY_IS(CommandList.pfnAppendMemoryFill, 1);
    ENTRY_IS(Fence.pfnHostSynchronize, 1);
    ENTRY_IS(Fence.pfnQueryStatus, 1);
    ENTRY_IS(EventPool.pfnCreate, 0);
    ENTRY_IS(Event.pfnHostSignal, 0);
    ENTRY_IS(Event.pfnHostSynchronize, 1);
    ENTRY_IS(Event.pfnQueryStatus, 1);
}
