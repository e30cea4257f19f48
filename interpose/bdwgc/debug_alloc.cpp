// bdwgc's GC_debug_* functions, which a program built with GC_DEBUG calls
// through GC_MALLOC and friends.  They are the plain functions here: no
// debug header is added to objects (GC_base and GC_size agree with the
// plain ones), and the file and line they are given are not kept.
#include "interpose/bdwgc/state.h"

extern "C" {

void *GC_debug_malloc(size_t n, const char *, int) { return GC_malloc(n); }
void *GC_debug_malloc_atomic(size_t n, const char *, int) { return GC_malloc_atomic(n); }
void *GC_debug_malloc_uncollectable(size_t n, const char *, int) { return GC_malloc_uncollectable(n); }
void *GC_debug_malloc_atomic_uncollectable(size_t n, const char *, int) { return GC_malloc_atomic_uncollectable(n); }
void *GC_debug_malloc_ignore_off_page(size_t n, const char *, int) { return GC_malloc_ignore_off_page(n); }
void *GC_debug_malloc_atomic_ignore_off_page(size_t n, const char *, int) { return GC_malloc_atomic_ignore_off_page(n); }
void *GC_debug_malloc_stubborn(size_t n, const char *, int) { return GC_malloc(n); }
char *GC_debug_strdup(const char *s, const char *, int) { return GC_strdup(s); }
char *GC_debug_strndup(const char *s, size_t n, const char *, int) { return GC_strndup(s, n); }
void *GC_debug_realloc(void *obj, size_t n, const char *, int) { return GC_realloc(obj, n); }
void GC_debug_free(void *obj) { GC_free(obj); }
void GC_debug_change_stubborn(const void *) {}
void GC_debug_end_stubborn_change(const void *) {}
void GC_debug_ptr_store_and_dirty(void *p, const void *q) { GC_ptr_store_and_dirty(p, q); }

void GC_debug_register_finalizer(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn, void **ocd) {
    GC_register_finalizer(obj, fn, cd, ofn, ocd);
}
void GC_debug_register_finalizer_ignore_self(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                             void **ocd) {
    GC_register_finalizer_ignore_self(obj, fn, cd, ofn, ocd);
}
void GC_debug_register_finalizer_no_order(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                          void **ocd) {
    GC_register_finalizer_no_order(obj, fn, cd, ofn, ocd);
}
void GC_debug_register_finalizer_unreachable(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                             void **ocd) {
    GC_register_finalizer_unreachable(obj, fn, cd, ofn, ocd);
}

}  // extern "C"
