/*
 * Run with libadsm and another allocator preloaded (argv[1]: the allocator's
 * library; argv[2]: "after" when libadsm comes first in LD_PRELOAD, else
 * "before"), and ADSM_MALLOC_THRESHOLD=64K.  Every small block, whichever
 * entry point made it, must come from that allocator and be freed, resized
 * and measured by it; the C library's heap must not grow.  With libadsm
 * first, large blocks are shared memory and realloc moves blocks across the
 * threshold both ways; with it second, the runtime's own API still works.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "FAILED at line %d: ", __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            ++failures;                                                \
        }                                                              \
    } while (0)

enum { kThreshold = 64 * 1024 };

static size_t (*own_usable)(void *);
static void (*own_free)(void *);
static void *(*own_malloc)(size_t);
static size_t (*adsm_size)(const void *);
static struct mallinfo2 (*libc_mallinfo2)(void);

static void *sym(void *handle, const char *name) {
    void *p = dlsym(handle, name);
    if (!p) {
        fprintf(stderr, "no %s: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

/* The allocator measures the block as the program does, and it is not shared. */
static void owned(void *p, size_t n, const char *how) {
    CHECK(p != NULL, "%s(%zu) failed", how, n);
    if (!p) return;
    CHECK(adsm_size(p) == 0, "%s(%zu) returned shared memory", how, n);
    CHECK(own_usable(p) == malloc_usable_size(p), "%s(%zu): usable size %zu, the allocator says %zu", how, n,
          malloc_usable_size(p), own_usable(p));
    CHECK(malloc_usable_size(p) >= n, "%s(%zu): usable size %zu", how, n, malloc_usable_size(p));
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed + i * 13);
}

static int same(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != (unsigned char)(seed + i * 13)) return 0;
    return 1;
}

static void every_entry_point(void) {
    size_t libc_heap = libc_mallinfo2().uordblks;
    enum { kBlocks = 64 };
    void *blocks[8 * kBlocks];
    size_t nb = 0;
    for (size_t i = 0; i < kBlocks; ++i) {
        size_t n = 1 + i * 97;
        void *p = NULL;
        owned(blocks[nb++] = malloc(n), n, "malloc");
        owned(blocks[nb++] = calloc(n, 3), 3 * n, "calloc");
        owned(blocks[nb++] = memalign(64, n), n, "memalign");
        owned(blocks[nb++] = aligned_alloc(32, n), n, "aligned_alloc");
        CHECK(posix_memalign(&p, 128, n) == 0, "posix_memalign(%zu)", n);
        owned(blocks[nb++] = p, n, "posix_memalign");
        owned(blocks[nb++] = valloc(n), n, "valloc");
        owned(blocks[nb++] = pvalloc(n), n, "pvalloc");
        owned(blocks[nb++] = realloc(NULL, n), n, "realloc");
    }
    /* All alive at once: had any come from the C library, its heap would
       hold at least the smallest of them. */
    size_t grown = libc_mallinfo2().uordblks - libc_heap;
    CHECK(grown == 0, "the C library's heap grew by %zu bytes", grown);
    /* Half go back through the program's free, half straight to the allocator. */
    for (size_t i = 0; i < nb; ++i) (i % 2 ? free : own_free)(blocks[i]);
}

static void realloc_keeps_the_allocator(void) {
    unsigned char *p = NULL;
    size_t old = 0;
    for (size_t n = 1; n < 6000; n += 37) {
        p = realloc(p, n);
        owned(p, n, "realloc");
        if (!p) return;
        CHECK(same(p, old < n ? old : n, 5), "realloc(%zu) lost data", n);
        fill(p, n, 5);
        old = n;
    }
    free(p);
    /* A block of the allocator's own, resized and freed by the program. */
    p = own_malloc(100);
    fill(p, 100, 9);
    p = realloc(p, 3000);
    owned(p, 3000, "realloc of the allocator's block");
    CHECK(same(p, 100, 9), "realloc of the allocator's block lost data");
    free(p);
}

static void across_the_threshold(void) {
    unsigned char *big = malloc(kThreshold);
    CHECK(adsm_size(big) == kThreshold, "malloc(64K) is not shared memory");
    CHECK(malloc_usable_size(big) == kThreshold, "usable size of shared memory: %zu", malloc_usable_size(big));
    free(big);

    unsigned char *p = malloc(1000);
    fill(p, 1000, 3);
    p = realloc(p, 2 * kThreshold); /* from the allocator into shared memory */
    CHECK(adsm_size(p) == 2 * kThreshold, "realloc up did not move into shared memory");
    CHECK(same(p, 1000, 3), "realloc up lost data");
    p = realloc(p, 500); /* and back */
    owned(p, 500, "realloc down");
    CHECK(same(p, 500, 3), "realloc down lost data");
    free(p);
}

static void runtime_still_works(void) {
    void *(*alloc)(size_t) = (void *(*)(size_t))sym(RTLD_DEFAULT, "adsmAlloc");
    int (*release)(void *) = (int (*)(void *))sym(RTLD_DEFAULT, "adsmFree");
    unsigned char *p = alloc(1 << 20);
    CHECK(p != NULL && adsm_size(p) == 1 << 20, "adsmAlloc failed");
    if (!p) return;
    fill(p, 1 << 20, 7);
    CHECK(same(p, 1 << 20, 7), "shared memory lost data");
    CHECK(release(p) == 0, "adsmFree failed");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ALLOCATOR_LIBRARY after|before\n", argv[0]);
        return 2;
    }
    int adsm_first = strcmp(argv[2], "after") == 0;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
        fprintf(stderr, "%s is not preloaded\n", argv[1]);
        return 2;
    }
    own_usable = (size_t (*)(void *))sym(lib, "malloc_usable_size");
    own_free = (void (*)(void *))sym(lib, "free");
    own_malloc = (void *(*)(size_t))sym(lib, "malloc");
    adsm_size = (size_t (*)(const void *))sym(RTLD_DEFAULT, "adsmGetSize");
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    libc_mallinfo2 = (struct mallinfo2 (*)(void))sym(libc, "mallinfo2");
    CHECK((sym(RTLD_DEFAULT, "malloc") == (void *)own_malloc) == !adsm_first, "the program's malloc is not %s's",
          adsm_first ? "libadsm" : argv[1]);

    every_entry_point();
    realloc_keeps_the_allocator();
    if (adsm_first) across_the_threshold();
    else runtime_still_works();

    if (failures) return 1;
    printf("every block came from %s\n", argv[1]);
    return 0;
}
