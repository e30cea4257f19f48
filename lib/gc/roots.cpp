#include "gc/roots.h"

#include <link.h>
#include <sys/auxv.h>

#include "os/vm.h"

namespace adsm::gc {
namespace {

struct Visit {
    RangeBuffer *out;
    uintptr_t self;  // an address in the runtime's code
    uintptr_t vdso;  // the vDSO's ELF header (0 if none)
    LoadedObjects *seen;
    bool ok = true;
};

// The loader's list of the base namespace (objects dlmopen()ed elsewhere
// are not in it).  Read under the loader's lock, or with every thread
// stopped and the list consistent (the loader says so in r_state before it
// changes the list, and after).
LoadedObjects fingerprint() {
    LoadedObjects f;
    for (const link_map *m = _r_debug.r_map; m; m = m->l_next) {
        ++f.count;
        f.hash = (f.hash ^ reinterpret_cast<uintptr_t>(m) ^ (m->l_addr << 1)) * 0x100000001b3ull;
    }
    return f;
}

// [lo, hi) less [cut_lo, cut_hi).
bool push_less(RangeBuffer *out, uintptr_t lo, uintptr_t hi, uintptr_t cut_lo, uintptr_t cut_hi) {
    if (cut_hi <= lo || cut_lo >= hi || cut_lo >= cut_hi) return out->push(lo, hi);
    return out->push(lo, cut_lo) && out->push(cut_hi, hi);
}

int visit(struct dl_phdr_info *info, size_t, void *arg) {
    Visit &v = *static_cast<Visit *>(arg);
    if (v.seen) {  // (the loader's lock is held for the callback)
        *v.seen = fingerprint();
        v.seen = nullptr;
    }
    uintptr_t relro_lo = 0, relro_hi = 0;
    bool own = false;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_LOAD) {
            if (v.self - lo < ph.p_memsz) own = true;
            if (v.vdso && os::page_down(lo) == v.vdso) return 0;  // the kernel's, nothing of ours
        } else if (ph.p_type == PT_GNU_RELRO) {
            // The loader makes whole pages read-only: the part of the last
            // page past the segment's end stays writable.
            relro_lo = os::page_down(lo);
            relro_hi = os::page_down(lo + ph.p_memsz);
        }
    }
    // The runtime's own data holds no collected pointers that are not also
    // registered roots.  Linked into the program itself (the tests), its
    // data is the program's and stays.
    if (own && info->dlpi_name && info->dlpi_name[0]) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W)) continue;
        uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (!push_less(v.out, lo, lo + ph.p_memsz, relro_lo, relro_hi)) {
            v.ok = false;
            return 1;
        }
    }
    return 0;
}

}  // namespace

Status data_segments(RangeBuffer *out, LoadedObjects *seen) {
    Visit v{out, reinterpret_cast<uintptr_t>(&data_segments), getauxval(AT_SYSINFO_EHDR), seen};
    dl_iterate_phdr(visit, &v);
    return v.ok ? adsmSuccess : fail(adsmErrorMemoryAllocation, "collector: no memory for the data segments");
}

bool loaded_objects_unchanged(const LoadedObjects &seen) {
    if (__atomic_load_n(&_r_debug.r_state, __ATOMIC_ACQUIRE) != r_debug::RT_CONSISTENT) return false;
    return fingerprint() == seen;
}

}  // namespace adsm::gc
