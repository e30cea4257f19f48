/*
 * The device of the drivers' test doubles: an in-order queue of work run
 * by one worker thread, so that launches are asynchronous and
 * synchronisation means something.  Kernels are host functions found by
 * name; a module image is a text such as "vec_add:8,8,8,4;scale:8,4,4"
 * giving each kernel's parameter sizes, as a real module would.
 */
#pragma once

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../gpu_idx.h"

#define FAKE_MAX_PARAMS 16

/* The double's settings (FAKE_* variables), copied when it is loaded, as a
 * driver reads its settings when it starts.  Read with getenv at each call,
 * they were the program's environment strings read inside the runtime's
 * own driver calls, where a string in shared memory the runtime had closed
 * cannot be fetched: the fault's own copy faulted again. */
static char fake_settings[4096];
__attribute__((constructor)) static void fake_copy_settings(void) {
    extern char **environ;
    size_t at = 0;
    for (char **e = environ; e && *e; ++e) {
        size_t n = strlen(*e) + 1;
        if (strncmp(*e, "FAKE_", 5) != 0) continue;
        if (at + n >= sizeof fake_settings) {
            fprintf(stderr, "driver double: more FAKE_ settings than it keeps (%zu bytes)\n", sizeof fake_settings);
            abort();
        }
        memcpy(fake_settings + at, *e, n);
        at += n;
    }
}
static const char *fake_getenv(const char *name) {
    const size_t len = strlen(name);
    for (const char *p = fake_settings; *p; p += strlen(p) + 1)
        if (strncmp(p, name, len) == 0 && p[len] == '=') return p + len + 1;
    return NULL;
}

typedef struct fake_kernel {
    char name[64];
    unsigned nparams;
    size_t sizes[FAKE_MAX_PARAMS];
    gpu_kernel fn;
} fake_kernel;

/* Parses one kernel's entry of a module image; 0 if the image lacks it.
 * An entry is "name:sizes" (the function is the program's symbol of that
 * name), "name=symbol:sizes" (a kernel whose name is no C identifier, such
 * as "remote.add") or "name@0xADDRESS:sizes" (the function at that address,
 * for kernels that have no symbol of their own, such as C++ templates). */
static int fake_module_find(const char *image, const char *name, fake_kernel *out) {
    size_t len = strlen(name);
    for (const char *p = image; p && *p;) {
        const char *colon = strchr(p, ':');
        if (!colon) return 0;
        const char *end = strchr(colon, ';');
        const char *at = memchr(p, '@', (size_t)(colon - p));
        const char *sym = memchr(p, '=', (size_t)(colon - p));
        const char *name_end = at ? at : sym ? sym : colon;
        if ((size_t)(name_end - p) == len && strncmp(p, name, len) == 0) {
            memset(out, 0, sizeof *out);
            strncpy(out->name, name, sizeof out->name - 1);
            for (const char *q = colon + 1; *q && q != end && out->nparams < FAKE_MAX_PARAMS;) {
                out->sizes[out->nparams++] = strtoul(q, (char **)&q, 10);
                if (*q == ',') ++q;
            }
            char symbol[128];
            snprintf(symbol, sizeof symbol, "%.*s", sym ? (int)(colon - sym - 1) : (int)len, sym ? sym + 1 : name);
            out->fn = at ? (gpu_kernel)(uintptr_t)strtoull(at + 1, NULL, 16) : (gpu_kernel)dlsym(RTLD_DEFAULT, symbol);
            return out->fn != NULL;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

typedef struct fake_job {
    fake_kernel kernel;
    int has_kernel;             /* 0: only a completion flag, or `work` */
    void (*work)(void *);       /* a copy or host function queued in order */
    void *work_arg;
    int owns_arg;               /* work_arg is the job's (calloc'd): freed if work never runs */
    gpu_dim grid, block;
    _Alignas(16) unsigned char argbuf[FAKE_MAX_PARAMS * 64]; /* arguments as a kernel reads them: aligned */
    void *args[FAKE_MAX_PARAMS];
    atomic_int *done_flag;      /* set to 1 when the job has run */
    _Atomic unsigned long *done_gen; /* raised to `gen` when the job has run (an event's record) */
    unsigned long gen;
    struct fake_job *next;
} fake_job;

typedef struct fake_device {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fake_job *head, *tail;
    int busy, started;
    pthread_t worker;
    /* Runs a kernel job; 0 on success, else the error every later call
     * reports (a faulting kernel poisons a CUDA context).  NULL: the grid
     * runs on the worker thread, in the host's memory. */
    int (*run_kernel)(const fake_job *j);
    atomic_int error;
    atomic_int *shared_error;  /* where the error goes when several queues share one */
    int ordinal;               /* the GPU whose memory its kernels see */
} fake_device;

/* On a queue's worker: the GPU it belongs to. */
static __thread int fake_queue_ordinal;

static void *fake_worker(void *arg) {
    fake_device *d = (fake_device *)arg;
    fake_queue_ordinal = d->ordinal;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->head) pthread_cond_wait(&d->cv, &d->mu);
        fake_job *j = d->head;
        d->head = j->next;
        if (!d->head) d->tail = NULL;
        d->busy = 1;
        pthread_mutex_unlock(&d->mu);
        atomic_int *error = d->shared_error ? d->shared_error : &d->error;
        if (j->has_kernel && !atomic_load(error)) {
            if (d->run_kernel) {
                int e = d->run_kernel(j);
                if (e) atomic_store(error, e);
            } else {
                gpu_run_grid(j->kernel.fn, j->grid, j->block, j->args);
            }
        }
        if (j->work && !atomic_load(error)) j->work(j->work_arg);
        else if (j->work && j->owns_arg) free(j->work_arg); /* a lost device runs nothing more */
        if (j->done_flag) atomic_store(j->done_flag, 1);
        if (j->done_gen) {
            unsigned long seen = atomic_load(j->done_gen);
            while (seen < j->gen && !atomic_compare_exchange_weak(j->done_gen, &seen, j->gen)) {
            }
        }
        free(j);
        pthread_mutex_lock(&d->mu);
        d->busy = 0;
        pthread_cond_broadcast(&d->cv);
    }
    return NULL;
}

/* Appends a job to the queue, starting the worker on first use. */
static void fake_enqueue(fake_device *d, fake_job *j) {
    pthread_mutex_lock(&d->mu);
    if (!d->started) {
        d->started = 1;
        pthread_create(&d->worker, NULL, fake_worker, d);
    }
    if (d->tail) d->tail->next = j;
    else d->head = j;
    d->tail = j;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Queues a launch (the argument values are copied now) or, with k NULL, a
 * marker that sets *done when everything before it has run. */
static void fake_submit(fake_device *d, const fake_kernel *k, gpu_dim grid, gpu_dim block, void **params,
                        atomic_int *done) {
    fake_job *j = (fake_job *)calloc(1, sizeof *j);
    if (k) j->kernel = *k;
    j->has_kernel = k != NULL;
    j->grid = grid;
    j->block = block;
    j->done_flag = done;
    if (done) atomic_store(done, 0);
    size_t off = 0;
    for (unsigned i = 0; k && i < k->nparams; ++i) {
        memcpy(j->argbuf + off, params[i], k->sizes[i]);
        j->args[i] = j->argbuf + off;
        off += (k->sizes[i] + 15) / 16 * 16;
    }
    fake_enqueue(d, j);
}

/* Queues a marker that raises *done to gen once everything queued before
 * it has run (an event's record: a wait names the record it waits for). */
static inline void fake_submit_marker(fake_device *d, _Atomic unsigned long *done, unsigned long gen) {
    fake_job *j = (fake_job *)calloc(1, sizeof *j);
    j->done_gen = done;
    j->gen = gen;
    fake_enqueue(d, j);
}

/* Queues `work(arg)` behind everything queued so far. */
static inline void fake_submit_work(fake_device *d, void (*work)(void *), void *arg) {
    fake_job *j = (fake_job *)calloc(1, sizeof *j);
    j->work = work;
    j->work_arg = arg;
    fake_enqueue(d, j);
}
/* The same for an arg of calloc's that work frees. */
static inline void fake_submit_owned_work(fake_device *d, void (*work)(void *), void *arg) {
    fake_job *j = (fake_job *)calloc(1, sizeof *j);
    j->work = work;
    j->work_arg = arg;
    j->owns_arg = 1;
    fake_enqueue(d, j);
}

static void fake_drain(fake_device *d) {
    pthread_mutex_lock(&d->mu);
    while (d->head || d->busy) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

/* The doubles' memory: whole pages from the system (so the runtime's malloc
 * never sees it), remembered so that a bad free is an error, not a crash. */
#define FAKE_MAX_ALLOCS 1024
static struct {
    void *p;
    size_t n;
} fake_allocs[FAKE_MAX_ALLOCS];
static pthread_mutex_t fake_allocs_mu = PTHREAD_MUTEX_INITIALIZER;

static void *fake_alloc(size_t n) {
    /* Shared: a kernel of the discrete device runs in a child process (fake_vmm.h)
     * and its writes to this memory must reach the program. */
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    pthread_mutex_lock(&fake_allocs_mu);
    for (int i = 0; i < FAKE_MAX_ALLOCS; ++i)
        if (!fake_allocs[i].p) {
            fake_allocs[i].p = p;
            fake_allocs[i].n = n;
            pthread_mutex_unlock(&fake_allocs_mu);
            return p;
        }
    pthread_mutex_unlock(&fake_allocs_mu);
    munmap(p, n);
    return NULL;
}

/* The live allocation of the double that holds p: 1 and its range, or 0. */
static inline int fake_find(const void *p, void **base, size_t *n) {
    int found = 0;
    pthread_mutex_lock(&fake_allocs_mu);
    for (int i = 0; i < FAKE_MAX_ALLOCS && !found; ++i)
        if (fake_allocs[i].p && (const char *)p >= (const char *)fake_allocs[i].p &&
            (const char *)p < (const char *)fake_allocs[i].p + fake_allocs[i].n) {
            *base = fake_allocs[i].p;
            *n = fake_allocs[i].n;
            found = 1;
        }
    pthread_mutex_unlock(&fake_allocs_mu);
    return found;
}

/* 0 if p is not a live allocation of the double. */
static int fake_free(void *p) {
    pthread_mutex_lock(&fake_allocs_mu);
    for (int i = 0; p && i < FAKE_MAX_ALLOCS; ++i)
        if (fake_allocs[i].p == p) {
            munmap(p, fake_allocs[i].n);
            fake_allocs[i].p = NULL;
            pthread_mutex_unlock(&fake_allocs_mu);
            return 1;
        }
    pthread_mutex_unlock(&fake_allocs_mu);
    return 0;
}

/* Calls per entry point, for the tests to see what reached the driver. */
#define FAKE_COUNTERS 128
static struct {
    const char *name;
    atomic_long n;
} fake_counters[FAKE_COUNTERS];
static pthread_mutex_t fake_counters_mu = PTHREAD_MUTEX_INITIALIZER;

/* A failure a test asks for in the environment variable FAKE_FAIL_ENV
 * (defined by the double), "entry:n": the nth call of that entry point
 * (from 1) fails, once, as the driver fails when it runs out of memory;
 * "entry:n+": that call and every later one fail.  The runtime's handling
 * of each call's failure can then be tried in turn. */
#ifndef FAKE_FAIL_ENV
#error "a double names the variable that asks it to fail a call (FAKE_FAIL_ENV)"
#endif
static struct {
    char entry[96];
    long nth;
    int onward;
} fake_failure = {"", -1, 0};
static pthread_once_t fake_failure_once = PTHREAD_ONCE_INIT;
static void fake_read_failure(void) {
    const char *v = fake_getenv(FAKE_FAIL_ENV);
    if (!v || !*v) return;
    const char *colon = strrchr(v, ':');
    char *end = NULL;
    long nth = colon ? strtol(colon + 1, &end, 10) : 0;
    const int onward = end && *end == '+';
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof fake_failure.entry || end[onward] || nth < 1) {
        fprintf(stderr, "driver double: %s=%s is not entry:n or entry:n+ (n from 1)\n", FAKE_FAIL_ENV, v);
        abort();
    }
    memcpy(fake_failure.entry, v, (size_t)(colon - v));
    fake_failure.nth = nth;
    fake_failure.onward = onward;
}
static int fake_fails_here(const char *name, long nth) {
    pthread_once(&fake_failure_once, fake_read_failure);
    const int due = nth == fake_failure.nth || (fake_failure.onward && nth > fake_failure.nth);
    return due && strcmp(name, fake_failure.entry) == 0;
}

/* Counts a call of the entry point; true if it is to fail (FAKE_FAIL_ENV). */
static int fake_count(const char *name) {
    long n = 0;
    pthread_mutex_lock(&fake_counters_mu);
    for (int i = 0; i < FAKE_COUNTERS; ++i) {
        if (!fake_counters[i].name) fake_counters[i].name = name;
        if (strcmp(fake_counters[i].name, name) == 0) {
            n = atomic_fetch_add(&fake_counters[i].n, 1) + 1;
            break;
        }
    }
    pthread_mutex_unlock(&fake_counters_mu);
    if (n == 0) {
        fprintf(stderr, "driver double: more than %d entry points called; FAKE_COUNTERS is too small\n", FAKE_COUNTERS);
        abort();
    }
    return fake_fails_here(name, n);
}

/* The ith entry point called so far, and its calls; NULL past the last. */
static const char *fake_entry(int i, long *calls) {
    const char *name = NULL;
    pthread_mutex_lock(&fake_counters_mu);
    if (i >= 0 && i < FAKE_COUNTERS && fake_counters[i].name) {
        name = fake_counters[i].name;
        *calls = atomic_load(&fake_counters[i].n);
    }
    pthread_mutex_unlock(&fake_counters_mu);
    return name;
}

static long fake_count_of(const char *name) {
    long n = 0;
    pthread_mutex_lock(&fake_counters_mu);
    for (int i = 0; i < FAKE_COUNTERS && fake_counters[i].name; ++i)
        if (strcmp(fake_counters[i].name, name) == 0) n = atomic_load(&fake_counters[i].n);
    pthread_mutex_unlock(&fake_counters_mu);
    return n;
}
