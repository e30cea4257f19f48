#include "os/safe_symbolize.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "os/raw_syscall.h"

namespace adsm::os {
namespace {

// Byte loops of our own: under the preload memcpy and its family are the
// runtime's interposers, and the compiler must not turn these back into
// calls to them.
#if defined(__clang__)
#define ADSM_NO_LIBC_CALLS __attribute__((no_builtin))
#else
#define ADSM_NO_LIBC_CALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif

ADSM_NO_LIBC_CALLS void copy_bytes(char *dst, const char *src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
}

ADSM_NO_LIBC_CALLS const char *find_byte(const char *p, const char *end, char c) {
    for (; p < end; ++p)
        if (*p == c) return p;
    return nullptr;
}

const char *base_name(const char *path) {
    const char *base = path;
    for (const char *p = path; *p; ++p)
        if (*p == '/') base = p + 1;
    return base;
}

size_t length(const char *s) {
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

int open_read_only(const char *path) {
    return static_cast<int>(raw_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC));
}

bool read_at(int fd, void *buf, size_t n, uint64_t at) {
    auto *p = static_cast<char *>(buf);
    while (n > 0) {
        long r = raw_syscall(SYS_pread64, fd, reinterpret_cast<long>(p), static_cast<long>(n), static_cast<long>(at));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<size_t>(r);
        at += static_cast<uint64_t>(r);
    }
    return true;
}

uint64_t parse_hex(const char *&p, const char *end) {
    uint64_t v = 0;
    for (; p < end; ++p) {
        char c = *p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) break;
        v = v << 4 | static_cast<uint64_t>(d);
    }
    return v;
}

void skip_field(const char *&p, const char *end) {
    while (p < end && *p != ' ') ++p;
    while (p < end && *p == ' ') ++p;
}

void copy_bounded(char *dst, size_t cap, const char *src, size_t n) {
    if (n >= cap) n = cap - 1;
    copy_bytes(dst, src, n);
    dst[n] = '\0';
}

// The mapping of /proc/self/maps that holds `addr`: where it starts, the
// file offset it maps there, and its path (or its own name, such as
// [vdso]; "" for anonymous memory).
struct Mapping {
    uintptr_t start;
    uint64_t offset;
    char path[256];
};

bool find_mapping(uintptr_t addr, Mapping *m) {
    int fd = open_read_only("/proc/self/maps");
    if (fd < 0) return false;
    char buf[1024];
    size_t have = 0;
    bool found = false, skipping = false;
    for (;;) {
        long r = raw_syscall(SYS_read, fd, reinterpret_cast<long>(buf + have), static_cast<long>(sizeof buf - have));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        have += static_cast<size_t>(r);
        size_t at = 0;
        for (;;) {
            const char *nl = find_byte(buf + at, buf + have, '\n');
            if (!nl) break;
            const char *p = buf + at, *end = nl;
            at = static_cast<size_t>(nl - buf) + 1;
            if (skipping) {  // the rest of a line longer than the buffer
                skipping = false;
                continue;
            }
            uintptr_t lo = parse_hex(p, end);
            if (p < end && *p == '-') ++p;
            uintptr_t hi = parse_hex(p, end);
            if (addr < lo || addr >= hi) continue;
            // "lo-hi perms offset device inode   path"
            skip_field(p, end);  // on to the permissions
            skip_field(p, end);  // on to the offset
            m->start = lo;
            m->offset = parse_hex(p, end);
            skip_field(p, end);  // on to the device
            skip_field(p, end);  // on to the inode
            skip_field(p, end);  // on to the path, if any
            copy_bounded(m->path, sizeof m->path, p, static_cast<size_t>(end - p));
            found = true;
            break;
        }
        if (found) break;
        if (at == 0 && have == sizeof buf) {
            have = 0;
            skipping = true;
            continue;
        }
        copy_bytes(buf, buf + at, have - at);  // forwards: the bytes move down
        have -= at;
    }
    raw_syscall(SYS_close, fd);
    return found;
}

// The address `file_offset` of the module is loaded at, as its symbols
// count addresses (the segment that holds it says).
bool link_address(int fd, const Elf64_Ehdr &eh, uint64_t file_offset, uint64_t *vaddr) {
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (!read_at(fd, &ph, sizeof ph, eh.e_phoff + uint64_t(i) * eh.e_phentsize)) return false;
        if (ph.p_type == PT_LOAD && file_offset >= ph.p_offset && file_offset < ph.p_offset + ph.p_filesz) {
            *vaddr = file_offset - ph.p_offset + ph.p_vaddr;
            return true;
        }
    }
    return false;
}

// Searches the symbol table `table` for a function holding `vaddr`.
bool function_in(int fd, const Elf64_Ehdr &eh, const Elf64_Shdr &table, uint64_t vaddr, CodeName *out,
                 uint64_t *start) {
    if (table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= eh.e_shnum) return false;
    const uint64_t count = table.sh_size / sizeof(Elf64_Sym);
    Elf64_Sym syms[32];
    for (uint64_t first = 0; first < count; first += 32) {
        const uint64_t n = count - first < 32 ? count - first : 32;
        if (!read_at(fd, syms, n * sizeof(Elf64_Sym), table.sh_offset + first * sizeof(Elf64_Sym))) return false;
        for (uint64_t i = 0; i < n; ++i) {
            const Elf64_Sym &s = syms[i];
            unsigned type = ELF64_ST_TYPE(s.st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF) continue;
            if (vaddr < s.st_value || vaddr >= s.st_value + (s.st_size ? s.st_size : 1)) continue;
            Elf64_Shdr names;
            if (!read_at(fd, &names, sizeof names, eh.e_shoff + uint64_t(table.sh_link) * eh.e_shentsize)) return false;
            if (s.st_name >= names.sh_size) return false;
            size_t len = sizeof out->function - 1;
            if (names.sh_size - s.st_name < len) len = static_cast<size_t>(names.sh_size - s.st_name);
            if (!read_at(fd, out->function, len, names.sh_offset + s.st_name)) return false;
            out->function[len] = '\0';
            *start = s.st_value;
            return true;
        }
    }
    return false;
}

}  // namespace

bool name_code_address(uintptr_t ip, uintptr_t lookup, CodeName *out) {
    out->function[0] = out->module[0] = '\0';
    out->offset = 0;
    Mapping m;
    if (!find_mapping(lookup, &m)) return false;
    const char *base = base_name(m.path);
    copy_bounded(out->module, sizeof out->module, base, length(base));
    if (m.path[0] != '/') return true;  // no file to read symbols from
    int fd = open_read_only(m.path);
    if (fd < 0) return true;
    Elf64_Ehdr eh;
    uint64_t vaddr = 0, start = 0;
    bool named = false;
    if (read_at(fd, &eh, sizeof eh, 0) && eh.e_ident[EI_MAG0] == ELFMAG0 && eh.e_ident[EI_MAG1] == ELFMAG1 &&
        eh.e_ident[EI_MAG2] == ELFMAG2 && eh.e_ident[EI_MAG3] == ELFMAG3 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_shentsize == sizeof(Elf64_Shdr) &&
        link_address(fd, eh, lookup - m.start + m.offset, &vaddr)) {
        // The full symbol table where the module kept it, else the dynamic one.
        const uint32_t tables[] = {SHT_SYMTAB, SHT_DYNSYM};
        for (uint32_t wanted : tables) {
            for (unsigned i = 0; i < eh.e_shnum && !named; ++i) {
                Elf64_Shdr sh;
                if (!read_at(fd, &sh, sizeof sh, eh.e_shoff + uint64_t(i) * eh.e_shentsize)) break;
                if (sh.sh_type == wanted) named = function_in(fd, eh, sh, vaddr, out, &start);
            }
            if (named) break;
        }
        if (named) out->offset = vaddr + (ip - lookup) - start;
    }
    raw_syscall(SYS_close, fd);
    if (!named) out->function[0] = '\0';
    return true;
}

}  // namespace adsm::os
