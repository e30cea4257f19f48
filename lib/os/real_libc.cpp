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

const char *env(const char *name) {
    size_t len = strlen(name);
    for (char **e = environ; e && *e; ++e)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
    return nullptr;
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
