/*
 * bdwgc's interface for language runtimes (gc_mark.h), as adsm serves it:
 * object kinds with their own mark descriptors or mark procedures.
 *
 * A mark procedure is called for every marked object of its kind, on the
 * collector's marker threads while the world is stopped, with `addr` the
 * collector's readable view of the object (the same bytes as the
 * program's, at another address): read the object through it, and report
 * what it points to with GC_MARK_AND_PUSH (which marks at once and returns
 * mark_stack_ptr unchanged) or by pushing entries.  Free objects are never
 * passed.  Kinds' free lists (GC_new_free_list) are accepted and not used:
 * objects of every kind come from the collector's own pages.
 */
#ifndef GC_MARK_H
#define GC_MARK_H

#include "gc.h"

#ifdef __cplusplus
extern "C" {
#endif

struct GC_ms_entry {
    void *mse_start;   /* the memory to scan (the program's or the view's addresses) */
    GC_word mse_descr; /* how, as a descriptor below */
};

typedef struct GC_ms_entry *(*GC_mark_proc)(GC_word *addr, struct GC_ms_entry *mark_stack_ptr,
                                             struct GC_ms_entry *mark_stack_limit, GC_word env);

#define GC_LOG_MAX_MARK_PROCS 6
#define GC_MAX_MARK_PROCS (1 << GC_LOG_MAX_MARK_PROCS)
#define GC_RESERVED_MARK_PROCS 8

/* Descriptors: the low two bits say which kind. */
#define GC_DS_TAG_BITS 2
#define GC_DS_TAGS ((1 << GC_DS_TAG_BITS) - 1)
#define GC_DS_LENGTH 0     /* the first (descr) bytes may hold pointers */
#define GC_DS_BITMAP 1     /* the high bits: word 0 at the top, a 1 for each pointer */
#define GC_DS_PROC 2       /* a mark procedure and its env */
#define GC_DS_PER_OBJECT 3 /* the descriptor is in the object (or its type) */
#define GC_MAKE_PROC(proc_index, env) \
    (((((env) << GC_LOG_MAX_MARK_PROCS) | (proc_index)) << GC_DS_TAG_BITS) | GC_DS_PROC)
#define GC_INDIR_PER_OBJ_BIAS 0x10

/* The shared window: every collected object lies between the two. */
GC_API void *GC_least_plausible_heap_addr;
GC_API void *GC_greatest_plausible_heap_addr;

GC_API struct GC_ms_entry *GC_mark_and_push(void *obj, struct GC_ms_entry *mark_stack_ptr,
                                            struct GC_ms_entry *mark_stack_limit, void **src);
#define GC_MARK_AND_PUSH(obj, msp, lim, src)                                             \
    ((GC_word)(obj) >= (GC_word)GC_least_plausible_heap_addr &&                          \
             (GC_word)(obj) <= (GC_word)GC_greatest_plausible_heap_addr                   \
         ? GC_mark_and_push(obj, msp, lim, src)                                            \
         : (msp))

GC_API void **GC_new_free_list(void);
GC_API void **GC_new_free_list_inner(void);
/* Kinds 0 (no pointers) and 1 (pointers anywhere, GC_I_PTRFREE and
   GC_I_NORMAL in gc_inline.h) are there from the start; 2 and 3 are their
   uncollectable versions. */
GC_API unsigned GC_new_kind(void **free_list, GC_word mark_descriptor_template, int add_size_to_descriptor,
                            int clear_new_objects) GC_ATTR_NONNULL(1);
GC_API unsigned GC_new_kind_inner(void **free_list, GC_word mark_descriptor_template, int add_size_to_descriptor,
                                  int clear_new_objects) GC_ATTR_NONNULL(1);
GC_API unsigned GC_new_proc(GC_mark_proc proc);
GC_API unsigned GC_new_proc_inner(GC_mark_proc proc);

/* Objects of every kind are zeroed. */
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_generic_malloc(size_t size, int kind);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_generic_malloc_ignore_off_page(size_t size, int kind);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_generic_malloc_uncollectable(size_t size, int kind);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_generic_or_special_malloc(size_t size, int kind);

/* Called when each collection starts (GC_EVENT_START), under the same
   rules as the collection events. */
typedef void (*GC_start_callback_proc)(void);
GC_API void GC_set_start_callback(GC_start_callback_proc fn);
GC_API GC_start_callback_proc GC_get_start_callback(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GC_MARK_H */
