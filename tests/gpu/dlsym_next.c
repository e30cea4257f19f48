/*
 * dlsym under the preload: RTLD_NEXT still means "after the caller" (the
 * preload's dlsym passes lookups on by a tail call), and a wrapped GPU
 * function is not found when no driver is loaded, as without the preload.
 */
#include <dlfcn.h>

#include "app_common.h"

int main(void) {
    void *next = dlsym(RTLD_NEXT, "malloc"), *first = dlsym(RTLD_DEFAULT, "malloc");
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    CHECK(libc != NULL, "libc.so.6 is loaded");
    void *libc_malloc = dlsym(libc, "malloc");
    CHECK(dlsym(RTLD_DEFAULT, "adsmAlloc") != NULL, "run this under the preload");
    CHECK(next == first, "the definition after this program is the preload's malloc (%p), not %p", first, next);
    CHECK(next != libc_malloc, "RTLD_NEXT skipped the preload");
    CHECK(dlsym(RTLD_DEFAULT, "cuLaunchKernel") == NULL, "no CUDA driver is loaded");
    CHECK(dlsym(RTLD_DEFAULT, "zeMemAllocShared") == NULL, "no Level Zero loader is loaded");
    dlerror();
    CHECK(dlsym(RTLD_NEXT, "no_such_symbol_anywhere") == NULL && dlerror() != NULL, "a missing symbol is an error");
    printf("dlsym: ok\n");
    return 0;
}
