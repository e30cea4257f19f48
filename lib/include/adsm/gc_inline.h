/*
 * bdwgc's gc_inline.h, as adsm serves it: objects handed out by the dozen,
 * for a runtime that keeps its own free lists (its inline allocation
 * macros are not provided: they reach into bdwgc's internals).
 */
#ifndef GC_INLINE_H
#define GC_INLINE_H

#include "gc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GC_I_PTRFREE 0
#define GC_I_NORMAL 1

/* *result: objects of `size` bytes of `kind`, linked through their first
   word (about a page's worth); NULL when none could be had.  Objects of a
   kind with pointers come zeroed but for the link. */
GC_API void GC_generic_malloc_many(size_t size, int kind, void **result);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GC_INLINE_H */
