/* A program under an address-space limit (RLIMIT_AS: `ulimit -v`, a batch
 * system's memory limit), set by the program itself before its first large
 * allocation.  The runtime's default window (64 GiB, mapped about three
 * times over) could not be mapped at all under it: the runtime did not
 * start, and the program's allocations came from the C library.  The
 * window now shrinks to fit: a 64 MiB allocation is shared memory
 * (adsmGetSize knows it), and a kernel-free program works on it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int main(void) {
    struct rlimit limit = {3ull << 30, 3ull << 30};
    if (setrlimit(RLIMIT_AS, &limit) != 0) return perror("setrlimit"), 2;
    size_t (*get_size)(const void *) = (size_t (*)(const void *))dlsym(RTLD_DEFAULT, "adsmGetSize");
    if (!get_size) return fprintf(stderr, "adsmGetSize not found: run with libadsm preloaded\n"), 2;
    const size_t n = 64u << 20;
    unsigned char *p = malloc(n);
    if (!p) return perror("malloc"), 2;
    memset(p, 7, n);
    size_t sum = 0;
    for (size_t i = 0; i < n; i += 4096) sum += p[i];
    printf("under a 3 GiB address-space limit: %zu bytes shared, sum %zu\n", get_size(p), sum);
    free(p);
    return 0;
}
