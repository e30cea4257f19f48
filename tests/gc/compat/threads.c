/* Threads that allocate and check their own trees while others collect,
   created through bdwgc's pthread redirections (GC_THREADS). */
#define GC_THREADS
#include <gc.h>
#include <pthread.h>

#include "check.h"

#define THREADS 4

typedef struct Tree {
    struct Tree *l, *r;
    long key;
} Tree;

static Tree *tree(int depth, long key) {
    Tree *t = GC_NEW(Tree);
    CHECK(t != NULL, "out of memory");
    t->key = key;
    if (depth > 0) {
        t->l = tree(depth - 1, 2 * key);
        t->r = tree(depth - 1, 2 * key + 1);
    }
    return t;
}

static long check(const Tree *t, long key) {
    if (!t) return 0;
    if (t->key != key) return -1;
    long l = check(t->l, 2 * key), r = check(t->r, 2 * key + 1);
    return l < 0 || r < 0 ? -1 : 1 + l + r;
}

static void *work(void *arg) {
    long id = (long)arg;
    Tree *keep = tree(12, 1);
    for (int round = 0; round < 60; ++round) {
        Tree *t = tree(10, 1);
        CHECK(check(t, 1) == (1 << 11) - 1, "thread %ld round %d: a fresh tree is wrong", id, round);
        CHECK(check(keep, 1) == (1 << 13) - 1, "thread %ld round %d: the kept tree changed", id, round);
        if (round % 20 == 0) GC_gcollect();
    }
    check_served_by_adsm(keep);
    return keep;
}

int main(void) {
    GC_INIT();
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; ++i) CHECK(pthread_create(&t[i], NULL, work, (void *)i) == 0, "pthread_create");
    for (int i = 0; i < THREADS; ++i) {
        void *kept = NULL;
        CHECK(pthread_join(t[i], &kept) == 0, "pthread_join");
        CHECK(check(kept, 1) == (1 << 13) - 1, "thread %d's tree after it ended", i);
    }
    adsmGcStats st = adsm_stats();
    CHECK(st.collections >= 4, "%llu collections", (unsigned long long)st.collections);
    printf("threads: ok (%llu collections)\n", (unsigned long long)st.collections);
    return 0;
}
