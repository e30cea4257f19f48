// bdwgc's start-up, collection control, heap statistics, settings and
// warnings on adsm's collector.
#include <link.h>
#include <pthread.h>

#include <cstdio>
#include <cstring>

#include "interpose/bdwgc/state.h"

using namespace adsm::bdwgc;

namespace {

adsm::gc::Collector::Usage usage() {
    adsm::gc::Collector::Usage u;
    if (detached()) return u;
    adsm::Inside in;
    collector().usage(&u);
    return u;
}

size_t free_bytes(const adsm::gc::Collector::Usage &u) {
    uint64_t used = u.live_bytes + u.allocated_since_collection;
    return u.heap_bytes > used ? static_cast<size_t>(u.heap_bytes - used) : 0;
}

bool on_this_stack(const void *p) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
    void *lo = nullptr;
    size_t size = 0;
    int r = pthread_attr_getstack(&attr, &lo, &size);
    pthread_attr_destroy(&attr);
    return r == 0 && reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(lo) < size;
}

int in_writable_segment(dl_phdr_info *info, size_t, void *p) {
    uintptr_t a = *static_cast<uintptr_t *>(p);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && a - (info->dlpi_addr + ph.p_vaddr) < ph.p_memsz) return 1;
    }
    return 0;
}

}  // namespace

extern "C" {

void GC_init(void) {
    if (!detached()) collector();
}

int GC_is_init_called(void) { return started(); }

unsigned GC_get_version(void) { return GC_VERSION_MAJOR << 16 | GC_VERSION_MINOR << 8 | GC_VERSION_MICRO; }

void GC_gcollect(void) {
    if (detached()) return;
    {
        adsm::Inside in;
        collector().collect();
    }
    run_waiting_finalizers();
}

void GC_gcollect_and_unmap(void) { GC_gcollect(); }

int GC_try_to_collect(GC_stop_func stop_func) {
    if (stop_func()) return 0;
    GC_gcollect();
    return 1;
}

int GC_collect_a_little(void) {
    if (detached()) return 0;
    {
        adsm::Inside in;
        collector().collect_if_due();
    }
    run_waiting_finalizers();
    return 0;
}

void GC_disable(void) {
    if (detached()) return;
    adsm::Inside in;
    collector().disable();
}

void GC_enable(void) {
    if (detached()) return;
    adsm::Inside in;
    adsm::gc::Collector &c = collector();
    if (c.disabled()) c.enable();  // (more enables than disables are no error in bdwgc either)
}

int GC_is_disabled(void) {
    if (detached()) return 1;
    adsm::Inside in;
    return collector().disabled();
}

// Collections stop every thread for the whole of their marking.
// Minor collections are on wherever the kernel tracks writes (ADSM_GC_GENERATIONAL).
void GC_enable_incremental(void) {}
int GC_is_incremental_mode(void) {
    if (detached()) return 0;
    adsm::Inside in;
    return collector().generational();
}

size_t GC_get_heap_size(void) { return static_cast<size_t>(usage().heap_bytes); }
size_t GC_get_free_bytes(void) { return free_bytes(usage()); }
// Chunks the collector gives back leave the heap (and its size) at once.
size_t GC_get_unmapped_bytes(void) { return 0; }
size_t GC_get_bytes_since_gc(void) { return static_cast<size_t>(usage().allocated_since_collection); }
size_t GC_get_total_bytes(void) { return static_cast<size_t>(usage().allocated_bytes); }
size_t GC_get_memory_use(void) {
    adsm::gc::Collector::Usage u = usage();
    return static_cast<size_t>(u.heap_bytes) - free_bytes(u);
}
GC_word GC_get_gc_no(void) { return usage().collections; }

void GC_get_heap_usage_safe(GC_word *pheap_size, GC_word *pfree_bytes, GC_word *punmapped_bytes,
                            GC_word *pbytes_since_gc, GC_word *ptotal_bytes) {
    adsm::gc::Collector::Usage u = usage();
    if (pheap_size) *pheap_size = u.heap_bytes;
    if (pfree_bytes) *pfree_bytes = free_bytes(u);
    if (punmapped_bytes) *punmapped_bytes = 0;
    if (pbytes_since_gc) *pbytes_since_gc = u.allocated_since_collection;
    if (ptotal_bytes) *ptotal_bytes = u.allocated_bytes;
}

int GC_expand_hp(size_t bytes) {
    if (detached()) return 0;
    adsm::Inside in;
    return collector().expand(bytes);
}

void GC_set_max_heap_size(GC_word bytes) {
    if (detached()) return;
    adsm::Inside in;
    collector().set_max_heap(bytes);
}

void GC_dump(void) {
    adsm::gc::Collector::Usage u = usage();
    adsmGcStats s{};
    adsmGcGetStats(&s);
    printf("adsm collector: heap %llu bytes, %llu live after the last collection, %zu free\n",
           static_cast<unsigned long long>(u.heap_bytes), static_cast<unsigned long long>(u.live_bytes), free_bytes(u));
    printf("  %llu collections (longest pause %.3f ms), %llu bytes allocated, %llu since the last collection\n",
           static_cast<unsigned long long>(u.collections), static_cast<double>(s.max_pause_ns) / 1e6,
           static_cast<unsigned long long>(u.allocated_bytes), static_cast<unsigned long long>(u.allocated_since_collection));
    printf("  %llu objects freed, %llu finalizers run, %llu disappearing links cleared\n",
           static_cast<unsigned long long>(s.objects_freed), static_cast<unsigned long long>(s.finalizers_run),
           static_cast<unsigned long long>(s.weak_cleared));
}

void GC_set_all_interior_pointers(int on) { g_settings.extra_byte.store(on != 0); }
int GC_get_all_interior_pointers(void) { return g_settings.extra_byte.load(); }
// Every displacement already counts.
void GC_register_displacement(size_t) {}
void GC_debug_register_displacement(size_t) {}

void *GC_is_visible(void *p) {
    if (detached() || on_this_stack(p)) return p;
    adsm::Inside in;
    adsm::gc::Collector &c = collector();
    adsm::gc::Collector::ObjectInfo info;
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    bool visible = c.describe(p, &info) ? info.pointers : c.in_roots(p) || dl_iterate_phdr(in_writable_segment, &a);
    if (!visible) warn("GC_is_visible: the collector never reads %p\n", reinterpret_cast<GC_word>(p));
    return p;
}

void GC_add_roots(void *low, void *high_plus_1) {
    if (detached() || high_plus_1 <= low) return;
    adsm::Inside in;
    collector().add_roots(low, static_cast<size_t>(static_cast<char *>(high_plus_1) - static_cast<char *>(low)));
}

void GC_remove_roots(void *low, void *high_plus_1) {
    if (detached() || high_plus_1 <= low) return;
    adsm::Inside in;
    collector().remove_roots_within(low, high_plus_1);
}

void GC_set_oom_fn(GC_oom_func fn) { g_settings.oom_fn.store(fn); }
GC_oom_func GC_get_oom_fn(void) { return g_settings.oom_fn.load(); }

void GC_set_warn_proc(GC_warn_proc fn) { g_settings.warn_proc.store(fn); }
GC_warn_proc GC_get_warn_proc(void) { return g_settings.warn_proc.load(); }
void GC_ignore_warn_proc(char *, GC_word) {}

void GC_set_on_collection_event(GC_on_collection_event_proc fn) { g_settings.on_event.store(fn); }
GC_on_collection_event_proc GC_get_on_collection_event(void) { return g_settings.on_event.load(); }
void GC_set_start_callback(GC_start_callback_proc fn) { g_settings.on_start.store(fn); }
GC_start_callback_proc GC_get_start_callback(void) { return g_settings.on_start.load(); }

}  // extern "C"
