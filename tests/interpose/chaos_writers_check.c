/* Threads that write buffers another thread allocated, while that thread's
 * allocations set off chaos mode's cycles (ADSM_CHAOS_RELEASE_EVERY).  Under
 * batch, which protects nothing it releases, a cycle of the allocating
 * thread's context copied the buffers to the device and back, and the
 * writers' stores made between the two copies were lost (a JVM at a 4 KiB
 * threshold crashed in its compiler; here a writer read back an older
 * value than it had just stored).  Now a cycle holds their writes: with
 * more writers than cores, a writer often reaches the fault handler only
 * after the hold that closed its page is over, and was then taken for a
 * program fault (a segmentation fault).  Under rolling, a writer's fault
 * that sent another writer's block ahead while a cycle's release went
 * through the objects left that block to a copy still on its way when the
 * release closed it, and the block's next fetch could overtake the copy.
 * Each writer stores increasing values and reads back the one before. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kWriters = 6, kSlots = 8192, kRounds = 20000 };

static volatile long *buffers[kWriters];
static atomic_int writers_started, stop;

static void *writer(void *arg) {
    volatile long *b = buffers[(long)arg];
    long lost = 0;
    atomic_fetch_add(&writers_started, 1);
    for (long i = 1; !atomic_load_explicit(&stop, memory_order_relaxed) && !lost; ++i) {
        b[i % kSlots] = i;
        if (i > 1 && b[(i - 1) % kSlots] != i - 1) lost = i;
    }
    return (void *)lost;
}

int main(void) {
    for (int w = 0; w < kWriters; ++w) {
        buffers[w] = calloc(kSlots, sizeof(long));
        if (!buffers[w]) return perror("calloc"), 2;
    }
    pthread_t t[kWriters];
    for (long w = 0; w < kWriters; ++w) pthread_create(&t[w], NULL, writer, (void *)w);
    while (atomic_load(&writers_started) < kWriters) sched_yield();
    /* Each shared allocation and free is a chance of a cycle; two seconds
     * at most (the writers, more than the cores, slow the rounds down by
     * as much as the scheduler makes them). */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int rounds = 0;
    for (; rounds < kRounds; ++rounds) {
        void *volatile q = malloc(100000); /* (volatile: not elided with its free) */
        free(q);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= 2) break;
    }
    atomic_store(&stop, 1);
    int bad = 0;
    for (int w = 0; w < kWriters; ++w) {
        void *lost;
        pthread_join(t[w], &lost);
        if (lost) {
            printf("writer %d lost a write: store %ld read back older\n", w, (long)lost);
            bad = 1;
        }
    }
    if (!bad) printf("chaos writers: %d writers read back every store through %d allocations\n", kWriters, rounds);
    fflush(stdout); /* before the runtime's statistics at exit */
    return bad;
}
