/* Finalization, disappearing links and roots in the manner of bdwgc's own
   tests: ordered finalizers run holder first, unordered ones with their
   client data intact, the finalizer a registration replaces is returned,
   links are cleared when their objects die and kept while they live,
   finalizers on demand wait for GC_invoke_finalizers, and ranges added
   with GC_add_roots keep what they point to until removed. */
#include <gc.h>
#include <gc/gc_mark.h>
#include <string.h>

#include "check.h"

#define N 1000

static void collect(int times) {
    clobber_stack();
    for (int i = 0; i < times; ++i) GC_gcollect();
}

/* ---- ordered: a -> b -> c */
static int g_order[3], g_ran;
static void record(void *obj, void *cd) {
    (void)obj;
    g_order[g_ran++] = (int)(GC_word)cd;
}
static __attribute__((noinline)) void make_chain(void) {
    void **a = GC_MALLOC(16), **b = GC_MALLOC(16), **c = GC_MALLOC(16);
    a[0] = b;
    b[0] = c;
    GC_REGISTER_FINALIZER(a, record, (void *)0, NULL, NULL);
    GC_REGISTER_FINALIZER(b, record, (void *)1, NULL, NULL);
    GC_REGISTER_FINALIZER(c, record, (void *)2, NULL, NULL);
}

/* The chain is made deeper down the stack than any frame of collect(): an
   unoptimised, sanitized build leaves slots of a frame unwritten (its
   redzones), and collect()'s frame lying over make_chain's old one kept
   the chain's pointers there, below clobber_stack's reach. */
static __attribute__((noinline)) void make_chain_deep(void) {
    volatile char pad[4096];
    pad[0] = 0;
    make_chain();
    pad[1] = pad[0];
}

/* ---- a finalizer is the program's own code: under the preload its large
   malloc is shared memory (in the heap's window), as anywhere else */
static int g_big_shared = -1;
static void allocate_big(void *obj, void *cd) {
    (void)obj;
    (void)cd;
    char *big = malloc(2u << 20);
    g_big_shared = big >= (char *)GC_least_plausible_heap_addr && big <= (char *)GC_greatest_plausible_heap_addr;
    free(big);
}
static __attribute__((noinline)) void make_big_allocator(void) {
    GC_REGISTER_FINALIZER(GC_MALLOC(16), allocate_big, NULL, NULL, NULL);
}

/* ---- unordered, with client data that must outlive the object */
#define MAGIC 0x5eed5eed5eedL
static int g_intact, g_unordered;
static void check_cd(void *obj, void *cd) {
    (void)obj;
    ++g_unordered;
    if (((long *)cd)[0] == MAGIC) ++g_intact;
}
static __attribute__((noinline)) void make_unordered(void) {
    for (int i = 0; i < N; ++i) {
        void *obj = GC_MALLOC(32);
        long *cd = GC_MALLOC(64);  /* reachable only through the registration */
        cd[0] = MAGIC;
        GC_REGISTER_FINALIZER_NO_ORDER(obj, check_cd, cd, NULL, NULL);
    }
}

/* ---- disappearing links, kept where the collector does not look */
static void **g_links;
static void *g_kept[N / 2];
static __attribute__((noinline)) void make_links(void) {
    g_links = GC_MALLOC_ATOMIC(N * sizeof(void *));
    for (int i = 0; i < N; ++i) {
        long *obj = GC_MALLOC(32);
        obj[0] = i;
        g_links[i] = obj;
        CHECK(GC_GENERAL_REGISTER_DISAPPEARING_LINK(&g_links[i], obj) == GC_SUCCESS, "link %d", i);
        if (i % 2 == 0) g_kept[i / 2] = obj;
    }
    CHECK(GC_GENERAL_REGISTER_DISAPPEARING_LINK(&g_links[0], g_kept[0]) == GC_DUPLICATE, "a second registration");
}

/* ---- on demand */
static int g_notified, g_demanded;
static void notified(void) { ++g_notified; }
static void demanded(void *obj, void *cd) {
    (void)obj;
    (void)cd;
    ++g_demanded;
}
static __attribute__((noinline)) void make_demanded(void) {
    for (int i = 0; i < N; ++i) GC_REGISTER_FINALIZER(GC_MALLOC(24), demanded, NULL, NULL, NULL);
}

/* ---- roots in memory the collector does not scan */
static int g_rooted_died;
static void rooted_died(void *obj, void *cd) {
    (void)obj;
    (void)cd;
    ++g_rooted_died;
}
static __attribute__((noinline)) void fill_roots(void **roots) {
    for (int i = 0; i < N; ++i) {
        long *obj = GC_MALLOC(48);
        obj[0] = i;
        roots[i] = obj;
        GC_REGISTER_FINALIZER(obj, rooted_died, NULL, NULL, NULL);
    }
}

int main(void) {
    GC_INIT();

    make_chain_deep();
    for (int i = 0; i < 6 && g_ran < 3; ++i) collect(1);
    CHECK(g_ran == 3 && g_order[0] == 0 && g_order[1] == 1 && g_order[2] == 2, "ran %d: %d %d %d", g_ran,
          g_order[0], g_order[1], g_order[2]);

    make_big_allocator();
    collect(2);
    for (int i = 0; i < 1000 && g_big_shared < 0; ++i) GC_MALLOC(64);
    CHECK(g_big_shared >= 0, "the finalizer did not run");
    if (getenv("COMPAT_EXPECT_SHARED_MALLOC"))
        CHECK(g_big_shared == 1, "a finalizer's malloc was not served as the program's own");

    make_unordered();
    collect(2);
    CHECK(g_unordered >= N * 9 / 10, "%d of %d unordered finalizers ran", g_unordered, N);
    CHECK(g_intact == g_unordered, "%d of %d found their client data intact", g_intact, g_unordered);

    GC_finalization_proc ofn = NULL;
    void *ocd = NULL;
    void *obj = GC_MALLOC(16);
    GC_REGISTER_FINALIZER(obj, record, (void *)7, &ofn, &ocd);
    CHECK(ofn == NULL, "no finalizer before");
    GC_REGISTER_FINALIZER(obj, NULL, NULL, &ofn, &ocd);
    CHECK(ofn == record && ocd == (void *)7, "the replaced finalizer comes back");
    GC_REGISTER_FINALIZER(&g_ran, record, NULL, &ofn, &ocd);  /* not in the heap: ignored */
    CHECK(ofn == NULL && ocd == NULL, "no finalizer outside the heap");

    make_links();
    collect(3);
    int cleared = 0;
    for (int i = 0; i < N; ++i) {
        if (i % 2 == 0) CHECK(g_links[i] == g_kept[i / 2], "a live object's link %d changed", i);
        else cleared += g_links[i] == NULL;
    }
    CHECK(cleared >= N / 2 * 9 / 10, "%d of %d links cleared", cleared, N / 2);
    CHECK(GC_unregister_disappearing_link(&g_links[0]) == 1, "unregister a link");
    CHECK(GC_unregister_disappearing_link(&g_links[0]) == 0, "unregister it again");
    CHECK(GC_move_disappearing_link(&g_links[2], &g_links[1]) == GC_SUCCESS, "move a link");
    CHECK(GC_move_disappearing_link(&g_links[2], &g_links[1]) == GC_NOT_FOUND, "move it from where it was");
    CHECK(GC_move_disappearing_link(&g_links[4], &g_links[1]) == GC_DUPLICATE, "move onto a link");

    GC_set_finalize_on_demand(1);
    GC_set_finalizer_notifier(notified);
    CHECK(GC_get_finalize_on_demand() == 1 && GC_get_finalizer_notifier() == notified, "settings");
    make_demanded();
    collect(2);
    CHECK(g_notified >= 1, "the notifier was not called");
    CHECK(g_demanded == 0, "%d finalizers ran without being asked", g_demanded);
    CHECK(GC_should_invoke_finalizers(), "finalizers should be due");
    int ran = GC_invoke_finalizers();
    CHECK(ran >= N * 9 / 10 && ran == g_demanded, "GC_invoke_finalizers ran %d (%d counted)", ran, g_demanded);
    CHECK(!GC_should_invoke_finalizers() && GC_invoke_finalizers() == 0, "nothing left");
    GC_set_finalize_on_demand(0);

    void **roots = malloc(N * sizeof(void *));  /* the C library's: never scanned */
    fill_roots(roots);
    GC_add_roots(roots, roots + N);
    collect(2);
    CHECK(g_rooted_died == 0, "%d objects held from added roots died", g_rooted_died);
    for (int i = 0; i < N; ++i) CHECK(((long *)roots[i])[0] == i, "rooted object %d changed", i);
    GC_remove_roots(roots, roots + N);
    collect(2);
    CHECK(g_rooted_died >= N * 9 / 10, "%d of %d died once their roots went", g_rooted_died, N);
    free(roots);

    check_served_by_adsm(g_links);
    adsmGcStats st = adsm_stats();
    CHECK(st.finalizers_run >= 3 * N * 8 / 10 && st.weak_cleared >= N / 2 * 9 / 10, "%llu finalizers, %llu links",
          (unsigned long long)st.finalizers_run, (unsigned long long)st.weak_cleared);
    printf("finalize: ok (%llu finalizers run, %llu links cleared)\n", (unsigned long long)st.finalizers_run,
           (unsigned long long)st.weak_cleared);
    return 0;
}
