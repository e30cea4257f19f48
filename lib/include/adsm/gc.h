/*
 * The Boehm-Demers-Weiser collector's C API (bdwgc 8.2), as far as adsm
 * serves it: a program written for bdwgc compiles against this header
 * (with -I<include>/adsm, so that <gc.h> and <gc/gc.h> find it), links
 * -ladsm instead of -lgc, and its collected heap is adsm's shared memory,
 * valid on the CPU and in kernels at the same address.  A binary already
 * linked with -lgc gets the same by preloading libadsm.so (adsm-run --gc).
 *
 * Everything declared here is implemented; what bdwgc has and adsm does
 * not is left out, so that a program using it fails to build here, and an
 * unmodified binary that imports it is refused at start with a message
 * naming it.  Where adsm's collector differs, the declaration says so:
 *   - Every interior pointer keeps its object (GC_set_all_interior_pointers
 *     only decides whether objects get bdwgc's extra byte at the end, so
 *     that a pointer just past the end keeps them too).
 *   - Collections are never incremental; GC_enable_incremental has no
 *     effect, as in a bdwgc built without dirty bits.
 *   - What a finalizable object reaches always stays alive until its
 *     finalizer has run (bdwgc's "Java finalization", its default, cannot
 *     be turned off).
 *   - Threads need no registration: every thread of the process is found
 *     and stopped (with SIGPWR, the signal bdwgc uses on Linux).  The
 *     registration calls are accepted and answer as bdwgc would.
 *   - The GC_debug_* functions are the plain ones: objects carry no debug
 *     header, and the file and line are not kept.
 */
#ifndef GC_H
#define GC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of bdwgc's API followed; GC_ADSM says whose collector it is. */
#define GC_ADSM 1
#define GC_VERSION_MAJOR 8
#define GC_VERSION_MINOR 2
#define GC_VERSION_MICRO 2

#if defined(__GNUC__)
#define GC_API extern __attribute__((visibility("default")))
#define GC_ATTR_MALLOC __attribute__((__malloc__))
#define GC_ATTR_ALLOC_SIZE(n) __attribute__((__alloc_size__(n)))
#define GC_ATTR_NONNULL(n) __attribute__((__nonnull__(n)))
#define GC_ATTR_DEPRECATED __attribute__((__deprecated__))
#define GC_ATTR_NORETURN __attribute__((__noreturn__))
#else
#define GC_API extern
#define GC_ATTR_MALLOC
#define GC_ATTR_ALLOC_SIZE(n)
#define GC_ATTR_NONNULL(n)
#define GC_ATTR_DEPRECATED
#define GC_ATTR_NORETURN
#endif
#define GC_CALL
#define GC_CALLBACK

typedef unsigned long GC_word;
typedef long GC_signed_word;
typedef GC_word GC_hidden_pointer;
#define GC_HIDE_POINTER(p) (~(GC_hidden_pointer)(p))
#define GC_REVEAL_POINTER(p) ((void *)GC_HIDE_POINTER(p))

/* Results of the registration functions. */
#define GC_SUCCESS 0
#define GC_DUPLICATE 1
#define GC_NO_THREADS 2
#define GC_NO_MEMORY 2
#define GC_UNIMPLEMENTED 3
#define GC_NOT_FOUND 4

/* ---- start-up and collection */

GC_API void GC_init(void);
GC_API int GC_is_init_called(void);
/* (GC_VERSION_MAJOR << 16) | (GC_VERSION_MINOR << 8) | GC_VERSION_MICRO. */
GC_API unsigned GC_get_version(void);
#define GC_INIT() GC_init()

GC_API void GC_gcollect(void);
/* The same: empty chunks go back to the system after every collection. */
GC_API void GC_gcollect_and_unmap(void);
typedef int (*GC_stop_func)(void);
/* 0 if stop_func asked to stop before the collection began, else 1. */
GC_API int GC_try_to_collect(GC_stop_func stop_func) GC_ATTR_NONNULL(1);
/* Collects if allocation calls for it; always 0 (no collection is left
   half done). */
GC_API int GC_collect_a_little(void);
/* Counted: collections (explicit ones too) resume after as many
   GC_enable calls as GC_disable calls. */
GC_API void GC_disable(void);
GC_API void GC_enable(void);
GC_API int GC_is_disabled(void);
GC_API void GC_enable_incremental(void);
GC_API int GC_is_incremental_mode(void);

/* ---- allocation */

GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc(size_t size);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc_atomic(size_t size);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc_uncollectable(size_t size);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc_atomic_uncollectable(size_t size);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc_ignore_off_page(size_t size);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_malloc_atomic_ignore_off_page(size_t size);
GC_API GC_ATTR_DEPRECATED void *GC_malloc_stubborn(size_t size);
GC_API GC_ATTR_MALLOC char *GC_strdup(const char *s);
GC_API GC_ATTR_MALLOC char *GC_strndup(const char *s, size_t n) GC_ATTR_NONNULL(1);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(2) void *GC_memalign(size_t align, size_t size);
GC_API int GC_posix_memalign(void **memptr, size_t align, size_t size) GC_ATTR_NONNULL(1);
/* A list of objects of `size` bytes linked through their first word. */
GC_API GC_ATTR_MALLOC void *GC_malloc_many(size_t size);
#define GC_NEXT(p) (*(void **)(p))
GC_API void *GC_realloc(void *obj, size_t size) GC_ATTR_ALLOC_SIZE(2);
GC_API void GC_free(void *obj);
GC_API void *GC_base(void *p);
GC_API int GC_is_heap_ptr(const void *p);
GC_API size_t GC_size(const void *obj) GC_ATTR_NONNULL(1);
GC_API void *GC_same_obj(void *p, void *q);
GC_API void *GC_is_valid_displacement(void *p);
/* Stubborn objects and dirty bits are bdwgc's incremental mode: no-ops here. */
GC_API GC_ATTR_DEPRECATED void GC_change_stubborn(const void *p);
GC_API void GC_end_stubborn_change(const void *p) GC_ATTR_NONNULL(1);
GC_API void GC_ptr_store_and_dirty(void *p, const void *q);
GC_API void GC_noop1(GC_word x);
#define GC_reachable_here(p) GC_noop1((GC_word)(p))

#define GC_EXTRAS __FILE__, __LINE__
#define GC_EXTRA_PARAMS const char *s, int i
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_debug_malloc(size_t size, GC_EXTRA_PARAMS);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_debug_malloc_atomic(size_t size, GC_EXTRA_PARAMS);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_debug_malloc_uncollectable(size_t size, GC_EXTRA_PARAMS);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_debug_malloc_atomic_uncollectable(size_t size, GC_EXTRA_PARAMS);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_debug_malloc_ignore_off_page(size_t size, GC_EXTRA_PARAMS);
GC_API GC_ATTR_MALLOC GC_ATTR_ALLOC_SIZE(1) void *GC_debug_malloc_atomic_ignore_off_page(size_t size, GC_EXTRA_PARAMS);
GC_API GC_ATTR_DEPRECATED void *GC_debug_malloc_stubborn(size_t size, GC_EXTRA_PARAMS);
GC_API GC_ATTR_MALLOC char *GC_debug_strdup(const char *str, GC_EXTRA_PARAMS);
GC_API GC_ATTR_MALLOC char *GC_debug_strndup(const char *str, size_t n, GC_EXTRA_PARAMS) GC_ATTR_NONNULL(1);
GC_API void *GC_debug_realloc(void *obj, size_t size, GC_EXTRA_PARAMS) GC_ATTR_ALLOC_SIZE(2);
GC_API void GC_debug_free(void *obj);
GC_API GC_ATTR_DEPRECATED void GC_debug_change_stubborn(const void *p);
GC_API void GC_debug_end_stubborn_change(const void *p) GC_ATTR_NONNULL(1);
GC_API void GC_debug_ptr_store_and_dirty(void *p, const void *q);

#ifdef GC_DEBUG
#define GC_MALLOC(sz) GC_debug_malloc(sz, GC_EXTRAS)
#define GC_MALLOC_ATOMIC(sz) GC_debug_malloc_atomic(sz, GC_EXTRAS)
#define GC_MALLOC_UNCOLLECTABLE(sz) GC_debug_malloc_uncollectable(sz, GC_EXTRAS)
#define GC_MALLOC_ATOMIC_UNCOLLECTABLE(sz) GC_debug_malloc_atomic_uncollectable(sz, GC_EXTRAS)
#define GC_MALLOC_IGNORE_OFF_PAGE(sz) GC_debug_malloc_ignore_off_page(sz, GC_EXTRAS)
#define GC_MALLOC_ATOMIC_IGNORE_OFF_PAGE(sz) GC_debug_malloc_atomic_ignore_off_page(sz, GC_EXTRAS)
#define GC_STRDUP(s) GC_debug_strdup(s, GC_EXTRAS)
#define GC_STRNDUP(s, n) GC_debug_strndup(s, n, GC_EXTRAS)
#define GC_REALLOC(p, sz) GC_debug_realloc(p, sz, GC_EXTRAS)
#define GC_FREE(p) GC_debug_free(p)
#define GC_REGISTER_FINALIZER(p, f, d, of, od) GC_debug_register_finalizer(p, f, d, of, od)
#define GC_REGISTER_FINALIZER_IGNORE_SELF(p, f, d, of, od) GC_debug_register_finalizer_ignore_self(p, f, d, of, od)
#define GC_REGISTER_FINALIZER_NO_ORDER(p, f, d, of, od) GC_debug_register_finalizer_no_order(p, f, d, of, od)
#define GC_REGISTER_FINALIZER_UNREACHABLE(p, f, d, of, od) GC_debug_register_finalizer_unreachable(p, f, d, of, od)
#define GC_END_STUBBORN_CHANGE(p) GC_debug_end_stubborn_change(p)
#define GC_PTR_STORE_AND_DIRTY(p, q) GC_debug_ptr_store_and_dirty(p, q)
#define GC_GENERAL_REGISTER_DISAPPEARING_LINK(link, obj) \
    GC_general_register_disappearing_link(link, GC_base((void *)(obj)))
#define GC_REGISTER_DISPLACEMENT(n) GC_debug_register_displacement(n)
#else
#define GC_MALLOC(sz) GC_malloc(sz)
#define GC_MALLOC_ATOMIC(sz) GC_malloc_atomic(sz)
#define GC_MALLOC_UNCOLLECTABLE(sz) GC_malloc_uncollectable(sz)
#define GC_MALLOC_ATOMIC_UNCOLLECTABLE(sz) GC_malloc_atomic_uncollectable(sz)
#define GC_MALLOC_IGNORE_OFF_PAGE(sz) GC_malloc_ignore_off_page(sz)
#define GC_MALLOC_ATOMIC_IGNORE_OFF_PAGE(sz) GC_malloc_atomic_ignore_off_page(sz)
#define GC_STRDUP(s) GC_strdup(s)
#define GC_STRNDUP(s, n) GC_strndup(s, n)
#define GC_REALLOC(p, sz) GC_realloc(p, sz)
#define GC_FREE(p) GC_free(p)
#define GC_REGISTER_FINALIZER(p, f, d, of, od) GC_register_finalizer(p, f, d, of, od)
#define GC_REGISTER_FINALIZER_IGNORE_SELF(p, f, d, of, od) GC_register_finalizer_ignore_self(p, f, d, of, od)
#define GC_REGISTER_FINALIZER_NO_ORDER(p, f, d, of, od) GC_register_finalizer_no_order(p, f, d, of, od)
#define GC_REGISTER_FINALIZER_UNREACHABLE(p, f, d, of, od) GC_register_finalizer_unreachable(p, f, d, of, od)
#define GC_END_STUBBORN_CHANGE(p) GC_end_stubborn_change(p)
#define GC_PTR_STORE_AND_DIRTY(p, q) GC_ptr_store_and_dirty(p, q)
#define GC_GENERAL_REGISTER_DISAPPEARING_LINK(link, obj) GC_general_register_disappearing_link(link, obj)
#define GC_REGISTER_DISPLACEMENT(n) GC_register_displacement(n)
#endif
#define GC_NEW(t) ((t *)GC_MALLOC(sizeof(t)))
#define GC_NEW_ATOMIC(t) ((t *)GC_MALLOC_ATOMIC(sizeof(t)))
#define GC_NEW_UNCOLLECTABLE(t) ((t *)GC_MALLOC_UNCOLLECTABLE(sizeof(t)))
#define GC_PTR_STORE(p, q) (*(void **)(p) = (void *)(q))

/* ---- the heap: sizes, limits, statistics */

GC_API size_t GC_get_heap_size(void);
GC_API size_t GC_get_free_bytes(void);
GC_API size_t GC_get_unmapped_bytes(void);
/* Counted as pages go to a thread's allocation cache, as bdwgc counts by
   free list. */
GC_API size_t GC_get_bytes_since_gc(void);
GC_API size_t GC_get_total_bytes(void);
GC_API size_t GC_get_memory_use(void);
GC_API GC_word GC_get_gc_no(void);
GC_API void GC_get_heap_usage_safe(GC_word *pheap_size, GC_word *pfree_bytes, GC_word *punmapped_bytes,
                                   GC_word *pbytes_since_gc, GC_word *ptotal_bytes);
/* Makes room for `bytes` more before the next collection; 0 when the heap
   limit forbids it. */
GC_API int GC_expand_hp(size_t bytes);
/* 0: no limit but the shared window. */
GC_API void GC_set_max_heap_size(GC_word bytes);
GC_API void GC_dump(void);

/* ---- pointers */

/* Every interior pointer is recognised; the setting decides whether each
   object gets one extra byte, as in bdwgc (default 1). */
GC_API void GC_set_all_interior_pointers(int on);
GC_API int GC_get_all_interior_pointers(void);
GC_API void GC_register_displacement(size_t offset);
GC_API void GC_debug_register_displacement(size_t offset);
/* Returns p; warns (GC_set_warn_proc) when the collector never reads p. */
GC_API void *GC_is_visible(void *p);

GC_API void GC_add_roots(void *low, void *high_plus_1);
GC_API void GC_remove_roots(void *low, void *high_plus_1);

/* ---- failures and warnings */

typedef void *(*GC_oom_func)(size_t bytes_requested);
/* Called when an allocation fails; what it returns is the allocation's
   result (the default returns NULL). */
GC_API void GC_set_oom_fn(GC_oom_func fn) GC_ATTR_NONNULL(1);
GC_API GC_oom_func GC_get_oom_fn(void);
/* msg is a printf format with one conversion, for arg. */
typedef void (*GC_warn_proc)(char *msg, GC_word arg);
GC_API void GC_set_warn_proc(GC_warn_proc fn) GC_ATTR_NONNULL(1);
GC_API GC_warn_proc GC_get_warn_proc(void);
GC_API void GC_ignore_warn_proc(char *msg, GC_word arg);

typedef enum {
    GC_EVENT_START,
    GC_EVENT_MARK_START,
    GC_EVENT_MARK_END,
    GC_EVENT_RECLAIM_START,
    GC_EVENT_RECLAIM_END,
    GC_EVENT_END,
    GC_EVENT_PRE_STOP_WORLD,
    GC_EVENT_POST_STOP_WORLD,
    GC_EVENT_PRE_START_WORLD,
    GC_EVENT_POST_START_WORLD,
    GC_EVENT_THREAD_SUSPENDED,  /* not reported */
    GC_EVENT_THREAD_UNSUSPENDED /* not reported */
} GC_EventType;
/* Called at each step of every collection with the allocation lock held
   (between POST_STOP_WORLD and PRE_START_WORLD the world is stopped): it
   must not allocate or take locks. */
typedef void (*GC_on_collection_event_proc)(GC_EventType event);
GC_API void GC_set_on_collection_event(GC_on_collection_event_proc fn);
GC_API GC_on_collection_event_proc GC_get_on_collection_event(void);

/* ---- finalization */

typedef void (*GC_finalization_proc)(void *obj, void *client_data);
/* fn(obj, cd) runs once obj is unreachable and no other unreachable
   finalizable object (nor obj itself) reaches it; cd stays alive until
   then.  A null fn removes the finalizer; the one replaced is stored in
   *ofn and *ocd (each may be NULL).  obj must be an object's start. */
GC_API void GC_register_finalizer(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                  void **ocd) GC_ATTR_NONNULL(1);
/* ...pointers from obj to itself aside. */
GC_API void GC_register_finalizer_ignore_self(void *obj, GC_finalization_proc fn, void *cd,
                                              GC_finalization_proc *ofn, void **ocd) GC_ATTR_NONNULL(1);
/* ...whatever reaches obj. */
GC_API void GC_register_finalizer_no_order(void *obj, GC_finalization_proc fn, void *cd,
                                           GC_finalization_proc *ofn, void **ocd) GC_ATTR_NONNULL(1);
/* ...not while an object whose unordered finalizer is due reaches obj. */
GC_API void GC_register_finalizer_unreachable(void *obj, GC_finalization_proc fn, void *cd,
                                              GC_finalization_proc *ofn, void **ocd) GC_ATTR_NONNULL(1);
GC_API void GC_debug_register_finalizer(void *obj, GC_finalization_proc fn, void *cd, GC_finalization_proc *ofn,
                                        void **ocd) GC_ATTR_NONNULL(1);
GC_API void GC_debug_register_finalizer_ignore_self(void *obj, GC_finalization_proc fn, void *cd,
                                                    GC_finalization_proc *ofn, void **ocd) GC_ATTR_NONNULL(1);
GC_API void GC_debug_register_finalizer_no_order(void *obj, GC_finalization_proc fn, void *cd,
                                                 GC_finalization_proc *ofn, void **ocd) GC_ATTR_NONNULL(1);
GC_API void GC_debug_register_finalizer_unreachable(void *obj, GC_finalization_proc fn, void *cd,
                                                    GC_finalization_proc *ofn, void **ocd) GC_ATTR_NONNULL(1);
/* Finalizers run in the thread whose allocation or GC_gcollect found
   them due, or, on demand, in GC_invoke_finalizers (which returns how many
   ran), the notifier telling when some are due. */
GC_API int GC_should_invoke_finalizers(void);
GC_API int GC_invoke_finalizers(void);
GC_API void GC_set_finalize_on_demand(int on);
GC_API int GC_get_finalize_on_demand(void);
typedef void (*GC_finalizer_notifier_proc)(void);
GC_API void GC_set_finalizer_notifier(GC_finalizer_notifier_proc fn);
GC_API GC_finalizer_notifier_proc GC_get_finalizer_notifier(void);
/* Always on in effect: the setting is kept, and reported back. */
GC_API void GC_set_java_finalization(int on);
GC_API int GC_get_java_finalization(void);

/* *link is cleared when obj becomes unreachable (before finalizers are
   considered).  The link must hold obj where the collector does not look
   (hidden, or in an atomic object), else it keeps obj alive.  GC_SUCCESS,
   or GC_DUPLICATE when link was registered already (it now stands for
   obj). */
GC_API int GC_general_register_disappearing_link(void **link, const void *obj) GC_ATTR_NONNULL(1)
    GC_ATTR_NONNULL(2);
/* The same with obj the object that holds link. */
GC_API int GC_register_disappearing_link(void **link) GC_ATTR_NONNULL(1);
/* GC_SUCCESS, GC_NOT_FOUND (link is no link), GC_DUPLICATE (new_link is
   one already). */
GC_API int GC_move_disappearing_link(void **link, void **new_link) GC_ATTR_NONNULL(2);
/* 1 if link was registered, else 0. */
GC_API int GC_unregister_disappearing_link(void **link);

/* ---- threads */

struct GC_stack_base {
    void *mem_base; /* the stack's base: its highest address (stacks grow down) */
};
typedef void *(*GC_stack_base_func)(struct GC_stack_base *sb, void *arg);
typedef void *(*GC_fn_type)(void *client_data);
GC_API int GC_get_stack_base(struct GC_stack_base *sb) GC_ATTR_NONNULL(1);
GC_API void *GC_call_with_stack_base(GC_stack_base_func fn, void *arg) GC_ATTR_NONNULL(1);
GC_API void GC_allow_register_threads(void);
GC_API int GC_register_my_thread(const struct GC_stack_base *sb) GC_ATTR_NONNULL(1);
GC_API int GC_unregister_my_thread(void);
GC_API int GC_thread_is_registered(void);
/* fn runs with the allocation lock held: no collection starts and no
   disappearing link is cleared meanwhile; fn must not allocate. */
GC_API void *GC_call_with_alloc_lock(GC_fn_type fn, void *client_data) GC_ATTR_NONNULL(1);
GC_API void *GC_do_blocking(GC_fn_type fn, void *client_data) GC_ATTR_NONNULL(1);
GC_API void *GC_call_with_gc_active(GC_fn_type fn, void *client_data) GC_ATTR_NONNULL(1);
GC_API int GC_get_suspend_signal(void);

#if defined(GC_THREADS) || defined(GC_PTHREADS)
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
GC_API int GC_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);
GC_API int GC_pthread_join(pthread_t thread, void **retval);
GC_API int GC_pthread_detach(pthread_t thread);
GC_API int GC_pthread_cancel(pthread_t thread);
GC_API GC_ATTR_NORETURN void GC_pthread_exit(void *retval);
/* As pthread_sigmask, but the collector's signal is never blocked. */
GC_API int GC_pthread_sigmask(int how, const sigset_t *set, sigset_t *oldset);
/* As dlopen; the object loaded is refused (NULL, with a message) when it
   imports a GC_ function this collector lacks. */
GC_API void *GC_dlopen(const char *path, int mode);
#if !defined(GC_NO_THREAD_REDIRECTS)
#undef pthread_create
#undef pthread_join
#undef pthread_detach
#undef pthread_cancel
#undef pthread_exit
#undef pthread_sigmask
#undef dlopen
#define pthread_create GC_pthread_create
#define pthread_join GC_pthread_join
#define pthread_detach GC_pthread_detach
#define pthread_cancel GC_pthread_cancel
#define pthread_exit GC_pthread_exit
#define pthread_sigmask GC_pthread_sigmask
#define dlopen GC_dlopen
#endif
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GC_H */
