/* What every program here checks besides its own results: that adsm's
   collector served it (through adsm's API, looked up at run time, so that
   one source builds against bdwgc's header and against adsm's). */
#ifndef COMPAT_CHECK_H
#define COMPAT_CHECK_H

#include <adsm.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static __attribute__((unused)) void *adsm_function(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    CHECK(f != NULL, "%s: adsm's runtime is not in this process (libgc would serve it)", name);
    return f;
}

/* obj is an object of adsm's collected heap (and so shared memory). */
static __attribute__((unused)) void check_served_by_adsm(void *obj) {
    void *(*base)(const void *) = (void *(*)(const void *))adsm_function("adsmGcBase");
    CHECK(base((char *)obj + 1) == obj, "%p is not an object of adsm's heap", obj);
}

static __attribute__((unused)) adsmGcStats adsm_stats(void) {
    adsmError_t (*get)(adsmGcStats *) = (adsmError_t(*)(adsmGcStats *))adsm_function("adsmGcGetStats");
    adsmGcStats s;
    CHECK(get(&s) == adsmSuccess, "adsmGcGetStats failed");
    return s;
}

/* Frames of their own, so that what they held is gone from the stack. */
static __attribute__((noinline, unused)) void clobber_stack(void) {
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0;
}

#endif
