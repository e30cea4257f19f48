/*
 * An ordinary Level Zero program: shared allocations written by the CPU,
 * a kernel launched on an immediate command list and waited for with an
 * event, another recorded in a regular list executed twice on a queue with
 * a fence, copies and fills between shared and host memory.  In `errors` mode it makes the mistakes a program makes and
 * checks the codes.  Built as level_zero_tables_app, it makes every call
 * through the loader's function tables instead (ze_tables.h).  With
 * APP_ZE_DEVICE=1 it works on the driver's second GPU.
 */
#include <level_zero/ze_api.h>

#include "app_common.h"
#include "doubles/ze_newer.h"
#ifdef ZE_THROUGH_TABLES
#include "ze_tables.h"
#endif

#define N (1u << 16)

#define ZE(call)                                                            \
    do {                                                                    \
        ze_result_t r_ = (call);                                            \
        CHECK(r_ == ZE_RESULT_SUCCESS, "%s returned 0x%x", #call, (unsigned)r_); \
    } while (0)

static float sum3(unsigned i) { return 3.0f * i; }
static float times6(unsigned i) { return 6.0f * i; }
static float times12(unsigned i) { return 12.0f * i; }
static float plus1_times2(unsigned i) { return (12.0f * i + 1) * 2; }

static ze_context_handle_t ctx;
static ze_device_handle_t dev;
static ze_module_handle_t module;
static const ze_device_mem_alloc_desc_t device_desc = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
static const ze_host_mem_alloc_desc_t host_desc = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};

static float *shared_floats(void) {
    void *p = NULL;
    ZE(zeMemAllocShared(ctx, &device_desc, &host_desc, N * 4, 64, dev, &p));
    return (float *)p;
}

static ze_kernel_handle_t kernel(const char *name) {
    ze_kernel_desc_t desc = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, name};
    ze_kernel_handle_t k;
    ZE(zeKernelCreate(module, &desc, &k));
    return k;
}

static void set_vec_add(ze_kernel_handle_t k, float *x, float *y, float *out) {
    unsigned n = N;
    ZE(zeKernelSetGroupSize(k, 256, 1, 1));
    ZE(zeKernelSetArgumentValue(k, 0, sizeof x, &x));
    ZE(zeKernelSetArgumentValue(k, 1, sizeof y, &y));
    ZE(zeKernelSetArgumentValue(k, 2, sizeof out, &out));
    ZE(zeKernelSetArgumentValue(k, 3, sizeof n, &n));
}

static ze_command_list_handle_t immediate_list(void) {
    ze_command_queue_desc_t desc = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                    ZE_COMMAND_QUEUE_MODE_DEFAULT, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t list;
    ZE(zeCommandListCreateImmediate(ctx, dev, &desc, &list));
    return list;
}

static ze_command_queue_handle_t queue(void) {
    ze_command_queue_desc_t desc = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                    ZE_COMMAND_QUEUE_MODE_DEFAULT, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t q;
    ZE(zeCommandQueueCreate(ctx, dev, &desc, &q));
    return q;
}

static void run_errors(void) {
    void *p;
    CHECK(zeMemAllocShared(ctx, &device_desc, &host_desc, 0, 0, dev, &p) == ZE_RESULT_ERROR_UNSUPPORTED_SIZE, "size 0");
    CHECK(zeMemAllocShared(ctx, &device_desc, &host_desc, 64, 3, dev, &p) == ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT,
          "alignment 3");
    CHECK(zeMemAllocShared(ctx, &device_desc, &host_desc, 64, 1 << 16, dev, &p) == ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT,
          "alignment beyond a page");
    CHECK(zeMemAllocShared(ctx, NULL, &host_desc, 64, 0, dev, &p) == ZE_RESULT_ERROR_INVALID_NULL_POINTER, "no desc");
    ZE(zeMemAllocShared(ctx, &device_desc, &host_desc, 4096, 0, dev, &p));
    check_memory(ERRORS, p, 4096);
    ZE(zeMemFree(ctx, p));
    CHECK(zeMemFree(ctx, p) == ZE_RESULT_ERROR_INVALID_ARGUMENT, "double free");

    ze_command_list_handle_t list = immediate_list();
    ze_group_count_t one = {1, 1, 1};
    CHECK(zeCommandListAppendLaunchKernel(list, kernel("unregistered"), &one, NULL, 0, NULL) ==
              ZE_RESULT_ERROR_INVALID_KERNEL_NAME,
          "a kernel with no implementation on the runtime's accelerator");
    float *x = shared_floats(), *y = shared_floats(), *out = shared_floats();
    ze_kernel_handle_t add = kernel("vec_add");
    set_vec_add(add, x, y, out);
    unsigned long wide = N;
    ZE(zeKernelSetArgumentValue(add, 3, sizeof wide, &wide));
    CHECK(zeCommandListAppendLaunchKernel(list, add, &one, NULL, 0, NULL) == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE,
          "an argument of the wrong size");

    /* A kernel that faults: reported at the synchronisation; the program lives on. */
    ze_command_queue_handle_t q = queue();
    ZE(zeCommandListAppendLaunchKernel(list, kernel("crash"), &one, NULL, 0, NULL));
    CHECK(zeCommandQueueSynchronize(q, UINT64_MAX) == ZE_RESULT_ERROR_UNKNOWN, "the fault is reported");
    CHECK(zeCommandListAppendMemoryPrefetch(list, x + 4, N * 4) == ZE_RESULT_ERROR_INVALID_ARGUMENT,
          "a prefetch past the allocation");
    CHECK(zeCommandListAppendMemAdvise(list, dev, x, N * 4, (ze_memory_advice_t)42) ==
              ZE_RESULT_ERROR_INVALID_ENUMERATION,
          "advice that does not exist");
    ZE(zeCommandQueueSynchronize(q, UINT64_MAX));

    for (unsigned i = 0; i < N; ++i) x[i] = i, y[i] = 2.0f * i;
    set_vec_add(add, x, y, out);
    ze_group_count_t groups = {N / 256, 1, 1};
    ZE(zeCommandListAppendLaunchKernel(list, add, &groups, NULL, 0, NULL));
    ZE(zeCommandQueueSynchronize(q, UINT64_MAX));
    check_floats(out, N, sum3, "out after the fault");
    ZE(zeMemFree(ctx, x));
    ZE(zeMemFree(ctx, y));
    ZE(zeMemFree(ctx, out));
}

/* A region of 16 rows of 64 floats from every other such row of `from`
 * (2i there) into `to` at row 2, one float in, at a pitch of 66 floats: on
 * an immediate list, waited for by `done`, or on a regular one, executed on
 * queue q. */
static void check_region(ze_command_list_handle_t list, ze_command_queue_handle_t q, ze_event_handle_t done,
                         float *from, float *to) {
    ze_copy_region_t src = {0, 0, 0, 64 * 4, 16, 1}, dst = {4, 2, 0, 64 * 4, 16, 1};
    for (unsigned i = 0; i < N; ++i) to[i] = -1.0f;
    ZE(zeCommandListAppendMemoryCopyRegion(list, to, &dst, 66 * 4, 0, from, &src, 128 * 4, 0, q ? NULL : done, 0,
                                           NULL));
    if (q) {
        ZE(zeCommandListClose(list));
        ZE(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
        ZE(zeCommandQueueSynchronize(q, UINT64_MAX));
    } else {
        ZE(zeEventHostSynchronize(done, UINT64_MAX));
        ZE(zeEventHostReset(done));
    }
    for (unsigned r = 0; r < 18; ++r)
        for (unsigned c = 0; c < 66; ++c) {
            float want = r >= 2 && c >= 1 && c <= 64 ? 2.0f * ((r - 2) * 128 + c - 1) : -1.0f;
            CHECK(to[r * 66 + c] == want, "a copied region's row %u, column %u: %g, expected %g", r, c, to[r * 66 + c],
                  want);
        }
}

/* Pointer queries describe a shared allocation as the driver describes its
 * own (routed: the runtime's memory, of no device on an emulated GPU). */
static void check_pointer_queries(enum mode mode, float *x, float *y) {
    ze_memory_allocation_properties_t px = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, NULL, 0, 0, 0}, py = px;
    ze_device_handle_t owner = NULL;
    ZE(zeMemGetAllocProperties(ctx, y + 5, &py, &owner));
    ZE(zeMemGetAllocProperties(ctx, x, &px, NULL));
    CHECK(py.type == ZE_MEMORY_TYPE_SHARED && px.type == ZE_MEMORY_TYPE_SHARED, "memory types %d and %d", (int)px.type,
          (int)py.type);
    CHECK(px.id != py.id, "two allocations share the id %llu", (unsigned long long)px.id);
    CHECK((mode == ROUTED && !on_gpu_backend()) == (owner == NULL), "the allocation's device: %p", (void *)owner);
    void *base = NULL;
    size_t size = 0;
    ZE(zeMemGetAddressRange(ctx, y + 5, &base, &size));
    CHECK(base == y && size == N * 4, "zeMemGetAddressRange: %p + %zu, expected %p + %u", base, size, (void *)y, N * 4);
}

int main(int argc, char **argv) {
    enum mode mode = parse_mode(argc, argv);
#ifdef ZE_THROUGH_TABLES
    load_tables(mode);
#endif
    ze_driver_handle_t driver;
    uint32_t count = 1;
    ZE(zeInit(0));
    ZE(zeDriverGet(&count, &driver));
    /* APP_ZE_DEVICE picks a GPU other than the first, which the runtime
     * does not use: the program's calls on it go to the driver. */
    ze_device_handle_t devs[4];
    uint32_t ndev = 4;
    ZE(zeDeviceGet(driver, &ndev, devs));
    unsigned which = getenv("APP_ZE_DEVICE") ? (unsigned)atoi(getenv("APP_ZE_DEVICE")) : 0;
    CHECK(which < ndev, "APP_ZE_DEVICE=%u: the driver has %u devices", which, ndev);
    dev = devs[which];
    ze_context_desc_t cdesc = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
    ZE(zeContextCreate(driver, &cdesc, &ctx));
    ze_module_desc_t mdesc = {ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_NATIVE, sizeof MODULE_IMAGE,
                              (const uint8_t *)MODULE_IMAGE, NULL, NULL};
    ZE(zeModuleCreate(ctx, dev, &mdesc, &module, NULL));
    if (mode == ERRORS) {
        run_errors();
        printf("level-zero errors: ok\n");
        return 0;
    }

    float *x = shared_floats(), *y = shared_floats(), *out = shared_floats();
    check_memory(mode, x, N * 4);
    check_pointer_queries(mode, x, y);
    for (unsigned i = 0; i < N; ++i) x[i] = i, y[i] = 2.0f * i;

    ze_event_pool_desc_t pdesc = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2};
    ze_event_pool_handle_t pool;
    ze_event_handle_t done;
    ZE(zeEventPoolCreate(ctx, &pdesc, 1, &dev, &pool));
    ze_event_desc_t edesc = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ZE(zeEventCreate(pool, &edesc, &done));

    /* Immediate list: runs at the append; the event says when. */
    ze_command_list_handle_t imm = immediate_list();
    ze_kernel_handle_t add = kernel("vec_add");
    set_vec_add(add, x, y, out);
    ze_group_count_t groups = {N / 256, 1, 1};
    ZE(zeCommandListAppendLaunchKernel(imm, add, &groups, done, 0, NULL));
    ZE(zeEventHostSynchronize(done, UINT64_MAX));
    check_floats(out, N, sum3, "out");

    /* Regular list: runs when executed, as often as executed. */
    ze_command_list_desc_t ldesc = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0};
    ze_command_list_handle_t list;
    ZE(zeCommandListCreate(ctx, dev, &ldesc, &list));
    ze_kernel_handle_t scale = kernel("scale");
    float two = 2.0f;
    unsigned n = N;
    ZE(zeKernelSetGroupSize(scale, 128, 1, 1));
    ZE(zeKernelSetArgumentValue(scale, 0, sizeof out, &out));
    ZE(zeKernelSetArgumentValue(scale, 1, sizeof two, &two));
    ZE(zeKernelSetArgumentValue(scale, 2, sizeof n, &n));
    ze_group_count_t scale_groups = {N / 128, 1, 1};
    ZE(zeCommandListAppendLaunchKernel(list, scale, &scale_groups, NULL, 0, NULL));
    ZE(zeCommandListClose(list));
    check_floats(out, N, sum3, "out before the list is executed");
    ze_command_queue_handle_t q = queue();
    ze_fence_desc_t fdesc = {ZE_STRUCTURE_TYPE_FENCE_DESC, NULL, 0};
    ze_fence_handle_t fence;
    ZE(zeFenceCreate(q, &fdesc, &fence));
    ZE(zeCommandQueueExecuteCommandLists(q, 1, &list, fence));
    ZE(zeFenceHostSynchronize(fence, UINT64_MAX));
    check_floats(out, N, times6, "out after the list");
    ZE(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
    ZE(zeCommandQueueSynchronize(q, UINT64_MAX));
    check_floats(out, N, times12, "out after the list again");

    /* The CPU writes between kernels: the next launch must see it. */
    for (unsigned i = 0; i < N; ++i) out[i] += 1;
    ZE(zeEventHostReset(done));
    ZE(zeCommandListAppendLaunchKernel(imm, scale, &scale_groups, done, 0, NULL));
    while (zeEventQueryStatus(done) == ZE_RESULT_NOT_READY) {
    }
    check_floats(out, N, plus1_times2, "out after the CPU's write");

    check_launches(mode, driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendLaunchKernel"),
                   "zeCommandListAppendLaunchKernel");

    /* A cooperative launch on a regular list runs at the list's execution,
     * on the data of then (routed to the levelzero device, the driver's
     * after a release).  On an immediate list there the runtime, which makes
     * that launch itself and not cooperatively, refuses it, and an indirect
     * launch (group counts read by the device) wherever it makes them. */
    {
        float *v = shared_floats();
        for (unsigned i = 0; i < N; ++i) v[i] = (float)i;
        ze_kernel_handle_t twice = kernel("scale");
        ZE(zeKernelSetGroupSize(twice, 128, 1, 1));
        ZE(zeKernelSetArgumentValue(twice, 0, sizeof v, &v));
        ZE(zeKernelSetArgumentValue(twice, 1, sizeof two, &two));
        ZE(zeKernelSetArgumentValue(twice, 2, sizeof n, &n));
        ze_command_list_handle_t coop;
        ZE(zeCommandListCreate(ctx, dev, &ldesc, &coop));
        ZE(zeCommandListAppendLaunchCooperativeKernel(coop, twice, &scale_groups, NULL, 0, NULL));
        ZE(zeCommandListClose(coop));
        for (unsigned i = 0; i < N; ++i) v[i] += 1; /* after the append, before the execution */
        ZE(zeCommandQueueExecuteCommandLists(q, 1, &coop, NULL));
        ZE(zeCommandQueueSynchronize(q, UINT64_MAX));
        for (unsigned i = 0; i < N; ++i) CHECK(v[i] == 2.0f * (i + 1), "after a cooperative launch: %g at %u", v[i], i);
        ze_result_t imm_coop = zeCommandListAppendLaunchCooperativeKernel(imm, twice, &scale_groups, done, 0, NULL);
        if (mode == ROUTED && on_gpu_backend()) {
            CHECK(imm_coop == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, "a cooperative launch on an immediate list: %d",
                  (int)imm_coop);
        } else {
            CHECK(imm_coop == ZE_RESULT_SUCCESS, "a cooperative launch on an immediate list: %d", (int)imm_coop);
            ZE(zeEventHostSynchronize(done, UINT64_MAX));
            ZE(zeEventHostReset(done));
            for (unsigned i = 0; i < N; ++i)
                CHECK(v[i] == 4.0f * (i + 1), "after a cooperative launch on an immediate list: %g at %u", v[i], i);
        }
        if (mode == ROUTED) {
            ze_result_t indirect = zeCommandListAppendLaunchKernelIndirect(imm, twice, &scale_groups, NULL, 0, NULL);
            CHECK(indirect == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, "an indirect launch on an immediate list: %d",
                  (int)indirect);
        }
        ZE(zeMemFree(ctx, v));
    }

    /* Hints on shared memory: routed, the runtime takes them (the data
     * goes to the device ahead of the next launch, or prefers the host when
     * device memory runs short) and the driver never sees them. */
    long hints = driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemoryPrefetch") +
                 driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemAdvise");
    ZE(zeCommandListAppendMemoryPrefetch(imm, x, N * 4));
    ZE(zeCommandListAppendMemAdvise(imm, dev, y, N * 4, ZE_MEMORY_ADVICE_SET_PREFERRED_LOCATION));
    ZE(zeCommandListAppendMemAdvise(imm, dev, y, N * 4, ZE_MEMORY_ADVICE_SET_READ_MOSTLY));
    ZE(zeCommandListAppendMemAdvise(imm, dev, y, N * 4, ZE_MEMORY_ADVICE_CLEAR_PREFERRED_LOCATION));
    hints = driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemoryPrefetch") +
            driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemAdvise") - hints;
    if (mode == ROUTED) CHECK(hints == 0, "%ld hints on shared memory reached the driver", hints);
    else CHECK(hints == 4, "%ld of 4 hints reached the driver", hints);
    /* The data is the same wherever it went. */
    ZE(zeEventHostReset(done));
    set_vec_add(add, x, y, out);
    ZE(zeCommandListAppendLaunchKernel(imm, add, &groups, done, 0, NULL));
    ZE(zeEventHostSynchronize(done, UINT64_MAX));
    check_floats(out, N, sum3, "out after the hints");
#ifndef ZE_THROUGH_TABLES /* (1.4's tables, which the build's headers have, lack it) */
    /* Level Zero 1.6's wait for an immediate list acquires as the others do
     * (routed with ADSM_ON_RACE=abort, reading before the acquire aborts). */
    for (unsigned i = 0; i < N; ++i) out[i] = -1.0f;
    set_vec_add(add, x, y, out);
    ZE(zeCommandListAppendLaunchKernel(imm, add, &groups, NULL, 0, NULL));
    ZE(zeCommandListHostSynchronize(imm, UINT64_MAX));
    check_floats(out, N, sum3, "out after zeCommandListHostSynchronize");
#endif

    /* Copies and fills with shared memory on a side, in order with the
     * kernels around them: routed, through the runtime, never the driver. */
    long copies = driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemoryCopy") +
                  driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemoryFill");
    float *host = (float *)malloc(N * 4);
    CHECK(host != NULL, "malloc");
    for (unsigned i = 0; i < N; ++i) host[i] = 2.0f * i;
    ZE(zeCommandListAppendMemoryCopy(imm, x, host, N * 4, NULL, 0, NULL)); /* x = 2i */
    float zero = 0.0f;
    ZE(zeCommandListAppendMemoryFill(imm, y, &zero, sizeof zero, N * 4, NULL, 0, NULL));
    ZE(zeEventHostReset(done));
    set_vec_add(add, x, y, out); /* out = 2i */
    ZE(zeCommandListAppendLaunchKernel(imm, add, &groups, NULL, 0, NULL));
    ZE(zeCommandListAppendMemoryCopy(imm, host, out, N * 4, done, 0, NULL));
    ZE(zeEventHostSynchronize(done, UINT64_MAX));
    for (unsigned i = 0; i < N; ++i) CHECK(host[i] == 2.0f * i, "host[%u] = %g after the copies", i, host[i]);
    float half = 0.5f;
    ZE(zeCommandListAppendMemoryFill(imm, out, &half, sizeof half, N * 4, done, 0, NULL));
    ZE(zeEventHostSynchronize(done, UINT64_MAX));
    for (unsigned i = 0; i < N; ++i) CHECK(out[i] == 0.5f, "out[%u] = %g after the fill", i, out[i]);
    ZE(zeEventHostReset(done));
    check_region(imm, NULL, done, x, out);
    copies = driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemoryCopy") +
             driver_calls("libze_loader.so.1", "fake_ze_calls", "zeCommandListAppendMemoryFill") - copies;
    /* (On levelzero the runtime's own transfers are the driver's copies.) */
    if (mode == ROUTED && !on_gpu_backend())
        CHECK(copies == 0, "%ld copies and fills of shared memory reached the driver", copies);
    else if (mode != ROUTED)
        CHECK(copies == 4, "%ld of 4 copies and fills reached the driver", copies);
    if (mode == ROUTED) {
        /* In a regular list, a copy runs after the kernel before it, at the
         * list's execution (the double's own lists take kernels only). */
        ze_command_list_handle_t later;
        ZE(zeCommandListCreate(ctx, dev, &ldesc, &later));
        set_vec_add(add, x, y, out); /* out = 2i again */
        ZE(zeCommandListAppendLaunchKernel(later, add, &groups, NULL, 0, NULL));
        ZE(zeCommandListAppendMemoryCopy(later, host, out, N * 4, NULL, 0, NULL));
        ZE(zeCommandListClose(later));
        for (unsigned i = 0; i < N; ++i) host[i] = -1.0f;
        ZE(zeCommandQueueExecuteCommandLists(q, 1, &later, NULL));
        ZE(zeCommandQueueSynchronize(q, UINT64_MAX));
        for (unsigned i = 0; i < N; ++i) CHECK(host[i] == 2.0f * i, "host[%u] = %g after the list's copy", i, host[i]);
        ze_command_list_handle_t region_list;
        ZE(zeCommandListCreate(ctx, dev, &ldesc, &region_list));
        check_region(region_list, q, NULL, x, out);
        /* The driver's device memory is not the CPU's: a copy between it
         * and shared memory is refused, not made wrong. */
        void *dmem = NULL;
        ZE(zeMemAllocDevice(ctx, &device_desc, N * 4, 64, dev, &dmem));
        CHECK(zeCommandListAppendMemoryCopy(imm, x, dmem, N * 4, NULL, 0, NULL) == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
              "a copy from device memory into shared memory");
        ZE(zeMemFree(ctx, dmem));
    }
    if (mode == ROUTED && on_gpu_backend()) {
        /* On a GPU back-end a regular list is the driver's, whole and in
         * order: a copy from its device memory into shared memory, a kernel
         * reading that, a copy of the result out (y is zero, filled above). */
        void *dmem = NULL;
        ZE(zeMemAllocDevice(ctx, &device_desc, N * 4, 64, dev, &dmem));
        for (unsigned i = 0; i < N; ++i) host[i] = 5.0f + i;
        ZE(zeEventHostReset(done));
        ZE(zeCommandListAppendMemoryCopy(imm, dmem, host, N * 4, done, 0, NULL));
        ZE(zeEventHostSynchronize(done, UINT64_MAX));
        ze_command_list_handle_t mixed;
        ZE(zeCommandListCreate(ctx, dev, &ldesc, &mixed));
        ZE(zeCommandListAppendMemoryCopy(mixed, x, dmem, N * 4, NULL, 0, NULL));
        set_vec_add(add, x, y, out);
        ZE(zeCommandListAppendLaunchKernel(mixed, add, &groups, NULL, 0, NULL));
        ZE(zeCommandListAppendMemoryCopy(mixed, host, out, N * 4, NULL, 0, NULL));
        ZE(zeCommandListClose(mixed));
        for (unsigned i = 0; i < N; ++i) host[i] = -1.0f, x[i] = -2.0f;
        ZE(zeCommandQueueExecuteCommandLists(q, 1, &mixed, NULL));
        ZE(zeCommandQueueSynchronize(q, UINT64_MAX));
        for (unsigned i = 0; i < N; ++i) CHECK(host[i] == 5.0f + i, "host[%u] = %g after the driver's list", i, host[i]);
        for (unsigned i = 0; i < N; ++i) CHECK(x[i] == 5.0f + i, "x[%u] = %g after the driver's copy into it", i, x[i]);
        ZE(zeMemFree(ctx, dmem));
    }
    free(host);
    ZE(zeMemFree(ctx, x));
    ZE(zeMemFree(ctx, y));
    ZE(zeMemFree(ctx, out));
    printf("level-zero %s: ok\n", argv[1]);
    return 0;
}
