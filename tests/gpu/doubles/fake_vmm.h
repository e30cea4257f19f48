/*
 * The drivers' doubles' discrete device: virtual-memory entry points
 * (reserve, create, map, set access, host registration) over memory that
 * is really separate from the host's.  Physical allocations are memfds; a
 * kernel runs in a child process in which every reserved range is
 * inaccessible except the device memory mapped into it, so a kernel sees
 * exactly what was copied to the device, at the same addresses the host
 * uses for its own copy.  Copies reach device memory through a view of
 * each memfd, as a copy engine would.
 *
 * The real drivers' silent traps fail loudly here:
 * - a copy whose host pointer lies inside a reserved device range (the
 *   real CUDA driver takes it for device memory, copies nothing and
 *   succeeds) aborts with a message;
 * - reserving at a hint the host has mapped already gives another address,
 *   as the real drivers do;
 * - a copy that crosses from one mapped allocation into the next fails, as
 *   on the real CUDA driver, with a message.
 * A kernel that faults poisons the device: VMM_FAULT from then on.
 *
 * Several devices (up to VMM_DEVICES) may share the reserved ranges, as
 * the GPUs of one process share the real drivers' address space: each
 * physical allocation is one device's memory, counted against that
 * device's total, and a kernel on device d sees only the mappings d was
 * given access to (its own, or another's over a peer link).
 *
 * The includer names its driver's codes before including: VMM_OK,
 * VMM_EINVAL, VMM_ENOMEM, VMM_EALREADY, VMM_ENOTREG, VMM_ELAUNCH,
 * VMM_FAULT, and VMM_DRIVER (its library's name, for messages).
 * VMM_MEMORY_ENV names the variable that sets the device memory (default
 * 1G), VMM_GRANULE_ENV the one that sets the allocation granularity (a
 * power of two from 4K; default 2M, the H100's): tests that make thousands
 * of allocations in separate processes keep them small with it.
 */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_device.h"
#include "os/syscall_instruction.h"

#define VMM_MAX 4096
#define VMM_DEVICES 4

typedef struct vmm_phys {
    int fd;
    int device; /* whose memory it is */
    size_t size;
    unsigned char *view; /* the copy engine's view */
} vmm_phys;

static struct {
    uintptr_t va;
    size_t size;
} vmm_reserved[16];
static struct {
    uintptr_t va;
    size_t size, offset;
    vmm_phys *phys;
    unsigned access; /* a bit per device that may use it */
} vmm_maps[VMM_MAX];
static pthread_mutex_t vmm_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t vmm_used;                   /* on every device */
static size_t vmm_used_on[VMM_DEVICES];
static atomic_long vmm_pinned, vmm_pageable_copies;
/* Registered bytes whose pages existed already (made before pinning), and
   registrations made. */
static atomic_long vmm_pinned_made, vmm_registrations;
static struct {
    uintptr_t p;
    size_t n;
} vmm_registered[VMM_MAX];

static inline size_t vmm_total(void) {
    const char *v = fake_getenv(VMM_MEMORY_ENV);
    size_t n = v ? strtoull(v, NULL, 0) : 0;
    return n ? n : (1ul << 30);
}

static inline size_t vmm_granularity(void) {
    const char *v = fake_getenv(VMM_GRANULE_ENV);
    size_t g = v ? strtoull(v, NULL, 0) : 0;
    return g >= 4096 && (g & (g - 1)) == 0 ? g : (2ul << 20);
}
#define VMM_GRANULARITY vmm_granularity()

static inline int vmm_in_reserved(uintptr_t a, size_t n) {
    for (int i = 0; i < 16; ++i)
        if (vmm_reserved[i].size && a < vmm_reserved[i].va + vmm_reserved[i].size && a + n > vmm_reserved[i].va) return 1;
    return 0;
}

/* A host pointer the real driver would silently mistake for device memory. */
static inline void vmm_check_host(const void *p, size_t n, const char *fn) {
    pthread_mutex_lock(&vmm_mu);
    int bad = vmm_in_reserved((uintptr_t)p, n);
    int pinned = 0;
    for (int i = 0; i < VMM_MAX && !pinned; ++i)
        pinned = vmm_registered[i].n && (uintptr_t)p >= vmm_registered[i].p &&
                 (uintptr_t)p + n <= vmm_registered[i].p + vmm_registered[i].n;
    pthread_mutex_unlock(&vmm_mu);
    if (bad) {
        fprintf(stderr,
                VMM_DRIVER ": PITFALL: %s was given host pointer %p, which lies in a reserved device range; the real "
                "driver copies nothing there and reports success\n",
                fn, p);
        abort();
    }
    if (!pinned) atomic_fetch_add(&vmm_pageable_copies, 1);
}

/* The view address of device memory at va and how many bytes of it are
 * contiguous there (one mapping), or NULL if va is not mapped. */
static inline unsigned char *vmm_view(uintptr_t va, size_t *contiguous) {
    unsigned char *r = NULL;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX; ++i)
        if (vmm_maps[i].phys && va >= vmm_maps[i].va && va < vmm_maps[i].va + vmm_maps[i].size) {
            r = vmm_maps[i].phys->view + vmm_maps[i].offset + (va - vmm_maps[i].va);
            *contiguous = vmm_maps[i].va + vmm_maps[i].size - va;
            break;
        }
    pthread_mutex_unlock(&vmm_mu);
    return r;
}

/* The driver's own system calls, made with the instruction itself: a
 * preloaded runtime interposes the C library's syscall() for the program
 * (a fork by number runs its fork handlers, which wait for the very kernel
 * this driver runs; a signal's action set by number becomes the program's
 * handler behind the runtime's), and this is not the program.  Returns the
 * kernel's answer: negative errno on failure. */
static inline long vmm_raw_syscall(long nr, long a, long b, long c, long d, long e, long f) {
#ifdef ADSM_HAVE_SYSCALL_INSTRUCTION
    return adsm_syscall_instruction(nr, a, b, c, d, e, f);
#else
    long r = syscall(nr, a, b, c, d, e, f);
    return r < 0 ? -errno : r;
#endif
}

/* The device's own mappings: a preloaded runtime guards its window
 * against the program's mmap. */
static inline void *vmm_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    long r = vmm_raw_syscall(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);
    return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}

/* In the kernel's process: reserved ranges closed, the device memory
 * `device` may use opened. */
static inline int vmm_run_kernel(const fake_job *j, int device) {
    /* The child's copy of the tables must be whole: no other thread may be
     * half way through changing them when it is made.  No atfork handlers
     * run: only this thread lives on in the child. */
    pthread_mutex_lock(&vmm_mu);
    pid_t pid = (pid_t)vmm_raw_syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0, 0);
    if (pid != 0) pthread_mutex_unlock(&vmm_mu);
    if (pid < 0) return VMM_ELAUNCH;
    if (pid == 0) {
        /* A kernel's bad access ends its process, as it ends a GPU context:
         * the runtime's fault handler, inherited, would take one inside the
         * window for the CPU's and wait for this very kernel. */
        struct {
            void *handler;
            unsigned long flags;
            void *restorer;
            unsigned long mask;
        } dfl = {(void *)SIG_DFL, 0, NULL, 0};
        vmm_raw_syscall(SYS_rt_sigaction, SIGSEGV, (long)&dfl, 0, sizeof dfl.mask, 0, 0);
        vmm_raw_syscall(SYS_rt_sigaction, SIGBUS, (long)&dfl, 0, sizeof dfl.mask, 0, 0);
        for (int i = 0; i < 16; ++i)
            if (vmm_reserved[i].size &&
                vmm_sys_mmap((void *)vmm_reserved[i].va, vmm_reserved[i].size, PROT_NONE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
                _exit(90);
        for (int i = 0; i < VMM_MAX; ++i)
            if (vmm_maps[i].phys && (vmm_maps[i].access & (1u << device)) &&
                vmm_sys_mmap((void *)vmm_maps[i].va, vmm_maps[i].size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                             vmm_maps[i].phys->fd, (off_t)vmm_maps[i].offset) == MAP_FAILED)
                _exit(91);
        gpu_run_grid(j->kernel.fn, j->grid, j->block, (void **)j->args);
        _exit(0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    if (WIFEXITED(st)) fprintf(stderr, VMM_DRIVER ": kernel process failed to map device memory (%d)\n", WEXITSTATUS(st));
    return VMM_FAULT;
}

static inline int vmm_reserve(uintptr_t *p, size_t size, size_t align, uintptr_t addr) {
    if (!p || size == 0 || size % VMM_GRANULARITY || (align && align % VMM_GRANULARITY)) return VMM_EINVAL;
    void *m = MAP_FAILED;
    if (addr) {
        m = mmap((void *)addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (m != MAP_FAILED && (uintptr_t)m != addr) {
            munmap(m, size);
            m = MAP_FAILED;
        }
    }
    if (m == MAP_FAILED) {
        /* Elsewhere, aligned: as the real driver does when the hint is taken. */
        unsigned char *big =
            mmap(NULL, size + VMM_GRANULARITY, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (big == MAP_FAILED) return VMM_ENOMEM;
        uintptr_t a = ((uintptr_t)big + VMM_GRANULARITY - 1) & ~(VMM_GRANULARITY - 1);
        if (a > (uintptr_t)big) munmap(big, a - (uintptr_t)big);
        munmap((void *)(a + size), (uintptr_t)big + size + VMM_GRANULARITY - (a + size));
        m = (void *)a;
    }
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < 16; ++i)
        if (!vmm_reserved[i].size) {
            vmm_reserved[i].va = (uintptr_t)m;
            vmm_reserved[i].size = size;
            pthread_mutex_unlock(&vmm_mu);
            *p = (uintptr_t)m;
            return VMM_OK;
        }
    pthread_mutex_unlock(&vmm_mu);
    munmap(m, size);
    return VMM_ENOMEM;
}

static inline int vmm_create(uintptr_t *h, size_t size, int device) {
    if (!h || size == 0 || size % VMM_GRANULARITY || device < 0 || device >= VMM_DEVICES) return VMM_EINVAL;
    pthread_mutex_lock(&vmm_mu);
    if (vmm_used_on[device] + size > vmm_total()) {
        pthread_mutex_unlock(&vmm_mu);
        return VMM_ENOMEM;
    }
    vmm_used_on[device] += size;
    vmm_used += size;
    pthread_mutex_unlock(&vmm_mu);
    vmm_phys *ph = (vmm_phys *)calloc(1, sizeof *ph);
    ph->device = device;
    ph->fd = (int)syscall(SYS_memfd_create, "fake-device-memory", 1u /* MFD_CLOEXEC */);
    ph->size = size;
    if (ph->fd < 0 || ftruncate(ph->fd, (off_t)size) != 0) abort();
    ph->view = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ph->fd, 0);
    if (ph->view == MAP_FAILED) abort();
    /* Device memory starts as garbage, not zeros, so a missing copy shows. */
    memset(ph->view, 0xa5, size);
    *h = (uintptr_t)ph;
    return VMM_OK;
}

static inline int vmm_release(uintptr_t h) {
    vmm_phys *ph = (vmm_phys *)(uintptr_t)h;
    if (!ph) return VMM_EINVAL;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX; ++i)
        if (vmm_maps[i].phys == ph) {
            pthread_mutex_unlock(&vmm_mu);
            fprintf(stderr, VMM_DRIVER ": cuMemRelease of memory still mapped at %p\n", (void *)vmm_maps[i].va);
            return VMM_EINVAL;
        }
    vmm_used -= ph->size;
    vmm_used_on[ph->device] -= ph->size;
    pthread_mutex_unlock(&vmm_mu);
    munmap(ph->view, ph->size);
    close(ph->fd);
    free(ph);
    return VMM_OK;
}

static inline int vmm_map(uintptr_t va, size_t size, size_t offset, uintptr_t h) {
    vmm_phys *ph = (vmm_phys *)(uintptr_t)h;
    if (!ph || size == 0 || va % VMM_GRANULARITY || size % VMM_GRANULARITY || offset + size > ph->size)
        return VMM_EINVAL;
    pthread_mutex_lock(&vmm_mu);
    int ok = 0;
    for (int i = 0; i < 16; ++i)
        ok |= vmm_reserved[i].size && va >= vmm_reserved[i].va && va + size <= vmm_reserved[i].va + vmm_reserved[i].size;
    for (int i = 0; ok && i < VMM_MAX; ++i)
        if (vmm_maps[i].phys && va < vmm_maps[i].va + vmm_maps[i].size && va + size > vmm_maps[i].va) ok = 0;
    for (int i = 0; ok && i < VMM_MAX; ++i)
        if (!vmm_maps[i].phys) {
            vmm_maps[i].va = va;
            vmm_maps[i].size = size;
            vmm_maps[i].offset = offset;
            vmm_maps[i].phys = ph;
            vmm_maps[i].access = 0;
            pthread_mutex_unlock(&vmm_mu);
            return VMM_OK;
        }
    pthread_mutex_unlock(&vmm_mu);
    return VMM_EINVAL;
}

static inline int vmm_unmap(uintptr_t va, size_t size) {
    int found = 0;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX; ++i)
        if (vmm_maps[i].phys && vmm_maps[i].va >= va && vmm_maps[i].va + vmm_maps[i].size <= va + size) {
            vmm_maps[i].phys = NULL;
            found = 1;
        }
    pthread_mutex_unlock(&vmm_mu);
    return found ? VMM_OK : VMM_EINVAL;
}

/* Gives `device` access to the mappings in [va, va+size), or takes it away. */
static inline int vmm_set_access(uintptr_t va, size_t size, int device, int allow) {
    if (device < 0 || device >= VMM_DEVICES) return VMM_EINVAL;
    int found = 0;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX; ++i)
        if (vmm_maps[i].phys && vmm_maps[i].va >= va && vmm_maps[i].va + vmm_maps[i].size <= va + size) {
            if (allow) vmm_maps[i].access |= 1u << device;
            else vmm_maps[i].access &= ~(1u << device);
            found = 1;
        }
    pthread_mutex_unlock(&vmm_mu);
    return found ? VMM_OK : VMM_EINVAL;
}

/* Which device's memory is mapped at va, or -1. */
static inline int vmm_device_at(uintptr_t va) {
    int d = -1;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX && d < 0; ++i)
        if (vmm_maps[i].phys && va >= vmm_maps[i].va && va < vmm_maps[i].va + vmm_maps[i].size)
            d = vmm_maps[i].phys->device;
    pthread_mutex_unlock(&vmm_mu);
    return d;
}

/* Address ranges reserved and not freed. */
static inline long vmm_reservations(void) {
    long n = 0;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < 16; ++i) n += vmm_reserved[i].size != 0;
    pthread_mutex_unlock(&vmm_mu);
    return n;
}

/* Gives back a reserved range with nothing mapped in it any more. */
static inline int vmm_address_free(uintptr_t va, size_t size) {
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX; ++i)
        if (vmm_maps[i].phys && vmm_maps[i].va < va + size && vmm_maps[i].va + vmm_maps[i].size > va) {
            pthread_mutex_unlock(&vmm_mu);
            fprintf(stderr, VMM_DRIVER ": freeing reserved addresses still mapped at %p\n", (void *)vmm_maps[i].va);
            return VMM_EINVAL;
        }
    for (int i = 0; i < 16; ++i)
        if (vmm_reserved[i].size && vmm_reserved[i].va == va && vmm_reserved[i].size == size) {
            vmm_reserved[i].size = 0;
            pthread_mutex_unlock(&vmm_mu);
            munmap((void *)va, size);
            return VMM_OK;
        }
    pthread_mutex_unlock(&vmm_mu);
    return VMM_EINVAL;
}

/* Bytes of [p, p+n) whose pages exist (mincore), without a buffer of the heap. */
static inline long vmm_resident_bytes(void *p, size_t n) {
    unsigned char vec[256];
    long resident = 0;
    for (size_t off = 0; off < n; off += sizeof vec * 4096) {
        size_t len = n - off < sizeof vec * 4096 ? n - off : sizeof vec * 4096;
        if (mincore((char *)p + off, len, vec) != 0) return 0;
        for (size_t i = 0; i < (len + 4095) / 4096; ++i) resident += (vec[i] & 1) ? 4096 : 0;
    }
    return resident;
}

static inline int vmm_register(void *p, size_t n) {
    if (!p || n == 0) return VMM_EINVAL;
    pthread_mutex_lock(&vmm_mu);
    if (vmm_in_reserved((uintptr_t)p, n)) {
        /* As the real driver: the window address is not host memory to it. */
        pthread_mutex_unlock(&vmm_mu);
        return VMM_EINVAL;
    }
    for (int i = 0; i < VMM_MAX; ++i)
        if (vmm_registered[i].n && (uintptr_t)p < vmm_registered[i].p + vmm_registered[i].n &&
            (uintptr_t)p + n > vmm_registered[i].p) {
            pthread_mutex_unlock(&vmm_mu);
            return VMM_EALREADY;
        }
    for (int i = 0; i < VMM_MAX; ++i)
        if (!vmm_registered[i].n) {
            vmm_registered[i].p = (uintptr_t)p;
            vmm_registered[i].n = n;
            atomic_fetch_add(&vmm_pinned, (long)n);
            atomic_fetch_add(&vmm_pinned_made, vmm_resident_bytes(p, n));
            atomic_fetch_add(&vmm_registrations, 1);
            pthread_mutex_unlock(&vmm_mu);
            return VMM_OK;
        }
    pthread_mutex_unlock(&vmm_mu);
    return VMM_ENOMEM;
}

static inline int vmm_unregister(void *p) {
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX; ++i)
        if (vmm_registered[i].n && vmm_registered[i].p == (uintptr_t)p) {
            atomic_fetch_sub(&vmm_pinned, (long)vmm_registered[i].n);
            vmm_registered[i].n = 0;
            pthread_mutex_unlock(&vmm_mu);
            return VMM_OK;
        }
    pthread_mutex_unlock(&vmm_mu);
    return VMM_ENOTREG;
}

/* Whether [p, p+n) lies in one registration. */
static inline int vmm_is_registered(const void *p, size_t n) {
    int found = 0;
    pthread_mutex_lock(&vmm_mu);
    for (int i = 0; i < VMM_MAX && !found; ++i)
        found = vmm_registered[i].n && (uintptr_t)p >= vmm_registered[i].p &&
                (uintptr_t)p + n <= vmm_registered[i].p + vmm_registered[i].n;
    pthread_mutex_unlock(&vmm_mu);
    return found;
}

/* Copies and fills queued on the device, in order with kernels. */
typedef struct vmm_copy {
    void *dst;
    const void *src;
    size_t n;
    int fill, value;
} vmm_copy;

static inline void vmm_do_copy(void *arg) {
    vmm_copy *c = (vmm_copy *)arg;
    if (c->fill) memset(c->dst, c->value, c->n);
    else memcpy(c->dst, c->src, c->n);
    free(c);
}

/* Queues a copy or fill of device range [va, va+n), which must lie in one
 * mapping, with host memory at `host` (to_device says which way). */
static inline int vmm_queue(fake_device *d, uintptr_t va, unsigned char *host, size_t n, int to_device, int fill,
                          int value) {
    for (size_t i = 0; i < n;) {
        size_t run = 0;
        unsigned char *dev = vmm_view(va + i, &run);
        void *base;
        size_t size;
        if (!dev && fake_find((const void *)(va + i), &base, &size)) {
            /* cuMemAlloc's memory, which the double keeps in the process. */
            dev = (unsigned char *)(va + i);
            run = (size_t)((unsigned char *)base + size - dev);
        }
        if (!dev) return VMM_EINVAL;
        /* The real driver refuses a copy that crosses from one mapped
         * allocation into the next, however contiguous their addresses. */
        if (run < n - i) {
            fprintf(stderr, VMM_DRIVER ": a copy of [%p, +%zu) crosses the end of a mapped allocation at %p\n",
                    (void *)va, n, (void *)(va + i + run));
            return VMM_EINVAL;
        }
        if (run > n - i) run = n - i;
        vmm_copy *c = (vmm_copy *)calloc(1, sizeof *c);
        if (fill) *c = (vmm_copy){dev, NULL, run, 1, value};
        else if (to_device) *c = (vmm_copy){dev, host + i, run, 0, 0};
        else *c = (vmm_copy){host + i, dev, run, 0, 0};
        fake_submit_owned_work(d, vmm_do_copy, c);
        i += run;
    }
    return VMM_OK;
}

/* Queues a copy between two device ranges (one device's memory to
 * another's, or within one), view to view as a copy engine would. */
static inline int vmm_queue_between(fake_device *d, uintptr_t dst, uintptr_t src, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t dst_run = 0, src_run = 0;
        unsigned char *to = vmm_view(dst + i, &dst_run), *from = vmm_view(src + i, &src_run);
        if (!to || !from) return VMM_EINVAL;
        size_t run = n - i;
        if (run > dst_run) run = dst_run;
        if (run > src_run) run = src_run;
        vmm_copy *c = (vmm_copy *)calloc(1, sizeof *c);
        *c = (vmm_copy){to, from, run, 0, 0};
        fake_submit_owned_work(d, vmm_do_copy, c);
        i += run;
    }
    return VMM_OK;
}
