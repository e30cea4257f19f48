/* bdwgc's environment variables, which programs and their users set:
   GC_DONT_GC turns collection off, GC_MAXIMUM_HEAP_SIZE bounds the heap
   (allocation past it returns what the out-of-memory handler returns). */
#include <gc.h>
#include <string.h>

#include "check.h"

static size_t g_oom_calls;
static void *oom(size_t n) {
    (void)n;
    ++g_oom_calls;
    return NULL;
}

int main(void) {
    GC_INIT();
    GC_set_oom_fn(oom);
    CHECK(GC_get_oom_fn() == oom, "the handler set is the one got");
    const char *dont = getenv("GC_DONT_GC"), *max = getenv("GC_MAXIMUM_HEAP_SIZE");
    if (dont) {
        CHECK(GC_is_disabled(), "GC_DONT_GC is set, collection is on");
        for (int i = 0; i < 100000; ++i) GC_MALLOC(256);
        GC_gcollect();
        CHECK(GC_get_gc_no() == 0, "%lu collections with GC_DONT_GC", (unsigned long)GC_get_gc_no());
    }
    if (max) {
        /* 64 MiB live, in 1 MiB objects held from a root: past a 16 MiB heap. */
        static void *volatile held[64];  /* (volatile: the stores must happen) */
        int got = 0;
        for (int i = 0; i < 64; ++i)
            if ((held[i] = GC_MALLOC_ATOMIC(1u << 20))) ++got;
        CHECK(got < 64 && g_oom_calls == (size_t)(64 - got), "%d of 64 MiB allocated, %zu failures reported", got,
              g_oom_calls);
        CHECK(GC_get_heap_size() <= (16u << 20), "a heap of %zu bytes", GC_get_heap_size());
    }
    CHECK(dont || max, "run with GC_DONT_GC or GC_MAXIMUM_HEAP_SIZE set");
    void *p = GC_MALLOC(16);
    check_served_by_adsm(p);
    printf("environment: ok (%zu allocations refused)\n", g_oom_calls);
    return 0;
}
