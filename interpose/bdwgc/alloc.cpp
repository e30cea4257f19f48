// bdwgc's allocation functions on adsm's collector.  Objects that may hold
// pointers are zeroed, atomic ones are not (as in bdwgc); uncollectable
// objects are pinned, so that they are roots until GC_free; a failed
// allocation returns what the program's out-of-memory handler returns
// (NULL by default), as bdwgc does.
#include <errno.h>
#include <stdlib.h>

#include <cstring>

#include "api/preload.h"
#include "interpose/bdwgc/kinds.h"
#include "interpose/bdwgc/state.h"

namespace adsm::bdwgc {

void *allocate(size_t n, bool pointers, bool uncollectable) {
    if (detached()) return pointers ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
    void *p;
    {
        Inside in;
        gc::Collector &c = collector();
        p = c.alloc(with_extra_byte(n), pointers);
        if (p && uncollectable) c.pin(p);  // a live object's start: cannot fail
    }
    run_waiting_finalizers();
    return p ? p : out_of_memory(n);
}

}  // namespace adsm::bdwgc

using namespace adsm::bdwgc;

namespace {

// A large alignment is served from inside a larger object: its interior
// pointer keeps it, and GC_base finds its start.
void *aligned(size_t align, size_t n) {
    constexpr size_t kPage = 4096;
    if (align <= 16) return GC_malloc(n);
    // Objects of more than 2 KiB start on a page.
    if (align <= kPage) return GC_malloc(n > 2048 ? n : 2049);
    if (n > SIZE_MAX - align) return out_of_memory(n);
    auto *p = static_cast<char *>(GC_malloc(n + align - 1));
    if (!p) return nullptr;
    return reinterpret_cast<void *>((reinterpret_cast<uintptr_t>(p) + align - 1) & ~(uintptr_t(align) - 1));
}

}  // namespace

extern "C" {

void *GC_malloc(size_t n) { return allocate(n, true, false); }
void *GC_malloc_atomic(size_t n) { return allocate(n, false, false); }
void *GC_malloc_uncollectable(size_t n) { return allocate(n, true, true); }
void *GC_malloc_atomic_uncollectable(size_t n) { return allocate(n, false, true); }
// Every interior pointer counts here, on the first page or not.
void *GC_malloc_ignore_off_page(size_t n) { return allocate(n, true, false); }
void *GC_malloc_atomic_ignore_off_page(size_t n) { return allocate(n, false, false); }
void *GC_malloc_stubborn(size_t n) { return allocate(n, true, false); }

char *GC_strdup(const char *s) {
    if (!s) return nullptr;
    size_t n = strlen(s) + 1;
    auto *p = static_cast<char *>(GC_malloc_atomic(n));
    if (p) memcpy(p, s, n);
    return p;
}

char *GC_strndup(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    auto *p = static_cast<char *>(GC_malloc_atomic(len + 1));
    if (!p) return nullptr;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void *GC_memalign(size_t align, size_t n) { return aligned(align, n); }

int GC_posix_memalign(void **memptr, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = aligned(align, n);
    if (!p) return ENOMEM;
    *memptr = p;
    return 0;
}

void GC_free(void *obj) {
    if (!obj) return;
    if (detached()) {
        // What the C library gave here goes back to it; the parent's
        // collected objects stay, as ordinary memory.
        if (!adsm::preload::in_window(obj)) free(obj);
        return;
    }
    adsm::Inside in;
    if (collector().free(obj) != adsmSuccess) warn("GC_free: %p is not the start of an object of the collected heap\n", reinterpret_cast<GC_word>(obj));
}

// As bdwgc: the same object when the new size fits and is at least half of
// it (the rest cleared, so that stale pointers there keep nothing), else a
// new object of the same kind with the old one's bytes, and the old freed.
void *GC_realloc(void *obj, size_t n) {
    if (!obj) return GC_malloc(n);
    if (n == 0) {
        GC_free(obj);
        return nullptr;
    }
    if (detached()) return adsm::preload::in_window(obj) ? nullptr : realloc(obj, n);
    adsm::gc::Collector::ObjectInfo info;
    {
        adsm::Inside in;
        if (!collector().describe(obj, &info) || info.base != obj) {
            warn("GC_realloc: %p is not the start of an object of the collected heap\n", reinterpret_cast<GC_word>(obj));
            return nullptr;
        }
    }
    if (with_extra_byte(n) <= info.size && n >= info.size / 2) {
        memset(static_cast<char *>(obj) + n, 0, info.size - n);
        return obj;
    }
    void *p = allocate_like(info, n);
    if (!p) return nullptr;
    memcpy(p, obj, n < info.size ? n : info.size);
    GC_free(obj);
    return p;
}

void *GC_base(void *p) { return adsmGcBase(p); }

size_t GC_size(const void *obj) { return adsmGcSize(obj); }

int GC_is_heap_ptr(const void *p) {
    if (detached()) return 0;
    return collector().in_heap(p);
}

void *GC_same_obj(void *p, void *q) {
    void *base = GC_base(p);
    if (base && base != GC_base(q)) warn("GC_same_obj: %p is not in the same object as the pointer it came from\n", reinterpret_cast<GC_word>(p));
    return p;
}

// Every displacement is valid: every interior pointer is recognised.
void *GC_is_valid_displacement(void *p) { return p; }

// Dirty bits belong to bdwgc's incremental mode, which adsm does not have.
void GC_change_stubborn(const void *) {}
void GC_end_stubborn_change(const void *) {}
void GC_ptr_store_and_dirty(void *p, const void *q) { *static_cast<const void **>(p) = q; }

// Keeps x (a pointer, usually) live up to here: the compiler must assume
// the call reads it.
void GC_noop1(GC_word x) { asm volatile("" : : "r"(x) : "memory"); }

}  // extern "C"
