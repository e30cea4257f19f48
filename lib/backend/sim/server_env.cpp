#include "backend/sim/server_env.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>

#include "backend/code_location.h"
#include "backend/device.h"

extern char **environ;

namespace adsm {
namespace {

struct NeededScan {
    void *ours;
    bool found = false;
};

// Whether the main program names our library among its DT_NEEDED entries,
// in which case starting the program again loads it without help.
int scan_main(struct dl_phdr_info *info, size_t, void *p) {
    auto *s = static_cast<NeededScan *>(p);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        auto *dyn = reinterpret_cast<const ElfW(Dyn) *>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        uintptr_t strtab = 0;
        for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; ++d)
            if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
        if (!strtab) break;
        if (strtab < info->dlpi_addr) strtab += info->dlpi_addr;  // not relocated in place
        for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; ++d) {
            if (d->d_tag != DT_NEEDED) continue;
            const char *name = reinterpret_cast<const char *>(strtab + d->d_un.d_val);
            void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
            if (h) {
                s->found = h == s->ours;
                dlclose(h);
                if (s->found) break;
            }
        }
        break;
    }
    return 1;  // the main program is always first
}

// The path of our library when the device process would not load it by
// itself; "" when it would (or when we are part of the main program).
std::string library_to_preload() {
    CodeLocation self;
    std::string err;
    if (!locate_code(reinterpret_cast<const void *>(&create_device), &self, &err) || self.module_path.empty()) return "";
    NeededScan scan;
    scan.ours = dlopen(self.module_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!scan.ours) return self.module_path;
    dl_iterate_phdr(scan_main, &scan);
    dlclose(scan.ours);
    return scan.found ? "" : self.module_path;
}

}  // namespace

std::vector<std::string> server_environment(int sock, int channel_fd, int dev_fd, int host_fd,
                                            const std::vector<int> &peer_fds) {
    std::vector<std::string> env;
    std::string preload = library_to_preload();
    bool preloaded = false;
    for (char **e = environ; e && *e; ++e) {
        if (!strncmp(*e, "ADSM_SIM_SERVER=", 16)) continue;
        if (!preload.empty() && !strncmp(*e, "LD_PRELOAD=", 11)) {
            std::string cur = *e + 11;
            if (cur.find(preload) == std::string::npos) cur = cur.empty() ? preload : cur + ":" + preload;
            env.push_back("LD_PRELOAD=" + cur);
            preloaded = true;
            continue;
        }
        env.emplace_back(*e);
    }
    if (!preload.empty() && !preloaded) env.push_back("LD_PRELOAD=" + preload);
    char spec[96];
    snprintf(spec, sizeof spec, "ADSM_SIM_SERVER=%d,%d,%d,%d", sock, channel_fd, dev_fd, host_fd);
    std::string server = spec;
    for (int fd : peer_fds) server += ":" + std::to_string(fd);
    env.push_back(server);
    return env;
}

}  // namespace adsm
