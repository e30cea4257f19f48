/* A program that clears its environment before its first large allocation
 * (clearenv, as programs that sanitise what their children inherit do),
 * then sets a variable of its own, run under the preload with settings in
 * its environment.  The runtime, started by that allocation, read its
 * settings from the environment as it was then, and ran with none of them:
 * its statistics, asked for, were never printed.  The runtime's statistics
 * at exit say which protocol and block size it ran with. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    if (clearenv() != 0 || setenv("ADSM_BLOCK_SIZE", "64K", 1) != 0) return perror("environment"), 2;
    const size_t n = 8u << 20;
    unsigned char *p = malloc(n);
    if (!p) return perror("malloc"), 2;
    memset(p, 5, n);
    size_t sum = 0;
    for (size_t i = 0; i < n; i += 4096) sum += p[i];
    free(p);
    printf("cleared environment: sum %zu\n", sum);
    return 0;
}
