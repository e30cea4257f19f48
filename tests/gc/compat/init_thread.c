/* The collector started from a thread other than the main one (as bdwgc's
   initsecondarythread test does), then used by the main thread. */
#define GC_THREADS
#include <gc.h>
#include <pthread.h>

#include "check.h"

static void *start_and_allocate(void *arg) {
    (void)arg;
    GC_INIT();
    struct GC_stack_base sb;
    CHECK(GC_get_stack_base(&sb) == GC_SUCCESS && sb.mem_base > (void *)&sb, "stack base");
    CHECK(GC_thread_is_registered(), "the thread that started the collector is registered");
    CHECK(GC_register_my_thread(&sb) == GC_DUPLICATE, "registered twice");
    long *p = GC_MALLOC_ATOMIC(8 * sizeof(long));
    CHECK(p != NULL, "out of memory");
    for (int i = 0; i < 8; ++i) p[i] = i;
    return p;
}

int main(void) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, start_and_allocate, NULL) == 0, "pthread_create");
    long *p = NULL;
    CHECK(pthread_join(t, (void **)&p) == 0, "pthread_join");
    CHECK(!GC_thread_is_registered(), "main was never registered");
    struct GC_stack_base sb;
    CHECK(GC_get_stack_base(&sb) == GC_SUCCESS, "stack base");
    GC_allow_register_threads();
    CHECK(GC_register_my_thread(&sb) == GC_SUCCESS, "registration");
    for (int i = 0; i < 100000; ++i) GC_MALLOC(64);
    GC_gcollect();
    for (int i = 0; i < 8; ++i) CHECK(p[i] == i, "the thread's object changed at %d", i);
    check_served_by_adsm(p);
    printf("init_thread: ok\n");
    return 0;
}
