/* What language runtimes use (gc_mark.h, gc_typed.h): typed objects whose
   bitmap leaves out a word that holds an address (that address must not
   keep its object), a kind whose mark procedure reports pointers kept in
   memory the collector never scans (those objects must live), and lists
   of objects made at once. */
#include <gc.h>
#include <gc/gc_inline.h>
#include <gc/gc_mark.h>
#include <gc/gc_typed.h>
#include <stddef.h>

#include "check.h"

#define N 200

static int g_died[2];
static void died(void *obj, void *cd) {
    (void)obj;
    ++g_died[(GC_word)cd];
}

static void collect(void) {
    clobber_stack();
    GC_gcollect();
    GC_gcollect();
}

/* ---- typed: `weak` holds an address the bitmap says is no pointer */
typedef struct Entry {
    void *strong;
    GC_word weak;
    long tag;
} Entry;
static Entry *g_entries[N];

static __attribute__((noinline)) void make_entries(GC_descr d) {
    for (int i = 0; i < N; ++i) {
        Entry *e = GC_malloc_explicitly_typed(sizeof(Entry), d);
        CHECK(e && !e->strong && !e->weak && !e->tag, "typed objects come zeroed");
        e->strong = GC_MALLOC(32);
        GC_REGISTER_FINALIZER(e->strong, died, (void *)0, NULL, NULL);
        void *w = GC_MALLOC(32);
        GC_REGISTER_FINALIZER(w, died, (void *)1, NULL, NULL);
        e->weak = (GC_word)w;
        e->tag = i;
        g_entries[i] = e;
    }
}

/* ---- a kind with a mark procedure: its objects point to records in the
   C library's heap, whose pointers only the procedure knows */
typedef struct Side {
    void *objs[4];
} Side;
typedef struct Handle {
    long magic;
    Side *side;
} Handle;
#define HANDLE_MAGIC 0x4a4a4a4aL
static int g_marks;

static struct GC_ms_entry *mark_handle(GC_word *addr, struct GC_ms_entry *msp, struct GC_ms_entry *lim, GC_word env) {
    Handle *h = (Handle *)addr;
    if (env != 3 || h->magic != HANDLE_MAGIC || !h->side) return msp;
    __atomic_fetch_add(&g_marks, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; ++i) msp = GC_MARK_AND_PUSH(h->side->objs[i], msp, lim, NULL);
    return msp;
}

static Handle *g_handles[N];
static __attribute__((noinline)) void make_handles(int kind) {
    for (int i = 0; i < N; ++i) {
        Handle *h = GC_generic_malloc(sizeof(Handle), kind);
        CHECK(h && h->magic == 0 && h->side == NULL, "objects of a kind come zeroed");
        Side *s = malloc(sizeof(Side));
        for (int k = 0; k < 4; ++k) {
            long *o = GC_MALLOC(40);
            o[0] = i * 4 + k;
            GC_REGISTER_FINALIZER(o, died, (void *)0, NULL, NULL);
            s->objs[k] = o;
        }
        h->side = s;
        h->magic = HANDLE_MAGIC;
        g_handles[i] = h;
    }
}

int main(void) {
    GC_INIT();

    /* The heap's first address is in the program's data (the plausible
       bounds): an object there would never die, so there is none. */
    for (size_t n = 8; n <= 8192; n *= 2) {
        void *p = GC_MALLOC(n);
        CHECK(p != GC_least_plausible_heap_addr, "an object of %zu bytes at the heap's first address", n);
    }

    GC_word bitmap[GC_BITMAP_SIZE(Entry)] = {0};
    GC_set_bit(bitmap, GC_WORD_OFFSET(Entry, strong));
    GC_descr d = GC_make_descriptor(bitmap, GC_WORD_LEN(Entry));
    make_entries(d);
    collect();
    CHECK(g_died[0] == 0, "%d objects behind pointer words died", g_died[0]);
    CHECK(g_died[1] >= N * 9 / 10, "%d of %d objects behind non-pointer words died", g_died[1], N);
    for (int i = 0; i < N; ++i) CHECK(g_entries[i]->tag == i, "entry %d changed", i);
    check_served_by_adsm(g_entries[0]);

    g_died[0] = 0;
    int kind = (int)GC_new_kind(GC_new_free_list(), GC_MAKE_PROC(GC_new_proc(mark_handle), 3), 0, 1);
    make_handles(kind);
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 20000; ++i) GC_MALLOC(40);
        collect();
    }
    CHECK(g_marks >= N, "the mark procedure ran %d times", g_marks);
    CHECK(g_died[0] == 0, "%d objects only the mark procedure reports died", g_died[0]);
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < 4; ++k)
            CHECK(((long *)g_handles[i]->side->objs[k])[0] == i * 4 + k, "object %d/%d changed", i, k);
    check_served_by_adsm(g_handles[0]);
    /* Without their handles, they go. */
    for (int i = 0; i < N; ++i) g_handles[i] = NULL;
    collect();
    CHECK(g_died[0] >= 4 * N * 9 / 10, "%d of %d died with their handles", g_died[0], 4 * N);

    for (int k = GC_I_PTRFREE; k <= GC_I_NORMAL; ++k) {
        void *list = NULL;
        GC_generic_malloc_many(48, k, &list);
        int n = 0;
        for (void *p = list; p; p = GC_NEXT(p)) {
            if (k == GC_I_NORMAL)
                for (int w = 1; w < 6; ++w) CHECK(((void **)p)[w] == NULL, "objects of a list come zeroed");
            ++n;
        }
        CHECK(n > 0, "an empty list of kind %d", k);
    }
    void *many = GC_malloc_many(64);
    CHECK(many != NULL && GC_NEXT(many) != NULL, "GC_malloc_many");

    printf("kinds: ok (the mark procedure ran %d times)\n", g_marks);
    return 0;
}
