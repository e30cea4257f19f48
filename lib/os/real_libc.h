// The C library's functions for the runtime's own use, past the preload's
// interposers: a copy the runtime makes into or out of shared memory must
// not be taken for the program's.  Outside the preload (the sanitizer
// build, tests that link the runtime's objects) they are the C library's
// functions all the same.  Resolved through the one table (real_table.h).
#pragma once

#include <signal.h>
#include <stddef.h>

namespace adsm::os {

void *real_memcpy(void *dst, const void *src, size_t n);
void *real_memmove(void *dst, const void *src, size_t n);
void *real_memset(void *dst, int value, size_t n);
int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

// The environment variable `name`, read from the process's environment
// (environ) itself: a program may define a getenv of its own, which then
// answers the runtime's lookups too.  bash's looks in its shell variables,
// and while bash starts (when its first large allocation starts the
// runtime) it has not imported them yet: every ADSM_ setting was lost.
// A variable the environment no longer has is answered as the program
// started with it (a program that cleared its environment).
const char *env(const char *name);

// dlsym past the preload's own (which hands out GPU wrappers), for the
// back-ends that need a driver's functions themselves.  RTLD_NEXT means
// after libadsm.
void *real_dlsym(void *handle, const char *name);

}  // namespace adsm::os
