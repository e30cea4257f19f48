/*
 * bdwgc's typed allocation (gc_typed.h), as adsm serves it: an object's
 * layout given as a bitmap of the words that may hold pointers.  The
 * collector reads those words only; the others may hold anything (a weak
 * reference kept where the collector does not look, say).
 */
#ifndef GC_TYPED_H
#define GC_TYPED_H

#include "gc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bit i of the bitmap (the least significant bit of word 0 first) is 1 when
   word i of the object may hold a pointer. */
typedef GC_word *GC_bitmap;
#define GC_WORDSZ (8 * sizeof(GC_word))
#define GC_get_bit(bm, index) (((bm)[(index) / GC_WORDSZ] >> ((index) % GC_WORDSZ)) & 1)
#define GC_set_bit(bm, index) ((bm)[(index) / GC_WORDSZ] |= (GC_word)1 << ((index) % GC_WORDSZ))
#define GC_WORD_OFFSET(t, f) (offsetof(t, f) / sizeof(GC_word))
#define GC_WORD_LEN(t) (sizeof(t) / sizeof(GC_word))
#define GC_BITMAP_SIZE(t) ((GC_WORD_LEN(t) + GC_WORDSZ - 1) / GC_WORDSZ)

typedef GC_word GC_descr;

/* A descriptor for objects whose first len words the bitmap describes
   (words past them hold no pointers).  Called once per type. */
GC_API GC_descr GC_make_descriptor(const GC_word *bitmap, size_t len);
/* A zeroed object of `size` bytes laid out as d says; not for GC_realloc. */
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc_explicitly_typed(size_t size, GC_descr d);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc_explicitly_typed_ignore_off_page(size_t size,
                                                                                             GC_descr d);
#ifdef GC_DEBUG
#define GC_MALLOC_EXPLICITLY_TYPED(bytes, d) ((void)(d), GC_MALLOC(bytes))
#else
#define GC_MALLOC_EXPLICITLY_TYPED(bytes, d) GC_malloc_explicitly_typed(bytes, d)
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GC_TYPED_H */
