#include "interpose/bdwgc/foreign_imports.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace adsm::bdwgc {
namespace {

bool holds(const dl_phdr_info *info, uintptr_t a) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_LOAD && a - lo < ph.p_memsz) return true;
    }
    return false;
}

// The loader rewrites most dynamic entries to run-time addresses; the
// vDSO's and some architectures' stay relative to the load base.
uintptr_t at(const dl_phdr_info *info, ElfW(Addr) p) { return p < info->dlpi_addr ? p + info->dlpi_addr : p; }

// Symbols in the table: DT_HASH says so; DT_GNU_HASH gives the highest
// index through its buckets and the chain that follows the last one.
size_t symbol_count(uintptr_t hash, uintptr_t gnu_hash) {
    if (hash) return reinterpret_cast<const uint32_t *>(hash)[1];
    if (!gnu_hash) return 0;
    auto *h = reinterpret_cast<const uint32_t *>(gnu_hash);
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_words = h[2];
    auto *buckets = reinterpret_cast<const uint32_t *>(h + 4 + bloom_words * (sizeof(ElfW(Addr)) / 4));
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; ++b)
        if (buckets[b] > last) last = buckets[b];
    if (last < symoffset) return symoffset;
    while (!(chain[last - symoffset] & 1)) ++last;
    return last + 1;
}

// The symbols DT_GNU_HASH leaves out, which come first in the table:
// every undefined one is among them (only definitions are hashed).
size_t unhashed_count(uintptr_t gnu_hash) { return reinterpret_cast<const uint32_t *>(gnu_hash)[1]; }

// Calls fn(symbol, name) for each symbol in the object's dynamic table, or
// where the table says which they are, for those that may be imports
// alone (every process's start looks at every object's imports: libc
// defines thousands of symbols and imports a handful).
template <class F>
void for_each_symbol(const dl_phdr_info *info, bool imports, F &&fn) {
    const ElfW(Dyn) *dyn = nullptr;
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = reinterpret_cast<const ElfW(Dyn) *>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn) return;
    uintptr_t symtab = 0, strtab = 0, hash = 0, gnu_hash = 0;
    size_t strsz = 0;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; ++d) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = at(info, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = at(info, d->d_un.d_ptr); break;
        case DT_STRSZ: strsz = d->d_un.d_val; break;
        case DT_HASH: hash = at(info, d->d_un.d_ptr); break;
        case DT_GNU_HASH: gnu_hash = at(info, d->d_un.d_ptr); break;
        default: break;
        }
    }
    if (!symtab || !strtab) return;
    size_t n = imports && gnu_hash ? unhashed_count(gnu_hash) : symbol_count(hash, gnu_hash);
    auto *syms = reinterpret_cast<const ElfW(Sym) *>(symtab);
    auto *strs = reinterpret_cast<const char *>(strtab);
    for (size_t i = 1; i < n; ++i)
        if (syms[i].st_name != 0 && syms[i].st_name < strsz) fn(syms[i], strs + syms[i].st_name);
}

bool is_vdso(const dl_phdr_info *info) {
    return info->dlpi_name && (strstr(info->dlpi_name, "linux-vdso") || strstr(info->dlpi_name, "linux-gate"));
}

struct Walk {
    const void *self;
    void (*fn)(const GcImport &, void *);
    void *arg;
    char program[512];
};

// The program's file into buf, read only when something is reported (most
// processes import nothing of the collector's: a readlink saved at every
// start).
const char *program_file(char (&buf)[512]) {
    if (!buf[0]) {
        ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
        buf[n > 0 ? n : 0] = '\0';
        if (n <= 0) snprintf(buf, sizeof buf, "the program");
    }
    return buf;
}

int visit(dl_phdr_info *info, size_t, void *p) {
    auto *w = static_cast<Walk *>(p);
    if (holds(info, reinterpret_cast<uintptr_t>(w->self)) || is_vdso(info)) return 0;
    const bool named = info->dlpi_name && *info->dlpi_name;
    for_each_symbol(info, true, [&](const ElfW(Sym) &s, const char *sym) {
        unsigned bind = ELF64_ST_BIND(s.st_info);
        if (s.st_shndx != SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) return;
        if (strncmp(sym, "GC_", 3) == 0)
            w->fn(GcImport{named ? info->dlpi_name : program_file(w->program), sym, bind == STB_WEAK}, w->arg);
    });
    return 0;
}

// The object that holds self: its own definition of name, or null.
struct OwnLookup {
    const void *self;
    const char *name;
    void *found;
};

int find_own(dl_phdr_info *info, size_t, void *p) {
    auto *l = static_cast<OwnLookup *>(p);
    if (!holds(info, reinterpret_cast<uintptr_t>(l->self))) return 0;
    for_each_symbol(info, false, [&](const ElfW(Sym) &s, const char *sym) {
        if (s.st_shndx != SHN_UNDEF && !l->found && strcmp(sym, l->name) == 0)
            l->found = reinterpret_cast<void *>(info->dlpi_addr + s.st_value);
    });
    return 1;
}

// Whether p is in the program itself (the first object the loader lists).
int find_in_program(dl_phdr_info *info, size_t, void *p) {
    *static_cast<const void **>(p) = holds(info, reinterpret_cast<uintptr_t>(*static_cast<const void **>(p)))
                                         ? reinterpret_cast<const void *>(1)
                                         : nullptr;
    return 1;
}

bool in_program(const void *p) {
    const void *q = p;
    dl_iterate_phdr(find_in_program, &q);
    return q != nullptr;
}

struct Check {
    const void *self;
    const char *what;  // null: the program
    int refused;
    char program[512];
};

void check_one(const GcImport &import, void *p) {
    auto *c = static_cast<Check *>(p);
    const char *why = nullptr;
    if (served_by(c->self, import, &why)) return;
    if (c->refused++ == 0)
        fprintf(stderr, "adsm: refusing %s: it would run two garbage collectors in one heap.\n",
                c->what ? c->what : program_file(c->program));
    fprintf(stderr, "adsm:   %s imports %s, %s\n", import.object, import.symbol, why);
}

void self_marker() {}

}  // namespace

void for_each_gc_import(const void *self, void (*fn)(const GcImport &, void *), void *arg) {
    Walk w{self, fn, arg, {}};
    dl_iterate_phdr(visit, &w);
}

bool served_by(const void *self, const GcImport &import, const char **why) {
    OwnLookup own{self, import.symbol, nullptr};
    dl_iterate_phdr(find_own, &own);
    void *def = dlsym(RTLD_DEFAULT, import.symbol);
    if (!own.found) {
        *why = "which adsm's collector does not provide";
        return !def && import.weak;  // a weak import nobody defines stays null, as without the runtime
    }
    // Found first: the runtime's own, or the program's copy of one of the
    // runtime's variables (a copy relocation, made from the first definer).
    if (!def || def == own.found || in_program(def)) return true;
    *why = "but another library (libgc?) defines it ahead of adsm's: preload the runtime (adsm-run --gc)";
    return false;
}

bool check_gc_imports(const char *what) {
    Check c{reinterpret_cast<const void *>(&self_marker), what, 0, {}};
    for_each_gc_import(c.self, check_one, &c);
    if (c.refused)
        fprintf(stderr, "adsm: (adsm's collector serves most of bdwgc's API, not all of it: see the README's \"bdwgc programs\")\n");
    return c.refused == 0;
}

bool accept_after_dlopen(const char *path) {
    char what[600];
    snprintf(what, sizeof what, "dlopen(\"%s\")", path ? path : "(null)");
    return check_gc_imports(what);
}

}  // namespace adsm::bdwgc
