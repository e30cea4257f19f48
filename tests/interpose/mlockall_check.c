/* A program that locks all its memory, now and to come (mlockall with
 * MCL_CURRENT | MCL_FUTURE, as real-time and low-latency programs do), then
 * uses shared memory, run under the preload.  The runtime's own mappings,
 * the device's memory and a view of all shared memory, are each the
 * window's size: locked whole, they filled the machine's memory and the
 * kernel killed the program.  Prints "locked memory bounded" when the
 * program's data is right and less than 1 GiB is resident (the kernel
 * counts as locked the whole size of each mapping to be locked as it is
 * touched, so VmLck says nothing here). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static long resident_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
    if (f) fclose(f);
    return v;
}

int main(void) {
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) return perror("mlockall"), 2;
    const size_t n = 32u << 20;
    unsigned char *p = malloc(n); /* shared at the threshold the check sets */
    if (!p) return perror("malloc"), 2;
    for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(i * 7);
    unsigned char *q = malloc(n);
    memcpy(q, p, n);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += q[i] != (unsigned char)(i * 7);
    long kib = resident_kib();
    free(p);
    free(q);
    printf("%zu bytes wrong, %ld KiB resident\n", wrong, kib);
    if (wrong || kib < 0 || kib >= (1L << 20)) {
        printf("mlockall: FAILED\n");
        return 1;
    }
    printf("locked memory bounded\n");
    return 0;
}
