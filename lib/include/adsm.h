/*
 * adsm: one address space for CPUs and accelerators.
 *
 * The model (ADSM): shared objects are allocated with adsmAlloc and have one
 * address that is valid on the CPU and on the accelerator.  adsmCall releases
 * the calling context's shared objects to the accelerator and launches a
 * kernel; adsmSync waits for the context's kernels and acquires the objects
 * back.  CPU access to a context's shared objects between adsmCall and
 * adsmSync is a data race.
 *
 * Every host thread works in a context (a virtual accelerator, created on
 * first use).  Objects belong to the context of the thread that allocated
 * them; a kernel sees coherent data only for its own context's objects.
 * Threads share a context with adsmGetContext/adsmSetContext.
 *
 * Every function is thread-safe.  Functions that return adsmError_t also record
 * a failure as the calling thread's last error; functions that return a
 * pointer return NULL on failure and record why.
 */
#ifndef ADSM_H
#define ADSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ADSM_API __attribute__((visibility("default")))
#else
#define ADSM_API
#endif

#define ADSM_VERSION_MAJOR 0
#define ADSM_VERSION_MINOR 1

typedef enum adsmError {
    adsmSuccess = 0,
    adsmErrorInvalidValue = 1,      /* an argument is out of range or NULL */
    adsmErrorInvalidPointer = 2,    /* not the start of a live allocation of the right kind */
    adsmErrorMemoryAllocation = 3,  /* accelerator memory or address space exhausted */
    adsmErrorSizeOverflow = 4,      /* a size computation overflows */
    adsmErrorInitialization = 5,    /* the runtime could not start (configuration, OS) */
    adsmErrorNoDevice = 6,          /* the selected accelerator back-end is not available */
    adsmErrorKernelNotFound = 7,    /* no kernel registered under that name */
    adsmErrorKernelExists = 8,      /* the name is registered with another function */
    adsmErrorInvalidLaunch = 9,     /* bad grid/block dimensions or arguments */
    adsmErrorLaunchFailure = 10,    /* a kernel faulted on the accelerator */
    adsmErrorDeviceLost = 11,       /* the accelerator stopped responding or died */
    adsmErrorBusy = 12,             /* the object is in use by a kernel not yet synced */
    adsmErrorNotSupported = 13,     /* the back-end cannot do this */
    adsmErrorInvalidContext = 14,   /* a context handle that is not (or no longer) valid */
    adsmErrorInvalidDevice = 15     /* a device number this process does not have */
} adsmError_t;

/* Grid and block dimensions, as in CUDA. */
typedef struct adsmDim3 {
    unsigned int x, y, z;
} adsmDim3;

/* What a kernel invocation knows about itself: one call per (block, thread). */
typedef struct adsmThreadIdx {
    adsmDim3 gridDim;
    adsmDim3 blockDim;
    adsmDim3 blockIdx;
    adsmDim3 threadIdx;
} adsmThreadIdx;

/*
 * A kernel on the sim and cpu accelerators: a host function called once per
 * (block, thread).  args[i] points to a copy of the i-th by-value argument.
 * On sim it runs in the simulated device, a separate address space in which
 * only shared and device memory is coherent; host pointers do not work there,
 * just as on a discrete GPU.
 */
typedef void (*adsmKernelFunc)(const adsmThreadIdx *idx, void **args);

typedef struct adsmKernel_st *adsmKernel_t;
typedef struct adsmModule_st *adsmModule_t;
typedef struct adsmContext_st *adsmContext_t;

/* ---- Errors ------------------------------------------------------------ */

/* Return the calling thread's last error and reset it to adsmSuccess. */
ADSM_API adsmError_t adsmGetLastError(void);
/* Return the calling thread's last error without resetting it. */
ADSM_API adsmError_t adsmPeekAtLastError(void);
/* A constant, human-readable name for an error code. */
ADSM_API const char *adsmGetErrorString(adsmError_t error);
/* The detailed message of the calling thread's most recent error ("" if it
 * never had one).  adsmGetLastError does not clear it. */
ADSM_API const char *adsmGetLastErrorDetail(void);

/* ---- Shared memory (paper, Table 1) ------------------------------------- */

/* Shared memory at one address valid on CPU and accelerator, or NULL.  Its
 * bytes are undefined until written, as malloc's: a GPU's fresh memory
 * holds what it held, so a byte never written may read differently after a
 * kernel (adsmCalloc's are zeros on both sides). */
ADSM_API void *adsmAlloc(size_t size);
/* As adsmAlloc for nmemb*size bytes, zero-filled; overflow is an error. */
ADSM_API void *adsmCalloc(size_t nmemb, size_t size);
/* Release shared memory.  adsmFree(NULL) does nothing. */
ADSM_API adsmError_t adsmFree(void *ptr);
/*
 * adsmAlloc with placement: where the object lives and how it stands when
 * device memory runs short (see "Memory kinds" and oversubscription in the
 * README).  attr may be NULL (as adsmAlloc); zero-fill it for the defaults.
 *   priority: eviction takes lower priorities first, and the least
 *     recently released among equals (default 0).
 *   spill: when its device is full now: ADSM_SPILL_DEFAULT (ADSM_SPILL,
 *     itself host by default), ADSM_SPILL_HOST (it waits on the host for
 *     the call that needs it), ADSM_SPILL_EVICT (idle objects of no higher
 *     priority make room for it now), ADSM_SPILL_FAIL (as evict, then NULL
 *     with adsmErrorMemoryAllocation if it still does not fit),
 *     ADSM_SPILL_NEXT (the next kind of memory: host-resident, as
 *     ADSM_PLACE_HOST, where the devices can reach host memory; else as
 *     host), ADSM_SPILL_SPLIT (equal parts over its device and the next
 *     kinds, in order the other devices and host memory, as few parts as
 *     fit, passing over devices without room for one, kernels on every
 *     device reaching the parts it does not hold over the link; else as
 *     host).
 *   zero: nonzero for zero-filled memory.
 *   place: ADSM_PLACE_DEVICE (default: its context's device memory, the
 *     protocol moving the data); ADSM_PLACE_HOST (host-resident: kernels
 *     read and write the host's own pages over the link, nothing is ever
 *     copied, and CPU accesses while a kernel runs are the program's race,
 *     as on an integrated device; adsmErrorNotSupported on a device that
 *     cannot reach host memory at shared addresses); ADSM_PLACE_EVERY_DEVICE
 *     (read-mostly data duplicated on every device: any context's call on
 *     any device finds a copy current as of that call, sent only when the
 *     CPU changed it since; kernels only read it, what they write is not
 *     brought back and is replaced at the next update; it needs room on
 *     every device, else it fails, or with ADSM_SPILL_NEXT becomes
 *     host-resident); ADSM_PLACE_PREFERRED_DEVICE (device memory of device
 *     `device`, whichever device its context runs on or moves to: kernels
 *     on the others reach it there over a peer link; the protocol moves the
 *     data to that device, and spill applies to it; adsmErrorInvalidDevice
 *     for a device the process does not have, adsmErrorNotSupported where
 *     the devices cannot reach each other's memory).
 *   device: for ADSM_PLACE_PREFERRED_DEVICE.
 */
typedef enum adsmSpill {
    ADSM_SPILL_DEFAULT = 0,
    ADSM_SPILL_HOST = 1,
    ADSM_SPILL_EVICT = 2,
    ADSM_SPILL_FAIL = 3,
    ADSM_SPILL_NEXT = 4,
    ADSM_SPILL_SPLIT = 5
} adsmSpill;
typedef enum adsmPlace {
    ADSM_PLACE_DEVICE = 0,
    ADSM_PLACE_HOST = 1,
    ADSM_PLACE_EVERY_DEVICE = 2,
    ADSM_PLACE_PREFERRED_DEVICE = 3
} adsmPlace;
typedef struct adsmAllocAttr {
    int priority;
    int spill; /* an adsmSpill */
    int zero;
    int place; /* an adsmPlace */
    int device;
} adsmAllocAttr;
ADSM_API void *adsmAllocEx(size_t size, const adsmAllocAttr *attr);
/* Shared memory whose device address may differ from its CPU address. */
ADSM_API void *adsmSafeAlloc(size_t size);
/* The device address of a CPU address inside shared memory, or NULL. */
ADSM_API void *adsmSafe(const void *cpu_addr);
/* Size in bytes of the shared allocation that starts at ptr, 0 if none. */
ADSM_API size_t adsmGetSize(const void *ptr);

/* Fill or copy shared memory with the coherence protocol's help. */
ADSM_API adsmError_t adsmMemset(void *ptr, int value, size_t count);
ADSM_API adsmError_t adsmMemcpy(void *dst, const void *src, size_t count);

/* ---- Kernels --------------------------------------------------------- */

/*
 * Register a kernel under a name.  param_sizes[i] is sizeof the i-th
 * by-value parameter.  Registering the same name, function and parameters
 * again returns the existing handle.
 */
ADSM_API adsmError_t adsmRegisterKernel(const char *name, adsmKernelFunc func,
                                        unsigned int num_params,
                                        const size_t *param_sizes,
                                        adsmKernel_t *kernel);
ADSM_API adsmError_t adsmGetKernel(const char *name, adsmKernel_t *kernel);
ADSM_API const char *adsmGetKernelName(adsmKernel_t kernel);
/* A kernel's parameters: their number in *num_params and, for the first
 * `capacity` of them, their sizes in param_sizes (which may be NULL when
 * capacity is 0). */
ADSM_API adsmError_t adsmGetKernelParams(adsmKernel_t kernel, unsigned int *num_params, size_t *param_sizes,
                                         unsigned int capacity);

/*
 * GPU code for the cuda and levelzero devices: a module from a file or from
 * memory.  On cuda: cubin, fatbin or PTX, as nvcc writes them (PTX
 * NUL-terminated or with its exact size); on levelzero: SPIR-V or the
 * device's native binary.  Modules stay loaded for the life of the
 * process.  The sim and cpu devices run host functions and refuse modules
 * with adsmErrorNotSupported.
 */
ADSM_API adsmError_t adsmLoadModule(const char *path, adsmModule_t *module);
ADSM_API adsmError_t adsmLoadModuleData(const void *image, size_t size, adsmModule_t *module);
/*
 * A kernel of a module by its (extern "C" or mangled) name.  Its parameter
 * sizes come from the driver, so adsmCall checks and packs arguments as for
 * a registered kernel.  The name is also registered for adsmCallByName
 * unless a kernel already holds it.
 */
ADSM_API adsmError_t adsmModuleGetKernel(adsmModule_t module, const char *name, adsmKernel_t *kernel);
/*
 * adsmModuleGetKernel with the parameter sizes stated by the program: they
 * must agree with what the driver reports (else adsmErrorInvalidValue), and
 * give the sizes a driver does not report (Level Zero tells a kernel's
 * parameter count only, so a levelzero kernel is got this way).
 */
ADSM_API adsmError_t adsmModuleGetKernelWithParams(adsmModule_t module, const char *name, unsigned int num_params,
                                                   const size_t *param_sizes, adsmKernel_t *kernel);

/*
 * Release the calling context's shared objects and launch a kernel.  args
 * holds one pointer per registered parameter (as cuLaunchKernel's
 * kernelParams); the values are copied before adsmCall returns.
 * The kernel runs asynchronously.
 */
ADSM_API adsmError_t adsmCall(adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block,
                              void **args);
ADSM_API adsmError_t adsmCallByName(const char *name, adsmDim3 grid, adsmDim3 block,
                                    void **args);

/*
 * adsmCall for a kernel that uses only the objects listed (GMAC's argument
 * annotation): the call releases those alone and adsmSync acquires those
 * alone, so the context's other objects stay with the CPU (usable, freeable
 * and, when device memory runs short, evictable while the kernel runs).  An
 * object is named by any address inside it and must belong to the calling
 * context.  The CPU may go on reading a read_only object during the kernel
 * (a write waits for the kernel, as any racing access does), and nothing of
 * it comes back at the sync: writes a kernel makes to it are not brought
 * back.  count 0 releases nothing.
 */
typedef struct adsmObjectUse {
    const void *ptr;
    int read_only;
} adsmObjectUse;
ADSM_API adsmError_t adsmCallWith(adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block, void **args,
                                  const adsmObjectUse *objects, unsigned int count);
/*
 * Wait for the calling context's kernels and acquire its shared objects.
 * Returns the first error a kernel reported since the previous adsmSync.
 */
ADSM_API adsmError_t adsmSync(void);

/* ---- Contexts -------------------------------------------------------- */

/* The calling thread's context (created on first use). */
ADSM_API adsmContext_t adsmGetContext(void);
/* Make the calling thread work in ctx, so that several threads share objects
 * and kernels.  NULL returns the thread to its own context.  A context ends
 * when no thread works in it, it owns no memory, and the thread it was
 * created for has exited; a handle to it then becomes invalid. */
ADSM_API adsmError_t adsmSetContext(adsmContext_t ctx);

/* ---- Explicit device memory (the hand-written baseline) -------------- */

/* Device-only memory, not accessible to the CPU; copies move data. */
ADSM_API adsmError_t adsmDeviceAlloc(void **dev_ptr, size_t size);
ADSM_API adsmError_t adsmDeviceFree(void *dev_ptr);
/* Synchronous copies, ordered after the calling context's kernels. */
ADSM_API adsmError_t adsmCopyToDevice(void *dev_dst, const void *host_src, size_t count);
ADSM_API adsmError_t adsmCopyToHost(void *host_dst, const void *dev_src, size_t count);
ADSM_API adsmError_t adsmDeviceMemset(void *dev_ptr, int value, size_t count);

/* ---- The accelerator ------------------------------------------------- */

typedef struct adsmDeviceInfo {
    char name[64];              /* back-end name: "sim", "cpu", ... */
    int integrated;             /* 1 if device and host share physical memory */
    uint64_t memory_bytes;      /* device memory capacity */
    uint64_t memory_used;       /* bytes currently allocated on the device */
    char protocol[32];          /* the coherence protocol in use */
    size_t block_size;          /* coherence block size in bytes */
    char dirty_tracking[16];    /* "uffd", "mprotect", or "-" when the protocol tracks no writes */
} adsmDeviceInfo;

/* The device of the calling thread's context. */
ADSM_API adsmError_t adsmGetDeviceInfo(adsmDeviceInfo *info);

/* ---- Several devices ------------------------------------------------- */

/*
 * A process has as many devices as ADSM_DEVICE lists ("sim,sim": two),
 * less those ADSM_VISIBLE_DEVICES hides, numbered from 0.  Each context
 * runs its kernels on one device (device 0 at first) and its shared
 * objects' device copies live there; kernels of contexts on different
 * devices run at the same time.  An object's address is the same on every
 * device and on the CPU, wherever it lives.
 */
ADSM_API adsmError_t adsmGetDeviceCount(int *count);
/* Device `device`'s properties (adsmErrorInvalidDevice if there is none). */
ADSM_API adsmError_t adsmGetDeviceProperties(int device, adsmDeviceInfo *info);
/* The device of the calling thread's context. */
ADSM_API adsmError_t adsmGetDevice(int *device);
/*
 * Move the calling thread's context to `device`, with every shared object
 * it owns (GMAC's gmacMigrate): its next kernels run there.  Data moves
 * device to device where the back-ends can (two sim devices), else through
 * the host.  adsmErrorBusy while its kernels may run (adsmSync first).  Its
 * adsmDeviceAlloc memory moves too, all of it or none: when it does not fit
 * on the new device, adsmErrorMemoryAllocation and nothing moves.  A shared
 * object that does not fit waits on the host for the call that needs it
 * (see oversubscription in the README).
 */
ADSM_API adsmError_t adsmSetDevice(int device);
/*
 * Hand the shared allocation that starts at ptr to context ctx (NULL: the
 * calling thread's): ctx's calls release it from then on, and its device
 * copy moves to ctx's device, its address unchanged.  adsmErrorBusy while
 * a kernel of its current context may be using it.  On a full device it
 * waits on the host for the call that needs it.  Collected objects stay
 * with the context that allocated them.
 */
ADSM_API adsmError_t adsmMigrate(void *ptr, adsmContext_t ctx);

/*
 * Move [ptr, ptr+size) of one shared allocation ahead of use: to the host
 * (ADSM_HOST), so that the CPU's next accesses find it there without a
 * fault; or to device `device`, which must be its context's, so that the
 * context's next call has nothing of it left to send (the whole object
 * goes, as a release would send it; the CPU's next touch brings it back).
 * adsmErrorBusy while a kernel may use it.  To a device, done when this
 * returns.  To the host, in the background where the protocol keeps blocks
 * (lazy, rolling, delta): the copies are queued when this returns, each
 * block opens for the CPU as it lands, a CPU access to a block still on its
 * way waits for it, and the context's next adsmSync waits for them all
 * (batch, which moves objects whole, copies before returning).
 */
#define ADSM_HOST (-1)
ADSM_API adsmError_t adsmPrefetch(const void *ptr, size_t size, int device);

/*
 * Advice on the shared allocation that holds [ptr, ptr+size) (all of it):
 *   ADSM_ADVISE_READ_MOSTLY: kernels only read it.  Every call releases it
 *     as adsmCallWith releases a read-only object: the CPU may read it
 *     while kernels run and nothing comes back at the sync.  Writes a
 *     kernel makes to it are not brought back.
 *   ADSM_ADVISE_PREFER_HOST: when device memory runs short it is evicted
 *     before any other object.
 * and their UNSET_ forms.  Effective from the next call.
 */
typedef enum adsmAdvice {
    ADSM_ADVISE_READ_MOSTLY = 1,
    ADSM_ADVISE_UNSET_READ_MOSTLY = 2,
    ADSM_ADVISE_PREFER_HOST = 3,
    ADSM_ADVISE_UNSET_PREFER_HOST = 4
} adsmAdvice;
ADSM_API adsmError_t adsmAdvise(const void *ptr, size_t size, int advice /* an adsmAdvice */);

/* ---- Garbage-collected shared memory ---------------------------------- */

/*
 * The bundled collector: a conservative, non-moving mark-sweep heap whose
 * chunks are shared memory, so a collected object is valid on the CPU and
 * in kernels at the same address.  Objects are owned by the calling
 * thread's context, as adsmAlloc's are: its adsmCall releases them.  A
 * collection never waits for a kernel: what an unsynced kernel may reach
 * stays alive until its context syncs.  Objects die when nothing the
 * collector scans (thread stacks and registers, data and bss of every
 * loaded object, static thread-local storage, registered roots, other live
 * collected objects) points into them.
 */

/* size bytes, zeroed, that may hold pointers to collected objects; NULL with
 * adsmErrorMemoryAllocation when the heap cannot grow (ADSM_GC_MAX_HEAP). */
ADSM_API void *adsmGcAlloc(size_t size);
/* As adsmGcAlloc for memory that holds no pointers (never scanned, not zeroed). */
ADSM_API void *adsmGcAllocAtomic(size_t size);
/* Frees an object at once (it must not be reachable any more). */
ADSM_API adsmError_t adsmGcFree(void *obj);
/* A full collection now. */
ADSM_API adsmError_t adsmGcCollect(void);
/* A minor collection now: objects that survived the last collection are
 * kept without being traced, and those allocated since are traced from the
 * roots and from the memory written since, which the kernel's write
 * tracking finds (ADSM_GC_GENERATIONAL; Linux 6.7+).  Old objects that died
 * wait for the next full collection, and so do their finalizers, weak links
 * and release callbacks.  A full collection where minor ones are not
 * possible (adsmGcGetStats says which ran).  Automatic collections are
 * minor, but for every ADSM_GC_FULL_EVERY-th one.  Automatic full
 * collections mark while the program runs (ADSM_GC_CONCURRENT) and stop
 * it twice, to start and to finish; a minor request while one marks
 * finishes it, a full collection, and adsmGcCollect drops its marks and
 * collects afresh. */
ADSM_API adsmError_t adsmGcCollectMinor(void);

/* The start of the collected object that holds p (anywhere inside it), or
 * NULL; and that object's usable size, 0 if none. */
ADSM_API void *adsmGcBase(const void *p);
ADSM_API size_t adsmGcSize(const void *p);

/* [start, start+size) is scanned for pointers at every collection. */
ADSM_API adsmError_t adsmGcAddRoots(void *start, size_t size);
ADSM_API adsmError_t adsmGcRemoveRoots(void *start, size_t size);

/* Runs fn(obj, data) once obj is unreachable, before its memory is reused;
 * what obj points to stays alive until then.  fn NULL removes it.  One
 * finalizer per object: a second replaces the first. */
typedef void (*adsmGcCallback)(void *obj, void *data);
ADSM_API adsmError_t adsmGcRegisterFinalizer(void *obj, adsmGcCallback fn, void *data);

/* A weak reference: *link is set to NULL once obj becomes unreachable (before
 * finalizers run).  *link must lie outside the collected heap or in a
 * collected object; the link itself does not keep obj alive. */
ADSM_API adsmError_t adsmGcRegisterWeak(void **link, const void *obj);
ADSM_API adsmError_t adsmGcUnregisterWeak(void **link);

/* Explicit cooperation, after jbufs: a pin (counted) keeps obj alive with no
 * visible reference, for I/O or a device that holds it. */
ADSM_API adsmError_t adsmGcPin(void *obj);
ADSM_API adsmError_t adsmGcUnpin(void *obj);
/* The program says it holds no more references to obj: once the collector
 * finds it unpinned and unreachable, it calls fn(obj, data) and frees it. */
ADSM_API adsmError_t adsmGcRelease(void *obj, adsmGcCallback fn, void *data);

typedef struct adsmGcStats {
    uint64_t heap_bytes;         /* shared memory the heap holds */
    uint64_t live_bytes;         /* marked at the last collection */
    uint64_t allocated_bytes;    /* allocated since the start */
    uint64_t collections;
    uint64_t last_pause_ns;      /* the world stopped, last time (a concurrent full collection stops it twice) */
    uint64_t max_pause_ns;
    uint64_t total_pause_ns;
    uint64_t objects_freed;
    uint64_t finalizers_run;
    uint64_t weak_cleared;
    uint64_t kept_for_kernels;   /* objects kept alive for unsynced kernels, last collection */
    uint64_t minor_collections;  /* of `collections`, the minor ones */
    uint64_t minor_pause_ns;     /* their pauses, together */
    uint64_t max_minor_pause_ns;
    uint64_t max_full_pause_ns;
    uint64_t written_pages;      /* pages a minor collection traced as written since the last one, last collection */
    int generational;            /* whether minor collections are possible (ADSM_GC_GENERATIONAL) */
} adsmGcStats;
ADSM_API adsmError_t adsmGcGetStats(adsmGcStats *stats);

/*
 * Allocation inside kernels.  A kernel heap is shared memory from which
 * kernels allocate collected objects with adsmGcKernelAlloc (in
 * adsm_gc_kernel.h: no runtime call, so it works in the simulated device's
 * process and compiles for CUDA), each thread block from a buffer of its
 * own.  Pass the heap to the kernel as an argument, like any shared pointer.
 *
 * A heap serves the kernels its context (the calling thread's) launches
 * from its creation until the context's next adsmSync.  Until then it stays
 * whole, whatever collections run meanwhile.  After that sync the objects the
 * kernels allocated are ordinary collected objects (alive while reachable,
 * from the host or from memory kernels wrote), the space they did not use
 * goes back to the collector, and the heap is closed: a later launch that
 * passes it fails with adsmErrorInvalidValue, and a kernel that reaches it
 * some other way gets NULL.  The descriptor itself is a collected object too, so
 * the pointer stays valid for adsmGcKernelHeapCheck while the program holds it.
 */
typedef struct adsmGcKernelHeap adsmGcKernelHeap;

typedef struct adsmGcKernelHeapOptions {
    size_t tlab_bytes;  /* a thread block's buffer; larger objects come from the heap's eden
                           directly (0: chosen from the budget, 1 to 64 KiB) */
    unsigned int tlabs; /* buffers in use at once: block b allocates from buffer b % tlabs, so
                           blocks share one when tlabs is smaller than the grid (0: chosen
                           from the budget, at most 1024) */
} adsmGcKernelHeapOptions;

/* A kernel heap whose kernels may allocate `budget` bytes (each object
 * rounded up to 16 bytes) in all; options may be NULL.  A budget of 0, a
 * buffer larger than the budget, or more than 65536 buffers is
 * adsmErrorInvalidValue; a budget that overflows or that the heap cannot grow
 * to hold is adsmErrorSizeOverflow or adsmErrorMemoryAllocation. */
ADSM_API adsmError_t adsmGcKernelHeapCreate(size_t budget, const adsmGcKernelHeapOptions *options,
                                            adsmGcKernelHeap **heap);

typedef struct adsmGcKernelHeapInfo {
    int closed;               /* its context synced: what follows is final (0: all zero so far) */
    uint64_t budget;          /* bytes the kernels could allocate */
    uint64_t objects;         /* objects the kernels allocated... */
    uint64_t bytes;           /* ...and their bytes */
    uint64_t failed;          /* allocations that returned NULL... */
    uint64_t failed_bytes;    /* ...the bytes they asked for... */
    uint64_t too_large;       /* ...and those that asked for more than the budget */
    uint64_t late;            /* allocations tried after the heap closed (they got NULL) */
    uint64_t tlabs;           /* buffers handed to thread blocks */
    uint64_t overflows;       /* buffers that overflowed (taken back at their last good top) */
    uint64_t eden_objects;    /* objects taken from eden directly */
    uint64_t unused_bytes;    /* budget no object used, given back to the collector */
} adsmGcKernelHeapInfo;

/* What the heap's kernels did.  Closes the heap first if its context synced. */
ADSM_API adsmError_t adsmGcKernelHeapGetInfo(adsmGcKernelHeap *heap, adsmGcKernelHeapInfo *info);
/* adsmSuccess when every allocation of the heap's kernels succeeded;
 * adsmErrorMemoryAllocation when some returned NULL (the detail says how many
 * and why); adsmErrorInvalidValue when kernels tried it after it closed;
 * adsmErrorBusy while its context has not synced. */
ADSM_API adsmError_t adsmGcKernelHeapCheck(adsmGcKernelHeap *heap);


#ifdef __cplusplus
}
#endif

#endif /* ADSM_H */
