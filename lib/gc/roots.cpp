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
    bool ok = true;
};

// [lo, hi) less [cut_lo, cut_hi).
bool push_less(RangeBuffer *out, uintptr_t lo, uintptr_t hi, uintptr_t cut_lo, uintptr_t cut_hi) {
    if (cut_hi <= lo || cut_lo >= hi || cut_lo >= cut_hi) return out->push(lo, hi);
    return out->push(lo, cut_lo) && out->push(cut_hi, hi);
}

int visit(struct dl_phdr_info *info, size_t, void *arg) {
    Visit &v = *static_cast<Visit *>(arg);
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

Status data_segments(RangeBuffer *out) {
    Visit v{out, reinterpret_cast<uintptr_t>(&data_segments), getauxval(AT_SYSINFO_EHDR)};
    dl_iterate_phdr(visit, &v);
    return v.ok ? adsmSuccess : fail(adsmErrorMemoryAllocation, "collector: no memory for the data segments");
}

}  // namespace adsm::gc
