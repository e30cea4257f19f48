#include "os/real_libc.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "os/real_table.h"

namespace adsm::os {
namespace {

ADSM_REAL_FUNCTION(g_memcpy, "memcpy");
ADSM_REAL_FUNCTION(g_memmove, "memmove");
ADSM_REAL_FUNCTION(g_memset, "memset");
ADSM_REAL_FUNCTION(g_sigaction, "sigaction");

template <class Fn>
Fn fn(RealFunction &f) {
    return reinterpret_cast<Fn>(real(f));
}

}  // namespace

void *real_memcpy(void *dst, const void *src, size_t n) { return fn<decltype(&::memcpy)>(g_memcpy)(dst, src, n); }

void *real_memmove(void *dst, const void *src, size_t n) { return fn<decltype(&::memmove)>(g_memmove)(dst, src, n); }

void *real_memset(void *dst, int value, size_t n) { return fn<decltype(&::memset)>(g_memset)(dst, value, n); }

namespace {

const char *lookup(char *const *vars, const char *name) {
    const size_t len = strlen(name);
    for (char *const *e = vars; e && *e; ++e)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
    return nullptr;
}

// The runtime's variables as the program started with them, copied before
// its code runs: a program that clears its environment (clearenv, or
// environ set to an array of its own) before its first large allocation
// started the runtime with none of its settings (the device, the protocol,
// the statistics silently back to their defaults).
char g_start_text[16384];
char *g_start_vars[256];

bool runtimes(const char *var) {
    return strncmp(var, "ADSM_", 5) == 0 || strncmp(var, "GC_", 3) == 0 || strncmp(var, "LD_PRELOAD=", 11) == 0;
}

__attribute__((constructor(101))) void keep_start_environment() {
    size_t used = 0, n = 0;
    for (char **e = environ; e && *e && n + 1 < sizeof g_start_vars / sizeof *g_start_vars; ++e) {
        const size_t len = strlen(*e) + 1;
        if (!runtimes(*e) || used + len > sizeof g_start_text) continue;
        for (size_t i = 0; i < len; ++i) g_start_text[used + i] = (*e)[i];  // (memcpy is interposed, maybe unresolved yet)
        g_start_vars[n++] = g_start_text + used;
        used += len;
    }
}

}  // namespace

const char *env(const char *name) {
    if (const char *v = lookup(environ, name)) return v;
    return lookup(g_start_vars, name);
}

int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    auto f = fn<decltype(&::sigaction)>(g_sigaction);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(sig, act, old);
}

}  // namespace adsm::os
