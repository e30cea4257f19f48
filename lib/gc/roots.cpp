#include "gc/roots.h"

#include <link.h>
#include <sys/auxv.h>

#include <cstring>
#include <utility>

#include "os/driver_objects.h"
#include "os/vm.h"
#include "support/log.h"

namespace adsm::gc {
namespace {

struct Visit {
    RangeBuffer *out;
    uintptr_t self;  // an address in the runtime's code
    uintptr_t vdso;  // the vDSO's ELF header (0 if none)
    LoadedObjects *seen;
    bool first = true;
    bool ok = true;
};

// The loader's r_debug of each namespace: glibc 2.35 and later chain them
// (r_version 2, glibc's r_debug_extended, declared here for older headers),
// so objects dlmopen()ed into a namespace of their own, which
// dl_iterate_phdr lists as roots too, are seen.  Before that, the base
// namespace's alone.
struct DebugChain {
    r_debug debug;
    const DebugChain *next;
};

template <class F>
void for_each_namespace(F f) {
    for (const auto *d = reinterpret_cast<const DebugChain *>(&_r_debug); d; d = d->debug.r_version >= 2 ? d->next : nullptr)
        f(d->debug);
}

// Read under the loader's lock, or with every thread stopped and every
// list consistent (the loader says so in r_state before it changes a list,
// and after).
LoadedObjects fingerprint() {
    LoadedObjects f;
    for_each_namespace([&](const r_debug &d) {
        for (const link_map *m = d.r_map; m; m = m->l_next) {
            ++f.count;
            f.hash = (f.hash ^ reinterpret_cast<uintptr_t>(m) ^ (m->l_addr << 1)) * 0x100000001b3ull;
        }
    });
    return f;
}

// [lo, hi) less [cut_lo, cut_hi).
bool push_less(RangeBuffer *out, uintptr_t lo, uintptr_t hi, uintptr_t cut_lo, uintptr_t cut_hi) {
    if (cut_hi <= lo || cut_lo >= hi || cut_lo >= cut_hi) return out->push(lo, hi);
    return out->push(lo, cut_lo) && out->push(cut_hi, hi);
}

int visit(struct dl_phdr_info *info, size_t, void *arg);

// An object of another namespace as dl_iterate_phdr would describe it, from
// the ELF header its first segment maps at its load address (where a shared
// object or position-independent program is linked at 0); false for one
// not laid out so: nothing readable there, or its dynamic section not where
// its headers say.
bool describe(const link_map &m, dl_phdr_info *info) {
    auto all_readable = [](uintptr_t lo, size_t len) {
        return os::readable(reinterpret_cast<const void *>(lo)) == 1 &&
               os::readable(reinterpret_cast<const void *>(lo + len - 1)) == 1;
    };
    const auto *eh = reinterpret_cast<const ElfW(Ehdr) *>(m.l_addr);
    if (!eh || !all_readable(m.l_addr, sizeof *eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_type != ET_DYN || eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phnum == 0)
        return false;
    const auto *ph = reinterpret_cast<const ElfW(Phdr) *>(m.l_addr + eh->e_phoff);
    if (!all_readable(reinterpret_cast<uintptr_t>(ph), eh->e_phnum * sizeof *ph)) return false;
    for (int i = 0; i < eh->e_phnum; ++i)
        if (ph[i].p_type == PT_DYNAMIC && m.l_addr + ph[i].p_vaddr == reinterpret_cast<uintptr_t>(m.l_ld)) {
            *info = {};
            info->dlpi_addr = m.l_addr;
            info->dlpi_name = m.l_name;
            info->dlpi_phdr = ph;
            info->dlpi_phnum = eh->e_phnum;
            return true;
        }
    return false;
}

// dl_iterate_phdr lists the caller's namespace alone: objects dlmopen()ed
// into others (glibc 2.35 and later chain their lists) are read here, under
// the loader's lock that the callback holds.
void other_namespaces(Visit &v) {
    bool base = true;
    for_each_namespace([&](const r_debug &d) {
        if (std::exchange(base, false)) return;
        for (const link_map *m = d.r_map; m && v.ok; m = m->l_next) {
            dl_phdr_info info;
            if (describe(*m, &info)) visit(&info, sizeof info, &v);
            else ADSM_LOG(info, "collector: the data of %s (in a dlmopen() namespace) is not scanned: its ELF headers "
                                "are not at its load address", m->l_name && m->l_name[0] ? m->l_name : "an object");
        }
    });
}

int visit(struct dl_phdr_info *info, size_t, void *arg) {
    Visit &v = *static_cast<Visit *>(arg);
    if (std::exchange(v.first, false)) {  // (the loader's lock is held for the callback)
        if (v.seen) *v.seen = fingerprint();
        other_namespaces(v);
        if (!v.ok) return 1;
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
    // A device driver's data holds the host ranges the runtime pinned, not
    // the program's references (os/driver_objects.h).
    if (os::is_driver_object(info->dlpi_addr)) return 0;
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
    bool consistent = true;
    for_each_namespace([&](const r_debug &d) {
        consistent &= __atomic_load_n(&d.r_state, __ATOMIC_ACQUIRE) == r_debug::RT_CONSISTENT;
    });
    return consistent && fingerprint() == seen;
}

}  // namespace adsm::gc
