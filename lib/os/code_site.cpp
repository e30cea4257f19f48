#include "os/code_site.h"

#define UNW_LOCAL_ONLY
#include <cxxabi.h>
#include <dlfcn.h>
#include <libunwind.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace adsm::os {
namespace {

// Appends "name+0xoff (module)" for one frame.
size_t describe_frame(unw_cursor_t *c, char *buf, size_t len) {
    unw_word_t ip = 0, off = 0;
    unw_get_reg(c, UNW_REG_IP, &ip);
    char mangled[256];
    const char *name = nullptr;
    char *demangled = nullptr;
    if (unw_get_proc_name(c, mangled, sizeof mangled, &off) == 0) {
        int status = 0;
        demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
        name = status == 0 && demangled ? demangled : mangled;
    }
    Dl_info info;
    const char *module = dladdr(reinterpret_cast<void *>(ip), &info) && info.dli_fname ? info.dli_fname : "?";
    const char *base = strrchr(module, '/');
    module = base ? base + 1 : module;
    int n = name ? snprintf(buf, len, "%s+0x%lx (%s)", name, static_cast<unsigned long>(off), module)
                 : snprintf(buf, len, "0x%lx (%s)", static_cast<unsigned long>(ip), module);
    free(demangled);
    return n < 0 ? 0 : static_cast<size_t>(n) < len ? static_cast<size_t>(n) : len - 1;
}

}  // namespace

void describe_fault_site(void *ucontext, int frames, char *buf, size_t len) {
    if (len == 0) return;
    buf[0] = '\0';
    unw_cursor_t c;
    if (unw_init_local2(&c, static_cast<unw_context_t *>(ucontext), UNW_INIT_SIGNAL_FRAME) != 0) {
        snprintf(buf, len, "(unknown code)");
        return;
    }
    size_t used = 0;
    for (int f = 0; f < frames && used + 8 < len; ++f) {
        if (f > 0) used += static_cast<size_t>(snprintf(buf + used, len - used, " <- "));
        used += describe_frame(&c, buf + used, len - used);
        if (unw_step(&c) <= 0) break;
    }
}

}  // namespace adsm::os
