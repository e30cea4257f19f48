/*
 * A test double of the CUDA driver (libcuda.so.1): the entry points the
 * tests use, with the driver's signatures (from the toolkit's cuda.h) and
 * its error codes for bad input, over fake_device.h.  Memory from
 * cuMemAlloc and cuMemAllocManaged is host memory (as an integrated device
 * would have it); memory from the virtual-memory API is a discrete device's
 * (fake_vmm.h).  Kernels are host functions found by name.
 * fake_cuda_calls(name) says how many calls of an entry point reached it.
 */
#define CUDA_ENABLE_DEPRECATED 1 /* the deprecated launch is defined here too */
#include <cuda.h>

#include <stdio.h>

#define VMM_OK CUDA_SUCCESS
#define VMM_EINVAL CUDA_ERROR_INVALID_VALUE
#define VMM_ENOMEM CUDA_ERROR_OUT_OF_MEMORY
#define VMM_EALREADY CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
#define VMM_ENOTREG CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
#define VMM_ELAUNCH CUDA_ERROR_LAUNCH_FAILED
#define VMM_FAULT CUDA_ERROR_ILLEGAL_ADDRESS
#define VMM_DRIVER "fake libcuda"
#define VMM_MEMORY_ENV "FAKE_CUDA_MEMORY"
#define VMM_GRANULE_ENV "FAKE_CUDA_GRANULE"
#define FAKE_FAIL_ENV "FAKE_CUDA_FAIL"
#include "fake_vmm.h"

/* A host function (cuLaunchHostFunc), or a stream callback
 * (cuStreamAddCallback), which the driver calls with the context's error. */
typedef struct vmm_host_fn {
    CUhostFn fn;
    CUstreamCallback callback;
    CUstream stream;
    atomic_int *error;
    void *data;
} vmm_host_fn;

static void vmm_do_host_fn(void *arg) {
    vmm_host_fn *h = (vmm_host_fn *)arg;
    if (h->callback) h->callback(h->stream, (CUresult)atomic_load(h->error), h->data);
    else if (!atomic_load(h->error)) h->fn(h->data);
    free(h);
}

#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                     unsigned int by, unsigned int bz, unsigned int shared, CUstream s,
                                     void **params, void **extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s);

#define EXPORT __attribute__((visibility("default")))
/* A test's hook, told of driver entries as they are called (with the
 * thread that calls them): a test asks where the runtime calls from. */
static void (*_Atomic entry_hook)(const char *);
EXPORT void fake_cuda_set_entry_hook(void (*hook)(const char *)) { entry_hook = hook; }
static void entered(const char *name) {
    void (*hook)(const char *) = entry_hook;
    if (hook) hook(name);
}
/* Each entry point's first statement: counts the call, tells the hook, and
 * fails it when FAKE_CUDA_FAIL asks. */
#define COUNT()                                                    \
    do {                                                           \
        if (fake_count(__func__)) return CUDA_ERROR_OUT_OF_MEMORY; \
        entered(__func__);                                         \
    } while (0)

static int run_kernel(const fake_job *j);
/* Each GPU's own queue (the legacy and per-thread default streams). */
#define DEVICE_QUEUE(i) \
    {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .run_kernel = run_kernel, .ordinal = (i)}
static fake_device devices[VMM_DEVICES] = {DEVICE_QUEUE(0), DEVICE_QUEUE(1), DEVICE_QUEUE(2), DEVICE_QUEUE(3)};
static atomic_int initialized;
static int primary_context[VMM_DEVICES];  /* their addresses are the context handles */
static atomic_long primary_retained, streams_live, events_live;
/* The calling thread's context stack (its top is current). */
static __thread CUcontext context_stack[8];
static __thread int context_depth;
#define current_ctx (context_depth ? context_stack[context_depth - 1] : (CUcontext)NULL)

/* GPUs the double has: FAKE_CUDA_DEVICES (1 to 4, default 1). */
static int gpu_count(void) {
    const char *v = fake_getenv("FAKE_CUDA_DEVICES");
    int n = v ? atoi(v) : 1;
    return n < 1 ? 1 : n > VMM_DEVICES ? VMM_DEVICES : n;
}
static int ordinal_of(CUcontext c) {
    for (int i = 0; i < gpu_count(); ++i)
        if (c == (CUcontext)&primary_context[i]) return i;
    return -1;
}
/* The GPU of the calling thread's context (the first without one). */
static int current_gpu(void) {
    int o = ordinal_of(current_ctx);
    return o < 0 ? 0 : o;
}

struct CUmod_st {
    char image[4096];
    /* Its functions, made at their first cuModuleGetFunction: the driver
     * hands out one handle per name for the module's life. */
    fake_kernel *functions[64];
};
/* An event's records are numbered: a wait or a synchronisation is for the
 * record last made before it, as the real driver's are, not for whichever
 * record is the latest when it runs. */
struct CUevent_st {
    _Atomic unsigned long recorded, completed;
};
/* Each stream is an in-order queue with a worker of its own, so waiting
 * for one stream never waits for another's host functions; the legacy and
 * per-thread default streams are the device's own queue. */
struct CUstream_st {
    fake_device q;
    struct CUgraph_st *capture; /* the graph its launches go into while it captures */
    int capture_broken;         /* a call not allowed while it captures was made: the capture fails */
    struct CUstream_st *next;
};
static struct CUstream_st *streams;
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int vmm_active;  /* kernels run as a discrete device's, once memory is mapped */

static fake_device *queue_of(CUstream s) {
    return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD ? &s->q : &devices[current_gpu()];
}

static void drain_all(void) {
    for (int i = 0; i < VMM_DEVICES; ++i) fake_drain(&devices[i]);
    pthread_mutex_lock(&streams_mu);
    for (struct CUstream_st *s = streams; s; s = s->next) fake_drain(&s->q);
    pthread_mutex_unlock(&streams_mu);
}

EXPORT long fake_cuda_calls(const char *name) { return fake_count_of(name); }
EXPORT const char *fake_cuda_entry(int i, long *calls) { return fake_entry(i, calls); }

static int run_kernel(const fake_job *j) {
    if (atomic_load(&vmm_active)) return vmm_run_kernel(j, fake_queue_ordinal);
    gpu_run_grid(j->kernel.fn, j->grid, j->block, (void **)j->args);
    return 0;
}
/* What the discrete device holds, for the tests. */
EXPORT size_t fake_cuda_device_bytes(void) { return vmm_used; }
EXPORT size_t fake_cuda_device_bytes_on(int gpu) { return gpu >= 0 && gpu < VMM_DEVICES ? vmm_used_on[gpu] : 0; }
EXPORT long fake_cuda_pinned_bytes(void) { return atomic_load(&vmm_pinned); }
EXPORT long fake_cuda_pinned_made_bytes(void) { return atomic_load(&vmm_pinned_made); }
EXPORT long fake_cuda_registrations(void) { return atomic_load(&vmm_registrations); }
EXPORT long fake_cuda_pageable_copies(void) { return atomic_load(&vmm_pageable_copies); }
/* What the program still holds of the driver's: "contexts" (primary
   context references), "streams", "events", "reservations" (address
   ranges), "device bytes" or "pinned bytes"; -1 for another name. */
EXPORT long fake_cuda_held(const char *what) {
    if (strcmp(what, "contexts") == 0) return atomic_load(&primary_retained);
    if (strcmp(what, "streams") == 0) return atomic_load(&streams_live);
    if (strcmp(what, "events") == 0) return atomic_load(&events_live);
    if (strcmp(what, "device bytes") == 0) return (long)vmm_used;
    if (strcmp(what, "pinned bytes") == 0) return atomic_load(&vmm_pinned);
    return strcmp(what, "reservations") == 0 ? vmm_reservations() : -1;
}
EXPORT int fake_cuda_is_reserved(const void *p) {
    pthread_mutex_lock(&vmm_mu);
    int r = vmm_in_reserved((uintptr_t)p, 1);
    pthread_mutex_unlock(&vmm_mu);
    return r;
}

#define NEED_INIT()                                               \
    do {                                                          \
        if (!atomic_load(&initialized)) return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)
/* After a kernel fault the context is gone, as on the real driver. */
#define STICKY()                                                              \
    do {                                                                      \
        if (atomic_load(&devices[current_gpu()].error)) return (CUresult)atomic_load(&devices[current_gpu()].error); \
    } while (0)

EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
    COUNT();
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&initialized, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDriverGetVersion(int *v) {
    COUNT();
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = CUDA_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
    COUNT();
    NEED_INIT();
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= gpu_count()) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    COUNT();
    NEED_INIT();
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    if (d < 0 || d >= gpu_count()) return CUDA_ERROR_INVALID_DEVICE;
    *c = (CUcontext)&primary_context[d];
    atomic_fetch_add(&primary_retained, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice d) {
    COUNT();
    NEED_INIT();
    if (d < 0 || d >= gpu_count()) return CUDA_ERROR_INVALID_DEVICE;
    if (atomic_fetch_sub(&primary_retained, 1) <= 0) {
        atomic_fetch_add(&primary_retained, 1);
        fprintf(stderr, "fake cuda: cuDevicePrimaryCtxRelease without a retain\n");
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
    COUNT();
    NEED_INIT();
    if (c != NULL && ordinal_of(c) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (!c) context_depth = context_depth ? context_depth - 1 : 0;
    else if (context_depth) context_stack[context_depth - 1] = c;
    else context_stack[context_depth++] = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) {
    COUNT();
    NEED_INIT();
    if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *mod = (struct CUmod_st *)calloc(1, sizeof *mod);
    snprintf(mod->image, sizeof mod->image, "%s", (const char *)image);
    *m = mod;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    COUNT();
    NEED_INIT();
    if (!f || !m || !name) return CUDA_ERROR_INVALID_VALUE;
    fake_kernel k;
    if (!fake_module_find(m->image, name, &k)) return CUDA_ERROR_NOT_FOUND;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    int i = 0;
    for (; i < 64 && m->functions[i]; ++i)
        if (strcmp(m->functions[i]->name, k.name) == 0) break;
    if (i == 64) {
        pthread_mutex_unlock(&mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!m->functions[i]) {
        m->functions[i] = (fake_kernel *)malloc(sizeof k);
        *m->functions[i] = k;
    }
    *f = (CUfunction)m->functions[i];
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction f) {
    COUNT();
    if (!name || !f) return CUDA_ERROR_INVALID_VALUE;
    *name = ((fake_kernel *)f)->name;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags) {
    COUNT();
    NEED_INIT();
    if (!p || n == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) return CUDA_ERROR_INVALID_VALUE;
    void *m = fake_alloc(n);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)m;
    return CUDA_SUCCESS;
}

/* Page-locked host memory: in the double, host memory the kernels see. */
EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **p, size_t n) {
    COUNT();
    NEED_INIT();
    if (!p || n == 0) return CUDA_ERROR_INVALID_VALUE;
    void *m = fake_alloc(n);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemFreeHost(void *p) {
    COUNT();
    NEED_INIT();
    drain_all();
    return fake_free(p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t n) {
    COUNT();
    NEED_INIT();
    if (!p || n == 0) return CUDA_ERROR_INVALID_VALUE;
    void *m = fake_alloc(n);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
    COUNT();
    NEED_INIT();
    if (p == 0) return CUDA_SUCCESS;
    drain_all();  /* cuMemFree waits for the device */
    return fake_free((void *)p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* CUDA graphs by stream capture: a capturing stream records its kernel
 * launches (their arguments copied, as at a launch), copies and byte fills;
 * a launch of the graph queues them in order on the stream it names.  A
 * synchronisation of a capturing stream fails and breaks the capture, as
 * the real driver's does. */
#define FAKE_GRAPH_NODES 64
typedef struct {
    fake_job *kernel;      /* a kernel, or NULL: a host function, a copy (src set) or a fill */
    CUhostFn host;
    void *host_data;
    CUdeviceptr dst, src;  /* device memory (mapped by the VMM API) or host memory, as the address says */
    size_t n;
    unsigned char value;
} fake_node;
struct CUgraph_st {
    fake_node nodes[FAKE_GRAPH_NODES];
    int n;
};
struct CUgraphExec_st {
    struct CUgraph_st *graph;
};

static int real_stream(CUstream s) { return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD; }

static CUresult record(struct CUgraph_st *g, const fake_kernel *k, gpu_dim grid, gpu_dim block, void **params) {
    if (g->n == FAKE_GRAPH_NODES) return CUDA_ERROR_OUT_OF_MEMORY;
    fake_job *j = (fake_job *)calloc(1, sizeof *j);
    j->kernel = *k;
    j->has_kernel = 1;
    j->grid = grid;
    j->block = block;
    size_t off = 0;
    for (unsigned i = 0; i < k->nparams; ++i) {
        memcpy(j->argbuf + off, params[i], k->sizes[i]);
        j->args[i] = j->argbuf + off;
        off += (k->sizes[i] + 15) / 16 * 16;
    }
    g->nodes[g->n++].kernel = j;
    return CUDA_SUCCESS;
}

static CUresult record_copy(struct CUgraph_st *g, CUdeviceptr dst, CUdeviceptr src, size_t n, int fill,
                            unsigned char value) {
    if (g->n == FAKE_GRAPH_NODES) return CUDA_ERROR_OUT_OF_MEMORY;
    fake_node node = {NULL, NULL, NULL, dst, fill ? 0 : src, n, value};
    g->nodes[g->n++] = node;
    return CUDA_SUCCESS;
}

/* The graph a stream-ordered call on s goes into, if s is capturing. */
static struct CUgraph_st *capturing(CUstream s) { return real_stream(s) ? s->capture : NULL; }

/* Where a node's address lies for the worker: device memory's view, or the
 * address itself (host memory, or cuMemAlloc's, which is in the process). */
static unsigned char *resolve(CUdeviceptr p) {
    size_t run = 0;
    unsigned char *view = vmm_view((uintptr_t)p, &run);
    return view ? view : (unsigned char *)p;
}

static void run_node(void *arg) {
    fake_node *node = (fake_node *)arg;
    if (node->src) memmove(resolve(node->dst), resolve(node->src), node->n);
    else memset(resolve(node->dst), node->value, node->n);
    free(node);
}

/* The offset of parameter `index` in a packed argument buffer (the
 * double's layout: each parameter 8-byte aligned). */
static size_t param_offset(const fake_kernel *k, size_t index) {
    size_t off = 0;
    for (size_t i = 0; i < index; ++i) off = (off + k->sizes[i] + 7) / 8 * 8;
    return off;
}

/* Arguments packed in `extra` (a buffer and its size), as the driver reads
 * them: pointers into the buffer, one per parameter. */
static CUresult unpack_extra(const fake_kernel *k, void **params, void **extra, void **out) {
    const char *buffer = NULL;
    const size_t *size = NULL;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = (const char *)extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = (const size_t *)extra[i + 1];
        else return CUDA_ERROR_INVALID_VALUE;
    }
    if (params || !buffer || !size) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < k->nparams; ++i) {
        size_t off = param_offset(k, i);
        if (off + k->sizes[i] > *size) return CUDA_ERROR_INVALID_VALUE;
        out[i] = (void *)(buffer + off);
    }
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, gpu_dim grid, gpu_dim block, CUstream s, void **params, void **extra) {
    NEED_INIT();
    STICKY();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    const fake_kernel *k = (const fake_kernel *)f;
    void *unpacked[FAKE_MAX_PARAMS];
    if (extra && extra[0] != CU_LAUNCH_PARAM_END) {
        CUresult r = unpack_extra(k, params, extra, unpacked);
        if (r != CUDA_SUCCESS) return r;
        params = unpacked;
    }
    if (k->nparams && !params) return CUDA_ERROR_INVALID_VALUE;
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z) return CUDA_ERROR_INVALID_VALUE;
    if (real_stream(s) && s->capture) return record(s->capture, k, grid, block, params);
    fake_submit(queue_of(s), k, grid, block, params, NULL);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
    COUNT();
    NEED_INIT();
    (void)mode;
    if (!real_stream(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
    s->capture = (struct CUgraph_st *)calloc(1, sizeof *s->capture);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g) {
    COUNT();
    NEED_INIT();
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    if (!real_stream(s) || !s->capture) return CUDA_ERROR_ILLEGAL_STATE;
    *g = s->capture;
    s->capture = NULL;
    if (s->capture_broken) {
        s->capture_broken = 0;
        cuGraphDestroy(*g);
        *g = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
    COUNT();
    NEED_INIT();
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    *status = real_stream(s) && s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags) {
    COUNT();
    NEED_INIT();
    (void)flags;
    if (!e || !g) return CUDA_ERROR_INVALID_VALUE;
    *e = (CUgraphExec)calloc(1, sizeof **e);
    (*e)->graph = g;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec e, CUstream s) {
    COUNT();
    NEED_INIT();
    STICKY();
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < e->graph->n; ++i) {
        const fake_job *node = e->graph->nodes[i].kernel;
        if (!node && e->graph->nodes[i].host) {
            vmm_host_fn *h = (vmm_host_fn *)calloc(1, sizeof *h);
            h->fn = e->graph->nodes[i].host;
            h->data = e->graph->nodes[i].host_data;
            h->error = &devices[current_gpu()].error;
            fake_submit_owned_work(queue_of(s), vmm_do_host_fn, h);
            continue;
        }
        if (!node) {
            fake_node *copy = (fake_node *)malloc(sizeof *copy);
            *copy = e->graph->nodes[i];
            fake_submit_owned_work(queue_of(s), run_node, copy);
            continue;
        }
        fake_job *j = (fake_job *)malloc(sizeof *j);
        memcpy(j, node, sizeof *j);
        for (unsigned a = 0; a < node->kernel.nparams; ++a)
            j->args[a] = j->argbuf + ((unsigned char *)node->args[a] - node->argbuf);
        fake_enqueue(queue_of(s), j);
    }
    return CUDA_SUCCESS;
}

/* Graphs built node by node: nodes run in the order they were added (the
 * tests add each after the one before).  A copy node takes a contiguous
 * copy (one row); a fill node bytes. */
EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph *g, unsigned int flags) {
    COUNT();
    NEED_INIT();
    if (!g || flags) return CUDA_ERROR_INVALID_VALUE;
    *g = (struct CUgraph_st *)calloc(1, sizeof **g);
    return CUDA_SUCCESS;
}

static CUgraphNode last_node(CUgraph g) { return (CUgraphNode)&g->nodes[g->n - 1]; }

EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                                const CUDA_KERNEL_NODE_PARAMS *p) {
    COUNT();
    NEED_INIT();
    (void)deps, (void)ndeps;
    if (!node || !g || !p || !p->func) return CUDA_ERROR_INVALID_VALUE;
    const fake_kernel *k = (const fake_kernel *)p->func;
    if (k->nparams && !p->kernelParams) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = record(g, k, (gpu_dim){p->gridDimX, p->gridDimY, p->gridDimZ},
                        (gpu_dim){p->blockDimX, p->blockDimY, p->blockDimZ}, p->kernelParams);
    if (r == CUDA_SUCCESS) *node = last_node(g);
    return r;
}

/* A copy node's sides, checked as the driver's pitfalls would bite. */
static CUresult copy_sides(const CUDA_MEMCPY3D *c, const char *fn, CUdeviceptr *dst, CUdeviceptr *src, size_t *n) {
    if (!c || c->Height > 1 || c->Depth > 1 || c->srcXInBytes || c->dstXInBytes || c->srcY || c->dstY ||
        c->srcZ || c->dstZ)
        return CUDA_ERROR_NOT_SUPPORTED;
    *n = c->WidthInBytes;
    if (c->srcMemoryType == CU_MEMORYTYPE_HOST) vmm_check_host(c->srcHost, *n, fn), *src = (CUdeviceptr)c->srcHost;
    else if (c->srcMemoryType == CU_MEMORYTYPE_DEVICE) *src = c->srcDevice;
    else return CUDA_ERROR_NOT_SUPPORTED;
    if (c->dstMemoryType == CU_MEMORYTYPE_HOST) vmm_check_host(c->dstHost, *n, fn), *dst = (CUdeviceptr)c->dstHost;
    else if (c->dstMemoryType == CU_MEMORYTYPE_DEVICE) *dst = c->dstDevice;
    else return CUDA_ERROR_NOT_SUPPORTED;
    return *src && *dst ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                             const CUDA_MEMCPY3D *p, CUcontext ctx) {
    COUNT();
    NEED_INIT();
    (void)deps, (void)ndeps, (void)ctx;
    CUdeviceptr dst, src;
    size_t n;
    if (!node || !g) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = copy_sides(p, "cuGraphAddMemcpyNode", &dst, &src, &n);
    if (r == CUDA_SUCCESS) r = record_copy(g, dst, src, n, 0, 0);
    if (r == CUDA_SUCCESS) *node = last_node(g);
    return r;
}

EXPORT CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_MEMCPY3D *p,
                                                       CUcontext ctx) {
    COUNT();
    NEED_INIT();
    (void)ctx;
    fake_node *at = (fake_node *)node;
    CUdeviceptr dst, src;
    size_t n;
    if (!e || !at || at->kernel || at->host || !at->src) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = copy_sides(p, "cuGraphExecMemcpyNodeSetParams", &dst, &src, &n);
    if (r == CUDA_SUCCESS) at->dst = dst, at->src = src, at->n = n;
    return r;
}

EXPORT CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                             const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
    COUNT();
    NEED_INIT();
    (void)deps, (void)ndeps, (void)ctx;
    if (!node || !g || !p || !p->dst) return CUDA_ERROR_INVALID_VALUE;
    if (p->elementSize != 1 || p->height > 1) return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = record_copy(g, p->dst, 0, p->width, 1, (unsigned char)p->value);
    if (r == CUDA_SUCCESS) *node = last_node(g);
    return r;
}

EXPORT CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                           const CUDA_HOST_NODE_PARAMS *p) {
    COUNT();
    NEED_INIT();
    (void)deps, (void)ndeps;
    if (!node || !g || !p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
    if (g->n == FAKE_GRAPH_NODES) return CUDA_ERROR_OUT_OF_MEMORY;
    fake_node host = {NULL, p->fn, p->userData, 0, 0, 0, 0};
    g->nodes[g->n++] = host;
    *node = last_node(g);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) {
    COUNT();
    free(e);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
    COUNT();
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    drain_all(); /* (a launched graph's jobs are copies; this keeps it simple) */
    for (int i = 0; i < g->n; ++i) free(g->nodes[i].kernel);
    free(g);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                       unsigned int by, unsigned int bz, unsigned int shared, CUstream s,
                                       void **params, void **extra) {
    COUNT();
    (void)shared;
    return launch(f, (gpu_dim){gx, gy, gz}, (gpu_dim){bx, by, bz}, s, params, extra);
}

EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                            CUstream s, void **params, void **extra) {
    COUNT();
    (void)shared;
    return launch(f, (gpu_dim){gx, gy, gz}, (gpu_dim){bx, by, bz}, s, params, extra);
}

/* Launches whose attributes (or kind) the double keeps no use for are
 * counted apart, so that a test sees them reach it as the program made them. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    if (c->numAttrs && fake_count("cuLaunchKernelEx with attributes")) return CUDA_ERROR_OUT_OF_MEMORY;
    return launch(f, (gpu_dim){c->gridDimX, c->gridDimY, c->gridDimZ}, (gpu_dim){c->blockDimX, c->blockDimY, c->blockDimZ},
                  c->hStream, params, extra);
}

EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                  unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                                  CUstream s, void **params) {
    COUNT();
    (void)shared;
    return launch(f, (gpu_dim){gx, gy, gz}, (gpu_dim){bx, by, bz}, s, params, NULL);
}

EXPORT CUresult CUDAAPI cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, unsigned int count,
                                                             unsigned int flags) {
    COUNT();
    (void)flags;
    if (!list || !count) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; ++i) {
        const CUDA_LAUNCH_PARAMS *l = &list[i];
        CUresult r = launch(l->function, (gpu_dim){l->gridDimX, l->gridDimY, l->gridDimZ},
                            (gpu_dim){l->blockDimX, l->blockDimY, l->blockDimZ}, l->hStream, l->kernelParams, NULL);
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

/* The deprecated launch: a function's block shape and argument buffer,
 * kept between calls (a few functions suffice for the tests). */
typedef struct legacy_setup {
    CUfunction f;
    int shaped;
    gpu_dim block;
    size_t size;
    char params[4096];
} legacy_setup;
static legacy_setup legacy[16];
static pthread_mutex_t legacy_mu = PTHREAD_MUTEX_INITIALIZER;

static legacy_setup *legacy_of(CUfunction f) {
    for (unsigned i = 0; i < sizeof legacy / sizeof legacy[0]; ++i)
        if (legacy[i].f == f || !legacy[i].f) {
            legacy[i].f = f;
            return &legacy[i];
        }
    return NULL;
}

static CUresult legacy_set(CUfunction f, int offset, const void *v, size_t n) {
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (offset < 0 || offset + n > sizeof legacy[0].params) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&legacy_mu);
    legacy_setup *l = legacy_of(f);
    if (l) {
        memcpy(l->params + offset, v, n);
        if (l->size < offset + n) l->size = offset + n;
    }
    pthread_mutex_unlock(&legacy_mu);
    return l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult CUDAAPI cuFuncSetBlockShape(CUfunction f, int x, int y, int z) {
    COUNT();
    NEED_INIT();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (x <= 0 || y <= 0 || z <= 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&legacy_mu);
    legacy_setup *l = legacy_of(f);
    if (l) l->shaped = 1, l->block = (gpu_dim){(unsigned)x, (unsigned)y, (unsigned)z};
    pthread_mutex_unlock(&legacy_mu);
    return l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult CUDAAPI cuFuncSetSharedSize(CUfunction f, unsigned int bytes) {
    COUNT();
    NEED_INIT();
    (void)bytes;
    return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult CUDAAPI cuParamSetSize(CUfunction f, unsigned int bytes) {
    COUNT();
    NEED_INIT();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (bytes > sizeof legacy[0].params) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&legacy_mu);
    legacy_setup *l = legacy_of(f);
    if (l) l->size = bytes;
    pthread_mutex_unlock(&legacy_mu);
    return l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult CUDAAPI cuParamSeti(CUfunction f, int offset, unsigned int value) {
    COUNT();
    NEED_INIT();
    return legacy_set(f, offset, &value, sizeof value);
}

EXPORT CUresult CUDAAPI cuParamSetf(CUfunction f, int offset, float value) {
    COUNT();
    NEED_INIT();
    return legacy_set(f, offset, &value, sizeof value);
}

EXPORT CUresult CUDAAPI cuParamSetv(CUfunction f, int offset, void *ptr, unsigned int bytes) {
    COUNT();
    NEED_INIT();
    if (!ptr && bytes) return CUDA_ERROR_INVALID_VALUE;
    return legacy_set(f, offset, ptr, bytes);
}

static CUresult legacy_launch(CUfunction f, int width, int height, CUstream s) {
    NEED_INIT();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (width <= 0 || height <= 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&legacy_mu);
    legacy_setup *l = legacy_of(f), copy;
    if (l) copy = *l;
    pthread_mutex_unlock(&legacy_mu);
    if (!l || !copy.shaped) return CUDA_ERROR_INVALID_VALUE;
    size_t size = copy.size;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, copy.params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    return launch(f, (gpu_dim){(unsigned)width, (unsigned)height, 1}, copy.block, s, NULL, size ? extra : NULL);
}

EXPORT CUresult CUDAAPI cuLaunch(CUfunction f) {
    COUNT();
    return legacy_launch(f, 1, 1, NULL);
}

EXPORT CUresult CUDAAPI cuLaunchGrid(CUfunction f, int width, int height) {
    COUNT();
    return legacy_launch(f, width, height, NULL);
}

EXPORT CUresult CUDAAPI cuLaunchGridAsync(CUfunction f, int width, int height, CUstream s) {
    COUNT();
    return legacy_launch(f, width, height, s);
}

EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    COUNT();
    return launch_ex(c, f, params, extra);
}

EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    COUNT();
    return launch_ex(c, f, params, extra);
}

EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
    COUNT();
    NEED_INIT();
    drain_all();
    return (CUresult)atomic_load(&devices[current_gpu()].error);
}

EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int flags) {
    COUNT();
    NEED_INIT();
    (void)flags;
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *st = (struct CUstream_st *)calloc(1, sizeof *st);
    pthread_mutex_init(&st->q.mu, NULL);
    pthread_cond_init(&st->q.cv, NULL);
    st->q.run_kernel = run_kernel;
    st->q.ordinal = current_gpu();  /* the stream of the current context's GPU */
    st->q.shared_error = &devices[st->q.ordinal].error;  /* a fault ends the whole context */
    pthread_mutex_lock(&streams_mu);
    st->next = streams;
    streams = st;
    pthread_mutex_unlock(&streams_mu);
    atomic_fetch_add(&streams_live, 1);
    *s = st;
    return CUDA_SUCCESS;
}

/* The stream's queue drains; its worker stays (parked), so it is never freed. */
EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream s) {
    COUNT();
    if (s) atomic_fetch_sub(&streams_live, 1);
    fake_drain(queue_of(s));
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s) {
    COUNT();
    NEED_INIT();
    if (capturing(s)) {
        s->capture_broken = 1;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    fake_drain(queue_of(s));
    return (CUresult)atomic_load(queue_of(s)->shared_error ? queue_of(s)->shared_error : &queue_of(s)->error);
}

EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s) {
    COUNT();
    NEED_INIT();
    fake_drain(queue_of(s));
    return (CUresult)atomic_load(queue_of(s)->shared_error ? queue_of(s)->shared_error : &queue_of(s)->error);
}

static CUresult query(CUstream s) {
    NEED_INIT();
    fake_device *q = queue_of(s);
    pthread_mutex_lock(&q->mu);
    int idle = !q->head && !q->busy;
    pthread_mutex_unlock(&q->mu);
    STICKY();
    return idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

EXPORT CUresult CUDAAPI cuStreamQuery(CUstream s) {
    COUNT();
    return query(s);
}

EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s) {
    COUNT();
    return query(s);
}

EXPORT CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int flags) {
    COUNT();
    NEED_INIT();
    (void)flags;
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    *e = (CUevent)calloc(1, sizeof(struct CUevent_st));
    atomic_fetch_add(&events_live, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) {
    COUNT();
    NEED_INIT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    fake_submit_marker(queue_of(s), &e->completed, atomic_fetch_add(&e->recorded, 1) + 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent e) {
    COUNT();
    NEED_INIT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    const unsigned long wanted = atomic_load(&e->recorded);
    while (atomic_load(&e->completed) < wanted) sched_yield();
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventQuery(CUevent e) {
    COUNT();
    NEED_INIT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    return atomic_load(&e->completed) >= atomic_load(&e->recorded) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

EXPORT CUresult CUDAAPI cuEventDestroy(CUevent e) {
    COUNT();
    if (e) atomic_fetch_sub(&events_live, 1);
    free(e);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuGetErrorName(CUresult r, const char **s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (r) {
    case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case CUDA_ERROR_INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
    default: *s = "CUDA_ERROR_OTHER"; break;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuGetErrorString(CUresult r, const char **s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    *s = r == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered"
         : r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory"
                                          : "an error of the fake driver";
    return CUDA_SUCCESS;
}

/* ---- the discrete device (fake_vmm.h) */

EXPORT CUresult CUDAAPI cuDeviceGetCount(int *n) {
    COUNT();
    NEED_INIT();
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    *n = gpu_count();
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice d) {
    COUNT();
    NEED_INIT();
    if (!name || len <= 0 || d < 0 || d >= gpu_count()) return CUDA_ERROR_INVALID_VALUE;
    if (d == 0) snprintf(name, (size_t)len, "fake discrete GPU");
    else snprintf(name, (size_t)len, "fake discrete GPU %d", d);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) {
    entered(__func__); /* (the runtime asks it first in each of its calls) */
    NEED_INIT();
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    *c = current_ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext c) {
    COUNT();
    NEED_INIT();
    if (ordinal_of(c) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (context_depth == 8) return CUDA_ERROR_INVALID_VALUE;
    context_stack[context_depth++] = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *c) {
    COUNT();
    NEED_INIT();
    if (c) *c = current_ctx;
    if (context_depth) --context_depth;
    return CUDA_SUCCESS;
}

/* Every call below needs the context current on the calling thread. */
#define NEED_CONTEXT()                                            \
    do {                                                          \
        NEED_INIT();                                              \
        if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;      \
    } while (0)

EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    COUNT();
    NEED_CONTEXT();
    if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
    *total = vmm_total();
    *free_bytes = vmm_total() - vmm_used_on[current_gpu()];
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                                      CUmemAllocationGranularity_flags flags) {
    COUNT();
    NEED_INIT();
    (void)flags;
    if (!g || !prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
    *g = VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
                                            unsigned long long flags) {
    COUNT();
    NEED_INIT();
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t at = 0;
    CUresult r = (CUresult)vmm_reserve(&at, size, align, (uintptr_t)addr);
    *p = at;
    return r;
}

EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr p, size_t size) {
    COUNT();
    NEED_INIT();
    return (CUresult)vmm_address_free((uintptr_t)p, size);
}

/* Every pair of GPUs has a peer link unless FAKE_CUDA_NO_PEER=1. */
static int peer_link(void) {
    const char *v = fake_getenv("FAKE_CUDA_NO_PEER");
    return !(v && *v == '1');
}

EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
    COUNT();
    NEED_INIT();
    if (!can || d < 0 || d >= gpu_count() || peer < 0 || peer >= gpu_count()) return CUDA_ERROR_INVALID_DEVICE;
    *can = d != peer && peer_link();
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                                    unsigned long long flags) {
    COUNT();
    NEED_CONTEXT();
    STICKY();
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        prop->location.id < 0 || prop->location.id >= gpu_count() || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!h) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t made = 0;
    CUresult r = (CUresult)vmm_create(&made, size, prop->location.id);
    *h = made;
    return r;
}

EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle h) {
    COUNT();
    NEED_INIT();
    return (CUresult)vmm_release((uintptr_t)h);
}

EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr va, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                                 unsigned long long flags) {
    COUNT();
    NEED_CONTEXT();
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = (CUresult)vmm_map((uintptr_t)va, size, offset, (uintptr_t)h);
    if (r == CUDA_SUCCESS) atomic_store(&vmm_active, 1);
    return r;
}

EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr va, size_t size) {
    COUNT();
    NEED_INIT();
    drain_all();  /* as the real one, after the work that may use it */
    return (CUresult)vmm_unmap((uintptr_t)va, size);
}

EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr va, size_t size, const CUmemAccessDesc *desc, size_t count) {
    COUNT();
    NEED_CONTEXT();
    if (!desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i)
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= gpu_count() ||
            (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE))
            return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
        /* Another GPU reaches this memory only over a peer link. */
        int holder = vmm_device_at((uintptr_t)va);
        if (holder >= 0 && holder != desc[i].location.id && !peer_link()) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) drain_all(); /* after the work that may use it */
        CUresult r = (CUresult)vmm_set_access((uintptr_t)va, size, desc[i].location.id,
                                              desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
    COUNT();
    NEED_CONTEXT();
    (void)flags;
    return (CUresult)vmm_register(p, n);
}

EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p) {
    COUNT();
    NEED_CONTEXT();
    return (CUresult)vmm_unregister(p);
}

/* Managed memory's stream association: checked as the real driver checks
 * it (the whole allocation; no single attachment to the null stream), and
 * nothing more on one device that runs every stream. */
EXPORT CUresult CUDAAPI cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t n, unsigned int flags) {
    COUNT();
    NEED_CONTEXT();
    void *base;
    size_t size;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags == CU_MEM_ATTACH_SINGLE && (!s || s == CU_STREAM_LEGACY)) return CUDA_ERROR_INVALID_VALUE;
    if (!fake_find((void *)p, &base, &size) || (void *)p != base || (n && n != size)) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Registered (or the double's pinned) host memory, as unified addressing
 * makes it: the device reaches it at the same address. */
EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags) {
    COUNT();
    NEED_CONTEXT();
    void *base;
    size_t n;
    if (!d || !p || flags != 0 || (!vmm_is_registered(p, 1) && !fake_find(p, &base, &n))) return CUDA_ERROR_INVALID_VALUE;
    *d = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    COUNT();
    NEED_CONTEXT();
    STICKY();
    if (!src) return CUDA_ERROR_INVALID_VALUE;
    vmm_check_host(src, n, "cuMemcpyHtoDAsync");
    if (capturing(s)) return record_copy(s->capture, dst, (CUdeviceptr)src, n, 0, 0);
    return (CUresult)vmm_queue(queue_of(s), (uintptr_t)dst, (unsigned char *)src, n, 1, 0, 0);
}

EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    COUNT();
    NEED_CONTEXT();
    STICKY();
    if (!dst) return CUDA_ERROR_INVALID_VALUE;
    vmm_check_host(dst, n, "cuMemcpyDtoHAsync");
    if (capturing(s)) return record_copy(s->capture, (CUdeviceptr)dst, src, n, 0, 0);
    return (CUresult)vmm_queue(queue_of(s), (uintptr_t)src, (unsigned char *)dst, n, 0, 0, 0);
}

EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
    COUNT();
    NEED_CONTEXT();
    STICKY();
    if (capturing(s)) return record_copy(s->capture, dst, 0, n, 1, value);
    return (CUresult)vmm_queue(queue_of(s), (uintptr_t)dst, NULL, n, 1, 1, value);
}

/* Synchronous copies and fills: device memory from the virtual-memory API
 * through the queue, cuMemAlloc's (host) memory directly. */
static CUresult sync_copy(void *dst, const void *src, size_t n, int dst_dev, int src_dev, const char *fn) {
    NEED_INIT();
    STICKY();
    if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
    drain_all();
    size_t run = 0;
    int dst_vmm = dst_dev && vmm_view((uintptr_t)dst, &run), src_vmm = src_dev && vmm_view((uintptr_t)src, &run);
    if (!dst_dev) vmm_check_host(dst, n, fn);
    if (!src_dev) vmm_check_host(src, n, fn);
    if (dst_vmm || src_vmm) {
        fake_device *q = &devices[current_gpu()];
        CUresult r = (CUresult)(dst_vmm && src_vmm ? vmm_queue_between(q, (uintptr_t)dst, (uintptr_t)src, n)
                                : dst_vmm          ? vmm_queue(q, (uintptr_t)dst, (unsigned char *)src, n, 1, 0, 0)
                                                   : vmm_queue(q, (uintptr_t)src, (unsigned char *)dst, n, 0, 0, 0));
        fake_drain(q);
        return r;
    }
    memmove(dst, src, n);
    return CUDA_SUCCESS;
}

/* A copy the CUDA runtime double makes by an entry of the driver's own,
 * which no preload sees (as a runtime may reach its driver): host memory
 * one side, device memory the other, as the real driver's own copies take
 * them. */
EXPORT CUresult fake_cuda_private_copy(void *dst, const void *src, size_t n, int to_device) {
    COUNT();
    return sync_copy(dst, src, n, to_device, !to_device, "the runtime's own copy");
}

EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    COUNT();
    return sync_copy((void *)dst, src, n, 1, 0, "cuMemcpyHtoD");
}

EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    COUNT();
    return sync_copy(dst, (const void *)src, n, 0, 1, "cuMemcpyDtoH");
}

/* CUDA arrays, 1D and 2D: the double's own pages (never the runtime's
 * malloc), copied to and from host or device memory, in order with the
 * work before (the asynchronous forms too). */
typedef struct {
    unsigned char *data;
    size_t bytes, row, rows; /* a row's bytes, and rows: the layout 2D and 3D copies see */
} fake_array;

static size_t format_bytes(CUarray_format f) {
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d) {
    COUNT();
    NEED_CONTEXT();
    size_t element = d ? format_bytes(d->Format) * d->NumChannels : 0;
    if (!a || !element || !d->Width || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = d->Width * (d->Height ? d->Height : 1) * element;
    fake_array *arr = (fake_array *)mmap(NULL, sizeof *arr + bytes, PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (arr == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    arr->data = (unsigned char *)(arr + 1);
    arr->bytes = bytes;
    arr->row = d->Width * element;
    arr->rows = d->Height ? d->Height : 1;
    *a = (CUarray)arr;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray a) {
    COUNT();
    NEED_CONTEXT();
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    drain_all();
    fake_array *arr = (fake_array *)a;
    munmap(arr, sizeof *arr + arr->bytes);
    return CUDA_SUCCESS;
}

static CUresult array_at(CUarray a, size_t offset, size_t n, void **at) {
    fake_array *arr = (fake_array *)a;
    if (!arr) return CUDA_ERROR_INVALID_HANDLE;
    if (offset > arr->bytes || n > arr->bytes - offset) return CUDA_ERROR_INVALID_VALUE;
    *at = arr->data + offset;
    return CUDA_SUCCESS;
}

/* dev: whether the other side is a device pointer; to_array: the direction. */
static CUresult array_copy(CUarray a, size_t offset, void *other, size_t n, int dev, int to_array, const char *fn) {
    void *at;
    CUresult r = array_at(a, offset, n, &at);
    if (r != CUDA_SUCCESS) return r;
    return to_array ? sync_copy(at, other, n, 0, dev, fn) : sync_copy(other, at, n, dev, 0, fn);
}

EXPORT CUresult CUDAAPI cuMemcpyHtoA_v2(CUarray dst, size_t offset, const void *src, size_t n) {
    COUNT();
    return array_copy(dst, offset, (void *)src, n, 0, 1, "cuMemcpyHtoA");
}
EXPORT CUresult CUDAAPI cuMemcpyAtoH_v2(void *dst, CUarray src, size_t offset, size_t n) {
    COUNT();
    return array_copy(src, offset, dst, n, 0, 0, "cuMemcpyAtoH");
}
EXPORT CUresult CUDAAPI cuMemcpyDtoA_v2(CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
    COUNT();
    return array_copy(dst, offset, (void *)src, n, 1, 1, "cuMemcpyDtoA");
}
EXPORT CUresult CUDAAPI cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
    COUNT();
    return array_copy(src, offset, (void *)dst, n, 1, 0, "cuMemcpyAtoD");
}
EXPORT CUresult CUDAAPI cuMemcpyHtoAAsync_v2(CUarray dst, size_t offset, const void *src, size_t n, CUstream s) {
    COUNT();
    (void)s;
    return array_copy(dst, offset, (void *)src, n, 0, 1, "cuMemcpyHtoAAsync");
}
EXPORT CUresult CUDAAPI cuMemcpyAtoHAsync_v2(void *dst, CUarray src, size_t offset, size_t n, CUstream s) {
    COUNT();
    (void)s;
    return array_copy(src, offset, dst, n, 0, 0, "cuMemcpyAtoHAsync");
}

/* A 3D copy row by row (a 2D copy is one slice of it). */
/* One side of a box copy: its first byte, pitches, and whether it is device
 * memory (an array is the double's own memory, and must hold the box). */
static CUresult box_side(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray array, size_t x, size_t y,
                         size_t z, size_t pitch, size_t height, const CUDA_MEMCPY3D *c, char **at, size_t *row,
                         size_t *slice, int *on_device) {
    *on_device = type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_ARRAY;
    if (type == CU_MEMORYTYPE_ARRAY) {
        const fake_array *arr = (const fake_array *)array;
        if (!arr) return CUDA_ERROR_INVALID_HANDLE;
        if (x + c->WidthInBytes > arr->row || y + c->Height > arr->rows || (z + c->Depth) * arr->rows * arr->row > arr->bytes)
            return CUDA_ERROR_INVALID_VALUE;
        pitch = arr->row;
        height = arr->rows;
        host = arr->data;
    }
    *row = pitch;
    *slice = pitch * height;
    *at = (char *)(type == CU_MEMORYTYPE_HOST || type == CU_MEMORYTYPE_ARRAY ? host : (const void *)dev) + z * *slice +
          y * pitch + x;
    return CUDA_SUCCESS;
}

/* A 3D copy row by row (a 2D copy is one slice of it). */
static CUresult copy_box(const CUDA_MEMCPY3D *c, const char *fn) {
    char *src, *dst;
    size_t src_row, src_slice, dst_row, dst_slice;
    int src_dev, dst_dev;
    CUresult r = box_side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY, c->srcZ,
                          c->srcPitch, c->srcHeight, c, &src, &src_row, &src_slice, &src_dev);
    if (r == CUDA_SUCCESS)
        r = box_side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, c->dstZ,
                     c->dstPitch, c->dstHeight, c, &dst, &dst_row, &dst_slice, &dst_dev);
    if (r != CUDA_SUCCESS) return r;
    for (size_t z = 0; z < c->Depth; ++z)
        for (size_t row = 0; row < c->Height; ++row) {
            r = sync_copy(dst + z * dst_slice + row * dst_row, src + z * src_slice + row * src_row, c->WidthInBytes,
                          dst_dev, src_dev, fn);
            if (r != CUDA_SUCCESS) return r;
        }
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *c) {
    COUNT();
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D b = {0};
    b.srcXInBytes = c->srcXInBytes, b.srcY = c->srcY, b.srcMemoryType = c->srcMemoryType;
    b.srcHost = c->srcHost, b.srcDevice = c->srcDevice, b.srcArray = c->srcArray, b.srcPitch = c->srcPitch;
    b.dstXInBytes = c->dstXInBytes, b.dstY = c->dstY, b.dstMemoryType = c->dstMemoryType;
    b.dstHost = c->dstHost, b.dstDevice = c->dstDevice, b.dstArray = c->dstArray, b.dstPitch = c->dstPitch;
    b.WidthInBytes = c->WidthInBytes, b.Height = c->Height, b.Depth = 1;
    return copy_box(&b, "cuMemcpy2D");
}

EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s) {
    (void)s;
    return cuMemcpy2D_v2(c);
}

EXPORT CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D *c) {
    COUNT();
    return c ? copy_box(c, "cuMemcpy3D") : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult CUDAAPI cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *c) {
    COUNT();
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    /* One device: the contexts change nothing. */
    CUDA_MEMCPY3D b = {0};
    b.srcXInBytes = c->srcXInBytes, b.srcY = c->srcY, b.srcZ = c->srcZ, b.srcMemoryType = c->srcMemoryType;
    b.srcHost = c->srcHost, b.srcDevice = c->srcDevice, b.srcPitch = c->srcPitch, b.srcHeight = c->srcHeight;
    b.dstXInBytes = c->dstXInBytes, b.dstY = c->dstY, b.dstZ = c->dstZ, b.dstMemoryType = c->dstMemoryType;
    b.dstHost = c->dstHost, b.dstDevice = c->dstDevice, b.dstPitch = c->dstPitch, b.dstHeight = c->dstHeight;
    b.WidthInBytes = c->WidthInBytes, b.Height = c->Height, b.Depth = c->Depth;
    return copy_box(&b, "cuMemcpy3DPeer");
}

EXPORT CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
    COUNT();
    (void)dc, (void)sc;  /* the addresses say whose memory it is */
    return sync_copy((void *)dst, (const void *)src, n, 1, 1, "cuMemcpyPeer");
}

/* Unified addressing: a generic copy's address that device memory is
 * mapped at is device memory; any other is host memory. */
static int is_device(CUdeviceptr p) {
    size_t run = 0;
    return vmm_view((uintptr_t)p, &run) != NULL;
}

EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    COUNT();
    return sync_copy((void *)dst, (const void *)src, n, is_device(dst), is_device(src), "cuMemcpy");
}

EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    if (capturing(s)) {
        COUNT();
        NEED_CONTEXT();
        STICKY();
        if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
        if (!is_device(dst)) vmm_check_host((const void *)dst, n, "cuMemcpyAsync");
        if (!is_device(src)) vmm_check_host((const void *)src, n, "cuMemcpyAsync");
        return record_copy(s->capture, dst, src, n, 0, 0);
    }
    return cuMemcpy(dst, src, n);
}

/* A batch of 3D copies between pointers (element size 1: extents and row
 * lengths in bytes; a row length or layer height of 0 is the extent's),
 * one after the other; CUDA arrays are not the double's. */
EXPORT CUresult CUDAAPI cuMemcpy3DBatchAsync_v2(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                                CUstream s) {
    COUNT();
    (void)flags, (void)s;
    if (nops && !ops) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < nops; ++i) {
        const CUDA_MEMCPY3D_BATCH_OP *op = &ops[i];
        if (op->src.type != CU_MEMCPY_OPERAND_TYPE_POINTER || op->dst.type != CU_MEMCPY_OPERAND_TYPE_POINTER)
            return CUDA_ERROR_NOT_SUPPORTED;
        if (!op->extent.width || !op->extent.height || !op->extent.depth) return CUDA_ERROR_INVALID_VALUE;
        CUDA_MEMCPY3D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = op->src.op.ptr.ptr;
        c.dstDevice = op->dst.op.ptr.ptr;
        c.srcPitch = op->src.op.ptr.rowLength ? op->src.op.ptr.rowLength : op->extent.width;
        c.dstPitch = op->dst.op.ptr.rowLength ? op->dst.op.ptr.rowLength : op->extent.width;
        c.srcHeight = op->src.op.ptr.layerHeight ? op->src.op.ptr.layerHeight : op->extent.height;
        c.dstHeight = op->dst.op.ptr.layerHeight ? op->dst.op.ptr.layerHeight : op->extent.height;
        if (c.srcPitch < op->extent.width || c.dstPitch < op->extent.width || c.srcHeight < op->extent.height ||
            c.dstHeight < op->extent.height)
            return CUDA_ERROR_INVALID_VALUE;
        c.WidthInBytes = op->extent.width;
        c.Height = op->extent.height;
        c.Depth = op->extent.depth;
        CUresult r = copy_box(&c, "cuMemcpy3DBatchAsync");
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

/* A batch of copies (CUDA 12.8), one after the other. */
EXPORT CUresult CUDAAPI cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                              CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs,
                                              CUstream s) {
    COUNT();
    (void)attrs, (void)attrs_idxs, (void)nattrs, (void)s;
    if (!dsts || !srcs || !sizes) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
        CUresult r = sync_copy((void *)dsts[i], (const void *)srcs[i], sizes[i], 0, 0, "cuMemcpyBatchAsync");
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

/* n elements of `width` bytes at dst, each a copy of *pattern, written as
 * a synchronous copy from a buffer of them. */
static CUresult fill_pattern(CUdeviceptr dst, const void *pattern, size_t width, size_t n, const char *fn) {
    unsigned char *buf = (unsigned char *)malloc(n * width);
    if (!buf) return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; ++i) memcpy(buf + i * width, pattern, width);
    CUresult r = sync_copy((void *)dst, buf, n * width, 1, 0, fn);
    free(buf);
    return r;
}

EXPORT CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n) {
    COUNT();
    return fill_pattern(dst, &uc, 1, n, "cuMemsetD8");
}

EXPORT CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dst, unsigned int ui, size_t n) {
    COUNT();
    return fill_pattern(dst, &ui, 4, n, "cuMemsetD32");
}

/* 2D fills: `height` rows of `width` elements, `pitch` bytes apart (the
 * CUDA runtime's cudaMemset2D and cudaMemset3D come here). */
static CUresult fill_rows(CUdeviceptr dst, size_t pitch, const void *pattern, size_t width, size_t elems,
                          size_t height, const char *fn) {
    if (height > 1 && elems * width > pitch) return CUDA_ERROR_INVALID_VALUE;
    for (size_t row = 0; row < height; ++row) {
        CUresult r = fill_pattern(dst + row * pitch, pattern, width, elems, fn);
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch, unsigned char uc, size_t width, size_t height) {
    COUNT();
    return fill_rows(dst, pitch, &uc, 1, width, height, "cuMemsetD2D8");
}

EXPORT CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch, unsigned int ui, size_t width, size_t height) {
    COUNT();
    return fill_rows(dst, pitch, &ui, 4, width, height, "cuMemsetD2D32");
}

EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) {
    COUNT();
    NEED_CONTEXT();
    STICKY();
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    if (capturing(s)) {
        struct CUgraph_st *g = s->capture;
        if (g->n == FAKE_GRAPH_NODES) return CUDA_ERROR_OUT_OF_MEMORY;
        fake_node node = {NULL, fn, data, 0, 0, 0, 0};
        g->nodes[g->n++] = node;
        return CUDA_SUCCESS;
    }
    vmm_host_fn *h = (vmm_host_fn *)calloc(1, sizeof *h);
    h->fn = fn;
    h->error = &devices[current_gpu()].error;
    h->data = data;
    fake_submit_owned_work(queue_of(s), vmm_do_host_fn, h);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data, unsigned int flags) {
    COUNT();
    NEED_CONTEXT();
    STICKY();
    if (!cb || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    vmm_host_fn *h = (vmm_host_fn *)calloc(1, sizeof *h);
    h->callback = cb;
    h->stream = s;
    h->error = &devices[current_gpu()].error;
    h->data = data;
    fake_submit_owned_work(queue_of(s), vmm_do_host_fn, h);
    return CUDA_SUCCESS;
}

/* The stream's later work waits until the event's record made before the
 * wait has run. */
typedef struct {
    struct CUevent_st *event;
    unsigned long record;
} event_wait;

static void wait_for_event(void *arg) {
    event_wait *w = (event_wait *)arg;
    while (atomic_load(&w->event->completed) < w->record) sched_yield();
    free(w);
}

EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
    COUNT();
    NEED_CONTEXT();
    STICKY();
    (void)flags;
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    event_wait *w = (event_wait *)calloc(1, sizeof *w);
    w->event = e;
    w->record = atomic_load(&e->recorded);
    fake_submit_owned_work(queue_of(s), wait_for_event, w);
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *options,
                                           void **values) {
    COUNT();
    NEED_CONTEXT();
    (void)n;
    (void)options;
    (void)values;
    if (image && strncmp((const char *)image, "fake-module:", 12) != 0) return CUDA_ERROR_INVALID_IMAGE;
    return cuModuleLoadData(m, image ? (const char *)image + 12 : NULL);
}

EXPORT CUresult CUDAAPI cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
    COUNT();
    NEED_INIT();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    const fake_kernel *k = (const fake_kernel *)f;
    if (index >= k->nparams) return CUDA_ERROR_INVALID_VALUE;
    if (offset) *offset = param_offset(k, index);
    if (size) *size = k->sizes[index];
    return CUDA_SUCCESS;
}

/* ---- hints and queries: the double's own allocations (managed and
 * cuMemAlloc memory) take them; memory mapped with the virtual-memory API
 * is not managed, so hints on it fail, as on the real driver. */

static CUresult hint(CUdeviceptr p, size_t n) {
    NEED_INIT();
    void *base;
    size_t size;
    if (!fake_find((void *)p, &base, &size) || n > size - (p - (CUdeviceptr)base)) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation where, unsigned int flags,
                                              CUstream s) {
    COUNT();
    (void)where, (void)flags, (void)s;
    return hint(p, n);
}

EXPORT CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation where) {
    COUNT();
    (void)advice, (void)where;
    return hint(p, n);
}

/* The double keeps no advice, so it answers no range query: a routed
 * program's queries on shared memory never reach it. */
EXPORT CUresult CUDAAPI cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr p,
                                               size_t n) {
    COUNT();
    (void)data, (void)size, (void)attr, (void)p, (void)n;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult CUDAAPI cuMemRangeGetAttributes(void **data, size_t *sizes, CUmem_range_attribute *attrs, size_t count,
                                                CUdeviceptr p, size_t n) {
    COUNT();
    (void)data, (void)sizes, (void)attrs, (void)count, (void)p, (void)n;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The range of the allocation (or of the mapped piece of device memory) at p. */
static int range_of(CUdeviceptr p, CUdeviceptr *base, size_t *size) {
    void *b;
    if (fake_find((void *)p, &b, size)) {
        *base = (CUdeviceptr)b;
        return 1;
    }
    int found = 0;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX && !found; ++i)
        if (vmm_maps[i].phys && p >= vmm_maps[i].va && p < vmm_maps[i].va + vmm_maps[i].size) {
            *base = vmm_maps[i].va;
            *size = vmm_maps[i].size;
            found = 1;
        }
    pthread_mutex_unlock(&vmm_mu);
    return found;
}

EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr p) {
    COUNT();
    NEED_INIT();
    CUdeviceptr base;
    size_t size;
    if (!range_of(p, &base, &size)) return CUDA_ERROR_NOT_FOUND;
    if (pbase) *pbase = base;
    if (psize) *psize = size;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p) {
    COUNT();
    NEED_INIT();
    CUdeviceptr base;
    size_t size;
    if (!data || !range_of(p, &base, &size)) return CUDA_ERROR_INVALID_VALUE;
    void *ignored;
    int host = fake_find((void *)p, &ignored, &size);
    range_of(p, &base, &size);
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = p; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!host) return CUDA_ERROR_INVALID_VALUE; /* device memory: the host cannot reach it */
        *(void **)data = (void *)p;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = size; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data = 0; break; /* (the double keeps no kinds) */
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

/* How many bytes an attribute's answer takes: the ones below are pointers
 * and sizes, the others unsigned ints (as MEMORY_TYPE's must be). */
static size_t attribute_width(CUpointer_attribute attr) {
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return sizeof(void *);
    default: return sizeof(unsigned);
    }
}

EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int count, CUpointer_attribute *attrs, void **data,
                                               CUdeviceptr p) {
    COUNT();
    if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < count; ++i)
        if (data[i] && cuPointerGetAttribute(data[i], attrs[i], p) != CUDA_SUCCESS)
            memset(data[i], 0, attribute_width(attrs[i]));
    return CUDA_SUCCESS;
}

/* The driver's table of entry points by name, as cuGetProcAddress serves
 * it: versioned names by the caller's CUDA version, per-thread-stream
 * variants by the flags. */
static const struct {
    const char *name;
    void *fn, *ptsz, *v2;
    int v2_since;
} entries[] = {
    {"cuInit", (void *)cuInit, NULL, NULL, 0},
    {"cuDriverGetVersion", (void *)cuDriverGetVersion, NULL, NULL, 0},
    {"cuDeviceGet", (void *)cuDeviceGet, NULL, NULL, 0},
    {"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain, NULL, NULL, 0},
    {"cuCtxSetCurrent", (void *)cuCtxSetCurrent, NULL, NULL, 0},
    {"cuModuleLoadData", (void *)cuModuleLoadData, NULL, NULL, 0},
    {"cuModuleGetFunction", (void *)cuModuleGetFunction, NULL, NULL, 0},
    {"cuFuncGetName", (void *)cuFuncGetName, NULL, NULL, 0},
    {"cuMemAllocManaged", (void *)cuMemAllocManaged, NULL, NULL, 0},
    {"cuMemAlloc", NULL, NULL, (void *)cuMemAlloc, 3020},
    {"cuMemFree", NULL, NULL, (void *)cuMemFree, 3020},
    {"cuLaunchKernel", (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz, NULL, 0},
    {"cuLaunchKernelEx", (void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx_ptsz, NULL, 0},
    {"cuLaunchCooperativeKernel", (void *)cuLaunchCooperativeKernel, NULL, NULL, 0},
    {"cuCtxSynchronize", (void *)cuCtxSynchronize, NULL, NULL, 0},
    {"cuStreamCreate", (void *)cuStreamCreate, NULL, NULL, 0},
    {"cuStreamSynchronize", (void *)cuStreamSynchronize, (void *)cuStreamSynchronize_ptsz, NULL, 0},
    {"cuStreamQuery", (void *)cuStreamQuery, (void *)cuStreamQuery_ptsz, NULL, 0},
    {"cuEventCreate", (void *)cuEventCreate, NULL, NULL, 0},
    {"cuEventRecord", (void *)cuEventRecord, NULL, NULL, 0},
    {"cuEventSynchronize", (void *)cuEventSynchronize, NULL, NULL, 0},
    {"cuEventQuery", (void *)cuEventQuery, NULL, NULL, 0},
    {"cuGetErrorName", (void *)cuGetErrorName, NULL, NULL, 0},
    {"cuMemcpy3D", NULL, NULL, (void *)cuMemcpy3D_v2, 3020},
    {"cuMemcpyBatchAsync", NULL, NULL, (void *)cuMemcpyBatchAsync_v2, 13000},
    {"cuMemsetD2D8", NULL, NULL, (void *)cuMemsetD2D8_v2, 3020},
    {"cuMemHostRegister", NULL, NULL, (void *)cuMemHostRegister_v2, 6050},
    {"cuMemHostUnregister", (void *)cuMemHostUnregister, NULL, NULL, 0},
    {"cuStreamAttachMemAsync", (void *)cuStreamAttachMemAsync, NULL, NULL, 0},
    {"cuLaunchHostFunc", (void *)cuLaunchHostFunc, NULL, NULL, 0},
    {"cuMemRangeGetAttribute", (void *)cuMemRangeGetAttribute, NULL, NULL, 0},
    {"cuMemRangeGetAttributes", (void *)cuMemRangeGetAttributes, NULL, NULL, 0},
    {"cuMemAdvise", NULL, NULL, (void *)cuMemAdvise_v2, 12020},
    {"cuStreamAddCallback", (void *)cuStreamAddCallback, NULL, NULL, 0},
    {"cuStreamBeginCapture", NULL, NULL, (void *)cuStreamBeginCapture_v2, 10010},
    {"cuStreamEndCapture", (void *)cuStreamEndCapture, NULL, NULL, 0},
    {"cuStreamIsCapturing", (void *)cuStreamIsCapturing, NULL, NULL, 0},
    {"cuGraphInstantiateWithFlags", (void *)cuGraphInstantiateWithFlags, NULL, NULL, 0},
    {"cuGraphLaunch", (void *)cuGraphLaunch, NULL, NULL, 0},
    {"cuGraphCreate", (void *)cuGraphCreate, NULL, NULL, 0},
    {"cuGraphAddKernelNode", NULL, NULL, (void *)cuGraphAddKernelNode_v2, 12000},
    {"cuGraphAddMemcpyNode", (void *)cuGraphAddMemcpyNode, NULL, NULL, 0},
    {"cuGraphExecDestroy", (void *)cuGraphExecDestroy, NULL, NULL, 0},
    {"cuGraphDestroy", (void *)cuGraphDestroy, NULL, NULL, 0},
    {"cuMemHostGetDevicePointer", NULL, NULL, (void *)cuMemHostGetDevicePointer_v2, 3020},
    {"cuGetProcAddress", (void *)cuGetProcAddress, NULL, (void *)cuGetProcAddress_v2, 12000},
};

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status) {
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i) {
        if (strcmp(entries[i].name, symbol) != 0) continue;
        void *fn = entries[i].v2 && version >= entries[i].v2_since ? entries[i].v2 : entries[i].fn;
        if (entries[i].ptsz && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) fn = entries[i].ptsz;
        if (!fn) break;
        *pfn = fn;
        if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    COUNT();
    return lookup(symbol, pfn, version, flags, NULL);
}

EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *status) {
    COUNT();
    return lookup(symbol, pfn, version, flags, status);
}
