/*
 * A test double of the Level Zero loader (libze_loader.so.1): the entry
 * points the tests use, with the loader's signatures (ze_api.h) and its
 * error codes for bad input, over fake_device.h.  Regular command lists
 * record launches and run them when executed; immediate ones run them at
 * once; fences and events are flags the device sets in order.
 *
 * Memory the program allocates (zeMemAllocShared, ...) is the host's, as
 * on an integrated GPU.  Memory mapped with the virtual-memory entry
 * points is a discrete device's (fake_vmm.h): once any is mapped, kernels
 * run where only device memory is reachable at its addresses, and copies
 * and fills on immediate command lists move bytes to and from it.  A
 * kernel that faults loses the device: ZE_RESULT_ERROR_DEVICE_LOST from
 * then on.  FAKE_ZE_MEMORY sets the device memory (default 1G).
 *
 * FAKE_ZE_DEVICES (1 to 4, default 1) GPUs of one driver share a context's
 * reserved ranges: physical memory is one GPU's, counted against its own
 * total, and a mapping in the context is reached by its GPU and by every
 * GPU with a peer link to it, as Level Zero's are (FAKE_ZE_NO_PEER=1 takes
 * the links away).  Each GPU has its own queue, its kernels seeing what it
 * may reach, and copies between two GPUs' memory run view to view.
 *
 * fake_ze_calls(name) says how many calls of an entry point reached it,
 * by its exported name or through the loader's function tables.
 */
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>

#include <sched.h>
#include <stdio.h>

#define VMM_OK ZE_RESULT_SUCCESS
#define VMM_EINVAL ZE_RESULT_ERROR_INVALID_ARGUMENT
#define VMM_ENOMEM ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
#define VMM_EALREADY ZE_RESULT_ERROR_INVALID_ARGUMENT
#define VMM_ENOTREG ZE_RESULT_ERROR_INVALID_ARGUMENT
#define VMM_ELAUNCH ZE_RESULT_ERROR_DEVICE_LOST
#define VMM_FAULT ZE_RESULT_ERROR_DEVICE_LOST
#define VMM_DRIVER "fake libze_loader"
#define VMM_MEMORY_ENV "FAKE_ZE_MEMORY"
#define VMM_GRANULE_ENV "FAKE_ZE_GRANULE"
#define FAKE_FAIL_ENV "FAKE_ZE_FAIL"
#include "fake_vmm.h"
#include "ze_newer.h"

#define EXPORT __attribute__((visibility("default")))

/* An entry point is a function of the double's own, which its tables hand
 * out, exported under the loader's name as an alias of it: a call through a
 * table reaches the double directly, past any definition of that name
 * preloaded before it, as with the real loader. */
#define ENTRY(name, ...)                                               \
    static ze_result_t ZE_APICALL fake_##name(__VA_ARGS__);           \
    EXPORT __typeof(name) name __attribute__((alias("fake_" #name))); \
    static ze_result_t ZE_APICALL fake_##name(__VA_ARGS__)
/* A test's hook, told of driver entries as they are called (with the
 * thread that calls them): a test asks where the runtime calls from. */
static void (*_Atomic entry_hook)(const char *);
EXPORT void fake_ze_set_entry_hook(void (*hook)(const char *)) { entry_hook = hook; }
static void entered(const char *name) {
    void (*hook)(const char *) = entry_hook;
    if (hook) hook(name);
}
/* Each entry point's first statement: counts the call, tells the hook, and
 * fails it when FAKE_ZE_FAIL asks. */
#define COUNT()                                                                                 \
    do {                                                                                        \
        if (fake_count(__func__ + sizeof "fake_" - 1)) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY; \
        entered(__func__ + sizeof "fake_" - 1);                                                 \
    } while (0)

static int run_kernel(const fake_job *j);
#define DEVICE_QUEUE(i) \
    {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .run_kernel = run_kernel, .ordinal = (i)}
static fake_device devices[VMM_DEVICES] = {DEVICE_QUEUE(0), DEVICE_QUEUE(1), DEVICE_QUEUE(2), DEVICE_QUEUE(3)};
/* Each GPU's copy engine (queue group 1): a queue of its own, as a GPU's
 * copy engine runs beside its kernels; what must land before a kernel
 * starts, or after it ends, is ordered with events. */
static fake_device copy_engines[VMM_DEVICES] = {DEVICE_QUEUE(0), DEVICE_QUEUE(1), DEVICE_QUEUE(2), DEVICE_QUEUE(3)};
static atomic_int vmm_active; /* kernels run as a discrete device's, once memory is mapped */

static int run_kernel(const fake_job *j) {
    if (atomic_load(&vmm_active)) return vmm_run_kernel(j, fake_queue_ordinal);
    gpu_run_grid(j->kernel.fn, j->grid, j->block, (void **)j->args);
    return 0;
}

/* Whether any GPU was lost (a faulting kernel), and waiting for every
 * GPU's queue (before memory they may use goes). */
static int any_lost(void) {
    for (int i = 0; i < VMM_DEVICES; ++i)
        if (atomic_load(&devices[i].error)) return 1;
    return 0;
}
static void drain_all(void) {
    for (int i = 0; i < VMM_DEVICES; ++i) {
        fake_drain(&devices[i]);
        fake_drain(&copy_engines[i]);
    }
}

/* What the discrete device holds, and how many copies moved bytes from or
 * to host memory that is not the driver's (zeMemAllocHost), for the tests. */
static atomic_long unstaged_copies;
EXPORT size_t fake_ze_device_bytes(void) { return vmm_used; }
EXPORT size_t fake_ze_device_bytes_on(int gpu) { return gpu >= 0 && gpu < VMM_DEVICES ? vmm_used_on[gpu] : 0; }
EXPORT long fake_ze_unstaged_copies(void) { return atomic_load(&unstaged_copies); }
/* Objects made and not yet destroyed, by kind (fake_ze_held). */
static atomic_long contexts_live, lists_live, pools_live, events_live, host_allocs_live;
EXPORT int fake_ze_is_reserved(const void *p) {
    pthread_mutex_lock(&vmm_mu);
    int r = vmm_in_reserved((uintptr_t)p, 1);
    pthread_mutex_unlock(&vmm_mu);
    return r;
}

static void note_host_side(const void *host) {
    void *base;
    size_t n;
    if (!fake_find(host, &base, &n)) atomic_fetch_add(&unstaged_copies, 1);
}
static atomic_int initialized;
static int the_driver, the_context;
static int the_devices[VMM_DEVICES];
static int device_count(void) {
    const char *v = fake_getenv("FAKE_ZE_DEVICES");
    int n = v ? atoi(v) : 1;
    return n < 1 ? 1 : n > VMM_DEVICES ? VMM_DEVICES : n;
}
/* A device's place among the driver's GPUs, or -1 for no device of its. */
static int device_index(ze_device_handle_t dev) {
    for (int i = 0; i < device_count(); ++i)
        if (dev == (ze_device_handle_t)&the_devices[i]) return i;
    return -1;
}
static int known_device(ze_device_handle_t dev) { return device_index(dev) >= 0; }
/* Queue groups: 0 computes (and copies), 1 only copies. */
#define COPY_ONLY_GROUP 1u
static fake_device *queue_of(ze_device_handle_t dev, int copy_only) {
    int i = device_index(dev);
    return copy_only ? &copy_engines[i < 0 ? 0 : i] : &devices[i < 0 ? 0 : i];
}
/* Every pair of GPUs has a peer link unless FAKE_ZE_NO_PEER=1. */
static int peer_link(int a, int b) {
    const char *v = fake_getenv("FAKE_ZE_NO_PEER");
    return a == b || !(v && strcmp(v, "1") == 0);
}

/* Room for one argument's value: structs passed by value fit. */
#define ZE_ARG_SLOT 64

struct _ze_module_handle_t {
    ze_device_handle_t dev;    /* built for it alone */
    char image[4096];          /* the double's text format */
    uint32_t *spirv;           /* or a SPIR-V module's words */
    size_t spirv_words;
};

/* A SPIR-V module's kernel `name`: how many parameters its entry point's
 * function takes, or -1 if the module has no such kernel.  The kernel then
 * runs as the host function of that name, which the test preloads. */
static int spirv_param_count(const uint32_t *w, size_t n, const char *name) {
    uint32_t fn = 0;
    int in_kernel = 0, count = -1;
    for (size_t at = 5; at < n;) {
        uint32_t words = w[at] >> 16, op = w[at] & 0xffff;
        if (words == 0 || words > n - at) return -1;
        if (op == 15 && words >= 4 && w[at + 1] == 6 && !fn &&
            strncmp((const char *)&w[at + 3], name, (words - 3) * 4) == 0)
            fn = w[at + 2];
        if (op == 54 && words >= 5) {
            in_kernel = fn && w[at + 2] == fn;
            if (in_kernel) count = 0;
        } else if (op == 55 && in_kernel) {
            ++count;
        } else if (op != 55) {
            in_kernel = 0; /* the parameters come right after OpFunction */
        }
        at += words;
    }
    return count;
}
struct _ze_kernel_handle_t {
    ze_device_handle_t dev;  /* its module's */
    fake_kernel k;  /* parameter sizes come from the arguments set */
    unsigned char args[FAKE_MAX_PARAMS][ZE_ARG_SLOT];
    gpu_dim group;
};
struct _ze_module_build_log_handle_t {
    char text[256];
};
struct _ze_event_handle_t {
    atomic_int signaled;
};
struct _ze_fence_handle_t {
    atomic_int signaled;
};
struct _ze_event_pool_handle_t {
    int unused;
};
struct _ze_command_queue_handle_t {
    ze_device_handle_t dev;
    int copy_only;
};

/* A regular list's command, run when the list is executed. */
typedef struct command {
    enum { CMD_KERNEL, CMD_COPY, CMD_FILL, CMD_BARRIER } kind;
    fake_kernel k;
    unsigned char args[FAKE_MAX_PARAMS][ZE_ARG_SLOT];
    gpu_dim grid, block;
    ze_event_handle_t signal;
    void *dst; /* copy, fill */
    const void *src; /* copy */
    size_t size, pattern_size;
    unsigned char pattern[128];
} command;

struct _ze_command_list_handle_t {
    ze_device_handle_t dev;
    int immediate, closed;
    int copy_only; /* of the copy engine's group: no kernels */
    command cmds[64];
    int n;
};

EXPORT long fake_ze_calls(const char *name) { return fake_count_of(name); }
EXPORT const char *fake_ze_entry(int i, long *calls) { return fake_entry(i, calls); }
/* What the program still holds of the driver's: "contexts", "command
   lists", "event pools", "events", "host allocations", "reservations"
   (address ranges) or "device bytes"; -1 for another name. */
EXPORT long fake_ze_held(const char *what) {
    if (strcmp(what, "contexts") == 0) return atomic_load(&contexts_live);
    if (strcmp(what, "command lists") == 0) return atomic_load(&lists_live);
    if (strcmp(what, "event pools") == 0) return atomic_load(&pools_live);
    if (strcmp(what, "events") == 0) return atomic_load(&events_live);
    if (strcmp(what, "host allocations") == 0) return atomic_load(&host_allocs_live);
    if (strcmp(what, "device bytes") == 0) return (long)vmm_used;
    return strcmp(what, "reservations") == 0 ? vmm_reservations() : -1;
}

/* A copy append the device refuses: the nth from now returns r, queueing
 * nothing (a test of what the runtime does after a failed append). */
static atomic_int copy_fails_in;
static atomic_int copy_fail_result;
EXPORT void fake_ze_fail_copy_append(int nth, ze_result_t r) {
    atomic_store(&copy_fail_result, (int)r);
    atomic_store(&copy_fails_in, nth);
}
static int copy_append_refused(ze_result_t *r) {
    int n = atomic_load(&copy_fails_in);
    while (n > 0 && !atomic_compare_exchange_weak(&copy_fails_in, &n, n - 1)) {
    }
    if (n != 1) return 0;
    *r = (ze_result_t)atomic_load(&copy_fail_result);
    return 1;
}

#define NEED_INIT()                                                       \
    do {                                                                  \
        if (!atomic_load(&initialized)) return ZE_RESULT_ERROR_UNINITIALIZED; \
    } while (0)
/* After a kernel faulted, the device answers nothing else. */
#define NOT_LOST()                                          \
    do {                                                    \
        if (any_lost()) return ZE_RESULT_ERROR_DEVICE_LOST; \
    } while (0)

static ze_result_t execute(const command *c, fake_device *q);
static void submit(const command *c, fake_device *q) {
    void *params[FAKE_MAX_PARAMS];
    for (unsigned i = 0; i < c->k.nparams; ++i) params[i] = (void *)c->args[i];
    fake_submit(q, &c->k, c->grid, c->block, params, NULL);
    if (c->signal) fake_submit(q, NULL, c->grid, c->block, NULL, &c->signal->signaled);
}

ENTRY(zeInit, ze_init_flags_t flags) {
    COUNT();
    (void)flags;
    atomic_store(&initialized, 1);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeDriverGet, uint32_t *count, ze_driver_handle_t *drivers) {
    COUNT();
    NEED_INIT();
    if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*count == 0 || !drivers) {
        *count = 1;
        return ZE_RESULT_SUCCESS;
    }
    *count = 1;
    drivers[0] = (ze_driver_handle_t)&the_driver;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeDeviceGet, ze_driver_handle_t driver, uint32_t *count, ze_device_handle_t *devices) {
    COUNT();
    NEED_INIT();
    if (driver != (ze_driver_handle_t)&the_driver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    const uint32_t n = (uint32_t)device_count();
    if (*count == 0 || !devices) {
        *count = n;
        return ZE_RESULT_SUCCESS;
    }
    if (*count > n) *count = n;
    for (uint32_t i = 0; i < *count; ++i) devices[i] = (ze_device_handle_t)&the_devices[i];
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeContextCreate, ze_driver_handle_t driver, const ze_context_desc_t *desc, ze_context_handle_t *ctx) {
    COUNT();
    NEED_INIT();
    if (!driver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ctx) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *ctx = (ze_context_handle_t)&the_context;
    atomic_fetch_add(&contexts_live, 1);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeContextDestroy, ze_context_handle_t ctx) {
    COUNT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    atomic_fetch_sub(&contexts_live, 1);
    return ZE_RESULT_SUCCESS;
}

/* What kind each allocation is, for zeMemGetAllocProperties. */
static struct {
    void *p;
    ze_memory_type_t type;
} kinds[FAKE_MAX_ALLOCS];
static pthread_mutex_t kinds_mu = PTHREAD_MUTEX_INITIALIZER;

static void set_kind(void *p, ze_memory_type_t type) {
    pthread_mutex_lock(&kinds_mu);
    for (int i = 0; i < FAKE_MAX_ALLOCS; ++i)
        if (kinds[i].p == p || (type != ZE_MEMORY_TYPE_UNKNOWN && !kinds[i].p)) {
            kinds[i].p = type == ZE_MEMORY_TYPE_UNKNOWN ? NULL : p;
            kinds[i].type = type;
            break;
        }
    pthread_mutex_unlock(&kinds_mu);
}

static ze_result_t alloc(ze_context_handle_t ctx, size_t size, size_t alignment, ze_memory_type_t type, void **p) {
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if ((alignment & (alignment - 1)) || alignment > 4096) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    *p = fake_alloc(size);
    if (*p) set_kind(*p, type);
    return *p ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
}

ENTRY(zeMemGetAllocProperties, ze_context_handle_t ctx, const void *ptr, ze_memory_allocation_properties_t *props,
      ze_device_handle_t *dev) {
    COUNT();
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr || !props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    void *base = NULL;
    size_t n = 0;
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    if (fake_find(ptr, &base, &n)) {
        pthread_mutex_lock(&kinds_mu);
        for (int i = 0; i < FAKE_MAX_ALLOCS; ++i)
            if (kinds[i].p == base) props->type = kinds[i].type;
        pthread_mutex_unlock(&kinds_mu);
    }
    props->id = (uint64_t)(uintptr_t)base;
    if (dev) *dev = props->type == ZE_MEMORY_TYPE_UNKNOWN ? NULL : (ze_device_handle_t)&the_devices[0];
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeMemGetAddressRange, ze_context_handle_t ctx, const void *ptr, void **pbase, size_t *psize) {
    COUNT();
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    void *base = NULL;
    size_t n = 0;
    if (!fake_find(ptr, &base, &n)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (pbase) *pbase = base;
    if (psize) *psize = n;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeMemAllocShared, ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *dd,
      const ze_host_mem_alloc_desc_t *hd, size_t size, size_t alignment, ze_device_handle_t dev, void **p) {
    COUNT();
    (void)dev;
    if (!dd || !hd) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return alloc(ctx, size, alignment, ZE_MEMORY_TYPE_SHARED, p);
}

ENTRY(zeMemAllocDevice, ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *dd, size_t size, size_t alignment,
      ze_device_handle_t dev, void **p) {
    COUNT();
    if (!dd) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return alloc(ctx, size, alignment, ZE_MEMORY_TYPE_DEVICE, p);
}

ENTRY(zeMemFree, ze_context_handle_t ctx, void *p) {
    COUNT();
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    drain_all();
    ze_memory_type_t was = ZE_MEMORY_TYPE_UNKNOWN;
    pthread_mutex_lock(&kinds_mu);
    for (int i = 0; i < FAKE_MAX_ALLOCS; ++i)
        if (kinds[i].p == p) was = kinds[i].type;
    pthread_mutex_unlock(&kinds_mu);
    if (!fake_free(p)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (was == ZE_MEMORY_TYPE_HOST) atomic_fetch_sub(&host_allocs_live, 1);
    set_kind(p, ZE_MEMORY_TYPE_UNKNOWN);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeModuleCreate, ze_context_handle_t ctx, ze_device_handle_t dev, const ze_module_desc_t *desc,
      ze_module_handle_t *module, ze_module_build_log_handle_t *log) {
    COUNT();
    NEED_INIT();
    if (log) *log = (ze_module_build_log_handle_t)calloc(1, sizeof(struct _ze_module_build_log_handle_t));
    if (!ctx || !known_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !module || !desc->pInputModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* The double's modules are text ("name:sizes;...") or SPIR-V; anything
     * else fails to build, with a log that says why, as a driver's compiler
     * would. */
    const char *image = (const char *)desc->pInputModule;
    uint32_t magic = 0;
    if (desc->inputSize >= 20) memcpy(&magic, image, 4);
    if (desc->format == ZE_MODULE_FORMAT_IL_SPIRV && magic == 0x07230203 && desc->inputSize % 4 == 0) {
        struct _ze_module_handle_t *m = (struct _ze_module_handle_t *)calloc(1, sizeof *m);
        m->spirv = (uint32_t *)malloc(desc->inputSize);
        memcpy(m->spirv, image, desc->inputSize);
        m->spirv_words = desc->inputSize / 4;
        m->dev = dev;
        *module = m;
        return ZE_RESULT_SUCCESS;
    }
    int text = desc->inputSize > 0 && memchr(image, ':', desc->inputSize) != NULL;
    for (size_t i = 0; text && i < desc->inputSize && image[i]; ++i) text = image[i] >= 0x20 && image[i] < 0x7f;
    if (!text) {
        if (log) snprintf((*log)->text, sizeof (*log)->text, "fake libze_loader: the module is not of the double's format");
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    /* The tests' shared module helper marks its images as the CUDA double
     * wants them; the mark is no kernel. */
    size_t size = desc->inputSize;
    if (size >= 12 && strncmp(image, "fake-module:", 12) == 0) {
        image += 12;
        size -= 12;
    }
    struct _ze_module_handle_t *m = (struct _ze_module_handle_t *)calloc(1, sizeof *m);
    snprintf(m->image, sizeof m->image, "%.*s", (int)size, image);
    m->dev = dev;
    *module = m;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeModuleBuildLogGetString, ze_module_build_log_handle_t log, size_t *size, char *text) {
    COUNT();
    if (!log) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!size) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    size_t n = strlen(log->text) + 1;
    if (*size == 0 || !text) {
        *size = n;
        return ZE_RESULT_SUCCESS;
    }
    snprintf(text, *size, "%s", log->text);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeModuleBuildLogDestroy, ze_module_build_log_handle_t log) {
    COUNT();
    if (!log) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    free(log);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeModuleDestroy, ze_module_handle_t m) {
    COUNT();
    if (m) free(m->spirv);
    free(m);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeKernelCreate, ze_module_handle_t m, const ze_kernel_desc_t *desc, ze_kernel_handle_t *kernel) {
    COUNT();
    NEED_INIT();
    if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !kernel || !desc->pKernelName) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    struct _ze_kernel_handle_t *k = (struct _ze_kernel_handle_t *)calloc(1, sizeof *k);
    k->dev = m->dev;
    if (m->spirv) {
        int n = spirv_param_count(m->spirv, m->spirv_words, desc->pKernelName);
        void *fn = n >= 0 && n <= FAKE_MAX_PARAMS ? dlsym(RTLD_DEFAULT, desc->pKernelName) : NULL;
        if (!fn) {
            free(k);
            return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
        }
        snprintf(k->k.name, sizeof k->k.name, "%s", desc->pKernelName);
        k->k.nparams = (unsigned)n;
        for (int i = 0; i < n; ++i) k->k.sizes[i] = ZE_ARG_SLOT; /* whatever was set, whole */
        k->k.fn = (gpu_kernel)fn;
    } else if (!fake_module_find(m->image, desc->pKernelName, &k->k)) {
        free(k);
        return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    }
    k->group = (gpu_dim){1, 1, 1};
    *kernel = k;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeKernelDestroy, ze_kernel_handle_t k) {
    COUNT();
    free(k);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeKernelSetArgumentValue, ze_kernel_handle_t k, uint32_t index, size_t size, const void *value) {
    COUNT();
    if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (index >= k->k.nparams) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    if (size > ZE_ARG_SLOT) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    memset(k->args[index], 0, ZE_ARG_SLOT);
    if (value) memcpy(k->args[index], value, size);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeKernelSetGroupSize, ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z) {
    COUNT();
    if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!x || !y || !z || (uint64_t)x * y * z > 1024) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    k->group = (gpu_dim){x, y, z};
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandQueueCreate, ze_context_handle_t ctx, ze_device_handle_t dev, const ze_command_queue_desc_t *desc,
      ze_command_queue_handle_t *q) {
    COUNT();
    NEED_INIT();
    if (!ctx || !dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !q) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->ordinal > COPY_ONLY_GROUP) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    *q = (ze_command_queue_handle_t)calloc(1, sizeof(struct _ze_command_queue_handle_t));
    (*q)->dev = dev;
    (*q)->copy_only = desc->ordinal == COPY_ONLY_GROUP;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandQueueDestroy, ze_command_queue_handle_t q) {
    COUNT();
    drain_all();
    free(q);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t new_list(ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t group, int immediate,
                            ze_command_list_handle_t *list) {
    NEED_INIT();
    if (!ctx || !known_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (group > COPY_ONLY_GROUP) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    *list = (ze_command_list_handle_t)calloc(1, sizeof(struct _ze_command_list_handle_t));
    (*list)->immediate = immediate;
    (*list)->copy_only = group == COPY_ONLY_GROUP;
    (*list)->dev = dev;
    atomic_fetch_add(&lists_live, 1);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandListCreate, ze_context_handle_t ctx, ze_device_handle_t dev, const ze_command_list_desc_t *desc,
      ze_command_list_handle_t *list) {
    COUNT();
    if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return new_list(ctx, dev, desc->commandQueueGroupOrdinal, 0, list);
}

ENTRY(zeCommandListCreateImmediate, ze_context_handle_t ctx, ze_device_handle_t dev,
      const ze_command_queue_desc_t *desc, ze_command_list_handle_t *list) {
    COUNT();
    if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return new_list(ctx, dev, desc->ordinal, 1, list);
}

ENTRY(zeCommandListClose, ze_command_list_handle_t list) {
    COUNT();
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    list->closed = 1;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandListReset, ze_command_list_handle_t list) {
    COUNT();
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    list->n = 0;
    list->closed = 0;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandListDestroy, ze_command_list_handle_t list) {
    COUNT();
    if (list) atomic_fetch_sub(&lists_live, 1);
    drain_all();
    free(list);
    return ZE_RESULT_SUCCESS;
}

/* Hints about the driver's own shared memory: checked, then nothing to do
 * (the double's memory is one). */
ENTRY(zeCommandListAppendMemoryPrefetch, ze_command_list_handle_t list, const void *ptr, size_t size) {
    COUNT();
    (void)size;
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandListAppendMemAdvise, ze_command_list_handle_t list, ze_device_handle_t dev, const void *ptr, size_t size,
      ze_memory_advice_t advice) {
    COUNT();
    (void)size;
    if (!list || !dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (advice > ZE_MEMORY_ADVICE_BIAS_UNCACHED) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandListAppendLaunchKernel, ze_command_list_handle_t list, ze_kernel_handle_t k,
      const ze_group_count_t *groups, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    COUNT();
    if (!list || !k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!groups) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (list->closed || list->n == 64) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (k->dev != list->dev) {
        fprintf(stderr, "fake libze_loader: kernel '%s' of a module built for another device than the list's\n", k->k.name);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (list->copy_only) {
        fprintf(stderr, "fake libze_loader: kernel '%s' appended to a copy engine's list\n", k->k.name);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    NOT_LOST();
    for (uint32_t i = 0; i < nwait; ++i)
        while (!atomic_load(&waits[i]->signaled)) sched_yield();
    command *c = &list->cmds[list->n];
    c->kind = CMD_KERNEL;
    c->k = k->k;
    memcpy(c->args, k->args, sizeof c->args);
    c->grid = (gpu_dim){groups->groupCountX, groups->groupCountY, groups->groupCountZ};
    c->block = k->group;
    c->signal = signal;
    if (signal) atomic_store(&signal->signaled, 0);
    if (list->immediate) submit(c, queue_of(list->dev, list->copy_only));
    else list->n++;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandQueueExecuteCommandLists, ze_command_queue_handle_t q, uint32_t n, ze_command_list_handle_t *lists,
      ze_fence_handle_t fence) {
    COUNT();
    if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!lists) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (n == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < n; ++i)
        if (!lists[i]->closed || lists[i]->copy_only != q->copy_only) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    fake_device *queue = queue_of(q->dev, q->copy_only);
    for (uint32_t i = 0; i < n; ++i)
        for (int j = 0; j < lists[i]->n; ++j) {
            ze_result_t r = execute(&lists[i]->cmds[j], queue);
            if (r != ZE_RESULT_SUCCESS) return r;
        }
    if (fence) fake_submit(queue, NULL, (gpu_dim){1, 1, 1}, (gpu_dim){1, 1, 1}, NULL, &fence->signaled);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandQueueSynchronize, ze_command_queue_handle_t q, uint64_t timeout) {
    COUNT();
    (void)timeout;
    if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    drain_all();
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandListHostSynchronize, ze_command_list_handle_t list, uint64_t timeout) {
    COUNT();
    (void)timeout;
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    drain_all();
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeFenceCreate, ze_command_queue_handle_t q, const ze_fence_desc_t *desc, ze_fence_handle_t *f) {
    COUNT();
    if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !f) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *f = (ze_fence_handle_t)calloc(1, sizeof(struct _ze_fence_handle_t));
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeFenceDestroy, ze_fence_handle_t f) {
    COUNT();
    free(f);
    return ZE_RESULT_SUCCESS;
}

/* Threads waiting in the double for an event or fence not yet signalled,
 * for the tests (a helper of the runtime's must never be one for long). */
static atomic_int blocking_waits;
EXPORT int fake_ze_blocking_waits(void) { return atomic_load(&blocking_waits); }
/* Whether a GPU was lost (a kernel faulted there), for the tests. */
EXPORT int fake_ze_lost(void) { return any_lost(); }
static ze_result_t wait_flag(atomic_int *flag, uint64_t timeout) {
    if (timeout == 0 && !atomic_load(flag)) return ZE_RESULT_NOT_READY;
    if (!atomic_load(flag)) {
        atomic_fetch_add(&blocking_waits, 1);
        while (!atomic_load(flag)) sched_yield();
        atomic_fetch_sub(&blocking_waits, 1);
    }
    return any_lost() ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_SUCCESS;
}

ENTRY(zeFenceHostSynchronize, ze_fence_handle_t f, uint64_t timeout) {
    COUNT();
    if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return wait_flag(&f->signaled, timeout);
}

ENTRY(zeFenceQueryStatus, ze_fence_handle_t f) {
    COUNT();
    if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return wait_flag(&f->signaled, 0);
}

ENTRY(zeEventPoolCreate, ze_context_handle_t ctx, const ze_event_pool_desc_t *desc, uint32_t ndev,
      ze_device_handle_t *devs, ze_event_pool_handle_t *pool) {
    COUNT();
    (void)ndev, (void)devs;
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !pool) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pool = (ze_event_pool_handle_t)calloc(1, sizeof(struct _ze_event_pool_handle_t));
    atomic_fetch_add(&pools_live, 1);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeEventPoolDestroy, ze_event_pool_handle_t pool) {
    COUNT();
    if (pool) atomic_fetch_sub(&pools_live, 1);
    free(pool);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeEventCreate, ze_event_pool_handle_t pool, const ze_event_desc_t *desc, ze_event_handle_t *e) {
    COUNT();
    if (!pool) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !e) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *e = (ze_event_handle_t)calloc(1, sizeof(struct _ze_event_handle_t));
    atomic_fetch_add(&events_live, 1);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeEventDestroy, ze_event_handle_t e) {
    COUNT();
    if (e) atomic_fetch_sub(&events_live, 1);
    free(e);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeEventHostSignal, ze_event_handle_t e) {
    COUNT();
    if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    atomic_store(&e->signaled, 1);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeEventHostReset, ze_event_handle_t e) {
    COUNT();
    if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    atomic_store(&e->signaled, 0);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeEventHostSynchronize, ze_event_handle_t e, uint64_t timeout) {
    COUNT();
    if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return wait_flag(&e->signaled, timeout);
}

ENTRY(zeEventQueryStatus, ze_event_handle_t e) {
    COUNT();
    if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return wait_flag(&e->signaled, 0);
}

/* ---- the device's properties */

ENTRY(zeDeviceGetProperties, ze_device_handle_t dev, ze_device_properties_t *props) {
    COUNT();
    NEED_INIT();
    if (!known_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    props->type = ZE_DEVICE_TYPE_GPU;
    props->vendorId = 0x8086;
    props->flags = 0; /* discrete: not ZE_DEVICE_PROPERTY_FLAG_INTEGRATED */
    int i = device_index(dev);
    if (i == 0) snprintf(props->name, sizeof props->name, "Fake Level Zero GPU");
    else snprintf(props->name, sizeof props->name, "Fake Level Zero GPU %d", i);
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeDeviceGetMemoryProperties, ze_device_handle_t dev, uint32_t *count, ze_device_memory_properties_t *props) {
    COUNT();
    NEED_INIT();
    if (!known_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*count == 0 || !props) {
        *count = 1;
        return ZE_RESULT_SUCCESS;
    }
    *count = 1;
    props[0].totalSize = vmm_total();
    snprintf(props[0].name, sizeof props[0].name, "HBM");
    return ZE_RESULT_SUCCESS;
}

/* Group 0 computes (and copies), group 1 only copies: a copy engine. */
ENTRY(zeDeviceGetCommandQueueGroupProperties, ze_device_handle_t dev, uint32_t *count,
      ze_command_queue_group_properties_t *props) {
    COUNT();
    NEED_INIT();
    if (!known_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*count == 0 || !props) {
        *count = 2;
        return ZE_RESULT_SUCCESS;
    }
    uint32_t n = *count < 2 ? *count : 2;
    for (uint32_t i = 0; i < n; ++i) {
        props[i].flags = i == 0 ? ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY
                                : ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        props[i].maxMemoryFillPatternSize = i == 0 ? 128 : 4;
        props[i].numQueues = 1;
    }
    *count = n;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeDeviceCanAccessPeer, ze_device_handle_t dev, ze_device_handle_t peer, ze_bool_t *value) {
    COUNT();
    NEED_INIT();
    if (!known_device(dev) || !known_device(peer)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!value) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *value = (ze_bool_t)peer_link(device_index(dev), device_index(peer));
    return ZE_RESULT_SUCCESS;
}

/* ---- virtual memory: the discrete device */

ENTRY(zeVirtualMemQueryPageSize, ze_context_handle_t ctx, ze_device_handle_t dev, size_t size, size_t *pagesize) {
    COUNT();
    NEED_INIT();
    if (!ctx || !dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pagesize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    *pagesize = VMM_GRANULARITY;
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeVirtualMemReserve, ze_context_handle_t ctx, const void *start, size_t size, void **p) {
    COUNT();
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0 || size % VMM_GRANULARITY) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    uintptr_t at = 0;
    ze_result_t r = (ze_result_t)vmm_reserve(&at, size, 0, (uintptr_t)start);
    *p = (void *)at;
    return r;
}

ENTRY(zeVirtualMemFree, ze_context_handle_t ctx, const void *p, size_t size) {
    COUNT();
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return (ze_result_t)vmm_address_free((uintptr_t)p, size);
}

ENTRY(zePhysicalMemCreate, ze_context_handle_t ctx, ze_device_handle_t dev, ze_physical_mem_desc_t *desc,
      ze_physical_mem_handle_t *phys) {
    COUNT();
    NEED_INIT();
    NOT_LOST();
    if (!ctx || !known_device(dev)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !phys) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->stype != ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC || desc->flags) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (desc->size == 0 || desc->size % VMM_GRANULARITY) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    uintptr_t made = 0;
    ze_result_t r = (ze_result_t)vmm_create(&made, desc->size, device_index(dev));
    *phys = (ze_physical_mem_handle_t)made;
    return r;
}

ENTRY(zePhysicalMemDestroy, ze_context_handle_t ctx, ze_physical_mem_handle_t phys) {
    COUNT();
    NEED_INIT();
    if (!ctx || !phys) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return (ze_result_t)vmm_release((uintptr_t)phys);
}

/* A mapping in the context: its GPU and that GPU's peers reach it. */
static ze_result_t grant_access(const void *p, size_t size, int owner) {
    for (int d = 0; d < device_count(); ++d)
        if (peer_link(d, owner)) {
            ze_result_t r = (ze_result_t)vmm_set_access((uintptr_t)p, size, d, 1);
            if (r != ZE_RESULT_SUCCESS) return r;
        }
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeVirtualMemMap, ze_context_handle_t ctx, const void *p, size_t size, ze_physical_mem_handle_t phys,
      size_t offset, ze_memory_access_attribute_t access) {
    COUNT();
    NEED_INIT();
    if (!ctx || !phys) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (access > ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    ze_result_t r = (ze_result_t)vmm_map((uintptr_t)p, size, offset, (uintptr_t)phys);
    if (r == ZE_RESULT_SUCCESS && access != ZE_MEMORY_ACCESS_ATTRIBUTE_NONE) r = grant_access(p, size, ((vmm_phys *)phys)->device);
    if (r == ZE_RESULT_SUCCESS) atomic_store(&vmm_active, 1);
    return r;
}

ENTRY(zeVirtualMemUnmap, ze_context_handle_t ctx, const void *p, size_t size) {
    COUNT();
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    drain_all(); /* after the work that may use it */
    return (ze_result_t)vmm_unmap((uintptr_t)p, size);
}

ENTRY(zeVirtualMemSetAccessAttribute, ze_context_handle_t ctx, const void *p, size_t size,
      ze_memory_access_attribute_t access) {
    COUNT();
    NEED_INIT();
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (access != ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    int owner = vmm_device_at((uintptr_t)p);
    return owner < 0 ? ZE_RESULT_ERROR_INVALID_ARGUMENT : grant_access(p, size, owner);
}

ENTRY(zeMemAllocHost, ze_context_handle_t ctx, const ze_host_mem_alloc_desc_t *hd, size_t size, size_t alignment,
      void **p) {
    COUNT();
    if (!hd) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t r = alloc(ctx, size, alignment, ZE_MEMORY_TYPE_HOST, p);
    if (r == ZE_RESULT_SUCCESS) atomic_fetch_add(&host_allocs_live, 1);
    return r;
}

/* ---- copies, fills and barriers: at once on an immediate list, in order
 * with the kernels at the execution of a regular one */

static ze_result_t signal_after(ze_event_handle_t signal, fake_device *q) {
    if (signal) fake_submit(q, NULL, (gpu_dim){1, 1, 1}, (gpu_dim){1, 1, 1}, NULL, &signal->signaled);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t check_append(ze_command_list_handle_t list, uint32_t nwait, ze_event_handle_t *waits) {
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (!list->immediate) {
        if (nwait) {
            fprintf(stderr, "fake libze_loader: a regular list's copies, fills and barriers wait for no event\n");
            return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
        }
        if (list->closed || list->n == 64) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        return ZE_RESULT_SUCCESS;
    }
    for (uint32_t i = 0; i < nwait; ++i)
        while (!atomic_load(&waits[i]->signaled)) sched_yield();
    return ZE_RESULT_SUCCESS;
}

/* The regular list's next command, to be filled in. */
static command *record(ze_command_list_handle_t list, int kind, ze_event_handle_t signal) {
    command *c = &list->cmds[list->n++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->signal = signal;
    return c;
}

static ze_result_t do_copy(void *dst, const void *src, size_t size, fake_device *q) {
    size_t run = 0;
    int dst_dev = vmm_view((uintptr_t)dst, &run) != NULL, src_dev = vmm_view((uintptr_t)src, &run) != NULL;
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (dst_dev && src_dev) {
        /* Device to device: the list's GPU must reach both memories. */
        int from = vmm_device_at((uintptr_t)src), to = vmm_device_at((uintptr_t)dst);
        if (!peer_link(q->ordinal, from) || !peer_link(q->ordinal, to)) {
            fprintf(stderr, "fake libze_loader: GPU %d copies from GPU %d's memory to GPU %d's without a peer link\n",
                    q->ordinal, from, to);
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        }
        r = (ze_result_t)vmm_queue_between(q, (uintptr_t)dst, (uintptr_t)src, size);
    } else if (dst_dev) {
        vmm_check_host(src, size, "zeCommandListAppendMemoryCopy");
        note_host_side(src);
        r = (ze_result_t)vmm_queue(q, (uintptr_t)dst, (unsigned char *)src, size, 1, 0, 0);
    } else if (src_dev) {
        vmm_check_host(dst, size, "zeCommandListAppendMemoryCopy");
        note_host_side(dst);
        r = (ze_result_t)vmm_queue(q, (uintptr_t)src, (unsigned char *)dst, size, 0, 0, 0);
    } else {
        drain_all();
        memmove(dst, src, size);
    }
    return r;
}

/* The double's kernels are host functions: a cooperative launch is an
 * ordinary one, and an indirect one reads its group counts at the append. */
ENTRY(zeCommandListAppendLaunchCooperativeKernel, ze_command_list_handle_t list, ze_kernel_handle_t k,
      const ze_group_count_t *groups, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    COUNT();
    return fake_zeCommandListAppendLaunchKernel(list, k, groups, signal, nwait, waits);
}

ENTRY(zeCommandListAppendLaunchKernelIndirect, ze_command_list_handle_t list, ze_kernel_handle_t k,
      const ze_group_count_t *groups, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    COUNT();
    return fake_zeCommandListAppendLaunchKernel(list, k, groups, signal, nwait, waits);
}

ENTRY(zeCommandListAppendLaunchMultipleKernelsIndirect, ze_command_list_handle_t list, uint32_t count,
      ze_kernel_handle_t *kernels, const uint32_t *count_buffer, const ze_group_count_t *groups,
      ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    COUNT();
    if (!kernels || !count_buffer || !groups) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint32_t n = *count_buffer < count ? *count_buffer : count;
    for (uint32_t i = 0; i < n; ++i) {
        ze_result_t r = fake_zeCommandListAppendLaunchKernel(list, kernels[i], &groups[i], i + 1 == n ? signal : NULL,
                                                             i == 0 ? nwait : 0, i == 0 ? waits : NULL);
        if (r != ZE_RESULT_SUCCESS) return r;
    }
    return ZE_RESULT_SUCCESS;
}

ENTRY(zeCommandListAppendMemoryCopy, ze_command_list_handle_t list, void *dst, const void *src, size_t size,
      ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    COUNT();
    NOT_LOST();
    if (!dst || !src) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t refused;
    if (copy_append_refused(&refused)) return refused;
    ze_result_t checked = check_append(list, nwait, waits);
    if (checked != ZE_RESULT_SUCCESS) return checked;
    if (!list->immediate) {
        command *c = record(list, CMD_COPY, signal);
        c->dst = dst;
        c->src = src;
        c->size = size;
        return ZE_RESULT_SUCCESS;
    }
    fake_device *q = queue_of(list->dev, list->copy_only);
    ze_result_t r = do_copy(dst, src, size, q);
    return r == ZE_RESULT_SUCCESS ? signal_after(signal, q) : r;
}

/* A region: one copy per row (depth 1 when the slice pitches are 0). */
ENTRY(zeCommandListAppendMemoryCopyRegion, ze_command_list_handle_t list, void *dst, const ze_copy_region_t *dst_region,
      uint32_t dst_pitch, uint32_t dst_slice, const void *src, const ze_copy_region_t *src_region, uint32_t src_pitch,
      uint32_t src_slice, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    COUNT();
    NOT_LOST();
    if (!dst || !src || !dst_region || !src_region) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (dst_region->width != src_region->width || dst_region->height != src_region->height ||
        dst_region->depth != src_region->depth || dst_region->width > dst_pitch || src_region->width > src_pitch)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    ze_result_t refused;
    if (copy_append_refused(&refused)) return refused;
    ze_result_t checked = check_append(list, nwait, waits);
    if (checked != ZE_RESULT_SUCCESS) return checked;
    fake_device *q = queue_of(list->dev, list->copy_only);
    const uint32_t rows = src_region->height, slices = src_region->depth ? src_region->depth : 1;
    for (uint32_t z = 0; z < slices; ++z)
        for (uint32_t y = 0; y < rows; ++y) {
            char *d = (char *)dst + (size_t)(dst_region->originZ + z) * dst_slice +
                      (size_t)(dst_region->originY + y) * dst_pitch + dst_region->originX;
            const char *s = (const char *)src + (size_t)(src_region->originZ + z) * src_slice +
                            (size_t)(src_region->originY + y) * src_pitch + src_region->originX;
            const int last = z + 1 == slices && y + 1 == rows;
            if (!list->immediate) {
                command *c = record(list, CMD_COPY, last ? signal : NULL);
                c->dst = d;
                c->src = s;
                c->size = src_region->width;
                continue;
            }
            ze_result_t r = do_copy(d, s, src_region->width, q);
            if (r != ZE_RESULT_SUCCESS) return r;
        }
    return list->immediate ? signal_after(signal, q) : ZE_RESULT_SUCCESS;
}

static ze_result_t do_fill(void *ptr, const void *pattern, size_t pattern_size, size_t size, fake_device *q) {
    size_t run = 0;
    if (!vmm_view((uintptr_t)ptr, &run)) {
        drain_all();
        for (size_t i = 0; i < size; i += pattern_size) memcpy((char *)ptr + i, pattern, pattern_size);
        return ZE_RESULT_SUCCESS;
    }
    if (pattern_size != 1) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; /* device fills are bytes in the double */
    return (ze_result_t)vmm_queue(q, (uintptr_t)ptr, NULL, size, 1, 1, *(const unsigned char *)pattern);
}

ENTRY(zeCommandListAppendMemoryFill, ze_command_list_handle_t list, void *ptr, const void *pattern,
      size_t pattern_size, size_t size, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    COUNT();
    NOT_LOST();
    if (!ptr || !pattern) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t checked = check_append(list, nwait, waits);
    if (checked != ZE_RESULT_SUCCESS) return checked;
    if (!pattern_size || (pattern_size & (pattern_size - 1)) || pattern_size > 128 || size % pattern_size)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    if (!list->immediate) {
        command *c = record(list, CMD_FILL, signal);
        c->dst = ptr;
        c->size = size;
        c->pattern_size = pattern_size;
        memcpy(c->pattern, pattern, pattern_size);
        return ZE_RESULT_SUCCESS;
    }
    fake_device *q = queue_of(list->dev, list->copy_only);
    ze_result_t r = do_fill(ptr, pattern, pattern_size, size, q);
    return r == ZE_RESULT_SUCCESS ? signal_after(signal, q) : r;
}

ENTRY(zeCommandListAppendBarrier, ze_command_list_handle_t list, ze_event_handle_t signal, uint32_t nwait,
      ze_event_handle_t *waits) {
    COUNT();
    NOT_LOST();
    ze_result_t checked = check_append(list, nwait, waits);
    if (checked != ZE_RESULT_SUCCESS) return checked;
    if (!list->immediate) {
        record(list, CMD_BARRIER, signal);
        return ZE_RESULT_SUCCESS;
    }
    return signal_after(signal, queue_of(list->dev, list->copy_only));
}

/* A regular list's command at its execution. */
static ze_result_t execute(const command *c, fake_device *q) {
    ze_result_t r = ZE_RESULT_SUCCESS;
    switch (c->kind) {
    case CMD_KERNEL: submit(c, q); return ZE_RESULT_SUCCESS;
    case CMD_COPY: r = do_copy(c->dst, c->src, c->size, q); break;
    case CMD_FILL: r = do_fill(c->dst, c->pattern, c->pattern_size, c->size, q); break;
    case CMD_BARRIER: break;
    }
    return r == ZE_RESULT_SUCCESS ? signal_after(c->signal, q) : r;
}

ENTRY(zeKernelGetProperties, ze_kernel_handle_t k, ze_kernel_properties_t *props) {
    COUNT();
    if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    props->numKernelArgs = k->k.nparams;
    props->requiredGroupSizeX = props->requiredGroupSizeY = props->requiredGroupSizeZ = 0;
    return ZE_RESULT_SUCCESS;
}

/* The loader's function tables, which hand out the double's own functions.
 * As the loader does, a table of a version newer than the double's is
 * refused and left as it was; a call reaches fake_ze_calls under the
 * getter's name. */
#define TABLE(getter, Table, ...)                                                         \
    EXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, Table *t) {            \
        if (fake_count(#getter)) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;             \
        if (!t) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                              \
        if (version > ZE_API_VERSION_CURRENT) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION; \
        __VA_ARGS__                                                                       \
        return ZE_RESULT_SUCCESS;                                                         \
    }

TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t, t->pfnInit = fake_zeInit;)
TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t, t->pfnGet = fake_zeDriverGet;)
TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t, t->pfnGet = fake_zeDeviceGet;
      t->pfnGetProperties = fake_zeDeviceGetProperties; t->pfnGetMemoryProperties = fake_zeDeviceGetMemoryProperties;
      t->pfnGetCommandQueueGroupProperties = fake_zeDeviceGetCommandQueueGroupProperties;
      t->pfnCanAccessPeer = fake_zeDeviceCanAccessPeer;)
TABLE(zeGetContextProcAddrTable, ze_context_dditable_t, t->pfnCreate = fake_zeContextCreate;
      t->pfnDestroy = fake_zeContextDestroy;)
TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t, t->pfnAllocShared = fake_zeMemAllocShared;
      t->pfnAllocDevice = fake_zeMemAllocDevice; t->pfnAllocHost = fake_zeMemAllocHost; t->pfnFree = fake_zeMemFree;
      t->pfnGetAllocProperties = fake_zeMemGetAllocProperties; t->pfnGetAddressRange = fake_zeMemGetAddressRange;)
TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t, t->pfnCreate = fake_zeModuleCreate;
      t->pfnDestroy = fake_zeModuleDestroy;)
TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t, t->pfnGetString = fake_zeModuleBuildLogGetString;
      t->pfnDestroy = fake_zeModuleBuildLogDestroy;)
TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t, t->pfnCreate = fake_zeKernelCreate;
      t->pfnDestroy = fake_zeKernelDestroy; t->pfnSetArgumentValue = fake_zeKernelSetArgumentValue;
      t->pfnSetGroupSize = fake_zeKernelSetGroupSize; t->pfnGetProperties = fake_zeKernelGetProperties;)
TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t, t->pfnCreate = fake_zeCommandQueueCreate;
      t->pfnDestroy = fake_zeCommandQueueDestroy; t->pfnExecuteCommandLists = fake_zeCommandQueueExecuteCommandLists;
      t->pfnSynchronize = fake_zeCommandQueueSynchronize;)
TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t, t->pfnCreate = fake_zeCommandListCreate;
      t->pfnCreateImmediate = fake_zeCommandListCreateImmediate; t->pfnClose = fake_zeCommandListClose;
      t->pfnReset = fake_zeCommandListReset; t->pfnDestroy = fake_zeCommandListDestroy;
      t->pfnAppendLaunchKernel = fake_zeCommandListAppendLaunchKernel;
      t->pfnAppendLaunchCooperativeKernel = fake_zeCommandListAppendLaunchCooperativeKernel;
      t->pfnAppendLaunchKernelIndirect = fake_zeCommandListAppendLaunchKernelIndirect;
      t->pfnAppendLaunchMultipleKernelsIndirect = fake_zeCommandListAppendLaunchMultipleKernelsIndirect;
      t->pfnAppendMemoryPrefetch = fake_zeCommandListAppendMemoryPrefetch;
      t->pfnAppendMemAdvise = fake_zeCommandListAppendMemAdvise;
      t->pfnAppendMemoryCopy = fake_zeCommandListAppendMemoryCopy;
      t->pfnAppendMemoryCopyRegion = fake_zeCommandListAppendMemoryCopyRegion;
      t->pfnAppendMemoryFill = fake_zeCommandListAppendMemoryFill; t->pfnAppendBarrier = fake_zeCommandListAppendBarrier;)
TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t, t->pfnCreate = fake_zeFenceCreate;
      t->pfnDestroy = fake_zeFenceDestroy; t->pfnHostSynchronize = fake_zeFenceHostSynchronize;
      t->pfnQueryStatus = fake_zeFenceQueryStatus;)
TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t, t->pfnCreate = fake_zeEventPoolCreate;
      t->pfnDestroy = fake_zeEventPoolDestroy;)
TABLE(zeGetEventProcAddrTable, ze_event_dditable_t, t->pfnCreate = fake_zeEventCreate;
      t->pfnDestroy = fake_zeEventDestroy; t->pfnHostSignal = fake_zeEventHostSignal;
      t->pfnHostReset = fake_zeEventHostReset; t->pfnHostSynchronize = fake_zeEventHostSynchronize;
      t->pfnQueryStatus = fake_zeEventQueryStatus;)
TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t, t->pfnReserve = fake_zeVirtualMemReserve;
      t->pfnFree = fake_zeVirtualMemFree;
      t->pfnQueryPageSize = fake_zeVirtualMemQueryPageSize; t->pfnMap = fake_zeVirtualMemMap;
      t->pfnUnmap = fake_zeVirtualMemUnmap; t->pfnSetAccessAttribute = fake_zeVirtualMemSetAccessAttribute;)
TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t, t->pfnCreate = fake_zePhysicalMemCreate;
      t->pfnDestroy = fake_zePhysicalMemDestroy;)
