#include "backend/code_location.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace adsm {
namespace {

struct FindByAddr {
    uintptr_t addr;
    bool found = false;
    bool is_main = false;
    std::string name;
    uintptr_t bias = 0;
};

int find_by_addr(struct dl_phdr_info *info, size_t, void *p) {
    auto *f = static_cast<FindByAddr *>(p);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
        if (f->addr >= lo && f->addr < hi) {
            f->found = true;
            // The first object iterated is the main program; its name is "".
            f->is_main = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
            f->name = f->is_main ? "" : info->dlpi_name;
            f->bias = info->dlpi_addr;
            return 1;
        }
    }
    return 0;
}

bool file_identity(const std::string &path, uint64_t *dev, uint64_t *ino) {
    struct stat st;
    if (stat(path.empty() ? main_program_path().c_str() : path.c_str(), &st) != 0) return false;
    *dev = st.st_dev;
    *ino = st.st_ino;
    return true;
}

struct FindByFile {
    const CodeLocation *loc;
    bool found = false;
    uintptr_t bias = 0;
};

int find_by_file(struct dl_phdr_info *info, size_t, void *p) {
    auto *f = static_cast<FindByFile *>(p);
    bool is_main = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
    if (is_main != f->loc->module_path.empty()) return 0;
    uint64_t dev, ino;
    if (!file_identity(is_main ? std::string() : std::string(info->dlpi_name), &dev, &ino)) return 0;
    if (dev != f->loc->dev || ino != f->loc->ino) return 0;
    f->found = true;
    f->bias = info->dlpi_addr;
    return 1;
}

}  // namespace

std::string main_program_path() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = '\0';
        if (!strstr(buf, " (deleted)") && access(buf, X_OK) == 0) return buf;
    }
    return "/proc/self/exe";
}

bool locate_code(const void *addr, CodeLocation *out, std::string *err) {
    FindByAddr f;
    f.addr = reinterpret_cast<uintptr_t>(addr);
    dl_iterate_phdr(find_by_addr, &f);
    if (!f.found) {
        *err = "the code is not inside any loaded module (generated at run time?)";
        return false;
    }
    out->module_path = f.name;
    if (!f.is_main) {
        char real[PATH_MAX];
        if (realpath(f.name.c_str(), real)) out->module_path = real;
    }
    out->offset = f.addr - f.bias;
    if (!file_identity(out->module_path, &out->dev, &out->ino)) {
        *err = "cannot stat module " + (f.is_main ? std::string("of the main program") : out->module_path);
        return false;
    }
    return true;
}

void *resolve_code(const CodeLocation &loc, std::string *err) {
    FindByFile f;
    f.loc = &loc;
    dl_iterate_phdr(find_by_file, &f);
    if (!f.found && !loc.module_path.empty()) {
        // A library the host loaded after this process started.
        if (!dlopen(loc.module_path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            const char *e = dlerror();
            *err = "cannot load " + loc.module_path + ": " + (e ? e : "unknown error");
            return nullptr;
        }
        dl_iterate_phdr(find_by_file, &f);
    }
    if (!f.found) {
        *err = "module " + (loc.module_path.empty() ? std::string("of the main program") : loc.module_path) +
               " differs between host and device (was the file replaced?)";
        return nullptr;
    }
    return reinterpret_cast<void *>(f.bias + loc.offset);
}

}  // namespace adsm
