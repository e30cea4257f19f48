/* Allocation in the manner of bdwgc's own tests: lists and trees checked
   across many collections, atomic arrays, realloc through many sizes,
   huge objects that must not pile up, strings, sizes and bases,
   uncollectable and freed objects; and around them, the collection events
   and the start callback, and GC_is_visible's warnings. */
#include <gc.h>
#include <gc/gc_mark.h>
#include <string.h>

#include "check.h"

typedef struct Cell {
    long v;
    struct Cell *next;
} Cell;

typedef struct Tree {
    struct Tree *l, *r;
    long key;
} Tree;

static Cell *list(long n) {
    Cell *l = NULL;
    for (long i = n; i > 0; --i) {
        Cell *c = GC_NEW(Cell);
        CHECK(c != NULL, "out of memory");
        c->v = i;
        c->next = l;
        l = c;
    }
    return l;
}

static long sum(const Cell *l) {
    long s = 0;
    for (; l; l = l->next) s += l->v;
    return s;
}

static Tree *tree(int depth, long *next) {
    Tree *t = GC_NEW(Tree);
    CHECK(t != NULL, "out of memory");
    t->key = (*next)++;
    if (depth > 0) {
        t->l = tree(depth - 1, next);
        t->r = tree(depth - 1, next);
    }
    return t;
}

/* The keys in order, as built: -1 if one is wrong. */
static long walk(const Tree *t, long *expect) {
    if (!t) return 0;
    if (t->key != (*expect)++) return -1;
    long l = walk(t->l, expect), r = walk(t->r, expect);
    return l < 0 || r < 0 ? -1 : 1 + l + r;
}

static int g_finalized;
static void count(void *obj, void *cd) {
    (void)obj;
    (void)cd;
    ++g_finalized;
}

/* Called with the world stopped for some: counting only. */
static unsigned long g_events[GC_EVENT_THREAD_UNSUSPENDED + 1], g_starts;
static void on_event(GC_EventType e) { ++g_events[e]; }
static void on_start(void) { ++g_starts; }

static int g_warnings;
static GC_word g_warned_about;
static void on_warning(char *msg, GC_word arg) {
    (void)msg;
    ++g_warnings;
    g_warned_about = arg;
}

static __attribute__((noinline)) GC_word hidden_uncollectable(void) {
    long *u = GC_MALLOC_UNCOLLECTABLE(64);
    CHECK(u != NULL, "out of memory");
    u[0] = 4242;
    GC_REGISTER_FINALIZER(u, count, NULL, NULL, NULL);
    return GC_HIDE_POINTER(u);
}

int main(void) {
    GC_INIT();
    GC_set_on_collection_event(on_event);
    GC_set_start_callback(on_start);
    GC_set_warn_proc(on_warning);
    CHECK(GC_get_on_collection_event() == on_event && GC_get_start_callback() == on_start &&
          GC_get_warn_proc() == on_warning, "the callbacks set are the ones got");
    GC_word collections_before = GC_get_gc_no();
    Cell *keep = list(10000);
    long next = 0;
    Tree *t = tree(14, &next);
    for (int round = 0; round < 40; ++round) {
        list(5000);
        long junk = 0;
        tree(9, &junk);
        if (round % 10 == 0) GC_gcollect();
        CHECK(sum(keep) == 10000L * 10001 / 2, "round %d: the list changed", round);
        long expect = 0;
        CHECK(walk(t, &expect) == next, "round %d: the tree changed", round);
    }

    /* Atomic objects are not read by the collector, but kept. */
    long *a = GC_MALLOC_ATOMIC(100000 * sizeof(long));
    CHECK(a != NULL, "out of memory");
    for (long i = 0; i < 100000; ++i) a[i] = i * 7;
    for (int i = 0; i < 20; ++i) list(10000);
    GC_gcollect();
    for (long i = 0; i < 100000; ++i) CHECK(a[i] == i * 7, "atomic array at %ld", i);

    /* realloc keeps the contents through every size. */
    char *s = GC_MALLOC_ATOMIC(1);
    size_t have = 0;
    for (size_t n = 1; n < (3u << 20); n = n * 3 / 2 + 1) {
        s = GC_REALLOC(s, n);
        CHECK(s != NULL, "realloc to %zu", n);
        for (size_t i = 0; i < have; ++i) CHECK(s[i] == (char)(i * 31), "realloc to %zu lost byte %zu", n, i);
        for (size_t i = have; i < n; ++i) s[i] = (char)(i * 31);
        have = n;
    }
    s = GC_REALLOC(s, 10);
    for (size_t i = 0; i < 10; ++i) CHECK(s[i] == (char)(i * 31), "shrinking lost byte %zu", i);
    CHECK(GC_REALLOC(s, 0) == NULL, "realloc to 0 frees");
    void *fresh = GC_REALLOC(NULL, 100);
    CHECK(fresh != NULL && GC_size(fresh) >= 100, "realloc of NULL allocates");

    /* Huge objects: each dropped one must go, or the heap would grow
       to 1 GiB. */
    for (int i = 0; i < 32; ++i) {
        char *h = GC_MALLOC_ATOMIC(32u << 20);
        CHECK(h != NULL, "huge object %d", i);
        h[0] = h[(32u << 20) - 1] = 1;
    }
    GC_gcollect();
    CHECK(GC_get_heap_size() < (400u << 20), "heap of %zu bytes after dropping huge objects", GC_get_heap_size());

    /* Strings, sizes and bases. */
    char *dup = GC_STRDUP("collected");
    CHECK(dup && strcmp(dup, "collected") == 0, "strdup");
    char *ndup = GC_STRNDUP("collected", 4);
    CHECK(ndup && strcmp(ndup, "coll") == 0, "strndup");
    Cell *c = GC_NEW(Cell);
    CHECK(GC_size(c) >= sizeof(Cell), "size %zu", GC_size(c));
    CHECK(GC_base((char *)c + 5) == c, "base of an interior pointer");
    CHECK(GC_base(&keep) == NULL, "a static variable is no object");
    CHECK(GC_is_heap_ptr(c) && !GC_is_heap_ptr(&keep), "is_heap_ptr");

    /* Uncollectable: kept with no reference, until freed. */
    GC_word hidden = hidden_uncollectable();
    clobber_stack();
    for (int i = 0; i < 10; ++i) list(10000);
    GC_gcollect();
    long *u = GC_REVEAL_POINTER(hidden);
    CHECK(u[0] == 4242 && g_finalized == 0, "the uncollectable object was collected");
    GC_FREE(u);
    GC_FREE(c);

    /* Visible: the stack, the data, a collected object with pointers; not
       the C library's heap. */
    CHECK(GC_is_visible(&t) == &t && GC_is_visible(&g_finalized) == &g_finalized && GC_is_visible(keep) == keep,
          "GC_is_visible returns its argument");
    CHECK(g_warnings == 0, "%d warnings about visible places", g_warnings);
    long *hidden_place = malloc(64);
    GC_is_visible(hidden_place);
    CHECK(g_warnings == 1 && g_warned_about == (GC_word)hidden_place, "no warning about malloc'd memory");
    free(hidden_place);

    GC_word n = GC_get_gc_no() - collections_before;
    CHECK(g_events[GC_EVENT_START] == n && g_events[GC_EVENT_END] == n && g_starts == n, "%lu collections: %lu starts, "
          "%lu ends, %lu start callbacks", (unsigned long)n, g_events[GC_EVENT_START], g_events[GC_EVENT_END], g_starts);
    /* Every collection stops the world once; so does the start of one that
       marks while the program runs, with no collection events of its own. */
    CHECK(g_events[GC_EVENT_PRE_STOP_WORLD] >= n &&
              g_events[GC_EVENT_POST_START_WORLD] == g_events[GC_EVENT_PRE_STOP_WORLD] &&
              g_events[GC_EVENT_MARK_START] == n && g_events[GC_EVENT_RECLAIM_END] == n,
          "%lu collections, %lu stops, %lu restarts", (unsigned long)n, g_events[GC_EVENT_PRE_STOP_WORLD],
          g_events[GC_EVENT_POST_START_WORLD]);

    check_served_by_adsm(keep);
    check_served_by_adsm(a);
    CHECK(GC_get_gc_no() > 0, "no collection");
    adsmGcStats st = adsm_stats();
    CHECK(st.collections == GC_get_gc_no() && st.objects_freed > 100000, "%llu collections, %llu objects freed",
          (unsigned long long)st.collections, (unsigned long long)st.objects_freed);
    printf("lists: ok (%lu collections)\n", (unsigned long)GC_get_gc_no());
    return 0;
}
