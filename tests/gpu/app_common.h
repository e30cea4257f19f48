/*
 * Shared by the GPU test programs: they are written as ordinary CUDA or
 * Level Zero programs, run plain, under the preload with the GPU APIs left
 * alone, and routed through adsm, and check their own results in each.
 */
#pragma once

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The module every program loads: kernels and their parameter sizes, in the
 * test doubles' module format (kernels.c has the code). */
#define MODULE_IMAGE "vec_add:8,8,8,4;scale:8,4,4;sum_list:8,8;crash:;unregistered:"

enum mode { PLAIN, PASSTHROUGH, ROUTED, ERRORS };

static inline enum mode parse_mode(int argc, char **argv) {
    const char *names[] = {"plain", "passthrough", "routed", "errors"};
    for (int i = 0; argc == 2 && i < 4; ++i)
        if (strcmp(argv[1], names[i]) == 0) return (enum mode)i;
    fprintf(stderr, "usage: %s plain|passthrough|routed|errors\n", argv[0]);
    exit(2);
}

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

/* Whether p is adsm shared memory of n bytes: asked of the preloaded
 * library, if there is one, without linking it. */
static inline int is_shared(const void *p, size_t n) {
    size_t (*size_of)(const void *) = (size_t(*)(const void *))dlsym(RTLD_DEFAULT, "adsmGetSize");
    return size_of && size_of(p) == n;
}

/* Routed, managed memory is shared memory; otherwise it is the driver's. */
static inline void check_memory(enum mode m, const void *p, size_t n) {
    if (m == ROUTED || m == ERRORS) CHECK(is_shared(p, n), "%p should be adsm shared memory of %zu bytes", p, n);
    else CHECK(!is_shared(p, n), "%p should be the driver's memory", p);
}

/* Routed to sim or cpu, no launch reaches the driver; otherwise (and on
 * the cuda and levelzero devices, which run the program's own kernels)
 * they all do. */
static inline int on_gpu_backend(void) {
    const char *dev = getenv("ADSM_DEVICE");
    return dev && (strcmp(dev, "cuda") == 0 || strcmp(dev, "levelzero") == 0);
}

static inline void check_launches(enum mode m, long reached, const char *what) {
    if (m == ROUTED && !on_gpu_backend())
        CHECK(reached == 0, "%ld %s calls reached the driver", reached, what);
    else CHECK(reached > 0, "no %s call reached the driver", what);
}

static inline long driver_calls(const char *lib, const char *counter, const char *name) {
    void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
    long (*calls)(const char *) = h ? (long (*)(const char *))dlsym(h, counter) : NULL;
    CHECK(calls != NULL, "%s is not loaded", lib);
    return calls(name);
}

static inline void check_floats(const float *v, unsigned n, float (*expected)(unsigned), const char *what) {
    for (unsigned i = 0; i < n; ++i)
        CHECK(v[i] == expected(i), "%s[%u] = %g, expected %g", what, i, v[i], expected(i));
}

/* The bytes of the buffer the programs register with the driver: large
 * enough that the preload's malloc shares it. */
#define REGISTERED_BYTES (2u << 20)

/* Routed, a malloc'd buffer that large is shared memory, which the
 * runtime registers as it needs; otherwise the driver's registration holds. */
static inline void check_registered(enum mode m, const void *p) {
    if (m == ROUTED || m == ERRORS) CHECK(is_shared(p, REGISTERED_BYTES), "%p should be adsm shared memory", p);
}

/* A host function's step between kernels on a stream (the CUDA programs):
 * it checks that v[i] == mul * i + add, what the kernel before it wrote,
 * then adds 1, which the kernel after it must see.  `status` is a
 * callback's (a CUresult or cudaError_t). */
typedef struct {
    float *v;
    unsigned n;
    float mul, add;
    int calls, seen, status;
} host_step;

static inline void host_step_run(host_step *s) {
    s->calls++;
    s->seen = 1;
    for (unsigned i = 0; i < s->n; ++i) {
        if (s->v[i] != s->mul * i + s->add) s->seen = 0;
        s->v[i] += 1;
    }
}
