/*
 * A thread pool's allocation pattern, for the preload cost benchmark
 * (preload-cost): each task runs on a thread of its own, mallocs a buffer,
 * fills it and frees it.  Under the preload each buffer is shared memory;
 * a block freed by one task's thread should serve the next task's malloc,
 * as the C library's freed memory does, not make fresh pages every time.
 *
 *   adsm-pool-mallocs [TASKS [MIB]]    (default 200 tasks of 8 MiB)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t g_bytes;

static void *task(void *arg) {
    unsigned char *p = malloc(g_bytes);
    if (!p) return arg;
    memset(p, 1, g_bytes);
    /* (Keeps the compiler from dropping the malloc, fill and free.) */
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
    return NULL;
}

int main(int argc, char **argv) {
    int tasks = argc > 1 ? atoi(argv[1]) : 200;
    g_bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 8) << 20;
    for (int i = 0; i < tasks; ++i) {
        pthread_t t;
        void *failed = NULL;
        if (pthread_create(&t, NULL, task, &g_bytes) != 0 || pthread_join(t, &failed) != 0 || failed) {
            fprintf(stderr, "adsm-pool-mallocs: task %d failed\n", i);
            return 1;
        }
    }
    printf("%d tasks of %zu MiB\n", tasks, g_bytes >> 20);
    return 0;
}
