#include "os/call_stack.h"

#define UNW_LOCAL_ONLY
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "os/safe_format.h"
#include "os/safe_symbolize.h"

extern char **environ;

namespace adsm::os {
namespace {

// libunwind, loaded when the runtime starts (load_unwinder) rather than
// with the library: most processes under the preload (those a program
// starts) never start the runtime, and loading the unwinder and its
// dependencies was a part of what the preload added to each one's start.
// Written once, by the runtime's start (one thread), before any fault can
// need it; read in signal handlers.
#define ADSM_UNW_STRING(name) #name
#define ADSM_UNW_NAME(name) ADSM_UNW_STRING(name)
struct Unwinder {
    decltype(&unw_tdep_getcontext) getcontext;  // (unw_getcontext is a macro with arguments)
    decltype(&unw_init_local) init_local;
    decltype(&unw_init_local2) init_local2;
    decltype(&unw_step) step;
    decltype(&unw_get_reg) get_reg;
};
Unwinder g_unwinder_storage;
std::atomic<const Unwinder *> g_unwinder{nullptr};

const Unwinder *unwinder() { return g_unwinder.load(std::memory_order_acquire); }

// The runtime's own code, as [lo, hi) ranges of its executable segments.
constexpr int kMaxRanges = 8;
uintptr_t g_lo[kMaxRanges], g_hi[kMaxRanges];
int g_ranges = 0;

bool in_runtime(uintptr_t ip) {
    for (int i = 0; i < g_ranges; ++i)
        if (ip >= g_lo[i] && ip < g_hi[i]) return true;
    return false;
}

struct Module {
    std::string path;
    uintptr_t bias = 0;
};

// The loaded module that holds `ip`, with the path addr2line needs.
bool module_of(uintptr_t ip, Module *out) {
    struct Query {
        uintptr_t ip;
        Module *out;
        bool found;
    } q{ip, out, false};
    dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *arg) {
            auto *q = static_cast<Query *>(arg);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type != PT_LOAD || q->ip < lo || q->ip >= lo + ph.p_memsz) continue;
                q->out->bias = info->dlpi_addr;
                q->out->path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
                q->found = true;
                return 1;
            }
            return 0;
        },
        &q);
    return q.found;
}

std::string short_location(const std::string &where);

// Runs addr2line on one module; returns "function at file:line" per
// address (naming the function it is inlined in, if any), or an empty
// vector when it cannot.
std::vector<std::string> addr2line(const std::string &module, const std::vector<uintptr_t> &offsets) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return {};
    std::string exe = module == "/proc/self/exe" ? std::string("/proc/") + std::to_string(getpid()) + "/exe" : module;
    std::vector<std::string> args = {"addr2line", "-a", "-i", "-C", "-f", "-e", exe};
    for (uintptr_t off : offsets) {
        char hex[32];
        snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(off));
        args.push_back(hex);
    }
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The helper runs without the preload: it is not the program.
    std::vector<char *> envp;
    for (char **e = environ; e && *e; ++e)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "ADSM_", 5)) envp.push_back(*e);
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int r = posix_spawnp(&pid, "addr2line", &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (r != 0) {
        close(fds[0]);
        return {};
    }
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        text.append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::vector<std::string> lines;
    for (size_t at = 0; at < text.size();) {
        size_t nl = text.find('\n', at);
        if (nl == std::string::npos) nl = text.size();
        lines.push_back(text.substr(at, nl - at));
        at = nl + 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
    // Per address: its "0x..." line, then (function, file:line) pairs from
    // the innermost inlined function out to the real one.
    std::vector<std::vector<std::pair<std::string, std::string>>> frames;
    for (size_t i = 0; i < lines.size();) {
        if (lines[i].rfind("0x", 0) == 0) {
            frames.emplace_back();
            ++i;
            continue;
        }
        if (frames.empty() || i + 1 >= lines.size()) return {};
        frames.back().emplace_back(lines[i], short_location(lines[i + 1]));
        i += 2;
    }
    if (frames.size() != offsets.size()) return {};
    std::vector<std::string> out;
    for (auto &f : frames) {
        if (f.empty() || (f.front().first == "??" && f.front().second.empty())) {
            out.emplace_back();  // addr2line knows nothing: the caller falls back
            continue;
        }
        auto named = [](const std::pair<std::string, std::string> &p) {
            return p.second.empty() ? p.first : p.first + " at " + p.second;
        };
        std::string s = named(f.front());
        if (f.size() > 1) s += ", inlined in " + named(f.back());
        out.push_back(s);
    }
    return out;
}

// "dir/file.c:12" from addr2line's "/long/path/dir/file.c:12 (discriminator 1)";
// empty when it does not know.
std::string short_location(const std::string &where) {
    if (where.rfind("??", 0) == 0) return {};
    std::string loc = where.substr(0, where.find(' '));
    size_t slash = loc.rfind('/');
    if (slash != std::string::npos && slash > 0) {
        size_t prev = loc.rfind('/', slash - 1);
        if (prev != std::string::npos) loc = loc.substr(prev + 1);
    }
    return loc;
}

#if defined(__SANITIZE_ADDRESS__)
// libunwind is not instrumented and writes into stack buffers of its own
// below this frame, where AddressSanitizer may still hold the poison of
// frames that left through a signal or a call that never returned (on the
// fault handler's stack it cannot tell where the stack ends, and says so).
// Everything below the caller's frame is dead: this frame, its return
// address and saved frame pointer, and what lies under them.
__attribute__((noinline)) void unpoison_stack_below_here() {
    char *top = static_cast<char *>(__builtin_frame_address(0)) + 2 * sizeof(void *);
    constexpr size_t kBelow = 64 * 1024;
    __asan_unpoison_memory_region(top - kBelow, kBelow);
}
#else
void unpoison_stack_below_here() {}
#endif

std::string basename_of(const std::string &path) {
    size_t s = path.rfind('/');
    return s == std::string::npos ? path : path.substr(s + 1);
}

// Appends "name+0xoff (module)" for one frame.  Runs in the fault handler:
// libunwind's local unwinding gives the address, safe_symbolize names it
// (libunwind's own naming allocates), the name stays mangled (demangling
// allocates), and the formatting is os::safe_format.
size_t describe_frame(unw_cursor_t *c, bool innermost, char *buf, size_t len) {
    unpoison_stack_below_here();
    unw_word_t ip = 0;
    unwinder()->get_reg(c, UNW_REG_IP, &ip);
    CodeName name;
    // (An outer frame's address is where its call returns to.)
    if (!name_code_address(ip, innermost ? ip : ip - 1, &name)) name.module[0] = '\0';
    const char *module = name.module[0] ? name.module : "?";
    return name.function[0]
               ? safe_format(buf, len, "%s+0x%lx (%s)", name.function, static_cast<unsigned long>(name.offset), module)
               : safe_format(buf, len, "0x%lx (%s)", static_cast<unsigned long>(ip), module);
}

}  // namespace

void find_runtime_code() {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&find_runtime_code), &info) || !info.dli_fbase) return;
    struct Ctx {
        uintptr_t base;
    } ctx{reinterpret_cast<uintptr_t>(info.dli_fbase)};
    dl_iterate_phdr(
        [](struct dl_phdr_info *in, size_t, void *arg) {
            auto *c = static_cast<Ctx *>(arg);
            // The main program holds the runtime only when it was linked in
            // statically (tests); then no frame can be told apart by module.
            if (!in->dlpi_name || !in->dlpi_name[0]) return 0;
            bool ours = false;
            for (int i = 0; i < in->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = in->dlpi_phdr[i];
                if (ph.p_type == PT_LOAD && ph.p_offset == 0 && in->dlpi_addr + ph.p_vaddr == c->base) ours = true;
            }
            if (!ours) return 0;
            for (int i = 0; i < in->dlpi_phnum && g_ranges < kMaxRanges; ++i) {
                const ElfW(Phdr) &ph = in->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
                g_lo[g_ranges] = in->dlpi_addr + ph.p_vaddr;
                g_hi[g_ranges] = g_lo[g_ranges] + ph.p_memsz;
                ++g_ranges;
            }
            return 1;
        },
        &ctx);
}

bool load_unwinder() {
    if (unwinder()) return true;
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    Unwinder &u = g_unwinder_storage;
    u.getcontext = reinterpret_cast<decltype(u.getcontext)>(dlsym(lib, ADSM_UNW_NAME(unw_tdep_getcontext)));
    u.init_local = reinterpret_cast<decltype(u.init_local)>(dlsym(lib, ADSM_UNW_NAME(unw_init_local)));
    u.init_local2 = reinterpret_cast<decltype(u.init_local2)>(dlsym(lib, ADSM_UNW_NAME(unw_init_local2)));
    u.step = reinterpret_cast<decltype(u.step)>(dlsym(lib, ADSM_UNW_NAME(unw_step)));
    u.get_reg = reinterpret_cast<decltype(u.get_reg)>(dlsym(lib, ADSM_UNW_NAME(unw_get_reg)));
    if (!u.getcontext || !u.init_local || !u.init_local2 || !u.step || !u.get_reg) return false;
    g_unwinder.store(&u, std::memory_order_release);
    return true;
}

int program_stack(void *ucontext, uintptr_t *ips, int max) {
    const Unwinder *u = unwinder();
    if (!u) return 0;
    unw_context_t here;
    unw_cursor_t c;
    bool from_signal = ucontext != nullptr;
    if (from_signal) {
        if (u->init_local2(&c, static_cast<unw_context_t *>(ucontext), UNW_INIT_SIGNAL_FRAME) != 0) return 0;
    } else {
        u->getcontext(&here);
        if (u->init_local(&c, &here) != 0) return 0;
    }
    int n = 0;
    bool first = true;
    do {
        unw_word_t ip = 0;
        u->get_reg(&c, UNW_REG_IP, &ip);
        if (ip == 0) break;
        // Every frame but a signal's first holds a return address.
        uintptr_t at = from_signal && first ? ip : ip - 1;
        first = false;
        if (n == 0 && in_runtime(at)) continue;  // the runtime's own frames, up to the program's
        ips[n++] = at;
    } while (n < max && u->step(&c) > 0);
    return n;
}

std::vector<std::string> describe_code(const std::vector<uintptr_t> &ips) {
    std::vector<std::string> out(ips.size());
    std::map<std::string, std::vector<size_t>> by_module;
    std::vector<Module> modules(ips.size());
    for (size_t i = 0; i < ips.size(); ++i)
        if (module_of(ips[i], &modules[i])) by_module[modules[i].path].push_back(i);
    for (auto &[path, idx] : by_module) {
        std::vector<uintptr_t> offsets;
        for (size_t i : idx) offsets.push_back(ips[i] - modules[i].bias);
        std::vector<std::string> named = addr2line(path, offsets);
        for (size_t k = 0; k < idx.size(); ++k)
            if (k < named.size() && !named[k].empty()) out[idx[k]] = named[k];
    }
    for (size_t i = 0; i < ips.size(); ++i) {
        if (!out[i].empty()) continue;
        Dl_info info;
        char buf[512];
        std::string module = modules[i].path.empty() ? "?" : basename_of(modules[i].path);
        if (module == "exe") module = "program";
        if (dladdr(reinterpret_cast<void *>(ips[i]), &info) && info.dli_sname)
            snprintf(buf, sizeof buf, "%s+0x%lx (%s)", info.dli_sname,
                     static_cast<unsigned long>(ips[i] - reinterpret_cast<uintptr_t>(info.dli_saddr)), module.c_str());
        else
            snprintf(buf, sizeof buf, "0x%lx (%s)", static_cast<unsigned long>(ips[i] - modules[i].bias), module.c_str());
        out[i] = buf;
    }
    return out;
}

void describe_fault_site(void *ucontext, int frames, char *buf, size_t len) {
    if (len == 0) return;
    buf[0] = '\0';
    const Unwinder *u = unwinder();
    unw_cursor_t c;
    if (!u || u->init_local2(&c, static_cast<unw_context_t *>(ucontext), UNW_INIT_SIGNAL_FRAME) != 0) {
        safe_format(buf, len, "(unknown code)");
        return;
    }
    size_t used = 0;
    for (int f = 0; f < frames && used + 8 < len; ++f) {
        if (f > 0) used += safe_format(buf + used, len - used, " <- ");
        used += describe_frame(&c, f == 0, buf + used, len - used);
        if (u->step(&c) <= 0) break;
    }
}

}  // namespace adsm::os
